//! What the binary needs from the operating system: open-file limits, a description of the
//! machine for the result, wall-clock time as RFC 3339, signals (Unix) or console control
//! events (Windows), child processes, and the terminal.
//!
//! This folder is the binary's only platform code: `unix.rs` and `windows.rs` give the same
//! functions, and nothing outside `sys` names a platform.

#[cfg_attr(unix, path = "unix.rs")]
#[cfg_attr(windows, path = "windows.rs")]
mod imp;

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
/// the hard limit is too low. (Windows has no such limit: a process may hold millions of
/// handles.)
pub fn ensure_fds(needed: u64, flag: &str) -> Result<(), Usage> {
    imp::ensure_fds(needed, flag)
}

/// The most files one process may open (the hard limit), `u64::MAX` when there is none.
pub fn nofile_hard() -> u64 {
    imp::nofile_hard()
}

pub fn environment() -> Environment {
    Environment {
        barrage_version: env!("CARGO_PKG_VERSION").into(),
        os: std::env::consts::OS.into(),
        kernel: match wine_version() {
            Some(wine) => format!("{} (wine {wine})", imp::kernel()),
            None => imp::kernel(),
        },
        cpu_model: imp::cpu_model(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        hostname: imp::hostname(),
        clocks: vec![clock()],
    }
}

/// This host's wall clock as the kernel keeps it: synchronized or not, and its error bounds
/// (Linux; elsewhere only the host's name, and the clock counts as unsynchronized).
pub fn clock() -> barrage_metrics::result::ClockRecord {
    let mut rec = barrage_metrics::result::ClockRecord {
        boot_id: imp::boot_id(),
        hostname: imp::hostname(),
        ..Default::default()
    };
    imp::clock_state(&mut rec);
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

/// The run's stop flags, set from outside: `stop` by anything that ends the run early,
/// `signalled` by the operating system only (Ctrl-C, `kill`, the terminal or console going
/// away), not by the dashboard's `q`.
pub struct StopFlags {
    pub stop: Arc<AtomicBool>,
    pub signalled: Arc<AtomicBool>,
}

/// Unix: SIGINT, SIGTERM and SIGHUP (each unless it was ignored at start, as `nohup` does);
/// Windows: Ctrl-C, Ctrl-Break and the console closing (or logoff, shutdown). The first sets
/// both flags; the second cuts the drain short ([`barrage_engine::hurry`]) and the results
/// are still written; a third ends the process at once (exit 130), the way out of anything
/// that hangs. A closing console gives a process about 5 s: it stops and hurries at once.
pub fn stop_on_signals() -> StopFlags {
    let flags = StopFlags {
        stop: Arc::new(AtomicBool::new(false)),
        signalled: Arc::new(AtomicBool::new(false)),
    };
    imp::on_stop_signals(Arc::clone(&flags.stop), Arc::clone(&flags.signalled));
    flags
}

/// What a stop signal does, the nth time (shared by both platforms' handlers): set the flags;
/// the second hurries the drain; from the third, `true`: end the process now.
fn stop_signal_seen(stop: &AtomicBool, signalled: &AtomicBool) -> bool {
    use std::sync::atomic::{AtomicU32, Ordering};
    static SEEN: AtomicU32 = AtomicU32::new(0);
    let n = SEEN.fetch_add(1, Ordering::Relaxed) + 1;
    stop.store(true, Ordering::Relaxed);
    signalled.store(true, Ordering::Relaxed);
    if n == 2 {
        barrage_engine::hurry();
    }
    n >= 3
}

/// One line on stderr that never panics: once the terminal is gone (a hangup), writing to it
/// fails, and a run must still write its results.
pub fn err_line(line: impl std::fmt::Display) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// A child process of this binary that cannot outlive it and that [`interrupt`] and
/// [`terminate`] reach: on Linux it gets SIGTERM when this process dies (parent-death signal),
/// and it hears SIGINT and SIGTERM even when this process started with them ignored (a
/// background job, `nohup`): it was this process that was told to stop, and it passes the stop
/// on. On Windows it is its own console process group (Ctrl-Break reaches it alone) in a job
/// that ends with this process.
pub fn child_of_self(exe: &std::path::Path) -> std::process::Command {
    imp::child_of_self(exe)
}

/// Asks a child made by [`child_of_self`] to end its run early and write what it has (SIGINT;
/// Ctrl-Break on Windows).
pub fn interrupt(child: &std::process::Child) {
    imp::interrupt(child.id())
}

/// Asks a child made by [`child_of_self`] to stop (SIGTERM; Ctrl-Break on Windows, where a
/// console program has no other polite stop).
pub fn terminate(child: &std::process::Child) {
    imp::terminate(child.id())
}

/// User + system CPU seconds of this process so far.
pub fn process_cpu_s() -> Option<f64> {
    imp::process_cpu_s()
}

/// An exclusive lock on `f`, if no other process holds one; it goes when `f` is closed.
pub fn try_lock(f: &std::fs::File) -> bool {
    imp::try_lock(f)
}

/// Whether the terminal on stdin and stdout is this process's to draw on: Unix, whether this
/// process is in the terminal's foreground process group; Windows has no background jobs.
pub fn owns_terminal() -> bool {
    imp::owns_terminal()
}

/// While it lives, a terminal call from outside the terminal's foreground group goes through
/// or fails with EIO instead of stopping the process (SIGTTOU and SIGTTIN blocked in this
/// thread). Nothing to do on Windows.
pub struct NoTtyStop(#[allow(dead_code)] imp::NoTtyStop);

impl NoTtyStop {
    pub fn new() -> NoTtyStop {
        NoTtyStop(imp::NoTtyStop::new())
    }
}

/// Wine's version when this Windows build runs under wine; `None` elsewhere.
pub fn wine_version() -> Option<String> {
    imp::wine_version()
}

/// Files of /proc and /sys accept an open for writing (as root) and then fail every write.
pub fn kernel_file(p: &std::path::Path) -> bool {
    imp::kernel_file(p)
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
    imp::unlinked_temp_file(&temp_name(what))
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
        if nofile_hard() == u64::MAX {
            return; // Windows: no limit to exceed
        }
        let e = ensure_fds(u64::MAX / 4, "-c").unwrap_err().to_string();
        assert!(
            e.contains("-c needs about") && e.contains("hard limit"),
            "{e}"
        );
    }
}
