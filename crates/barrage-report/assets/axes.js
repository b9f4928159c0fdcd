// Shared by the report, the comparison page, the find-max page and the live page: y axes as
// wide as their labels, durations in the unit that fits, and every chart drawn kept in
// window.barragePlots (the layout test in headless Chromium reads them).
(function () {
  "use strict";
  window.barragePlots = window.barragePlots || [];
  // A y axis as wide as its widest tick label: uPlot's fixed 50 px clipped "19,950" to
  // ",9,950" and put the axis title over "20,000". Recomputed as the ticks change.
  // Later cycles only widen it: the ticks can change between cycles (find-max's errors axis,
  // 0 to 1.2 %, kept its first size and was 3 px short of "0.75"), and a size that only grows
  // settles.
  window.barrageFitAxis = function (u, values, i, cycle) {
    var axis = u.axes[i];
    // The widest in pixels, not in characters: "0.0 µs" and "200 ms" have as many.
    u.ctx.font = axis.font[0];
    var widest = (values || []).reduce(function (w, v) {
      return v == null ? w : Math.max(w, u.ctx.measureText(String(v)).width);
    }, 0);
    var size = Math.ceil(axis.ticks.size + axis.gap + widest / (window.devicePixelRatio || 1) + 4);
    return cycle > 1 ? Math.max(axis._size || 0, size) : size;
  };
  function sig3(x) {
    return x < 9.995 ? x.toFixed(2) : x < 99.95 ? x.toFixed(1) : x.toFixed(0);
  }
  // Microseconds as the reports write them (fmt::duration_us): 45.0 µs, 3.18 ms, 1.20 s.
  window.barrageDuration = function (us) {
    if (us == null || !isFinite(us)) return "–";
    us = Math.max(0, us);
    if (us < 99.95) return us.toFixed(1) + " µs";
    if (us < 999.5) return us.toFixed(0) + " µs";
    if (us < 999500) return sig3(us / 1e3) + " ms";
    return sig3(us / 1e6) + " s";
  };
})();
