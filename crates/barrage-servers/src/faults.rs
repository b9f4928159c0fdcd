//! Fault knobs and timers shared by every reference server, as plain time arithmetic: the
//! one-time stall window, saturating deadlines and a per-thread timer heap.
//!
//! Key decision: timers are never cancelled. A connection arms one for a deadline and, when it
//! fires, the owner checks whether the connection (slot *and* id, since slots are reused) still
//! wants it; a stale entry costs one heap pop instead of a cancellation structure. Nothing here
//! touches a socket, so it is tested with made-up instants.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

/// Stands in for "never" when a user-given duration does not fit an `Instant`.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// `now + length`, saturating at [`FOREVER`] instead of panicking on absurd user input.
pub(crate) fn after(now: Instant, length: Duration) -> Instant {
    now.checked_add(length).unwrap_or_else(|| now + FOREVER)
}

/// The one period during which the server echoes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stall {
    start: Instant,
    end: Instant,
}

impl Stall {
    /// The stall `at` after `started`, lasting `length`; `None` when there is none to do.
    pub(crate) fn new(started: Instant, at: Option<Duration>, length: Duration) -> Option<Stall> {
        let start = started.checked_add(at?)?;
        if length.is_zero() {
            return None;
        }
        Some(Stall {
            start,
            end: after(start, length),
        })
    }

    pub(crate) fn is_active(&self, now: Instant) -> bool {
        self.start <= now && now < self.end
    }

    /// When the stall next starts or ends after `now`, if ever.
    pub(crate) fn next_edge(&self, now: Instant) -> Option<Instant> {
        if now < self.start {
            Some(self.start)
        } else if now < self.end {
            Some(self.end)
        } else {
            None
        }
    }
}

/// Deadlines of connections, earliest first: (due, slot, connection id).
#[derive(Debug, Default)]
pub(crate) struct Timers {
    heap: BinaryHeap<Reverse<(Instant, usize, u64)>>,
}

impl Timers {
    /// Wakes connection (`slot`, `conn_id`) at `due`.
    pub(crate) fn arm(&mut self, due: Instant, slot: usize, conn_id: u64) {
        self.heap.push(Reverse((due, slot, conn_id)));
    }

    /// The earliest deadline, if any.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((due, _, _))| *due)
    }

    /// The earliest entry if it is due at `now`, as (slot, connection id).
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<(usize, u64)> {
        let Reverse((due, _, _)) = self.heap.peek()?;
        if *due > now {
            return None;
        }
        self.heap.pop().map(|Reverse((_, slot, id))| (slot, id))
    }
}

/// The service-time knob: one thread serves one request at a time, each taking a fixed time
/// (a timer, not CPU), so a thread completes at most one request per service time whatever the
/// load: a server of known capacity (threads / service time) for breaking-point searches.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Service {
    length: Duration,
    /// When the thread is free again; `None` before its first request.
    free_at: Option<Instant>,
}

impl Service {
    pub(crate) fn new(length: Duration) -> Service {
        Service {
            length,
            free_at: None,
        }
    }

    /// When a request read at `now` is done: after the ones before it, then its own length.
    pub(crate) fn done_at(&mut self, now: Instant) -> Instant {
        let start = self.free_at.map_or(now, |free| free.max(now));
        let done = after(start, self.length);
        self.free_at = Some(done);
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_time_serves_one_request_at_a_time() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut s = Service::new(ms(2));
        // Three requests at once: done 2, 4 and 6 ms later (capacity 500/s).
        let done: Vec<_> = (0..3).map(|_| s.done_at(t0) - t0).collect();
        assert_eq!(done, vec![ms(2), ms(4), ms(6)]);
        // An idle thread starts the next one when it arrives.
        assert_eq!(s.done_at(t0 + ms(10)) - t0, ms(12));
        assert_eq!(s.done_at(t0 + ms(11)) - t0, ms(14));
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn stall_is_active_from_start_until_end() {
        let t0 = Instant::now();
        let stall = Stall::new(t0, Some(100 * MS), 50 * MS).expect("a stall");
        assert!(!stall.is_active(t0));
        assert!(!stall.is_active(t0 + 99 * MS));
        assert!(stall.is_active(t0 + 100 * MS));
        assert!(stall.is_active(t0 + 149 * MS));
        assert!(!stall.is_active(t0 + 150 * MS));
    }

    #[test]
    fn stall_next_edge_is_start_then_end_then_none() {
        let t0 = Instant::now();
        let stall = Stall::new(t0, Some(100 * MS), 50 * MS).expect("a stall");
        assert_eq!(stall.next_edge(t0), Some(t0 + 100 * MS));
        assert_eq!(stall.next_edge(t0 + 120 * MS), Some(t0 + 150 * MS));
        assert_eq!(stall.next_edge(t0 + 150 * MS), None);
    }

    #[test]
    fn no_stall_without_start_or_length() {
        let t0 = Instant::now();
        assert_eq!(Stall::new(t0, None, 50 * MS), None);
        assert_eq!(Stall::new(t0, Some(MS), Duration::ZERO), None);
    }

    #[test]
    fn endless_stall_does_not_overflow() {
        let t0 = Instant::now();
        let stall = Stall::new(t0, Some(MS), Duration::MAX).expect("a stall");
        assert!(stall.is_active(t0 + 3600 * 1000 * MS));
    }

    #[test]
    fn timers_pop_in_due_order_only_when_due() {
        let t0 = Instant::now();
        let mut timers = Timers::default();
        timers.arm(t0 + 30 * MS, 3, 30);
        timers.arm(t0 + 10 * MS, 1, 10);
        timers.arm(t0 + 20 * MS, 2, 20);
        assert_eq!(timers.next_due(), Some(t0 + 10 * MS));
        assert_eq!(timers.pop_due(t0 + 5 * MS), None);
        assert_eq!(timers.pop_due(t0 + 25 * MS), Some((1, 10)));
        assert_eq!(timers.pop_due(t0 + 25 * MS), Some((2, 20)));
        assert_eq!(timers.pop_due(t0 + 25 * MS), None);
        assert_eq!(timers.next_due(), Some(t0 + 30 * MS));
    }
}
