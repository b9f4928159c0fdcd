//! The Unix side of `sys` (Linux first; the other Unixes build, and miss what only /proc has).

use super::stop_signal_seen;
use crate::usage::Usage;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux but not on every Unix
pub fn ensure_fds(needed: u64, flag: &str) -> Result<(), Usage> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to our own struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(()); // cannot tell; let connects report local_fd_exhausted
    }
    if lim.rlim_cur as u64 >= needed {
        return Ok(());
    }
    let want = (needed as libc::rlim_t).min(lim.rlim_max);
    let raised = libc::rlimit {
        rlim_cur: want,
        rlim_max: lim.rlim_max,
    };
    // SAFETY: as above.
    let ok = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0;
    if ok && want as u64 >= needed {
        return Ok(());
    }
    Err(Usage::says(
        flag,
        format!(
            "needs about {needed} open files but this process may open at most {} \
             (hard limit); lower {flag}, raise the hard limit (ulimit -Hn, limits.conf, systemd \
             LimitNOFILE), or split the load over several processes",
            lim.rlim_max
        ),
    ))
}

#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux but not on every Unix
pub fn nofile_hard() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit with a valid pointer to our own struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        lim.rlim_max as u64
    } else {
        u64::MAX
    }
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

pub fn wine_version() -> Option<String> {
    None
}

pub fn kernel() -> String {
    read_trim("/proc/sys/kernel/osrelease")
}

pub fn hostname() -> String {
    read_trim("/proc/sys/kernel/hostname")
}

pub fn boot_id() -> String {
    read_trim("/proc/sys/kernel/random/boot_id")
}

pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default()
}

pub fn clock_state(rec: &mut barrage_metrics::result::ClockRecord) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: adjtimex with modes = 0 only reads the kernel's clock state into our struct.
        let mut tx: libc::timex = unsafe { std::mem::zeroed() };
        let state = unsafe { libc::adjtimex(&mut tx) };
        rec.synced = state >= 0 && state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0;
        rec.max_error_us = tx.maxerror.max(0) as u64;
        rec.est_error_us = tx.esterror.max(0) as u64;
    }
    #[cfg(not(target_os = "linux"))]
    let _ = rec;
}

/// The signals that stop a run: Ctrl-C, `kill`, and the terminal going away.
const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Whether `sig` was set to be ignored when barrage started (`nohup` ignores SIGHUP; a shell
/// ignores SIGINT for a background job): such a signal is left ignored.
fn ignored(sig: i32) -> bool {
    // SAFETY: a null new action only reads the current one into `old`.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) };
    rc == 0 && old.sa_sigaction == libc::SIG_IGN
}

pub fn on_stop_signals(stop: Arc<AtomicBool>, signalled: Arc<AtomicBool>) {
    for sig in STOP_SIGNALS {
        if ignored(sig) {
            continue;
        }
        let (stop, signalled) = (Arc::clone(&stop), Arc::clone(&signalled));
        // SAFETY: the handler only does atomic operations and `_exit`, which are
        // async-signal-safe (`hurry` is an atomic store).
        let _ = unsafe {
            signal_hook::low_level::register(sig, move || {
                if stop_signal_seen(&stop, &signalled) {
                    libc::_exit(130);
                }
            })
        };
    }
}

pub fn child_of_self(exe: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(exe);
    // SAFETY: signal() and prctl() are async-signal-safe; the child only resets two signal
    // dispositions and sets its parent-death signal.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut c, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    c
}

pub fn interrupt(pid: u32) {
    // SAFETY: kill on our own child's pid.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
}

pub fn terminate(pid: u32) {
    // SAFETY: kill on our own child's pid.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
}

pub fn process_cpu_s() -> Option<f64> {
    // SAFETY: getrusage writes into the struct we own; a zeroed rusage is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return None;
    }
    let s = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    Some(s(ru.ru_utime) + s(ru.ru_stime))
}

pub fn try_lock(f: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this process owns.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Whether this process is in the foreground process group of the terminal on `fd`.
fn in_foreground(fd: i32) -> bool {
    // SAFETY: plain queries, no memory handed over.
    let (tty, own) = unsafe { (libc::tcgetpgrp(fd), libc::getpgrp()) };
    tty != -1 && tty == own
}

pub fn owns_terminal() -> bool {
    in_foreground(0) && in_foreground(1)
}

pub struct NoTtyStop {
    old: libc::sigset_t,
}

impl NoTtyStop {
    pub fn new() -> NoTtyStop {
        // SAFETY: the sets are initialized by sigemptyset/pthread_sigmask before use, and
        // pthread_sigmask changes only this thread's mask.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTTOU);
            libc::sigaddset(&mut set, libc::SIGTTIN);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            NoTtyStop { old }
        }
    }
}

impl Drop for NoTtyStop {
    fn drop(&mut self) {
        // SAFETY: restores this thread's own mask, saved by `new`.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut());
        }
    }
}

pub fn kernel_file(p: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt as _;
        const PROC_SUPER_MAGIC: i64 = 0x9fa0;
        const SYSFS_MAGIC: i64 = 0x6265_6572;
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: `c` is a valid NUL-terminated path and `st` a properly sized out-parameter.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
            return false;
        }
        #[allow(clippy::unnecessary_cast)]
        let kind = st.f_type as i64;
        kind == PROC_SUPER_MAGIC || kind == SYSFS_MAGIC
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = p;
        false
    }
}

/// A new file at `path`, already unlinked: it goes with the process.
pub fn unlinked_temp_file(path: &Path) -> std::io::Result<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)?;
    std::fs::remove_file(path)?;
    Ok(f)
}
