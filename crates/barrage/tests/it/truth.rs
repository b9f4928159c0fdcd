//! Every number true: the error rate, the schedule's accounting and the bounds on what the
//! arithmetic supports, seen from the command line (issue 8's measurement points).

use crate::common::*;

#[test]
fn errors_rate_threshold_counts_every_failed_request_of_an_open_loop_run() {
    // Regression: a server stall longer than --timeout failed 19 % of an open-loop run's
    // requests, but the error rate counted the broken connections (one each) and
    // `errors.rate < 1%` passed with exit code 0.
    let server = EchoServer::start(&["--stall-at", "300ms", "--stall-for", "700ms"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = barrage()
        .args([
            server.url(),
            "--rate",
            "400",
            "-c",
            "4",
            "-t",
            "1",
            "-d",
            "1500ms",
        ])
        .args([
            "--timeout",
            "150ms",
            "--threshold",
            "errors.rate < 1%",
            "--no-tui",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let r = read_json(&json);
    let failed = u(&r, "summary.failed_requests.total");
    let x = &r["summary"]["exchanges"];
    assert_eq!(
        failed,
        x["failed"].as_u64().unwrap() + x["not_sent"].as_u64().unwrap(),
        "every request that did not complete is counted: {x}"
    );
    assert!(u(&r, "summary.failed_requests.timeout") > u(&r, "summary.errors.timeout"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("FAIL") && stdout.contains("errors.rate"),
        "{stdout}"
    );
    assert!(stdout.contains("requests ("), "the Failed line: {stdout}");
}

#[test]
fn absurd_rates_are_refused_before_any_load() {
    // Regression: `--rate 1e19` wrapped a u64 in the schedule; the worker spun, ignored -d and
    // SIGTERM, and wrote no result.
    for rate in ["1e19", "1e20", "1e16"] {
        let out = barrage()
            .args(["tcp://127.0.0.1:9", "--rate", rate, "-d", "1s"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--rate {rate}");
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err.lines().next().unwrap_or_default();
        assert!(first.contains("--rate"), "--rate {rate}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let out = barrage()
        .args(["tcp://127.0.0.1:9", "--interval", "1ns", "-c", "1000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--interval"));
}

#[test]
fn the_summary_reports_the_ramp_apart_from_the_load() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = barrage()
        .args([
            server.url(),
            "-c",
            "40",
            "--connect-rate",
            "100",
            "--interval",
            "100ms",
        ])
        .args(["-t", "1", "-d", "1s", "--no-tui", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let r = read_json(&json);
    assert_eq!(u(&r, "summary.ramp.ready"), 40);
    // The 40th connect cannot start before 390 ms at 100/s.
    assert!(f(&r, "summary.ramp.all_ready_s") >= 0.39);
    let x = &r["summary"]["exchanges"];
    assert_eq!(
        x["scheduled"].as_u64().unwrap(),
        x["sent"].as_u64().unwrap() + x["not_sent"].as_u64().unwrap()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Ramp") && stdout.contains("all 40 ready after"),
        "{stdout}"
    );
}

#[test]
fn a_stop_signal_ends_a_run_waiting_on_a_silent_tls_server() {
    // Regression: the TLS pre-flight handshake waited the whole connect timeout before a
    // stop signal was seen. A server that accepts and never speaks TLS, a 20 s connect
    // timeout, SIGTERM after 300 ms: the run ends as interrupted long before 20 s.
    let (port, accepted) = silent_listener_telling();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = format!("https://127.0.0.1:{port}/");
    let mut child = signals_at_default(std::process::Command::new(bin()))
        .args([
            &url,
            "-d",
            "30s",
            "--connect-timeout",
            "20s",
            "-q",
            "--json",
        ])
        .arg(&json)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The pre-flight's connect came in: the stop flags are installed (they are before the
    // pre-flight), so the signal finds them, however slowly a busy machine started the run.
    accepted
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the pre-flight connected");
    std::thread::sleep(std::time::Duration::from_millis(300));
    send_signal(child.id(), "TERM");
    let status = wait_at_most(&mut child, std::time::Duration::from_secs(10))
        .expect("still running 10 s after SIGTERM (the pre-flight ignores the stop)");
    assert_eq!(status.code(), Some(130), "{status}");
    assert_eq!(s(&read_json(&json), "status"), "interrupted");
}

/// A server that accepts and never answers: the run ends as failed (exit 1) with one line
/// saying so, not as a completed run of zeros.
#[test]
fn a_server_that_never_answers_fails_the_run() {
    let port = silent_listener();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = format!("tcp://127.0.0.1:{port}");
    let out = std::process::Command::new(bin())
        .args([&url, "-c", "3", "-t", "1", "-d", "1s", "-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("never answered"), "{err}");
    let r = read_json(&json);
    assert_eq!(s(&r, "status"), "failed");
    assert_eq!(u(&r, "summary.exchanges.completed"), 0);
    // Every request sent is still in flight at the end: none completed, none failed.
    let sent = u(&r, "summary.exchanges.sent");
    assert!(
        (1..=3).contains(&sent),
        "at most one per connection: {sent}"
    );
    assert_eq!(u(&r, "summary.exchanges.in_flight_at_end"), sent);
}

/// [`silent_listener`], telling each connection it accepts.
fn silent_listener_telling() -> (u16, std::sync::mpsc::Receiver<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s); // accept, never answer
            let _ = tx.send(());
        }
    });
    (port, rx)
}

/// A port of 127.0.0.1 whose listener accepts every connection, holds it, and never sends a
/// byte.
fn silent_listener() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s); // accept, never answer
        }
    });
    port
}

/// Regression (issue 24): connections that never came up failed nothing (`12,917 of 25,000
/// connections were ever ready`, errors pass, exit 0). A server that takes 4 of 8 connections
/// and then stops listening: the connections row fails, `connections.ready >= 99%` fails the
/// run (exit 3), and the result records the source addresses it used.
#[test]
fn connections_that_never_came_up_fail_the_connections_row_and_threshold() {
    use std::io::{BufRead, BufReader, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming().take(4) {
            let Ok(s) = s else { continue };
            let w = s.try_clone().unwrap();
            held.push(std::thread::spawn(move || {
                let mut w = w;
                let mut r = BufReader::new(s);
                let mut line = Vec::new();
                while r.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                    if w.write_all(&line).is_err() {
                        return;
                    }
                    line.clear();
                }
            }));
        }
        // The listener closes here: later connects are refused.
    });
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = barrage()
        .arg(format!("tcp://{addr}"))
        .args(["-c", "8", "-t", "1", "-d", "2s", "--connect-rate", "20"])
        .args(["--source-ip", "127.0.0.1", "--expect", "line"])
        .args(["--threshold", "connections.ready >= 99%", "--no-tui"])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let r = read_json(&json);
    // 4, or 5 when the kernel completed a fifth handshake into the accept queue before the
    // listener closed (a starved machine: the fifth connect came before the drop).
    let ready = u(&r, "summary.ramp.ready");
    assert!((4..=5).contains(&ready), "{ready}");
    let row = r["readiness"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["aspect"] == "connections")
        .expect("a connections row");
    assert_eq!(row["status"], "fail", "{row}");
    assert!(
        row["figure"].as_str().unwrap().contains(&format!(
            "{ready} of 8 planned ever ready ({:.1} %)",
            ready as f64 * 12.5
        )),
        "{row}"
    );
    assert_eq!(r["config"]["source_ips"], serde_json::json!(["127.0.0.1"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("connections.ready"), "{stdout}");
}
