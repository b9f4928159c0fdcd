//! Starting the server under test for a run, and stopping it afterwards.
//!
//! The command runs under `sh -c` in a process group of its own, so that a shell wrapper, a
//! pre-forked server's workers and anything else it starts are signalled together, and so that
//! the terminal's Ctrl-C reaches barrage only (which then stops the server on its own terms).
//! Readiness is the port accepting a TCP connection, polled every 20 ms; a port that already
//! accepts before the command starts is an error, or another server would be measured.
//! Stopping is SIGTERM to the group, a grace period, then SIGKILL; dropping a [`Spawned`]
//! kills the group, so no server outlives barrage's handle on it.

mod tail;

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use barrage_metrics::SpawnRecord;

use tail::Tail;

/// How often readiness is probed.
const POLL: Duration = Duration::from_millis(20);
/// The longest one readiness probe may block (a firewalled address drops SYNs).
const PROBE: Duration = Duration::from_millis(200);
/// How long to wait for the stderr pipe to be drained after the command died.
const DRAIN: Duration = Duration::from_millis(300);
const TAIL_LINES: usize = 20;
const SIGTERM: i32 = 15;
const SIGKILL: i32 = 9;

/// A server started by [`spawn_server`]. Dropping it kills its process group.
pub struct Spawned {
    /// The `sh -c` process (or what it exec'd), leader of the server's process group.
    pid: u32,
    command: String,
    ready_after: Duration,
    /// Reaped by `stop` or `drop` (which signal the group first).
    child: Option<Child>,
    stderr: Tail,
    /// Stops the group should barrage die first.
    watchdog: Watchdog,
}

/// How a spawned server ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StopReport {
    /// Its whole process group was gone within the grace period and the leader exited with
    /// status 0 or by the SIGTERM itself (also status 143, a shell reporting that).
    pub exited_cleanly: bool,
    pub exit_code: Option<i32>,
    /// The signal that ended the leader (15 = SIGTERM, 9 = SIGKILL).
    pub signal: Option<i32>,
    /// From SIGTERM until the group was gone (or killed).
    pub took: Duration,
    /// Something in the group outlived the grace period and got SIGKILL.
    pub killed: bool,
}

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("starting a server needs a Unix system (sh, process groups); this is {os}")]
    Unsupported { os: &'static str },
    #[error(
        "{addr} already accepts connections before the server was started: another process \
         holds the port (stop it, or use another port)"
    )]
    PortInUse { addr: SocketAddr },
    #[error("cannot run `sh -c {cmd:?}`: {source}")]
    Start {
        cmd: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "the server command `{cmd}` exited ({}) before {addr} accepted a connection{}",
        status_text(.code, .signal),
        tail_text(.stderr_tail)
    )]
    Exited {
        cmd: String,
        addr: SocketAddr,
        code: Option<i32>,
        signal: Option<i32>,
        stderr_tail: String,
    },
    #[error(
        "the server command `{cmd}` did not accept connections on {addr} within {timeout:?} \
         (it was killed){}",
        tail_text(.stderr_tail)
    )]
    Timeout {
        cmd: String,
        addr: SocketAddr,
        timeout: Duration,
        stderr_tail: String,
    },
}

fn status_text(code: &Option<i32>, signal: &Option<i32>) -> String {
    match (code, signal) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        (None, None) => "unknown status".into(),
    }
}

fn tail_text(tail: &str) -> String {
    if tail.is_empty() {
        "; it wrote nothing to stderr".into()
    } else {
        format!("; the end of its stderr:\n{tail}")
    }
}

/// Runs `cmd` via `sh -c` in its own process group (stdin and stdout to /dev/null, stderr
/// captured) and waits until `port_addr` accepts a TCP connection. If the command exits first,
/// or `ready_timeout` passes (the group is then killed), the error carries the exit status and
/// the last lines of its stderr.
pub fn spawn_server(
    cmd: &str,
    port_addr: SocketAddr,
    ready_timeout: Duration,
) -> Result<Spawned, SpawnError> {
    if !cfg!(unix) {
        return Err(SpawnError::Unsupported {
            os: std::env::consts::OS,
        });
    }
    if TcpStream::connect_timeout(&port_addr, PROBE).is_ok() {
        return Err(SpawnError::PortInUse { addr: port_addr });
    }
    let started = Instant::now();
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let start_error = |source| SpawnError::Start {
        cmd: cmd.to_string(),
        source,
    };
    let mut child = command.spawn().map_err(start_error)?;
    let stderr = Tail::capture(child.stderr.take());
    let pid = child.id();
    let mut watchdog = Watchdog::arm(pid);
    let deadline = started + ready_timeout;
    loop {
        match child.try_wait() {
            Ok(None) => {}
            Ok(Some(status)) => {
                // Whatever it left behind in its group (a backgrounded server) goes too.
                watchdog.disarm();
                signal_group(pid, SIGKILL);
                stderr.wait_closed(DRAIN);
                let (code, signal) = decode(Some(status));
                return Err(SpawnError::Exited {
                    cmd: cmd.to_string(),
                    addr: port_addr,
                    code,
                    signal,
                    stderr_tail: stderr.last_lines(TAIL_LINES),
                });
            }
            Err(e) => {
                watchdog.disarm();
                signal_group(pid, SIGKILL);
                let _ = child.wait();
                return Err(start_error(e));
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            watchdog.disarm();
            signal_group(pid, SIGKILL);
            let _ = child.wait();
            stderr.wait_closed(DRAIN);
            return Err(SpawnError::Timeout {
                cmd: cmd.to_string(),
                addr: port_addr,
                timeout: ready_timeout,
                stderr_tail: stderr.last_lines(TAIL_LINES),
            });
        }
        let probe = left.clamp(Duration::from_millis(1), PROBE);
        if TcpStream::connect_timeout(&port_addr, probe).is_ok() {
            return Ok(Spawned {
                pid,
                command: cmd.to_string(),
                ready_after: started.elapsed(),
                child: Some(child),
                stderr,
                watchdog,
            });
        }
        thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now())));
    }
}

impl Spawned {
    /// The `sh -c` process (or what it exec'd): the leader of the server's process group, and
    /// the pid to monitor (with children, unless the command `exec`s the server).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn command(&self) -> &str {
        &self.command
    }

    /// From the start of the command until its port accepted a connection.
    pub fn ready_after(&self) -> Duration {
        self.ready_after
    }

    /// Whether the server (the group's leader) still runs; false once it exited by itself.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// The last lines it wrote to stderr so far.
    pub fn stderr_tail(&self) -> String {
        self.stderr.last_lines(TAIL_LINES)
    }

    /// SIGTERM to the process group, up to `grace` for the whole group to be gone, then
    /// SIGKILL. A server that already exited by itself is reported as it ended (`took` ~ 0).
    pub fn stop(mut self, grace: Duration) -> StopReport {
        let Some(mut child) = self.child.take() else {
            return StopReport::default();
        };
        let started = Instant::now();
        let deadline = started + grace;
        let mut status = child.try_wait().ok().flatten();
        self.watchdog.disarm();
        signal_group(self.pid, SIGTERM);
        let mut killed = false;
        loop {
            if status.is_none() {
                status = child.try_wait().ok().flatten();
            }
            if status.is_some() && !group_alive(self.pid) {
                break;
            }
            if Instant::now() >= deadline {
                killed = true;
                signal_group(self.pid, SIGKILL);
                if status.is_none() {
                    status = child.wait().ok();
                }
                break;
            }
            thread::sleep(Duration::from_millis(5));
        }
        let (exit_code, signal) = decode(status);
        let clean = exit_code == Some(0) || exit_code == Some(128 + SIGTERM);
        StopReport {
            exited_cleanly: !killed && (clean || signal == Some(SIGTERM)),
            exit_code,
            signal,
            took: started.elapsed(),
            killed,
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            self.watchdog.disarm();
            signal_group(self.pid, SIGKILL);
            let _ = child.wait();
        }
    }
}

impl StopReport {
    /// The result's record of a spawned server (`Spawned::stop` consumed the rest).
    pub fn record(&self, command: &str, pid: u32, ready_after: Duration) -> SpawnRecord {
        SpawnRecord {
            command: command.to_string(),
            pid,
            ready_after_ms: ready_after.as_secs_f64() * 1e3,
            exited_cleanly: self.exited_cleanly,
            exit_code: self.exit_code,
            signal: self.signal,
            stop_took_ms: self.took.as_secs_f64() * 1e3,
            killed: self.killed,
        }
    }
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
        #[cfg(unix)]
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

/// (exit code, terminating signal)
fn decode(status: Option<ExitStatus>) -> (Option<i32>, Option<i32>) {
    let Some(status) = status else {
        return (None, None);
    };
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    #[cfg(not(unix))]
    let signal = None;
    (status.code(), signal)
}

/// Sends `sig` to the process group led by `pgid` (errors such as "no such group" ignored).
fn signal_group(pgid: u32, sig: i32) {
    #[cfg(unix)]
    // SAFETY: kill has no memory-safety preconditions; a negative pid names a process group.
    unsafe {
        libc::kill(-(pgid as libc::pid_t), sig);
    }
    #[cfg(not(unix))]
    let _ = (pgid, sig);
}

/// Whether any live (non-zombie) process remains in the group, once its leader was reaped.
fn group_alive(pgid: u32) -> bool {
    #[cfg(unix)]
    {
        // SAFETY: signal 0 only checks that the group exists and may be signalled.
        let exists = unsafe { libc::kill(-(pgid as libc::pid_t), 0) } == 0
            || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !exists {
            return false;
        }
        // Zombies are still members (until their new parent reaps them): look closer.
        if cfg!(target_os = "linux") {
            return live_member(pgid);
        }
        true
    }
    #[cfg(not(unix))]
    {
        let _ = pgid;
        false
    }
}

/// A non-zombie process whose process group is `pgid` (Linux: one pass over /proc).
fn live_member(pgid: u32) -> bool {
    let Ok(pids) = crate::proc::numeric_entries("/proc") else {
        return true;
    };
    let mut buf = String::new();
    pids.filter_map(|pid| crate::proc::read_stat(pid, &mut buf).ok())
        .any(|s| s.pgrp == pgid as i32 && !s.exited())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_status_and_the_stderr_tail() {
        let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let e = SpawnError::Exited {
            cmd: "exit 3".into(),
            addr,
            code: Some(3),
            signal: None,
            stderr_tail: "boom".into(),
        };
        let text = e.to_string();
        assert!(
            text.contains("exit code 3") && text.ends_with("stderr:\nboom"),
            "{text}"
        );
        let e = SpawnError::Timeout {
            cmd: "sleep 9".into(),
            addr,
            timeout: Duration::from_secs(1),
            stderr_tail: String::new(),
        };
        assert!(e.to_string().contains("wrote nothing"), "{e}");
        assert_eq!(status_text(&None, &Some(9)), "killed by signal 9");
    }

    #[test]
    fn a_record_in_milliseconds() {
        let r = StopReport {
            exited_cleanly: true,
            exit_code: Some(0),
            signal: None,
            took: Duration::from_millis(40),
            killed: false,
        };
        let rec = r.record("srv", 7, Duration::from_millis(250));
        assert_eq!((rec.pid, rec.command.as_str()), (7, "srv"));
        assert_eq!((rec.ready_after_ms, rec.stop_took_ms), (250.0, 40.0));
        assert!(rec.exited_cleanly && !rec.killed);
    }
}
