//! What the binary needs from the operating system: open-file limits, a description of the
//! machine for the result, wall-clock time as RFC 3339, and signals.

use crate::usage::Usage;
use barrage_metrics::Environment;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Descriptors besides the connections: std streams, epoll, timerfd and waker per worker,
/// result files, slack.
pub fn fds_needed(connections: u64, threads: usize) -> u64 {
    connections + 4 * threads as u64 + 32
}

/// Raise the soft open-file limit to the hard limit if needed; fail with the remedies if even
/// the hard limit is too low.
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

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

pub fn environment() -> Environment {
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default();
    Environment {
        barrage_version: env!("CARGO_PKG_VERSION").into(),
        os: std::env::consts::OS.into(),
        kernel: read_trim("/proc/sys/kernel/osrelease"),
        cpu_model,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        hostname: read_trim("/proc/sys/kernel/hostname"),
        clocks: vec![clock()],
    }
}

/// This host's wall clock as the kernel keeps it: synchronized or not, and its error bounds.
pub fn clock() -> barrage_metrics::result::ClockRecord {
    let mut rec = barrage_metrics::result::ClockRecord {
        boot_id: read_trim("/proc/sys/kernel/random/boot_id"),
        hostname: read_trim("/proc/sys/kernel/hostname"),
        ..Default::default()
    };
    #[cfg(target_os = "linux")]
    {
        // SAFETY: adjtimex with modes = 0 only reads the kernel's clock state into our struct.
        let mut tx: libc::timex = unsafe { std::mem::zeroed() };
        let state = unsafe { libc::adjtimex(&mut tx) };
        rec.synced = state >= 0 && state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0;
        rec.max_error_us = tx.maxerror.max(0) as u64;
        rec.est_error_us = tx.esterror.max(0) as u64;
    }
    rec
}

/// Now, UTC, as `2026-11-21T10:33:44Z`.
pub fn rfc3339_now() -> String {
    rfc3339(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    )
}

/// Unix seconds as `2026-11-23T08:00:00Z`.
pub fn rfc3339(secs: u64) -> String {
    let secs = secs as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The signals that stop a run: Ctrl-C, `kill`, and the terminal going away.
pub const STOP_SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];

/// Whether `sig` was set to be ignored when barrage started (`nohup` ignores SIGHUP; a shell
/// ignores SIGINT for a background job): such a signal is left ignored.
pub fn ignored(sig: i32) -> bool {
    // SAFETY: a null new action only reads the current one into `old`.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) };
    rc == 0 && old.sa_sigaction == libc::SIG_IGN
}

/// SIGINT, SIGTERM and SIGHUP (each unless it was ignored at start, as `nohup` does) set the
/// returned flag; the second cuts the drain short ([`barrage_engine::hurry`]) and the results
/// are still written; a third ends the process at once (exit 130), the way out of anything
/// that hangs.
pub fn stop_on_signals() -> Arc<AtomicBool> {
    static SEEN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let stop = Arc::new(AtomicBool::new(false));
    for sig in STOP_SIGNALS {
        if ignored(sig) {
            continue;
        }
        let flag = Arc::clone(&stop);
        // SAFETY: the handler only does atomic operations and `_exit`, which are
        // async-signal-safe.
        let _ = unsafe {
            signal_hook::low_level::register(sig, move || {
                let n = SEEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                flag.store(true, std::sync::atomic::Ordering::Relaxed);
                if n == 2 {
                    barrage_engine::hurry();
                } else if n >= 3 {
                    libc::_exit(130);
                }
            })
        };
    }
    stop
}

/// One line on stderr that never panics: once the terminal is gone (a hangup), writing to it
/// fails, and a run must still write its results.
pub fn err_line(line: impl std::fmt::Display) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// A child process of this binary that cannot outlive it: on Linux it gets SIGTERM when
/// this process dies (parent-death signal), however this process ends. SIGINT and SIGTERM are
/// how a parent stops its children, so the child hears them even when this process started
/// with them ignored (a background job, `nohup`): it was this process that was told to stop,
/// and it passes the stop on. SIGHUP keeps the disposition it had.
pub fn child_of_self(exe: &std::path::Path) -> std::process::Command {
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

/// `argv` (program name first) without the program name and without `flags` (each with
/// whether it takes a value, as `--flag V` or `--flag=V`).
pub fn args_without(argv: &[String], flags: &[(&str, bool)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip_value = false;
    for a in argv.iter().skip(1) {
        if skip_value {
            skip_value = false;
            continue;
        }
        let f = a.split_once('=').map_or(a.as_str(), |(f, _)| f);
        if let Some((_, takes)) = flags.iter().find(|(p, _)| *p == f) {
            skip_value = *takes && !a.contains('=');
            continue;
        }
        out.push(a.clone());
    }
    out
}

/// A new directory under the system's temporary directory, named for this process.
pub fn fresh_temp_dir(what: &str) -> std::io::Result<std::path::PathBuf> {
    let dir = temp_name(what);
    std::fs::create_dir(&dir)?;
    Ok(dir)
}

/// A name in the temporary directory no other process or moment uses.
fn temp_name(what: &str) -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!("barrage-{what}-{}-{nanos}", std::process::id()))
}

/// A new file in the temporary directory, already unlinked: it goes with the process.
pub fn unlinked_temp_file(what: &str) -> std::io::Result<std::fs::File> {
    let path = temp_name(what);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_has_the_right_shape() {
        let s = rfc3339_now();
        assert_eq!(s.len(), 20, "{s}");
        assert!(s.starts_with("20") && s.ends_with('Z'));
    }

    #[test]
    fn fd_check_passes_for_few_and_fails_for_absurd_counts() {
        assert!(ensure_fds(fds_needed(10, 2), "-c").is_ok());
        let e = ensure_fds(u64::MAX / 4, "-c").unwrap_err().to_string();
        assert!(
            e.contains("-c needs about") && e.contains("hard limit"),
            "{e}"
        );
    }
}
