//! `--server-metrics URL --server-metric SELECTOR`: the server's own metrics on the run's
//! timeline, against `barrage serve chat --metrics` (OpenMetrics): a counter's rate adds up
//! to what the server says it did, a gauge is kept as scraped, thresholds judge them, and bad
//! input is one line. (Against a third-party exposition: tests/it/prometheus.rs reads
//! Prometheus's own /metrics.)

use crate::common::*;

#[test]
fn the_servers_own_counters_reconcile_with_what_it_served() {
    let mport = free_port();
    let server = EchoServer::serve("chat", &["--metrics", &format!("127.0.0.1:{mport}")]);
    let dir = tempfile::tempdir().unwrap();
    let example = example_without_thresholds("chat-rooms.toml", dir.path());
    let json = dir.path().join("r.json");
    let url = format!("http://127.0.0.1:{mport}/metrics");
    let out = barrage()
        .timeout(std::time::Duration::from_secs(60))
        .arg("run")
        .arg(&example)
        .args(["--target", server.url()])
        .args(["--users", "120", "--arrive", "1000", "--hold", "5s"])
        .args(["--server-metrics", &url])
        .args([
            "--server-metric",
            "out=barrage_server_chat_deliveries_out_total",
        ])
        .args(["--server-metric", "barrage_server_connections_open"])
        .args(["--monitor-interval", "500ms"])
        .args([
            "--threshold",
            "server.metric.barrage_server_connections_open.max >= 100",
        ])
        .args(["--threshold", "server.metric.out.max > 0"])
        .args(["-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let v = read_json(&json);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        v["thresholds"]
    );
    let stats = server.stop();
    let metrics = v["server_metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), 2);
    let m = &metrics[0];
    assert_eq!(
        (m["name"].as_str(), m["kind"].as_str()),
        (Some("out"), Some("rate"))
    );
    assert_eq!(m["missed"], 0);
    // The increase over the run is what the server says it delivered.
    let increase = m["increase"].as_f64().unwrap();
    assert_eq!(increase, stats["chat"]["deliveries_out"].as_f64().unwrap());
    assert!(increase > 0.0);
    // The rates, times their intervals, add up to the increase.
    let samples = m["samples"].as_array().unwrap();
    let mut prev_t = 0.0f64;
    let mut sum = 0.0;
    for s in samples {
        let (t, rate) = (s[0].as_f64().unwrap(), s[1].as_f64().unwrap());
        sum += rate * (t - prev_t);
        prev_t = t;
    }
    // The first sample's interval starts at the first scrape, near 0.
    assert!(
        (sum - increase).abs() <= increase * 0.02 + 1.0,
        "{sum} vs {increase}"
    );
    let g = &metrics[1];
    assert_eq!(g["kind"], "gauge");
    let peak = g["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[1].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(peak, 120.0, "the 120 users were connected at once");
    // Thresholds judged them.
    for t in v["thresholds"].as_array().unwrap() {
        assert_eq!(t["passed"], true, "{t}");
    }
    // The reports show them.
    let text = String::from_utf8_lossy(&out.stdout);
    let _ = text;
    let md = dir.path().join("r.md");
    let r = barrage()
        .arg("report")
        .arg(&json)
        .arg("-o")
        .arg(&md)
        .output()
        .unwrap();
    assert!(r.status.success());
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("Server metrics") && md.contains("barrage_server_connections_open"),
        "{md}"
    );
}

#[test]
fn server_metric_flags_are_checked_before_any_load() {
    let cases: [(&[&str], &str); 5] = [
        (&["--server-metric", "x"], "--server-metrics URL"),
        (
            &["--server-metrics", "http://127.0.0.1:9/metrics"],
            "--server-metric NAME",
        ),
        (
            &[
                "--server-metrics",
                "https://127.0.0.1:9/",
                "--server-metric",
                "x",
            ],
            "http://",
        ),
        (
            &[
                "--server-metrics",
                "http://192.0.2.1:9/",
                "--server-metric",
                "x",
            ],
            "--listen-any",
        ),
        (
            &[
                "--server-metrics",
                "http://127.0.0.1:9/",
                "--server-metric",
                "x",
                "--threshold",
                "server.metric.y.max < 1",
            ],
            "no --server-metric is named y",
        ),
    ];
    for (args, want) in cases {
        let out = barrage()
            .args(["tcp://127.0.0.1:9", "-n", "1"])
            .args(args)
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: {e}");
    }
}
