//! Time for the workers: one clock each worker is given, a timer heap, and a precise alarm.
//!
//! All times are nanoseconds since the run's start. A worker reads them through its
//! [`TimeSource`] and nowhere else: [`TimeSource::Real`] is the monotonic clock ([`mono_ns`])
//! less the run's start, shared by every worker so that segment boundaries and schedules agree
//! (after inlining, one `match` on a field that never changes and the clock read);
//! [`TimeSource::Virtual`] is a number a test holds, for backoff, timeouts, reconnects and
//! drain counted exactly (see the worker's module docs for how a worker moves it). The precise
//! wake-up, [`Alarm`], is platform code: `os::alarm` says how each platform keeps a loop's
//! sends on time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub use crate::os::alarm::{mono_ns, Alarm};

/// Where a worker reads the time: nanoseconds since the run's start.
#[derive(Clone, Debug)]
pub enum TimeSource {
    /// CLOCK_MONOTONIC, less the run's start `base_ns` on it.
    Real { base_ns: u64 },
    /// Virtual time (tests): a shared cell, starting wherever its holder set it. It moves only
    /// forward, by [`TimeSource::idle_until`] (the worker, when nothing happened for a quiet
    /// moment of real time) or by its holder.
    Virtual(Arc<AtomicU64>),
}

impl TimeSource {
    /// Nanoseconds since the run's start.
    #[inline]
    pub fn now(&self) -> u64 {
        match self {
            Self::Real { base_ns } => mono_ns().saturating_sub(*base_ns),
            Self::Virtual(t) => t.load(Ordering::Acquire),
        }
    }

    /// The run's start on CLOCK_MONOTONIC (what the timerfd alarm is armed against); 0 on
    /// virtual time, which never arms it.
    pub fn base_ns(&self) -> u64 {
        match self {
            Self::Real { base_ns } => *base_ns,
            Self::Virtual(_) => 0,
        }
    }

    pub fn is_virtual(&self) -> bool {
        matches!(self, Self::Virtual(_))
    }

    /// Nothing happened while waiting for `at`: on virtual time, `at` is now (never earlier
    /// than it was). Real time moved by itself.
    #[inline]
    pub fn idle_until(&self, at: u64) {
        if let Self::Virtual(t) = self {
            t.fetch_max(at, Ordering::AcqRel);
        }
    }
}

/// What a timer is for (one byte: the heap's entries stay 16 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum TimerKind {
    /// A connection's next message falls due (its `wake_at`).
    Wake,
    /// A connection's oldest exchange, or its connect, times out (its `timeout_at`).
    Timeout,
    /// The worker's connect pacing.
    Connect,
    /// A session's keep-alive tick (`KeepAlive::at`).
    Tick,
}

/// Timer entry: (when, connection index, kind).
pub type TimerEntry = Reverse<(u64, u32, TimerKind)>;

/// A min-heap of timers. Entries are never removed early: a handler checks whether an entry
/// is still wanted when it fires, which keeps arming O(log n) and cancelling free.
#[derive(Default)]
pub struct Timers {
    heap: BinaryHeap<TimerEntry>,
}

impl Timers {
    pub fn push(&mut self, when: u64, conn: u32, kind: TimerKind) {
        self.heap.push(Reverse((when, conn, kind)));
    }

    pub fn next(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Pop the earliest entry if it is due at `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<(u64, u32, TimerKind)> {
        match self.heap.peek() {
            Some(Reverse((t, _, _))) if *t <= now => self.heap.pop().map(|Reverse(e)| e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_pop_in_time_order_only_when_due() {
        let mut t = Timers::default();
        t.push(30, 1, TimerKind::Wake);
        t.push(10, 2, TimerKind::Timeout);
        t.push(20, 3, TimerKind::Wake);
        assert_eq!(t.next(), Some(10));
        assert_eq!(t.pop_due(5), None);
        assert_eq!(t.pop_due(25), Some((10, 2, TimerKind::Timeout)));
        assert_eq!(t.pop_due(25), Some((20, 3, TimerKind::Wake)));
        assert_eq!(t.pop_due(25), None);
        assert_eq!(t.next(), Some(30));
    }

    #[test]
    fn virtual_time_moves_only_forward_and_only_when_idle() {
        let cell = Arc::new(AtomicU64::new(5));
        let t = TimeSource::Virtual(Arc::clone(&cell));
        assert_eq!(t.now(), 5);
        t.idle_until(3);
        assert_eq!(t.now(), 5);
        t.idle_until(1_000);
        assert_eq!(t.now(), 1_000);
        cell.store(2_000, Ordering::Release);
        assert_eq!(t.now(), 2_000);
        assert_eq!(t.base_ns(), 0);
        let r = TimeSource::Real { base_ns: mono_ns() };
        r.idle_until(u64::MAX);
        assert!(r.now() < 60_000_000_000);
    }
}
