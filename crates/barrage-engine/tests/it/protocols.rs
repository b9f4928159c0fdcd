//! HTTP and WebSocket through the same engine, against the reference servers: counts reconcile
//! exactly with what the servers saw, in every mode.

use crate::common::*;
use barrage_engine::{Framing, Mode, Protocol, StatusSet, Template};
use barrage_metrics::{ErrorClass, LatencyBasis};
use barrage_servers::{http, ws, ServerHandle};
use std::time::Duration;

fn http_server() -> ServerHandle {
    http::start(http::HttpConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        tls: None,
        delay: None,
        service_time: None,
        stall_at: None,
        stall_for: Duration::ZERO,
        server_timing: false,
        reuse_port: false,
    })
    .unwrap()
}

fn ws_server() -> ServerHandle {
    ws::start(ws::WsConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        tls: None,
        delay: None,
        stall_at: None,
        stall_for: Duration::ZERO,
        reuse_port: false,
    })
    .unwrap()
}

#[test]
fn http_keep_alive_reconciles_with_the_server() {
    let server = http_server();
    let o = go(http_plan(
        server.local_addr(),
        10,
        Mode::PingPong,
        1.0,
        "GET",
        "/",
    ));
    let s = &o.outcome.summary;
    let st = settled(&server);
    let h = st.http.unwrap();
    assert!(s.requests > 1000);
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(h.requests, s.exchanges.sent);
    assert_eq!(h.responses_2xx, s.exchanges.completed);
    assert_eq!(s.totals.status.get(200), s.exchanges.completed);
    assert_eq!(s.totals.bytes_written, st.bytes_read);
    assert_eq!(s.totals.bytes_read, st.bytes_written);
    assert_eq!(st.connections_accepted, 10, "keep-alive: no reconnects");
    let ttfb = s.ttfb_us.unwrap();
    assert_eq!(ttfb.count, s.requests);
    assert!(ttfb.p50 <= s.latency_us.p50);
    assert!(o.outcome.summary.exchanges.balanced());
}

#[test]
fn http_pipelining_and_open_loop_modes() {
    let server = http_server();
    let mut p = http_plan(server.local_addr(), 4, Mode::PingPong, 0.5, "GET", "/");
    p.pipeline = 8;
    let o = go(p);
    let s = &o.outcome.summary;
    assert_eq!(s.errors.total(), 0);
    assert!(
        s.totals.writes * 2 < s.exchanges.sent,
        "pipelined writes are batched"
    );
    let pipelined = s.exchanges.sent;

    let o = go(http_plan(
        server.local_addr(),
        10,
        Mode::Rate(2000.0),
        1.0,
        "GET",
        "/",
    ));
    let s = &o.outcome.summary;
    assert_schedule_accounted(&o, 2000.0, 1.0);
    assert_eq!(s.latency_basis, LatencyBasis::IntendedSend);
    let st = settled(&server);
    assert_eq!(st.http.unwrap().requests, pipelined + s.exchanges.sent);
}

#[test]
fn http_statuses_outside_the_expected_set_are_errors() {
    let server = http_server();
    let o = go(http_plan(
        server.local_addr(),
        2,
        Mode::PingPong,
        0.3,
        "GET",
        "/status/503",
    ));
    let s = &o.outcome.summary;
    assert_eq!(s.exchanges.completed, 0);
    assert_eq!(
        s.errors.get(ErrorClass::UnexpectedStatus),
        s.exchanges.failed
    );
    assert_eq!(s.totals.status.get(503), s.exchanges.failed);

    let mut p = http_plan(
        server.local_addr(),
        2,
        Mode::PingPong,
        0.3,
        "GET",
        "/status/503",
    );
    if let Protocol::Http(h) = &mut p.protocol {
        h.expect_status = StatusSet(vec![(503, 503)]);
    }
    let o = go(p);
    assert_eq!(o.outcome.summary.errors.total(), 0);
    assert!(o.outcome.summary.exchanges.completed > 10);
}

#[test]
fn http_bodies_of_every_shape_complete() {
    let server = http_server();
    for path in [
        "/bytes/100000",
        "/chunked/50000",
        "/status/204",
        "/delay/20",
    ] {
        // A count, not a time: on a busy machine 0.3 s once held too few exchanges.
        let mut p = http_plan(server.local_addr(), 2, Mode::PingPong, 10.0, "GET", path);
        p.requests = Some(8);
        let o = go(p);
        let s = &o.outcome.summary;
        assert_eq!(s.exchanges.completed, 8, "{path}: {:?}", s.exchanges);
        assert_eq!(s.errors.total(), 0, "{path}: {:?}", s.errors);
    }
    let mut p = http_plan(
        server.local_addr(),
        2,
        Mode::PingPong,
        10.0,
        "HEAD",
        "/bytes/100000",
    );
    p.requests = Some(20);
    let o = go(p);
    assert_eq!(o.outcome.summary.errors.total(), 0);
    assert_eq!(o.outcome.summary.exchanges.completed, 20);
}

#[test]
fn websocket_echo_reconciles_with_the_server() {
    let server = ws_server();
    let mut p = ws_plan(server.local_addr(), 10, Mode::PingPong, 1.0);
    p.verify = true;
    let o = go(p);
    let s = &o.outcome.summary;
    let st = settled(&server);
    let w = st.ws.unwrap();
    assert!(s.requests > 1000);
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(w.messages_in, s.exchanges.sent);
    assert_eq!(w.messages_out, s.exchanges.completed);
    assert_eq!(w.handshakes, 10);
    assert_eq!(w.closes_received, 10, "close 1000 on shutdown");
    assert_eq!(s.totals.bytes_written, st.bytes_read);
    assert_eq!(s.handshake_us.unwrap().count, 10);
}

#[test]
fn websocket_binary_dynamic_and_publish_only() {
    let server = ws_server();
    let mut p = ws_plan(server.local_addr(), 3, Mode::PingPong, 0.5);
    p.message = Template::new(b"conn {conn} seq {seq}".to_vec());
    p.verify = true;
    if let Protocol::Ws(w) = &mut p.protocol {
        w.binary = true;
    }
    let o = go(p);
    assert_eq!(o.outcome.summary.errors.total(), 0);
    assert!(o.outcome.summary.exchanges.completed > 100);

    let mut p = ws_plan(
        server.local_addr(),
        5,
        Mode::Interval(Duration::from_millis(10)),
        1.0,
    );
    p.framing = Framing::None;
    let o = go(p);
    let s = &o.outcome.summary;
    assert_schedule_accounted(&o, 500.0, 1.0);
    assert_eq!(s.exchanges.completed, s.exchanges.sent);
    // The echoes still arrive: counted as replies, not as exchanges.
    assert!(s.totals.replies > 0);
}

#[test]
fn websocket_large_messages_and_pipelining() {
    let server = ws_server();
    let mut p = ws_plan(server.local_addr(), 2, Mode::PingPong, 0.5);
    p.message = Template::new(vec![b'x'; 200_000]);
    p.pipeline = 4;
    p.verify = true;
    let o = go(p);
    let s = &o.outcome.summary;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert!(s.exchanges.completed > 10);
    assert!(s.exchanges.balanced());
}
