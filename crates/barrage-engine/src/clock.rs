//! Time for the workers: one clock each worker is given, a timer heap, and a precise alarm.
//!
//! All times are nanoseconds since the run's start. A worker reads them through its
//! [`TimeSource`] and nowhere else: [`TimeSource::Real`] is CLOCK_MONOTONIC less the run's
//! start, shared by every worker so that segment boundaries and schedules agree (after
//! inlining, one `match` on a field that never changes and the `clock_gettime` call);
//! [`TimeSource::Virtual`] is a number a test holds, for backoff, timeouts, reconnects and drain
//! counted exactly (see the worker's module docs for how a worker moves it). The alarm is a timerfd armed at an absolute
//! time (nanosecond resolution, timer slack set to 1 ns for worker threads), because epoll's
//! own timeout is millisecond-granular and an open-loop send that is up to 1 ms late would
//! show up in latency measured from the intended time. Elsewhere it falls back to the poll
//! timeout.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Nanoseconds on CLOCK_MONOTONIC.
#[inline]
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

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

/// Timer entry: (when, connection index, kind). Kinds are the worker's constants.
pub type TimerEntry = Reverse<(u64, u32, u8)>;

/// A min-heap of timers. Entries are never removed early: a handler checks whether an entry
/// is still wanted when it fires, which keeps arming O(log n) and cancelling free.
#[derive(Default)]
pub struct Timers {
    heap: BinaryHeap<TimerEntry>,
}

impl Timers {
    pub fn push(&mut self, when: u64, conn: u32, kind: u8) {
        self.heap.push(Reverse((when, conn, kind)));
    }

    pub fn next(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Pop the earliest entry if it is due at `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<(u64, u32, u8)> {
        match self.heap.peek() {
            Some(Reverse((t, _, _))) if *t <= now => self.heap.pop().map(|Reverse(e)| e),
            _ => None,
        }
    }
}

/// A timerfd armed at absolute monotonic times; readable when it fires.
pub struct Alarm {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
    base_ns: u64,
    armed: u64,
}

impl Alarm {
    /// `base_ns` is the run's start on the monotonic clock.
    #[cfg(target_os = "linux")]
    pub fn new(base_ns: u64) -> io::Result<Self> {
        use std::os::fd::FromRawFd;
        // SAFETY: plain syscalls; the fd is checked and then owned by OwnedFd.
        let fd = unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            // SAFETY: fd is a fresh, valid descriptor that nothing else owns.
            fd: unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) },
            base_ns,
            armed: u64::MAX,
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn new(base_ns: u64) -> io::Result<Self> {
        Ok(Self {
            base_ns,
            armed: u64::MAX,
        })
    }

    #[cfg(target_os = "linux")]
    pub fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        Some(self.fd.as_raw_fd())
    }

    #[cfg(not(target_os = "linux"))]
    pub fn raw_fd(&self) -> Option<i32> {
        None
    }

    /// Make sure the alarm fires at `at` (run time); re-arms only when the time changes.
    /// Returns the poll timeout to use: `None` with a timerfd, a duration without one.
    pub fn arm(&mut self, at: u64, now: u64) -> Option<std::time::Duration> {
        if self.raw_fd().is_none() {
            return Some(std::time::Duration::from_nanos(at.saturating_sub(now)));
        }
        if at != self.armed {
            self.armed = at;
            self.set(at);
        }
        None
    }

    /// Acknowledge a firing (drain the timerfd's counter).
    pub fn fired(&mut self) {
        #[cfg(target_os = "linux")]
        {
            let mut buf = [0u8; 8];
            use std::os::fd::AsRawFd;
            // SAFETY: reading 8 bytes into our buffer from our own non-blocking timerfd.
            unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        }
        self.armed = u64::MAX;
    }

    #[cfg(target_os = "linux")]
    fn set(&self, at: u64) {
        use std::os::fd::AsRawFd;
        let abs = self.base_ns.saturating_add(at).max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (abs / 1_000_000_000) as libc::time_t,
                tv_nsec: (abs % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: valid timerfd and a fully initialised itimerspec.
        unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
    }

    #[cfg(not(target_os = "linux"))]
    fn set(&self, _at: u64) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_pop_in_time_order_only_when_due() {
        let mut t = Timers::default();
        t.push(30, 1, 0);
        t.push(10, 2, 1);
        t.push(20, 3, 0);
        assert_eq!(t.next(), Some(10));
        assert_eq!(t.pop_due(5), None);
        assert_eq!(t.pop_due(25), Some((10, 2, 1)));
        assert_eq!(t.pop_due(25), Some((20, 3, 0)));
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

    #[test]
    fn monotonic_clock_advances() {
        let a = mono_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(mono_ns() - a >= 2_000_000);
    }
}
