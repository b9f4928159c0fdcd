//! The few libc calls the monitor needs: clock ticks, core count, the sampler thread's own CPU
//! time and id. Each has a harmless fallback where the call does not exist, so the crate
//! compiles everywhere (the monitor itself refuses to start off Linux).

use std::time::Duration;

/// Units of utime/stime in `/proc/<pid>/stat` (USER_HZ, 100 nearly everywhere).
pub(crate) fn clock_ticks() -> u64 {
    #[cfg(unix)]
    {
        // SAFETY: sysconf has no preconditions.
        let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if v > 0 {
            return v as u64;
        }
    }
    100
}

/// Cores online (the whole machine, not this process's affinity: `cpu_machine_pct` is a share
/// of the machine).
pub(crate) fn online_cores() -> usize {
    #[cfg(unix)]
    {
        // SAFETY: sysconf has no preconditions.
        let v = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        if v > 0 {
            return v as usize;
        }
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// CPU time used so far by the calling thread (nanosecond precision, unlike /proc's ticks).
pub(crate) fn thread_cpu_time() -> Duration {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: ts is a valid, writable timespec.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
        }
    }
    Duration::ZERO
}

/// The calling thread's kernel id (its `/proc/self/task/<tid>` directory).
pub(crate) fn gettid() -> u32 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions and cannot fail.
        unsafe { libc::gettid() as u32 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}
