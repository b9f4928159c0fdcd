//! The Linux backend: /proc, read by a few hand-written parsers (pure functions over the text,
//! unit-tested on fixed samples), and a sock_diag netlink dump for the TCP states of barrage's
//! own network namespace (`tcp/diag.rs`); plus the few libc calls the monitor needs.

pub(crate) mod host;
pub(crate) mod proc;
pub(crate) mod tcp;

use std::time::Duration;

use crate::os::ProcReading;

pub(crate) use host::{host_levels, read_host};
#[cfg(test)]
use proc::{clock_ticks, ticks_to_ns};
pub(crate) use tcp::{listener_pid, TcpCounter};

pub(crate) const SUPPORTED: bool = true;
/// Where the host's CPU counters come from (for the warning when they cannot be read).
pub(crate) const HOST_SOURCE: &str = "/proc/stat";

/// Buffers reused from one reading to the next.
pub(crate) type Scratch = String;

/// A monitored process: its pid and the start time that tells it from a later process that
/// reuses the pid.
pub(crate) struct Process {
    pid: u32,
    starttime: u64,
    comm: String,
}

impl Process {
    /// `None`: no such process, or a zombie.
    pub fn open(pid: u32, buf: &mut Scratch) -> Option<Process> {
        let stat = proc::read_stat(pid, buf).ok()?;
        if stat.exited() {
            return None;
        }
        Some(Process {
            pid,
            starttime: stat.starttime,
            comm: stat.comm,
        })
    }

    /// The command line as /proc shows it; `[comm]` for processes without one.
    pub fn command(&self, _buf: &mut Scratch) -> String {
        proc::command(self.pid).unwrap_or_else(|_| format!("[{}]", self.comm))
    }

    /// A reading of the process (and its descendants); `None`: it is gone.
    pub fn read(
        &mut self,
        include_children: bool,
        with_sockets: bool,
        buf: &mut Scratch,
    ) -> Option<ProcReading> {
        proc::read_process(
            self.pid,
            self.starttime,
            include_children,
            with_sockets,
            buf,
        )
    }
}

/// The warning for a process whose descriptors we may not read.
pub(crate) fn fds_warning(pid: u32) -> String {
    format!(
        "pid {pid}: its /proc/{pid}/fd is not ours to read, so its fds and TCP states read 0 \
         (run as the same user or as root)"
    )
}

/// Cores online (the whole machine, not this process's affinity: `cpu_machine_pct` is a share
/// of the machine).
pub(crate) fn online_cores() -> usize {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if v > 0 {
        return v as usize;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// CPU time used so far by the calling thread (nanosecond precision, unlike /proc's ticks).
pub(crate) fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
        return Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
    }
    Duration::ZERO
}

/// The calling thread's kernel id (its `/proc/self/task/<tid>` directory).
pub(crate) fn thread_id() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as u32 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_become_exact_nanoseconds() {
        let hz = clock_ticks();
        assert_eq!(ticks_to_ns(hz), 1_000_000_000);
        assert_eq!(ticks_to_ns(0), 0);
        // The rate from nanoseconds is the very same f64 as from the ticks.
        let ticks = 150u64;
        let from_ticks = ticks as f64 / hz as f64 / 2.0 * 100.0;
        let from_ns = ticks_to_ns(ticks) as f64 / 1e9 / 2.0 * 100.0;
        assert_eq!(from_ticks.to_bits(), from_ns.to_bits());
    }
}
