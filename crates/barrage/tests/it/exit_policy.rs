//! The exit policy (issue 42, item 1): a run that plainly failed never exits 0. Nothing
//! completed, or at least 99 % of the requests failed: exit 1 with the likely cause in one
//! line; a readiness FAIL of errors, correctness or connections without `--threshold`: exit 3;
//! `--lenient-exit`: 0 for any run that ran its course. And the reasons errors gave (item 3).
//! Only 127.0.0.1; every run is bounded by `-n` or `-d`.

use crate::common::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Output;

fn run(args: &[&str], json: &std::path::Path) -> Output {
    barrage()
        .args(args)
        .args(["--no-tui", "--json"])
        .arg(json)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The one `error:` line on stderr.
fn error_line(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "one error line:\n{err}");
    lines[0].to_string()
}

/// `http://` at a WebSocket server: every request is a 426. The run ran its course, but
/// nothing worked: exit 1, the status `failed`, and the line says why and what to use.
#[test]
fn a_run_where_nothing_worked_exits_1_and_names_the_cause() {
    let ws = EchoServer::serve("ws", &[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = format!("http://127.0.0.1:{}/", ws.port);
    let out = run(&[&url, "-c", "2", "-n", "200"], &json);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let line = error_line(&out);
    assert!(
        line.contains("no request completed: all 200 failed"),
        "{line}"
    );
    assert!(line.contains("426") && line.contains("ws://"), "{line}");
    let v = read_json(&json);
    assert_eq!(s(&v, "status"), "failed");
    assert!(s(&v, "message").contains("ws://"), "{v}");
    assert_eq!(u(&v, "summary.exchanges.failed"), 200);
    // --lenient-exit: the old exit code, the same figures.
    let json2 = dir.path().join("lenient.json");
    let out = run(&[&url, "-c", "2", "-n", "200", "--lenient-exit"], &json2);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let v = read_json(&json2);
    assert_eq!(s(&v, "status"), "completed");
    assert_eq!(u(&v, "summary.exchanges.failed"), 200);
}

/// A target's scheme that does not match what the server speaks is named from the first
/// bytes of its answer, and the run stops there (exit 1) instead of failing every request.
#[test]
fn a_server_speaking_another_protocol_is_named_with_the_scheme_to_use() {
    let dir = tempfile::tempdir().unwrap();
    let h2 = EchoServer::serve("h2", &[]);
    let http = EchoServer::serve("http", &[]);
    let cases = [
        (format!("http://127.0.0.1:{}/", h2.port), "use h2c://"),
        (format!("redis://127.0.0.1:{}", http.port), "use http://"),
        (format!("mqtt://127.0.0.1:{}", http.port), "use http://"),
    ];
    for (i, (url, remedy)) in cases.iter().enumerate() {
        let json = dir.path().join(format!("{i}.json"));
        let out = run(&[url, "-c", "2", "-d", "5s"], &json);
        assert_eq!(out.status.code(), Some(1), "{url}: {}", text(&out));
        let line = error_line(&out);
        assert!(line.contains(remedy), "{url}: {line}");
        assert_eq!(s(&read_json(&json), "status"), "failed", "{url}");
    }
}

/// A third of the calls fail (UNAVAILABLE): not a failed run, but its readiness verdict
/// fails the errors row, and without --threshold that is exit 3 with the row named. A
/// threshold the run meets, or --lenient-exit, makes it 0.
#[test]
fn a_readiness_fail_exits_3_without_thresholds() {
    let dir = tempfile::tempdir().unwrap();
    let server = EchoServer::serve("grpc", &["--fail-every", "3"]);
    let url = format!("grpc://127.0.0.1:{}/barrage.Echo/Echo", server.port);
    let base = [
        &url[..],
        "--reflect",
        "--data",
        r#"{"text":"hi"}"#,
        "-c",
        "1",
        "-n",
        "300",
    ];
    let json = dir.path().join("r.json");
    let out = run(&base, &json);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let line = error_line(&out);
    assert!(line.contains("readiness FAIL, errors: "), "{line}");
    assert!(line.contains("--lenient-exit"), "{line}");
    let v = read_json(&json);
    assert_eq!(s(&v, "status"), "completed");
    assert_eq!(u(&v, "summary.exchanges.failed"), 100);
    let mut met = base.to_vec();
    met.extend(["--threshold", "errors.rate < 50%"]);
    let out = run(&met, &dir.path().join("met.json"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let mut lenient = base.to_vec();
    lenient.push("--lenient-exit");
    let out = run(&lenient, &dir.path().join("lenient.json"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// An HTTP server that answers each connection's first request well and its second with a
/// broken status line, then closes.
fn second_answer_broken() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut c) = conn else { return };
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let mut answered = 0;
                while let Ok(n) = c.read(&mut chunk) {
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    while let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..i + 4);
                        let reply: &[u8] = if answered == 0 {
                            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                        } else {
                            b"HTTP/9 what\r\n\r\n"
                        };
                        answered += 1;
                        if c.write_all(reply).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    port
}

/// Item 3: once a connection has worked, a later protocol error still says why, in the
/// summary and the JSON (the first few distinct reasons per class, with when).
#[test]
fn error_reasons_are_kept_in_the_summary_and_the_json() {
    let port = second_answer_broken();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = format!("http://127.0.0.1:{port}/");
    let out = run(&[&url, "-c", "1", "-n", "100"], &json);
    // Half the requests failed: the errors row fails (exit 3), the run is not failed.
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let v = read_json(&json);
    // -n counts completed requests: each connection completes one and fails the next.
    assert_eq!(u(&v, "summary.exchanges.completed"), 100);
    assert_eq!(u(&v, "summary.exchanges.failed"), 99);
    let reasons = field(&v, "summary.totals.reasons").as_array().unwrap();
    assert_eq!(reasons.len(), 1, "one distinct reason: {reasons:?}");
    assert_eq!(reasons[0]["class"], "protocol");
    let said = reasons[0]["reason"].as_str().unwrap();
    assert!(said.contains("status line"), "{said}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("Said") && l.contains("protocol: ") && l.contains(said)),
        "{stdout}"
    );
}

/// Shards leave the judgement to the merge: each shard of a run where every request is a
/// 426 exits 0 (its share alone is not the run), and `barrage merge` fails the whole (exit 1,
/// the status `failed`, the cause named) unless `--lenient-exit`.
#[test]
fn shards_leave_the_exit_policy_to_the_merge() {
    let ws = EchoServer::serve("ws", &[]);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}/", ws.port);
    let start = start_in(2);
    let shards: Vec<_> = (0..2)
        .map(|i| {
            let json = dir.path().join(format!("s{i}.json"));
            let mut cmd = std::process::Command::new(bin());
            cmd.args([&url, "-c", "2", "-t", "1", "-n", "100", "-q", "--no-tui"])
                .args(["--shard", &format!("{i}/2"), "--start-at", &start, "--json"])
                .arg(&json)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null());
            (Guard(cmd.spawn().unwrap()), json)
        })
        .collect();
    let mut jsons = Vec::new();
    for (mut child, json) in shards {
        let st = wait_at_most(&mut child.0, std::time::Duration::from_secs(60)).expect("ends");
        assert_eq!(st.code(), Some(0), "a shard leaves it to the merge");
        jsons.push(json);
    }
    let merged = dir.path().join("m.json");
    let out = barrage()
        .arg("merge")
        .args(&jsons)
        .arg("-o")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(error_line(&out).contains("426"), "{}", text(&out));
    let v = read_json(&merged);
    assert_eq!(s(&v, "status"), "failed");
    let lenient = dir.path().join("l.json");
    let out = barrage()
        .arg("merge")
        .args(&jsons)
        .args(["--lenient-exit", "-o"])
        .arg(&lenient)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(s(&read_json(&lenient), "status"), "completed");
}

/// Issue 43: a server that stopped accepting (out of open files, as the reference echo
/// server at its 20,000-file limit) leaves connects the kernel completed for it: every
/// exchange on them times out, and barrage says no byte came back since the connect, so
/// the reader knows which side ran out. A server that answered once and then stalled times
/// out without that reason.
#[test]
fn timeouts_on_connections_never_answered_say_so() {
    let dir = tempfile::tempdir().unwrap();
    // Listening, never accepting: the kernel completes the connects into its backlog.
    let deaf = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("tcp://127.0.0.1:{}", deaf.local_addr().unwrap().port());
    let json = dir.path().join("deaf.json");
    let out = run(&[&url, "-c", "3", "-d", "2s", "--timeout", "300ms"], &json);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    let v = read_json(&json);
    assert!(u(&v, "summary.errors.timeout") > 0, "{}", text(&out));
    // Absent when no error gave a reason.
    let said = |v: &serde_json::Value| {
        v["summary"]["totals"]["reasons"]
            .as_array()
            .is_some_and(|rs| {
                rs.iter().any(|r| {
                    r["class"] == "timeout"
                        && r["reason"]
                            .as_str()
                            .unwrap()
                            .contains("no byte since the connect")
                })
            })
    };
    assert!(said(&v), "{}", text(&out));
    assert!(text(&out).contains("Said"), "{}", text(&out));
    drop(deaf);

    // Answers each connection's first message, then nothing.
    let stall = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("tcp://127.0.0.1:{}", stall.local_addr().unwrap().port());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in stall.incoming() {
            let Ok(mut s) = s else { return };
            let mut buf = [0u8; 19];
            if s.read_exact(&mut buf).is_ok() && s.write_all(&buf).is_ok() {
                held.push(s);
            }
        }
    });
    let json = dir.path().join("stall.json");
    let out = run(&[&url, "-c", "3", "-d", "2s", "--timeout", "300ms"], &json);
    let v = read_json(&json);
    assert!(u(&v, "summary.errors.timeout") > 0, "{}", text(&out));
    assert!(!said(&v), "{}", text(&out));
}
