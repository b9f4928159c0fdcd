//! Verdicts end to end: what a run concludes about a server whose behaviour the test scripts.
//! Exact counts and invariants only, never a wall-clock figure. Only 127.0.0.1; every run is
//! bounded by `-n` and by the command's timeout.

use crate::common::*;
use std::io::{Read, Write};
use std::net::TcpListener;

/// A redis-like server: every `\r\n`-terminated request gets a two-line bulk reply
/// (`$3\r\nbar\r\n`), written in one go. Serves connections until the test process ends.
fn bulk_reply_server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut c) = conn else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut pending = 0usize;
                while let Ok(n) = c.read(&mut buf[pending..]) {
                    if n == 0 {
                        return;
                    }
                    pending += n;
                    let mut start = 0;
                    while let Some(i) = buf[start..pending].windows(2).position(|w| w == b"\r\n") {
                        start += i + 2;
                        if c.write_all(b"$3\r\nbar\r\n").is_err() {
                            return;
                        }
                    }
                    buf.copy_within(start..pending, 0);
                    pending -= start;
                }
            });
        }
    });
    port
}

/// `--expect line` against two-line replies: each reply's second line arrives with nothing in
/// flight. It used to print "Errors none" and pass every readiness row; now the run warns in
/// the summary, the report and the JSON, and fails the readiness "correctness" row.
#[test]
fn wrong_framing_warns_and_fails_the_correctness_row() {
    let port = bulk_reply_server();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let md = dir.path().join("r.md");
    let out = barrage()
        .args([
            &format!("tcp://127.0.0.1:{port}"),
            "-m",
            "GET k\\r\\n",
            "--expect",
            "line",
            "-c",
            "1",
            "-n",
            "200",
            "--no-tui",
            "--json",
            json.to_str().unwrap(),
            "--report",
            md.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Without --threshold, a failed correctness row is exit 3.
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    let v = read_json(&json);
    let completed = u(&v, "summary.exchanges.completed");
    let unexpected = u(&v, "summary.exchanges.unexpected_replies");
    assert_eq!(completed, 200, "{stdout}");
    // One unexpected line per reply; the last one may still be unread when the run stops.
    assert!((199..=200).contains(&unexpected), "{unexpected}");
    let c = field(&v, "analysis.correctness");
    assert_eq!(c["framing_suspect"], true, "{c}");
    let rows = v["readiness"].as_array().unwrap();
    let row = rows
        .iter()
        .find(|r| r["aspect"] == "correctness")
        .expect("a correctness row");
    assert_eq!(row["status"], "fail", "{row}");
    assert!(
        stdout.contains("WARNING") && stdout.contains("reply framing"),
        "{stdout}"
    );
    let report = std::fs::read_to_string(&md).unwrap();
    assert!(report.contains("reply framing"), "{report}");
}

/// One run's stdout (asserting its exit code), then the server's counts.
fn run_out(args: &[&str], code: i32) -> String {
    let out = barrage().args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}\n{stderr}\n{stdout}"
    );
    stdout
}

/// Issue 42 item 7: `{seq%N}` and `{rand%N}` in an HTTP path were sent literally and every
/// request failed with a 400, although the README says placeholders work in paths. Now each
/// request renders its own path: over HTTP/1.1 `/bytes/{seq%3}` asks for 0, 1 and 2 bytes in
/// turn, so the server writes exactly what 30 requests of `/bytes/1` make it write.
#[test]
fn seq_and_rand_placeholders_in_an_http_path_are_rendered_per_request() {
    let mut written = Vec::new();
    for path in ["bytes/{seq%3}", "bytes/1"] {
        let server = EchoServer::serve("http", &[]);
        let url = format!("{}{path}", server.url());
        run_out(&[&url, "-c", "1", "-n", "30", "--no-tui", "-q"], 0);
        let stats = server.stop();
        assert_eq!(u(&stats, "http.requests"), 30, "{path}: {stats}");
        assert_eq!(u(&stats, "http.responses_2xx"), 30, "{path}: {stats}");
        written.push(u(&stats, "bytes_written"));
    }
    assert_eq!(written[0], written[1], "{written:?}");
    // `{rand%N}` too, and over HTTP/2 (h2c) both.
    let h1 = EchoServer::serve("http", &[]);
    let url = format!("{}status/20{{rand%1}}", h1.url());
    run_out(&[&url, "-c", "2", "-n", "40", "--no-tui", "-q"], 0);
    assert_eq!(u(&h1.stop(), "http.responses_2xx"), 40);
    let h2 = EchoServer::serve("h2", &[]);
    for path in ["bytes/{seq%3}", "status/20{rand%2}"] {
        let url = format!("{}{path}", h2.url());
        run_out(
            &[
                &url,
                "-c",
                "2",
                "--streams",
                "4",
                "-n",
                "60",
                "--no-tui",
                "-q",
            ],
            0,
        );
    }
    let stats = h2.stop();
    assert_eq!(u(&stats, "http.requests"), 120, "{stats}");
    assert_eq!(u(&stats, "http.responses_2xx"), 120, "{stats}");
    // A malformed range is one line naming the target, before any load.
    let out = barrage()
        .args(["http://127.0.0.1:1/x/{seq%0}", "-n", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("malformed placeholder"), "{err}");
}

/// Issue 42 item 7: gRPC `--streams 10` was printed "pipeline 10" in the run header and
/// "streams 1 per connection" in the HTTP/2 line.
#[test]
fn grpc_streams_are_printed_as_streams_per_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (server, proto) = crate::grpc::serve_grpc(&[], dir.path());
    let url = format!("grpc://127.0.0.1:{}/barrage.Echo/Echo", server.port);
    let stdout = run_out(
        &[
            &url,
            "--proto",
            proto.to_str().unwrap(),
            "--data",
            r#"{"text":"hi"}"#,
            "-c",
            "2",
            "--streams",
            "10",
            "-n",
            "200",
            "--no-tui",
        ],
        0,
    );
    let header = stdout.lines().nth(1).unwrap_or_default();
    assert!(
        header.contains("2 connections")
            && header.ends_with("ping-pong, 10 streams per connection"),
        "{stdout}"
    );
    assert!(!stdout.contains("pipeline"), "{stdout}");
    assert!(stdout.contains("streams 10 per connection"), "{stdout}");
    let stats = server.stop();
    assert_eq!(u(&stats, "grpc.calls"), 200, "{stats}");
}

/// A TCP echo server that holds at most `cap` connections: it accepts every connection and
/// at once closes each one beyond the cap (after the first `2 * cap` connects, every other
/// one), reconnects included. Returns its port and the most it ever held.
fn half_holding_server(cap: usize) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let held = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let most_out = most.clone();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut c) = conn else { return };
            if held.load(SeqCst) >= cap {
                drop(c); // accepted, and at once closed
                continue;
            }
            let now = held.fetch_add(1, SeqCst) + 1;
            most.fetch_max(now, SeqCst);
            let held = held.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = c.read(&mut buf) {
                    if n == 0 || c.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                held.fetch_sub(1, SeqCst);
            });
        }
    });
    (port, most_out)
}

/// Issue 42 item 7: `connections.ready` counted connections ever ready, so a server that
/// accepts every connection and at once closes half of them passed `connections.ready >=
/// 99%`, and the connections row only warned at 50 % open in the steady state. Now the steady
/// state counts: the row fails, and so does the threshold (exit 3).
#[test]
fn a_server_that_closes_half_the_connections_fails_connections_ready() {
    let (port, most) = half_holding_server(5);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = format!("tcp://127.0.0.1:{port}");
    let stdout = run_out(
        &[
            &url,
            "-c",
            "10",
            "-d",
            "3s",
            "--no-tui",
            "--threshold",
            "connections.ready >= 99%",
            "--json",
            json.to_str().unwrap(),
        ],
        3,
    );
    let v = read_json(&json);
    conserved(&v);
    // Every one of the 10 was ready once (the kernel completed each handshake), the server
    // never held more than 5.
    assert_eq!(u(&v, "summary.ramp.ready"), 10, "{stdout}");
    assert_eq!(most.load(std::sync::atomic::Ordering::SeqCst), 5);
    let th = &v["thresholds"][0];
    assert_eq!(th["passed"], false, "{th}");
    let ready = th["actual"].as_f64().unwrap();
    assert!((0.5..=0.6).contains(&ready), "{th}");
    let row = v["readiness"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["aspect"] == "connections")
        .expect("a connections row")
        .clone();
    assert_eq!(row["status"], "fail", "{row}");
    let fig = row["figure"].as_str().unwrap();
    assert!(
        fig.starts_with("10 of 10 planned ever ready")
            && fig.contains("the server did not hold them"),
        "{fig}"
    );
    assert!(stdout.contains("connections        FAIL"), "{stdout}");
}
