//! `--web`: the live page in headless Chromium (Debian's, driven by playwright-core from
//! tests/browser/check-live.mjs) while a run goes against the echo server: charts draw and
//! advance, the page survives a reload mid-run, every second it shows equals the JSON's
//! per-second record, it shows the final summary, nothing leaves its origin and its CSP refuses
//! a script from elsewhere. Keeps a screenshot (target/test-artifacts/live.png).

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn checker() -> Option<PathBuf> {
    browser("check-live.mjs")
}

/// Runs barrage with `--web` (2 connections at 400/s against `server`, plus `extra`), watches
/// its page with the checker until it has seen a reload, ends the run with SIGINT and returns
/// what the checker reported and the run's JSON result.
fn watch_live(
    script: &Path,
    server: &EchoServer,
    extra: &[String],
    shot: &str,
) -> (serde_json::Value, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let port = free_port();
    let mut run = Guard(
        signals_at_default(StdCommand::new(bin()))
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
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let artifacts = root().join("target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join(shot);
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
        .arg(script)
        .arg(&url)
        .arg(&shot)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its stdout (one JSON line, tens of KiB) is read as it comes: a pipe holds 64 KiB, and a
    // checker blocked writing it while this reads its stderr to the end would wait forever.
    let mut stdout = node.stdout.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut b);
        b
    });
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
    let status = node.wait().unwrap();
    let out = std::process::Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: Vec::new(),
    };
    assert!(out.status.success(), "checker failed: {said}{rest}");
    let status = wait_at_most(&mut run.0, Duration::from_secs(30)).expect("the run ends");
    assert_eq!(status.code(), Some(130), "interrupted by the test");
    assert!(shot.exists());
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        read_json(&json),
    )
}

#[test]
fn the_live_page_follows_the_run_and_ends_with_its_summary() {
    let Some(script) = checker() else { return };
    let server = EchoServer::start(&[]);
    let (v, r) = watch_live(&script, &server, &[], "live.png");
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
    // Issue 26: mid-run, no two text boxes overlap, no chart label is clipped, no legend says
    // "--", nothing runs off the window, at 1400 px and on a phone; latency in the unit that
    // fits ("8.04 ms", not "µs 8,043"); the time left of the load (-d 90s).
    for width in ["desktop", "phone"] {
        let l = &v["layout"][width];
        for what in ["overlaps", "clipped", "legends", "offscreen"] {
            assert_eq!(l[what], serde_json::json!([]), "{width}: {what}: {l}");
        }
    }
    let p99 = v["p99_shown"].as_str().unwrap();
    assert!(
        [" µs", " ms", " s"].iter().any(|u| p99.ends_with(u)),
        "p99 {p99:?}"
    );
    // The time left is the load's end (-d 90s, no warm-up) less the second it is shown at.
    let left: f64 = v["left_shown"]
        .as_str()
        .unwrap()
        .trim_end_matches(" s")
        .parse()
        .unwrap_or_else(|_| panic!("left {}", v["left_shown"]));
    let at = v["left_at"].as_f64().unwrap();
    assert!((left - (90.0 - at)).abs() <= 0.5, "left {left} s at {at} s");
    // No monitoring: no network section.
    assert_eq!(v["network_visible"], false, "{v}");
    // What the page holds at the end is the JSON's time series, second by second.
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
}

/// The machine's network per interface (sampled by the monitor, and before never shown)
/// reaches the live page of a monitored run: a row per interface with min, mean and max
/// bytes/s in and out, loopback carrying the run's traffic, the same interfaces the JSON's
/// samples list.
#[test]
fn the_live_page_shows_the_machines_network_per_interface() {
    let Some(script) = checker() else { return };
    let server = EchoServer::start(&[]);
    let extra = ["--monitor".to_string(), server.pid().to_string()];
    let (v, r) = watch_live(&script, &server, &extra, "live-network.png");
    assert_eq!(v["page_errors"], serde_json::json!([]), "{v}");
    assert_eq!(v["network_visible"], true, "{v}");
    let net = v["network"].as_array().unwrap();
    let rows = v["network_rows"].as_array().unwrap();
    assert_eq!(rows.len(), net.len());
    let host = r["monitor"]["host"].as_array().unwrap();
    let names: Vec<&str> = host[0]["net"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    let shown: Vec<&str> = net.iter().map(|n| n["name"].as_str().unwrap()).collect();
    assert_eq!(shown, names, "the interfaces the monitor samples");
    let rate = is_byte_rate();
    for (n, row) in net.iter().zip(rows) {
        let cells = row.as_array().unwrap();
        assert_eq!(cells.len(), 7, "{row}");
        assert_eq!(cells[0], n["name"]);
        for c in &cells[1..] {
            assert!(rate(c.as_str().unwrap()), "a byte rate: {c}");
        }
        assert!(n["samples"].as_u64().unwrap() >= 1, "{n}");
        for dir in ["rx", "tx"] {
            let s = &n[dir];
            let (min, mean, max) = (
                s["min"].as_f64().unwrap(),
                s["mean"].as_f64().unwrap(),
                s["max"].as_f64().unwrap(),
            );
            assert!(min <= mean && mean <= max, "{n}");
        }
    }
    let lo = net.iter().find(|n| n["name"] == "lo").expect("loopback");
    assert!(
        lo["rx"]["max"].as_f64().unwrap() > 0.0,
        "the run's traffic went over loopback: {lo}"
    );
}

/// `1.23 MiB/s (10.3 Mbit/s)`, `512 B/s (0.00 Mbit/s)`.
fn is_byte_rate() -> impl Fn(&str) -> bool {
    |s: &str| {
        let Some((bytes, bits)) = s.split_once("/s (") else {
            return false;
        };
        let num = |x: &str| x.parse::<f64>().is_ok();
        let bytes_ok = bytes
            .split_once(' ')
            .is_some_and(|(n, u)| num(n) && ["B", "KiB", "MiB", "GiB", "TiB"].contains(&u));
        bytes_ok && bits.strip_suffix(" Mbit/s)").is_some_and(num)
    }
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
