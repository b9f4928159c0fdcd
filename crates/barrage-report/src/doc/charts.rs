//! Charts: series over the run's timeline and the latency percentile spectrum, as plain data
//! (x values and named y series) that the HTML page draws with uPlot.
//!
//! A chart is only built when it has at least one point with a value, so every chart on the
//! page draws something. Gaps (a second without completed exchanges) are `None`, drawn as gaps.

pub(crate) use super::block::{Chart, Series};
use super::Block;
use crate::fmt::duration_us;
use barrage_metrics::analysis::combined_server;
use barrage_metrics::{Phase, ProcSample, RunResult};

impl Chart {
    pub(crate) fn new(id: &str, title: &str, x_label: &str, y_label: &str, x: Vec<f64>) -> Self {
        Self {
            id: format!("chart-{id}"),
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_log: false,
            y_log: false,
            x,
            series: Vec::new(),
            x_percentile: None,
            span_gaps: false,
            points: false,
        }
    }

    pub(crate) fn series(mut self, label: &str, values: Vec<Option<f64>>) -> Self {
        self.series.push(Series {
            label: label.into(),
            values,
        });
        self
    }

    /// A "planned" series read off a piecewise-linear plan at each x (nothing without a plan).
    fn planned(self, plan: &[(f64, f64)], x: &[f64]) -> Self {
        if plan.is_empty() {
            return self;
        }
        let v = x
            .iter()
            .map(|&t| Some(planned_level(plan, t).floor()))
            .collect();
        self.series("planned", v)
    }

    pub(crate) fn has_data(&self) -> bool {
        !self.x.is_empty()
            && self
                .series
                .iter()
                .any(|s| s.values.iter().any(|v| v.is_some_and(f64::is_finite)))
    }
}

fn keep(c: Chart, out: &mut Vec<Block>) {
    if c.has_data() {
        out.push(Block::Chart(c));
    }
}

/// The count a piecewise-linear rate (points (t, rate), constant after the last) brings
/// from 0 to `t` seconds.
fn planned_count(points: &[(f64, f64)], t: f64) -> f64 {
    let mut n = 0.0;
    for (i, &(t0, r0)) in points.iter().enumerate() {
        if t <= t0 {
            break;
        }
        let (t1, r1) = points.get(i + 1).copied().unwrap_or((f64::INFINITY, r0));
        let end = t.min(t1);
        let r_end = if t1.is_finite() && t1 > t0 {
            r0 + (r1 - r0) * (end - t0) / (t1 - t0)
        } else {
            r0
        };
        n += (r0 + r_end) / 2.0 * (end - t0);
    }
    n
}

/// A piecewise-linear level (points (t, value), constant after the last) at `t` seconds.
fn planned_level(points: &[(f64, f64)], t: f64) -> f64 {
    for (i, &(t0, v0)) in points.iter().enumerate() {
        match points.get(i + 1) {
            Some(&(t1, v1)) if t < t1 => {
                return if t1 > t0 {
                    v0 + (v1 - v0) * (t.max(t0) - t0) / (t1 - t0)
                } else {
                    v0
                }
            }
            None => return v0,
            _ => {}
        }
    }
    0.0
}

/// Per-second charts from the ticks (drain left out: its length is not a second) and from
/// the monitor's samples.
pub(crate) fn over_time(r: &RunResult) -> Vec<Block> {
    let mut out = Vec::new();
    let ticks: Vec<_> = r
        .timeseries
        .iter()
        .filter(|t| t.phase != Phase::Drain)
        .collect();
    let x: Vec<f64> = ticks.iter().map(|t| t.t).collect();
    let col = |f: &dyn Fn(&barrage_metrics::Tick) -> f64| -> Vec<Option<f64>> {
        ticks.iter().map(|t| Some(f(t))).collect()
    };
    let lat = |f: &dyn Fn(&barrage_metrics::Tick) -> u64| -> Vec<Option<f64>> {
        ticks
            .iter()
            .map(|t| (t.requests > 0).then(|| f(t) as f64 / 1e3))
            .collect()
    };
    let mut throughput = Chart::new("throughput", "Throughput", "s", "req/s", x.clone())
        .series("req/s", col(&|t| t.rps));
    if !r.config.planned_rate.is_empty() {
        // The planned rate over each tick: the shape's count over the tick, per second.
        let p = &r.config.planned_rate;
        let planned = ticks
            .iter()
            .map(|t| {
                let dt = t.dt.max(1e-9);
                Some((planned_count(p, t.t) - planned_count(p, t.t - dt)) / dt)
            })
            .collect();
        throughput = throughput.series("planned", planned);
    }
    keep(throughput, &mut out);
    keep(
        Chart::new("latency", "Latency", "s", "ms", x.clone())
            .series("p50", lat(&|t| t.latency_us.p50))
            .series("p99", lat(&|t| t.latency_us.p99))
            .series("max", lat(&|t| t.latency_us.max)),
        &mut out,
    );
    if r.summary.broadcast.is_some() {
        keep(
            Chart::new(
                "deliveries",
                "Broadcast deliveries",
                "s",
                "deliveries/s",
                x.clone(),
            )
            .series("received/s", col(&|t| t.deliveries as f64 / t.dt.max(1e-9))),
            &mut out,
        );
        keep(
            Chart::new("reach", "Broadcast reach per second", "s", "%", x.clone()).series(
                "reach",
                ticks
                    .iter()
                    .map(|t| {
                        (t.deliveries_expected > 0)
                            .then(|| 100.0 * t.deliveries as f64 / t.deliveries_expected as f64)
                    })
                    .collect(),
            ),
            &mut out,
        );
        keep(
            Chart::new(
                "delivery-latency",
                "Delivery latency to others",
                "s",
                "ms",
                x.clone(),
            )
            .series(
                "p99",
                ticks
                    .iter()
                    .map(|t| (t.deliveries > 0).then(|| t.delivery_p99_us as f64 / 1e3))
                    .collect(),
            ),
            &mut out,
        );
    }
    let steps = &r.config.steps;
    if !steps.is_empty() {
        let mut c = Chart::new("step-latency", "p99 latency by step", "s", "ms", x.clone());
        for (i, s) in steps.iter().enumerate() {
            let v = ticks
                .iter()
                .map(|t| {
                    t.steps
                        .get(i)
                        .filter(|k| k.completed > 0)
                        .map(|k| k.p99 as f64 / 1e3)
                })
                .collect();
            c = c.series(&format!("{} p99", s.name), v);
        }
        keep(c, &mut out);
    }
    keep(
        Chart::new(
            "connections",
            "Open connections",
            "s",
            "connections",
            x.clone(),
        )
        .series("open", col(&|t| t.open as f64))
        .series("peak", col(&|t| t.open_peak as f64))
        .planned(&r.config.planned_connections, &x),
        &mut out,
    );
    keep(
        Chart::new("errors", "Errors", "s", "errors/s", x.clone())
            .series("errors", col(&|t| t.errors.total() as f64 / t.dt.max(1e-9))),
        &mut out,
    );
    if let Some(m) = barrage_metrics::MonitorSeries::shown(r.monitor.as_ref()) {
        let server = combined_server(m);
        let proc_chart = |id: &str,
                          title: &str,
                          y: &str,
                          s: &[ProcSample],
                          label: &str,
                          f: fn(&ProcSample) -> f64| {
            Chart::new(id, title, "s", y, s.iter().map(|p| p.t).collect())
                .series(label, s.iter().map(|p| Some(f(p))).collect())
        };
        keep(
            proc_chart(
                "server-cpu",
                "Server CPU",
                "% of one core",
                &server,
                "server",
                |p| p.cpu_pct,
            ),
            &mut out,
        );
        keep(
            proc_chart(
                "server-memory",
                "Server memory (RSS)",
                "MiB",
                &server,
                "server",
                |p| p.rss_bytes as f64 / (1024.0 * 1024.0),
            ),
            &mut out,
        );
        keep(
            proc_chart(
                "generator-cpu",
                "Generator CPU (barrage)",
                "% of one core",
                &m.generator,
                "barrage",
                |p| p.cpu_pct,
            ),
            &mut out,
        );
        if !m.host.is_empty() {
            keep(
                Chart::new(
                    "host-cpu",
                    "Machine CPU",
                    "s",
                    "% of all cores",
                    m.host.iter().map(|h| h.t).collect(),
                )
                .series("machine", m.host.iter().map(|h| Some(h.cpu_pct)).collect()),
                &mut out,
            );
        }
        if let Some(c) = r.analysis.as_ref().and_then(|a| a.contention.as_ref()) {
            keep(
                Chart::new(
                    "other-cpu",
                    "Other processes' CPU (machine - server - barrage)",
                    "s",
                    "% of one core",
                    c.per_second.iter().map(|o| o.t).collect(),
                )
                .series(
                    "other processes",
                    c.per_second.iter().map(|o| Some(o.pct)).collect(),
                ),
                &mut out,
            );
        }
    }
    out
}

/// The latency percentile spectrum: x is 1 / (1 - q) on a log axis (so p90, p99, p99.9 are
/// evenly spaced), y the latency in ms. The 100th percentile has no place on that axis; the
/// maximum is in the core metrics table.
pub(crate) fn spectrum(r: &RunResult) -> Vec<Block> {
    let Ok(h) = r.histograms.latency.decode() else {
        return Vec::new();
    };
    let points: Vec<(f64, f64)> = h
        .spectrum()
        .into_iter()
        .filter(|(p, _)| *p < 100.0)
        .map(|(p, v)| (100.0 / (100.0 - p), v.max(1) as f64 / 1e3))
        .collect();
    let mut c = Chart::new(
        "spectrum",
        "Latency percentile spectrum",
        "percentile",
        "ms",
        points.iter().map(|p| p.0).collect(),
    )
    .series("latency", points.iter().map(|p| Some(p.1)).collect());
    c.x_log = true;
    c.y_log = true;
    c.x_percentile = Some(true);
    let mut out = Vec::new();
    keep(c, &mut out);
    if h.count() > 0 {
        let qs = [50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99, 99.999];
        let mut head: Vec<String> = qs.iter().map(|q| format!("p{q}")).collect();
        head.push("max".into());
        let mut row: Vec<String> = qs
            .iter()
            .map(|q| duration_us(h.quantile(q / 100.0) as f64))
            .collect();
        row.push(duration_us(h.quantile(1.0) as f64));
        out.push(Block::Table {
            head,
            rows: vec![row],
        });
    }
    out
}

/// The server's own metrics (`--server-metrics`): one chart per series over the run's time.
pub(crate) fn server_metrics(r: &RunResult) -> Vec<Block> {
    let mut out = Vec::new();
    for (i, m) in r.server_metrics.iter().enumerate() {
        let x: Vec<f64> = m.samples.iter().map(|s| s[0]).collect();
        let y = if m.kind == "rate" {
            "per second"
        } else {
            "value"
        };
        let c = Chart::new(&format!("server-metric-{i}"), &m.name, "seconds", y, x)
            .series(&m.name, m.samples.iter().map(|s| Some(s[1])).collect());
        keep(c, &mut out);
    }
    out
}
