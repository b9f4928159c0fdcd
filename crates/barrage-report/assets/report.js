// Draws every chart listed in the embedded JSON with uPlot (the report, the comparison page
// and the find-max page). A chart with `span_gaps` joins each series across positions where
// it has no value (several runs on one axis); one with `points` marks every point (find-max:
// each is a step). Data only, no network access.
(function () {
  "use strict";
  var blob = document.getElementById("barrage-data");
  if (!blob || typeof uPlot === "undefined") return;
  var data = JSON.parse(blob.textContent);
  var colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"];
  // Spectrum x axis: position v = 1 / (1 - q); only decades get a label (90 %, 99 %, ...).
  function percentile(v) {
    if (v == null || !(v >= 1)) return "";
    var e = Math.log10(v);
    if (Math.abs(e - Math.round(e)) > 1e-6) return "";
    var p = 100 * (1 - 1 / v);
    return (+p.toFixed(5)).toString() + "%";
  }
  var fit = window.barrageFitAxis;
  data.charts.forEach(function (c) {
    var el = document.getElementById(c.id);
    if (!el) return;
    var width = Math.max(320, Math.min(el.clientWidth || 900, 1150));
    var series = [{ label: c.x_label }];
    c.series.forEach(function (s, i) {
      var n = s.values.filter(function (v) { return v != null; }).length;
      series.push({
        label: s.label,
        stroke: colors[i % colors.length],
        width: 2,
        spanGaps: !!c.span_gaps,
        points: { show: !!c.points || n < 4 },
      });
    });
    var xAxis = { label: c.x_label };
    if (c.x_percentile) {
      xAxis.values = function (u, vals) {
        return vals.map(percentile);
      };
    }
    var opts = {
      title: c.title,
      width: width,
      height: 300,
      series: series,
      scales: {
        x: c.x_log ? { time: false, distr: 3, log: 10 } : { time: false },
        y: c.y_log ? { distr: 3, log: 10 } : {},
      },
      axes: [xAxis, { label: c.y_label, size: fit }],
      // Room on the right for the last x label ("99.9999%") to be drawn whole.
      padding: [null, 40, null, null],
      // Series names only: a live legend read "s: --" until the pointer came over the chart.
      legend: { live: false },
    };
    var rows = [c.x].concat(
      c.series.map(function (s) {
        return s.values;
      })
    );
    window.barragePlots.push(new uPlot(opts, rows, el));
    el.setAttribute("data-drawn", "true");
  });
})();
