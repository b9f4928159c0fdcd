//! Trends: is a series growing, shrinking or flat over a window, by a rule that ignores noise.
//!
//! The rule, per metric: fit a least-squares line; the series is **growing** only if the
//! *lower* end of the slope's 95 % interval, carried over the whole window, still amounts to
//! a material change (at least the metric's minimum below); **shrinking** likewise with the
//! upper end; **flat** only when the *whole* interval, carried over the window, stays within
//! the material minimum either way; **unclear** otherwise (the interval is too wide to say:
//! a few noisy seconds, where "flat (-45 % over 6 s)" would have claimed what the data cannot
//! show). Requiring the conservative end of the interval to be material makes the rule both
//! significant (interval clear of 0) and material, and keeps it quiet on noise, including the
//! autocorrelated noise of allocators for which the OLS interval is too narrow. Minimum
//! changes over the window:
//!
//! | metric | unit of `per_hour` | minimum change |
//! |---|---|---|
//! | RSS | bytes/h | 1 MiB or 1 % of the mean, whichever is larger |
//! | open fds beyond barrage's open connections | fds/h | 1 fd |
//! | p99 latency | % of the mean p99 /h | 5 % of the mean |
//! | throughput | % of the mean rate /h | 5 % of the mean |
//! | error rate | percentage points /h | 0.1 points or 5 % of the mean rate, whichever is larger |

use super::fit::linear_fit;
use crate::aggregate::Tick;
use crate::monitor::ProcSample;
use crate::window::{steady_ticks, Window};
use serde::{Deserialize, Serialize};

const MIB: f64 = 1024.0 * 1024.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Flat,
    Growing,
    Shrinking,
    /// The interval is too wide to tell flat from a material change (too few or too noisy
    /// points): neither a drift nor its absence is claimed.
    Unclear,
}

impl Verdict {
    /// How reports say it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Flat => "flat",
            Self::Growing => "growing",
            Self::Shrinking => "shrinking",
            Self::Unclear => "unclear",
        }
    }
}

/// What a trend is about; decides the unit and the minimum material change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrendMetric {
    /// Server resident memory; points in bytes.
    Rss,
    /// Server open file descriptors beyond barrage's open connections; points in fds.
    Fds,
    /// Per-second p99 latency; points in µs.
    P99,
    /// Per-second error rate errors / (completed + errors); points as fractions.
    ErrorRate,
    /// Per-second completed exchanges; points in exchanges per second.
    Throughput,
}

impl TrendMetric {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rss => "server RSS",
            Self::Fds => "server open fds beyond the open connections",
            Self::P99 => "p99 latency",
            Self::ErrorRate => "error rate",
            Self::Throughput => "throughput",
        }
    }

    /// Unit of `per_hour`, `ci95_per_hour`, `change` and `min_change`.
    pub fn unit(self) -> &'static str {
        match self {
            Self::Rss => "bytes/h",
            Self::Fds => "fds/h",
            Self::P99 => "% of mean p99/h",
            Self::ErrorRate => "percentage points/h",
            Self::Throughput => "% of mean rate/h",
        }
    }

    /// Factor from a point's unit to the reported unit, given the mean of the points.
    fn scale(self, mean: f64) -> Option<f64> {
        match self {
            Self::Rss | Self::Fds => Some(1.0),
            Self::ErrorRate => Some(100.0),
            Self::P99 | Self::Throughput => (mean > 0.0).then(|| 100.0 / mean),
        }
    }

    /// Minimum material change over the window in the reported unit, and how it reads.
    fn min_change(self, mean: f64) -> (f64, String) {
        match self {
            Self::Rss => {
                let m = MIB.max(0.01 * mean);
                (m, format!("{:.1} MiB (1 MiB or 1 % of the mean)", m / MIB))
            }
            Self::Fds => (1.0, "1 fd".into()),
            Self::P99 | Self::Throughput => (5.0, "5 % of the mean".into()),
            Self::ErrorRate => {
                let m = 0.1f64.max(0.05 * mean);
                (
                    m,
                    format!("{m:.2} percentage points (0.1 or 5 % of the mean rate)"),
                )
            }
        }
    }
}

/// The direction of a series over a window, with the rule that decided it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    pub metric: TrendMetric,
    /// Unit of `per_hour`, its interval, `change` and `min_change`.
    pub unit: String,
    pub per_hour: f64,
    pub ci95_per_hour: (f64, f64),
    /// Mean of the points, in the points' unit (bytes, fds, µs, fraction, per second).
    pub mean: f64,
    /// Length of the window the points span, seconds.
    pub window_s: f64,
    /// Fitted change over the window (`per_hour × window`).
    pub change: f64,
    /// The material minimum the conservative end of the interval had to reach.
    pub min_change: f64,
    pub verdict: Verdict,
    pub n: usize,
    pub rule: String,
}

/// The trend of `(t seconds, value)` points; `None` with fewer than 3 points, all at one time,
/// or (for relative metrics) a mean of 0.
pub fn trend(metric: TrendMetric, points: &[(f64, f64)]) -> Option<Trend> {
    let xs: Vec<f64> = points.iter().map(|p| p.0).collect();
    let ys: Vec<f64> = points.iter().map(|p| p.1).collect();
    let fit = linear_fit(&xs, &ys)?;
    let mean = ys.iter().sum::<f64>() / ys.len() as f64;
    let scale = metric.scale(mean)?;
    let (lo_x, hi_x) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
    let window_s = hi_x - lo_x;
    let per_s = |slope: f64| slope * scale;
    let (lo, hi) = (per_s(fit.slope_ci95.0), per_s(fit.slope_ci95.1));
    let (min_change, min_text) = metric.min_change(mean * scale);
    let verdict = if lo * window_s >= min_change {
        Verdict::Growing
    } else if hi * window_s <= -min_change {
        Verdict::Shrinking
    } else if lo * window_s > -min_change && hi * window_s < min_change {
        Verdict::Flat
    } else {
        Verdict::Unclear
    };
    let rule = format!(
        "{}: growing if the lower end of the slope's 95 % CI times the {window_s:.0} s window \
         is at least +{min_text}, shrinking if the upper end times the window is at most \
         -{min_text}; flat if the whole CI times the window is within that either way; \
         unclear otherwise (too few or too noisy points to tell)",
        metric.as_str()
    );
    Some(Trend {
        metric,
        unit: metric.unit().into(),
        per_hour: per_s(fit.slope) * 3600.0,
        ci95_per_hour: (lo * 3600.0, hi * 3600.0),
        mean,
        window_s,
        change: per_s(fit.slope) * window_s,
        min_change,
        verdict,
        n: fit.n,
        rule,
    })
}

/// Server RSS over the samples inside `window` (bytes per hour).
pub fn rss_trend(samples: &[ProcSample], window: Window) -> Option<Trend> {
    let pts: Vec<_> = window
        .select(samples)
        .map(|s| (s.t, s.rss_bytes as f64))
        .collect();
    trend(TrendMetric::Rss, &pts)
}

/// Server open file descriptors beyond the connections barrage holds open, over the samples
/// inside `window` (fds per hour): each sample's fds less the open connections of the tick
/// that ended nearest to it (within half a second; samples without one are skipped). A
/// server's fds follow its connections, so fds that grow while users still arrive (or
/// reconnect) are not a leak of descriptors; fds that grow while the connections do not are.
pub fn fd_trend(samples: &[ProcSample], ticks: &[Tick], window: Window) -> Option<Trend> {
    let pts: Vec<_> = window
        .select(samples)
        .filter_map(|s| {
            let tk = ticks
                .iter()
                .filter(|t| (t.t - s.t).abs() <= 0.5)
                .min_by(|a, b| (a.t - s.t).abs().total_cmp(&(b.t - s.t).abs()))?;
            Some((s.t, s.fds as f64 - tk.open as f64))
        })
        .collect();
    trend(TrendMetric::Fds, &pts)
}

/// Per-second p99 over the steady state, of the latency the run measures: a broadcast run's
/// deliveries (its messages are fire-and-forget, their exchanges time nothing), else the
/// exchanges'. Seconds that timed nothing are skipped: they have no p99 (results of earlier
/// versions lack the count of timed exchanges; a nonzero max stands in for it).
pub fn p99_trend(ticks: &[Tick], steady: Window) -> Option<Trend> {
    let deliveries = steady_ticks(ticks, steady).any(|t| t.deliveries > 0);
    let pts: Vec<_> = steady_ticks(ticks, steady)
        .filter_map(|t| {
            let l = &t.latency_us;
            match deliveries {
                true => (t.deliveries > 0).then_some(t.delivery_p99_us),
                false => (l.count > 0 || l.max > 0).then_some(l.p99),
            }
            .map(|p99| (t.t, p99 as f64))
        })
        .collect();
    trend(TrendMetric::P99, &pts)
}

/// Per-second error rate failed / (completed + failed) requests over the steady state
/// (seconds with neither are skipped).
pub fn error_rate_trend(ticks: &[Tick], steady: Window) -> Option<Trend> {
    let pts: Vec<_> = steady_ticks(ticks, steady)
        .filter_map(|t| {
            let e = t.failed_requests;
            let all = t.requests + e;
            (all > 0).then(|| (t.t, e as f64 / all as f64))
        })
        .collect();
    trend(TrendMetric::ErrorRate, &pts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testutil::{measured, proc, XorShift, MIB};

    fn all() -> Window {
        Window {
            from_s: f64::NEG_INFINITY,
            to_s: f64::INFINITY,
        }
    }

    #[test]
    fn a_10_mib_per_minute_grower_is_growing_with_the_right_slope() {
        let mut r = XorShift::new(7);
        let s: Vec<_> = (0..300)
            .map(|i| {
                let t = i as f64;
                proc(
                    t,
                    100.0 * MIB + 10.0 * MIB / 60.0 * t + 2.0 * MIB * r.gauss(),
                )
            })
            .collect();
        let tr = rss_trend(&s, all()).unwrap();
        assert_eq!(tr.verdict, Verdict::Growing);
        let want = 600.0 * MIB;
        assert!(
            (tr.per_hour / want - 1.0).abs() < 0.05,
            "{}",
            tr.per_hour / MIB
        );
        assert!(tr.ci95_per_hour.0 < want && want < tr.ci95_per_hour.1);
        assert_eq!(tr.unit, "bytes/h");
        assert!(tr.rule.contains("1 MiB"));
    }

    #[test]
    fn flat_series_with_noise_stay_flat_over_100_seeds() {
        for seed in 0..100 {
            let mut r = XorShift::new(seed);
            let rss: Vec<_> = (0..600)
                .map(|i| proc(i as f64, 200.0 * MIB + 0.5 * MIB * r.gauss()))
                .collect();
            let fds: Vec<_> = (0..600)
                .map(|i| ProcSample {
                    t: i as f64,
                    fds: 1000 + (r.next_u64() % 5),
                    ..Default::default()
                })
                .collect();
            let rates: Vec<f64> = (0..300)
                .map(|_| 10_000.0 * (1.0 + 0.05 * r.gauss()))
                .collect();
            let mut ticks = measured(&rates, 100);
            for t in &mut ticks {
                t.latency_us.p99 = (1000.0 * (1.0 + 0.1 * r.gauss())) as u64;
                t.latency_us.count = 100;
                t.errors
                    .add(crate::error::ErrorClass::Timeout, r.next_u64() % 4);
            }
            assert_eq!(
                rss_trend(&rss, all()).unwrap().verdict,
                Verdict::Flat,
                "rss {seed}"
            );
            let held = measured(&[1.0; 600], 0);
            assert_eq!(
                fd_trend(&fds, &held, all()).unwrap().verdict,
                Verdict::Flat,
                "fds {seed}"
            );
            // 10 % noise over 300 points: the interval reaches about 4 % either way, so a few
            // seeds are unclear (not provably flat); none grows or shrinks.
            let p99 = p99_trend(&ticks, all()).unwrap().verdict;
            assert!(
                matches!(p99, Verdict::Flat | Verdict::Unclear),
                "p99 {seed}"
            );
            let et = error_rate_trend(&ticks, all()).unwrap();
            assert!(
                matches!(et.verdict, Verdict::Flat | Verdict::Unclear),
                "errors {seed}"
            );
        }
    }

    #[test]
    fn a_short_noisy_rate_is_unclear_not_flat() {
        // Regression: 7 seconds of a healthy but noisy run read "throughput flat (-45.3 % over
        // 6 s)": the interval was far too wide to call anything flat.
        let rates = [
            41_000.0, 28_000.0, 36_000.0, 21_000.0, 33_000.0, 18_000.0, 27_000.0,
        ];
        let tr = trend(TrendMetric::Throughput, &measured_points(&rates)).unwrap();
        assert!(tr.change < -20.0, "{}", tr.change);
        assert_eq!(tr.verdict, Verdict::Unclear);
        assert!(tr.rule.contains("unclear otherwise"), "{}", tr.rule);
        // Flat is said only when the whole interval over the window is within 5 %.
        for seed in 0..200 {
            let mut r = XorShift::new(seed);
            let rates: Vec<f64> = (0..7).map(|_| 1000.0 * (1.0 + 0.2 * r.gauss())).collect();
            let tr = trend(TrendMetric::Throughput, &measured_points(&rates)).unwrap();
            let (lo, hi) = tr.ci95_per_hour;
            let over = tr.window_s / 3600.0;
            if tr.verdict == Verdict::Flat {
                assert!(lo * over > -5.0 && hi * over < 5.0, "seed {seed}: {tr:?}");
            }
            assert_ne!(tr.verdict, Verdict::Flat, "seed {seed}: 20 % noise, 7 s");
        }
        // A long steady series is flat.
        let steady: Vec<f64> = (0..120).map(|i| 1000.0 + (i % 3) as f64).collect();
        let tr = trend(TrendMetric::Throughput, &measured_points(&steady)).unwrap();
        assert_eq!(tr.verdict, Verdict::Flat);
        assert_eq!(Verdict::Unclear.as_str(), "unclear");
    }

    fn measured_points(rates: &[f64]) -> Vec<(f64, f64)> {
        (1..).map(f64::from).zip(rates.iter().copied()).collect()
    }

    #[test]
    fn fds_growing_with_arriving_users_are_not_growing() {
        // Regression: fds rising while users still arrived read "fds growing" and made the
        // resource row a Warn. The server holds one fd per connection plus 12 of its own.
        let mut ticks = measured(&[100.0; 60], 0);
        let mut samples = Vec::new();
        for (i, t) in ticks.iter_mut().enumerate() {
            t.open = 40 * i as u64 + (i as u64 % 3);
            samples.push(ProcSample {
                t: t.t,
                fds: 12 + t.open,
                ..Default::default()
            });
        }
        let tr = fd_trend(&samples, &ticks, all()).unwrap();
        assert_eq!(tr.verdict, Verdict::Flat, "{tr:?}");
        assert!(
            tr.rule.contains("beyond the open connections"),
            "{}",
            tr.rule
        );
        // A descriptor lost every second while the connections hold still is growth.
        for (i, s) in samples.iter_mut().enumerate() {
            s.fds = 12 + 500 + i as u64;
        }
        for t in &mut ticks {
            t.open = 500;
        }
        assert_eq!(
            fd_trend(&samples, &ticks, all()).unwrap().verdict,
            Verdict::Growing
        );
        // A sample without a tick near it is skipped.
        let far = [ProcSample {
            t: 1000.0,
            ..Default::default()
        }];
        assert!(fd_trend(&far, &ticks, all()).is_none());
    }

    #[test]
    fn shrinking_and_immaterial_changes() {
        let down: Vec<_> = (0..100)
            .map(|i| proc(i as f64, 500.0 * MIB - 0.1 * MIB * i as f64))
            .collect();
        assert_eq!(rss_trend(&down, all()).unwrap().verdict, Verdict::Shrinking);
        // Clearly significant but only 0.5 MiB over the window: not material.
        let tiny: Vec<_> = (0..100)
            .map(|i| proc(i as f64, 50.0 * MIB + 5e3 * i as f64))
            .collect();
        let tr = rss_trend(&tiny, all()).unwrap();
        assert!(tr.ci95_per_hour.0 > 0.0);
        assert_eq!(tr.verdict, Verdict::Flat);
    }

    #[test]
    fn p99_growth_is_relative_to_the_mean() {
        // 1000 µs rising by 50 % over 100 s, no noise.
        let mut ticks = measured(&[100.0; 100], 10);
        for (i, t) in ticks.iter_mut().enumerate() {
            t.latency_us.p99 = 1000 + 5 * i as u64;
            t.latency_us.count = 100;
        }
        let tr = p99_trend(&ticks, all()).unwrap();
        assert_eq!(tr.verdict, Verdict::Growing);
        let mean = 1000.0 + 5.0 * 49.5;
        assert!((tr.per_hour - 5.0 * 3600.0 / mean * 100.0).abs() < 1e-6);
    }

    #[test]
    fn a_broadcast_runs_p99_trend_is_of_its_deliveries() {
        // Regression: a chat run's seconds timed no exchange (fire-and-forget messages), so
        // its p99 trend was of zeros ("not measured") while its deliveries' p99 grew.
        let mut ticks = measured(&[500.0; 30], 10);
        for (i, t) in ticks.iter_mut().enumerate() {
            t.deliveries = 3000;
            t.delivery_p99_us = 1000 + 100 * i as u64;
        }
        let tr = p99_trend(&ticks, all()).unwrap();
        assert_eq!(tr.verdict, Verdict::Growing);
        assert!((tr.mean - 2450.0).abs() < 1e-9, "{}", tr.mean);
        // Without deliveries, seconds that timed nothing are skipped.
        let mut ticks = measured(&[500.0; 30], 10);
        for (i, t) in ticks.iter_mut().enumerate().filter(|(i, _)| i % 2 == 0) {
            t.latency_us.count = 100;
            t.latency_us.max = 900;
            t.latency_us.p99 = 800 + i as u64;
        }
        assert_eq!(p99_trend(&ticks, all()).unwrap().n, 15);
    }

    #[test]
    fn rising_errors_are_growing_and_windows_select_samples() {
        let mut ticks = measured(&[1000.0; 60], 10);
        for (i, t) in ticks.iter_mut().enumerate() {
            t.errors.add(crate::error::ErrorClass::Timeout, i as u64);
            t.failed_requests = i as u64;
        }
        let tr = error_rate_trend(&ticks, all()).unwrap();
        assert_eq!(tr.verdict, Verdict::Growing);
        assert_eq!(tr.unit, "percentage points/h");
        let s: Vec<_> = (0..10).map(|i| proc(i as f64, 1.0)).collect();
        let w = Window {
            from_s: 2.0,
            to_s: 6.0,
        };
        assert_eq!(rss_trend(&s, w).unwrap().n, 4);
        assert!(rss_trend(&s[..2], all()).is_none());
    }
}
