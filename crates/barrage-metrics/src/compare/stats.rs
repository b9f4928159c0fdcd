//! The noise tests behind the comparison's significance marks, as plain functions over numbers
//! and histograms. Every test answers "is this difference larger than the runs' own noise at
//! the 95 % level?"; `None` means there is not enough data to say.

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

/// Welch's unequal-variance t-test on the means of `a` and `b`, two-sided, 95 %. `None` when
/// either side has fewer than two values. Two noiseless series differ exactly when their means
/// do.
pub fn welch(a: &[f64], b: &[f64]) -> Option<bool> {
    let (ma, sa) = mean_sd(a)?;
    let (mb, sb) = mean_sd(b)?;
    let (va, vb) = (sa * sa / a.len() as f64, sb * sb / b.len() as f64);
    let se2 = va + vb;
    if se2 <= 0.0 {
        return Some(ma != mb);
    }
    // Welch-Satterthwaite degrees of freedom, rounded down (conservative).
    let den = va * va / (a.len() - 1) as f64 + vb * vb / (b.len() - 1) as f64;
    let df = if den > 0.0 {
        (se2 * se2 / den) as usize
    } else {
        1
    };
    Some((ma - mb).abs() > t_quantile_975(df.max(1)) * se2.sqrt())
}

/// Two single observations `x` (from a series like `a`) and `y` (like `b`): is `x − y` larger
/// than the per-observation noise, `t · sqrt(sd_a² + sd_b²)`? Used for peaks and maxima, each of
/// which is one observation of its series.
pub fn single_observations(x: f64, a: &[f64], y: f64, b: &[f64]) -> Option<bool> {
    let (_, sa) = mean_sd(a)?;
    let (_, sb) = mean_sd(b)?;
    let df = (a.len() + b.len()).saturating_sub(2).max(1);
    let noise = t_quantile_975(df) * (sa * sa + sb * sb).sqrt();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welch_separates_clear_shifts_from_noise() {
        let a = [100.0, 102.0, 98.0, 101.0, 99.0];
        assert_eq!(welch(&a, &a), Some(false));
        assert_eq!(welch(&a, &[90.0, 92.0, 88.0, 91.0, 89.0]), Some(true));
        assert_eq!(welch(&a, &[101.0, 103.0, 97.0, 102.0, 99.0]), Some(false));
        assert_eq!(welch(&a, &[100.0]), None);
        assert_eq!(welch(&[5.0, 5.0], &[5.0, 5.0]), Some(false));
        assert_eq!(welch(&[5.0, 5.0], &[6.0, 6.0]), Some(true));
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
