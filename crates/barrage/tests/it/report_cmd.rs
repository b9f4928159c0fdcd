//! `barrage report` from the command line: routing of file names with colons, a reader that
//! goes away, what the report says about TLS when nothing connected, and the line that names
//! each file written.
//!
//! Runs go to a loopback port nothing listens on and end at once.

use crate::common::*;
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

/// A saved result of an https:// run that never connected, at `dir/run-10:00.json`.
fn never_connected_https(dir: &std::path::Path) -> std::path::PathBuf {
    let json = dir.join("run-10:00.json");
    let url = format!("https://127.0.0.1:{}/", refused_port());
    let out = barrage()
        .args([url.as_str(), "-d", "1s", "-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{:?}", out);
    json
}

#[test]
fn report_of_a_file_named_with_a_colon_is_a_report_and_tls_unverified_when_never_connected() {
    let dir = tempfile::tempdir().unwrap();
    let json = never_connected_https(dir.path());
    let md = dir.path().join("r.md");
    let out = barrage()
        .arg("report")
        .arg(&json)
        .arg("-o")
        .arg(&md)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    let text = std::fs::read_to_string(&md).unwrap();
    let tls: Vec<&str> = text.lines().filter(|l| l.contains("TLS")).collect();
    assert!(!tls.is_empty(), "no TLS line:\n{text}");
    for l in tls {
        assert!(
            !l.contains("| verified"),
            "a run without a handshake says verified: {l}"
        );
    }
    assert!(text.contains("no handshake completed"), "{text}");
}

#[test]
fn report_to_a_closed_pipe_exits_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let json = never_connected_https(dir.path());
    let mut child = StdCommand::new(bin())
        .arg("report")
        .arg(&json)
        .args(["-o", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // like `| head` that has read enough
    let st = wait_at_most(&mut child, Duration::from_secs(10)).expect("report did not exit");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(st.code(), Some(0), "stderr: {stderr}");
    assert!(stderr.is_empty(), "stderr: {stderr}");
}

/// Issue 43: `report -o FILE` wrote its file silently; like `--report` and `compare -o` it now
/// says so, one line on stderr, the same line, whatever the format (and nothing for `-o -`).
#[test]
fn report_o_announces_the_file_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let json = never_connected_https(dir.path());
    // A stream directory too, for the HDR log (a run that ends at once still writes one).
    let stream = dir.path().join("stream");
    let url = format!("http://127.0.0.1:{}/", refused_port());
    let out = barrage()
        .args([url.as_str(), "-d", "1s", "-q", "--out"])
        .arg(&stream)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{:?}", out);
    for (from, name) in [
        (&json, "r.html"),
        (&json, "r.md"),
        (&json, "r.json"),
        (&json, "r.csv"),
        (&stream, "r.hlog"),
    ] {
        let file = dir.path().join(name);
        let out = barrage()
            .arg("report")
            .arg(from)
            .arg("-o")
            .arg(&file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        assert_eq!(stderr, format!("{}\n", wrote(&file)), "{name}");
    }
    let out = barrage()
        .arg("report")
        .arg(&json)
        .args(["-o", "-", "--format", "md"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!out.stdout.is_empty());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
