//! The live dashboard, driven in a real pseudo-terminal: tmux runs `barrage` in a detached
//! 120x40 session on a private socket, the test reads the screen with `capture-pane` and types
//! `q`. Skipped (with a message) when tmux is missing, unless CI is set.

use crate::common::{self, available, read_json, s, status_lines, EchoServer};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A tmux server of our own (`-L`), its one session killed by name when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux")
    }

    fn capture(&self) -> String {
        let out = self.cmd(&["capture-pane", "-p", "-t", "dash"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Polls the screen until `pred` holds; panics with the last screen after `limit`.
    fn wait_for(&self, limit: Duration, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let screen = self.capture();
            if pred(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-session", "-t", "dash"]);
    }
}

fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A dashboard run in a 120x40 tmux pane against a fresh echo server; `None` (skipped) without
/// tmux outside CI. The shell outlives barrage so that the pane (and what it shows after the
/// run) stays; barrage's exit code lands in `exit`.
struct Dash {
    tmux: Tmux,
    server: EchoServer,
    json: std::path::PathBuf,
    exit: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn start_dashboard(tag: &str, args: impl Fn(&EchoServer) -> String) -> Option<Dash> {
    start_in_pane(tag, "", args)
}

/// [`start_dashboard`] with a command in front of barrage's (`timeout 60`).
fn start_in_pane(tag: &str, prefix: &str, args: impl Fn(&EchoServer) -> String) -> Option<Dash> {
    if !available("tmux", tmux_available()) {
        return None;
    }
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("result.json");
    let exit = dir.path().join("exit-code");
    let script = format!(
        "{prefix} '{}' {} {} --json '{}'; echo $? > '{}'; exec sleep 60",
        common::bin().display(),
        server.url(),
        args(&server),
        json.display(),
        exit.display()
    );
    let tmux = Tmux {
        socket: format!("barrage-test{tag}-{}", std::process::id()),
    };
    let out = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "dash",
        "-x",
        "120",
        "-y",
        "40",
        "sh",
        "-c",
        &script,
    ]);
    assert!(out.status.success(), "tmux new-session: {out:?}");
    Some(Dash {
        tmux,
        server,
        json,
        exit,
        _dir: dir,
    })
}

fn is_dashboard(screen: &str) -> bool {
    screen.contains("(q: stop)") && screen.contains("req/s") && screen.contains("elapsed")
}

fn header(screen: &str) -> &str {
    screen
        .lines()
        .find(|l| l.contains("elapsed"))
        .unwrap_or_default()
}

fn wait_file(path: &Path, limit: Duration) -> Option<String> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(text) = std::fs::read_to_string(path) {
            if text.ends_with('\n') {
                return Some(text);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[test]
fn dashboard_renders_updates_and_q_stops_the_run_with_files_written() {
    let Some(Dash {
        tmux,
        server,
        json,
        exit,
        _dir,
    }) = start_dashboard("", |_| "-c 5 -d 20s".into())
    else {
        return;
    };

    let first = tmux.wait_for(Duration::from_secs(10), "the dashboard", |sc| {
        is_dashboard(sc) && sc.contains("running")
    });
    assert!(first.contains("tcp ping-pong"), "{first}");
    std::thread::sleep(Duration::from_millis(1300));
    let second = tmux.capture();
    assert!(is_dashboard(&second), "dashboard gone early:\n{second}");
    assert_ne!(
        header(&first),
        header(&second),
        "elapsed time did not move in 1.3 s"
    );

    let out = tmux.cmd(&["send-keys", "-t", "dash", "q"]);
    assert!(out.status.success(), "tmux send-keys: {out:?}");
    let code = wait_file(&exit, Duration::from_secs(5))
        .unwrap_or_else(|| panic!("barrage still running 5 s after q:\n{}", tmux.capture()));
    assert_eq!(code.trim(), "0", "exit code {code}:\n{}", tmux.capture());
    let status = s(&read_json(&json), "status").to_string();
    assert_eq!(status, "stopped");
    let after = tmux.capture();
    assert!(!is_dashboard(&after), "dashboard still on screen:\n{after}");
    assert!(after.contains("Exchanges     sent"), "no summary:\n{after}");
    drop(tmux);
    server.stop();
}

/// `q` used to report "interrupted by a signal", exit 130 and skip the recovery window. It is
/// a user stop: the recovery window runs (the dashboard says so), a second `q` skips it, the
/// exit code follows the normal rules (0 here) and the result says "stopped by the user".
#[test]
fn q_is_a_user_stop_that_keeps_the_recovery_window() {
    let Some(Dash {
        tmux,
        server,
        json,
        exit,
        _dir,
    }) = start_dashboard("-q", |server| {
        format!("-c 2 -d 20s --monitor {} --recovery 60s", server.pid())
    })
    else {
        return;
    };
    tmux.wait_for(Duration::from_secs(10), "the dashboard", |sc| {
        is_dashboard(sc) && sc.contains("running")
    });
    assert!(tmux.cmd(&["send-keys", "-t", "dash", "q"]).status.success());
    // The load stops; the 60 s recovery window runs, and the dashboard says how to skip it.
    tmux.wait_for(Duration::from_secs(10), "the recovery window", |sc| {
        sc.contains("recovery (q skips)")
    });
    assert!(wait_file(&exit, Duration::from_millis(500)).is_none());
    assert!(tmux.cmd(&["send-keys", "-t", "dash", "q"]).status.success());
    let code = wait_file(&exit, Duration::from_secs(10))
        .unwrap_or_else(|| panic!("the second q did not end the run:\n{}", tmux.capture()));
    assert_eq!(code.trim(), "0", "exit code {code}:\n{}", tmux.capture());
    let v = read_json(&json);
    assert_eq!(s(&v, "status"), "stopped");
    let msg = s(&v, "message");
    assert!(msg.starts_with("stopped by the user at "), "{msg}");
    // The summary's head, from the pane's history.
    let out = tmux.cmd(&["capture-pane", "-p", "-S", "-300", "-t", "dash"]);
    let after = String::from_utf8_lossy(&out.stdout);
    assert!(after.contains("STOPPED: stopped by the user at"), "{after}");
    drop(tmux);
    server.stop();
}

/// Issue 24: `timeout N barrage ...` typed in a terminal was stopped (state T) before it
/// connected: `timeout` runs barrage in a process group of its own, outside the terminal's
/// foreground group, and the dashboard's raw mode stopped it with SIGTTOU. Outside the
/// foreground group it now runs as with --no-tui: status lines, and it ends by itself.
#[test]
fn a_run_outside_the_terminals_foreground_group_is_not_stopped_and_shows_status_lines() {
    let Some(Dash {
        tmux,
        server,
        json,
        exit,
        _dir,
    }) = start_in_pane("-bg", "timeout 60", |_| "-c 2 -d 2s".into())
    else {
        return;
    };
    let code = wait_file(&exit, Duration::from_secs(30)).unwrap_or_else(|| {
        panic!(
            "barrage did not end by itself (stopped by the terminal?):\n{}",
            tmux.capture()
        )
    });
    assert_eq!(code.trim(), "0", "exit code {code}:\n{}", tmux.capture());
    assert_eq!(s(&read_json(&json), "status"), "completed");
    let out = tmux.cmd(&["capture-pane", "-p", "-S", "-300", "-t", "dash"]);
    let after = String::from_utf8_lossy(&out.stdout);
    assert!(!is_dashboard(&after), "a dashboard:\n{after}");
    assert!(!status_lines(&after).is_empty(), "no status line:\n{after}");
    assert!(after.contains("Exchanges     sent"), "no summary:\n{after}");
    drop(tmux);
    server.stop();
}

/// The state letter of `pid` (`/proc/PID/stat`), `None` once it is gone.
fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

/// Issue 24, the other half: a dashboard whose process is moved to the background while it
/// runs (stopped and continued: the shell takes the terminal back) was stopped again by
/// SIGTTOU when it gave the terminal back at the end, and never wrote its result. Terminal
/// calls run with SIGTTOU and SIGTTIN blocked, so it ends by itself.
#[test]
fn a_dashboard_sent_to_the_background_is_never_stopped_by_the_terminal() {
    if !available("tmux", tmux_available()) {
        return;
    }
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("result.json");
    let tmux = Tmux {
        socket: format!("barrage-test-job-{}", std::process::id()),
    };
    let shell = ["bash", "--norc", "--noprofile", "-i"];
    let mut args = vec!["new-session", "-d", "-s", "dash", "-x", "120", "-y", "40"];
    args.extend(shell);
    assert!(tmux.cmd(&args).status.success());
    let line = format!(
        "'{}' {} -c 2 -d 5s --json '{}'",
        common::bin().display(),
        server.url(),
        json.display()
    );
    assert!(tmux
        .cmd(&["send-keys", "-t", "dash", &line, "Enter"])
        .status
        .success());
    tmux.wait_for(Duration::from_secs(10), "the dashboard", |sc| {
        is_dashboard(sc) && sc.contains("running")
    });
    let out = tmux.cmd(&["display", "-p", "-t", "dash", "#{pane_pid}"]);
    let shell_pid = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let pid: u32 = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|st| {
                st.contains("(barrage) ")
                    && st.rsplit_once(") ").and_then(|(_, r)| r.split(' ').nth(1))
                        == Some(shell_pid.as_str())
            })
        })
        .expect("barrage, the shell's child");
    // Stopped: the shell takes the terminal back; continued: it runs in the background.
    common::send_signal(pid, "STOP");
    tmux.wait_for(Duration::from_secs(10), "the shell's Stopped", |sc| {
        sc.contains("Stopped")
    });
    common::send_signal(pid, "CONT");
    let written = wait_file(&json, Duration::from_secs(30));
    assert!(
        written.is_some(),
        "no result; barrage is in state {:?}:\n{}",
        proc_state(pid),
        tmux.capture()
    );
    assert_eq!(s(&read_json(&json), "status"), "completed");
    drop(tmux);
    server.stop();
}
