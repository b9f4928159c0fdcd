//! Load shapes as pure functions of time: a rate that changes over the run, and when the
//! n-th event of it (a user's arrival, a message) is due.
//!
//! A shape is a piecewise-linear rate r(t) through points (t_i, r_i) (a step is two points at
//! the same time). Its cumulative count N(t) = ∫₀ᵗ r is piecewise quadratic, and event n
//! (n = 0, 1, ...) is due at N⁻¹(n): the first event at the start, then one each time the
//! count grows by one. Because the time of event n depends on n and the shape alone, any
//! subset of events (the users of one process of a split run) is due exactly when it would be
//! in the whole run, and the count due by t is ⌊N(t)⌋ + 1 (while events remain), so over any
//! second the events due differ from the rate's integral by less than one.

use std::time::Duration;

/// A rate over time: points (seconds since the start, events per second), linear between
/// them, constant after the last. Times never decrease; rates are finite and not negative.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    points: Vec<(f64, f64)>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("a shape needs at least one point, e.g. 0s:100")]
    Empty,
    #[error("'{0}' is not TIME:RATE, e.g. 30s:1k")]
    Point(String),
    #[error("'{0}': {1}")]
    Value(String, String),
    #[error("the times must not decrease: {0} comes after a later point")]
    Order(String),
    #[error("the first point must be at 0s (got {0})")]
    Start(String),
}

impl Shape {
    /// A shape from its points (see [`Shape`]); the first must be at time 0.
    pub fn new(points: Vec<(f64, f64)>) -> Result<Shape, ShapeError> {
        let first = points.first().ok_or(ShapeError::Empty)?;
        if first.0 != 0.0 {
            return Err(ShapeError::Start(format!("{}s", first.0)));
        }
        for w in points.windows(2) {
            if w[1].0 < w[0].0 {
                return Err(ShapeError::Order(format!("{}s", w[1].0)));
            }
        }
        if let Some(p) = points
            .iter()
            .find(|p| !(p.0.is_finite() && p.1.is_finite() && p.1 >= 0.0))
        {
            return Err(ShapeError::Value(
                format!("{}s:{}", p.0, p.1),
                "times and rates are finite, rates not negative".into(),
            ));
        }
        Ok(Shape { points })
    }

    /// The points (seconds, events per second).
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    /// A constant rate.
    pub fn constant(rate: f64) -> Shape {
        Shape {
            points: vec![(0.0, rate.max(0.0))],
        }
    }

    /// Stages of constant rates, one after the other (`rate` for `for`), then 0.
    pub fn stages(stages: &[(f64, Duration)]) -> Result<Shape, ShapeError> {
        let mut points = Vec::with_capacity(stages.len() * 2 + 1);
        let mut t = 0.0;
        for &(rate, d) in stages {
            points.push((t, rate));
            t += d.as_secs_f64();
            points.push((t, rate));
        }
        points.push((t, 0.0));
        Shape::new(points)
    }

    /// `0s:1k,30s:10k,2m:10k,2m30s:0`: points `TIME:RATE`, linear between them (k6's
    /// ramping arrival rate). `duration` and `rate` parse one value each (the CLI's units).
    pub fn parse(
        text: &str,
        duration: impl Fn(&str) -> Result<Duration, String>,
        rate: impl Fn(&str) -> Result<f64, String>,
    ) -> Result<Shape, ShapeError> {
        let mut points = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (t, r) = item
                .split_once(':')
                .ok_or_else(|| ShapeError::Point(item.to_string()))?;
            let t = duration(t.trim()).map_err(|e| ShapeError::Value(item.to_string(), e))?;
            let r = rate(r.trim()).map_err(|e| ShapeError::Value(item.to_string(), e))?;
            points.push((t.as_secs_f64(), r));
        }
        Shape::new(points)
    }

    /// The rate at `t` seconds.
    pub fn rate(&self, t: f64) -> f64 {
        let p = &self.points;
        match p.iter().rposition(|&(ti, _)| ti <= t) {
            None => p[0].1,
            Some(i) if i + 1 == p.len() => p[i].1,
            Some(i) => {
                let ((t0, r0), (t1, r1)) = (p[i], p[i + 1]);
                if t1 == t0 {
                    r1
                } else {
                    r0 + (r1 - r0) * (t - t0) / (t1 - t0)
                }
            }
        }
    }

    /// N(t): the events the rate adds up to from 0 to `t` seconds.
    pub fn count(&self, t: f64) -> f64 {
        let mut n = 0.0;
        for (i, &(t0, r0)) in self.points.iter().enumerate() {
            if t <= t0 {
                break;
            }
            let (t1, r1) = match self.points.get(i + 1) {
                Some(&(t1, r1)) => (t1, r1),
                None => (f64::INFINITY, r0),
            };
            let end = t.min(t1);
            if end > t0 {
                // Trapezoid from t0 to end under the line from (t0, r0) to (t1, r1).
                let r_end = if t1.is_finite() && t1 > t0 {
                    r0 + (r1 - r0) * (end - t0) / (t1 - t0)
                } else {
                    r0
                };
                n += (r0 + r_end) / 2.0 * (end - t0);
            }
        }
        n
    }

    /// N⁻¹(n): when the count reaches `n` (seconds); `None` if it never does.
    pub fn time_of(&self, n: f64) -> Option<f64> {
        if n <= 0.0 {
            return Some(0.0);
        }
        let mut before = 0.0;
        for (i, &(t0, r0)) in self.points.iter().enumerate() {
            let (t1, r1) = match self.points.get(i + 1) {
                Some(&(t1, r1)) => (t1, r1),
                None => {
                    // Constant after the last point.
                    return (r0 > 0.0).then(|| t0 + (n - before) / r0);
                }
            };
            let dt = t1 - t0;
            let seg = (r0 + r1) / 2.0 * dt;
            if before + seg >= n && dt > 0.0 {
                // Solve r0 x + (r1 - r0) x² / (2 dt) = need for x in [0, dt].
                let need = n - before;
                let a = (r1 - r0) / (2.0 * dt);
                let x = if a.abs() < 1e-12 {
                    need / r0
                } else {
                    // The root that is in range: numerically stable form.
                    let disc = (r0 * r0 + 4.0 * a * need).max(0.0);
                    2.0 * need / (r0 + disc.sqrt())
                };
                return Some(t0 + x.clamp(0.0, dt));
            }
            before += seg;
        }
        None
    }

    /// When event `n` is due, in nanoseconds (`None`: never, the rate ends before it).
    pub fn due_ns(&self, n: u64) -> Option<u64> {
        self.time_of(n as f64).map(|t| (t * 1e9).round() as u64)
    }

    /// How many events (0..) are due by `t` seconds, at most `limit`.
    pub fn due_by(&self, t: f64, limit: u64) -> u64 {
        // ⌊N(t)⌋ + 1, then corrected against `due_ns` so that both agree exactly despite
        // floating point (event n is due by t iff time_of(n) <= t).
        let mut k = (self.count(t).floor() as u64).saturating_add(1).min(limit);
        while k > 0 && self.time_of((k - 1) as f64).is_none_or(|x| x > t) {
            k -= 1;
        }
        while k < limit && self.time_of(k as f64).is_some_and(|x| x <= t) {
            k += 1;
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: &str) -> Result<Duration, String> {
        let v: f64 = s
            .trim_end_matches('s')
            .parse()
            .map_err(|_| format!("bad duration {s}"))?;
        Ok(Duration::from_secs_f64(v))
    }

    fn per_s(s: &str) -> Result<f64, String> {
        match s.strip_suffix('k') {
            Some(k) => k.parse::<f64>().map(|v| v * 1e3),
            None => s.parse(),
        }
        .map_err(|_| format!("bad rate {s}"))
    }

    #[test]
    fn a_constant_rate_spaces_events_evenly() {
        let s = Shape::constant(50.0);
        assert_eq!(s.due_ns(0), Some(0));
        assert_eq!(s.due_ns(1), Some(20_000_000));
        assert_eq!(s.due_ns(50), Some(1_000_000_000));
        assert_eq!(s.due_by(1.0, u64::MAX), 51);
        assert_eq!(s.due_by(0.999, u64::MAX), 50);
        assert_eq!(s.due_by(10.0, 300), 300, "capped by the user count");
    }

    #[test]
    fn a_linear_ramp_is_the_integral_of_its_rate() {
        // 0 -> 100/s over 10 s: N(t) = 5 t², 500 events in the ramp.
        let s = Shape::new(vec![(0.0, 0.0), (10.0, 100.0)]).unwrap();
        assert!((s.count(10.0) - 500.0).abs() < 1e-9);
        assert!((s.count(4.0) - 80.0).abs() < 1e-9);
        assert!((s.time_of(80.0).unwrap() - 4.0).abs() < 1e-9);
        assert!((s.rate(5.0) - 50.0).abs() < 1e-12);
        // After the last point the rate stays at 100/s.
        assert!((s.time_of(600.0).unwrap() - 11.0).abs() < 1e-9);
    }

    #[test]
    fn stages_end_and_no_event_is_due_after_them() {
        let s = Shape::stages(&[
            (10.0, Duration::from_secs(60)),
            (100.0, Duration::from_secs(300)),
        ])
        .unwrap();
        assert!((s.count(60.0) - 600.0).abs() < 1e-9);
        assert!((s.count(360.0) - 30_600.0).abs() < 1e-6);
        assert!((s.count(1000.0) - 30_600.0).abs() < 1e-6);
        assert_eq!(s.time_of(30_601.0), None);
        assert_eq!(s.rate(30.0), 10.0);
        assert_eq!(s.rate(60.0), 100.0);
        assert_eq!(s.rate(400.0), 0.0);
    }

    /// The rule users and rates are held to: the events due in any second differ from the
    /// rate's integral over that second by less than one.
    #[test]
    fn every_second_is_within_one_event_of_the_shape() {
        let shapes = [
            Shape::constant(50.0),
            Shape::constant(0.3),
            Shape::new(vec![
                (0.0, 0.0),
                (30.0, 1000.0),
                (60.0, 1000.0),
                (75.0, 0.0),
            ])
            .unwrap(),
            Shape::stages(&[
                (7.0, Duration::from_millis(10_500)),
                (123.0, Duration::from_secs(20)),
                (1.0, Duration::from_secs(9)),
            ])
            .unwrap(),
        ];
        for s in &shapes {
            for sec in 0..80 {
                let (a, b) = (sec as f64, sec as f64 + 1.0);
                let got = s.due_by(b - 1e-9, u64::MAX) - s.due_by(a - 1e-9, u64::MAX);
                let want = s.count(b) - s.count(a);
                assert!(
                    (got as f64 - want).abs() < 1.0 + 1e-6,
                    "{s:?} second {sec}: {got} due, integral {want}"
                );
            }
        }
    }

    #[test]
    fn due_by_agrees_with_due_ns_event_by_event() {
        let s = Shape::new(vec![(0.0, 3.0), (2.0, 40.0), (5.0, 0.5)]).unwrap();
        for n in 0..60u64 {
            let t = s.time_of(n as f64).unwrap();
            assert!(s.due_by(t, u64::MAX) > n, "event {n} at {t} is due by then");
            assert!(
                s.due_by(t - 1e-6, u64::MAX) <= n,
                "event {n} not before {t}"
            );
        }
    }

    #[test]
    fn stages_parse_like_the_cli_writes_them() {
        let s = Shape::parse("0s:1k, 30s:10k,120s:10k,150s:0", secs, per_s).unwrap();
        assert_eq!(s.rate(15.0), 5_500.0);
        assert_eq!(s.rate(100.0), 10_000.0);
        assert_eq!(s.rate(200.0), 0.0);
        for (bad, want) in [
            ("", ShapeError::Empty),
            ("0s", ShapeError::Point("0s".into())),
            ("1s:5", ShapeError::Start("1s".into())),
            ("0s:5,10s:5,5s:1", ShapeError::Order("5s".into())),
        ] {
            assert_eq!(Shape::parse(bad, secs, per_s).unwrap_err(), want, "{bad}");
        }
        let e = Shape::parse("0s:x", secs, per_s).unwrap_err().to_string();
        assert_eq!(e, "'0s:x': bad rate x");
        assert!(Shape::new(vec![(0.0, -1.0)]).is_err());
    }
}
