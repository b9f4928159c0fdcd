//! Steady state and the stability of throughput in it.
//!
//! The steady state starts when both the warm-up and the connection ramp are over: from the
//! end of the first tick at which at least 99 % of the target connections are open and stay
//! open until the load ends. Stability looks only at full measured seconds (`dt ≥ 0.999`) after
//! that point, since partial segments at the warm-up and load ends have noisy rates.

use super::trend::{trend, Trend, TrendMetric};
use crate::aggregate::Tick;
use crate::timeline::Phase;
use serde::{Deserialize, Serialize};

/// Share of the target connections that counts as "ramped up".
pub const RAMP_DONE: f64 = 0.99;

/// Seconds since the run's start after which the run is in its steady state (ticks with
/// `t > steady_start` belong to it).
///
/// When the open connections never stay at 99 % of the target until the load ends, this is
/// the end of the last load tick: the steady state is empty and nothing is called stable.
pub fn steady_start(ticks: &[Tick], target_connections: u64) -> f64 {
    let warmup_end = ticks
        .iter()
        .filter(|t| t.phase == Phase::Warmup)
        .map(|t| t.t)
        .fold(0.0, f64::max);
    let load: Vec<&Tick> = ticks.iter().filter(|t| t.phase != Phase::Drain).collect();
    let need = RAMP_DONE * target_connections as f64;
    let ramp_done = match load.iter().rposition(|t| (t.open as f64) < need) {
        None => load.first().map_or(0.0, |t| t.t),
        Some(i) => load.get(i + 1).unwrap_or(&load[i]).t,
    };
    warmup_end.max(ramp_done)
}

/// The full measured seconds of the steady state.
pub fn steady_ticks(ticks: &[Tick], steady_from_s: f64) -> impl Iterator<Item = &Tick> {
    ticks
        .iter()
        .filter(move |t| t.phase == Phase::Measured && t.dt >= 0.999 && t.t > steady_from_s)
}

/// How even the per-second rate was in the steady state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stability {
    pub mean_rps: f64,
    /// Coefficient of variation of the per-second rate, in % (sample stdev / mean × 100).
    pub cv_pct: f64,
    /// Largest deviation of one second from the mean, in % of the mean.
    pub max_dev_pct: f64,
    /// Drift of the rate (% of the mean per hour).
    pub drift: Trend,
    /// Seconds looked at.
    pub n: usize,
}

/// `None` with fewer than 3 steady seconds or a mean rate of 0.
pub fn stability(ticks: &[Tick], steady_from_s: f64) -> Option<Stability> {
    let pts: Vec<(f64, f64)> = steady_ticks(ticks, steady_from_s)
        .map(|t| (t.t, t.requests as f64 / t.dt))
        .collect();
    let n = pts.len();
    if n < 3 {
        return None;
    }
    let mean = pts.iter().map(|p| p.1).sum::<f64>() / n as f64;
    if mean <= 0.0 {
        return None;
    }
    let var = pts.iter().map(|p| (p.1 - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let max_dev = pts.iter().map(|p| (p.1 - mean).abs()).fold(0.0, f64::max);
    Some(Stability {
        mean_rps: mean,
        cv_pct: var.sqrt() / mean * 100.0,
        max_dev_pct: max_dev / mean * 100.0,
        drift: trend(TrendMetric::Throughput, &pts)?,
        n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testutil::{measured, tick, XorShift};
    use crate::analysis::Verdict;

    #[test]
    fn steady_state_starts_after_warmup_and_ramp() {
        let mut ticks = vec![
            tick(1.0, Phase::Warmup, 10, 20),
            tick(2.0, Phase::Warmup, 10, 50),
        ];
        for (t, open) in [(3.0, 80), (4.0, 99), (5.0, 100), (6.0, 100), (7.0, 99)] {
            ticks.push(tick(t, Phase::Measured, 10, open));
        }
        ticks.push(tick(7.5, Phase::Drain, 0, 0));
        // 99 reached at t = 4 and held to the end; the drain's 0 does not count.
        assert_eq!(steady_start(&ticks, 100), 4.0);
        // A dip below 99 % later restarts the steady state after the dip.
        ticks[4].open = 90;
        assert_eq!(steady_start(&ticks, 100), 6.0);
        // Ramp done during the warm-up: the warm-up end decides.
        assert_eq!(steady_start(&ticks, 10), 2.0);
        // Never ramped: the steady state is empty.
        assert_eq!(steady_start(&ticks, 1000), 7.0);
        assert!(stability(&ticks, steady_start(&ticks, 1000)).is_none());
    }

    #[test]
    fn constant_rate_has_zero_cv_and_no_drift() {
        let ticks = measured(&[5000.0; 30], 10);
        let s = stability(&ticks, 0.0).unwrap();
        assert_eq!((s.cv_pct, s.max_dev_pct, s.n), (0.0, 0.0, 30));
        assert_eq!(s.drift.verdict, Verdict::Flat);
        assert_eq!(s.drift.per_hour, 0.0);
    }

    #[test]
    fn cv_of_noisy_rate_and_partial_seconds_are_skipped() {
        let mut r = XorShift::new(3);
        let rates: Vec<f64> = (0..2000)
            .map(|_| 1000.0 * (1.0 + 0.08 * r.gauss()))
            .collect();
        let mut ticks = measured(&rates, 10);
        ticks[10].dt = 0.5;
        ticks[10].requests = 1_000_000;
        let s = stability(&ticks, 0.0).unwrap();
        assert_eq!(s.n, 1999);
        assert!((s.cv_pct - 8.0).abs() < 0.5, "{}", s.cv_pct);
        assert!(s.max_dev_pct > 20.0 && s.max_dev_pct < 40.0);
        let from_t = stability(&ticks, 1000.0).unwrap();
        assert_eq!(from_t.n, 1000);
    }

    #[test]
    fn a_rate_that_falls_by_half_drifts() {
        let rates: Vec<f64> = (0..100).map(|i| 2000.0 - 10.0 * i as f64).collect();
        let s = stability(&measured(&rates, 10), 0.0).unwrap();
        assert_eq!(s.drift.verdict, Verdict::Shrinking);
    }
}
