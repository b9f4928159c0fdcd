//! The noise tests behind the comparison's significance marks, as plain functions over numbers
//! and histograms. Every test answers "is this difference larger than the runs' own noise at
//! the 95 % level?"; `None` means there is not enough data to say.
//!
//! Key decision: two runs differ by more than their samples. A run as a whole drifts (the
//! machine's other load, CPU frequency, caches), so the per-second values of one run share an
//! offset that no within-run test sees; the histogram of 500,000 exchanges pins a p99 to
//! ±1 % while the next identical run lands 28 % away. [`between_runs`] treats every second
//! as one observation, assumes the run-to-run drift is as large as the seconds' own spread
//! around their run's median (at least 5 %). A rank test (Mann-Whitney) was tried as a second
//! condition: it never removed a false alarm in the seeded simulations, and with five seconds
//! a side one slow second of the baseline made it miss a real 3x slowdown.

use crate::analysis::t_quantile_975;
use crate::histogram::LatencyHistogram;

/// The 97.5 % quantile of the standard normal distribution.
const Z975: f64 = 1.959_963_984_540_054;

/// Mean and sample standard deviation; `None` for fewer than two values.
pub fn mean_sd(v: &[f64]) -> Option<(f64, f64)> {
    let n = v.len();
    if n < 2 {
        return None;
    }
    let m = v.iter().sum::<f64>() / n as f64;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some((m, var.sqrt()))
}

/// Two single observations `x` (from a series like `a`) and `y` (like `b`): is `x − y` larger
/// than the per-observation noise plus the run-to-run drift, `t · sqrt(sd_a² + sd_b² + 2τ²)`
/// with `τ = max(sd_a, sd_b, 5 % of the larger value)`? Used for peaks and maxima, each of
/// which is one observation of its series.
pub fn single_observations(x: f64, a: &[f64], y: f64, b: &[f64]) -> Option<bool> {
    let (_, sa) = mean_sd(a)?;
    let (_, sb) = mean_sd(b)?;
    let df = (a.len() + b.len()).saturating_sub(2).max(1);
    let tau = sa.max(sb).max(0.05 * x.abs().max(y.abs()));
    let noise = t_quantile_975(df) * (sa * sa + sb * sb + 2.0 * tau * tau).sqrt();
    Some((x - y).abs() > noise)
}

/// Two-proportion z-test (pooled), two-sided, 95 %: `ka` of `na` against `kb` of `nb`.
pub fn proportions(ka: u64, na: u64, kb: u64, nb: u64) -> Option<bool> {
    if na == 0 || nb == 0 {
        return None;
    }
    let (pa, pb) = (ka as f64 / na as f64, kb as f64 / nb as f64);
    let p = (ka + kb) as f64 / (na + nb) as f64;
    let se = (p * (1.0 - p) * (1.0 / na as f64 + 1.0 / nb as f64)).sqrt();
    if se <= 0.0 {
        return Some(pa != pb);
    }
    Some((pa - pb).abs() > Z975 * se)
}

/// The 95 % confidence band of quantile `q` of the population `h` was sampled from, in µs:
/// the order-statistic (binomial) interval. The rank of the q-quantile among n samples is
/// Binomial(n, q), so the band runs from the value at rank `nq − z·sqrt(nq(1−q)) − 1` to the
/// value at rank `nq + z·sqrt(nq(1−q)) + 1` (normal approximation, one rank of slack for
/// discreteness), widened by the histogram's resolution (1 µs or 0.1 %, whichever is more).
/// `None` for an empty histogram.
pub fn quantile_band(h: &LatencyHistogram, q: f64) -> Option<(f64, f64)> {
    let n = h.count();
    if n == 0 {
        return None;
    }
    let n = n as f64;
    let half = Z975 * (n * q * (1.0 - q)).sqrt() + 1.0;
    let lo_q = ((n * q - half) / n).clamp(0.0, 1.0);
    let hi_q = ((n * q + half) / n).clamp(0.0, 1.0);
    let (lo, hi) = (h.quantile(lo_q) as f64, h.quantile(hi_q) as f64);
    let slack = |v: f64| (v * 0.001).max(1.0);
    Some(((lo - slack(lo)).max(0.0), hi + slack(hi)))
}

/// Whether two bands are disjoint.
pub fn disjoint(a: (f64, f64), b: (f64, f64)) -> bool {
    a.1 < b.0 || b.1 < a.0
}

/// Fewer per-second values than this in either run and [`between_runs`] cannot judge.
pub const MIN_SECONDS: usize = 3;

/// The smallest run-to-run drift assumed, on the log scale (about 5 %): even a perfectly
/// steady run says little about how far the next one lands.
pub const DRIFT_FLOOR: f64 = 0.05;

/// Median of a non-empty slice.
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// A standard deviation that one bad second cannot inflate: 1.4826 · MAD, or the sample
/// standard deviation when more than half the values are equal (MAD 0).
pub fn robust_sd(v: &[f64]) -> f64 {
    let m = median(v);
    let dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    let mad = 1.4826 * median(&dev);
    if mad > 0.0 {
        mad
    } else {
        mean_sd(v).map_or(0.0, |(_, sd)| sd)
    }
}

/// Whether the per-second values `b` differ from `a` beyond what two runs of the same system
/// show, two-sided, 95 %. Each second is one observation; positive series are compared on the
/// log scale (drift is multiplicative). With `s` the robust spread of the seconds around their
/// own run's median (both runs pooled) and `τ = max(s, DRIFT_FLOOR)` the assumed run-to-run
/// drift, the medians must differ by more than `t(95 %, n+m−2) · sqrt(2τ² + 1.57 s² (1/n + 1/m))`
/// (1.57: the variance of a median), and on the log scale by more than `ln(1 + least_change)`: no
/// run measures the drift the machine's other load causes between runs (identical runs on a
/// shared 2-core machine drifted 40 % in minutes), so the caller sets the smallest change it
/// will call. Medians and a MAD-based spread, so that one wild second neither fakes nor hides
/// a change. `None` below [`MIN_SECONDS`] values per run.
pub fn between_runs(a: &[f64], b: &[f64], least_change: f64) -> Option<bool> {
    if a.len() < MIN_SECONDS || b.len() < MIN_SECONDS {
        return None;
    }
    let positive = a.iter().chain(b).all(|x| *x > 0.0);
    let scale = |v: &[f64]| -> Vec<f64> {
        if positive {
            v.iter().map(|x| x.ln()).collect()
        } else {
            v.to_vec()
        }
    };
    let (la, lb) = (scale(a), scale(b));
    // The second-to-second spread, pooled: each second's distance from its own run's median
    // (a shift between the runs does not widen it; a few hiccups do not either).
    let (ma, mb) = (median(&la), median(&lb));
    let residuals: Vec<f64> = (la.iter().map(|x| x - ma))
        .chain(lb.iter().map(|x| x - mb))
        .collect();
    // Centring on each run's own median shrinks the residuals: undo it (n − 1 of n free).
    let k = residuals.len() as f64;
    let spread = robust_sd(&residuals) * (k / (k - 2.0)).sqrt();
    let tau = spread.max(if positive { DRIFT_FLOOR } else { 0.0 });
    let (n, m) = (la.len() as f64, lb.len() as f64);
    let se = (2.0 * tau * tau + 1.57 * spread * spread * (1.0 / n + 1.0 / m)).sqrt();
    let shift = (mb - ma).abs();
    if se == 0.0 {
        return Some(shift > 0.0);
    }
    // The spread is estimated from n + m − 2 free residuals: Student's t, not the normal.
    let t = t_quantile_975(residuals.len() - 2);
    let least = if positive { least_change.ln_1p() } else { 0.0 };
    Some(shift > (t * se).max(least))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn between_runs_allows_for_drift_as_large_as_the_spread() {
        let a = [100.0, 104.0, 97.0, 101.0, 99.0];
        assert_eq!(between_runs(&a, &a, 0.0), Some(false));
        // 10 % apart, every second of b above every second of a, but the runs' own spread is ~3 % and the drift
        // floor 5 %: one run landing 10 % from the next is what identical runs do.
        let b: Vec<f64> = a.iter().map(|x| x * 1.10).collect();
        assert_eq!(between_runs(&a, &b, 0.0), Some(false));
        // Twice as slow is beyond any drift.
        let c: Vec<f64> = a.iter().map(|x| x * 2.0).collect();
        assert_eq!(between_runs(&a, &c, 0.0), Some(true));
        // Too few seconds to know.
        assert_eq!(between_runs(&a[..2], &c, 0.0), None);
        // One wild second neither hides a real shift nor inflates the spread.
        let mut d = c.clone();
        d[0] = 10_000.0;
        assert_eq!(between_runs(&a, &d, 0.0), Some(true));
        // The floor: 2x passes a 50 % floor, not a 150 % one.
        assert_eq!(between_runs(&a, &c, 0.5), Some(true));
        assert_eq!(between_runs(&a, &c, 1.5), Some(false));
        assert!((robust_sd(&[1.0, 2.0, 3.0, 4.0, 1000.0]) - 1.4826).abs() < 1e-9);
    }

    #[test]
    fn proportions_need_more_than_a_handful() {
        assert_eq!(proportions(0, 1000, 0, 1000), Some(false));
        assert_eq!(proportions(1, 1000, 2, 1000), Some(false));
        assert_eq!(proportions(10, 10_000, 100, 10_000), Some(true));
        assert_eq!(proportions(1, 0, 2, 1000), None);
    }

    #[test]
    fn the_band_of_a_median_narrows_with_more_samples() {
        let mut small = LatencyHistogram::new();
        let mut big = LatencyHistogram::new();
        for v in 1..=100 {
            small.record_us(v * 10);
            for _ in 0..100 {
                big.record_us(v * 10);
            }
        }
        let (slo, shi) = quantile_band(&small, 0.5).unwrap();
        let (blo, bhi) = quantile_band(&big, 0.5).unwrap();
        assert!(slo <= 500.0 && shi >= 500.0);
        assert!(bhi - blo < shi - slo, "{blo}..{bhi} vs {slo}..{shi}");
        assert!(disjoint((1.0, 2.0), (3.0, 4.0)) && !disjoint((1.0, 3.0), (2.0, 4.0)));
    }
}
