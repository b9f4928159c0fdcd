//! Analysis of a finished run: steady state, stability, trends, memory, generator saturation.
//!
//! Pure functions over the record types (ticks, monitor samples); no I/O, no clocks. Every
//! judgement carries its rule as text so that a report can print why it said what it said, and
//! every judgement needs data: without samples a function returns `None` instead of a guess.
//! [`analyze`] runs all of them on one result; the pieces are public for other callers.

mod contention;
mod correctness;
mod fit;
mod memory;
mod run;
mod saturation;
mod stability;
#[cfg(test)]
pub(crate) mod testutil;
mod trend;

pub use crate::figures::{below_parts, BELOW_PARTS_SHARE, BELOW_PARTS_TOLERANCE_PCT};
pub use contention::{
    classify, contention, other_cpu, Cause, Contention, CpuShares, OtherCpu, CONTENTION_RULE,
    MACHINE_FULL_PCT, OTHER_MATERIAL_PCT,
};
pub use correctness::{correctness, Correctness, CORRECTNESS_RULE, UNEXPECTED_MAX_PCT};
pub use fit::{linear_fit, t_quantile_975, Fit};
pub use memory::{
    connection_rss_pairs, leak, per_connection_cost, recovery, LeakStatus, LeakVerdict, Recovery,
    DEFAULT_TOLERANCE_PCT, LEAK_RULE, RECOVERY_SLACK_BYTES,
};
pub use run::analyze;
pub(crate) use run::run_steady_state;
pub use saturation::{
    saturation, saturation_summary, sign as saturation_sign, CpuSeries, SaturationSummary, Sign,
    CPU_SATURATED, LAG_SATURATED_US,
};
pub use stability::{stability, steady_state, Schedule, Stability, RAMP_DONE};
pub use trend::{
    error_rate_trend, fd_trend, p99_trend, rss_trend, trend, Trend, TrendMetric, Verdict,
};

pub use crate::monitor::combined_server;
pub use crate::window::{steady_ticks, Window};

use crate::monitor::ProcSample;
use serde::{Deserialize, Serialize};

/// What the monitored server processes used, under load (see [`crate::figures`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerUsage {
    /// Monitored processes, counted together.
    pub processes: usize,
    pub samples_under_load: usize,
    /// Under load, in % of one core.
    pub cpu_avg_pct: f64,
    pub cpu_max_pct: f64,
    /// Under load.
    pub rss_avg_bytes: f64,
    /// Under load (idle and after-recovery memory are in `recovery`).
    pub rss_max_bytes: u64,
    /// Under load.
    pub fds_max: u64,
    pub threads_max: u64,
}

/// Usage of the server samples under load ([`crate::figures::process`] over `under_load`).
/// `None` without a sample under load.
pub fn server_usage(
    samples: &[ProcSample],
    under_load: Window,
    processes: usize,
) -> Option<ServerUsage> {
    let f = crate::figures::process(samples, under_load)?;
    Some(ServerUsage {
        processes,
        samples_under_load: f.samples,
        cpu_avg_pct: f.cpu_avg_pct,
        cpu_max_pct: f.cpu_max_pct,
        rss_avg_bytes: f.rss_avg_bytes,
        rss_max_bytes: f.rss_max_bytes,
        fds_max: f.fds_max,
        threads_max: f.threads_max,
    })
}

/// Everything [`analyze`] found in one run. Server parts are `None` without monitoring.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnalysisReport {
    /// The steady state is `(steady_from_s, steady_to_s]` ([`steady_state`]); the load ends
    /// at `load_end_s`.
    pub steady_from_s: f64,
    /// Results written before the steady state could end before the load did lack it:
    /// [`AnalysisReport::fill_legacy`] sets it to `load_end_s`, their steady state's end.
    #[serde(default = "f64_nan")]
    pub steady_to_s: f64,
    pub load_end_s: f64,
    pub stability: Option<Stability>,
    pub p99_trend: Option<Trend>,
    pub error_rate_trend: Option<Trend>,
    pub saturation: SaturationSummary,
    /// Other processes' CPU (machine - server - barrage); only with monitoring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention: Option<Contention>,
    /// Unexpected replies against completions: a reply framing that does not fit the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correctness: Option<Correctness>,
    pub server: Option<ServerUsage>,
    pub rss_trend: Option<Trend>,
    pub fd_trend: Option<Trend>,
    /// Only when a recovery phase was measured.
    pub recovery: Option<Recovery>,
    pub leak: Option<LeakVerdict>,
    /// Server RSS against open connections during the ramp: `slope` is bytes per connection.
    pub bytes_per_connection: Option<Fit>,
    /// The machine's network interfaces under load (bytes/s in and out: min, mean, max);
    /// only with monitoring.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<crate::figures::NetworkUse>,
}

fn f64_nan() -> f64 {
    f64::NAN
}

impl AnalysisReport {
    /// Fill what results written by older versions lack.
    pub fn fill_legacy(&mut self) {
        if self.steady_to_s.is_nan() {
            self.steady_to_s = self.load_end_s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::{proc, result, MIB};
    use super::*;
    use crate::monitor::{MonitorSeries, ProcessSeries};

    fn monitor(rss: impl Fn(f64) -> f64, until: i32) -> MonitorSeries {
        let samples = (-2..=until)
            .map(|t| {
                let mut s = proc(t as f64, rss(t as f64));
                s.cpu_pct = if (1..=60).contains(&t) { 150.0 } else { 1.0 };
                s.fds = 20;
                s.threads = 4;
                s
            })
            .collect();
        MonitorSeries {
            interval_s: 1.0,
            processes: vec![ProcessSeries {
                pid: 1,
                command: "srv".into(),
                samples,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_leaking_server_is_found_and_a_healthy_one_passes() {
        let r = result(60, 1000, 0, 10);
        let leaky = monitor(|t| 50.0 * MIB + 10.0 * MIB / 60.0 * t.clamp(0.0, 60.0), 70);
        let a = analyze(&r, Some(&leaky), Some(10.0));
        assert_eq!(a.steady_from_s, 1.0);
        assert_eq!(a.load_end_s, 60.0);
        assert_eq!(a.leak.as_ref().unwrap().verdict, LeakStatus::Leak);
        assert_eq!(a.rss_trend.as_ref().unwrap().verdict, Verdict::Growing);
        let u = a.server.as_ref().unwrap();
        assert_eq!((u.cpu_avg_pct, u.fds_max, u.threads_max), (150.0, 20, 4));
        assert_eq!(a.stability.as_ref().unwrap().cv_pct, 0.0);
        assert_eq!(a.saturation.saturated_s, 0);

        let healthy = monitor(
            |t| {
                if (1.0..=60.0).contains(&t) {
                    60.0 * MIB
                } else {
                    50.0 * MIB
                }
            },
            70,
        );
        let a = analyze(&r, Some(&healthy), Some(10.0));
        let l = a.leak.unwrap();
        assert_eq!((l.verdict, l.recovered), (LeakStatus::NoLeak, Some(true)));
        assert!(a.recovery.unwrap().returned);
        // Without a recovery phase the same leak is only suspected.
        let a = analyze(&r, Some(&leaky), None);
        assert_eq!(a.leak.unwrap().verdict, LeakStatus::Inconclusive);
    }

    #[test]
    fn without_monitoring_server_parts_are_absent() {
        let a = analyze(&result(10, 100, 0, 5), None, Some(10.0));
        assert!(a.server.is_none() && a.leak.is_none() && a.recovery.is_none());
        assert!(a.rss_trend.is_none() && a.bytes_per_connection.is_none());
        assert!(a.stability.is_some());
        assert!(!a.saturation.cpu_measured);
        let json = serde_json::to_string(&a).unwrap();
        let back: AnalysisReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, a);
    }

    #[test]
    fn several_processes_count_as_one_server() {
        let mut m = monitor(|_| 10.0 * MIB, 5);
        let mut other = m.processes[0].clone();
        for s in &mut other.samples {
            s.t += 0.01;
        }
        other.samples.pop();
        m.processes.insert(0, other);
        let c = combined_server(&m);
        assert_eq!(c.len(), 8);
        assert_eq!(c[0].rss_bytes, (20.0 * MIB) as u64);
        assert_eq!(c[7].rss_bytes, (10.0 * MIB) as u64);
        assert_eq!(c[3].fds, 40);
    }
}
