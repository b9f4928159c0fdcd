//! The breaking-point search as a pure state machine: given the results so far, which rate to
//! offer next, or why to stop. No clock, no socket: `find_max.rs` runs the steps, and the tests
//! below drive it with a synthetic server in virtual time.
//!
//! Key decision: a step is judged once, into pass / fail / generator limit ([`judge`]), and the
//! search only sees those judgements. The rate grows by `growth` from `start` until a step
//! fails, then bisects between the highest passing and the lowest failing rate until they are
//! within `precision` of each other. A step where barrage itself was the limit ends the search
//! at once: every rate above it would measure the generator, not the server, so no knee is
//! reported from it.

pub use barrage_report::find_max::{Bounds, End, Verdict, MIN_RATE};
use serde::Serialize;

/// An open-loop step whose completed rate is below this share of the offered rate did not get
/// its load through: the server pushed back (a failure) or barrage could not send (its limit).
pub const ACHIEVED_SHARE: f64 = 0.95;

/// What one step measured, as the search judges it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measured {
    pub offered: f64,
    /// Messages barrage sent per second over the measured window.
    pub sent: f64,
    /// Completed exchanges per second over the measured window.
    pub achieved: f64,
    /// The first SLO that failed (or could not be measured): its expression and why.
    pub broken_slo: Option<String>,
    /// For a broken upper limit on latency: by how much the figure exceeded it, µs.
    pub latency_excess_us: Option<f64>,
    /// barrage's CPU over the load reached its limit (the saturation rule's CPU share of its
    /// worker threads): why, in words.
    pub cpu_limit: Option<String>,
    /// Measured seconds in which barrage's event loop ran 10 ms or more late (the saturation
    /// rule's lag), of `seconds`, and the worst lateness, µs. A send that went out late counts
    /// the delay in its latency (measured from the intended time): barrage's, not the server's.
    pub late_s: usize,
    pub seconds: usize,
    pub lag_us_max: u64,
    /// Connections the server refused, reset or closed in the step: messages that could not be
    /// sent on them are the server's doing, not barrage's.
    pub connection_errors: u64,
}

/// Judge one step: barrage's own limit first (a server verdict from a starved generator would be
/// a fake knee), then the SLOs and whether the offered load was completed.
pub fn judge(m: &Measured) -> Verdict {
    if let Some(why) = &m.cpu_limit {
        return Verdict::GeneratorLimit(why.clone());
    }
    let late = format!(
        "barrage's event loop ran 10 ms or more late in {} of {} s (worst {:.1} ms)",
        m.late_s,
        m.seconds,
        m.lag_us_max as f64 / 1e3
    );
    if m.late_s > 0 && m.connection_errors == 0 && m.sent < ACHIEVED_SHARE * m.offered {
        return Verdict::GeneratorLimit(format!(
            "it sent {:.0}/s of {:.0}/s offered; {late}",
            m.sent, m.offered
        ));
    }
    let failed = match &m.broken_slo {
        Some(slo) => Some(slo.clone()),
        None if m.achieved < ACHIEVED_SHARE * m.offered => Some(format!(
            "completed {:.0}/s of {:.0}/s offered (below {:.0} %)",
            m.achieved,
            m.offered,
            ACHIEVED_SHARE * 100.0
        )),
        None => None,
    };
    let explained = |excess: f64| m.late_s > 0 && excess <= m.lag_us_max as f64;
    match failed {
        None => Verdict::Pass,
        Some(why) if m.latency_excess_us.is_some_and(explained) => {
            Verdict::Suspect(format!("{why}; within what {late}"))
        }
        Some(why) => Verdict::Fail(why),
    }
}

/// What the search says next.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    Offer(f64),
    Stop(End),
}

/// The search so far: every step's rate and verdict, in order.
#[derive(Clone, Debug)]
pub struct Search {
    pub bounds: Bounds,
    pub steps: Vec<(f64, Verdict)>,
}

impl Search {
    pub fn new(bounds: Bounds) -> Search {
        Search {
            bounds,
            steps: Vec::new(),
        }
    }

    pub fn record(&mut self, offered: f64, verdict: Verdict) {
        self.steps.push((offered, verdict));
    }

    /// Highest rate that passed.
    pub fn best_pass(&self) -> Option<f64> {
        self.steps
            .iter()
            .filter(|(_, v)| *v == Verdict::Pass)
            .map(|(r, _)| *r)
            .reduce(f64::max)
    }

    /// Lowest rate that failed (the server broke an SLO there).
    pub fn first_fail(&self) -> Option<(f64, &str)> {
        self.steps
            .iter()
            .filter_map(|(r, v)| match v {
                Verdict::Fail(why) => Some((*r, why.as_str())),
                _ => None,
            })
            .reduce(|a, b| if b.0 < a.0 { b } else { a })
    }

    /// The next rate to offer, or why to stop.
    pub fn next(&self) -> Next {
        let b = &self.bounds;
        let generator = |v: &Verdict| matches!(v, Verdict::GeneratorLimit(_));
        if self.steps.iter().any(|(_, v)| generator(v)) {
            return Next::Stop(End::GeneratorLimit);
        }
        let Some(&(last, ref last_verdict)) = self.steps.last() else {
            return Next::Offer(b.start.min(b.max_rate));
        };
        let suspect = |v: &Verdict| matches!(v, Verdict::Suspect(_));
        if suspect(last_verdict) {
            let n = self.steps.len();
            let twice = n >= 2 && suspect(&self.steps[n - 2].1) && self.steps[n - 2].0 == last;
            if twice {
                return Next::Stop(End::GeneratorLimit);
            }
            if n < b.max_steps {
                return Next::Offer(last);
            }
        }
        let pass = self.best_pass();
        let fail = self.first_fail().map(|(r, _)| r);
        let done = match (pass, fail) {
            (Some(p), Some(f)) if (f - p) <= b.precision * p => Some(End::Found),
            (Some(p), None) if p >= b.max_rate => Some(End::MaxRate),
            (None, Some(f)) if f <= MIN_RATE => Some(End::NothingPassed),
            _ => None,
        };
        if let Some(end) = done {
            return Next::Stop(end);
        }
        if self.steps.len() >= b.max_steps {
            return Next::Stop(End::MaxSteps);
        }
        let top = self.steps.iter().map(|(r, _)| *r).fold(0.0, f64::max);
        Next::Offer(match (pass, fail) {
            (Some(p), Some(f)) => (p + f) / 2.0,
            (_, None) => (top * b.growth).min(b.max_rate),
            (None, Some(f)) => (f / b.growth).max(MIN_RATE),
        })
    }

    /// The step that ended the search on barrage's limit: its rate and why.
    pub fn generator_limit(&self) -> Option<(f64, &str)> {
        self.steps.iter().rev().find_map(|(r, v)| match v {
            Verdict::GeneratorLimit(why) | Verdict::Suspect(why) => Some((*r, why.as_str())),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synthetic server of capacity `c` per second behind a generator that can offer at most
    /// `g` per second: what one step of `offered`/s measures, in virtual time (no clock).
    /// Latency is an M/D/1-like p99 (1 ms at idle, growing as the load nears `c`, without
    /// bound past it); errors appear past the capacity.
    fn model(c: f64, g: f64, offered: f64, slo_p99_ms: f64) -> Measured {
        let sent = offered.min(g);
        let rho = sent / c;
        let p99_ms = if rho < 1.0 {
            1.0 + 0.5 * rho / (1.0 - rho)
        } else {
            // Past capacity the queue grows for the whole step: seconds, not milliseconds.
            1_000.0 * (rho - 1.0) + 60.0
        };
        let broken = (p99_ms >= slo_p99_ms).then(|| format!("p99 = {p99_ms:.1} ms"));
        let cpu = (offered > g).then(|| "barrage's CPU at 100 % of 1 thread".to_string());
        Measured {
            offered,
            sent,
            achieved: sent.min(c),
            broken_slo: broken,
            latency_excess_us: (p99_ms >= slo_p99_ms).then_some((p99_ms - slo_p99_ms) * 1e3),
            cpu_limit: cpu,
            late_s: 0,
            seconds: 10,
            lag_us_max: 0,
            connection_errors: 0,
        }
    }

    fn bounds() -> Bounds {
        Bounds {
            start: 100.0,
            max_rate: 1e6,
            max_steps: 20,
            growth: 2.0,
            precision: 0.05,
        }
    }

    /// Runs the search against the model; returns it and how it ended.
    fn search(b: Bounds, c: f64, g: f64, slo_ms: f64) -> (Search, End) {
        let mut s = Search::new(b);
        loop {
            match s.next() {
                Next::Offer(r) => {
                    assert!(r <= b.max_rate && r >= MIN_RATE, "{r}");
                    s.record(r, judge(&model(c, g, r, slo_ms)));
                }
                Next::Stop(end) => return (s, end),
            }
        }
    }

    #[test]
    fn finds_the_capacity_of_a_synthetic_server_within_ten_percent() {
        // p99 < 20 ms breaks at rho = 39/39.5 of the capacity: the knee is just below c.
        for c in [350.0, 2_000.0, 7_777.0, 50_000.0, 333_333.0] {
            let (s, end) = search(bounds(), c, f64::INFINITY, 20.0);
            assert_eq!(end, End::Found, "capacity {c}: {:?}", s.steps);
            let best = s.best_pass().unwrap();
            let (fail, why) = s.first_fail().unwrap();
            assert!(best <= c && best >= 0.9 * c, "capacity {c}: best {best}");
            assert!(fail > best && fail <= best * 1.05, "{fail} vs {best}");
            assert!(why.starts_with("p99 = "), "{why}");
            assert!(s.steps.len() <= 20);
        }
    }

    #[test]
    fn stops_within_max_steps_with_what_it_found() {
        let b = Bounds {
            max_steps: 6,
            ..bounds()
        };
        let (s, end) = search(b, 50_000.0, f64::INFINITY, 20.0);
        assert_eq!(end, End::MaxSteps);
        assert_eq!(s.steps.len(), 6);
        // 100 .. 3200: all passed, still climbing.
        assert_eq!(s.best_pass(), Some(3_200.0));
        assert_eq!(s.first_fail(), None);
    }

    #[test]
    fn a_generator_limit_is_flagged_not_reported_as_a_knee() {
        // The server could do 50k/s; barrage can offer 6k/s.
        let (s, end) = search(bounds(), 50_000.0, 6_000.0, 20.0);
        assert_eq!(end, End::GeneratorLimit);
        assert_eq!(s.first_fail(), None, "no server failure was invented");
        assert_eq!(s.best_pass(), Some(3_200.0));
        assert!(matches!(s.steps.last(), Some((r, Verdict::GeneratorLimit(_))) if *r == 6_400.0));
    }

    #[test]
    fn a_failure_with_a_late_event_loop_is_run_again_before_it_counts() {
        // The first try at 1,600/s fails while barrage's loop was late once (a neighbour took
        // the CPU): it is run again, and the search still finds the capacity.
        let mut s = Search::new(bounds());
        let mut tries_at_1600 = 0;
        loop {
            let r = match s.next() {
                Next::Offer(r) => r,
                Next::Stop(end) => {
                    assert_eq!(end, End::Found);
                    break;
                }
            };
            let mut m = model(2_000.0, f64::INFINITY, r, 20.0);
            if r == 1_600.0 {
                tries_at_1600 += 1;
                if tries_at_1600 == 1 {
                    m.broken_slo = Some("p99 = 31 ms".into());
                    m.latency_excess_us = Some(11_000.0);
                    m.late_s = 1;
                    m.lag_us_max = 12_000;
                }
            }
            s.record(r, judge(&m));
        }
        assert_eq!(tries_at_1600, 2);
        assert!(matches!(&s.steps[4].1, Verdict::Suspect(w) if w.contains("late in 1 of 10 s")));
        let best = s.best_pass().unwrap();
        assert!((1_800.0..=2_000.0).contains(&best), "{best}");
        // Late at every try of that rate: barrage's limit, not a knee.
        let mut s = Search::new(bounds());
        for r in [100.0, 200.0, 400.0, 800.0] {
            s.record(r, Verdict::Pass);
        }
        let late = Measured {
            broken_slo: Some("p99 = 31 ms".into()),
            latency_excess_us: Some(11_000.0),
            late_s: 1,
            lag_us_max: 12_000,
            ..model(2_000.0, f64::INFINITY, 1_600.0, 20.0)
        };
        // Over the limit by more than barrage was late: the server's failure.
        let server = Measured {
            lag_us_max: 10_500,
            ..late.clone()
        };
        assert!(matches!(judge(&server), Verdict::Fail(_)));
        s.record(1_600.0, judge(&late));
        assert_eq!(s.next(), Next::Offer(1_600.0));
        s.record(1_600.0, judge(&late));
        assert_eq!(s.next(), Next::Stop(End::GeneratorLimit));
        assert_eq!(s.first_fail(), None);
    }

    #[test]
    fn a_shortfall_is_a_failure_unless_barrage_could_not_send() {
        let m = Measured {
            offered: 1_000.0,
            sent: 1_000.0,
            achieved: 700.0,
            broken_slo: None,
            latency_excess_us: None,
            cpu_limit: None,
            late_s: 1,
            seconds: 4,
            lag_us_max: 15_000,
            connection_errors: 0,
        };
        assert!(matches!(judge(&m), Verdict::Fail(w) if w.contains("700/s of 1000/s")));
        let m = Measured { sent: 700.0, ..m };
        assert!(
            matches!(judge(&m), Verdict::GeneratorLimit(w) if w.contains("sent 700/s of 1000/s"))
        );
        // Unless the server broke the connections it could not send on.
        let broken = Measured {
            connection_errors: 3,
            ..m.clone()
        };
        assert!(matches!(judge(&broken), Verdict::Fail(w) if w.contains("700/s of 1000/s")));
        let m = Measured {
            achieved: 950.0,
            sent: 1_000.0,
            ..m
        };
        assert_eq!(judge(&m), Verdict::Pass);
    }

    #[test]
    fn max_rate_bounds_every_offer_and_ends_the_search() {
        let b = Bounds {
            max_rate: 1_000.0,
            ..bounds()
        };
        let (s, end) = search(b, 50_000.0, f64::INFINITY, 20.0);
        assert_eq!(end, End::MaxRate);
        let rates: Vec<f64> = s.steps.iter().map(|(r, _)| *r).collect();
        assert_eq!(rates, vec![100.0, 200.0, 400.0, 800.0, 1_000.0]);
    }

    #[test]
    fn a_first_step_that_fails_searches_downwards() {
        let b = Bounds {
            start: 10_000.0,
            ..bounds()
        };
        let (s, end) = search(b, 1_500.0, f64::INFINITY, 20.0);
        assert_eq!(end, End::Found);
        let best = s.best_pass().unwrap();
        assert!((0.9 * 1_500.0..=1_500.0).contains(&best), "{best}");
        // A server that never meets the SLO: down to the lowest rate, then stop.
        let (s, end) = search(b, 1_500.0, f64::INFINITY, 0.5);
        assert_eq!(end, End::NothingPassed);
        assert_eq!(s.best_pass(), None);
    }
}
