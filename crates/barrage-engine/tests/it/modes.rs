//! Every way a connection is told what to send, counted exactly in virtual time: the flag
//! modes (think time with a pipeline window and a first message, interval, rate, a request
//! quota), a `--conn-stages` ramp and a scenario user. Replies from the loopback echo server
//! take no virtual time, so each count follows from the plan alone; each test says how. These
//! are the contract a change to how the worker runs them (one program for every mode) keeps.

use crate::common::{echo_server, go_virtual, plan, users};
use barrage_engine::users::{ConnStages, Users};
use barrage_engine::{Framing, Mode, Plan, RunOutput, Template};
use std::time::Duration;

const MS: u64 = 1_000_000;

/// The run's exchanges, and (sent, completed, scheduled) of each second of the load.
fn counts(o: &RunOutput) -> (barrage_metrics::Exchanges, Vec<(u64, u64, u64)>) {
    let s = &o.outcome.summary;
    assert!(s.exchanges.balanced(), "{:?}", s.exchanges);
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    let ticks = o
        .outcome
        .timeseries
        .iter()
        .filter(|t| t.phase == barrage_metrics::Phase::Measured)
        .map(|t| (t.sent, t.requests, t.scheduled))
        .collect();
    (s.exchanges, ticks)
}

#[test]
fn think_time_with_a_window_and_a_first_message() {
    let server = echo_server(1);
    let mut p = plan(
        server.local_addr(),
        3,
        Mode::Think(Duration::from_millis(50)),
        1.0,
    );
    p.pipeline = 2;
    p.first_message = Some(Template::new(b"hi\n".to_vec()));
    let (o, end) = go_virtual(p);
    let (x, ticks) = counts(&o);
    // The opening is answered at 0 (not an exchange of the load); then each of 2 slots on 3
    // connections sends at 0, 50, ..., 950 ms: 20 x 2 x 3.
    assert_eq!(x.sent, 120, "{x:?}");
    assert_eq!(x.completed, 120, "{x:?}");
    assert_eq!(x.scheduled, 0, "a closed loop schedules nothing");
    assert_eq!(ticks, vec![(120, 120, 0)]);
    assert_eq!(end, 1_000 * MS);
}

#[test]
fn an_interval_sends_each_connections_schedule() {
    let server = echo_server(1);
    let p = plan(
        server.local_addr(),
        4,
        Mode::Interval(Duration::from_millis(100)),
        2.0,
    );
    let (o, _) = go_virtual(p);
    let (x, ticks) = counts(&o);
    // Connection g's messages are due at g x 25 ms + k x 100 ms; each is up at 0, so its
    // schedule begins after 0: connection 0 sends 19 in 2 s, the others 20.
    assert_eq!(x.scheduled, 79, "{x:?}");
    assert_eq!((x.sent, x.completed, x.not_sent), (79, 79, 0), "{x:?}");
    assert_eq!(ticks, vec![(39, 39, 39), (40, 40, 40)]);
}

#[test]
fn a_rate_is_spread_over_the_connections() {
    let server = echo_server(1);
    let p = plan(server.local_addr(), 4, Mode::Rate(200.0), 1.0);
    let (o, _) = go_virtual(p);
    let (x, ticks) = counts(&o);
    // 200/s over 4 connections: each every 20 ms, 5 ms apart; connection 0's message at 0
    // was due when it came up.
    assert_eq!((x.scheduled, x.sent, x.not_sent), (199, 199, 0), "{x:?}");
    assert_eq!(ticks, vec![(199, 199, 199)]);
}

#[test]
fn a_request_quota_ends_a_pipelined_ping_pong() {
    let server = echo_server(1);
    let mut p = plan(server.local_addr(), 3, Mode::PingPong, 60.0);
    p.pipeline = 4;
    p.requests = Some(100);
    let (o, end) = go_virtual(p);
    let x = o.outcome.summary.exchanges;
    // Replies take no time: the quota, exactly, all at time 0.
    assert_eq!((x.sent, x.completed), (100, 100), "{x:?}");
    assert_eq!(end, 0);
}

#[test]
fn a_connection_ramp_opens_each_connection_on_time() {
    let server = echo_server(1);
    let mut p = plan(
        server.local_addr(),
        4,
        Mode::Think(Duration::from_millis(100)),
        1.0,
    );
    let stages = ConnStages {
        points: vec![(0.0, 0.0), (0.5, 4.0), (1.0, 4.0)],
    };
    let u = Users::for_load(
        p.mode,
        p.timeout,
        p.framing != barrage_engine::Framing::None,
        stages,
    );
    p = p.with_users(u);
    let (o, _) = go_virtual(p);
    let (x, _) = counts(&o);
    // Connection g opens at (g + 1) x 125 ms and sends every 100 ms until 1 s:
    // 9 + 8 + 7 + 5.
    assert_eq!((x.sent, x.completed), (29, 29), "{x:?}");
    let s = &o.outcome.summary;
    assert_eq!(s.connections.attempts, 4);
}

const USER: &str = r#"
target = "tcp://127.0.0.1:1"
[protocol]
framing = "line"
[users]
count = 2
arrive = "10/s"
hold = "500ms"
depart = "at_end"
[[steps]]
name = "login"
send = "login {user}\n"
expect = { prefix = "login" }
[[steps]]
think = "30ms"
[[steps]]
name = "say"
every = "100ms"
send = "say {seq}\n"
expect = { prefix = "say" }
[[leave]]
name = "bye"
send = "bye\n"
expect = { prefix = "bye" }
"#;

#[test]
fn a_scenario_user_logs_in_thinks_ticks_and_leaves_on_time() {
    let server = echo_server(1);
    let mut p: Plan = plan(server.local_addr(), 1, Mode::PingPong, 1.0);
    p.framing = Framing::Line;
    let (o, _) = go_virtual(p.with_users(users(USER, false, Duration::from_secs(5))));
    let (x, _) = counts(&o);
    let s = &o.outcome.summary;
    // User 0 arrives at 0, user 1 at 100 ms; both depart at 100 + 500 ms. Each logs in on
    // arrival, thinks 30 ms and ticks every 100 ms from there until it departs: 6 ticks
    // (30 ... 530 ms) and 5 (130 ... 530 ms); then one `bye` each.
    let sent: Vec<u64> = s.steps.iter().map(|st| st.c.sent).collect();
    assert_eq!(sent, [2, 11, 2], "login, say, bye");
    assert_eq!((x.sent, x.completed, x.not_sent), (15, 15, 0), "{x:?}");
    assert_eq!(x.scheduled, 15, "a user's every send is scheduled");
}
