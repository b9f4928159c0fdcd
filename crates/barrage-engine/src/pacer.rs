//! Pacing as pure functions of time: when is message k of a connection due?
//!
//! Both open-loop modes reduce to one per-connection schedule: `--interval D` gives every
//! connection period D, `--rate R` gives every connection period C/R (C connections in total).
//! Connection i of C starts at phase i*period/C, so the phases are spread evenly over all
//! connections of all shares and the aggregate schedule is exactly uniform. Because message
//! k's intended time is a function of k alone, a backlog needs no storage (it is the index
//! range [sent, due)), and latency is timed from `intended(k)`, never from when the loop got
//! round to it (no coordinated omission).

use std::time::Duration;

/// How the load is paced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// Closed loop: the next request when the reply arrives (`pipeline` in flight).
    PingPong,
    /// Closed loop with a pause after each reply.
    Think(Duration),
    /// Open loop: every connection sends one message every period.
    Interval(Duration),
    /// Open loop: this many messages per second in total.
    Rate(f64),
}

impl Mode {
    pub fn is_open_loop(&self) -> bool {
        matches!(self, Mode::Interval(_) | Mode::Rate(_))
    }

    pub fn name(&self) -> &'static str {
        match self {
            Mode::PingPong => "ping-pong",
            Mode::Think(_) => "think",
            Mode::Interval(_) => "interval",
            Mode::Rate(_) => "rate",
        }
    }
}

/// One connection's send schedule, in nanoseconds since the run's start.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    pub phase_ns: u64,
    pub period_ns: f64,
    /// No message is due at or after this time (the end of the load phase).
    pub end_ns: Option<u64>,
    /// Timer slack W (0: exact): a message is due at its time rounded up to a multiple of W
    /// since the start, so the messages of all connections due within one W go out together,
    /// with one wake-up. Its intended time (latency counts from it) is that aligned time: a
    /// pure function of the schedule, so a server stall still shows in latency and barrage's
    /// own batching does not.
    pub slack_ns: u64,
    /// A rate that changes over the run (`--rate-stages`): this connection's messages are the
    /// events `index`, `index + stride`, ... of the whole run's shape (round robin over the
    /// connections), each due when the shape says; `phase_ns` and `period_ns` are then unused.
    pub shaped: Option<Shaped>,
}

/// The part of a shaped schedule that says which events of the shape are this connection's.
#[derive(Clone, Debug, PartialEq)]
pub struct Shaped {
    pub shape: std::sync::Arc<crate::shape::Shape>,
    pub index: u64,
    pub stride: u64,
}

/// What a connection should do next, given the time and how many messages it has sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// Message `sent` is due (or overdue) now.
    Now,
    /// Message `sent` becomes due in this many nanoseconds.
    Wait(u64),
    /// The schedule has no more messages.
    Stop,
}

impl Schedule {
    /// Schedule of global connection `conn` of `connections` with the given period.
    /// The period is at least 1 ns (the CLI's rate bound keeps it at 10 ns or more), so the
    /// index arithmetic in [`due`](Self::due) stays a step or two from its estimate.
    pub fn spread(conn: u64, connections: u64, period_ns: f64, end_ns: Option<u64>) -> Self {
        let period_ns = if period_ns.is_finite() {
            period_ns.max(1.0)
        } else {
            f64::MAX
        };
        let phase = period_ns * conn as f64 / connections.max(1) as f64;
        Self {
            phase_ns: phase.round() as u64,
            period_ns,
            end_ns,
            slack_ns: 0,
            shaped: None,
        }
    }

    /// Connection `conn` of `connections` sharing one rate shape: it sends the shape's events
    /// `conn`, `conn + connections`, ... (so all connections together follow the shape).
    pub fn shaped(
        conn: u64,
        connections: u64,
        shape: std::sync::Arc<crate::shape::Shape>,
        end_ns: Option<u64>,
    ) -> Self {
        Self {
            phase_ns: 0,
            period_ns: 1.0,
            end_ns,
            slack_ns: 0,
            shaped: Some(Shaped {
                shape,
                index: conn,
                stride: connections.max(1),
            }),
        }
    }

    /// The same schedule with timer slack `slack_ns` (see [`Schedule::slack_ns`]).
    pub fn with_slack(mut self, slack_ns: u64) -> Self {
        self.slack_ns = slack_ns;
        self
    }

    /// Message `k`'s time on the exact schedule.
    #[inline]
    fn exact(&self, k: u64) -> u64 {
        // `as` saturates for floats and the add saturates: a schedule can never wrap around
        // into the past (the CLI bounds rates so that this stays exact in practice).
        match &self.shaped {
            None => self
                .phase_ns
                .saturating_add((k as f64 * self.period_ns).round() as u64),
            // Events the shape never brings (its rate ends at 0) are never due.
            Some(s) => k
                .checked_mul(s.stride)
                .and_then(|x| x.checked_add(s.index))
                .and_then(|n| s.shape.due_ns(n))
                .unwrap_or(u64::MAX),
        }
    }

    /// A first guess of how many messages are due by `t` (`due` corrects it exactly).
    #[inline]
    fn estimate(&self, t: u64) -> u64 {
        match &self.shaped {
            None => {
                let est = ((t - self.phase_ns) as f64 / self.period_ns).floor();
                if est.is_finite() && est >= 0.0 {
                    (est as u64).saturating_add(1)
                } else {
                    1
                }
            }
            Some(s) => {
                // The shape brings events 0..m by t; this connection's are index + k * stride.
                let m = s.shape.count(t as f64 / 1e9).floor();
                let m = if m.is_finite() && m >= 0.0 {
                    m as u64 + 1
                } else {
                    0
                };
                m.saturating_sub(s.index).div_ceil(s.stride)
            }
        }
    }

    /// The intended send time of message `k` (aligned up to the timer slack).
    #[inline]
    pub fn intended(&self, k: u64) -> u64 {
        let t = self.exact(k);
        match self.slack_ns {
            0 => t,
            w => t.div_ceil(w).saturating_mul(w),
        }
    }

    /// How many messages (indices 0..n) are due by `elapsed`, capped by the schedule's end.
    pub fn due(&self, elapsed: u64) -> u64 {
        let mut t = elapsed;
        if let Some(end) = self.end_ns {
            if end == 0 {
                return 0;
            }
            t = t.min(end - 1);
        }
        // With slack W, message k is due by t when its exact time is by t rounded down to W
        // (its intended time, rounded up to W, is then by t too).
        if let Some(grid) = t.checked_div(self.slack_ns) {
            t = grid * self.slack_ns;
        }
        if t < self.phase_ns {
            return 0;
        }
        // Estimate, then correct for floating-point rounding at the edges.
        let mut n = self.estimate(t);
        while n > 0 && self.exact(n - 1) > t {
            n -= 1;
        }
        // `t < u64::MAX` (capped above), and `exact` saturates at `u64::MAX`, so this ends.
        while n < u64::MAX && self.exact(n) <= t {
            n += 1;
        }
        n
    }

    /// vegeta-style pacer: given the time and the count sent so far, wait or go or stop.
    pub fn pace(&self, elapsed: u64, sent: u64) -> Pace {
        let next = self.exact(sent);
        if next == u64::MAX || self.end_ns.is_some_and(|end| next >= end) {
            return Pace::Stop;
        }
        let at = self.intended(sent);
        if at <= elapsed {
            Pace::Now
        } else {
            Pace::Wait(at - elapsed)
        }
    }
}

/// Delay before reconnect attempt number `failures` (1-based): exponential from 10 ms, capped
/// at 2 s, with jitter in [50 %, 100 %] drawn from `rand` in [0, 1) so that connections that
/// failed together do not come back together.
pub fn backoff_ns(failures: u32, rand: f64) -> u64 {
    const BASE_NS: f64 = 10e6;
    const CAP_NS: f64 = 2e9;
    let exp = BASE_NS * 2f64.powi(failures.saturating_sub(1).min(20) as i32);
    (exp.min(CAP_NS) * (0.5 + 0.5 * rand.clamp(0.0, 1.0))) as u64
}

/// A tiny xorshift generator: seeded per worker, so runs are reproducible and no global state
/// or lock is touched on the hot path.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const MS: u64 = 1_000_000;

    #[test]
    fn pace_table() {
        let s = Schedule {
            phase_ns: 5 * MS,
            period_ns: 50e6,
            end_ns: Some(200 * MS),
            slack_ns: 0,
            shaped: None,
        };
        let table = [
            (0, 0, Pace::Wait(5 * MS)),
            (5 * MS, 0, Pace::Now),
            (6 * MS, 1, Pace::Wait(49 * MS)),
            (100 * MS, 1, Pace::Now),
            (100 * MS, 2, Pace::Wait(5 * MS)),
            (300 * MS, 3, Pace::Now),
            (300 * MS, 4, Pace::Stop),
        ];
        for (elapsed, sent, want) in table {
            assert_eq!(s.pace(elapsed, sent), want, "elapsed {elapsed} sent {sent}");
        }
    }

    #[test]
    fn due_counts_messages_whose_time_has_come() {
        let s = Schedule {
            phase_ns: 10,
            period_ns: 100.0,
            end_ns: Some(1000),
            slack_ns: 0,
            shaped: None,
        };
        assert_eq!(s.due(0), 0);
        assert_eq!(s.due(9), 0);
        assert_eq!(s.due(10), 1);
        assert_eq!(s.due(109), 1);
        assert_eq!(s.due(110), 2);
        assert_eq!(s.due(10_000), 10, "capped by the end: 10, 110, .. 910");
    }

    #[test]
    fn virtual_time_interval_schedule_is_uniform_across_connections() {
        // 1000 connections x 50 ms over 20 s of virtual time: every 1 s window holds exactly
        // 20,000 intended sends, and in total 400,000.
        let conns = 1000u64;
        let end = 20_000 * MS;
        let mut per_second = vec![0u64; 20];
        for c in 0..conns {
            let s = Schedule::spread(c, conns, 50e6, Some(end));
            let mut k = 0;
            while let Pace::Now | Pace::Wait(_) = s.pace(0, k) {
                per_second[(s.intended(k) / (1000 * MS)) as usize] += 1;
                k += 1;
            }
            assert_eq!(s.due(u64::MAX / 2), k);
        }
        assert!(per_second.iter().all(|&n| n == 20_000), "{per_second:?}");
    }

    #[test]
    fn rate_schedule_spreads_sends_evenly() {
        // rate 1000/s over 10 connections: period 10 ms, phases 1 ms apart.
        let conns = 10;
        let period = conns as f64 * 1e9 / 1000.0;
        let mut times: Vec<u64> = (0..conns)
            .flat_map(|c| {
                let s = Schedule::spread(c, conns, period, Some(100 * MS));
                (0..s.due(u64::MAX / 2)).map(move |k| s.intended(k))
            })
            .collect();
        times.sort();
        assert_eq!(times.len(), 100);
        for (i, t) in times.iter().enumerate() {
            assert_eq!(*t, i as u64 * MS);
        }
    }

    #[test]
    fn timer_slack_aligns_intended_times_and_batches_the_due_ones() {
        // 1000 connections x 50 ms, W = 1 ms: every message is due at a whole millisecond,
        // never before its exact time and less than W after it; per 1 ms exactly 20 are due;
        // due() and intended() agree message by message.
        let (conns, w) = (1000u64, MS);
        let end = 2_000 * MS;
        let mut per_ms = vec![0u64; 2001];
        for c in 0..conns {
            let exact = Schedule::spread(c, conns, 50e6, Some(end));
            let s = exact.clone().with_slack(w);
            let n = s.due(u64::MAX / 2);
            // Slack moves messages later, adds none; one whose aligned time reaches the end
            // is no longer part of the load.
            assert_eq!(n, (0..).take_while(|&k| s.intended(k) < end).count() as u64);
            assert!(exact.due(u64::MAX / 2) - n <= 1);
            for k in 0..n {
                let (t, e) = (s.intended(k), exact.intended(k));
                assert_eq!(t % w, 0);
                assert!(t >= e && t - e < w, "{c}/{k}: {e} -> {t}");
                assert_eq!(s.due(t), k + 1, "{c}/{k} due at its aligned time");
                if t > 0 {
                    assert_eq!(s.due(t - 1), k, "{c}/{k} not before");
                }
                per_ms[(t / MS) as usize] += 1;
            }
        }
        // Connection 0 starts at 0; every later millisecond holds the 20 whose exact times
        // fell in the millisecond before it.
        assert_eq!((per_ms[0], per_ms[2000]), (1, 0));
        assert!(
            per_ms[1..2000].iter().all(|&n| n == 20),
            "{:?}",
            &per_ms[..10]
        );
        assert_eq!(per_ms.iter().sum::<u64>(), 40_000 - 19);
        // Nothing is due at or after the end, even late.
        let s = Schedule::spread(0, 1, 1_200.0, Some(1_500)).with_slack(1_000);
        assert_eq!((s.intended(1), s.due(1_499), s.due(10_000)), (2_000, 1, 1));
        assert_eq!(s.pace(1_000, 1), Pace::Wait(1_000));
        assert_eq!(s.pace(0, 2), Pace::Stop);
    }

    #[test]
    fn fractional_periods_do_not_drift() {
        let s = Schedule {
            phase_ns: 0,
            period_ns: 1e9 / 3.0,
            end_ns: None,
            slack_ns: 0,
            shaped: None,
        };
        assert_eq!(s.intended(3_000_000), 1_000_000 * 1_000_000_000);
        assert_eq!(s.due(1_000_000_000 * 1_000_000), 3_000_001);
    }

    #[test]
    fn absurd_periods_saturate_instead_of_wrapping() {
        // `--rate 1e19` once made `due` wrap and spin; the schedule must saturate and stay
        // monotonic whatever the period.
        for period in [1e-10, 1e-3, 0.5, 1.0, 1e18, 1e30, f64::INFINITY] {
            let mut s = Schedule::spread(0, 1, period, Some(1_000_000));
            s.phase_ns = 7;
            let mut last = 0;
            for k in [0, 1, 2, 1 << 20, 1 << 40, u64::MAX / 2, u64::MAX] {
                let t = s.intended(k);
                assert!(t >= last, "period {period}: intended({k}) went back");
                last = t;
            }
            let due = s.due(999_999);
            assert!(due >= 1, "period {period}");
            assert!(s.intended(due - 1) <= 999_999, "period {period}");
        }
        let huge = Schedule {
            phase_ns: u64::MAX - 5,
            period_ns: 1e30,
            end_ns: None,
            slack_ns: 0,
            shaped: None,
        };
        assert_eq!(huge.intended(3), u64::MAX);
        assert_eq!(huge.due(u64::MAX - 1), 1);
    }

    #[test]
    fn backoff_grows_caps_and_jitters() {
        assert_eq!(backoff_ns(1, 1.0), 10 * MS);
        assert_eq!(backoff_ns(1, 0.0), 5 * MS);
        assert_eq!(backoff_ns(3, 1.0), 40 * MS);
        assert_eq!(backoff_ns(40, 1.0), 2000 * MS);
        let mut r = Rng::new(7);
        let xs: Vec<f64> = (0..1000).map(|_| r.next_f64()).collect();
        assert!(xs.iter().all(|x| (0.0..1.0).contains(x)));
        let mean = xs.iter().sum::<f64>() / 1000.0;
        assert!((mean - 0.5).abs() < 0.05);
    }

    /// `--rate-stages`: the connections' shaped schedules together follow the shape exactly
    /// (virtual time): every event of the shape is due on exactly one connection, at the
    /// shape's time for it, and per second the events due match the shape's integral within 1.
    #[test]
    fn shaped_schedules_together_follow_the_shape() {
        let shape = std::sync::Arc::new(
            crate::shape::Shape::new(vec![(0.0, 0.0), (1.0, 400.0), (2.0, 400.0), (3.0, 0.0)])
                .unwrap(),
        );
        let conns = 7u64;
        let end = 3_000 * MS;
        let scheds: Vec<Schedule> = (0..conns)
            .map(|c| Schedule::shaped(c, conns, shape.clone(), Some(end)))
            .collect();
        let total = |t: u64| scheds.iter().map(|s| s.due(t)).sum::<u64>();
        // The area is 200 + 400 + 200 = 800 events; event 800 falls exactly at the end.
        assert_eq!(total(end + 5 * MS), 800);
        for sec in 0..3u64 {
            let got = total((sec + 1) * 1000 * MS - 1)
                - if sec == 0 {
                    0
                } else {
                    total(sec * 1000 * MS - 1)
                };
            let want = shape.count((sec + 1) as f64) - shape.count(sec as f64);
            assert!(
                (got as f64 - want).abs() <= 1.0,
                "second {sec}: {got} due, shape {want}"
            );
        }
        // Every event n is connection n % conns's message n / conns, at the shape's time.
        for n in [0u64, 1, 6, 7, 99, 400, 799] {
            let s = &scheds[(n % conns) as usize];
            assert_eq!(s.intended(n / conns), shape.due_ns(n).unwrap(), "event {n}");
        }
        let last = &scheds[(800 % conns) as usize];
        assert_eq!(
            last.pace(end, 800 / conns),
            Pace::Stop,
            "nothing after the end"
        );
    }
}
