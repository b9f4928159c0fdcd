//! `--web`: the live page in headless Chromium (Debian's, driven by playwright-core from
//! tests/browser/check-live.mjs) while a run goes against the echo server: charts draw and
//! advance, the page survives a reload mid-run, every second it shows equals the JSON's
//! per-second record, it shows the final summary, nothing leaves its origin and its CSP refuses
//! a script from elsewhere. Keeps a screenshot (target/test-artifacts/live.png).

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn checker() -> Option<PathBuf> {
    let ready = root()
        .join("tests/browser/node_modules/playwright-core")
        .exists()
        && Path::new("/usr/bin/chromium").exists()
        && StdCommand::new("node").arg("--version").output().is_ok();
    available(
        "node, /usr/bin/chromium and tests/browser/node_modules",
        ready,
    )
    .then(|| root().join("tests/browser/check-live.mjs"))
}

#[test]
fn the_live_page_follows_the_run_and_ends_with_its_summary() {
    let Some(script) = checker() else { return };
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let port = free_port();
    let mut run = Guard(
        StdCommand::new(bin())
            .args([
                server.url(),
                "-c",
                "2",
                "--rate",
                "400",
                // Ended by the test (SIGINT) once the page was seen across a reload; the
                // duration only bounds it.
                "-d",
                "90s",
                "-q",
                "--no-tui",
            ])
            .args(["--web", &port.to_string(), "--json"])
            .arg(&json)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let artifacts = root().join("target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("live.png");
    let url = format!("http://127.0.0.1:{port}/");
    // The page is up once barrage listens.
    let t = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "barrage never served the page"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut node = StdCommand::new("node")
        .arg(&script)
        .arg(&url)
        .arg(&shot)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(node.stderr.take().unwrap());
    let mut said = String::new();
    loop {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut err, &mut line).unwrap() == 0 || line == "ready\n" {
            break;
        }
        said.push_str(&line);
    }
    send_signal(run.0.id(), "INT");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let out = node.wait_with_output().unwrap();
    assert!(out.status.success(), "checker failed: {said}{rest}");
    let status = wait_at_most(&mut run.0, Duration::from_secs(30)).expect("the run ends");
    assert_eq!(status.code(), Some(130), "interrupted by the test");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["page_errors"], serde_json::json!([]), "{v}");
    let errors: Vec<&str> = v["console_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .filter(|e| !e.contains("Content Security Policy"))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    // Nothing left the page's origin but the probe the CSP refused.
    let probe = "http://127.0.0.2:9/x.js";
    for r in v["foreign_requests"].as_array().unwrap() {
        assert_eq!(r, probe, "a request left the page's origin");
    }
    assert_eq!(v["csp_violations"], serde_json::json!([probe]), "{v}");
    // Charts drew and advanced across a reload.
    let charts = v["charts"].as_array().unwrap();
    for c in charts {
        // The server and broadcast charts stay out of a run without monitoring or broadcast.
        let absent = matches!(c["id"].as_str(), Some("c-srv" | "c-bc"));
        assert_eq!(c["hidden"], absent, "{c}");
        assert_eq!(c["drawn"], !absent, "{c}");
    }
    assert_eq!(charts.len(), 6);
    let (before, after) = (
        v["before_reload"].as_u64().unwrap(),
        v["after_reload"].as_u64().unwrap(),
    );
    assert!(before >= 2 && after > before, "{before} then {after}");
    // What the page holds at the end is the JSON's time series, second by second.
    let r = read_json(&json);
    let ticks = r["timeseries"].as_array().unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), ticks.len());
    for (p, t) in points.iter().zip(ticks) {
        let p = &p["tick"];
        for k in [
            "t",
            "requests",
            "sent",
            "failed",
            "open",
            "bytes_read",
            "latency_us",
        ] {
            assert!(
                same(&p[k], &t[k]),
                "{k} at {}: {} vs {}",
                t["t"],
                p[k],
                t[k]
            );
        }
    }
    assert_eq!(v["final_visible"], true);
    let summary = v["summary"].as_str().unwrap();
    assert!(
        summary.contains("Throughput") && summary.contains("Exchanges"),
        "{summary}"
    );
    assert!(shot.exists());
}

/// Equal as JSON, numbers by value (a browser writes 1.0 as 1).
fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value::*;
    match (a, b) {
        (Number(x), Number(y)) => x.as_f64() == y.as_f64(),
        (Object(x), Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Array(x), Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w)),
        _ => a == b,
    }
}
