//! In-process engine runs against the reference echo server and small scripted servers.

use crate::common;
use crate::common::*;
use barrage_engine::{run, End, Framing, LenPrefix, Mode, RunOutput, Template};
use barrage_metrics::{ErrorClass, LatencyBasis};
use barrage_servers::echo::{self, EchoConfig};
use std::io::{Read, Write};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn assert_balanced(o: &RunOutput) {
    let e = o.outcome.summary.exchanges;
    assert!(e.balanced(), "conservation broken: {e:?}");
}

#[test]
fn ping_pong_counts_reconcile_exactly_with_the_echo_server() {
    let server = echo_server(2);
    let mut p = plan(server.local_addr(), 20, Mode::PingPong, 1.0);
    p.verify = true;
    let o = go(p);
    let s = &o.outcome.summary;
    let st = settled(&server);
    assert_eq!(o.end, End::Completed);
    assert!(s.requests > 1000, "{}", s.requests);
    assert_eq!(
        s.exchanges.in_flight_at_end, 0,
        "a clean end drains everything"
    );
    assert_eq!(s.totals.bytes_written, st.bytes_read);
    assert_eq!(s.totals.bytes_read, st.bytes_written);
    assert_eq!(s.exchanges.completed * 14, st.bytes_read);
    assert_eq!(st.connections_accepted, 20);
    assert_eq!(s.errors.total(), 0);
    assert_eq!(s.latency_basis, LatencyBasis::ActualSend);
    assert_eq!(s.latency_us.count, s.requests);
    assert_balanced(&o);
}

#[test]
fn pipelining_keeps_k_in_flight_and_still_reconciles() {
    let server = echo_server(1);
    let mut p = plan(server.local_addr(), 4, Mode::PingPong, 0.5);
    p.pipeline = 8;
    p.threads = 1;
    let o = go(p);
    let s = &o.outcome.summary;
    let st = settled(&server);
    assert_eq!(s.totals.bytes_written, st.bytes_read);
    assert_eq!(s.exchanges.completed * 14, st.bytes_written);
    // 8 in flight per connection: far fewer writes than exchanges.
    assert!(s.totals.writes * 2 < s.exchanges.sent, "{:?}", s.totals);
    assert_balanced(&o);
}

#[test]
fn request_count_is_exact_across_threads() {
    let server = echo_server(1);
    let mut p = plan(server.local_addr(), 7, Mode::PingPong, 60.0);
    p.duration = None;
    p.requests = Some(1234);
    p.threads = 3;
    let t = Instant::now();
    let o = go(p);
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_eq!(o.outcome.summary.exchanges.completed, 1234);
    assert_eq!(o.outcome.summary.requests, 1234);
    assert_balanced(&o);
}

#[test]
fn think_time_paces_a_closed_loop_exactly_in_virtual_time() {
    let server = echo_server(1);
    let p = plan(
        server.local_addr(),
        5,
        Mode::Think(Duration::from_millis(20)),
        1.0,
    );
    let (o, end) = go_virtual(p);
    // A reply takes no virtual time: each connection sends at 0, 20, ..., 980 ms.
    assert_eq!(o.outcome.summary.requests, 5 * 50);
    assert_eq!(o.outcome.summary.exchanges.completed, 5 * 50);
    assert_eq!(end, 1_000_000_000);
    assert_balanced(&o);
}

#[test]
fn rate_mode_sends_the_requested_rate() {
    let server = echo_server(1);
    let p = plan(server.local_addr(), 10, Mode::Rate(2000.0), 1.0);
    let o = go(p);
    let s = &o.outcome.summary;
    assert_schedule_accounted(&o, 2000.0, 1.0);
    assert_eq!(s.latency_basis, LatencyBasis::IntendedSend);
    assert_eq!(s.exchanges.failed, 0);
}

#[test]
fn timeouts_are_counted_and_connections_reopened_exactly_in_virtual_time() {
    // A server that reads and never answers: every exchange times out.
    let server = sink_server();
    let mut p = plan(server.addr, 3, Mode::PingPong, 1.0);
    p.timeout = Duration::from_millis(100);
    let (o, _) = go_virtual(p);
    let s = &o.outcome.summary;
    // Per connection: sent at t, timed out at t + 100 ms (in the drain, for an attempt that
    // started late in the load), reopened after the backoff (10, 20, 40 ... ms times the
    // worker's seeded jitter, drawn in failure order across connections): every attempt
    // started within the second times out.
    const LOAD: u64 = 1_000_000_000;
    let mut rng = barrage_engine::pacer::Rng::new(0xB4A2_2A6E);
    let mut at = [0u64; 3];
    let mut failures = [0u32; 3];
    let mut attempts = 0;
    loop {
        let i = (0..3).min_by_key(|&i| (at[i], i)).unwrap();
        if at[i] >= LOAD {
            break;
        }
        attempts += 1;
        failures[i] += 1;
        let fail = at[i] + 100_000_000;
        at[i] = match fail < LOAD {
            true => fail + barrage_engine::pacer::backoff_ns(failures[i], rng.next_f64()),
            false => u64::MAX,
        };
    }
    assert!(attempts > 3);
    assert_eq!(
        s.errors.get(ErrorClass::Timeout),
        attempts,
        "{:?}",
        s.errors
    );
    assert_eq!(s.errors.total(), s.errors.get(ErrorClass::Timeout));
    assert_eq!(s.exchanges.completed, 0);
    assert_eq!(s.connections.attempts, attempts, "{:?}", s.connections);
    assert_balanced(&o);
}

#[test]
fn a_refused_target_fails_fast() {
    let t = Instant::now();
    let o = go(plan(refused_addr(), 5, Mode::PingPong, 30.0));
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    match &o.end {
        End::Unreachable(why) => assert!(why.to_lowercase().contains("refused"), "{why}"),
        e => panic!("expected unreachable, got {e:?}"),
    }
    assert!(o.outcome.summary.errors.get(ErrorClass::Refused) >= 3);
}

#[test]
fn closed_by_peer_is_classified_and_reconnected() {
    // Answers two lines, then closes.
    let server = TestServer::start(|s| {
        use std::io::{BufRead, BufReader};
        let mut w = s.try_clone().unwrap();
        let mut r = BufReader::new(s);
        for _ in 0..2 {
            let mut line = Vec::new();
            if r.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
                return;
            }
            let _ = w.write_all(&line);
        }
    });
    let mut p = plan(server.addr, 2, Mode::PingPong, 0.5);
    p.threads = 1;
    let o = go(p);
    let s = &o.outcome.summary;
    assert!(
        s.errors.get(ErrorClass::ClosedByPeer) >= 2,
        "{:?}",
        s.errors
    );
    assert!(s.connections.closed_by_peer >= 2);
    assert!(s.connections.succeeded >= 4, "{:?}", s.connections);
    assert!(s.exchanges.completed >= 4);
    assert_balanced(&o);
}

#[test]
fn verify_counts_mismatches_as_failed_exchanges() {
    let server = line_server(|l| l.to_ascii_uppercase());
    let mut p = plan(server.addr, 2, Mode::PingPong, 0.3);
    p.verify = true;
    let o = go(p);
    let s = &o.outcome.summary;
    assert_eq!(s.exchanges.completed, 0);
    assert!(s.errors.get(ErrorClass::Mismatch) > 10);
    assert_eq!(s.errors.get(ErrorClass::Mismatch), s.exchanges.failed);
    assert_balanced(&o);
}

#[test]
fn placeholders_are_filled_and_verified() {
    let server = echo_server(1);
    let mut p = plan(server.local_addr(), 3, Mode::PingPong, 0.3);
    p.message = Template::new(b"c{conn} s{seq} t{ts_us}\n".to_vec());
    p.verify = true;
    let o = go(p);
    let s = &o.outcome.summary;
    assert!(s.exchanges.completed > 100);
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
}

#[test]
fn line_delim_bytes_and_length_framings() {
    let pong = line_server(|_| b"+PONG\r\n".to_vec());
    let cases: Vec<(Framing, common::TestServer)> = vec![
        (Framing::Line, pong),
        (
            Framing::Delim(barrage_engine::Delimiter::new(b"END").unwrap()),
            line_server(|_| b"aEbENDcEND".to_vec()),
        ),
        (Framing::Bytes(3), line_server(|_| b"abcdef".to_vec())),
        (
            Framing::Len(LenPrefix::U16Be),
            line_server(|_| vec![0, 2, b'o', b'k', 0, 0]),
        ),
    ];
    for (framing, server) in cases {
        let mut p = plan(server.addr, 2, Mode::PingPong, 0.3);
        p.framing = framing.clone();
        p.threads = 1;
        let o = go(p);
        let s = &o.outcome.summary;
        assert!(s.exchanges.completed > 20, "{framing:?}: {s:?}");
        assert_eq!(s.errors.total(), 0, "{framing:?}");
        assert_balanced(&o);
    }
}

#[test]
fn first_message_is_sent_once_and_not_counted() {
    let server = echo_server(1);
    let mut p = plan(server.local_addr(), 4, Mode::PingPong, 0.5);
    p.first_message = Some(Template::new(b"LOGIN user\n".to_vec()));
    p.verify = true;
    let o = go(p);
    let s = &o.outcome.summary;
    let st = settled(&server);
    assert_eq!(st.bytes_read, 4 * 11 + s.exchanges.completed * 14);
    assert_eq!(s.errors.total(), 0);
}

#[test]
fn expect_none_completes_on_write() {
    let server = sink_server();
    let p = {
        let mut p = plan(
            server.addr,
            5,
            Mode::Interval(Duration::from_millis(10)),
            1.0,
        );
        p.framing = Framing::None;
        p
    };
    let o = go(p);
    let s = &o.outcome.summary;
    assert_schedule_accounted(&o, 500.0, 1.0);
    assert_eq!(s.exchanges.completed, s.exchanges.sent);
    assert_eq!(s.latency_us.count, 0);
    assert_eq!(s.totals.bytes_written, s.exchanges.sent * 14);
}

/// Closed-loop `--expect none` into a server that reads and discards: the socket always
/// takes the next write, so the loop must still give its turns to the clock (the run ends at
/// its duration) and account each second (it once ran forever and put every exchange in
/// second 1).
fn expect_none_closed_loop(pipeline: u32) {
    let server = sink_server();
    let mut p = plan(server.addr, 4, Mode::PingPong, 2.0);
    p.framing = Framing::None;
    p.pipeline = pipeline;
    p.drain = Duration::from_millis(200);
    let o = go_within(p, Arc::new(AtomicBool::new(false)), Duration::from_secs(12));
    assert_eq!(o.end, End::Completed);
    let s = &o.outcome.summary;
    assert!(s.exchanges.completed > 0);
    // Every completed exchange is 14 bytes written; a partly written one is in flight.
    let w = s.totals.bytes_written;
    assert!(
        w >= s.exchanges.completed * 14 && w <= s.exchanges.sent * 14,
        "{w} {:?}",
        s.exchanges
    );
    let full: Vec<_> = o
        .outcome
        .timeseries
        .iter()
        .filter(|k| k.dt >= 0.999)
        .collect();
    assert!(full.len() >= 2, "{} full seconds", full.len());
    for k in &full {
        assert!(
            k.requests > 0,
            "second {} completed nothing: {:?}",
            k.t,
            o.outcome.timeseries
        );
    }
    assert_balanced(&o);
}

#[test]
fn expect_none_closed_loop_yields_to_the_clock_and_counts_every_second() {
    expect_none_closed_loop(1);
}

#[test]
fn expect_none_pipelined_yields_to_the_clock_and_counts_every_second() {
    expect_none_closed_loop(8);
}

#[test]
fn expect_none_closed_loop_stops_on_the_stop_flag() {
    let server = sink_server();
    let mut p = plan(server.addr, 4, Mode::PingPong, 600.0);
    p.framing = Framing::None;
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = Arc::clone(&stop);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        s2.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let o = go_within(p, stop, Duration::from_secs(10));
    assert_eq!(o.end, End::Interrupted);
    assert!(o.outcome.summary.exchanges.completed > 0);
    assert_balanced(&o);
}

#[test]
fn a_full_backlog_counts_not_sent_instead_of_dropping_silently() {
    let server = deaf_server();
    let mut p = plan(server.addr, 1, Mode::Rate(200.0), 1.0);
    p.message = Template::new(vec![b'x'; 256 * 1024]);
    p.max_backlog = 4;
    p.timeout = Duration::from_secs(30);
    let o = go(p);
    let s = &o.outcome.summary;
    let not_sent = s.errors.get(ErrorClass::NotSent);
    assert!(not_sent > 100, "{:?}", s.errors);
    assert_eq!(s.exchanges.not_sent, not_sent);
    assert_eq!(s.failed_requests.get(ErrorClass::NotSent), not_sent);
    // Every due message is accounted for: sent, or not sent.
    assert_schedule_accounted(&o, 200.0, 1.0);
}

#[test]
fn stopping_early_interrupts_with_figures_up_to_then() {
    let server = echo_server(1);
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = Arc::clone(&stop);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        s2.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let t = Instant::now();
    let o = run(
        plan(server.local_addr(), 5, Mode::PingPong, 30.0),
        stop,
        |_, _| {},
    )
    .unwrap();
    assert!(t.elapsed() < Duration::from_secs(3));
    assert_eq!(o.end, End::Interrupted);
    let s = &o.outcome.summary;
    assert!(s.requests > 0);
    assert!(s.duration_s < 1.0, "{}", s.duration_s);
    assert_balanced(&o);
}

#[test]
fn warmup_is_excluded_from_the_headline_exactly_in_virtual_time() {
    let server = echo_server(1);
    let mut p = plan(server.local_addr(), 5, Mode::Rate(1000.0), 1.0);
    p.warmup = Duration::from_millis(500);
    let (o, _) = go_virtual(p);
    let s = &o.outcome.summary;
    let w = o.outcome.warmup.as_ref().unwrap();
    // Segment lengths come from the timeline, not from the clock.
    assert!((0.999..1.001).contains(&s.duration_s), "{}", s.duration_s);
    assert!((0.499..0.501).contains(&w.duration_s), "{}", w.duration_s);
    // Every connection is up at 0 and a reply takes no time: the schedule, exactly. The
    // connections' schedules are spread 1 ms apart (5 ms periods); connection 0's first
    // message, due at 0, was due at the moment it came up, and a schedule begins with the
    // first message due after that (like wrk2).
    assert_eq!(w.requests, 499, "{:?}", s.exchanges);
    assert_eq!(s.requests, 1000, "{:?}", s.exchanges);
    assert_eq!(s.exchanges.not_sent, 0);
    assert_eq!(s.totals.completed, s.requests + w.requests);
    assert_schedule_accounted(&o, 1000.0, 1.5);
}

#[test]
fn coordinated_omission_stall_shows_in_open_loop_latency() {
    // Paced 1,000 req/s; the server freezes for 500 ms once. Latency from the intended send
    // time must show the stall for every message due during it: p99 >= 350 ms.
    let server = echo::start(EchoConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        stall_at: Some(Duration::from_millis(1000)),
        stall_for: Duration::from_millis(500),
        ..EchoConfig::default()
    })
    .unwrap();
    let o = go(plan(server.local_addr(), 10, Mode::Rate(1000.0), 3.0));
    let s = &o.outcome.summary;
    assert_eq!(s.latency_basis, LatencyBasis::IntendedSend);
    assert!(s.latency_us.p99 >= 350_000, "p99 {} us", s.latency_us.p99);
    assert_eq!(s.errors.total(), 0);

    // The same stall in ping-pong: only the few exchanges caught in it are slow (service time).
    let server = echo::start(EchoConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        stall_at: Some(Duration::from_millis(500)),
        stall_for: Duration::from_millis(500),
        ..EchoConfig::default()
    })
    .unwrap();
    let o = go(plan(server.local_addr(), 10, Mode::PingPong, 1.5));
    let s = &o.outcome.summary;
    assert_eq!(s.latency_basis, LatencyBasis::ActualSend);
    // The stall shows in the slowest exchange; how few exchanges it touched is a figure of
    // the machine's speed (how many completed around it), so it is not asserted.
    assert!(s.latency_us.max >= 350_000, "max {}", s.latency_us.max);
}

#[test]
fn connect_rate_ramps_connections_gradually() {
    let server = echo_server(1);
    let mut p = plan(server.local_addr(), 100, Mode::PingPong, 3.0);
    p.connect_rate = Some(50.0);
    let o = go(p);
    let ticks = &o.outcome.timeseries;
    let open_at = |t: f64| {
        ticks
            .iter()
            .find(|k| (k.t - t).abs() < 0.01)
            .map(|k| k.open)
            .unwrap()
    };
    // Two shares of 25/s each: connect k of a share starts no earlier than k x 40 ms, so by
    // 1 s at most 2 x 26 are open, however fast the machine (how close it gets: bench/).
    assert!(open_at(1.0) <= 52, "{}", open_at(1.0));
    assert!(open_at(2.0) <= 2 * 51, "{}", open_at(2.0));
    let ramp = o.outcome.summary.ramp.unwrap();
    assert_eq!(ramp.ready, 100);
    assert!(ramp.all_ready_s.unwrap() >= 49.0 * 0.04, "{ramp:?}");
    assert_eq!(o.outcome.summary.connections.peak, 100);
    assert_eq!(o.outcome.summary.connections.attempts, 100);
}

#[test]
fn the_server_killed_mid_run_is_classified_and_the_run_still_completes() {
    let server = echo_server(1);
    let addr = server.local_addr();
    let killer = std::thread::spawn(move || {
        // The kill comes once every connection is up and has been served (on a loaded
        // machine 300 ms were not always enough for that), so each one is broken by it.
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(20) {
            let st = server.stats();
            if st.connections_accepted >= 5 && st.connections_open == 5 && st.writes >= 5 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(100));
        drop(server); // closes every connection and the listener
                      // Hold the dead server's port, bound but not listening (connects to it are refused),
                      // until the run is over: another test's server binding port 0 could otherwise be
                      // given it, and the reconnects would reach that one (seen once: 1 open at the end).
        let hold =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        hold.set_reuse_address(true).unwrap();
        hold.bind(&addr.into())
            .expect("the dead server's port was taken at once");
        (Instant::now(), hold)
    });
    let started = Instant::now();
    // 1.7 s after the kill for every close to reach barrage, on a busy machine too (with 0.7 s
    // one connection was once still open at the end beside two busy loops).
    let o = go(plan(addr, 5, Mode::PingPong, 2.0));
    let (killed, _port) = killer.join().unwrap();
    let s = &o.outcome.summary;
    assert_eq!(o.end, End::Completed, "it had connected: no fail-fast");
    assert!(s.requests > 0);
    let broken = s.errors.get(ErrorClass::ClosedByPeer) + s.errors.get(ErrorClass::Reset);
    assert!(broken >= 5, "{:?}", s.errors);
    assert!(
        s.errors.get(ErrorClass::Refused) >= 5,
        "reconnects refused: {:?}",
        s.errors
    );
    assert_eq!(
        s.connections.open,
        0,
        "the server stopped {:?} into the run",
        killed.duration_since(started)
    );
    assert_balanced(&o);
}

#[test]
fn open_loop_schedules_start_when_each_connection_is_up() {
    // Regression: every schedule began at t = 0, before its connection was up, so a
    // connection that came up late sent a catch-up burst (75 % over the plan) and reported
    // the ramp as seconds of latency. Connect at 100/s, one message every 100 ms per
    // connection, 3 s, in virtual time: connection k is up at exactly k x 10 ms.
    let server = echo_server(1);
    let mut p = plan(
        server.local_addr(),
        200,
        Mode::Interval(Duration::from_millis(100)),
        3.0,
    );
    p.connect_rate = Some(100.0);
    let (o, _) = go_virtual(p);
    let s = &o.outcome.summary;
    let x = s.exchanges;
    assert_eq!(x.scheduled, x.sent + x.not_sent, "{x:?}");
    assert_balanced(&o);
    assert_eq!(s.ramp.unwrap().ready, 200);
    // Each schedule counts from the first message due after its connection came up, to the
    // end of the load: 4,009 in all; schedules from t = 0 would make it 6,000.
    let due: u64 = (0..200u64)
        .map(|k| {
            let sched = barrage_engine::pacer::Schedule::spread(k, 200, 1e8, Some(3_000_000_000));
            sched.due(3_000_000_000) - sched.due(k * 10_000_000)
        })
        .sum();
    assert_eq!(x.scheduled, due, "{x:?}");
    assert_eq!(due, 4_009);
    assert_eq!(x.not_sent, 0, "{x:?}");
    assert_eq!(s.ramp.unwrap().all_ready_s, Some(1.99), "{:?}", s.ramp);
    // (What this does to latency is a figure, not a test: bench/ramp.sh measures it.)
}

#[test]
fn accept_then_reset_backs_off_instead_of_reconnecting_in_a_busy_loop() {
    // Regression: the backoff was reset as soon as a connection opened, so a server that
    // accepts and resets at once made 100 connections do 18,267 connects in 3 s.
    let server = TestServer::start(|mut s| {
        // Accept, take the first bytes (so the client counts the connection as up), reset.
        let _ = s.read(&mut [0u8; 64]);
        let s = socket2::Socket::from(s);
        let _ = s.set_linger(Some(Duration::ZERO));
        drop(s); // RST
    });
    let (o, _) = go_virtual(plan(server.addr, 50, Mode::PingPong, 1.5));
    let c = o.outcome.summary.connections;
    // In virtual time a reset takes no time, so each connection waits only its backoff (10 ms
    // doubling, times 0.5-1.0 jitter) between attempts: at the shortest, 5+10+...+640 ms
    // (8 waits, 9 attempts) fit in 1.5 s and the next (1,275 + 640 ms) does not; at the
    // longest, 10+20+...+640 ms (7 waits, 8 attempts) fit and 1,270 + 1,280 ms does not.
    assert!(
        (50 * 8..=50 * 9).contains(&c.attempts),
        "8 or 9 attempts per connection: {c:?}"
    );
    assert_eq!(o.outcome.summary.exchanges.completed, 0);
    assert_balanced(&o);
}

#[test]
fn every_request_lost_to_a_stall_counts_in_the_error_rate() {
    // Regression: with a server stall longer than --timeout, 19 % of an open-loop run's
    // requests failed but only the broken connections (one each) were counted, so the error
    // rate read 0.2 %.
    let server = echo::start(EchoConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        stall_at: Some(Duration::from_millis(300)),
        stall_for: Duration::from_millis(700),
        ..EchoConfig::default()
    })
    .unwrap();
    let mut p = plan(server.local_addr(), 4, Mode::Rate(400.0), 1.5);
    p.timeout = Duration::from_millis(150);
    let o = go(p);
    let s = &o.outcome.summary;
    let x = s.exchanges;
    assert_balanced(&o);
    assert_eq!(x.scheduled, x.sent + x.not_sent, "{x:?}");
    // Every exchange that did not complete is in the error rate, by its reason.
    assert_eq!(s.failed_requests.total(), x.failed + x.not_sent, "{s:?}");
    let timeouts = s.errors.get(ErrorClass::Timeout);
    assert!(timeouts >= 4, "{:?}", s.errors);
    assert!(
        s.failed_requests.get(ErrorClass::Timeout) > timeouts,
        "each timed-out connection carried several requests: {:?} vs {:?}",
        s.failed_requests,
        s.errors
    );
    let rate = s.error_rate().unwrap();
    let want = s.failed_requests.total() as f64 / (s.requests + s.failed_requests.total()) as f64;
    assert_eq!(rate, want);
    assert!(rate > 0.05, "a 700 ms stall in 1.5 s: {rate}");
}

/// A run split into shares, each part run on its own (as separate processes would): the
/// parts together do exactly the whole run.
#[test]
fn any_subset_of_shares_runs_and_the_parts_add_up() {
    use barrage_engine::ShareSet;
    let server = echo_server(1);
    let mut whole = plan(server.local_addr(), 10, Mode::PingPong, 60.0);
    whole.duration = None;
    whole.requests = Some(1000);
    let parts: [&[usize]; 3] = [&[0, 2], &[1], &[3]];
    let mut completed = 0;
    let mut connections = 0;
    for run in parts {
        let mut p = whole.clone();
        p.shares = Some(ShareSet {
            count: 4,
            run: run.to_vec(),
        });
        let mine: u64 = p.my_shares().iter().map(|s| s.connections).sum();
        let o = go(p);
        let s = &o.outcome.summary;
        assert_eq!(o.end, End::Completed);
        assert_eq!(s.errors.total(), 0);
        assert_eq!(s.connections.target, mine);
        assert_balanced(&o);
        completed += s.exchanges.completed;
        connections += s.connections.target;
    }
    assert_eq!(completed, 1000, "the parts complete exactly the whole -n");
    assert_eq!(connections, 10);
    assert_eq!(settled(&server).connections_accepted, 10);
    // A process whose shares hold no connection has nothing to do.
    let mut p = whole.clone();
    p.connections = 2;
    p.shares = Some(ShareSet {
        count: 4,
        run: vec![3],
    });
    let o = go(p);
    assert_eq!(o.end, End::Completed);
    assert_eq!(o.outcome.summary.exchanges.sent, 0);
}

/// `Clock::At`: the run's time zero is a wall-clock instant every process waits for.
#[test]
fn a_run_anchored_to_a_wall_clock_instant_starts_there() {
    use std::time::{SystemTime, UNIX_EPOCH};
    let server = echo_server(1);
    let mut p = plan(server.local_addr(), 2, Mode::PingPong, 0.2);
    p.threads = 1;
    let unix = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    };
    let at = unix() + 300_000_000;
    p.clock = barrage_engine::Clock::At { unix_ns: at };
    let o = go(p);
    // Nothing happens before the instant: the run cannot end before at + its duration.
    assert!(unix() >= at + 200_000_000);
    assert!(o.outcome.summary.exchanges.completed > 0);
    assert_balanced(&o);
}
