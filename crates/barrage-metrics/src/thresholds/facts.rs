//! The measured figures of a run, by threshold metric name, in canonical units.
//!
//! A plain map: a metric that was not measured is simply absent, which evaluation reports as
//! "not measured". Server figures come from the analysis (which combines the monitored
//! processes), so a run without monitoring has none of them.

use crate::analysis::{AnalysisReport, LeakStatus};
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

    pub fn from_result(result: &RunResult, analysis: Option<&AnalysisReport>) -> Self {
        let mut f = Facts::default();
        let s = &result.summary;
        let l = &s.latency_us;
        if l.count > 0 {
            for (m, v) in [
                ("p50", l.p50),
                ("p75", l.p75),
                ("p90", l.p90),
                ("p99", l.p99),
                ("p999", l.p999),
                ("p9999", l.p9999),
                ("latency.max", l.max),
            ] {
                f.set(m, v as f64);
            }
            f.set("latency.mean", l.mean);
        }
        if s.connect_us.count > 0 {
            f.set("connect.p99", s.connect_us.p99 as f64);
        }
        f.set("rps.avg", s.rps.avg);
        f.set("rps.peak", s.rps.peak);
        f.set("rps.current", s.rps.current);
        f.set("requests", s.requests as f64);
        let errors = s.errors.total();
        f.set("errors", errors as f64);
        for c in ErrorClass::ALL {
            f.set(&format!("errors.{c}"), s.errors.get(c) as f64);
        }
        if let Some(rate) = s.error_rate() {
            f.set("errors.rate", rate);
        }
        f.set("requests.failed", s.failed_requests.total() as f64);
        f.set("connections.peak", s.connections.peak as f64);
        let Some(a) = analysis else {
            return f;
        };
        if let Some(st) = &a.stability {
            f.set("stability.cv", st.cv_pct);
        }
        if let Some(u) = &a.server {
            f.set("server.rss.max", u.rss_max_bytes as f64);
            f.set("server.rss.avg", u.rss_avg_bytes);
            f.set("server.cpu.avg", u.cpu_avg_pct);
            f.set("server.cpu.max", u.cpu_max_pct);
            f.set("server.fds.max", u.fds_max as f64);
        }
        if let Some(r) = &a.recovery {
            f.set("server.rss.after", r.after_recovery_bytes as f64);
        }
        if let Some(l) = &a.leak {
            let v = match l.verdict {
                LeakStatus::Leak => 1.0,
                LeakStatus::NoLeak => 0.0,
                LeakStatus::Inconclusive => 0.5,
            };
            f.set("leak", v);
        }
        f
    }
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
