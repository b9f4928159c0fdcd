//! `barrage_engine::hurry` (a second signal): a stopped run stops waiting for the replies in
//! flight, which end as in flight at the end. It runs alone in a child process of the test
//! binary (`common::alone`): the flag is the process's.
//!
//! The server answers only after 120 s and the drain would wait 300 s, so without the hurry
//! the replies would arrive during the drain and nothing would be in flight at the end: the
//! counts tell, not the clock.

use crate::common::*;
use barrage_engine::{run, End, Mode};
use barrage_servers::echo::{self, EchoConfig};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn hurry_ends_the_drain_with_the_replies_in_flight() {
    if !alone(
        module_path!(),
        "hurry_ends_the_drain_with_the_replies_in_flight",
    ) {
        return;
    }
    let server = echo::start(EchoConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        delay: Some(Duration::from_secs(120)),
        ..EchoConfig::default()
    })
    .unwrap();
    let mut p = plan(server.local_addr(), 3, Mode::PingPong, 60.0);
    p.drain = Duration::from_secs(300);
    p.timeout = Duration::from_secs(300);
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = Arc::clone(&stop);
    // At the first second: stop, then hurry (as a second signal does).
    let o = run(p, stop, move |_, _| {
        if !s2.swap(true, Ordering::Relaxed) {
            barrage_engine::hurry();
        }
    })
    .unwrap();
    assert_eq!(o.end, End::Interrupted);
    let x = &o.outcome.summary.exchanges;
    assert_eq!((x.sent, x.completed, x.in_flight_at_end), (3, 0, 3));
}
