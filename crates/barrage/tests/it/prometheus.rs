//! `--prometheus` against a real Prometheus server (Debian's `prometheus`, installed by
//! .ci/run): it scrapes barrage during a run; every sample of the request counter is a sum of
//! whole seconds of barrage's own time series, and every expression of the Grafana dashboard
//! (deploy/grafana/barrage-dashboard.json) returns data. Everything on 127.0.0.1.

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

struct Prometheus {
    child: Guard,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(scrape_port: u16) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: barrage\n    static_configs:\n      - targets: ['127.0.0.1:{scrape_port}']\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let child = StdCommand::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        let mut p = Prometheus {
            child: Guard(child),
            port,
            _dir: dir,
        };
        let t = Instant::now();
        while http_get(port, "/-/ready").is_none_or(|(s, _)| s != 200) {
            assert!(
                p.child.0.try_wait().unwrap().is_none(),
                "prometheus exited at start"
            );
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "prometheus never got ready"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        p
    }

    /// An instant query at `time` (Unix seconds); the `data.result` array.
    fn query(&self, q: &str, time: f64) -> Vec<Value> {
        let (status, body) = http_get(
            self.port,
            &format!("/api/v1/query?query={}&time={time}", encode(q)),
        )
        .expect("prometheus answers");
        assert_eq!(status, 200, "{q}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["status"], "success", "{q}: {body}");
        v["data"]["result"].as_array().unwrap().clone()
    }
}

#[test]
fn prometheus_scrapes_barrage_and_the_dashboard_has_data() {
    if !available("prometheus", on_path("prometheus")) {
        return;
    }
    let chat_port = free_port();
    let metrics_port = free_port();
    let prom = Prometheus::start(metrics_port);
    let dir = tempfile::tempdir().unwrap();
    let example = example_without_thresholds("chat-rooms.toml", dir.path());
    let json = dir.path().join("r.json");
    let spawn = format!(
        "exec {} serve chat --listen 127.0.0.1:{chat_port} --exit-after 120s",
        bin().display()
    );
    let out = barrage()
        .timeout(Duration::from_secs(120))
        .arg("run")
        .arg(&example)
        .args(["--target", &format!("tcp://127.0.0.1:{chat_port}")])
        .args(["--users", "60", "--arrive", "1000", "--hold", "7s"])
        .args(["--spawn", &spawn, "--recovery", "3s"])
        .args(["--prometheus", &format!("127.0.0.1:{metrics_port}")])
        // A third-party exposition: Prometheus's own /metrics (a Go process: go_goroutines).
        .args([
            "--server-metrics",
            &format!("http://127.0.0.1:{}/metrics", prom.port),
        ])
        .args(["--server-metric", "go_goroutines"])
        .args([
            "--server-metric",
            "scrapes=prometheus_target_interval_length_seconds_count",
        ])
        .args(["-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(json.exists(), "{stderr}");
    assert!(stderr.contains(&format!(
        "metrics on http://127.0.0.1:{metrics_port}/metrics"
    )));
    let r = read_json(&json);
    // Prometheus's own series, read by --server-metrics: a gauge and a counter (as a rate).
    let sm = r["server_metrics"].as_array().unwrap();
    assert_eq!(sm[0]["kind"], "gauge");
    assert!(sm[0]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s[1].as_f64().unwrap() > 0.0));
    assert_eq!(sm[1]["kind"], "rate");
    assert!(
        sm[1]["increase"].as_f64().unwrap() >= 1.0,
        "Prometheus scraped barrage: {}",
        sm[1]
    );
    // Every sample Prometheus took of the request counter is the sum of the first k seconds
    // of barrage's own time series, for some k.
    let ticks = r["timeseries"].as_array().unwrap();
    let mut prefix = vec![0u64];
    for t in ticks {
        prefix.push(prefix.last().unwrap() + t["requests"].as_u64().unwrap());
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let series = prom.query("barrage_requests_total[5m]", now);
    assert_eq!(series.len(), 1, "one series: {series:?}");
    let labels = &series[0]["metric"];
    assert_eq!(labels["shard"], "0");
    assert_eq!(labels["target"], format!("tcp://127.0.0.1:{chat_port}"));
    let samples = series[0]["values"].as_array().unwrap();
    assert!(samples.len() >= 3, "scraped during the run: {samples:?}");
    for s in samples {
        let v: u64 = s[1].as_str().unwrap().parse().unwrap();
        assert!(
            prefix.contains(&v),
            "{v} is no sum of whole seconds: {prefix:?}"
        );
    }
    let last: u64 = samples.last().unwrap()[1]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(last > 0);
    // Every expression of the dashboard returns data at the last scrape.
    let at = samples.last().unwrap()[0].as_f64().unwrap();
    let dash: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../deploy/grafana/barrage-dashboard.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut exprs = 0;
    for panel in dash["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"]
                .as_str()
                .unwrap()
                .replace("$__rate_interval", "10s")
                .replace("$run", ".*");
            let result = prom.query(&expr, at);
            assert!(
                !result.is_empty(),
                "{}: {expr} returned nothing",
                panel["title"]
            );
            exprs += 1;
        }
    }
    assert!(exprs >= 20);
    // The broadcast, step and server series carry the run's figures.
    let reach = prom.query(
        "sum(barrage_broadcast_deliveries_total) / sum(barrage_broadcast_expected_total)",
        at,
    );
    let reach: f64 = reach[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert!(reach > 0.9, "reach {reach}");
    let steps = prom.query("barrage_step_requests_total", at);
    let names: Vec<&str> = steps
        .iter()
        .map(|s| s["metric"]["step"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"login") && names.contains(&"say"),
        "{names:?}"
    );
    let rss = prom.query("barrage_server_rss_bytes", at);
    let rss: f64 = rss[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert!(rss > 0.0, "the spawned server's memory");
}

/// `/metrics` answers while the run goes; other paths are 404.
#[test]
fn metrics_are_served_during_the_run_only_on_loopback_by_default() {
    let server = EchoServer::start(&[]);
    let port = free_port();
    let mut child = Guard(
        signals_at_default(StdCommand::new(bin()))
            .args([
                server.url(),
                "-c",
                "2",
                "-d",
                "20s",
                "-q",
                "--prometheus",
                &port.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let t = Instant::now();
    // Wait for a scrape that has a whole second in it.
    let body = loop {
        if let Some((200, body)) = http_get(port, "/metrics") {
            let seconds = body
                .lines()
                .find(|l| l.starts_with("barrage_seconds_total{"))
                .and_then(|l| l.rsplit(' ').next())
                .and_then(|v| v.parse::<u64>().ok());
            if seconds.is_some_and(|n| n >= 1) {
                break body;
            }
        }
        assert!(t.elapsed() < Duration::from_secs(15), "no /metrics");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(body.ends_with("# EOF\n"), "OpenMetrics ends with # EOF");
    assert!(body.contains("barrage_errors_total{") && body.contains("class=\"timeout\""));
    assert_eq!(http_get(port, "/").map(|r| r.0), Some(404));
    send_signal(child.0.id(), "INT");
    let _ = wait_at_most(&mut child.0, Duration::from_secs(20));
    let e = barrage()
        .args([server.url(), "-n", "1", "--prometheus", "0.0.0.0:9464"])
        .output()
        .unwrap();
    assert_eq!(e.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&e.stderr).contains("--listen-any"));
}

/// The status of the answer to `req` on a new connection to `port` (its first line), or
/// `None` if the connection closed without one.
fn status_of(port: u16, req: &str) -> (std::net::TcpStream, Option<u16>) {
    use std::io::{BufRead, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut line = String::new();
    let _ = std::io::BufReader::new(s.try_clone().unwrap()).read_line(&mut line);
    (s, line.split(' ').nth(1).and_then(|c| c.parse().ok()))
}

/// Issue 24: 32 clients that sent nothing, or trickled their request head, held every slot of
/// the `--prometheus`/`--web` server and every scrape was answered 503, as long as they
/// liked; 32 event streams did the same to `/series`. Now a new connection takes the slot of
/// the oldest one still reading its head, a head must arrive within its deadline (408), and
/// streams leave slots for whole answers.
#[test]
fn slow_clients_and_streams_cannot_lock_a_scrape_out() {
    use std::io::{Read, Write};
    let server = EchoServer::start(&[]);
    let (prom, web) = (free_port(), free_port());
    let mut child = Guard(
        signals_at_default(StdCommand::new(bin()))
            .args([server.url(), "-c", "1", "-d", "60s", "-q", "--prometheus"])
            .arg(prom.to_string())
            .arg("--web")
            .arg(web.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let t = Instant::now();
    while http_get(prom, "/metrics").map(|r| r.0) != Some(200)
        || http_get(web, "/series").map(|r| r.0) != Some(200)
    {
        assert!(t.elapsed() < Duration::from_secs(15), "no /metrics");
        std::thread::sleep(Duration::from_millis(100));
    }
    // 40 connections that send nothing and 8 that send a byte now and then.
    let mut silent: Vec<_> = (0..40)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", prom)).unwrap())
        .collect();
    for s in silent.iter_mut().take(8) {
        s.write_all(b"GET /metr").unwrap();
    }
    let scrape = http_get(prom, "/metrics").map(|r| r.0);
    assert_eq!(scrape, Some(200), "a scrape behind 48 slow clients");
    drop(silent);
    // A head trickled a byte at a time is cut off at its deadline with a 408 (the old
    // per-read timeout let it go on for ever).
    let mut slow = std::net::TcpStream::connect(("127.0.0.1", prom)).unwrap();
    slow.set_read_timeout(Some(Duration::from_millis(250)))
        .unwrap();
    let (mut answer, mut buf) = (Vec::new(), [0u8; 256]);
    for b in b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
        .iter()
        .cycle()
        .take(40)
    {
        if slow.write_all(&[*b]).is_err() {
            break;
        }
        match slow.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(_) => continue,
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 408 "),
        "after 10 s: {answer:?}"
    );
    // 32 event streams: 28 are served, 4 are refused, and /series still answers.
    let events = "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    let streams: Vec<_> = (0..32).map(|_| status_of(web, events)).collect();
    let served = streams.iter().filter(|s| s.1 == Some(200)).count();
    let refused = streams.iter().filter(|s| s.1 == Some(503)).count();
    assert_eq!((served, refused), (28, 4));
    assert_eq!(http_get(web, "/series").map(|r| r.0), Some(200));
    assert_eq!(http_get(prom, "/metrics").map(|r| r.0), Some(200));
    drop(streams);
    send_signal(child.0.id(), "INT");
    assert!(wait_at_most(&mut child.0, Duration::from_secs(20)).is_some());
    server.stop();
}
