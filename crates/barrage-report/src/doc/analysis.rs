//! The judging sections of the report: server resources (from `monitor`), stability and leak
//! analysis, thresholds and readiness. Each is empty when its data was not collected.

use super::{grade, table, Block};
use crate::fmt::{byte_rate, bytes, thousands};
use barrage_metrics::analysis::{LeakStatus, Trend};
use barrage_metrics::figures::{shown_network, Memory, ProcessFigures, RunFigures};
use barrage_metrics::{RunResult, Verdict};

fn pct(x: f64) -> String {
    format!("{x:.1} %")
}

fn opt_bytes(b: Option<u64>) -> String {
    b.map_or("-".into(), |b| bytes(b as f64))
}

/// One row per monitored process: CPU under load and memory in its three windows, the
/// figures of [`barrage_metrics::figures`] (the ones thresholds and readiness judge).
fn process_row(who: String, f: Option<&ProcessFigures>, m: &Memory) -> Option<[String; 8]> {
    let f = f?;
    Some([
        who,
        pct(f.cpu_avg_pct),
        pct(f.cpu_max_pct),
        opt_bytes(m.idle_bytes),
        opt_bytes(m.load_peak_bytes),
        opt_bytes(m.after_bytes),
        thousands(f.threads_max),
        thousands(f.fds_max),
    ])
}

pub(crate) fn resources(r: &RunResult) -> Vec<Block> {
    let (Some(m), Some(fig)) = (&r.monitor, RunFigures::of(r)) else {
        return Vec::new();
    };
    let mut rows: Vec<[String; 8]> = m
        .processes
        .iter()
        .zip(&fig.processes)
        .filter_map(|(p, (f, mem))| {
            process_row(
                format!("server {}: {}", p.who(), p.command),
                f.as_ref(),
                mem,
            )
        })
        .collect();
    rows.extend(process_row(
        "barrage (generator)".into(),
        fig.generator.as_ref(),
        &fig.generator_memory,
    ));
    let mut out = Vec::new();
    if !rows.is_empty() {
        out.push(table(
            [
                "process",
                "CPU avg under load (1 core = 100 %)",
                "CPU max under load",
                "RSS idle",
                "RSS peak under load",
                "RSS after recovery",
                "threads (max under load)",
                "open files (max under load)",
            ],
            rows,
        ));
    }
    if let Some(h) = &fig.machine {
        out.push(Block::Heading("Machine".into()));
        out.push(table(
            [
                "CPU avg under load",
                "CPU max under load",
                "memory used (max under load)",
                "memory total",
            ],
            vec![[
                measured(h, pct(h.cpu_avg_pct)),
                measured(h, pct(h.cpu_max_pct)),
                bytes(h.mem_used_max_bytes as f64),
                bytes(h.mem_total_bytes as f64),
            ]],
        ));
    }
    let (shown, idle) = shown_network(&fig.network, &r.config.target);
    if !fig.network.is_empty() {
        out.push(Block::Heading("Network".into()));
        let left_out = match idle {
            0 => String::new(),
            1 => " 1 idle interface (no traffic under load) is left out.".into(),
            n => format!(" {n} idle interfaces (no traffic under load) are left out."),
        };
        out.push(Block::Para(format!(
            "Per interface under load, bytes per second received (in) and sent (out) by the \
             whole machine.{left_out}"
        )));
    }
    if !shown.is_empty() {
        out.push(table(
            [
                "interface",
                "in min",
                "in mean",
                "in max",
                "out min",
                "out mean",
                "out max",
            ],
            shown
                .iter()
                .map(|n| {
                    let (i, o) = (&n.rx_bytes_per_s, &n.tx_bytes_per_s);
                    [
                        n.interface.clone(),
                        byte_rate(i.min),
                        byte_rate(i.mean),
                        byte_rate(i.max),
                        byte_rate(o.min),
                        byte_rate(o.mean),
                        byte_rate(o.max),
                    ]
                })
                .collect(),
        ));
    }
    if let Some(s) = &r.spawn {
        let how = s.ending();
        out.push(Block::Para(format!(
            "Spawned server `{}` (pid {}): ready after {:.0} ms; {how}.",
            s.command, s.pid, s.ready_after_ms
        )));
    }
    out
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Unclear => "unclear (too few or too noisy points)",
        v => v.as_str(),
    }
}

/// A trend as the change over the window it was fitted on: a slope of a few seconds is not
/// extrapolated to an hour (a 9 s run would otherwise read "+6571.6 %/h").
fn trend_row(name: &str, t: &Trend) -> [String; 3] {
    let unit = t.unit.strip_suffix("/h").unwrap_or(&t.unit);
    // Memory changes read better in MiB than in bytes.
    let (k, unit) = if unit == "bytes" {
        (1.0 / (1024.0 * 1024.0), "MiB")
    } else {
        (1.0, unit)
    };
    let over = k * t.window_s / 3600.0;
    [
        name.to_string(),
        verdict_word(t.verdict).to_string(),
        format!(
            "{:+.2} {unit} over {:.0} s (95 % CI {:+.2} .. {:+.2}), {} points",
            t.change * k,
            t.window_s,
            t.ci95_per_hour.0 * over,
            t.ci95_per_hour.1 * over,
            t.n,
        ),
    ]
}

pub(crate) fn analysis(r: &RunResult) -> Vec<Block> {
    let Some(a) = &r.analysis else {
        return Vec::new();
    };
    let mut rows: Vec<[String; 3]> = Vec::new();
    if let Some(s) = &a.stability {
        rows.push([
            "throughput stability".into(),
            format!("CV {:.1} %", s.cv_pct),
            format!(
                "mean {} req/s, largest deviation {:.1} % over {} steady seconds ({:.0} s to \
                 {:.0} s)",
                crate::fmt::real(s.mean_rps),
                s.max_dev_pct,
                s.n,
                a.steady_from_s,
                a.steady_to_s
            ),
        ]);
        rows.push(trend_row("throughput drift", &s.drift));
    }
    let trends = [
        ("p99 latency", &a.p99_trend),
        ("error rate", &a.error_rate_trend),
        ("server memory (RSS)", &a.rss_trend),
        ("server open files", &a.fd_trend),
    ];
    for (name, t) in trends {
        if let Some(t) = t {
            rows.push(trend_row(name, t));
        }
    }
    if let Some(rec) = &a.recovery {
        rows.push([
            "memory recovery".into(),
            if rec.returned {
                "returned"
            } else {
                "NOT returned"
            }
            .into(),
            format!(
                "idle {} -> peak {} under load -> {} after recovery (tolerance {:.0} %)",
                bytes(rec.idle_before_bytes as f64),
                bytes(rec.peak_under_load_bytes as f64),
                bytes(rec.after_recovery_bytes as f64),
                rec.tolerance_pct
            ),
        ]);
    }
    if let Some(l) = &a.leak {
        let word = match l.verdict {
            LeakStatus::Leak => "LEAK",
            LeakStatus::NoLeak => "no leak",
            LeakStatus::Inconclusive => "inconclusive",
        };
        rows.push(["memory leak".into(), word.into(), l.reason.clone()]);
    }
    if let Some(b) = &a.bytes_per_connection {
        rows.push([
            "memory per connection".into(),
            bytes(b.slope.max(0.0)),
            format!(
                "server RSS against open connections during the ramp, r² {:.2}",
                b.r2
            ),
        ]);
    }
    let sat = &a.saturation;
    if sat.of_s > 0 {
        rows.push([
            "generator saturation".into(),
            {
                let mut f = format!(
                    "{} s of {} s of the steady state (own work {} s, out of CPU with the server \
                     {} s, starved by other processes {} s",
                    sat.saturated_s, sat.of_s, sat.own_work_s, sat.server_s, sat.starved_s
                );
                if sat.unknown_s() > 0 {
                    f.push_str(&format!(", not sampled {} s", sat.unknown_s()));
                }
                f.push(')');
                if let Some(ramp) = crate::verdicts::ramp_saturation(sat) {
                    f.push_str("; ");
                    f.push_str(&ramp);
                }
                f
            },
            sat.rule.clone(),
        ]);
    }
    // Unasked samples (a run without monitoring) show in the overview's warning only.
    let asked = r.monitor.as_ref().is_some_and(|m| !m.unasked);
    if let Some(c) = a.contention.as_ref().filter(|_| asked) {
        rows.push([
            "other processes' CPU".into(),
            format!(
                "avg {}, max {} of one core under load{}",
                pct(c.other_avg_pct),
                pct(c.other_max_pct),
                if c.material { " (material)" } else { "" }
            ),
            c.rule.clone(),
        ]);
    }
    if rows.is_empty() {
        return Vec::new();
    }
    vec![table(["check", "result", "detail"], rows)]
}

pub(crate) fn thresholds(r: &RunResult) -> Vec<Block> {
    if r.thresholds.is_empty() {
        return Vec::new();
    }
    let rows = r
        .thresholds
        .iter()
        .map(|o| {
            let mark = match o.passed {
                Some(true) => "pass",
                Some(false) => "FAIL",
                None => "FAIL (not measured)",
            };
            [mark.to_string(), o.expr.clone(), o.reason.clone()]
        })
        .collect();
    vec![table(["result", "threshold", "measured"], rows)]
}

pub(crate) fn readiness(r: &RunResult) -> Vec<Block> {
    if r.readiness.is_empty() {
        return Vec::new();
    }
    let rows = r
        .readiness
        .iter()
        .map(|row| {
            [
                row.aspect.as_str().to_string(),
                grade(row.status).to_string(),
                row.figure.clone(),
                row.rule.clone(),
            ]
        })
        .collect();
    vec![table(["aspect", "grade", "figure", "rule"], rows)]
}

/// A machine CPU figure, or "not measured" when the machine read below the server's and
/// barrage's own CPU (/proc/stat undercounting on some VMs).
fn measured(h: &barrage_metrics::figures::Machine, figure: String) -> String {
    if h.cpu_measured() {
        figure
    } else {
        format!(
            "not measured ({figure} as read, below the server's and barrage's own CPU in {} of {} samples)",
            h.below_parts, h.samples
        )
    }
}
