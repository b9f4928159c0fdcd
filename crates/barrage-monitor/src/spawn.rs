//! Starting the server under test for a run, and stopping it afterwards.
//!
//! The command runs under a shell, with everything it starts kept together (`os::spawn`): on
//! Unix `sh -c` in a process group of its own, so that a shell wrapper, a pre-forked server's
//! workers and anything else it starts are signalled together, and so that the terminal's
//! Ctrl-C reaches barrage only (which then stops the server on its own terms); on Windows
//! `cmd /S /C` in a new process group and a job object. Readiness is the port accepting a TCP
//! connection, polled every 20 ms; a port that already accepts before the command starts is an
//! error, or another server would be measured. Stopping is a graceful request (Unix: SIGTERM
//! to the group; Windows: CTRL_BREAK to its console process group), a grace period, then a
//! kill (SIGKILL; Windows: the whole job terminated); dropping a [`Spawned`] kills them, so no
//! server outlives barrage's handle on it.

mod tail;

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::process::Child;
use std::thread;
use std::time::{Duration, Instant};

use barrage_metrics::SpawnRecord;

use crate::os::spawn::{self as os, Group};
use tail::Tail;

/// How often readiness is probed.
const POLL: Duration = Duration::from_millis(20);
/// The longest one readiness probe may block (a firewalled address drops SYNs).
const PROBE: Duration = Duration::from_millis(200);
/// How long to wait for the stderr pipe to be drained after the command died.
const DRAIN: Duration = Duration::from_millis(300);
const TAIL_LINES: usize = 20;

/// A server started by [`spawn_server`]. Dropping it kills its process group (Windows: its
/// job).
pub struct Spawned {
    /// The `sh -c` process (or what it exec'd), leader of the server's process group; on
    /// Windows the `cmd` process.
    pid: u32,
    command: String,
    ready_after: Duration,
    /// Reaped by `stop` or `drop` (which signal the group first).
    child: Option<Child>,
    stderr: Tail,
    /// The process group (Unix, with a watchdog that stops it should barrage die first) or the
    /// job object (Windows, which ends with barrage's handle on it).
    group: Group,
}

/// How a spawned server ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StopReport {
    /// Its whole process group (Windows: job) was gone within the grace period and the
    /// leader exited with status 0 or by the SIGTERM itself (also status 143, a shell
    /// reporting that); on Windows with status 0 or STATUS_CONTROL_C_EXIT (the default end on
    /// CTRL_BREAK).
    pub exited_cleanly: bool,
    pub exit_code: Option<i32>,
    /// The signal that ended the leader (15 = SIGTERM, 9 = SIGKILL); always `None` on Windows.
    pub signal: Option<i32>,
    /// From the stop request until the group was gone (or killed).
    pub took: Duration,
    /// Something in the group outlived the grace period (or could not be asked to stop) and
    /// was killed (SIGKILL; Windows: TerminateJobObject).
    pub killed: bool,
    /// The stop request that was sent (`SIGTERM`, `Ctrl-Break`); `None` when none could be.
    pub asked: Option<&'static str>,
}

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("starting a server needs Unix (sh, process groups) or Windows (cmd); this is {os}")]
    Unsupported { os: &'static str },
    #[error(
        "{addr} already accepts connections before the server was started: another process \
         holds the port (stop it, or use another port)"
    )]
    PortInUse { addr: SocketAddr },
    #[error("cannot run `{} {cmd:?}`: {source}", os::SHELL)]
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

/// Runs `cmd` via `sh -c` in its own process group (Windows: `cmd /S /C` in a new process
/// group and a job object; see `os::spawn`), stdin and stdout to the null device, stderr
/// captured, and waits until `port_addr` accepts a TCP connection. If the command exits first,
/// or `ready_timeout` passes (the group is then killed), the error carries the exit status and
/// the last lines of its stderr.
pub fn spawn_server(
    cmd: &str,
    port_addr: SocketAddr,
    ready_timeout: Duration,
) -> Result<Spawned, SpawnError> {
    if TcpStream::connect_timeout(&port_addr, PROBE).is_ok() {
        return Err(SpawnError::PortInUse { addr: port_addr });
    }
    let started = Instant::now();
    let start_error = |source| SpawnError::Start {
        cmd: cmd.to_string(),
        source,
    };
    let (mut child, mut group) = os::start(cmd).map_err(start_error)?;
    let stderr = Tail::capture(child.stderr.take());
    let pid = child.id();
    let deadline = started + ready_timeout;
    loop {
        match child.try_wait() {
            Ok(None) => {}
            Ok(Some(status)) => {
                // Whatever it left behind in its group (a backgrounded server) goes too.
                group.kill();
                stderr.wait_closed(DRAIN);
                let (code, signal) = os::decode(Some(status));
                return Err(SpawnError::Exited {
                    cmd: cmd.to_string(),
                    addr: port_addr,
                    code,
                    signal,
                    stderr_tail: stderr.last_lines(TAIL_LINES),
                });
            }
            Err(e) => {
                group.kill();
                let _ = child.wait();
                return Err(start_error(e));
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            group.kill();
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
                group,
            });
        }
        thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now())));
    }
}

impl Spawned {
    /// The `sh -c` process (or what it exec'd): the leader of the server's process group, and
    /// the pid to monitor (with children, unless the command `exec`s the server). On Windows
    /// the `cmd` process: monitor it with children.
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

    /// SIGTERM to the process group (Windows: CTRL_BREAK), up to `grace` for the whole group
    /// to be gone, then SIGKILL (Windows: the job terminated). A server that already exited by
    /// itself is reported as it ended (`took` ~ 0). On Windows, a server that cannot be sent
    /// CTRL_BREAK (barrage has no console) is killed at once.
    pub fn stop(mut self, grace: Duration) -> StopReport {
        let Some(mut child) = self.child.take() else {
            return StopReport::default();
        };
        let started = Instant::now();
        let mut status = child.try_wait().ok().flatten();
        let asked = self.group.terminate();
        let deadline = if asked { started + grace } else { started };
        let mut killed = false;
        loop {
            if status.is_none() {
                status = child.try_wait().ok().flatten();
            }
            if status.is_some() && !self.group.alive() {
                break;
            }
            if Instant::now() >= deadline {
                killed = true;
                self.group.kill();
                if status.is_none() {
                    status = child.wait().ok();
                }
                break;
            }
            thread::sleep(Duration::from_millis(5));
        }
        let (exit_code, signal) = os::decode(status);
        StopReport {
            exited_cleanly: !killed && os::clean_exit(exit_code, signal),
            exit_code,
            signal,
            took: started.elapsed(),
            killed,
            asked: asked.then_some(os::STOP_REQUEST),
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            self.group.kill();
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
            stop_request: self.asked.unwrap_or_default().to_string(),
        }
    }
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
            asked: Some("SIGTERM"),
        };
        let rec = r.record("srv", 7, Duration::from_millis(250));
        assert_eq!((rec.pid, rec.command.as_str()), (7, "srv"));
        assert_eq!((rec.ready_after_ms, rec.stop_took_ms), (250.0, 40.0));
        assert!(rec.exited_cleanly && !rec.killed);
        assert_eq!(rec.ending(), "exited cleanly 40 ms after SIGTERM");
        let killed = StopReport {
            killed: true,
            exited_cleanly: false,
            took: Duration::from_millis(10_000),
            asked: Some("Ctrl-Break"),
            ..r
        };
        let rec = killed.record("srv", 7, Duration::ZERO);
        assert_eq!(
            rec.ending(),
            "ignored Ctrl-Break and was killed after 10.0 s"
        );
        let rec = StopReport {
            asked: None,
            ..killed
        }
        .record("srv", 7, Duration::ZERO);
        assert_eq!(rec.stop_request, "");
        assert!(
            rec.ending().starts_with("was killed: no stop request"),
            "{}",
            rec.ending()
        );
        // A result from before the field: SIGTERM.
        let old: barrage_metrics::SpawnRecord =
            serde_json::from_str(r#"{"command":"s","pid":1,"ready_after_ms":1,"exited_cleanly":true,"exit_code":0,"signal":null,"stop_took_ms":5,"killed":false}"#).unwrap();
        assert_eq!(old.ending(), "exited cleanly 5 ms after SIGTERM");
    }
}
