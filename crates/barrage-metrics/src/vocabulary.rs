//! One registry of figures: what `p99`, `rps.avg`, `errors.rate`, `server.cpu.avg`, ... are,
//! in one table ([`FIGURES`]): each figure's name, its kind (how a threshold writes and stores
//! it), what it needs to be measured, what it means, whether and how `compare` shows it, and
//! how to read it from a result.
//!
//! Thresholds (their names, kinds, needs and facts), compare (its rows, units, directions,
//! noise rules and `--max-regression`) and readiness all derive from this table and read a
//! figure through [`value`], so a name cannot mean one thing in a gate and another in a
//! comparison. Values are in the canonical unit of the name's kind (µs, bytes, %, a fraction
//! for `errors.rate`); a figure the run did not record (no monitoring, no recovery window) is
//! `None`. A gate asks [`measured`], which also takes the latency figures of a run that
//! completed nothing as not measured (a comparison shows them as recorded, 0). The names and
//! meanings are those of docs/thresholds.md and docs/compare.md.

use crate::analysis::{AnalysisReport, LeakStatus};
use crate::compare::{Better, Unit};
use crate::error::ErrorClass;
use crate::monitor::{combined_server, MonitorSeries, ProcSample};
use crate::result::RunResult;
use crate::thresholds::{Kind, Needs};
use crate::window::Window;

/// One figure of a run.
pub struct Figure {
    /// As a threshold and `compare` name it.
    pub name: &'static str,
    /// How a threshold writes and stores it; `None`: compared only, not a threshold.
    pub kind: Option<Kind>,
    /// What it needs beyond the load itself.
    pub needs: Needs,
    /// What it means, ending in its kind (`--threshold`'s list, docs/thresholds.md).
    pub doc: &'static str,
    /// Its row in `compare`; `None`: not compared.
    pub compared: Option<Compared>,
    /// Its value for a run as recorded (with the run's analysis); `None`: not recorded.
    pub read: fn(&RunResult, Option<&AnalysisReport>) -> Option<f64>,
}

/// How `compare` shows a figure.
pub struct Compared {
    /// Its place among the rows.
    pub row: u8,
    pub unit: Unit,
    pub better: Better,
    /// How a difference is judged against the runs' noise.
    pub noise: Noise,
}

/// How `compare` decides whether a difference of a figure is beyond the runs' noise (the
/// rules are `compare::RULES`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Noise {
    /// A latency quantile: the per-second quantiles (index into the four kept: p50, p90,
    /// p99, p999), and the histograms' bands apart.
    Quantile(f64, usize),
    /// The per-second rates.
    Rates,
    /// One second against the others' spread.
    Peak,
    /// The slowest exchange against the other run's p99.
    Max,
    /// Two proportions (failed / all).
    Proportion,
    /// Any difference at all.
    Exact,
    /// The server's CPU samples.
    ServerCpu,
    /// barrage's own CPU samples.
    GeneratorCpu,
    /// One RSS peak against the samples' spread.
    ServerRss,
    /// The server's CPU per request, second by second.
    ServerPerRequest,
    /// barrage's CPU per request, second by second.
    GeneratorPerRequest,
    /// The machine's CPU samples.
    MachineCpu,
}

const fn figure(
    name: &'static str,
    kind: Kind,
    needs: Needs,
    doc: &'static str,
    read: fn(&RunResult, Option<&AnalysisReport>) -> Option<f64>,
) -> Figure {
    Figure {
        name,
        kind: Some(kind),
        needs,
        doc,
        compared: None,
        read,
    }
}

const fn compared(mut f: Figure, row: u8, unit: Unit, better: Better, noise: Noise) -> Figure {
    f.compared = Some(Compared {
        row,
        unit,
        better,
        noise,
    });
    f
}

use Kind::{Bytes, Count, Duration, Percent, Rate, YesNo};
use Needs::{Monitoring, Nothing, Recovery};

/// Every figure, in the order `--threshold`'s list gives them. `errors.<class>` stands for
/// one row per error class (`errors.timeout`, ...), read by [`value`].
pub static FIGURES: &[Figure] = &[
    compared(
        figure(
            "p50",
            Duration,
            Nothing,
            "median exchange latency after the warm-up; duration",
            |r, _| Some(r.summary.latency_us.p50 as f64),
        ),
        2,
        Unit::Duration,
        Better::Lower,
        Noise::Quantile(0.5, 0),
    ),
    figure(
        "p75",
        Duration,
        Nothing,
        "75th percentile latency; duration",
        |r, _| Some(r.summary.latency_us.p75 as f64),
    ),
    compared(
        figure(
            "p90",
            Duration,
            Nothing,
            "90th percentile latency; duration",
            |r, _| Some(r.summary.latency_us.p90 as f64),
        ),
        3,
        Unit::Duration,
        Better::Lower,
        Noise::Quantile(0.9, 1),
    ),
    compared(
        figure(
            "p99",
            Duration,
            Nothing,
            "99th percentile latency; duration",
            |r, _| Some(r.summary.latency_us.p99 as f64),
        ),
        4,
        Unit::Duration,
        Better::Lower,
        Noise::Quantile(0.99, 2),
    ),
    compared(
        figure(
            "p999",
            Duration,
            Nothing,
            "99.9th percentile latency; duration",
            |r, _| Some(r.summary.latency_us.p999 as f64),
        ),
        5,
        Unit::Duration,
        Better::Lower,
        Noise::Quantile(0.999, 3),
    ),
    figure(
        "p9999",
        Duration,
        Nothing,
        "99.99th percentile latency; duration",
        |r, _| Some(r.summary.latency_us.p9999 as f64),
    ),
    compared(
        figure(
            "latency.max",
            Duration,
            Nothing,
            "slowest exchange; duration",
            |r, _| Some(r.summary.latency_us.max as f64),
        ),
        6,
        Unit::Duration,
        Better::Lower,
        Noise::Max,
    ),
    figure(
        "latency.mean",
        Duration,
        Nothing,
        "mean latency; duration",
        |r, _| Some(r.summary.latency_us.mean),
    ),
    figure(
        "connect.p99",
        Duration,
        Nothing,
        "99th percentile connect time (whole run); duration",
        |r, _| Some(r.summary.connect_us.p99 as f64),
    ),
    compared(
        figure(
            "rps.avg",
            Count,
            Nothing,
            "completed exchanges per second, measured window; count",
            |r, _| Some(r.summary.rps.avg),
        ),
        0,
        Unit::Rate,
        Better::Higher,
        Noise::Rates,
    ),
    compared(
        figure(
            "rps.peak",
            Count,
            Nothing,
            "best full second; count",
            |r, _| Some(r.summary.rps.peak),
        ),
        1,
        Unit::Rate,
        Better::Higher,
        Noise::Peak,
    ),
    figure(
        "rps.current",
        Count,
        Nothing,
        "last full second; count",
        |r, _| Some(r.summary.rps.current),
    ),
    figure(
        "requests",
        Count,
        Nothing,
        "exchanges completed after the warm-up; count",
        |r, _| Some(r.summary.requests as f64),
    ),
    figure(
        "errors",
        Count,
        Nothing,
        "error events after the warm-up (a broken connection counts once); count",
        |r, _| Some(r.summary.errors.total() as f64),
    ),
    figure(
        "errors.<class>",
        Count,
        Nothing,
        "error events of one class, e.g. errors.timeout; count",
        |_, _| None,
    ),
    figure(
        "requests.failed",
        Count,
        Nothing,
        "exchanges that did not complete (failed after sending, or not sent); count",
        |r, _| Some(r.summary.failed_requests.total() as f64),
    ),
    compared(
        figure(
            "errors.rate",
            Rate,
            Nothing,
            "requests.failed / (requests + requests.failed); rate (% or fraction)",
            |r, _| r.summary.error_rate(),
        ),
        7,
        Unit::Fraction,
        Better::Lower,
        Noise::Proportion,
    ),
    compared(
        figure(
            "connections.peak",
            Count,
            Nothing,
            "most connections open at once; count",
            |r, _| Some(r.summary.connections.peak as f64),
        ),
        8,
        Unit::Count,
        Better::Higher,
        Noise::Exact,
    ),
    figure(
        "connections.ready",
        Rate,
        Nothing,
        "planned connections (users) ready, the lesser of those ever ready and those \
         typically open in the steady state (the median second), / planned; rate",
        |r, _| {
            let s = &r.summary;
            let planned = s.connections.target;
            let ready = s.ramp.as_ref()?.ready.min(planned);
            let ever = (planned > 0).then(|| ready as f64 / planned as f64)?;
            // Ready once is not held: a server that closes half of them at once kept them
            // ready only once each (issue 42).
            let held = crate::readiness::steady_open(r).map_or(1.0, |o| o.median_pct / 100.0);
            Some(ever.min(held))
        },
    ),
    figure(
        "broadcast.reach",
        Rate,
        Nothing,
        "deliveries received / expected (scenario broadcast steps); rate",
        |r, _| r.summary.broadcast.as_ref()?.reach,
    ),
    figure(
        "broadcast.lost",
        Count,
        Nothing,
        "deliveries known lost (a sender's later message arrived, this never); count",
        |r, _| Some(r.summary.broadcast.as_ref()?.lost as f64),
    ),
    figure(
        "broadcast.missing",
        Count,
        Nothing,
        "deliveries expected and not received (lost or not yet arrived at the end); count",
        |r, _| Some(r.summary.broadcast.as_ref()?.missing as f64),
    ),
    figure(
        "broadcast.duplicates",
        Count,
        Nothing,
        "deliveries received twice; count",
        |r, _| Some(r.summary.broadcast.as_ref()?.c.duplicates as f64),
    ),
    figure(
        "broadcast.late",
        Count,
        Nothing,
        "deliveries that arrived after a later one of their sender; count",
        |r, _| Some(r.summary.broadcast.as_ref()?.c.late as f64),
    ),
    figure(
        "broadcast.p99",
        Duration,
        Nothing,
        "99th percentile delivery latency, send to another recipient; duration",
        |r, _| Some(r.summary.broadcast.as_ref()?.peer_us.as_ref()?.p99 as f64),
    ),
    figure(
        "broadcast.p50",
        Duration,
        Nothing,
        "median delivery latency to another recipient; duration",
        |r, _| Some(r.summary.broadcast.as_ref()?.peer_us.as_ref()?.p50 as f64),
    ),
    compared(
        figure(
            "server.rss.max",
            Bytes,
            Monitoring,
            "highest server RSS under load; byte size",
            |_, a| Some(a?.server.as_ref()?.rss_max_bytes as f64),
        ),
        10,
        Unit::Bytes,
        Better::Lower,
        Noise::ServerRss,
    ),
    figure(
        "server.rss.avg",
        Bytes,
        Monitoring,
        "mean server RSS under load; byte size",
        |_, a| Some(a?.server.as_ref()?.rss_avg_bytes),
    ),
    figure(
        "server.rss.after",
        Bytes,
        Recovery,
        "server RSS after the recovery phase; byte size",
        |_, a| Some(a?.recovery.as_ref()?.after_recovery_bytes as f64),
    ),
    compared(
        figure(
            "server.cpu.avg",
            Percent,
            Monitoring,
            "mean server CPU under load, % of one core; percentage",
            |_, a| Some(a?.server.as_ref()?.cpu_avg_pct),
        ),
        9,
        Unit::Percent,
        Better::Lower,
        Noise::ServerCpu,
    ),
    figure(
        "server.cpu.max",
        Percent,
        Monitoring,
        "highest server CPU sample under load, % of one core; percentage",
        |_, a| Some(a?.server.as_ref()?.cpu_max_pct),
    ),
    figure(
        "server.fds.max",
        Count,
        Monitoring,
        "most open file descriptors of the server under load; count",
        |_, a| Some(a?.server.as_ref()?.fds_max as f64),
    ),
    figure(
        "stability.cv",
        Percent,
        Nothing,
        "coefficient of variation of the steady per-second rate; percentage",
        |_, a| Some(a?.stability.as_ref()?.cv_pct),
    ),
    figure(
        "leak",
        YesNo,
        Recovery,
        "memory leak verdict (needs monitoring and a recovery phase); yes/no",
        |_, a| {
            Some(match a?.leak.as_ref()?.verdict {
                LeakStatus::Leak => 1.0,
                LeakStatus::NoLeak => 0.0,
                LeakStatus::Inconclusive => 0.5,
            })
        },
    ),
    // Compared only.
    Figure {
        name: "server.cpu_per_req",
        kind: None,
        needs: Monitoring,
        doc: "the server's CPU per completed exchange; duration",
        compared: Some(Compared {
            row: 11,
            unit: Unit::Duration,
            better: Better::Lower,
            noise: Noise::ServerPerRequest,
        }),
        read: |r, a| {
            let m = MonitorSeries::shown(r.monitor.as_ref()).filter(|m| !m.processes.is_empty())?;
            cpu_per_request(
                &combined_server(m),
                measured_window(r, a?),
                r.summary.rps.avg,
            )
        },
    },
    Figure {
        name: "generator.cpu_per_req",
        kind: None,
        needs: Nothing,
        doc: "barrage's CPU per completed exchange; duration",
        compared: Some(Compared {
            row: 12,
            unit: Unit::Duration,
            better: Better::Lower,
            noise: Noise::GeneratorPerRequest,
        }),
        read: |r, a| {
            let m = MonitorSeries::shown(r.monitor.as_ref())?;
            cpu_per_request(&m.generator, measured_window(r, a?), r.summary.rps.avg)
        },
    },
    // barrage's own CPU over the load window, beside the server's and the machine's.
    Figure {
        name: "generator.cpu.avg",
        kind: None,
        needs: Nothing,
        doc: "barrage's mean CPU under load, % of one core; percentage",
        compared: Some(Compared {
            row: 13,
            unit: Unit::Percent,
            better: Better::Lower,
            noise: Noise::GeneratorCpu,
        }),
        read: |r, _| {
            let m = MonitorSeries::shown(r.monitor.as_ref())?;
            Some(
                crate::figures::process(&m.generator, crate::figures::load_window(&r.timeseries))?
                    .cpu_avg_pct,
            )
        },
    },
    // The figure every output shows: the machine over the load window.
    Figure {
        name: "machine.cpu.avg",
        kind: None,
        needs: Nothing,
        doc: "the machine's mean CPU under load, % of one core; percentage",
        compared: Some(Compared {
            row: 14,
            unit: Unit::Percent,
            better: Better::Lower,
            noise: Noise::MachineCpu,
        }),
        read: |r, _| {
            let m = MonitorSeries::shown(r.monitor.as_ref())?;
            Some(
                crate::figures::machine(
                    m,
                    r.environment.cores,
                    crate::figures::load_window(&r.timeseries),
                )
                // A machine reading below the server's and barrage's own CPU is not measured.
                .filter(crate::figures::Machine::cpu_measured)?
                .cpu_avg_pct,
            )
        },
    },
];

/// The figure named `name` (`errors.timeout` is the `errors.<class>` row).
pub fn find(name: &str) -> Option<&'static Figure> {
    let row = match name.strip_prefix("errors.") {
        Some(class) if ErrorClass::from_name(class).is_some() => "errors.<class>",
        _ => name,
    };
    FIGURES.iter().find(|f| f.name == row)
}

/// The figures `compare` shows, in their order.
pub fn compared_figures() -> impl Iterator<Item = (&'static Figure, &'static Compared)> {
    let mut rows: Vec<_> = FIGURES
        .iter()
        .filter_map(|f| Some((f, f.compared.as_ref()?)))
        .collect();
    rows.sort_by_key(|(_, c)| c.row);
    rows.into_iter()
}

/// The value of `metric` for the run `r` as recorded; `analysis` is the run's analysis (the
/// figures of the server, stability, recovery and leak come from it). `None` when the run did
/// not record it, or for an unknown name.
pub fn value(r: &RunResult, analysis: Option<&AnalysisReport>, metric: &str) -> Option<f64> {
    let v = match metric.strip_prefix("errors.") {
        Some(class) if ErrorClass::from_name(class).is_some() => {
            r.summary.errors.get(ErrorClass::from_name(class)?) as f64
        }
        _ => (find(metric)?.read)(r, analysis)?,
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
        let names = crate::thresholds::metrics()
            .map(|(m, _)| m)
            .filter(|m| *m != "errors.<class>")
            .chain(crate::compare::metrics());
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
