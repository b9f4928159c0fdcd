//! The measured figures of a run, by threshold metric name, in canonical units: each one
//! read through the one vocabulary (`crate::vocabulary`).
//!
//! A plain map: a metric that was not measured is simply absent, which evaluation reports as
//! "not measured". Server figures come from the analysis (which combines the monitored
//! processes), so a run without monitoring has none of them. [`evaluate`] checks one
//! threshold against them.

use super::{metrics, Threshold, ThresholdCheck};
use crate::analysis::AnalysisReport;
use crate::error::ErrorClass;
use crate::result::RunResult;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Facts(BTreeMap<String, f64>);

impl Facts {
    pub fn get(&self, metric: &str) -> Option<f64> {
        self.0.get(metric).copied()
    }

    /// Set a figure; non-finite values are not measurements and are left out.
    pub fn set(&mut self, metric: &str, value: f64) {
        if value.is_finite() {
            self.0.insert(metric.into(), value);
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// Every threshold metric's value for the run, by the one vocabulary
    /// ([`crate::vocabulary::measured`]); what was not measured is absent.
    pub fn from_result(result: &RunResult, analysis: Option<&AnalysisReport>) -> Self {
        let mut f = Facts::default();
        let classes = ErrorClass::ALL.map(|c| format!("errors.{c}"));
        let names = metrics()
            .map(|(m, _)| m)
            .filter(|m| *m != "errors.<class>")
            .chain(classes.iter().map(String::as_str));
        for m in names {
            if let Some(v) = crate::vocabulary::measured(result, analysis, m) {
                f.set(m, v);
            }
        }
        for m in &result.server_metrics {
            let at = |stat: &str| format!("server.metric.{}.{stat}", m.name);
            for (stat, v) in [
                ("max", m.max()),
                ("min", m.min()),
                ("mean", m.mean()),
                ("last", m.last()),
            ] {
                if let Some(v) = v {
                    f.set(&at(stat), v);
                }
            }
        }
        for s in &result.summary.steps {
            let at = |m: &str| format!("steps.{}.{m}", s.name);
            if let Some(l) = &s.latency_us {
                for (m, v) in [
                    ("p50", l.p50 as f64),
                    ("p90", l.p90 as f64),
                    ("p99", l.p99 as f64),
                    ("p999", l.p999 as f64),
                    ("latency.max", l.max as f64),
                    ("latency.mean", l.mean),
                ] {
                    f.set(&at(m), v);
                }
            }
            if let Some(r) = s.error_rate {
                f.set(&at("errors.rate"), r);
            }
            f.set(&at("requests"), s.c.completed as f64);
            f.set(&at("requests.failed"), (s.c.failed + s.c.not_sent) as f64);
            f.set(&at("sent"), s.c.sent as f64);
            f.set(&at("capture_misses"), s.c.capture_misses as f64);
        }
        f
    }
}

/// Why a metric may be missing, for the outcome's reason.
fn missing_hint(metric: &str) -> &'static str {
    match metric {
        "server.rss.after" => "no recovery phase was measured",
        "leak" => "no leak verdict: needs server monitoring",
        "stability.cv" => "no steady-state seconds to analyse",
        "errors.rate" => "nothing completed or failed",
        m if m.starts_with("broadcast.") => "no broadcast step was sent (or nothing expected)",
        m if m.starts_with("server.") => "the server was not monitored",
        _ => "no exchange or connect was timed",
    }
}

pub fn evaluate(t: &Threshold, facts: &Facts) -> ThresholdCheck {
    let actual = facts.get(&t.metric);
    let passed = actual.map(|a| t.op.holds(a, t.limit));
    let limit = format!("{} {}", t.op.as_str(), t.kind.format(t.limit));
    let reason = match (actual, passed) {
        (Some(a), Some(p)) => format!(
            "{} = {} (limit {limit}): {}",
            t.metric,
            t.kind.format(a),
            if p { "passed" } else { "failed" }
        ),
        _ => format!(
            "{}: not measured ({}), counted as failed",
            t.metric,
            missing_hint(&t.metric)
        ),
    };
    ThresholdCheck {
        expr: t.expr.clone(),
        metric: t.metric.clone(),
        op: t.op,
        limit: t.limit,
        actual,
        passed,
        reason,
    }
}

pub fn evaluate_all(ts: &[Threshold], facts: &Facts) -> Vec<ThresholdCheck> {
    ts.iter().map(|t| evaluate(t, facts)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::analyze;
    use crate::analysis::testutil::{proc, result};
    use crate::monitor::{MonitorSeries, ProcessSeries};
    use crate::thresholds::{any_failed, evaluate_all, parse};

    #[test]
    fn facts_from_summary_only() {
        let r = result(10, 1000, 10, 8);
        let f = Facts::from_result(&r, None);
        assert_eq!(f.get("requests"), Some(10_000.0));
        assert_eq!(f.get("rps.avg"), Some(1000.0));
        assert_eq!(f.get("errors"), Some(100.0));
        assert_eq!(f.get("errors.timeout"), Some(100.0));
        assert_eq!(f.get("errors.refused"), Some(0.0));
        assert!((f.get("errors.rate").unwrap() - 100.0 / 10_100.0).abs() < 1e-12);
        assert_eq!(f.get("connections.peak"), Some(8.0));
        let p99 = f.get("p99").unwrap();
        assert!((99.0..=101.0).contains(&p99), "{p99}");
        assert_eq!(f.get("connect.p99"), None);
        assert_eq!(f.get("server.rss.max"), None);
        assert_eq!(f.get("stability.cv"), None);
        let json = serde_json::to_value(&f).unwrap();
        assert_eq!(json["requests"], 10_000.0);
    }

    #[test]
    fn facts_with_monitoring_gate_a_run() {
        let r = result(20, 500, 0, 4);
        let samples = (-1..=25)
            .map(|t| {
                let mut s = proc(t as f64, 30e6);
                s.cpu_pct = 40.0;
                s.fds = 12;
                s
            })
            .collect();
        let m = MonitorSeries {
            interval_s: 1.0,
            processes: vec![ProcessSeries {
                pid: 7,
                command: "srv".into(),
                samples,
            }],
            ..Default::default()
        };
        let a = analyze(&r, Some(&m), Some(5.0));
        let f = Facts::from_result(&r, Some(&a));
        assert_eq!(f.get("server.rss.max"), Some(30e6));
        assert_eq!(f.get("server.rss.after"), Some(30e6));
        assert_eq!(f.get("server.cpu.avg"), Some(40.0));
        assert_eq!(f.get("server.fds.max"), Some(12.0));
        assert_eq!(f.get("stability.cv"), Some(0.0));
        assert_eq!(f.get("leak"), Some(0.0));
        let ts: Vec<_> = [
            "p99 < 1ms",
            "leak == no",
            "server.rss.max < 32MB",
            "stability.cv < 5%",
        ]
        .iter()
        .map(|e| parse(e).unwrap())
        .collect();
        let out = evaluate_all(&ts, &f);
        assert!(!any_failed(&out), "{out:?}");
        let out = evaluate_all(&[parse("server.rss.max < 28MB").unwrap()], &f);
        assert!(any_failed(&out));
    }
}
