//! Steady state and the stability of throughput in it.
//!
//! The steady state is the part of the load in which the planned load was all there: after the
//! warm-up and the ramp up, before the ramp down. For a users scenario that is the schedule:
//! from the moment the last user's own pacing began (its arrival, or later when its connection
//! opened late, plus the longest think before its first repeated step) to the first departure
//! (`hold` after the last arrival, also when users leave all at once at the end: their `leave`
//! steps still run after it). For connections it is read from the open connections: the last
//! unbroken stretch of ticks with at least 99 % of the target open, so a dip restarts it and a
//! final ramp down (planned, or the server dropping connections) ends it. Stability looks only
//! at full measured seconds (`dt ≥ 0.999`) in it, since partial segments at the warm-up and load
//! ends have noisy rates.

use super::trend::{trend, Trend, TrendMetric};
use crate::aggregate::Tick;
use crate::timeline::Phase;
use crate::window::{steady_ticks, Window};
use serde::{Deserialize, Serialize};

/// Share of the target connections that counts as "ramped up".
pub const RAMP_DONE: f64 = 0.99;

/// A users scenario's schedule, in seconds since the run's start: the steady state is
/// `(last_arrival_s + pacing_after_s, depart_from_s]`, later when the connections opened
/// after their arrival. Users leave `hold` after the last arrival whether they leave at a rate
/// or all at once ("at the end": their `leave` steps still run after it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    pub last_arrival_s: f64,
    pub depart_from_s: f64,
    /// The longest think before a user's pacing begins (`ConfigUsers::pacing_after_s`).
    pub pacing_after_s: f64,
}

/// The steady state (ticks with `from_s < t ≤ to_s` belong to it). When there is none (the
/// connections never reached 99 % of the target, or the schedule leaves no time between the
/// last arrival and the first departure) it is empty at the end of the last load tick, and
/// nothing is called stable.
pub fn steady_state(ticks: &[Tick], target_connections: u64, schedule: Option<Schedule>) -> Window {
    let warmup_end = ticks
        .iter()
        .filter(|t| t.phase == Phase::Warmup)
        .map(|t| t.t)
        .fold(0.0, f64::max);
    let load: Vec<&Tick> = ticks.iter().filter(|t| t.phase != Phase::Drain).collect();
    let load_end = load.last().map_or(0.0, |t| t.t);
    let empty = Window {
        from_s: load_end,
        to_s: load_end,
    };
    let (from_s, to_s) = match schedule {
        Some(s) => {
            let to_s = s.depart_from_s.min(load_end);
            // Connections can open after their users' scheduled arrival (a slow accept, a busy
            // generator): the users have arrived once the open count reached 99 % of its
            // highest before the departures (users that failed and left stay below it).
            let peak = load
                .iter()
                .filter(|t| t.t > s.last_arrival_s && t.t <= to_s)
                .map(|t| t.open)
                .max()
                .unwrap_or(0);
            let arrived = load
                .iter()
                .find(|t| t.t >= s.last_arrival_s && t.open as f64 >= RAMP_DONE * peak as f64)
                .map_or(s.last_arrival_s, |t| t.t.max(s.last_arrival_s));
            (arrived + s.pacing_after_s, to_s)
        }
        None => {
            let need = RAMP_DONE * target_connections as f64;
            let full = |t: &Tick| t.open as f64 >= need;
            let Some(end) = load.iter().rposition(|t| full(t)) else {
                return empty;
            };
            let from_s = match load[..end].iter().rposition(|t| !full(t)) {
                None => load[0].t,
                Some(i) => load[i + 1].t,
            };
            (from_s, load[end].t)
        }
    };
    let from_s = from_s.max(warmup_end);
    if from_s >= to_s {
        return empty;
    }
    Window { from_s, to_s }
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
pub fn stability(ticks: &[Tick], steady: Window) -> Option<Stability> {
    let pts: Vec<(f64, f64)> = steady_ticks(ticks, steady)
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

    fn window(from_s: f64, to_s: f64) -> Window {
        Window { from_s, to_s }
    }

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
        assert_eq!(steady_state(&ticks, 100, None), window(4.0, 7.0));
        // A dip below 99 % later restarts the steady state after the dip.
        ticks[4].open = 90;
        assert_eq!(steady_state(&ticks, 100, None), window(6.0, 7.0));
        // Ramp done during the warm-up: the warm-up end decides.
        assert_eq!(steady_state(&ticks, 10, None), window(2.0, 7.0));
        // Never ramped: the steady state is empty.
        assert_eq!(steady_state(&ticks, 1000, None), window(7.0, 7.0));
        assert!(stability(&ticks, steady_state(&ticks, 1000, None)).is_none());
    }

    #[test]
    fn a_ramp_down_ends_the_steady_state() {
        // Regression: a run whose connections ramped down at the end had an empty steady
        // state (they did not "stay open until the load ended"), so the whole run was ramp.
        let open = [10, 50, 100, 100, 100, 100, 100, 60, 20, 0];
        let ticks: Vec<Tick> = open
            .iter()
            .enumerate()
            .map(|(i, o)| tick(i as f64 + 1.0, Phase::Measured, 10, *o))
            .collect();
        let w = steady_state(&ticks, 100, None);
        assert_eq!(w, window(3.0, 7.0));
        assert_eq!(steady_ticks(&ticks, w).count(), 4);
        assert_eq!(stability(&ticks, w).unwrap().n, 4);
    }

    #[test]
    fn a_users_schedule_sets_the_steady_state() {
        // Users that failed and left keep the open count under 99 % of the users; the
        // schedule, not the count, says when everyone has arrived and when they start leaving.
        let ticks: Vec<Tick> = (1..=20)
            .map(|t| tick(t as f64, Phase::Measured, 10, 90))
            .collect();
        let s = |depart| {
            Some(Schedule {
                last_arrival_s: 5.0,
                depart_from_s: depart,
                pacing_after_s: 0.0,
            })
        };
        // Departures (at a rate, or all at once with `leave` steps still running) from 15 s.
        assert_eq!(steady_state(&ticks, 100, s(15.0)), window(5.0, 15.0));
        // A run stopped before the departures: up to its end.
        assert_eq!(steady_state(&ticks, 100, s(99.0)), window(5.0, 20.0));
        // No hold: no steady state.
        assert_eq!(steady_state(&ticks, 100, s(5.0)), window(20.0, 20.0));
        // The warm-up still comes first.
        let mut warm = ticks.clone();
        for t in &mut warm[..8] {
            t.phase = Phase::Warmup;
        }
        assert_eq!(steady_state(&warm, 100, s(15.0)), window(8.0, 15.0));
    }

    #[test]
    fn a_scenario_steady_state_starts_when_the_users_pacing_does() {
        // Regression: a healthy broadcast scenario (users arrive until 4 s, think 1-5 s, then
        // say something every 4 s) read "stability FAIL": its steady state began at the last
        // arrival, while the users' messages were still ramping up through their first think.
        // Here the last connections also open a second late (a busy generator).
        let mut ticks = Vec::new();
        for t in 1..=40 {
            let t = f64::from(t);
            let open = (500.0 * t).min(2000.0) as u64;
            let open = if t == 4.0 { 1789 } else { open };
            // 500 messages/s once every user paces itself; fewer while they think.
            let rate = if t <= 10.0 {
                20.0 * t
            } else {
                500.0 + (t % 3.0)
            };
            ticks.push(tick(t, Phase::Measured, rate as u64, open));
        }
        let s = Schedule {
            last_arrival_s: 3.998,
            depart_from_s: 34.0,
            pacing_after_s: 5.0,
        };
        let w = steady_state(&ticks, 2000, Some(s));
        // All connected at 5 s, pacing at the latest 5 s later.
        assert_eq!(w, window(10.0, 34.0));
        let st = stability(&ticks, w).unwrap();
        assert_eq!(st.n, 24);
        assert!(st.cv_pct < 1.0, "{st:?}");
        // Without the lead-in (results written before it was recorded), the think is in it.
        let old = steady_state(
            &ticks,
            2000,
            Some(Schedule {
                pacing_after_s: 0.0,
                ..s
            }),
        );
        assert_eq!(old, window(5.0, 34.0));
        assert!(stability(&ticks, old).unwrap().cv_pct > 10.0);
    }

    #[test]
    fn constant_rate_has_zero_cv_and_no_drift() {
        let ticks = measured(&[5000.0; 30], 10);
        let s = stability(&ticks, window(0.0, f64::INFINITY)).unwrap();
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
        let s = stability(&ticks, window(0.0, f64::INFINITY)).unwrap();
        assert_eq!(s.n, 1999);
        assert!((s.cv_pct - 8.0).abs() < 0.5, "{}", s.cv_pct);
        assert!(s.max_dev_pct > 20.0 && s.max_dev_pct < 40.0);
        let from_t = stability(&ticks, window(1000.0, f64::INFINITY)).unwrap();
        assert_eq!(from_t.n, 1000);
    }

    #[test]
    fn a_rate_that_falls_by_half_drifts() {
        let rates: Vec<f64> = (0..100).map(|i| 2000.0 - 10.0 * i as f64).collect();
        let s = stability(&measured(&rates, 10), window(0.0, f64::INFINITY)).unwrap();
        assert_eq!(s.drift.verdict, Verdict::Shrinking);
    }
}
