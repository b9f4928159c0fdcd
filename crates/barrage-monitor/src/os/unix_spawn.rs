//! A spawned server on Unix: `sh -c CMD` in a process group of its own, so that a shell
//! wrapper, a pre-forked server's workers and anything else it starts are signalled together,
//! and so that the terminal's Ctrl-C reaches barrage only (which then stops the server on its
//! own terms). Stopping is SIGTERM to the group, then SIGKILL; a watchdog stops the group
//! should barrage die first.

use std::io;
use std::process::{Child, Command, ExitStatus, Stdio};

/// How the command is run (for messages).
pub(crate) const SHELL: &str = "sh -c";
const SIGTERM: i32 = 15;
const SIGKILL: i32 = 9;

/// The server's process group (led by the `sh -c` process) and its watchdog.
pub(crate) struct Group {
    pgid: u32,
    watchdog: Watchdog,
}

/// Runs `cmd` via `sh -c` in its own process group: stdin and stdout to /dev/null, stderr
/// piped.
pub(crate) fn start(cmd: &str) -> io::Result<(Child, Group)> {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let child = command.spawn()?;
    let pgid = child.id();
    let watchdog = Watchdog::arm(pgid);
    Ok((child, Group { pgid, watchdog }))
}

/// What [`Group::terminate`] sends, in a result's words.
pub(crate) const STOP_REQUEST: &str = "SIGTERM";

impl Group {
    /// SIGTERM to the group. True: a graceful request was sent (always, on Unix).
    pub fn terminate(&mut self) -> bool {
        self.watchdog.disarm();
        signal_group(self.pgid, SIGTERM);
        true
    }

    /// SIGKILL to the group.
    pub fn kill(&mut self) {
        self.watchdog.disarm();
        signal_group(self.pgid, SIGKILL);
    }

    /// Whether any live (non-zombie) process remains in the group, once its leader was reaped.
    pub fn alive(&self) -> bool {
        let pgid = self.pgid;
        // SAFETY: signal 0 only checks that the group exists and may be signalled.
        let exists = unsafe { libc::kill(-(pgid as libc::pid_t), 0) } == 0
            || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !exists {
            return false;
        }
        // Zombies are still members (until their new parent reaps them): look closer.
        #[cfg(target_os = "linux")]
        return super::linux::proc::live_member(pgid);
        #[cfg(not(target_os = "linux"))]
        true
    }
}

/// (exit code, terminating signal)
pub(crate) fn decode(status: Option<ExitStatus>) -> (Option<i32>, Option<i32>) {
    let Some(status) = status else {
        return (None, None);
    };
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    (status.code(), signal)
}

/// An end after the stop request that counts as clean: status 0, or by the SIGTERM itself
/// (also status 143, a shell reporting that).
pub(crate) fn clean_exit(code: Option<i32>, signal: Option<i32>) -> bool {
    code == Some(0) || code == Some(128 + SIGTERM) || signal == Some(SIGTERM)
}

/// Ends the server's process group if barrage itself dies without stopping it (SIGKILL, a
/// crash): a `sh` in its own process group that waits for EOF on a pipe only barrage holds the
/// write end of, then sends the group SIGTERM and, 2 s later, SIGKILL. The kernel closes the
/// pipe whatever way barrage ends; a normal stop disarms it first (killed by its pid), so it
/// never signals a group that is gone.
struct Watchdog(Option<Child>);

impl Watchdog {
    fn arm(pgid: u32) -> Watchdog {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!(
                "read _ ; kill -s TERM -- -{pgid} 2>/dev/null; sleep 2; kill -s KILL -- -{pgid} 2>/dev/null"
            ))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        // Without a watchdog the server is still stopped by every normal end.
        Watchdog(command.spawn().ok())
    }

    fn disarm(&mut self) {
        if let Some(mut w) = self.0.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
    }
}

/// Sends `sig` to the process group led by `pgid` (errors such as "no such group" ignored).
fn signal_group(pgid: u32, sig: i32) {
    // SAFETY: kill has no memory-safety preconditions; a negative pid names a process group.
    unsafe {
        libc::kill(-(pgid as libc::pid_t), sig);
    }
}
