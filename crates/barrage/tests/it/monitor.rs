//! Monitoring end to end: `--spawn`, `--monitor PID|auto`, `--recovery`, leak and saturation
//! verdicts, against processes whose behaviour is known. Only 127.0.0.1; every run bounded.

use crate::common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

fn json_of(args: &[&str]) -> (Option<i32>, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let mut a: Vec<&str> = args.to_vec();
    a.extend(["-q", "--json", path.to_str().unwrap()]);
    let out = barrage()
        .args(&a)
        .timeout(Duration::from_secs(40))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let v = std::fs::read_to_string(&path)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    (
        out.status.code(),
        v,
        stdout + &String::from_utf8_lossy(&out.stderr),
    )
}

fn max_of(samples: &Value, f: impl Fn(&Value) -> f64) -> f64 {
    samples
        .as_array()
        .unwrap()
        .iter()
        .map(f)
        .fold(f64::MIN, f64::max)
}

#[test]
fn spawned_echo_server_is_watched_and_stops_cleanly() {
    let port = refused_port();
    let cmd = format!(
        "{} serve echo --listen 127.0.0.1:{port} --threads 1",
        bin().display()
    );
    let url = format!("tcp://127.0.0.1:{port}");
    let (code, v, out) = json_of(&[
        &url,
        "-c",
        "20",
        "-d",
        "2s",
        "--spawn",
        &cmd,
        "--monitor-interval",
        "250ms",
        "--recovery",
        "1s",
    ]);
    assert_eq!(code, Some(0), "{out}");
    let sp = &v["spawn"];
    assert_eq!(sp["exited_cleanly"], true, "{sp}");
    assert_eq!(sp["killed"], false);
    let samples = &v["monitor"]["processes"][0]["samples"];
    assert!(samples.as_array().unwrap().len() >= 8, "{samples}");
    assert!(max_of(samples, |s| s["cpu_pct"].as_f64().unwrap()) > 1.0);
    assert!(max_of(samples, |s| s["rss_bytes"].as_f64().unwrap()) > 1e6);
    // TCP-state counts equal the open connections.
    let est = max_of(samples, |s| s["tcp"]["established"].as_f64().unwrap());
    assert_eq!(est, 20.0, "{samples}");
    assert!(!v["monitor"]["host"].as_array().unwrap().is_empty());
    // barrage's own sockets are counted too (they read 0 in every sample before).
    let gen = &v["monitor"]["generator"];
    assert!(!gen.as_array().unwrap().is_empty());
    let own = max_of(gen, |s| s["tcp"]["established"].as_f64().unwrap());
    assert_eq!(own, 20.0, "{gen}");
    let a = &v["analysis"];
    assert_eq!(a["recovery"]["returned"], true, "{a}");
    assert_eq!(a["leak"]["verdict"], "no_leak", "{a}");
    assert!(out.contains("exited cleanly"), "{out}");
}

#[test]
fn a_server_that_ignores_sigterm_is_killed_and_reported() {
    let port = refused_port();
    let script = format!(
        "import signal, socket, time\n\
         signal.signal(signal.SIGTERM, signal.SIG_IGN)\n\
         s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
         s.bind(('127.0.0.1', {port})); s.listen(64)\n\
         conns = []\n\
         while True:\n    c, _ = s.accept(); conns.append(c)\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let py = dir.path().join("stubborn.py");
    std::fs::write(&py, script).unwrap();
    let cmd = format!("exec python3 {}", py.display());
    let url = format!("tcp://127.0.0.1:{port}");
    let t = Instant::now();
    let (_, v, out) = json_of(&[
        &url,
        "-c",
        "2",
        "-d",
        "1s",
        "--timeout",
        "300ms",
        "--spawn",
        &cmd,
        "--recovery",
        "0s",
    ]);
    assert!(t.elapsed() < Duration::from_secs(15));
    let sp = &v["spawn"];
    assert_eq!(sp["killed"], true, "{sp} {out}");
    assert_eq!(sp["exited_cleanly"], false);
    assert!(sp["stop_took_ms"].as_f64().unwrap() >= 4000.0, "{sp}");
    assert!(out.contains("ignored SIGTERM"), "{out}");
}

#[test]
fn a_server_that_fails_to_start_stops_the_run_before_load() {
    let port = refused_port();
    let url = format!("tcp://127.0.0.1:{port}");
    let t = Instant::now();
    let out = barrage()
        .args([&url, "-d", "30s", "-q", "--spawn", "echo oops >&2; exit 3"])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--spawn") && err.contains('3') && err.contains("oops"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no load, no summary");
}

#[test]
fn monitor_auto_finds_the_listening_process() {
    let server = EchoServer::start(&[]);
    let (code, v, out) = json_of(&[
        server.url(),
        "-c",
        "5",
        "-d",
        "1s",
        "--monitor",
        "auto",
        "--monitor-interval",
        "250ms",
        "--recovery",
        "0s",
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(v["monitor"]["processes"][0]["pid"], server.pid());
}

#[test]
fn monitoring_mistakes_are_usage_errors() {
    let port = refused_port();
    let url = format!("tcp://127.0.0.1:{port}");
    for (args, word) in [
        (vec!["--monitor", "4000000"], "no such process"),
        (vec!["--monitor", "abc"], "--monitor abc"),
        (vec!["--monitor", "auto"], "no process"),
        (vec!["--recovery", "5s"], "--recovery"),
    ] {
        let mut a = vec![url.as_str(), "-d", "1s"];
        a.extend(args);
        let out = barrage().args(&a).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{a:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(word), "{a:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn a_leaking_server_gets_a_leak_verdict() {
    // An echo server that also grows by 2 MiB every 100 ms and never gives it back.
    let port = refused_port();
    let script = format!(
        "import socket, threading, time\n\
         hoard = []\n\
         def grow():\n    while True:\n        hoard.append(bytearray(b'x' * (2 << 20))); time.sleep(0.1)\n\
         threading.Thread(target=grow, daemon=True).start()\n\
         s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
         s.bind(('127.0.0.1', {port})); s.listen(64)\n\
         def serve(c):\n    while True:\n        d = c.recv(65536)\n        if not d: return\n        c.sendall(d)\n\
         while True:\n    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let py = dir.path().join("leaky.py");
    std::fs::write(&py, script).unwrap();
    let cmd = format!("exec python3 {}", py.display());
    let url = format!("tcp://127.0.0.1:{port}");
    let (_, v, out) = json_of(&[
        &url,
        "-c",
        "2",
        "-d",
        "3s",
        "--think",
        "50ms",
        "--spawn",
        &cmd,
        "--monitor-interval",
        "250ms",
        "--recovery",
        "1s",
        "--threshold",
        "leak == no",
    ]);
    let leak = &v["analysis"]["leak"];
    assert_eq!(leak["verdict"], "leak", "{leak} {out}");
    // At most 2 MiB per 100 ms = 72,000 MiB/h (a busy machine only slows the grower down);
    // how close it gets is a measurement, not something to assert.
    let slope = leak["slope_mib_per_hour"].as_f64().unwrap();
    assert!(slope > 0.0 && slope <= 95_000.0, "{slope}");
    assert_eq!(v["analysis"]["recovery"]["returned"], false);
    assert_eq!(v["thresholds"][0]["passed"], false);
    assert!(out.contains("LEAK"), "{out}");
}

/// Who starved whom, end to end: only invariants that hold on any machine, however busy (the
/// classification itself is tested on synthetic series in `barrage-metrics`). The old version
/// of this test asserted "no saturated second" for an idle run and failed on a busy machine.
#[test]
fn saturation_causes_and_other_cpu_are_consistent() {
    let server = EchoServer::start(&[]);
    let (_, v, out) = json_of(&[
        server.url(),
        "-c",
        "5",
        "-t",
        "1",
        "--rate",
        "50",
        "-d",
        "2s",
        "--monitor",
        "auto",
        "--recovery",
        "0s",
    ]);
    let a = &v["analysis"];
    let sat = &a["saturation"];
    let n = |x: &Value| x.as_u64().unwrap();
    let saturated = n(&sat["saturated_s"]);
    assert!(
        n(&sat["own_work_s"]) + n(&sat["server_s"]) + n(&sat["starved_s"]) <= saturated,
        "{sat}"
    );
    let ramp_causes =
        n(&sat["ramp_own_work_s"]) + n(&sat["ramp_server_s"]) + n(&sat["ramp_starved_s"]);
    assert!(ramp_causes <= n(&sat["ramp_s"]), "{sat}");
    // The same seconds are flagged in the time series, with those outside the steady state
    // (warm-up, ramp up, ramp down), which are counted apart (`ramp_s`), not in the headline.
    let flagged = v["timeseries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["saturated"] == true)
        .count() as u64;
    assert_eq!(flagged, saturated + n(&sat["ramp_s"]), "{sat}");
    // Other processes' CPU: one value per machine sample, within the machine's capacity.
    let c = &a["contention"];
    let cores = v["environment"]["cores"].as_f64().unwrap();
    let per_s = c["per_second"].as_array().unwrap();
    assert!(!per_s.is_empty(), "{c}");
    assert!(per_s.len() <= v["monitor"]["host"].as_array().unwrap().len());
    for o in per_s {
        let pct = o["pct"].as_f64().unwrap();
        assert!((0.0..=cores * 100.0 + 1e-6).contains(&pct), "{o}");
    }
    let (avg, max) = (
        c["other_avg_pct"].as_f64().unwrap(),
        c["other_max_pct"].as_f64().unwrap(),
    );
    assert!(avg <= max + 1e-9);
    assert_eq!(c["material"], avg > 20.0);
    assert!(out.contains("Others        CPU under load avg"), "{out}");
    // Each verdict is said where it applies, and only there.
    let perf = &v["readiness"][0]["figure"];
    assert_eq!(
        perf.as_str().unwrap().contains("other processes used"),
        c["material"] == true,
        "{perf}"
    );
    assert_eq!(
        out.contains("starved of CPU by other processes"),
        n(&sat["starved_s"]) > 0,
        "{out}"
    );
}

/// Issue 43: a run that asks for no monitoring samples barrage's and its machine's CPU anyway
/// (`monitor.unasked`), the loopback listener found quietly so that its CPU is not counted
/// as other processes'; the stability and saturation rules read them. Its summary shows no
/// monitoring section: at most the one Machine busy line (this machine may be busy, so its
/// presence is not asserted).
#[test]
fn a_plain_run_samples_barrage_and_its_machine_unasked() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let out = barrage()
        .args([server.url(), "-c", "2", "-d", "2s", "--no-tui", "--json"])
        .arg(&path)
        .timeout(Duration::from_secs(40))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let v = read_json(&path);
    let m = &v["monitor"];
    assert_eq!(m["unasked"], true, "{m}");
    assert_eq!(m["processes"][0]["pid"], server.pid(), "the listener");
    assert!(!m["generator"].as_array().unwrap().is_empty(), "{m}");
    assert!(!m["host"].as_array().unwrap().is_empty(), "{m}");
    // No TCP states are gathered unasked (no socket scan), no interfaces kept.
    assert_eq!(m["generator"][0]["tcp"]["established"], 0);
    assert_eq!(m["host"][0]["net"], serde_json::json!([]));
    assert_eq!(v["analysis"]["saturation"]["cpu_measured"], true);
    assert!(v["analysis"]["contention"].is_object(), "{}", v["analysis"]);
    assert!(v["analysis"]["server"].is_null() && v["analysis"]["leak"].is_null());
    for section in ["Server ", "Network ", "Others ", "Generator "] {
        assert!(!text.lines().any(|l| l.starts_with(section)), "{text}");
    }
    let machine: Vec<&str> = text.lines().filter(|l| l.starts_with("Machine")).collect();
    assert!(
        machine.len() <= 1
            && machine
                .iter()
                .all(|l| l.starts_with("Machine       busy: other processes used ")),
        "{text}"
    );
    assert!(text.contains("the server was not monitored"), "{text}");
}
