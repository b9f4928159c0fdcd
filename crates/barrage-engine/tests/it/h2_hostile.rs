//! Hostile HTTP/2 servers: scripted in-process servers, written here frame by frame (nothing
//! from the engine's codec), that break the protocol or the peace in one way each: a server
//! that never sends its SETTINGS, malformed HPACK, a frame over the size limit, streams all
//! refused, a GOAWAY with an error, no flow-control window, a PING flood from a server that
//! does not read, a response trickled a byte at a time. Each run is bounded, every exchange is
//! accounted for, and each failure lands in its named class. gRPC servers too: replies that
//! break gRPC's rules (no status, a message cut short, a compressed message, a status that is
//! not a number, no gRPC at all) and a server stream that never ends.

use crate::common::{self, plan, TestServer};
use barrage_engine::h2::{H2Request, H2RequestSpec};
use barrage_engine::{run, H2Plan, Mode, Plan, Protocol, RunOutput, StatusSet};
use barrage_metrics::{ErrorClass, Summary};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

const LOAD: Duration = Duration::from_millis(500);

fn h2_plan(addr: SocketAddr, connections: u64, body: Option<&[u8]>) -> Plan {
    let mut p = plan(addr, connections, Mode::PingPong, LOAD.as_secs_f64());
    p.threads = 1;
    p.timeout = Duration::from_millis(300);
    p.connect_timeout = Duration::from_secs(1);
    p.drain = Duration::from_millis(300);
    p.target.url = format!("h2c://{addr}/");
    let host = addr.to_string();
    let request = H2Request::new(&H2RequestSpec {
        method: if body.is_some() { "POST" } else { "GET" },
        scheme: "http",
        path: "/",
        authority: &host,
        headers: &[],
        body,
        content_type: None,
        te_trailers: false,
    })
    .expect("a valid request");
    p.protocol = Protocol::H2(H2Plan {
        request,
        expect_status: StatusSet::default(),
        streams: 4,
        grpc: None,
        settings: barrage_engine::H2Settings::default(),
    });
    p.pipeline = 4;
    p
}

/// `h2_plan` calling a gRPC method (server streaming or unary) with a small message.
fn grpc_plan(addr: SocketAddr, connections: u64, streaming: bool) -> Plan {
    let mut p = h2_plan(addr, connections, None);
    let host = addr.to_string();
    let request = H2Request::new(&H2RequestSpec {
        method: "POST",
        scheme: "http",
        path: "/t.S/M",
        authority: &host,
        headers: &[],
        body: None,
        content_type: Some("application/grpc"),
        te_trailers: true,
    })
    .expect("a valid request")
    .with_grpc_messages(
        vec![barrage_engine::grpc::PbTemplate::bytes(vec![0x08, 0x01])],
        false,
    );
    p.protocol = Protocol::H2(H2Plan {
        request,
        expect_status: StatusSet(vec![(200, 200)]),
        streams: 4,
        grpc: Some(barrage_engine::GrpcMode {
            streaming,
            gzip: false,
        }),
        settings: barrage_engine::H2Settings::default(),
    });
    p
}

/// A header field as a literal without indexing, its name new (HPACK by hand).
fn lit(name: &str, value: &str) -> Vec<u8> {
    let mut b = vec![0x00, name.len() as u8];
    b.extend_from_slice(name.as_bytes());
    b.push(value.len() as u8);
    b.extend_from_slice(value.as_bytes());
    b
}

/// A gRPC reply's head: `:status 200` and `content-type: application/grpc`.
fn grpc_head() -> Vec<u8> {
    [&[0x88][..], &lit("content-type", "application/grpc")].concat()
}

/// A gRPC message: its prefix saying `len` bytes, and `body`.
fn msg(len: u32, body: &[u8]) -> Vec<u8> {
    let mut m = vec![0];
    m.extend_from_slice(&len.to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn go(p: Plan) -> RunOutput {
    let bound = p.duration.unwrap_or_default() + p.drain + Duration::from_secs(5);
    let t = Instant::now();
    let out = run(p, Arc::new(AtomicBool::new(false)), |_, _| {}).expect("engine run");
    assert!(t.elapsed() < bound, "the run took {:?}", t.elapsed());
    let e = out.outcome.summary.exchanges;
    assert!(e.balanced(), "conservation broken: {e:?}");
    out
}

fn summary(o: &RunOutput) -> &Summary {
    &o.outcome.summary
}

// ---------------------------------------------------------------------------------------------
// A server written here: frames by hand, HPACK by static index only.

/// A frame's head (its payload is read and dropped).
struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let l = (payload.len() as u32).to_be_bytes();
    let mut f = vec![l[1], l[2], l[3], kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn read_frame(s: &mut TcpStream) -> Option<Frame> {
    let mut h = [0u8; 9];
    s.read_exact(&mut h).ok()?;
    let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
    let mut payload = vec![0; len];
    s.read_exact(&mut payload).ok()?;
    Some(Frame {
        kind: h[3],
        flags: h[4],
        stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
    })
}

/// Reads the client preface and sends `settings` ((id, value) pairs) as the server's own.
fn accept(s: &mut TcpStream, settings: &[(u16, u32)]) -> Option<()> {
    let mut preface = [0u8; 24];
    s.read_exact(&mut preface).ok()?;
    assert_eq!(&preface, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    let mut p = Vec::new();
    for (id, v) in settings {
        p.extend_from_slice(&id.to_be_bytes());
        p.extend_from_slice(&v.to_be_bytes());
    }
    s.write_all(&frame(4, 0, 0, &p)).ok()
}

/// The next HEADERS frame's stream, answering SETTINGS and skipping the rest.
fn next_request(s: &mut TcpStream) -> Option<u32> {
    loop {
        let f = read_frame(s)?;
        match f.kind {
            1 => return Some(f.stream),
            4 if f.flags & 1 == 0 => s.write_all(&frame(4, 1, 0, &[])).ok()?,
            _ => {}
        }
    }
}

fn server(f: impl Fn(&mut TcpStream) + Send + Sync + 'static) -> TestServer {
    TestServer::start(move |mut s| f(&mut s))
}

// ---------------------------------------------------------------------------------------------

/// A server that accepts and says nothing: the handshake times out, exactly, in virtual time.
#[test]
fn a_server_that_never_sends_settings_is_a_handshake_timeout() {
    let s = common::sink_server();
    let mut p = h2_plan(s.addr, 2, None);
    p.timeout = Duration::from_millis(250);
    let (o, end) = common::go_virtual(p);
    let sm = summary(&o);
    assert_eq!(sm.errors.get(ErrorClass::Timeout), 2, "{:?}", sm.errors);
    assert_eq!(sm.errors.total(), 2);
    assert_eq!(sm.exchanges.sent, 0);
    assert_eq!(end, LOAD.as_nanos() as u64);
}

/// Malformed input in three ways, each a protocol error on every connection, nothing else.
#[test]
fn malformed_frames_are_protocol_errors_and_the_connection_starts_over() {
    let cases: Vec<Vec<u8>> = vec![
        // HPACK index 0.
        frame(1, 0x5, 1, &[0x80]),
        // A frame over the 16,384 bytes this client allows.
        frame(0, 0, 1, &vec![0; 20_000]),
        // PING of the wrong length.
        frame(6, 0, 0, &[1, 2, 3]),
    ];
    for bad in cases {
        let s = server(move |s| {
            if accept(s, &[]).is_none() || next_request(s).is_none() {
                return;
            }
            let _ = s.write_all(&bad);
            let _ = s.read(&mut [0; 1024]);
        });
        let o = go(h2_plan(s.addr, 2, None));
        let sm = summary(&o);
        assert!(sm.errors.get(ErrorClass::Protocol) >= 2, "{:?}", sm.errors);
        assert_eq!(
            sm.errors.total(),
            sm.errors.get(ErrorClass::Protocol),
            "{:?}",
            sm.errors
        );
        assert_eq!(sm.exchanges.completed, 0);
        assert!(
            sm.connections.attempts >= 4,
            "a failure reopens its connection"
        );
    }
}

/// Every stream refused: each request goes out twice (the retry is counted), then fails as
/// `stream_reset`; the connection itself stays up.
#[test]
fn refused_streams_are_sent_again_once_then_fail_as_stream_reset() {
    let s = server(|s| {
        if accept(s, &[]).is_none() {
            return;
        }
        while let Some(id) = next_request(s) {
            let rst = frame(3, 0, id, &7u32.to_be_bytes());
            if s.write_all(&rst).is_err() {
                return;
            }
        }
    });
    let o = go(h2_plan(s.addr, 1, None));
    let sm = summary(&o);
    let t = &sm.totals;
    assert!(sm.exchanges.failed > 0);
    assert_eq!(
        t.failed_by.get(ErrorClass::StreamReset),
        sm.exchanges.failed
    );
    assert_eq!(
        t.h2.refused_retried,
        t.failed_by.get(ErrorClass::StreamReset)
    );
    assert_eq!(t.h2.resets.get(7), 2 * t.h2.refused_retried, "{:?}", t.h2);
    assert_eq!(sm.connections.attempts, 1, "{:?}", sm.connections);
}

/// GOAWAY with an error code and last stream 0: nothing was processed, so every stream in
/// flight fails as `goaway`, and the connection ends as a `goaway` error.
#[test]
fn goaway_with_an_error_fails_what_it_did_not_take() {
    let s = server(|s| {
        if accept(s, &[]).is_none() || next_request(s).is_none() {
            return;
        }
        let mut p = 0u32.to_be_bytes().to_vec();
        p.extend_from_slice(&11u32.to_be_bytes()); // ENHANCE_YOUR_CALM
        p.extend_from_slice(b"calm down");
        let _ = s.write_all(&frame(7, 0, 0, &p));
        let _ = s.read(&mut [0; 1024]);
    });
    let o = go(h2_plan(s.addr, 2, None));
    let sm = summary(&o);
    let t = &sm.totals;
    assert!(
        t.failed_by.get(ErrorClass::Goaway) >= 2,
        "{:?}",
        t.failed_by
    );
    assert_eq!(sm.exchanges.failed, t.failed_by.get(ErrorClass::Goaway));
    assert_eq!(sm.exchanges.completed, 0);
    assert!(t.h2.goaways.get(11) >= 2, "{:?}", t.h2);
}

/// A server that grants no window: a request's body cannot go out, so its exchange times out
/// (the run neither hangs nor spins); the header block alone went out.
#[test]
fn no_flow_control_window_times_the_request_out() {
    let s = server(|s| {
        if accept(s, &[(0x4, 0)]).is_none() {
            return;
        }
        let mut buf = [0u8; 4096];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                return;
            }
        }
    });
    let o = go(h2_plan(s.addr, 1, Some(b"a body that waits for window")));
    let sm = summary(&o);
    assert_eq!(sm.exchanges.completed, 0);
    assert!(sm.errors.get(ErrorClass::Timeout) >= 1, "{:?}", sm.errors);
    assert_eq!(sm.errors.total(), sm.errors.get(ErrorClass::Timeout));
}

/// A server that floods PINGs and never reads: the answers pile up only so far, then the
/// connection fails as a protocol error that says why; the run ends on time.
#[test]
fn a_ping_flood_from_a_server_that_does_not_read_is_cut_off() {
    let s = server(|s| {
        if accept(s, &[]).is_none() {
            return;
        }
        let ping = frame(6, 0, 0, b"floodfld");
        let burst: Vec<u8> = ping
            .iter()
            .copied()
            .cycle()
            .take(ping.len() * 4096)
            .collect();
        // Until the client is gone (its run ends, 3 s at most): a busy machine answers
        // slowly, and the answers must pile up past the limit however slowly they come.
        while s.write_all(&burst).is_ok() {}
    });
    // Long enough for the answers to pile up past 1 MiB on a loaded machine (a 500 ms run
    // once ended with them short of it, beside four test binaries).
    let mut p = h2_plan(s.addr, 1, None);
    p.duration = Some(Duration::from_secs(3));
    let o = go(p);
    let sm = summary(&o);
    assert!(sm.errors.get(ErrorClass::Protocol) >= 1, "{:?}", sm.errors);
}

/// A response trickled a byte at a time (frames cut anywhere) completes like any other.
#[test]
fn a_response_a_byte_at_a_time_completes() {
    let s = server(|s| {
        let _ = s.set_nodelay(true);
        if accept(s, &[(0x3, 1)]).is_none() {
            return;
        }
        while let Some(id) = next_request(s) {
            let mut r = frame(1, 0x4, id, &[0x88, 0x0f, 0x10, 0x02, b'4', b'2']); // + content-length
            r.extend(frame(0, 0x1, id, b"42"));
            for b in r {
                if s.write_all(&[b]).is_err() {
                    return;
                }
            }
        }
    });
    let o = go(h2_plan(s.addr, 1, None));
    let sm = summary(&o);
    assert!(sm.exchanges.completed >= 1, "{:?}", sm.exchanges);
    assert_eq!(sm.errors.total(), 0, "{:?}", sm.errors);
}

/// gRPC replies that break the rules in a way that spoils only their call: each call fails
/// as `protocol` (no `grpc-status`, a message cut short) or `unexpected_status` (an HTTP
/// error instead of gRPC), and the connection carries on. Replies that break the stream of
/// frames itself (a compressed message this client did not allow, a status that is not a
/// number) fail the connection as `protocol`.
#[test]
fn grpc_replies_that_break_the_rules_fail_their_call_or_their_connection() {
    type Reply = fn(u32) -> Vec<u8>;
    let per_call: [(Reply, ErrorClass); 3] = [
        // 200, a whole message, and the stream ends on the DATA: no trailers, no status.
        (
            |id| {
                let mut r = frame(1, 0x4, id, &grpc_head());
                r.extend(frame(0, 0x1, id, &msg(2, &[8, 1])));
                r
            },
            ErrorClass::Protocol,
        ),
        // A message whose prefix says 100 bytes, 3 sent, then OK.
        (
            |id| {
                let mut r = frame(1, 0x4, id, &grpc_head());
                r.extend(frame(0, 0, id, &msg(100, &[1, 2, 3])));
                r.extend(frame(1, 0x5, id, &lit("grpc-status", "0")));
                r
            },
            ErrorClass::Protocol,
        ),
        // 500 and nothing of gRPC.
        (
            |id| frame(1, 0x5, id, &[0x8d + 1]), // static index 14: :status 500
            ErrorClass::UnexpectedStatus,
        ),
    ];
    for (reply, class) in per_call {
        let s = server(move |s| {
            if accept(s, &[]).is_none() {
                return;
            }
            while let Some(id) = next_request(s) {
                if s.write_all(&reply(id)).is_err() {
                    return;
                }
            }
        });
        let o = go(grpc_plan(s.addr, 1, false));
        let sm = summary(&o);
        let t = &sm.totals;
        assert!(sm.exchanges.failed > 0, "{class}");
        assert_eq!(t.failed_by.get(class), sm.exchanges.failed, "{class}");
        assert_eq!(sm.exchanges.completed, 0, "{class}");
        assert_eq!(
            sm.connections.attempts, 1,
            "{class}: the connection stays up"
        );
    }
    let per_conn: [Reply; 2] = [
        |id| {
            let mut r = frame(1, 0x4, id, &grpc_head());
            r.extend(frame(0, 0, id, &[1, 0, 0, 0, 0])); // compressed
            r
        },
        |id| {
            frame(
                1,
                0x5,
                id,
                &[&[0x88][..], &lit("grpc-status", "OK")].concat(),
            )
        },
    ];
    for reply in per_conn {
        let s = server(move |s| {
            if accept(s, &[]).is_none() {
                return;
            }
            if let Some(id) = next_request(s) {
                let _ = s.write_all(&reply(id));
                let _ = s.read(&mut [0; 1024]);
            }
        });
        let o = go(grpc_plan(s.addr, 2, false));
        let sm = summary(&o);
        assert!(sm.errors.get(ErrorClass::Protocol) >= 2, "{:?}", sm.errors);
        assert_eq!(sm.errors.total(), sm.errors.get(ErrorClass::Protocol));
        assert_eq!(sm.exchanges.completed, 0);
    }
}

/// A server stream that never ends: every message is counted and timed from its call, and
/// the call itself times out; the run ends on time.
#[test]
fn an_endless_server_stream_times_out_with_its_messages_counted() {
    let s = server(|s| {
        if accept(s, &[]).is_none() {
            return;
        }
        let Some(id) = next_request(s) else { return };
        if s.write_all(&frame(1, 0x4, id, &grpc_head())).is_err() {
            return;
        }
        let m = frame(0, 0, id, &msg(2, &[8, 1]));
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(3) {
            if s.write_all(&m).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    let mut p = grpc_plan(s.addr, 1, true);
    p.connections = 1;
    let o = go(p);
    let sm = summary(&o);
    assert!(sm.errors.get(ErrorClass::Timeout) >= 1, "{:?}", sm.errors);
    assert_eq!(sm.exchanges.completed, 0);
    let got = sm.totals.grpc.messages_received;
    assert!(got > 0);
    assert_eq!(sm.stream_msg_us.map(|l| l.count), Some(got));
}

/// A server that leaves every other stream unanswered: each of those times out on its own
/// (RST_STREAM CANCEL), the answered ones complete, and the connection is never dropped.
#[test]
fn a_stream_left_unanswered_times_out_alone() {
    let s = server(|s| {
        if accept(s, &[]).is_none() {
            return;
        }
        let mut n = 0u64;
        while let Some(id) = next_request(s) {
            n += 1;
            if n.is_multiple_of(2) {
                continue; // never answered
            }
            if s.write_all(&frame(1, 0x5, id, &[0x88])).is_err() {
                return;
            }
        }
    });
    let o = go(h2_plan(s.addr, 1, None));
    let sm = summary(&o);
    let t = &sm.totals;
    assert_eq!(sm.connections.attempts, 1, "{:?}", sm.connections);
    assert!(sm.exchanges.completed > 0);
    assert!(
        t.failed_by.get(ErrorClass::Timeout) > 0,
        "{:?}",
        t.failed_by
    );
    assert_eq!(sm.exchanges.failed, t.failed_by.get(ErrorClass::Timeout));
    assert_eq!(t.errors.total(), t.errors.get(ErrorClass::Timeout));
    assert_eq!(
        t.errors.get(ErrorClass::Timeout),
        t.failed_by.get(ErrorClass::Timeout),
        "one timeout event per stream, not per connection"
    );
}

/// A server that sends GOAWAY (taking every stream so far) and then never answers nor
/// closes: the streams time out one by one, and when the last is gone the connection is
/// closed and opened again, instead of sitting idle for the rest of the run.
#[test]
fn after_goaway_the_last_timed_out_stream_closes_the_connection() {
    let s = server(|s| {
        if accept(s, &[]).is_none() {
            return;
        }
        let mut last = 0;
        let t = Instant::now();
        // Take the first requests, then GOAWAY naming the last one taken; then silence.
        while t.elapsed() < Duration::from_millis(50) {
            match next_request(s) {
                Some(id) => last = id,
                None => return,
            }
            if last >= 7 {
                break;
            }
        }
        let mut p = last.to_be_bytes().to_vec();
        p.extend_from_slice(&0u32.to_be_bytes());
        let _ = s.write_all(&frame(7, 0, 0, &p));
        let mut buf = [0u8; 4096];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                return;
            }
        }
    });
    let o = go(h2_plan(s.addr, 1, None));
    let sm = summary(&o);
    let t = &sm.totals;
    assert!(
        t.failed_by.get(ErrorClass::Timeout) >= 1,
        "{:?}",
        t.failed_by
    );
    assert!(
        sm.connections.attempts >= 2,
        "the connection was opened again: {:?}",
        sm.connections
    );
}

// ---------------------------------------------------------------------------------------------
// Issue 42, item 5: what was accepted and should not have been.

/// A server that answers every request with `reply(stream)`.
fn answering(reply: fn(u32) -> Vec<u8>) -> TestServer {
    server(move |s| {
        if accept(s, &[]).is_none() {
            return;
        }
        while let Some(id) = next_request(s) {
            if s.write_all(&reply(id)).is_err() {
                return;
            }
        }
    })
}

/// GOAWAY (NO_ERROR, last stream 0) on every connection, right after the SETTINGS or after
/// the first request: no connection serves anything, so each is opened again after the
/// backoff a reset gets (10 ms doubling, jittered), not at once. Without it one connection
/// reconnected 9,035 times in 3 s; in a 0.5 s run the backoff allows at most 8 connects
/// (5 + 10 + 20 + 40 + 80 + 160 ms at the least before the 7th retry).
#[test]
fn a_goaway_on_every_connection_backs_off_as_a_reset_does() {
    for after_request in [false, true] {
        let s = server(move |s| {
            if accept(s, &[]).is_none() || (after_request && next_request(s).is_none()) {
                return;
            }
            let mut p = 0u32.to_be_bytes().to_vec();
            p.extend_from_slice(&0u32.to_be_bytes());
            let _ = s.write_all(&frame(7, 0, 0, &p));
            let _ = s.read(&mut [0; 1024]);
        });
        let o = go(h2_plan(s.addr, 1, None));
        let sm = summary(&o);
        let c = &sm.connections;
        assert!(c.attempts >= 2, "{after_request}: {c:?}");
        assert!(
            c.attempts <= 8,
            "{after_request}: a storm of connects: {c:?}"
        );
        assert_eq!(sm.exchanges.completed, 0);
        assert_eq!(
            sm.exchanges.failed,
            sm.totals.failed_by.get(ErrorClass::Goaway),
            "{after_request}"
        );
        if after_request {
            assert!(sm.exchanges.failed >= 1);
        }
    }
}

/// SETTINGS_MAX_CONCURRENT_STREAMS 0: no request can go out. The connection fails, saying
/// so, and as no connection ever gets through the run ends unreachable with that reason,
/// instead of a run that sent nothing and "completed" (it said "the server allows 1").
#[test]
fn max_concurrent_streams_0_fails_the_run_saying_the_server_allows_0() {
    let s = server(|s| {
        if accept(s, &[(0x3, 0)]).is_none() {
            return;
        }
        let _ = s.read(&mut [0; 1024]);
        let _ = s.read(&mut [0; 1024]);
    });
    let o = go(h2_plan(s.addr, 1, None));
    let sm = summary(&o);
    assert_eq!(sm.exchanges.sent, 0);
    assert!(sm.errors.get(ErrorClass::Protocol) >= 1, "{:?}", sm.errors);
    match &o.end {
        barrage_engine::End::Unreachable(why) => {
            assert!(why.contains("the server allows 0 streams"), "{why}")
        }
        other => panic!("the run ended {other:?}"),
    }
    assert_eq!(sm.totals.h2.streams_granted, 0, "not 'the server allows 1'");
}

/// A body shorter than its content-length (and one longer) is malformed: `protocol` for
/// that exchange, as HTTP/1.1 says; the connection carries on.
#[test]
fn a_body_shorter_than_its_content_length_is_protocol() {
    let replies: [fn(u32) -> Vec<u8>; 2] = [
        |id| {
            let mut r = frame(
                1,
                0x4,
                id,
                &[&[0x88][..], &lit("content-length", "10")].concat(),
            );
            r.extend(frame(0, 0x1, id, b"abc"));
            r
        },
        |id| {
            let mut r = frame(
                1,
                0x4,
                id,
                &[&[0x88][..], &lit("content-length", "2")].concat(),
            );
            r.extend(frame(0, 0x1, id, b"abc"));
            r
        },
    ];
    for reply in replies {
        let s = answering(reply);
        let o = go(h2_plan(s.addr, 1, None));
        let sm = summary(&o);
        assert!(sm.exchanges.failed > 0);
        assert_eq!(
            sm.totals.failed_by.get(ErrorClass::Protocol),
            sm.exchanges.failed
        );
        assert_eq!(sm.exchanges.completed, 0);
        assert_eq!(
            sm.connections.attempts, 1,
            "a stream error, not the connection's"
        );
        let why = sm.totals.reasons.first(ErrorClass::Protocol).unwrap();
        assert!(why.contains("content-length"), "{why}");
    }
}

/// A trailer block of 200 KB (HEADERS and CONTINUATION frames of 16 KiB) is over this
/// client's limit: `protocol` at once, not a timeout of every call.
#[test]
fn an_oversize_trailer_block_is_protocol_not_a_timeout() {
    let s = answering(|id| {
        let mut r = frame(1, 0x4, id, &[0x88]);
        r.extend(frame(0, 0, id, b"body"));
        let mut block = Vec::new();
        for i in 0..2_000 {
            block.extend(lit(&format!("x-trailer-{i:05}"), &"v".repeat(80)));
        }
        let parts: Vec<&[u8]> = block.chunks(16_384).collect();
        for (k, p) in parts.iter().enumerate() {
            let kind = if k == 0 { 1 } else { 9 };
            let mut flags = if k == 0 { 0x1 } else { 0 };
            if k + 1 == parts.len() {
                flags |= 0x4;
            }
            r.extend(frame(kind, flags, id, p));
        }
        r
    });
    let o = go(h2_plan(s.addr, 1, None));
    let sm = summary(&o);
    assert!(sm.errors.get(ErrorClass::Protocol) >= 1, "{:?}", sm.errors);
    assert_eq!(sm.errors.get(ErrorClass::Timeout), 0, "{:?}", sm.errors);
    assert_eq!(sm.exchanges.completed, 0);
    let why = sm.totals.reasons.first(ErrorClass::Protocol).unwrap();
    assert!(why.contains("header block larger"), "{why}");
}

/// DATA after the stream's END_STREAM: a connection error (STREAM_CLOSED, RFC 9113 5.1),
/// `protocol`, the frame named; the response before it completed.
#[test]
fn frames_on_a_closed_stream_are_protocol() {
    let s = answering(|id| {
        let mut r = frame(1, 0x5, id, &[0x88]);
        r.extend(frame(0, 0x1, id, b"late"));
        r
    });
    let o = go(h2_plan(s.addr, 1, None));
    let sm = summary(&o);
    assert!(sm.errors.get(ErrorClass::Protocol) >= 1, "{:?}", sm.errors);
    assert_eq!(sm.errors.total(), sm.errors.get(ErrorClass::Protocol));
    let why = sm.totals.reasons.first(ErrorClass::Protocol).unwrap();
    assert!(why.contains("STREAM_CLOSED"), "{why}");
}

/// `connection` and upper-case header names in a response make it malformed (RFC 9113
/// 8.2.1, 8.2.2): its exchange fails as `protocol`, the stream is reset, the connection
/// carries on.
#[test]
fn connection_and_upper_case_header_names_are_protocol() {
    let replies: [fn(u32) -> Vec<u8>; 2] = [
        |id| {
            frame(
                1,
                0x5,
                id,
                &[&[0x88][..], &lit("connection", "keep-alive")].concat(),
            )
        },
        |id| frame(1, 0x5, id, &[&[0x88][..], &lit("X-Upper", "1")].concat()),
    ];
    for reply in replies {
        let s = answering(reply);
        let o = go(h2_plan(s.addr, 1, None));
        let sm = summary(&o);
        assert!(sm.exchanges.failed > 0);
        assert_eq!(
            sm.totals.failed_by.get(ErrorClass::Protocol),
            sm.exchanges.failed
        );
        assert_eq!(sm.exchanges.completed, 0);
        assert_eq!(
            sm.connections.attempts, 1,
            "a stream error, not the connection's"
        );
    }
}

/// A gRPC reply without `content-type: application/grpc` is not a gRPC reply: `protocol`,
/// even with an OK status and a whole message.
#[test]
fn a_grpc_reply_without_content_type_is_protocol() {
    let s = answering(|id| {
        let mut r = frame(1, 0x4, id, &[0x88]);
        r.extend(frame(0, 0, id, &msg(2, &[8, 1])));
        r.extend(frame(1, 0x5, id, &lit("grpc-status", "0")));
        r
    });
    let o = go(grpc_plan(s.addr, 1, false));
    let sm = summary(&o);
    assert!(sm.exchanges.failed > 0);
    assert_eq!(
        sm.totals.failed_by.get(ErrorClass::Protocol),
        sm.exchanges.failed
    );
    assert_eq!(sm.exchanges.completed, 0);
    assert_eq!(sm.connections.attempts, 1);
}

/// A gRPC call answered with HTTP 404 and a text body (what an HTTP server without the
/// service says) is `unexpected_status`, as docs/protocols.md says, not `protocol`: the body
/// is not read as gRPC messages.
#[test]
fn a_grpc_http_404_is_unexpected_status() {
    let s = answering(|id| {
        let mut r = frame(
            1,
            0x4,
            id,
            &[&[0x8d][..], &lit("content-type", "text/plain")].concat(),
        );
        r.extend(frame(0, 0x1, id, b"404 page not found\n"));
        r
    });
    let o = go(grpc_plan(s.addr, 1, false));
    let sm = summary(&o);
    assert!(sm.exchanges.failed > 0);
    assert_eq!(
        sm.totals.failed_by.get(ErrorClass::UnexpectedStatus),
        sm.exchanges.failed
    );
    assert_eq!(sm.totals.status.get(404), sm.exchanges.failed);
    assert_eq!(sm.connections.attempts, 1);
}
