//! The pacing figure as a test: 1,000 connections, one message every 50 ms each, for
//! 20 s against the echo server: 20,000 req/s on average within 1 %, every one-second window
//! within 2 %. This checks the schedule's correctness (a count), not the machine's speed.

mod common;

use barrage_engine::{run, Mode};
use barrage_metrics::Phase;
use barrage_servers::echo::{self, EchoConfig};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn interval_1000_connections_x_50ms_holds_20000_per_second() {
    let server = echo::start(EchoConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        ..EchoConfig::default()
    })
    .unwrap();
    let mut p = common::plan(
        server.local_addr(),
        1000,
        Mode::Interval(Duration::from_millis(50)),
        20.0,
    );
    p.threads = 1;
    let o = run(p, Arc::new(AtomicBool::new(false)), |_, _| {}).unwrap();
    let s = &o.outcome.summary;
    assert!(
        (19_800.0..=20_200.0).contains(&s.rps.avg),
        "avg {} req/s",
        s.rps.avg
    );
    let windows: Vec<f64> = o
        .outcome
        .timeseries
        .iter()
        .filter(|t| t.phase == Phase::Measured && t.dt >= 0.999)
        .map(|t| t.rps)
        .collect();
    assert!(windows.len() >= 19, "{} windows", windows.len());
    for (i, r) in windows.iter().enumerate() {
        assert!((19_600.0..=20_400.0).contains(r), "window {i}: {r} req/s");
    }
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.connections.peak, 1000);
}
