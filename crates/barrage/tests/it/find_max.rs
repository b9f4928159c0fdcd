//! `barrage find-max` end to end: against `serve http --service-time` (one thread serving one
//! request at a time: a known capacity), the bad inputs, and an interrupted search.

use crate::common::{self, bin, read_json, send_signal, wait_at_most, wrote, Guard};
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// The searches judge barrage's own timeliness: two of them at once on a 2-core machine would
/// starve each other and rightly end as "barrage was the limit". They take turns.
static ONE_SEARCH_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_SEARCH_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `barrage serve http` with one thread and `--service-time`, stopped when the guard drops.
fn capacity_server(service_time: &str) -> (Guard, u16) {
    server(&["--service-time", service_time, "--exit-after", "120s"])
}

fn server(extra: &[&str]) -> (Guard, u16) {
    let mut child = Command::new(bin())
        .args(["serve", "http", "--listen", "127.0.0.1:0", "--threads", "1"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn barrage serve http");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("read server banner");
    let port = first
        .split_once("listening on 127.0.0.1:")
        .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected server banner: {first:?}"));
    (Guard(child), port)
}

#[test]
/// How close the result is to the server's capacity is a measured figure (`bench/find-max.sh`);
/// here only what holds on any machine: the search brackets the point where an SLO broke, with
/// steps it really ran, and says which SLO.
fn find_max_brackets_the_breaking_point_and_names_the_broken_slo() {
    let _turn = one_at_a_time();
    // One thread, 500 µs per request: 2,000 requests per second at most.
    let (_server, port) = capacity_server("500us");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("find-max.json");
    let md = dir.path().join("find-max.md");
    let out = assert_cmd::Command::new(bin())
        .timeout(Duration::from_secs(90))
        .args(["find-max", &format!("http://127.0.0.1:{port}/")])
        .args(["--slo", "p99 < 50ms", "--slo", "errors.rate < 1%"])
        .args(["--step-duration", "1s", "--step-warmup", "500ms"])
        .args(["--start-rate", "1000", "--max-steps", "12", "-t", "1", "-q"])
        .arg("--json")
        .arg(&json)
        .arg("--report")
        .arg(&md)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    // Issue 43: each file written is named on stderr, as a run's are.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("wrote ")).collect();
    assert_eq!(said, [wrote(&json), wrote(&md)], "{stderr}");
    let r = read_json(&json);
    assert_eq!(r["schema"], "barrage.find-max/1");
    if r["result"]["end"] == "generator_limit" {
        // A machine busy enough to starve barrage: the search must say so, never a knee.
        let verdict = stdout.lines().find(|l| l.starts_with("verdict: ")).unwrap();
        assert!(
            verdict.contains("barrage itself was the limit"),
            "{verdict}"
        );
        eprintln!("barrage was starved on this machine; the bracketing was not checked");
        return;
    }
    assert_eq!(r["result"]["end"], "found", "{stdout}");
    let max = r["result"]["max_ok"].as_f64().unwrap();
    let bad = r["result"]["first_bad"].as_f64().unwrap();
    assert!(bad > max && bad <= max * 1.05, "{bad} vs {max}");
    let why = r["result"]["why"].as_str().unwrap();
    assert!(why.starts_with("p99 < 50ms broken: p99 = "), "{why}");
    let steps = r["steps"].as_array().unwrap();
    assert!(steps.len() <= 12 && steps.len() >= 3, "{}", steps.len());
    let offered: Vec<f64> = steps
        .iter()
        .map(|s| s["offered"].as_f64().unwrap())
        .collect();
    assert!(
        offered.contains(&max) && offered.contains(&bad),
        "{offered:?}"
    );
    for s in steps {
        assert!(s["offered"].as_f64().unwrap() <= 1e6);
        assert_eq!(s["slos"].as_array().unwrap().len(), 2, "{s}");
        assert!(s["summary"]["requests"].as_u64().unwrap() > 0, "{s}");
    }
    let verdict = stdout.lines().find(|l| l.starts_with("verdict: ")).unwrap();
    assert!(
        verdict.starts_with("verdict: max ") && verdict.contains("broke it: p99 < 50ms broken"),
        "{verdict}"
    );
    let report = std::fs::read_to_string(&md).unwrap();
    assert!(report.contains("| step | offered | achieved |"), "{report}");
    assert_eq!(report.matches("\n| ").count(), steps.len() + 1, "{report}");
}

#[test]
fn find_max_refuses_bad_input_with_one_line_naming_the_flag() {
    let url = "http://127.0.0.1:9/";
    let cases: &[(&[&str], &str)] = &[
        (&["--slo", "p99 < 20"], "--slo"),
        (&["--slo", "server.cpu.avg < 50%"], "--slo"),
        (&["--slo", "p99 < 20ms", "--rate", "100"], "--rate"),
        (&["--slo", "p99 < 20ms", "-d", "5s"], "-d/--duration"),
        (&["--slo", "p99 < 20ms", "--precision", "0%"], "--precision"),
        (&["--slo", "p99 < 20ms", "--max-steps", "0"], "--max-steps"),
        (
            &[
                "--slo",
                "p99 < 20ms",
                "--start-rate",
                "5k",
                "--max-rate",
                "1k",
            ],
            "--start-rate",
        ),
        (&["--slo", "p99 < 20ms", "--report", "out.txt"], "--report"),
        (
            &["--slo", "p99 < 20ms", "--spawn", "true"],
            "--monitor/--spawn",
        ),
        (
            &["--slo", "p99 < 20ms", "--threshold", "p99 < 1s"],
            "--threshold",
        ),
        // Issue 43: these were taken and no file was written, silently.
        (
            &["--slo", "p99 < 20ms", "--csv", "s.csv"],
            "--csv/--hdr-log/--out",
        ),
        (
            &["--slo", "p99 < 20ms", "--out", "dir"],
            "--csv/--hdr-log/--out",
        ),
    ];
    for (args, flag) in cases {
        let out = assert_cmd::Command::new(bin())
            .timeout(Duration::from_secs(20))
            .args(["find-max", url])
            .args(*args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(flag),
            "{args:?}: {err}"
        );
    }
    // No SLO at all: clap's one line.
    let out = assert_cmd::Command::new(bin())
        .timeout(Duration::from_secs(20))
        .args(["find-max", url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--slo"));
}

#[test]
fn serve_service_time_is_refused_for_servers_other_than_http() {
    let out = assert_cmd::Command::new(bin())
        .timeout(Duration::from_secs(20))
        .args([
            "serve",
            "echo",
            "--listen",
            "127.0.0.1:0",
            "--service-time",
            "1ms",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: --service-time applies to serve http"),
        "{err}"
    );
}

#[test]
fn an_interrupted_find_max_reports_what_it_found_so_far() {
    let _turn = one_at_a_time();
    let (_server, port) = capacity_server("100us");
    let mut child = common::signals_at_default(Command::new(bin()))
        .args(["find-max", &format!("http://127.0.0.1:{port}/")])
        .args([
            "--slo",
            "p99 < 1s",
            "--step-duration",
            "1s",
            "--step-warmup",
            "0s",
        ])
        .args(["--start-rate", "100", "-t", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut stdout = child.stdout.take().unwrap();
    let mut child = Guard(child);
    let mut line = String::new();
    while !line.starts_with("step 1: offered") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "no step line");
    }
    send_signal(child.0.id(), "INT");
    let st = wait_at_most(&mut child.0, Duration::from_secs(20)).expect("exits after SIGINT");
    assert_eq!(st.code(), Some(130));
    let mut text = String::new();
    stdout.read_to_string(&mut text).unwrap();
    // What the interruption reports is under test, not the machine: a starved one may not
    // have completed 95 % of 100/s, which the step then says.
    assert!(
        text.contains("verdict: interrupted: so far 100/s met every SLO")
            || text.contains(
                "verdict: interrupted: so far no rate met every SLO; 100/s broke it: completed"
            ),
        "{text}"
    );
}

#[test]
fn find_max_writes_json_on_stdout_and_an_html_report_and_stops_at_max_steps() {
    let _turn = one_at_a_time();
    let (_server, port) = capacity_server("100us");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("knee.html");
    let out = assert_cmd::Command::new(bin())
        .timeout(Duration::from_secs(60))
        .args(["find-max", &format!("http://127.0.0.1:{port}/")])
        .args([
            "--slo",
            "p99 < 1s",
            // 2 s steps: a step that ends 50 ms late (a starved machine) still sends 95 %.
            "--step-duration",
            "2s",
            "--step-warmup",
            "0s",
        ])
        .args(["--start-rate", "100", "--max-steps", "2", "-t", "1", "-q"])
        .args(["--json", "-", "--report"])
        .arg(&html)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let page = std::fs::read_to_string(&html).unwrap();
    // Issue 43: the report's page (its stylesheet and charts), and its one line on stderr
    // (nothing for the JSON on stdout).
    assert!(
        page.contains("<table class=\"steps\">")
            && page.matches("<div class=\"chart-box\"").count() == 3
            && page.contains("window.barrageFitAxis"),
        "{page}"
    );
    let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("wrote ")).collect();
    assert_eq!(said, [wrote(&html)], "{stderr}");
    assert_eq!(
        r["steps"][0]["spec"]["mode"]["per_s"], 100.0,
        "{}",
        r["steps"][0]["spec"]
    );
    if r["result"]["end"] == "generator_limit" {
        // A machine busy enough to starve barrage (seen once beside two busy loops and a
        // headless Chromium): the search must say so, never a knee.
        assert!(stderr.contains("barrage itself was the limit"), "{stderr}");
        eprintln!("barrage was starved on this machine; the max-steps stop was not checked");
        return;
    }
    assert_eq!(r["result"]["end"], "max_steps");
    let second = &r["steps"][1]["verdict"];
    if second["kind"] == "suspect" {
        // The 200/s step broke the SLO by no more than barrage's own loop was late (seen in
        // a CI run beside the Windows build): not concluded, so 100/s is the best that
        // passed, and the step says why.
        assert!(second["why"].as_str().unwrap().contains("late"), "{second}");
        assert_eq!(r["result"]["max_ok"], 100.0);
        eprintln!("barrage was late at 200/s on this machine; the SLO pass was not checked");
        return;
    }
    assert_eq!(r["result"]["max_ok"], 200.0, "step 2: {second}");
    let steps = r["steps"].as_array().unwrap();
    let offered: Vec<f64> = steps
        .iter()
        .map(|s| s["offered"].as_f64().unwrap())
        .collect();
    assert_eq!(offered, vec![100.0, 200.0]);
    assert!(
        stderr.contains("verdict: --max-steps (2) ran out: 200/s met every SLO"),
        "{stderr}"
    );
}

#[test]
fn a_server_that_stops_accepting_connections_ends_the_search_with_what_it_measured() {
    let _turn = one_at_a_time();
    // The server leaves 2 s after its start: during or after the first 1 s step.
    let (_server, port) = server(&["--exit-after", "2s"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("gone.json");
    let out = assert_cmd::Command::new(bin())
        .timeout(Duration::from_secs(60))
        .args(["find-max", &format!("http://127.0.0.1:{port}/")])
        .args([
            "--slo",
            "p99 < 1s",
            "--step-duration",
            "1s",
            "--step-warmup",
            "0s",
        ])
        .args(["-t", "1", "-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let r = read_json(&json);
    assert_eq!(r["result"]["end"], "unreachable", "{stdout}");
    assert!(!r["steps"].as_array().unwrap().is_empty());
    assert!(
        stdout.contains("verdict: the server stopped accepting connections at "),
        "{stdout}"
    );
}
