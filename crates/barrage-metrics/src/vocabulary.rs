//! One metric-name vocabulary: what `p99`, `rps.avg`, `errors.rate`, `server.cpu.avg`, ...
//! are worth for a run, in one place.
//!
//! Thresholds (their facts), compare (its rows and `--max-regression`) and readiness all read
//! a figure by its name through [`value`], so a name cannot mean one thing in a gate and
//! another in a comparison. Values are in the canonical unit of the name's kind (µs, bytes, %,
//! a fraction for `errors.rate`); a figure the run did not record (no monitoring, no recovery
//! window) is `None`. A gate asks [`measured`], which also takes the latency figures of a run
//! that completed nothing as not measured (a comparison shows them as recorded, 0). The
//! names and meanings are those of docs/thresholds.md and docs/compare.md; which names a
//! threshold may use, and their units, is `thresholds::METRICS`/`kind_of`; which are compared
//! is `compare::METRICS`.

use crate::analysis::{combined_server, AnalysisReport, LeakStatus, Window};
use crate::error::ErrorClass;
use crate::monitor::ProcSample;
use crate::result::RunResult;

/// The value of `metric` for the run `r` as recorded; `analysis` is the run's analysis (the
/// figures of the server, stability, recovery and leak come from it). `None` when the run did
/// not record it, or for an unknown name.
pub fn value(r: &RunResult, analysis: Option<&AnalysisReport>, metric: &str) -> Option<f64> {
    let s = &r.summary;
    let l = &s.latency_us;
    let server = || analysis?.server.as_ref();
    let v = match metric {
        "p50" => l.p50 as f64,
        "p75" => l.p75 as f64,
        "p90" => l.p90 as f64,
        "p99" => l.p99 as f64,
        "p999" => l.p999 as f64,
        "p9999" => l.p9999 as f64,
        "latency.max" => l.max as f64,
        "latency.mean" => l.mean,
        "connect.p99" => s.connect_us.p99 as f64,
        "rps.avg" => s.rps.avg,
        "rps.peak" => s.rps.peak,
        "rps.current" => s.rps.current,
        "requests" => s.requests as f64,
        "requests.failed" => s.failed_requests.total() as f64,
        "errors" => s.errors.total() as f64,
        "errors.rate" => s.error_rate()?,
        "connections.peak" => s.connections.peak as f64,
        "connections.ready" => {
            let planned = s.connections.target;
            let ready = s.ramp.as_ref()?.ready.min(planned);
            (planned > 0).then(|| ready as f64 / planned as f64)?
        }
        "broadcast.reach" => s.broadcast.as_ref()?.reach?,
        "broadcast.lost" => s.broadcast.as_ref()?.lost as f64,
        "broadcast.missing" => s.broadcast.as_ref()?.missing as f64,
        "broadcast.duplicates" => s.broadcast.as_ref()?.c.duplicates as f64,
        "broadcast.late" => s.broadcast.as_ref()?.c.late as f64,
        "broadcast.p99" => s.broadcast.as_ref()?.peer_us.as_ref()?.p99 as f64,
        "broadcast.p50" => s.broadcast.as_ref()?.peer_us.as_ref()?.p50 as f64,
        "stability.cv" => analysis?.stability.as_ref()?.cv_pct,
        "server.rss.max" => server()?.rss_max_bytes as f64,
        "server.rss.avg" => server()?.rss_avg_bytes,
        "server.cpu.avg" => server()?.cpu_avg_pct,
        // barrage's own CPU over the load window, beside the server's and the machine's.
        "generator.cpu.avg" => {
            let m = r.monitor.as_ref()?;
            crate::figures::process(&m.generator, crate::figures::load_window(&r.timeseries))?
                .cpu_avg_pct
        }
        "server.cpu.max" => server()?.cpu_max_pct,
        "server.fds.max" => server()?.fds_max as f64,
        "server.rss.after" => analysis?.recovery.as_ref()?.after_recovery_bytes as f64,
        "leak" => match analysis?.leak.as_ref()?.verdict {
            LeakStatus::Leak => 1.0,
            LeakStatus::NoLeak => 0.0,
            LeakStatus::Inconclusive => 0.5,
        },
        "server.cpu_per_req" => {
            let m = r.monitor.as_ref().filter(|m| !m.processes.is_empty())?;
            cpu_per_request(
                &combined_server(m),
                measured_window(r, analysis?),
                s.rps.avg,
            )?
        }
        "generator.cpu_per_req" => {
            let m = r.monitor.as_ref()?;
            cpu_per_request(&m.generator, measured_window(r, analysis?), s.rps.avg)?
        }
        // The figure every output shows: the machine over the load window.
        "machine.cpu.avg" => {
            let m = r.monitor.as_ref()?;
            crate::figures::machine(&m.host, crate::figures::load_window(&r.timeseries))?
                .cpu_avg_pct
        }
        m => {
            let class = ErrorClass::from_name(m.strip_prefix("errors.")?)?;
            s.errors.get(class) as f64
        }
    };
    v.is_finite().then_some(v)
}

/// [`value`] for a gate: the latency figures of a run that completed no exchange (and the
/// connect time of a run that connected nothing) are not measured, as a 0 would pass any
/// upper limit.
pub fn measured(r: &RunResult, analysis: Option<&AnalysisReport>, metric: &str) -> Option<f64> {
    let s = &r.summary;
    let empty = match metric {
        "connect.p99" => s.connect_us.count == 0,
        m => is_latency(m) && s.latency_us.count == 0,
    };
    if empty {
        None
    } else {
        value(r, analysis, metric)
    }
}

/// `p50` ... `p9999`, `latency.*`: figures of the exchanges' latency histogram.
fn is_latency(metric: &str) -> bool {
    metric.starts_with('p') && metric[1..].chars().all(|c| c.is_ascii_digit())
        || metric.starts_with("latency.")
}

/// The measured window (after the warm-up, to the end of the load): per-request figures
/// divide by the rate of that window.
fn measured_window(r: &RunResult, a: &AnalysisReport) -> Window {
    Window {
        from_s: r.config.warmup_s,
        to_s: a.load_end_s,
    }
}

/// µs of CPU per completed exchange: the process's mean CPU over `w` / the average rate.
fn cpu_per_request(samples: &[ProcSample], w: Window, rps_avg: f64) -> Option<f64> {
    if rps_avg <= 0.0 {
        return None;
    }
    let cpu: Vec<(f64, f64)> = samples.iter().map(|s| (s.t, s.cpu_pct)).collect();
    let mean_pct = crate::figures::time_mean(&cpu, w)?;
    Some(mean_pct / 100.0 * 1e6 / rps_avg)
}

/// Whether a name is a figure of the load's performance (latency, throughput, the counts of
/// completed work), as the readiness table groups thresholds.
pub fn is_performance(metric: &str) -> bool {
    is_latency(metric)
        || metric.starts_with("rps.")
        || matches!(metric, "connect.p99" | "requests" | "connections.peak")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testutil::result;

    /// A monitored run with a recovery window, its server at 40 % CPU and 30 MB.
    fn monitored() -> (RunResult, AnalysisReport) {
        use crate::analysis::testutil::proc;
        use crate::monitor::{MonitorSeries, ProcessSeries};
        let mut r = result(20, 500, 0, 4);
        let samples: Vec<_> = (-1..=25)
            .map(|t| {
                let mut s = proc(t as f64, 30e6);
                s.cpu_pct = 40.0;
                s
            })
            .collect();
        r.monitor = Some(MonitorSeries {
            interval_s: 1.0,
            processes: vec![ProcessSeries {
                pid: 7,
                command: "srv".into(),
                samples: samples.clone(),
            }],
            generator: samples,
            ..Default::default()
        });
        let a = crate::analysis::analyze(&r, r.monitor.as_ref(), Some(5.0));
        (r, a)
    }

    #[test]
    fn every_threshold_and_compare_name_has_one_definition() {
        let (r, a) = monitored();
        let names = crate::thresholds::METRICS
            .iter()
            .map(|(m, _)| *m)
            .filter(|m| *m != "errors.<class>")
            .chain(crate::compare::METRICS);
        for name in names {
            // Host samples and broadcast steps are all this run lacks.
            let want = name != "machine.cpu.avg" && !name.starts_with("broadcast.");
            assert_eq!(value(&r, Some(&a), name).is_some(), want, "{name}");
        }
        assert_eq!(value(&r, Some(&a), "server.cpu.avg"), Some(40.0));
        // 40 % of a core at 500 exchanges/s: 800 µs of CPU each.
        let per_req = value(&r, Some(&a), "server.cpu_per_req").unwrap();
        assert!((per_req - 800.0).abs() < 1e-9, "{per_req}");
        assert_eq!(value(&r, None, "rps.avg"), Some(500.0));
        assert_eq!(value(&r, None, "errors.timeout"), Some(0.0));
        assert_eq!(value(&r, None, "errors.nonsense"), None);
        assert_eq!(
            value(&r, None, "server.cpu.avg"),
            None,
            "needs the analysis"
        );
        assert_eq!(value(&r, Some(&a), "no.such.metric"), None);
        let mut b = r.clone();
        b.summary.broadcast = Some(crate::BroadcastSummary {
            c: crate::BroadcastCounts {
                expected: 200,
                delivered: 150,
                gaps: 7,
                late: 2,
                ..Default::default()
            },
            reach: Some(0.75),
            lost: 5,
            missing: 50,
            own_us: None,
            remote_us: None,
            remote_clock_us: None,
            peer_us: Some(crate::LatencyStats {
                p99: 1234,
                ..Default::default()
            }),
            first_us: None,
            last_us: None,
            rooms: None,
            spread_us: None,
        });
        assert_eq!(value(&b, None, "broadcast.reach"), Some(0.75));
        assert_eq!(value(&b, None, "broadcast.lost"), Some(5.0));
        assert_eq!(value(&b, None, "broadcast.missing"), Some(50.0));
        assert_eq!(value(&b, None, "broadcast.p99"), Some(1234.0));
    }

    #[test]
    fn latency_of_a_run_that_completed_nothing_is_not_measured_for_a_gate() {
        let mut r = result(10, 1000, 10, 8);
        assert_eq!(measured(&r, None, "connect.p99"), None, "nothing connected");
        assert_eq!(value(&r, None, "connect.p99"), Some(0.0));
        r.summary.latency_us = Default::default();
        for m in ["p99", "p50", "latency.max", "latency.mean"] {
            assert_eq!(measured(&r, None, m), None, "{m}");
            assert_eq!(value(&r, None, m), Some(0.0), "{m} as recorded");
        }
        assert_eq!(measured(&r, None, "rps.avg"), Some(1000.0));
        // What a gate sees is what the facts hold.
        let f = crate::thresholds::Facts::from_result(&r, None);
        assert_eq!(f.get("p99"), None);
        assert_eq!(f.get("requests"), value(&r, None, "requests"));
    }
}
