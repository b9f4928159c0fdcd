//! Thresholds: pass/fail rules on a run's figures, `METRIC OP VALUE[UNIT]`.
//!
//! `OP` is one of `< <= > >= == !=`; spaces are optional (`p99<20ms`, `p99 < 20 ms`). Each
//! metric has a kind that decides which units its value takes; values are converted to one
//! canonical unit per kind when parsed, so evaluation is a plain comparison:
//!
//! | kind | units | canonical |
//! |---|---|---|
//! | duration | `us` `µs` `ms` `s` `m` (required) | µs |
//! | count | none, `k` (10³), `M` (10⁶) | 1 |
//! | bytes | `B` `KB` `KiB` `MB` `MiB` `GB` `GiB` (required; KB = 10³ B, MB = 10⁶ B, GB = 10⁹ B; KiB = 2¹⁰ B, MiB = 2²⁰ B, GiB = 2³⁰ B) | bytes |
//! | percent | `%` (required) | % |
//! | rate | `%`, or none for a fraction 0..1 | fraction |
//! | yes/no | `yes` or `no`, with `==` or `!=` only | 1 / 0 |
//!
//! Metrics (see [`metrics`]): `p50 p75 p90 p99 p999 p9999 latency.max latency.mean`
//! (exchange latency after the warm-up), `connect.p99`, `rps.avg rps.peak rps.current`,
//! `requests`, `errors`, `errors.<class>` (one error class, e.g. `errors.timeout`),
//! `errors.rate` (errors / (completed + errors)), `connections.peak`, `connections.ready`
//! (planned connections ever ready, a rate), `server.rss.max`,
//! `server.rss.avg`, `server.rss.after` (after the recovery phase), `server.cpu.avg`,
//! `server.cpu.max` (% of one core), `server.fds.max`, `stability.cv`, `leak`.
//!
//! A metric that was not measured (no monitoring, no recovery phase, nothing completed) makes
//! its threshold *unmeasured* (`passed: None`), which [`any_failed`] counts as a failure: a
//! gate that could not be checked must not let a run through.

mod facts;
mod names;
mod parse;

pub use facts::{evaluate, evaluate_all, Facts};
pub use names::{kind_of, metrics, needs};
pub use parse::{parse, ThresholdError};

use serde::{Deserialize, Serialize};

/// How a metric's value is written and stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Canonical unit: µs.
    Duration,
    Count,
    /// Canonical unit: bytes.
    Bytes,
    /// Canonical unit: % (may exceed 100, e.g. CPU of several cores).
    Percent,
    /// Canonical unit: fraction 0..1.
    Rate,
    /// 1 = yes, 0 = no; the `leak` fact is 0.5 when inconclusive, so it is neither.
    YesNo,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Duration => "duration",
            Self::Count => "count",
            Self::Bytes => "byte size",
            Self::Percent => "percentage",
            Self::Rate => "rate",
            Self::YesNo => "yes/no",
        }
    }

    /// A value in the canonical unit, for people.
    pub fn format(self, v: f64) -> String {
        const MIB: f64 = 1024.0 * 1024.0;
        match self {
            Self::Duration if v < 1e3 => format!("{v:.0} µs"),
            Self::Duration if v < 1e6 => format!("{:.3} ms", v / 1e3),
            Self::Duration => format!("{:.3} s", v / 1e6),
            Self::Count if v.fract() == 0.0 => format!("{v:.0}"),
            Self::Count => format!("{v:.1}"),
            Self::Bytes if v < 1024.0 => format!("{v:.0} B"),
            Self::Bytes if v < MIB => format!("{:.1} KiB", v / 1024.0),
            Self::Bytes if v < 1024.0 * MIB => format!("{:.1} MiB", v / MIB),
            Self::Bytes => format!("{:.2} GiB", v / (1024.0 * MIB)),
            Self::Percent => format!("{v:.1} %"),
            Self::Rate => format!("{:.3} %", v * 100.0),
            Self::YesNo if v == 1.0 => "yes".into(),
            Self::YesNo if v == 0.0 => "no".into(),
            Self::YesNo => "inconclusive".into(),
        }
    }
}

/// What a threshold may say of one scenario step: `steps.NAME.METRIC`.
pub const STEP_METRICS: [(&str, Kind); 11] = [
    ("p50", Kind::Duration),
    ("p90", Kind::Duration),
    ("p99", Kind::Duration),
    ("p999", Kind::Duration),
    ("latency.max", Kind::Duration),
    ("latency.mean", Kind::Duration),
    ("errors.rate", Kind::Rate),
    ("requests", Kind::Count),
    ("requests.failed", Kind::Count),
    ("sent", Kind::Count),
    ("capture_misses", Kind::Count),
];

/// `steps.NAME.METRIC` -> (NAME, METRIC) when METRIC is a step metric.
pub fn step_metric(metric: &str) -> Option<(&str, &str)> {
    let rest = metric.strip_prefix("steps.")?;
    STEP_METRICS.iter().find_map(|(m, _)| {
        let name = rest.strip_suffix(m)?.strip_suffix('.')?;
        (!name.is_empty()).then_some((name, *m))
    })
}

/// What a threshold may say of one series of the server's own metrics:
/// `server.metric.NAME.STAT`.
pub const SERVER_METRIC_STATS: [&str; 4] = ["max", "min", "mean", "last"];

/// `server.metric.NAME.STAT` -> (NAME, STAT).
pub fn server_metric(metric: &str) -> Option<(&str, &str)> {
    let rest = metric.strip_prefix("server.metric.")?;
    let (name, stat) = rest.rsplit_once('.')?;
    (!name.is_empty() && SERVER_METRIC_STATS.contains(&stat)).then_some((name, stat))
}

/// What a metric needs beyond the load itself, so that a threshold that could never be
/// measured is refused before the run instead of failing after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Measured by every run.
    Nothing,
    /// Server samples: `--monitor PID|auto` or `--spawn CMD`.
    Monitoring,
    /// Server samples and a recovery window after the load (`--recovery`, not 0).
    Recovery,
    /// The server's own metrics: `--server-metrics URL --server-metric SELECTOR`.
    ServerMetrics,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "==")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Lt => "<",
            Self::Le => "<=",
            Self::Gt => ">",
            Self::Ge => ">=",
            Self::Eq => "==",
            Self::Ne => "!=",
        }
    }

    /// Whether `actual OP limit` holds; `==` and `!=` allow a relative error of 1e-9, since
    /// limits went through unit conversions.
    pub fn holds(self, actual: f64, limit: f64) -> bool {
        let eq = (actual - limit).abs() <= 1e-9 * actual.abs().max(limit.abs()).max(1.0);
        match self {
            Self::Lt => actual < limit,
            Self::Le => actual <= limit,
            Self::Gt => actual > limit,
            Self::Ge => actual >= limit,
            Self::Eq => eq,
            Self::Ne => !eq,
        }
    }
}

/// A parsed threshold; `limit` is in the canonical unit of `kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// As the user wrote it (trimmed).
    pub expr: String,
    pub metric: String,
    pub op: Op,
    pub limit: f64,
    pub kind: Kind,
}

/// A threshold checked against a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThresholdCheck {
    pub expr: String,
    pub metric: String,
    pub op: Op,
    pub limit: f64,
    /// Measured value in the canonical unit; `None` when not measured.
    pub actual: Option<f64>,
    /// `None`: not measured, which counts as failed (see [`any_failed`]).
    pub passed: Option<bool>,
    /// One line for people: the figure, the limit and the result, or why it is missing.
    pub reason: String,
}

/// Whether any threshold failed or could not be checked.
pub fn any_failed(outcomes: &[ThresholdCheck]) -> bool {
    outcomes.iter().any(|o| o.passed != Some(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_thresholds_need_monitoring_and_recovery() {
        assert_eq!(needs("server.rss.max"), Needs::Monitoring);
        assert_eq!(needs("server.cpu.avg"), Needs::Monitoring);
        assert_eq!(needs("server.rss.after"), Needs::Recovery);
        assert_eq!(needs("leak"), Needs::Recovery);
        assert_eq!(needs("p99"), Needs::Nothing);
        assert_eq!(needs("errors.rate"), Needs::Nothing);
        // MB is decimal, MiB binary.
        assert_eq!(parse("server.rss.max < 64MB").unwrap().limit, 64e6);
        assert_eq!(
            parse("server.rss.max < 64MiB").unwrap().limit,
            64.0 * 1048576.0
        );
    }

    #[test]
    fn every_listed_metric_has_a_kind_and_every_kind_is_described() {
        for (m, what) in metrics() {
            let k = if m == "errors.<class>" {
                kind_of("errors.timeout")
            } else {
                kind_of(m)
            };
            let k = k.unwrap_or_else(|| panic!("{m} has no kind"));
            let described = what.rsplit("; ").next().unwrap();
            assert!(described.starts_with(k.as_str()), "{m}: {what}");
        }
        assert_eq!(kind_of("errors.nope"), None);
        assert_eq!(kind_of("p95"), None);
    }

    #[test]
    fn evaluation_table() {
        let mut f = Facts::default();
        f.set("p99", 12_300.0);
        f.set("rps.avg", 15_000.0);
        f.set("errors.rate", 0.0004);
        f.set("leak", 0.5);
        f.set("server.rss.max", 60.0 * 1024.0 * 1024.0);
        let table: &[(&str, Option<bool>)] = &[
            ("p99 < 20ms", Some(true)),
            ("p99 < 10ms", Some(false)),
            ("p99 <= 12.3ms", Some(true)),
            ("p99 == 12300us", Some(true)),
            ("p99 != 12.3 ms", Some(false)),
            ("rps.avg >= 15k", Some(true)),
            ("rps.avg > 15k", Some(false)),
            ("errors.rate < 0.1%", Some(true)),
            ("errors.rate < 0.0001", Some(false)),
            ("server.rss.max < 64MB", Some(true)),
            ("server.rss.max < 60MB", Some(false)),
            ("leak == no", Some(false)),
            ("leak != yes", Some(true)),
            ("server.cpu.avg < 80%", None),
            ("stability.cv < 5%", None),
        ];
        for (expr, want) in table {
            let o = evaluate(&parse(expr).unwrap(), &f);
            assert_eq!(o.passed, *want, "{expr}: {}", o.reason);
        }
        let o = evaluate(&parse("p99 < 10ms").unwrap(), &f);
        assert_eq!(o.reason, "p99 = 12.300 ms (limit < 10.000 ms): failed");
        let o = evaluate(&parse("server.cpu.avg < 80%").unwrap(), &f);
        assert!(
            o.reason.contains("not monitored") && o.reason.contains("failed"),
            "{}",
            o.reason
        );
        let o = evaluate(&parse("leak == no").unwrap(), &f);
        assert!(o.reason.contains("inconclusive"), "{}", o.reason);
    }

    #[test]
    fn any_failed_counts_unmeasured() {
        let mut f = Facts::default();
        f.set("p50", 100.0);
        let ok = evaluate_all(&[parse("p50 < 1ms").unwrap()], &f);
        assert!(!any_failed(&ok));
        assert!(!any_failed(&[]));
        let missing = evaluate_all(
            &[parse("p50 < 1ms").unwrap(), parse("p99 < 1ms").unwrap()],
            &f,
        );
        assert!(any_failed(&missing));
        let json = serde_json::to_value(&missing[1]).unwrap();
        assert_eq!(json["op"], "<");
        assert_eq!(json["passed"], serde_json::Value::Null);
    }
}
