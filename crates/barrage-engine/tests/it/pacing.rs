//! Open-loop pacing at scale, end to end: 1,000 connections with one message every 50 ms
//! each (20,000/s) for 3 s on one worker thread, on an exact schedule (no timer slack),
//! against the reference echo server. Checked as exact accounting, not by timing: every
//! message due on a connection's schedule is sent or counted as not sent (`scheduled = sent +
//! not_sent`, and the exchanges conserve), no more fall due than the plan's slots and no fewer
//! once every connection is up, all 1,000 come up, nothing fails, and no measured second holds
//! more than its 20 messages per connection plus those of a late look across its boundary.
//! How evenly a real machine keeps the rate is a measurement (`bench/slack.sh` on this same
//! load, `bench/ramp.sh` during a connection ramp); that the schedule itself is exactly
//! uniform is tested in virtual time (`pacer::tests`).

use crate::common;
use barrage_engine::{run, Mode};
use barrage_metrics::Phase;
use barrage_servers::echo::{self, EchoConfig};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn interval_1000_connections_x_50ms_accounts_for_every_scheduled_message() {
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
        3.0,
    );
    p.threads = 1;
    let o = run(p, Arc::new(AtomicBool::new(false)), |_, _| {}).unwrap();
    let s = &o.outcome.summary;
    common::assert_schedule_accounted(&o, 20_000.0, 3.0);
    assert_eq!(s.connections.peak, 1000);
    assert_eq!(s.ramp.unwrap().ready, 1000);
    assert_eq!(s.exchanges.failed, 0, "{:?}", s.failed_requests);
    // A message is counted in the second in which the loop saw it due: 20 per connection,
    // plus those of a late look across the boundary (5 for a loop 250 ms late): never the
    // catch-up bursts of a schedule that ignored when its connection came up.
    for t in o
        .outcome
        .timeseries
        .iter()
        .filter(|t| t.phase == Phase::Measured)
    {
        assert!(t.scheduled <= 25 * 1000, "{t:?}");
    }
}
