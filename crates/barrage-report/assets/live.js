// The live page of a run (`barrage --web`): loads the seconds so far from /series, then
// follows /events (server-sent events), one message per second; draws the charts with uPlot
// and keeps the figures, the server panel and the warnings current; shows the final summary
// when the run ends. Same origin only (the page's CSP allows nothing else).
(function () {
  "use strict";
  var state = { info: null, points: [], done: null, connected: false, network: [] };
  window.barrageLive = state;
  var colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"];
  function num(v) { return v == null ? null : v; }
  var defs = [
    { id: "c-rps", title: "Throughput", y: "per second", series: [
      ["completed", function (p) { return p.tick.rps; }],
      ["sent", function (p) { return p.tick.dt > 0 ? p.tick.sent / p.tick.dt : 0; }] ] },
    { id: "c-lat", title: "Latency", y: "latency", dur: true, series: [
      ["p50", function (p) { return p.tick.latency_us.p50; }],
      ["p90", function (p) { return p.tick.latency_us.p90; }],
      ["p99", function (p) { return p.tick.latency_us.p99; }] ] },
    { id: "c-conn", title: "Connections", y: "count", series: [
      ["open", function (p) { return p.tick.open; }],
      ["in flight", function (p) { return p.tick.in_flight; }] ] },
    { id: "c-err", title: "Errors", y: "per second", series: [
      ["failed exchanges", function (p) { return p.tick.failed_requests; }],
      ["connect failures", function (p) { return p.tick.connect_failures; }] ] },
    { id: "c-srv", title: "Server", y: "CPU % of a core / RSS MiB", when: function (p) { return !!p.server; }, series: [
      ["CPU %", function (p) { return p.server ? num(p.server.cpu_pct) : null; }],
      ["RSS MiB", function (p) {
        return p.server && p.server.rss_bytes != null ? p.server.rss_bytes / 1048576 : null; }] ] },
    { id: "c-bc", title: "Broadcast deliveries", y: "per second", when: function (p) {
      return (p.tick.deliveries || 0) + (p.tick.deliveries_expected || 0) > 0; }, series: [
      ["received", function (p) { return p.tick.deliveries || 0; }],
      ["expected", function (p) { return p.tick.deliveries_expected || 0; }] ] },
  ];
  var plots = {};
  function el(id) { return document.getElementById(id); }
  function text(id, v) { var e = el(id); if (e) e.textContent = v; }
  function fmt(v, digits) {
    if (v == null || isNaN(v)) return "–";
    return Number(v).toLocaleString("en-US", { maximumFractionDigits: digits || 0 });
  }
  function draw() {
    // The drain (replies awaited after the load) is no second of load: charted, it was a
    // drop to zero at the end of every run.
    var pts = state.points.filter(function (p) { return p.tick.phase !== "drain"; });
    var xs = pts.map(function (p) { return p.tick.t; });
    defs.forEach(function (d) {
      var box = el(d.id);
      if (!box) return;
      // A chart of data this run does not have (no monitored server, no broadcast) stays out.
      if (d.when && !pts.some(d.when)) { box.hidden = true; return; }
      box.hidden = false;
      var rows = [xs].concat(d.series.map(function (s) { return pts.map(s[1]); }));
      if (!plots[d.id]) {
        if (typeof uPlot === "undefined" || pts.length === 0) return;
        var series = [{ label: "seconds" }].concat(d.series.map(function (s, i) {
          return { label: s[0], stroke: colors[i % colors.length], width: 2, spanGaps: true };
        }));
        var y = { label: d.y, size: window.barrageFitAxis };
        if (d.dur) {
          y.values = function (u, vals) { return vals.map(window.barrageDuration); };
        }
        plots[d.id] = new uPlot({
          title: d.title,
          width: Math.max(300, Math.min(box.clientWidth || 560, 700)),
          height: 240,
          series: series,
          scales: { x: { time: false } },
          axes: [{ label: "seconds" }, y],
          padding: [null, 24, null, null],
          // Series names only: a live legend read "s: --" until the pointer came over it.
          legend: { live: false },
        }, rows, box);
        window.barragePlots.push(plots[d.id]);
        box.setAttribute("data-drawn", "true");
      } else {
        plots[d.id].setData(rows);
      }
    });
  }
  function figures() {
    var pts = state.points;
    text("seconds", String(pts.length));
    if (pts.length === 0) return;
    // The drain (replies awaited after the load) is not "now": show the last second of load.
    var last = pts[pts.length - 1];
    for (var i = pts.length - 1; i >= 0; i--) {
      if (pts[i].tick.phase !== "drain") { last = pts[i]; break; }
    }
    var t = last.tick;
    text("cur-rps", fmt(t.rps, 1));
    text("cur-p50", window.barrageDuration(t.latency_us.p50));
    text("cur-p99", window.barrageDuration(t.latency_us.p99));
    // Time left of the load (warm-up and duration); a run bounded only by -n has none.
    var info = state.info || {};
    if (state.done) {
      text("left", "0 s");
    } else if (info.duration_s != null) {
      var left = Math.max(0, (info.warmup_s || 0) + info.duration_s - last.tick.t);
      text("left", left.toFixed(0) + " s");
    }
    text("cur-open", fmt(t.open));
    text("cur-failed", fmt(t.failed_requests));
    var total = 0;
    pts.forEach(function (p) { total += p.tick.requests; });
    text("total", fmt(total));
    var list = el("metrics");
    if (list && last.metrics && last.metrics.length) {
      list.hidden = false;
      list.textContent = "";
      last.metrics.forEach(function (m) {
        var li = document.createElement("li");
        li.textContent = m[0] + ": " + fmt(m[1], 2);
        list.appendChild(li);
      });
    }
    network();
    if (last.server) {
      text("srv-cpu", fmt(last.server.cpu_pct, 1));
      text("srv-rss", last.server.rss_bytes == null ? "–" : fmt(last.server.rss_bytes / 1048576, 1));
    }
  }
  // A byte rate as the reports write it: binary units, and the bit rate.
  function rate(b) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], x = Math.max(0, b), i = 0;
    while (x >= 1023.5 && i < units.length - 1) { x /= 1024; i++; }
    var shown = i === 0 ? x.toFixed(0) : x < 9.995 ? x.toFixed(2) : x < 99.95 ? x.toFixed(1) : x.toFixed(0);
    var m = b * 8 / 1e6;
    var bits = m < 9.995 ? m.toFixed(2) : m < 99.95 ? m.toFixed(1) : m.toFixed(0);
    return shown + " " + units[i] + "/s (" + bits + " Mbit/s)";
  }
  // Per interface: min, mean and max of the machine's samples under load so far (each sample
  // once: the monitor samples on its own interval, a second may repeat or skip one).
  function network() {
    var seen = {}, ifs = {}, order = [];
    state.points.forEach(function (p) {
      if (!p.net || p.tick.phase === "drain" || seen[p.net.t]) return;
      seen[p.net.t] = true;
      p.net.interfaces.forEach(function (n) {
        var s = ifs[n.name];
        if (!s) { s = ifs[n.name] = { rx: [], tx: [] }; order.push(n.name); }
        s.rx.push(n.rx_bytes_per_s);
        s.tx.push(n.tx_bytes_per_s);
      });
    });
    function spread(v) {
      var sum = v.reduce(function (a, b) { return a + b; }, 0);
      return { min: Math.min.apply(null, v), mean: sum / v.length, max: Math.max.apply(null, v) };
    }
    state.network = order.map(function (name) {
      return { name: name, samples: ifs[name].rx.length, rx: spread(ifs[name].rx), tx: spread(ifs[name].tx) };
    });
    var body = el("net");
    if (!body || order.length === 0) return;
    el("network").hidden = false;
    body.textContent = "";
    state.network.forEach(function (n) {
      var tr = document.createElement("tr");
      var cells = [n.name];
      [n.rx, n.tx].forEach(function (s) { cells.push(rate(s.min), rate(s.mean), rate(s.max)); });
      cells.forEach(function (c) {
        var td = document.createElement("td");
        td.textContent = c;
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
  }
  function warn(p) {
    var t = p.tick, w = [];
    if (t.failed_requests > 0) w.push(t.failed_requests + " exchanges failed");
    if (t.connect_failures > 0) w.push(t.connect_failures + " connects failed");
    if (t.lag_us_max > 10000) w.push("barrage's loop fell " + Math.round(t.lag_us_max / 1000) + " ms behind (the generator may be the bottleneck)");
    if (t.deliveries_expected > 0 && t.deliveries < t.deliveries_expected)
      w.push((t.deliveries_expected - t.deliveries) + " broadcast deliveries short");
    var list = el("warnings");
    w.forEach(function (m) {
      var li = document.createElement("li");
      li.textContent = "at " + t.t.toFixed(1) + " s: " + m;
      list.insertBefore(li, list.firstChild);
      while (list.children.length > 50) list.removeChild(list.lastChild);
    });
  }
  function add(p) {
    state.points.push(p);
    warn(p);
  }
  function finish(d) {
    state.done = d;
    text("status", "finished: the page keeps the run as it ended");
    text("left", "0 s");
    var pre = el("summary");
    pre.textContent = d.summary;
    el("final").hidden = false;
  }
  function follow() {
    var es = new EventSource("/events?from=" + state.points.length);
    es.onopen = function () { state.connected = true; text("status", "running"); };
    es.onmessage = function (m) { add(JSON.parse(m.data)); figures(); draw(); };
    es.addEventListener("done", function (m) { finish(JSON.parse(m.data)); es.close(); });
    es.onerror = function () {
      if (!state.done) text("status", "disconnected (barrage ended or is unreachable)");
      es.close();
    };
  }
  fetch("/series").then(function (r) { return r.json(); }).then(function (s) {
    state.info = s.info;
    text("target", s.info.target);
    text("started", s.info.started_at);
    s.points.forEach(add);
    figures();
    draw();
    if (s.done) finish(s.done); else follow();
  });
})();
