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
