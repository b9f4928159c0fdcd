//! Server memory: does it return after the load, does it leak, what does a connection cost.
//!
//! A leak needs two measured facts: RSS growing in the steady state (by the trend rule, so
//! noise and small allocator steps do not count) **and** RSS not back near its idle level
//! after a recovery phase without load. Growth alone is only "inconclusive" (suspected): caches
//! and pools grow under load too, and only the recovery tells them apart from a leak.

use super::fit::{linear_fit, Fit};
use super::trend::{trend, TrendMetric, Verdict};
use crate::aggregate::Tick;
use crate::monitor::ProcSample;
use crate::window::Window;
use serde::{Deserialize, Serialize};

const MIB: f64 = 1024.0 * 1024.0;
/// Tolerance above the idle level that still counts as "returned", in %.
pub const DEFAULT_TOLERANCE_PCT: f64 = 10.0;
/// Absolute slack on top of the tolerance, for small servers whose idle RSS is a few MiB.
pub const RECOVERY_SLACK_BYTES: u64 = 1 << 20;

/// RSS before, during and after the load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    /// Median of the samples at or before the load's start.
    pub idle_before_bytes: u64,
    /// Highest sample under load.
    pub peak_under_load_bytes: u64,
    /// Median of the last (up to) 3 samples of the recovery phase.
    pub after_recovery_bytes: u64,
    pub tolerance_pct: f64,
    /// `after ≤ idle × (1 + tolerance) + 1 MiB`.
    pub returned: bool,
}

/// Split RSS samples at the load's start and end and the recovery's end (seconds on the run's
/// clock; samples at `t ≤ load_start_s` are idle, `(load_start, load_end]` under load,
/// `(load_end, recovery_end]` recovery). `None` when one of the three parts has no sample.
pub fn recovery(
    samples: &[ProcSample],
    load_start_s: f64,
    load_end_s: f64,
    recovery_end_s: f64,
    tolerance_pct: f64,
) -> Option<Recovery> {
    let m = crate::figures::memory(samples, load_start_s, load_end_s, recovery_end_s);
    let (idle, peak, after) = (m.idle_bytes?, m.load_peak_bytes?, m.after_bytes?);
    let limit = idle as f64 * (1.0 + tolerance_pct / 100.0) + RECOVERY_SLACK_BYTES as f64;
    Some(Recovery {
        idle_before_bytes: idle,
        peak_under_load_bytes: peak,
        after_recovery_bytes: after,
        tolerance_pct,
        returned: after as f64 <= limit,
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeakStatus {
    Leak,
    NoLeak,
    /// Growth without a recovery phase to tell a leak from a cache, or too few samples.
    Inconclusive,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeakVerdict {
    pub verdict: LeakStatus,
    /// RSS slope in the steady state, MiB per hour, and its 95 % interval.
    pub slope_mib_per_hour: Option<f64>,
    pub ci95_mib_per_hour: Option<(f64, f64)>,
    /// The RSS trend's verdict (None: fewer than 3 samples).
    pub growth: Option<Verdict>,
    /// Whether RSS returned after the load; None when no recovery phase was measured.
    pub recovered: Option<bool>,
    pub rule: String,
    /// Why this verdict, with the figures.
    pub reason: String,
}

pub const LEAK_RULE: &str = "leak: RSS growing in the steady state (trend rule) and not back \
    within the tolerance of its idle level after the recovery phase; growing without a \
    recovery phase: inconclusive (suspected); flat or shrinking: no leak; unclear (the \
    interval too wide to tell): no leak if RSS returned after the recovery phase, else \
    inconclusive";

/// The leak verdict from the RSS samples of the steady state and the recovery, if measured.
pub fn leak(rss_under_load: &[ProcSample], recovery: Option<&Recovery>) -> LeakVerdict {
    let pts: Vec<_> = rss_under_load
        .iter()
        .map(|s| (s.t, s.rss_bytes as f64))
        .collect();
    let tr = trend(TrendMetric::Rss, &pts);
    let recovered = recovery.map(|r| r.returned);
    let back = match recovery {
        Some(r) => format!(
            "idle {:.1} MiB, peak {:.1} MiB, after recovery {:.1} MiB ({})",
            r.idle_before_bytes as f64 / MIB,
            r.peak_under_load_bytes as f64 / MIB,
            r.after_recovery_bytes as f64 / MIB,
            if r.returned {
                "returned"
            } else {
                "not returned"
            }
        ),
        None => "no recovery phase measured".into(),
    };
    let (verdict, reason) = match (&tr, recovered) {
        (None, _) => (
            LeakStatus::Inconclusive,
            format!("fewer than 3 RSS samples in the steady state; {back}"),
        ),
        (Some(t), rec) => {
            let v = match (t.verdict, rec) {
                (Verdict::Growing, Some(false)) => LeakStatus::Leak,
                (Verdict::Growing, None) => LeakStatus::Inconclusive,
                // Too wide an interval to call it flat: only a return to idle clears it.
                (Verdict::Unclear, Some(true)) => LeakStatus::NoLeak,
                (Verdict::Unclear, _) => LeakStatus::Inconclusive,
                _ => LeakStatus::NoLeak,
            };
            (v, format!("{}; {back}", growth_reason(t, rec)))
        }
    };
    LeakVerdict {
        verdict,
        slope_mib_per_hour: tr.as_ref().map(|t| t.per_hour / MIB),
        ci95_mib_per_hour: tr
            .as_ref()
            .map(|t| (t.ci95_per_hour.0 / MIB, t.ci95_per_hour.1 / MIB)),
        growth: tr.map(|t| t.verdict),
        recovered,
        rule: LEAK_RULE.into(),
        reason,
    }
}

/// What the RSS trend says, in words that agree with its interval: the slope per hour, then
/// the change over the window the verdict was judged on against the change that counts (a
/// slope whose interval is clear of 0 but whose growth over the window is below 1 MiB is
/// "below the ... that counts as growth", not "not growing").
fn growth_reason(t: &super::Trend, rec: Option<bool>) -> String {
    let over = t.window_s / 3600.0 / MIB;
    let (lo, hi) = (t.ci95_per_hour.0 * over, t.ci95_per_hour.1 * over);
    let window = format!(
        "RSS {:+.2} MiB over the {:.0} s window (95 % CI {lo:+.2} .. {hi:+.2}; {:+.2} MiB/h)",
        t.change / MIB,
        t.window_s,
        t.per_hour / MIB,
    );
    let min = t.min_change / MIB;
    let what = match (t.verdict, rec) {
        (Verdict::Growing, None) => format!("at least +{min:.1} MiB: growing, leak suspected"),
        (Verdict::Growing, Some(true)) => format!("at least +{min:.1} MiB: growing under load"),
        (Verdict::Growing, Some(false)) => format!("at least +{min:.1} MiB: growing"),
        (Verdict::Shrinking, _) => format!("at least -{min:.1} MiB: shrinking"),
        (Verdict::Flat, _) => format!("within the {min:.1} MiB that counts as growth"),
        (Verdict::Unclear, _) => {
            format!("the interval is too wide to tell a growth of {min:.1} MiB from none")
        }
    };
    format!("{window}, {what}")
}

/// Bytes of server RSS per open connection: the slope of RSS against open connections.
/// `None` with fewer than 3 points or a single connection count.
pub fn per_connection_cost(samples: &[(u64, u64)]) -> Option<Fit> {
    let xs: Vec<f64> = samples.iter().map(|p| p.0 as f64).collect();
    let ys: Vec<f64> = samples.iter().map(|p| p.1 as f64).collect();
    linear_fit(&xs, &ys)
}

/// `(open connections, RSS)` pairs for [`per_connection_cost`]: each RSS sample inside
/// `window` paired with the tick whose end is nearest, if within half a second.
pub fn connection_rss_pairs(
    ticks: &[Tick],
    samples: &[ProcSample],
    window: Window,
) -> Vec<(u64, u64)> {
    window
        .select(samples)
        .filter_map(|s| {
            let tk = ticks
                .iter()
                .filter(|t| (t.t - s.t).abs() <= 0.5)
                .min_by(|a, b| (a.t - s.t).abs().total_cmp(&(b.t - s.t).abs()))?;
            Some((tk.open, s.rss_bytes))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testutil::{measured, proc, XorShift, MIB};

    /// Idle at 50 MiB for t in -5..=0, load until 600 s growing by `growth` MiB/min, then
    /// recovery until 630 s at `after` MiB.
    fn run(growth: f64, after: f64, seed: u64) -> Vec<ProcSample> {
        let mut r = XorShift::new(seed);
        let mut v: Vec<_> = (-5..=0).map(|t| proc(t as f64, 50.0 * MIB)).collect();
        for t in 1..=600 {
            let rss = 80.0 * MIB + growth * MIB / 60.0 * t as f64 + 0.3 * MIB * r.gauss();
            v.push(proc(t as f64, rss));
        }
        v.extend((601..=630).map(|t| proc(t as f64, after * MIB)));
        v
    }

    fn under_load(s: &[ProcSample]) -> Vec<ProcSample> {
        let w = Window {
            from_s: 10.0,
            to_s: 600.0,
        };
        w.select(s).cloned().collect()
    }

    #[test]
    fn memory_that_returns_is_no_leak() {
        let s = run(0.0, 52.0, 1);
        let rec = recovery(&s, 0.0, 600.0, 630.0, DEFAULT_TOLERANCE_PCT).unwrap();
        assert_eq!(rec.idle_before_bytes, (50.0 * MIB) as u64);
        assert!(rec.peak_under_load_bytes > (80.0 * MIB) as u64);
        assert_eq!(rec.after_recovery_bytes, (52.0 * MIB) as u64);
        assert!(rec.returned);
        let l = leak(&under_load(&s), Some(&rec));
        assert_eq!(l.verdict, LeakStatus::NoLeak);
        assert_eq!(l.recovered, Some(true));
        assert_eq!(l.growth, Some(Verdict::Flat));
    }

    #[test]
    fn growth_without_return_is_a_leak() {
        let s = run(1.0, 700.0, 2);
        let rec = recovery(&s, 0.0, 600.0, 630.0, DEFAULT_TOLERANCE_PCT).unwrap();
        assert!(!rec.returned);
        let l = leak(&under_load(&s), Some(&rec));
        assert_eq!(l.verdict, LeakStatus::Leak);
        let slope = l.slope_mib_per_hour.unwrap();
        assert!((slope / 60.0 - 1.0).abs() < 0.05, "{slope}");
        assert!(l.reason.contains("not returned"), "{}", l.reason);
    }

    #[test]
    fn growth_that_returns_or_has_no_recovery_phase() {
        let s = run(1.0, 51.0, 3);
        let rec = recovery(&s, 0.0, 600.0, 630.0, DEFAULT_TOLERANCE_PCT).unwrap();
        assert_eq!(
            leak(&under_load(&s), Some(&rec)).verdict,
            LeakStatus::NoLeak
        );
        let l = leak(&under_load(&s), None);
        assert_eq!(l.verdict, LeakStatus::Inconclusive);
        assert!(l.reason.contains("suspected"));
        assert_eq!(leak(&s[..2], None).verdict, LeakStatus::Inconclusive);
        // Flat and no recovery phase: not a leak, but nothing said about returning.
        let flat = run(0.0, 80.0, 4);
        let l = leak(&under_load(&flat), None);
        assert_eq!((l.verdict, l.recovered), (LeakStatus::NoLeak, None));
    }

    #[test]
    fn a_slope_clear_of_zero_but_below_a_mib_is_not_called_not_growing() {
        // Regression: "RSS +16.9 MiB/h (95 % CI +2.98 .. +30.85), not growing" contradicted
        // itself: the interval is clear of 0; what the rule says is that the growth over the
        // window is below the 1 MiB that counts.
        let mut r = XorShift::new(5);
        let s: Vec<_> = (1..=60)
            .map(|t| {
                let t = f64::from(t);
                proc(
                    t,
                    80.0 * MIB + 16.9 * MIB / 3600.0 * t + 0.02 * MIB * r.gauss(),
                )
            })
            .collect();
        let l = leak(&s, None);
        let (lo, _) = l.ci95_mib_per_hour.unwrap();
        assert!(lo > 0.0, "{l:?}");
        assert_eq!(
            (l.verdict, l.growth),
            (LeakStatus::NoLeak, Some(Verdict::Flat))
        );
        assert!(!l.reason.contains("not growing"), "{}", l.reason);
        assert!(
            l.reason.contains("MiB over the 59 s window")
                && l.reason
                    .contains("within the 1.0 MiB that counts as growth"),
            "{}",
            l.reason
        );
        // Five noisy samples: too wide to tell, so without a recovery phase it is open.
        let noisy: Vec<_> = (1..=5)
            .map(|t| proc(f64::from(t), 80.0 * MIB + 3.0 * MIB * r.gauss()))
            .collect();
        let l = leak(&noisy, None);
        assert_eq!(l.growth, Some(Verdict::Unclear));
        assert_eq!(l.verdict, LeakStatus::Inconclusive);
        assert!(l.reason.contains("too wide to tell"), "{}", l.reason);
    }

    #[test]
    fn recovery_tolerance_and_missing_parts() {
        let mk = |after: f64| {
            vec![
                proc(0.0, 100.0 * MIB),
                proc(1.0, 200.0 * MIB),
                proc(2.0, after * MIB),
            ]
        };
        // 100 MiB idle: 10 % + 1 MiB = 111 MiB allowed.
        assert!(recovery(&mk(111.0), 0.0, 1.0, 2.0, 10.0).unwrap().returned);
        assert!(!recovery(&mk(111.5), 0.0, 1.0, 2.0, 10.0).unwrap().returned);
        assert!(recovery(&mk(111.0), -1.0, 1.0, 2.0, 10.0).is_none());
        assert!(recovery(&mk(111.0), 0.0, 1.0, 1.5, 10.0).is_none());
        assert_eq!(crate::figures::median(vec![3, 1, 2, 10]), Some(2));
        assert_eq!(
            crate::figures::median(vec![u64::MAX, u64::MAX]),
            Some(u64::MAX)
        );
    }

    #[test]
    fn cost_per_connection_is_the_slope_during_the_ramp() {
        let mut r = XorShift::new(9);
        let ticks = measured(&[0.0; 20], 0)
            .into_iter()
            .enumerate()
            .map(|(i, mut t)| {
                t.open = 500 * (i as u64 + 1);
                t
            })
            .collect::<Vec<_>>();
        let samples: Vec<_> = ticks
            .iter()
            .map(|t| {
                proc(
                    t.t + 0.02,
                    40.0 * MIB + 20_480.0 * t.open as f64 + 64e3 * r.gauss(),
                )
            })
            .collect();
        let all = Window {
            from_s: 0.0,
            to_s: 100.0,
        };
        let pairs = connection_rss_pairs(&ticks, &samples, all);
        assert_eq!(pairs.len(), 20);
        let f = per_connection_cost(&pairs).unwrap();
        assert!((f.slope / 20_480.0 - 1.0).abs() < 0.05, "{}", f.slope);
        assert!(per_connection_cost(&[(5, 1), (5, 2), (5, 3)]).is_none());
    }
}
