//! The arrival shape: when user g arrives, as a pure function of g and the shape, so any
//! subset of users can run in another process and the total stays exact.
//!
//! Users arrive where the cumulative arrivals A(t) = ∫ rate reaches g (user 0 at t = 0): with
//! a constant rate r, user g arrives at g / r; with stages, the rate is constant within each
//! stage and A(t) is piecewise linear. Users beyond what the stages bring never arrive, which
//! the preflight refuses.

use std::time::Duration;

/// How users arrive.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Users per second, forever.
    Rate(f64),
    /// (users per second, for how long), in order.
    Stages(Vec<(f64, Duration)>),
}

impl Shape {
    /// When user `g` (0-based) arrives, from the start of the load; `None` if the stages end
    /// before it (or the time is beyond what a `Duration` holds).
    pub fn arrival(&self, g: u64) -> Option<Duration> {
        let g = g as f64;
        match self {
            Shape::Rate(r) => Duration::try_from_secs_f64(g / r).ok(),
            Shape::Stages(stages) => {
                let (mut t, mut a) = (0.0f64, 0.0f64);
                for &(r, d) in stages {
                    let end = a + r * d.as_secs_f64();
                    if g < end {
                        return Duration::try_from_secs_f64(t + (g - a) / r).ok();
                    }
                    t += d.as_secs_f64();
                    a = end;
                }
                None
            }
        }
    }

    /// How many users the shape brings in all (`None`: unbounded).
    pub fn capacity(&self) -> Option<u64> {
        match self {
            Shape::Rate(_) => None,
            Shape::Stages(stages) => {
                let a: f64 = stages.iter().map(|&(r, d)| r * d.as_secs_f64()).sum();
                // User g arrives iff g < A: ceil(A) users (A = 2.5 brings users 0, 1, 2).
                Some(a.ceil() as u64)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn constant_rate_is_g_over_r() {
        let s = Shape::Rate(50.0);
        assert_eq!(s.arrival(0), Some(secs(0.0)));
        assert_eq!(s.arrival(50), Some(secs(1.0)));
        assert_eq!(s.arrival(125), Some(secs(2.5)));
        assert_eq!(s.capacity(), None);
    }

    #[test]
    fn stages_are_piecewise_constant() {
        let s = Shape::Stages(vec![(10.0, secs(60.0)), (100.0, secs(300.0))]);
        assert_eq!(s.capacity(), Some(600 + 30_000));
        assert_eq!(s.arrival(10), Some(secs(1.0)));
        assert_eq!(s.arrival(600), Some(secs(60.0)));
        assert_eq!(s.arrival(700), Some(secs(61.0)));
        assert_eq!(s.arrival(30_600), None);
    }

    /// Users arriving in each second match the shape within ±1 (virtual time).
    #[test]
    fn arrivals_per_second_follow_the_shape_within_one_user() {
        let s = Shape::Stages(vec![
            (7.5, secs(10.0)),
            (33.3, secs(10.0)),
            (1.0, secs(5.0)),
        ]);
        let n = s.capacity().unwrap();
        let mut per_sec = [0u64; 25];
        for g in 0..n {
            let t = s.arrival(g).unwrap().as_secs_f64();
            per_sec[t as usize] += 1;
        }
        for (sec, &got) in per_sec.iter().enumerate() {
            let want = match sec {
                0..=9 => 7.5,
                10..=19 => 33.3,
                _ => 1.0,
            };
            assert!(
                (got as f64 - want).abs() <= 1.0,
                "second {sec}: {got} users, shape {want}"
            );
        }
    }
}
