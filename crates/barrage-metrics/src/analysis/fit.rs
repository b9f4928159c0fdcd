//! Ordinary least squares with a 95 % confidence interval for the slope.
//!
//! The interval is `slope ± t(0.975, n − 2) · se(slope)`. The Student t quantile comes from a
//! table for 1..=30 degrees of freedom and a Cornish-Fisher expansion of the normal quantile
//! beyond (off by less than 1e-4 at 31 and converging fast), so no statistics crate is needed.

use serde::{Deserialize, Serialize};

/// A straight line `y = intercept + slope · x` fitted to points.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    pub slope: f64,
    pub intercept: f64,
    /// 95 % confidence interval of the slope (lower, upper).
    pub slope_ci95: (f64, f64),
    /// Share of the variance of y explained by the line (1 when y has no variance to explain).
    pub r2: f64,
    pub n: usize,
}

/// 97.5 % quantiles of Student's t for 1..=30 degrees of freedom.
const T975: [f64; 30] = [
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010,
    2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687,
    2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
];

/// The 97.5 % quantile of the standard normal distribution.
const Z975: f64 = 1.959_963_984_540_054;

/// The 97.5 % quantile of Student's t with `df` degrees of freedom (the half-width factor of a
/// two-sided 95 % interval); infinite for `df == 0`.
pub fn t_quantile_975(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T975[df - 1],
        _ => cornish_fisher(Z975, df as f64),
    }
}

/// t quantile from the normal quantile `z` (Abramowitz & Stegun 26.7.5).
fn cornish_fisher(z: f64, v: f64) -> f64 {
    let z2 = z * z;
    let g1 = (z2 + 1.0) * z / 4.0;
    let g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0;
    let g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0;
    let g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0;
    z + g1 / v + g2 / (v * v) + g3 / (v * v * v) + g4 / (v * v * v * v)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Least-squares line through `(xs[i], ys[i])`.
///
/// `None` when the slices differ in length, hold fewer than 3 points (the interval needs at
/// least one degree of freedom), contain a non-finite value, or all x are equal.
pub fn linear_fit(xs: &[f64], ys: &[f64]) -> Option<Fit> {
    let n = xs.len();
    if n != ys.len() || n < 3 || xs.iter().chain(ys).any(|v| !v.is_finite()) {
        return None;
    }
    // Centred sums: x may be seconds since the start and y hundreds of MiB, so raw sums of
    // squares would lose the digits that matter.
    let (mx, my) = (mean(xs), mean(ys));
    let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in xs.iter().zip(ys) {
        let (dx, dy) = (x - mx, y - my);
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let sse: f64 = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| (y - intercept - slope * x).powi(2))
        .sum();
    let se = (sse / (n - 2) as f64 / sxx).sqrt();
    let half = t_quantile_975(n - 2) * se;
    let r2 = if syy > 0.0 {
        (1.0 - sse / syy).clamp(0.0, 1.0)
    } else {
        1.0
    };
    Some(Fit {
        slope,
        intercept,
        slope_ci95: (slope - half, slope + half),
        r2,
        n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testutil::XorShift;

    #[test]
    fn t_quantiles_match_tables_and_tend_to_normal() {
        for (df, want) in [(1, 12.7062), (2, 4.3027), (10, 2.2281), (30, 2.0423)] {
            assert_eq!(t_quantile_975(df), want);
        }
        // Published values beyond the table.
        for (df, want) in [(40, 2.0211), (60, 2.0003), (120, 1.9799), (1000, 1.9623)] {
            let got = t_quantile_975(df);
            assert!((got - want).abs() < 2e-4, "df {df}: {got} vs {want}");
        }
        // The expansion already agrees with the table's last entry.
        assert!((cornish_fisher(Z975, 30.0) - 2.0423).abs() < 2e-4);
        assert!(t_quantile_975(0).is_infinite());
        assert!((t_quantile_975(1_000_000) - Z975).abs() < 1e-5);
    }

    #[test]
    fn exact_line_is_recovered_with_a_zero_width_interval() {
        let xs: Vec<f64> = (0..10).map(f64::from).collect();
        let ys: Vec<f64> = xs.iter().map(|x| 3.0 - 2.0 * x).collect();
        let f = linear_fit(&xs, &ys).unwrap();
        assert!((f.slope + 2.0).abs() < 1e-12);
        assert!((f.intercept - 3.0).abs() < 1e-12);
        assert!((f.slope_ci95.1 - f.slope_ci95.0).abs() < 1e-9);
        assert!((f.r2 - 1.0).abs() < 1e-12);
        assert_eq!(f.n, 10);
    }

    #[test]
    fn degenerate_inputs_give_none() {
        assert!(linear_fit(&[1.0, 2.0], &[1.0, 2.0]).is_none());
        assert!(linear_fit(&[1.0, 2.0, 3.0], &[1.0, 2.0]).is_none());
        assert!(linear_fit(&[2.0, 2.0, 2.0], &[1.0, 2.0, 3.0]).is_none());
        assert!(linear_fit(&[1.0, 2.0, 3.0], &[1.0, f64::NAN, 3.0]).is_none());
        let f = linear_fit(&[1.0, 2.0, 3.0], &[5.0, 5.0, 5.0]).unwrap();
        assert_eq!((f.slope, f.slope_ci95, f.r2), (0.0, (0.0, 0.0), 1.0));
    }

    #[test]
    fn the_interval_covers_the_true_slope_about_95_percent_of_the_time() {
        let xs: Vec<f64> = (0..20).map(f64::from).collect();
        let mut covered = 0;
        for seed in 0..1000 {
            let mut r = XorShift::new(seed);
            let ys: Vec<f64> = xs.iter().map(|x| 1.5 * x + 4.0 * r.gauss()).collect();
            let f = linear_fit(&xs, &ys).unwrap();
            if f.slope_ci95.0 <= 1.5 && 1.5 <= f.slope_ci95.1 {
                covered += 1;
            }
        }
        assert!((930..=970).contains(&covered), "coverage {covered}/1000");
    }
}
