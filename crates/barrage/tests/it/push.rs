//! Push outputs (issue 45, item 8): `--influx URL` against a real InfluxDB (Debian's
//! `influxdb`, 1.x, a child of the test on free ports of 127.0.0.1 with its data in a
//! temporary directory). The points it holds, summed over the run, are the run's own figures
//! exactly; an InfluxDB that is not there costs the run nothing but a line.
//!
//! When influxd is missing the test prints "skipped: ..." and passes, except under CI, where
//! `.ci/install` installs it.

use crate::common::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

struct Influx {
    _child: Guard,
    port: u16,
    _dir: tempfile::TempDir,
}

fn influxd() -> Option<std::path::PathBuf> {
    ["/usr/bin/influxd", "/usr/local/bin/influxd"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.is_file())
}

impl Influx {
    fn start() -> Option<Influx> {
        let bin = influxd();
        if !available("influxd", bin.is_some()) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap().to_string();
        for _ in 0..3 {
            let (port, rpc) = (refused_port(), refused_port());
            let conf = format!(
                "reporting-disabled = true\nbind-address = \"127.0.0.1:{rpc}\"\n\
                 [meta]\n  dir = \"{d}/meta\"\n[data]\n  dir = \"{d}/data\"\n  wal-dir = \"{d}/wal\"\n\
                 query-log-enabled = false\n[http]\n  bind-address = \"127.0.0.1:{port}\"\n\
                 log-enabled = false\n[monitor]\n  store-enabled = false\n\
                 [continuous_queries]\n  enabled = false\n"
            );
            let path = dir.path().join("influxdb.conf");
            std::fs::write(&path, conf).unwrap();
            let mut child = StdCommand::new(bin.as_ref().unwrap())
                .arg("-config")
                .arg(&path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn influxd");
            if wait_listening(&mut child, port) {
                let i = Influx {
                    _child: Guard(child),
                    port,
                    _dir: dir,
                };
                // Listening is not yet serving: wait for /ping.
                let t = Instant::now();
                while i.http("GET", "/ping", "").0 != 204 {
                    assert!(
                        t.elapsed() < Duration::from_secs(20),
                        "influxd never answered /ping"
                    );
                    std::thread::sleep(Duration::from_millis(50));
                }
                return Some(i);
            }
            drop(Guard(child));
        }
        panic!("influxd did not start");
    }

    /// One HTTP/1.0 request: (status, body).
    fn http(&self, method: &str, path_query: &str, body: &str) -> (u16, String) {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return (0, String::new());
        };
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = write!(
            s,
            "{method} {path_query} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: \
             application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        let status = text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
        (status, body)
    }

    /// `q` (InfluxQL, form-encoded by hand: only what these queries need).
    fn query(&self, db: &str, q: &str) -> Value {
        let enc: String = q
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => {
                    (b as char).to_string()
                }
                b' ' => "+".into(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (status, body) = self.http("POST", &format!("/query?db={db}"), &format!("q={enc}"));
        assert_eq!(status, 200, "{q}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    fn url(&self, db: &str) -> String {
        format!("http://127.0.0.1:{}/write?db={db}", self.port)
    }
}

/// `SELECT sum(F) ...`'s one value.
fn sum(v: &Value) -> u64 {
    v["results"][0]["series"][0]["values"][0][1]
        .as_u64()
        .unwrap_or(0)
}

#[test]
fn influx_holds_every_second_and_its_sums_are_the_runs_figures() {
    let Some(db) = Influx::start() else { return };
    db.query("barrage", "CREATE DATABASE barrage");
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let v = run_json(
        &[
            server.url(),
            "-c",
            "4",
            "-n",
            "3000",
            "--rate",
            "1500",
            "--influx",
            &db.url("barrage"),
        ],
        &json,
    );
    let stats = server.stop();
    let completed = u(&v, "summary.exchanges.completed");
    assert_eq!(completed, 3000);
    let seconds = v["timeseries"].as_array().unwrap().len() as u64;
    let q = |f: &str| sum(&db.query("barrage", &format!("SELECT sum({f}) FROM barrage")));
    // Every second is a point: the run's per-second series, summed, is the run.
    let per_second: u64 = v["timeseries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(q("completed"), per_second);
    assert_eq!(q("completed"), completed);
    assert_eq!(q("sent"), u(&v, "summary.exchanges.sent"));
    assert_eq!(q("errors"), 0);
    assert_eq!(q("bytes_written"), u(&stats, "bytes_read"));
    let points = db.query("barrage", "SELECT count(completed) FROM barrage");
    assert_eq!(sum(&points), seconds, "one point per second: {points}");
    // Tagged with the run and its target.
    let tags = db.query("barrage", "SHOW TAG VALUES FROM barrage WITH KEY = target");
    assert_eq!(
        tags["results"][0]["series"][0]["values"][0][1],
        s(&v, "config.target"),
        "{tags}"
    );
}

/// A run whose InfluxDB refuses its points (no such database), or is not there at all, is
/// not a failed run: it completes, and one line says how many seconds were not written.
#[test]
fn an_influx_that_refuses_or_is_absent_costs_a_line_not_the_run() {
    let server = EchoServer::start(&[]);
    let refused = format!("http://127.0.0.1:{}/write?db=x", refused_port());
    let mut urls = vec![refused];
    let db = Influx::start();
    if let Some(db) = &db {
        urls.push(db.url("nope"));
    }
    for url in urls {
        let out = barrage()
            .args([server.url(), "-c", "2", "-n", "200", "-q", "--influx", &url])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{url}: {err}");
        assert!(
            err.contains("--influx http://127.0.0.1:") && err.contains("seconds not written"),
            "{url}: {err}"
        );
        assert!(!err.contains("db="), "the URL's query is not shown: {err}");
    }
}

/// Etsy's StatsD (npm `statsd`, tests/statsd) on free ports of 127.0.0.1, flushing never
/// during the test, so its counters hold the whole run; read through its management port.
struct StatsdDaemon {
    _child: Guard,
    port: u16,
    mgmt: u16,
    _dir: tempfile::TempDir,
}

impl StatsdDaemon {
    fn start() -> Option<StatsdDaemon> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/statsd");
        let stats = root.join("node_modules/statsd/stats.js");
        let node = on_path("node");
        let what = if node {
            "tests/statsd/node_modules (npm ci in tests/statsd)"
        } else {
            "node"
        };
        if !available(what, node && stats.is_file()) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..3 {
            let (port, mgmt) = (refused_port(), refused_port());
            let conf = dir.path().join("statsd.js");
            std::fs::write(
                &conf,
                format!(
                    "{{ port: {port}, address: \"127.0.0.1\", mgmt_address: \"127.0.0.1\", \
                     mgmt_port: {mgmt}, backends: [], flushInterval: 3600000 }}"
                ),
            )
            .unwrap();
            let mut child = StdCommand::new("node")
                .arg(&stats)
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn statsd");
            if wait_listening(&mut child, mgmt) {
                return Some(StatsdDaemon {
                    _child: Guard(child),
                    port,
                    mgmt,
                    _dir: dir,
                });
            }
            drop(Guard(child));
        }
        panic!("statsd did not start");
    }

    /// The management port's answer to `what` (`counters`, `gauges`): `'name': value` lines.
    fn dump(&self, what: &str) -> std::collections::HashMap<String, f64> {
        let mut s = TcpStream::connect(("127.0.0.1", self.mgmt)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        writeln!(s, "{what}").unwrap();
        let mut text = String::new();
        let mut buf = [0u8; 4096];
        while !text.contains("END") {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "statsd closed before END: {text}");
            text.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        text.lines()
            .filter_map(|l| {
                let (k, v) = l.trim().trim_end_matches(',').split_once(": ")?;
                Some((k.trim_matches('\'').to_string(), v.parse().ok()?))
            })
            .collect()
    }
}

#[test]
fn statsd_counters_summed_over_the_run_are_the_runs_figures() {
    let Some(d) = StatsdDaemon::start() else {
        return;
    };
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let addr = format!("127.0.0.1:{}", d.port);
    let v = run_json(
        &[
            server.url(),
            "-c",
            "4",
            "-n",
            "3000",
            "--rate",
            "1500",
            "--statsd",
            &addr,
            "--statsd-prefix",
            "lt.run1",
        ],
        &dir.path().join("r.json"),
    );
    let stats = server.stop();
    // UDP on loopback: give the daemon a moment to read the last datagrams.
    std::thread::sleep(Duration::from_millis(300));
    let c = d.dump("counters");
    assert_eq!(c["lt.run1.exchanges.completed"] as u64, 3000, "{c:?}");
    assert_eq!(
        c["lt.run1.exchanges.sent"] as u64,
        u(&v, "summary.exchanges.sent")
    );
    assert_eq!(c["lt.run1.bytes.written"] as u64, u(&stats, "bytes_read"));
    assert_eq!(c["lt.run1.connects"] as u64, 4);
    assert!(
        !c.contains_key("lt.run1.errors"),
        "no error, none sent: {c:?}"
    );
    assert_eq!(c["statsd.bad_lines_seen"] as u64, 0, "{c:?}");
    let g = d.dump("gauges");
    assert!(g.contains_key("lt.run1.connections.open"), "{g:?}");
    // A StatsD that is not there: the run is unharmed, one line says what was not sent (the
    // kernel reports the port unreachable to the datagrams after the first).
    let server = EchoServer::start(&[]);
    let nobody = format!("127.0.0.1:{}", refused_port());
    let out = barrage()
        .args([server.url(), "-c", "2", "-n", "1500", "--rate", "500", "-q"])
        .args(["--statsd", &nobody])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("warning: --statsd {nobody}:")) && err.contains("datagrams not sent"),
        "{err}"
    );
}

/// `--otlp` through a real OpenTelemetry Collector (tests/otelcol: its OTLP/HTTP receiver
/// and file exporter, built by `.ci/install`): the collector takes every second barrage sends,
/// and the sums it wrote are the run's figures.
#[test]
fn an_opentelemetry_collector_takes_every_second_and_its_sums_are_the_runs_figures() {
    let bin = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/otelcol/bin/otelcol-barrage");
    if !available(
        "tests/otelcol/bin/otelcol-barrage (.ci/install)",
        bin.is_file(),
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("metrics.json");
    let port = refused_port();
    let conf = dir.path().join("otelcol.yaml");
    std::fs::write(
        &conf,
        format!(
            "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:{port}\n\
             exporters:\n  file:\n    path: {}\nservice:\n  telemetry:\n    metrics:\n      \
             level: none\n  pipelines:\n    metrics:\n      receivers: [otlp]\n      \
             exporters: [file]\n",
            out.display()
        ),
    )
    .unwrap();
    let mut child = StdCommand::new(&bin)
        .arg(format!("--config={}", conf.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the collector");
    assert!(
        wait_listening(&mut child, port),
        "the collector did not listen"
    );
    let _collector = Guard(child);
    let server = EchoServer::start(&[]);
    let v = run_json(
        &[
            server.url(),
            "-c",
            "4",
            "-n",
            "3000",
            "--rate",
            "1500",
            "--otlp",
            &format!("http://127.0.0.1:{port}/v1/metrics"),
        ],
        &dir.path().join("r.json"),
    );
    let stats = server.stop();
    // The file exporter writes each request as it comes: wait for all of them.
    let seconds = v["timeseries"].as_array().unwrap().len();
    let sum_of = |name: &str| -> (u64, usize) {
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        let mut total = (0, 0);
        for line in text.lines() {
            // The last line may still be being written.
            let Ok(d) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            for m in d["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
                .as_array()
                .unwrap()
            {
                if m["name"] == name {
                    for p in m["sum"]["dataPoints"].as_array().unwrap() {
                        total.0 += p["asInt"].as_str().unwrap().parse::<u64>().unwrap();
                        total.1 += 1;
                    }
                }
            }
        }
        total
    };
    let t = Instant::now();
    while sum_of("barrage.exchanges.completed").1 < seconds {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the collector wrote {} of {seconds} seconds",
            sum_of("barrage.exchanges.completed").1
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(sum_of("barrage.exchanges.completed"), (3000, seconds));
    assert_eq!(
        sum_of("barrage.exchanges.sent").0,
        u(&v, "summary.exchanges.sent")
    );
    assert_eq!(sum_of("barrage.bytes.written").0, u(&stats, "bytes_read"));
    assert_eq!(sum_of("barrage.errors").1, 0);
}
