//! `--rate-stages`: an open-loop rate that follows TIME:RATE points, end to end against
//! `serve echo` (conservation, reconciliation with the server, the planned line in reports)
//! and its usage errors. The exactness of the schedule is tested in virtual time in
//! `barrage_engine::pacer`.

use crate::common::{barrage, read_json, u, EchoServer};

#[test]
fn a_rate_ramp_is_scheduled_sent_and_charted_against_its_plan() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = barrage()
        .arg(server.url())
        .args([
            "--rate-stages",
            "0s:0,1s:400,1500ms:0",
            "-c",
            "10",
            "-t",
            "1",
        ])
        .args(["-q", "--no-tui", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = read_json(&json);
    let stats = server.stop();
    assert_eq!(v["config"]["rate_stages"], "0s:0,1s:400,1500ms:0");
    assert_eq!(
        v["config"]["duration_s"].as_f64(),
        Some(1.5),
        "until the last point"
    );
    assert_eq!(v["config"]["planned_rate"].as_array().unwrap().len(), 3);
    let x = &v["summary"]["exchanges"];
    let (sched, sent, not_sent) = (
        x["scheduled"].as_u64().unwrap(),
        x["sent"].as_u64().unwrap(),
        x["not_sent"].as_u64().unwrap(),
    );
    assert_eq!(sched, sent + not_sent);
    assert_eq!(x["completed"].as_u64(), Some(sent));
    // The shape brings 300 events in 1.5 s; a connection's schedule starts when it is first
    // ready, so what fell due before the last one was ready (at most the shape's count then,
    // 200 t² on the ramp) need not be its load. No more than the shape can ever be due.
    let ready = v["summary"]["ramp"]["all_ready_s"].as_f64().unwrap();
    let before = (200.0 * ready.min(1.0).powi(2)).ceil() as u64 + 1;
    assert!(
        sched <= 300 && sched + before >= 300,
        "scheduled {sched}, ready at {ready} s"
    );
    assert_eq!(
        u(&stats, "bytes_read"),
        u(&v, "summary.totals.bytes_written")
    );
    let html = dir.path().join("out.html");
    let st = barrage()
        .args(["report"])
        .arg(&json)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(st.status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("planned"),
        "the throughput chart has the planned line"
    );
}

#[test]
fn bad_rate_stages_name_the_flag() {
    for (arg, word) in [
        ("0s:0,10s:0", "0 at every point"),
        ("1s:100,2s:10", "0s"),
        ("0s:100,fast", "TIME:RATE"),
        ("0s:100", "later point"),
    ] {
        let out = barrage()
            .args(["tcp://127.0.0.1:9", "--rate-stages", arg])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{arg}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains("--rate-stages") && err.contains(word),
            "{arg}: {err}"
        );
    }
    let out = barrage()
        .args([
            "tcp://127.0.0.1:9",
            "--rate-stages",
            "0s:1,1s:1",
            "--rate",
            "5",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_connection_ramp_opens_each_connection_once_and_closes_it_on_the_way_down() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = barrage()
        .arg(server.url())
        .args([
            "--conn-stages",
            "0s:0,400ms:20,800ms:20,1200ms:0",
            "--interval",
            "50ms",
        ])
        .args(["-q", "--no-tui", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = read_json(&json);
    let stats = server.stop();
    assert_eq!(
        v["config"]["connections"].as_u64(),
        Some(20),
        "the ramp's peak"
    );
    assert_eq!(v["config"]["mode"], "interval");
    assert_eq!(
        v["config"]["planned_connections"].as_array().unwrap().len(),
        4
    );
    assert_eq!(
        u(&v, "summary.connections.succeeded"),
        20,
        "each opened once"
    );
    assert_eq!(u(&stats, "connections_accepted"), 20);
    assert_eq!(
        u(&v, "summary.connections.open"),
        0,
        "all closed on the way down"
    );
    let x = &v["summary"]["exchanges"];
    assert_eq!(
        x["scheduled"],
        x["sent"].as_u64().unwrap() + x["not_sent"].as_u64().unwrap()
    );
    assert_eq!(x["completed"], x["sent"]);
    assert_eq!(
        u(&stats, "bytes_read"),
        u(&v, "summary.totals.bytes_written")
    );
    assert!(v["summary"].get("steps").is_none() || v["config"].get("steps").is_none());
}
