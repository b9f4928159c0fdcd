//! Hostile servers: in-process engine runs against scripted HTTP/1.1 and WebSocket servers
//! that break the protocol in one precise way each (malformed heads and lengths, bodies cut
//! short, TLS on a plain port, oversized heads, silence, invalid frames, close codes).
//!
//! Every run is bounded (half a second of load, a short drain) and goes to 127.0.0.1 only.
//! Each test checks four things: the run ends in bounded time, the failure lands in the named
//! error class and nowhere else, conservation holds, and nothing panics (a panicking worker
//! turns into `EngineError::Worker`, which `go` unwraps). Counts are lower bounds of one
//! failure per connection, so that they hold however fast the engine reconnects; how fast it
//! reconnects is tested on its own.

use crate::common::{self, plan, sink_server, TestServer};
use barrage_engine::http::{RequestSpec, RequestTemplate};
use barrage_engine::{run, End, HttpPlan, Mode, Plan, Protocol, RunOutput, StatusSet, WsPlan};
use barrage_metrics::{ErrorClass, Summary};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LOAD: Duration = Duration::from_millis(500);
const DRAIN: Duration = Duration::from_millis(300);
/// Slack on top of load + drain for a loaded CI machine.
const SLACK: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------
// Plans and runs

fn base(addr: SocketAddr, connections: u64) -> Plan {
    let mut p = plan(addr, connections, Mode::PingPong, LOAD.as_secs_f64());
    p.threads = 1;
    p.timeout = Duration::from_secs(1);
    p.connect_timeout = Duration::from_secs(1);
    p.drain = DRAIN;
    p
}

fn http_plan(addr: SocketAddr, connections: u64) -> Plan {
    let mut p = base(addr, connections);
    let host = addr.to_string();
    let request = RequestTemplate::new(&RequestSpec {
        method: "GET",
        path: "/",
        host_header: &host,
        headers: &[],
        body: None,
        keep_alive: true,
    })
    .expect("valid request");
    p.target.url = format!("http://{addr}/");
    p.protocol = Protocol::Http(HttpPlan {
        request,
        expect_status: StatusSet::default(),
    });
    p
}

fn ws_plan(addr: SocketAddr, connections: u64) -> Plan {
    let mut p = base(addr, connections);
    p.target.url = format!("ws://{addr}/");
    p.message = barrage_engine::Template::new(b"hello websocket".to_vec());
    p.protocol = Protocol::Ws(WsPlan {
        host_header: addr.to_string(),
        path: "/".into(),
        headers: vec![],
        subprotocol: None,
        binary: false,
        max_message: 16 << 20,
    });
    p
}

struct Ran {
    out: RunOutput,
    took: Duration,
}

impl Ran {
    fn s(&self) -> &Summary {
        &self.out.outcome.summary
    }

    fn errors(&self, class: ErrorClass) -> u64 {
        self.s().errors.get(class)
    }
}

/// Run `p` and check what every test checks: bounded time, conservation.
fn go(p: Plan) -> Ran {
    let bound = p.duration.unwrap_or_default() + p.drain + SLACK;
    let t = Instant::now();
    let out = run(p, Arc::new(AtomicBool::new(false)), |_, _| {}).expect("engine run");
    let took = t.elapsed();
    assert!(took < bound, "the run took {took:?}, over {bound:?}");
    let e = out.outcome.summary.exchanges;
    assert!(e.balanced(), "conservation broken: {e:?}");
    Ran { out, took }
}

/// [`go`] on virtual time from 0 (`common::go_virtual`): backoff, timeouts and the drain are
/// exact. Also returns the virtual time the run ended at.
fn go_virtual(p: Plan) -> (Ran, u64) {
    let t = Instant::now();
    let (out, end) = common::go_virtual(p);
    let e = out.outcome.summary.exchanges;
    assert!(e.balanced(), "conservation broken: {e:?}");
    let took = t.elapsed();
    (Ran { out, took }, end)
}

/// The run failed every exchange with `class` and nothing else, fast (several failures per
/// connection within the load time, not one per `--timeout`).
fn assert_only(r: &Ran, class: ErrorClass, at_least: u64) {
    let s = r.s();
    assert_eq!(r.out.end, End::Completed, "{:?}", r.out.end);
    assert!(
        r.errors(class) >= at_least,
        "expected >= {at_least} {class} errors, got {:?}",
        s.errors
    );
    assert_eq!(
        s.errors.total(),
        r.errors(class),
        "errors other than {class}: {:?}",
        s.errors
    );
    assert_eq!(s.exchanges.completed, 0, "{:?}", s.exchanges);
    assert!(s.exchanges.failed >= at_least, "{:?}", s.exchanges);
    assert!(
        s.connections.attempts >= at_least,
        "every failure reopens its connection: {:?}",
        s.connections
    );
}

// ---------------------------------------------------------------------------------------------
// Server-side helpers (own code: nothing from the engine's codecs)

/// Reads one request head (up to the blank line); None at EOF or on error.
fn read_head(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(1) => head.push(b[0]),
            _ => return None,
        }
        if head.len() > 1 << 20 {
            return None;
        }
    }
    Some(head)
}

/// Reads and discards until the client closes.
fn until_eof(s: &mut TcpStream) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            return;
        }
    }
}

#[derive(Clone, Copy)]
enum Then {
    /// Close right after the reply: the FIN may arrive together with the last bytes.
    Close,
    /// Close a little after the reply, so that the FIN arrives on its own.
    CloseLater,
    /// Keep the connection open until the client drops it.
    Hang,
}

/// Answers the first request on every connection with `reply`, then closes or hangs.
fn http_once(reply: Vec<u8>, then: Then) -> TestServer {
    TestServer::start(move |mut s| {
        if read_head(&mut s).is_none() {
            return;
        }
        if s.write_all(&reply).is_err() {
            return;
        }
        match then {
            Then::Close => drop(s),
            Then::CloseLater => std::thread::sleep(Duration::from_millis(50)),
            Then::Hang => until_eof(&mut s),
        }
    })
}

/// Answers every request of a keep-alive connection with `reply`.
fn http_each(reply: Vec<u8>) -> TestServer {
    TestServer::start(move |mut s| {
        while read_head(&mut s).is_some() {
            if s.write_all(&reply).is_err() {
                return;
            }
        }
    })
}

/// A malformed response must fail its exchange as `protocol`, close, and reconnect.
fn protocol_error_from(reply: &[u8], then: Then) -> Ran {
    let server = http_once(reply.to_vec(), then);
    // On virtual time: how many failures fit in the load does not depend on how busy the
    // machine is (on real time, a loaded machine once fitted only one).
    let (r, _) = go_virtual(http_plan(server.addr, 2));
    assert_only(&r, ErrorClass::Protocol, 2);
    r
}

/// Runs `f` on every case at once (the runs mostly wait), failing if any case failed.
fn each<T: Send>(cases: Vec<T>, f: impl Fn(T) + Sync) {
    std::thread::scope(|sc| {
        for c in cases {
            let f = &f;
            sc.spawn(move || f(c));
        }
    });
}

const WS_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Sec-WebSocket-Accept computed here (RFC 6455 §4.2.2), not by the engine.
fn accept(key: &str) -> String {
    use base64::Engine as _;
    let digest = sha1_smol::Sha1::from(format!("{key}{WS_GUID}"))
        .digest()
        .bytes();
    base64::engine::general_purpose::STANDARD.encode(digest)
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Reads the upgrade request and answers it with a correct 101.
fn ws_accept(s: &mut TcpStream) -> Option<()> {
    let head = String::from_utf8(read_head(s)?).ok()?;
    let key = header(&head, "sec-websocket-key")?;
    let reply = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n\r\n",
        accept(key)
    );
    s.write_all(reply.as_bytes()).ok()
}

/// An unmasked server frame with the first byte `b0` (FIN, RSV, opcode).
fn frame(b0: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![b0];
    match payload.len() {
        n if n < 126 => f.push(n as u8),
        n if n < 1 << 16 => {
            f.push(126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    f.extend_from_slice(payload);
    f
}

fn close_payload(code: u16, reason: &[u8]) -> Vec<u8> {
    let mut p = code.to_be_bytes().to_vec();
    p.extend_from_slice(reason);
    p
}

/// One client frame: (first byte, unmasked payload). Client frames must be masked.
fn read_frame(s: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut h = [0u8; 2];
    s.read_exact(&mut h).ok()?;
    assert!(h[1] & 0x80 != 0, "a client frame without a mask");
    let len = match h[1] & 0x7f {
        126 => {
            let mut b = [0u8; 2];
            s.read_exact(&mut b).ok()?;
            u16::from_be_bytes(b) as usize
        }
        127 => {
            let mut b = [0u8; 8];
            s.read_exact(&mut b).ok()?;
            u64::from_be_bytes(b) as usize
        }
        n => n as usize,
    };
    let mut mask = [0u8; 4];
    s.read_exact(&mut mask).ok()?;
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).ok()?;
    for (i, b) in payload.iter_mut().enumerate() {
        *b ^= mask[i % 4];
    }
    Some((h[0], payload))
}

/// What a scripted WebSocket server saw from the client.
#[derive(Default)]
struct Seen {
    messages: AtomicUsize,
    pongs: Mutex<Vec<Vec<u8>>>,
    closes: Mutex<Vec<Option<u16>>>,
}

/// Echoes data frames until the client closes; records pong payloads and close codes.
fn echo_frames(s: &mut TcpStream, seen: &Seen) {
    while let Some((b0, payload)) = read_frame(s) {
        match b0 & 0x0f {
            0x1 | 0x2 => {
                seen.messages.fetch_add(1, Ordering::Relaxed);
                if s.write_all(&frame(0x80 | (b0 & 0x0f), &payload)).is_err() {
                    return;
                }
            }
            0x8 => {
                let code =
                    (payload.len() >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]]));
                seen.closes.lock().unwrap().push(code);
                let _ = s.write_all(&frame(0x88, &payload[..payload.len().min(2)]));
                return;
            }
            0xA => seen.pongs.lock().unwrap().push(payload),
            _ => {}
        }
    }
}

/// Handshake, wait for the client's first message, answer it with `bad`, then wait for the
/// client to drop the connection (recording what it sent).
fn ws_hostile(bad: Vec<u8>) -> (TestServer, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let seen2 = Arc::clone(&seen);
    let server = TestServer::start(move |mut s| {
        if ws_accept(&mut s).is_none() || read_frame(&mut s).is_none() {
            return;
        }
        seen2.messages.fetch_add(1, Ordering::Relaxed);
        if s.write_all(&bad).is_err() {
            return;
        }
        while let Some((b0, payload)) = read_frame(&mut s) {
            if b0 & 0x0f == 0x8 {
                let code =
                    (payload.len() >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]]));
                seen2.closes.lock().unwrap().push(code);
            }
        }
    });
    (server, seen)
}

fn ws_protocol_error_from(bad: Vec<u8>) -> Ran {
    let (server, _) = ws_hostile(bad);
    let (r, _) = go_virtual(ws_plan(server.addr, 2));
    assert_only(&r, ErrorClass::Protocol, 2);
    assert!(
        r.s().handshake_us.as_ref().is_some_and(|h| h.count >= 2),
        "every reconnect redoes the handshake: {:?}",
        r.s().handshake_us
    );
    r
}

// ---------------------------------------------------------------------------------------------
// HTTP: malformed heads and lengths

#[test]
fn http_bad_status_line_is_a_protocol_error() {
    protocol_error_from(
        b"HTTP/1.1 abc Nope\r\nContent-Length: 0\r\n\r\n",
        Then::Hang,
    );
}

#[test]
fn http_status_line_of_another_protocol_is_a_protocol_error() {
    protocol_error_from(b"SSH-2.0-OpenSSH_9.2\r\n", Then::Hang);
}

#[test]
fn http_negative_content_length_is_a_protocol_error() {
    protocol_error_from(b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", Then::Hang);
}

#[test]
fn http_content_length_of_2_pow_63_is_a_protocol_error() {
    protocol_error_from(
        b"HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\nxx",
        Then::Hang,
    );
}

#[test]
fn http_content_length_overflowing_u64_is_a_protocol_error() {
    protocol_error_from(
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\nxx",
        Then::Hang,
    );
}

#[test]
fn http_conflicting_content_lengths_are_a_protocol_error() {
    protocol_error_from(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nhello",
        Then::Hang,
    );
}

#[test]
fn http_chunk_size_that_is_not_hex_is_a_protocol_error() {
    protocol_error_from(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        Then::Hang,
    );
}

#[test]
fn http_negative_chunk_size_is_a_protocol_error() {
    protocol_error_from(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
        Then::Hang,
    );
}

#[test]
fn http_chunk_size_overflowing_u64_is_a_protocol_error() {
    protocol_error_from(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000000\r\nx\r\n",
        Then::Hang,
    );
}

#[test]
fn http_chunk_without_crlf_after_data_is_a_protocol_error() {
    protocol_error_from(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
        Then::Hang,
    );
}

#[test]
fn http_body_shorter_than_announced_then_close_is_a_protocol_error() {
    protocol_error_from(
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this much",
        Then::CloseLater,
    );
}

#[test]
fn http_chunked_body_cut_by_close_is_a_protocol_error() {
    protocol_error_from(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
        Then::CloseLater,
    );
}

#[test]
fn http_garbage_bytes_are_a_protocol_error() {
    let garbage: Vec<u8> = (0..512u32).map(|i| (i * 7919 % 251) as u8).collect();
    protocol_error_from(&garbage, Then::Hang);
}

#[test]
fn http_tls_record_on_a_plain_port_is_a_protocol_error() {
    // A TLS alert/handshake record, as a TLS server sends to a plaintext client.
    each(
        vec![
            &b"\x16\x03\x01\x00\x05\x02\x00\x00\x01\x00"[..],
            &b"\x15\x03\x03\x00\x02\x02\x46"[..],
        ],
        |record| {
            // A plain-text client at a TLS port is a mistake in the target: the run stops
            // at once with the remedy, and the failure is still counted as `protocol`.
            let server = http_once(record.to_vec(), Then::Hang);
            let r = go(http_plan(server.addr, 2));
            match &r.out.end {
                End::Unreachable(why) => assert!(why.contains("https://"), "{why}"),
                e => panic!("expected the run to stop with a hint, got {e:?}"),
            }
            assert!(r.errors(ErrorClass::Protocol) >= 1, "{:?}", r.s().errors);
        },
    );
}

// ---------------------------------------------------------------------------------------------
// HTTP: head limits (64 KiB, 100 lines) and their boundaries

fn head_with_lines(n: usize) -> Vec<u8> {
    let mut r = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n".to_vec();
    for i in 1..n {
        r.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
    }
    r.extend_from_slice(b"\r\nok");
    r
}

#[test]
fn http_100_header_lines_are_accepted() {
    let server = http_each(head_with_lines(100));
    let r = go(http_plan(server.addr, 2));
    assert_eq!(r.s().errors.total(), 0, "{:?}", r.s().errors);
    assert!(r.s().exchanges.completed > 10, "{:?}", r.s().exchanges);
}

#[test]
fn http_more_than_100_header_lines_are_a_protocol_error() {
    protocol_error_from(&head_with_lines(101), Then::Hang);
}

#[test]
fn http_headers_just_under_64_kib_are_accepted() {
    let mut reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Big: ".to_vec();
    reply.extend(std::iter::repeat_n(b'a', 60 * 1024));
    reply.extend_from_slice(b"\r\n\r\nok");
    let server = http_each(reply);
    let r = go(http_plan(server.addr, 2));
    assert_eq!(r.s().errors.total(), 0, "{:?}", r.s().errors);
    assert!(r.s().exchanges.completed > 10, "{:?}", r.s().exchanges);
}

#[test]
fn http_headers_over_64_kib_are_a_protocol_error() {
    let mut reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Big: ".to_vec();
    reply.extend(std::iter::repeat_n(b'a', 70 * 1024));
    reply.extend_from_slice(b"\r\n\r\nok");
    protocol_error_from(&reply, Then::Hang);
}

#[test]
fn http_a_head_that_never_ends_is_cut_at_the_limit() {
    // 8 MiB of one header value: the client must give up at 64 KiB, not buffer it all.
    let written = Arc::new(AtomicUsize::new(0));
    let w2 = Arc::clone(&written);
    let server = TestServer::start(move |mut s| {
        if read_head(&mut s).is_none() {
            return;
        }
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nX-Endless: ");
        let chunk = [b'a'; 16 * 1024];
        for _ in 0..512 {
            if s.write_all(&chunk).is_err() {
                return;
            }
            w2.fetch_add(chunk.len(), Ordering::Relaxed);
        }
        until_eof(&mut s);
    });
    let r = go(http_plan(server.addr, 2));
    assert_only(&r, ErrorClass::Protocol, 2);
    drop(server);
    assert!(
        r.s().totals.bytes_read < 64 << 20,
        "read {} bytes of an endless head",
        r.s().totals.bytes_read
    );
}

// ---------------------------------------------------------------------------------------------
// HTTP: silence, graceful closes, old versions, statuses

#[test]
fn http_server_that_never_answers_is_a_timeout() {
    let server = sink_server();
    let mut p = http_plan(server.addr, 2);
    p.timeout = Duration::from_millis(200);
    let r = go(p);
    assert_only(&r, ErrorClass::Timeout, 2);
    assert!(
        r.took >= LOAD,
        "a timeout does not end the run early: {:?}",
        r.took
    );
}

/// `Connection: close` (or HTTP/1.0) on every response: each response completes, its
/// connection is closed gracefully (counted in `closed_by_peer`, not as an error) and reopened.
fn assert_graceful_closes(r: &Ran, connections: u64) {
    let s = r.s();
    assert_eq!(r.out.end, End::Completed);
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    let done = s.exchanges.completed;
    assert!(done >= connections, "{:?}", s.exchanges);
    assert_eq!(s.exchanges.in_flight_at_end, 0, "{:?}", s.exchanges);
    assert_eq!(s.connections.closed_by_peer, done, "{:?}", s.connections);
    assert!(
        (done..=done + connections).contains(&s.connections.attempts),
        "{} attempts for {done} responses: {:?}",
        s.connections.attempts,
        s.connections
    );
    assert_eq!(s.connections.failed, 0, "{:?}", s.connections);
    assert_eq!(s.totals.status.get(200), done);
}

#[test]
fn http_connection_close_on_every_response_reconnects_without_errors() {
    let server = http_once(
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello".to_vec(),
        Then::Close,
    );
    let r = go(http_plan(server.addr, 4));
    assert_graceful_closes(&r, 4);
}

#[test]
fn http_connection_close_without_waiting_for_the_client_is_graceful_too() {
    // The server answers as soon as it accepts (before reading the request) and closes.
    let server = TestServer::start(|mut s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok");
        let _ = read_head(&mut s);
        let _ = s.shutdown(std::net::Shutdown::Both);
    });
    let r = go(http_plan(server.addr, 2));
    assert_graceful_closes(&r, 2);
}

#[test]
fn http_1_0_response_with_length_and_no_keep_alive_reconnects_without_errors() {
    let server = http_once(
        b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
        Then::Close,
    );
    let r = go(http_plan(server.addr, 2));
    assert_graceful_closes(&r, 2);
}

#[test]
fn http_1_0_response_body_until_close_completes() {
    let server = http_once(
        b"HTTP/1.0 200 OK\r\n\r\nbody until EOF".to_vec(),
        Then::CloseLater,
    );
    let r = go(http_plan(server.addr, 2));
    assert_graceful_closes(&r, 2);
}

#[test]
fn http_1_0_server_that_keeps_the_connection_open_is_closed_by_the_client() {
    // HTTP/1.0 without keep-alive, but the server lingers: the client must not wait for it.
    let server = http_once(
        b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec(),
        Then::Hang,
    );
    let r = go(http_plan(server.addr, 2));
    assert_graceful_closes(&r, 2);
}

#[test]
fn http_reconnect_after_a_graceful_close_is_immediate() {
    let server = http_once(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".to_vec(),
        Then::Close,
    );
    let r = go(http_plan(server.addr, 1));
    assert_graceful_closes(&r, 1);
    // One loopback connect plus one thread spawn in the test server per response.
    assert!(
        r.s().exchanges.completed >= 100,
        "{} responses in {LOAD:?} on one connection: {:?}",
        r.s().exchanges.completed,
        r.s().connections
    );
}

#[test]
fn http_reconnects_after_a_failure_exactly_at_the_backoff_in_virtual_time() {
    let server = http_once(b"HTTP/1.1 abc\r\n\r\n".to_vec(), Then::Hang);
    let (r, end) = go_virtual(http_plan(server.addr, 1));
    // Each attempt fails at once (no virtual time passes while the server answers), then
    // waits its backoff (10, 20, 40, 80, 160 ms ... times the worker's seeded 0.5-1.0
    // jitter): the failures are exactly the attempts started within the load.
    let load = LOAD.as_nanos() as u64;
    let mut rng = barrage_engine::pacer::Rng::new(0xB4A2_2A6E);
    let (mut t, mut failures) = (0, 0);
    while t < load {
        failures += 1;
        t += barrage_engine::pacer::backoff_ns(failures, rng.next_f64());
    }
    assert_only(&r, ErrorClass::Protocol, failures as u64);
    assert_eq!(
        r.errors(ErrorClass::Protocol),
        failures as u64,
        "{:?}",
        r.s().errors
    );
    assert_eq!(r.s().connections.attempts, failures as u64);
    // Nothing in flight at the end: the drain is over at once, at the end of the load.
    assert_eq!(end, load, "virtual time at the end");
}

#[test]
fn http_body_until_close_completes_when_the_fin_comes_with_the_data() {
    let server = http_once(
        b"HTTP/1.0 200 OK\r\n\r\nbody until EOF".to_vec(),
        Then::Close,
    );
    let mut p = http_plan(server.addr, 2);
    p.timeout = Duration::from_millis(200);
    let r = go(p);
    assert_graceful_closes(&r, 2);
}

#[test]
fn http_truncated_body_with_an_immediate_close_is_a_protocol_error() {
    let server = http_once(
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this much".to_vec(),
        Then::Close,
    );
    let mut p = http_plan(server.addr, 2);
    p.timeout = Duration::from_millis(200);
    let r = go(p);
    assert_only(&r, ErrorClass::Protocol, 2);
}

#[test]
fn http_unexpected_status_is_counted_and_keeps_the_connection() {
    let server = http_each(b"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy".to_vec());
    let r = go(http_plan(server.addr, 2));
    let s = r.s();
    let bad = r.errors(ErrorClass::UnexpectedStatus);
    assert!(bad > 10, "{:?}", s.errors);
    assert_eq!(s.errors.total(), bad, "{:?}", s.errors);
    assert_eq!(s.totals.status.get(503), bad);
    assert_eq!(s.exchanges.completed, 0);
    assert_eq!(s.connections.attempts, 2, "kept alive: {:?}", s.connections);
}

#[test]
fn http_interim_1xx_responses_are_skipped() {
    let server = http_each(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n\
          HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            .to_vec(),
    );
    let r = go(http_plan(server.addr, 2));
    let s = r.s();
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert!(s.exchanges.completed > 10, "{:?}", s.exchanges);
    assert_eq!(s.totals.status.get(200), s.exchanges.completed);
    assert_eq!(s.exchanges.unexpected_replies, 0);
}

#[test]
fn http_a_protocol_error_does_not_poison_the_next_connection() {
    // The first connection gets a broken head, every later one a good keep-alive server.
    let first = Arc::new(AtomicBool::new(true));
    let server = TestServer::start(move |mut s| {
        if first.swap(false, Ordering::Relaxed) {
            let _ = read_head(&mut s);
            let _ = s.write_all(b"HTTP/1.1 2xx Broken\r\n\r\n");
            return until_eof(&mut s);
        }
        while read_head(&mut s).is_some() {
            if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .is_err()
            {
                return;
            }
        }
    });
    let mut p = http_plan(server.addr, 1);
    // A short timeout: its (stale) timer also wakes the loop for the reconnect, see
    // http_reconnects_after_a_failure_exactly_at_the_backoff_in_virtual_time.
    p.timeout = Duration::from_millis(100);
    let r = go(p);
    let s = r.s();
    assert_eq!(r.errors(ErrorClass::Protocol), 1, "{:?}", s.errors);
    assert_eq!(s.errors.total(), 1, "{:?}", s.errors);
    assert!(s.exchanges.completed > 10, "{:?}", s.exchanges);
}

#[test]
fn http_unsolicited_response_on_an_idle_connection_does_not_panic() {
    // Two responses per request: the second arrives with nothing in flight.
    let server = http_each(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            .to_vec(),
    );
    let r = go(http_plan(server.addr, 2));
    assert!(r.s().exchanges.completed > 0, "{:?}", r.s().exchanges);
}

// ---------------------------------------------------------------------------------------------
// WebSocket: invalid frames after a correct handshake

#[test]
fn ws_masked_server_frame_is_a_protocol_error() {
    let mut f = vec![0x81, 0x80 | 5, 1, 2, 3, 4];
    f.extend(b"hello".iter().zip([1u8, 2, 3, 4, 1]).map(|(b, m)| b ^ m));
    ws_protocol_error_from(f);
}

#[test]
fn ws_reserved_bits_are_a_protocol_error() {
    each(vec![0x40, 0x20, 0x10], |rsv| {
        ws_protocol_error_from(frame(0x80 | rsv | 0x1, b"hello websocket"));
    });
}

#[test]
fn ws_unknown_opcodes_are_a_protocol_error() {
    // A reserved data opcode and a reserved control opcode.
    each(vec![0x83, 0x8B], |b0| {
        ws_protocol_error_from(frame(b0, b"x"));
    });
}

#[test]
fn ws_fragmented_control_frame_is_a_protocol_error() {
    ws_protocol_error_from(frame(0x09, b"ping")); // ping without FIN
}

#[test]
fn ws_control_frame_over_125_bytes_is_a_protocol_error() {
    ws_protocol_error_from(frame(0x89, &[b'p'; 126]));
}

#[test]
fn ws_continuation_without_a_message_is_a_protocol_error() {
    ws_protocol_error_from(frame(0x80, b"hello websocket"));
}

#[test]
fn ws_invalid_close_codes_are_a_protocol_error_not_a_close() {
    each(vec![1005, 999, 1006, 1015, 2000, 5000], |code| {
        let r = ws_protocol_error_from(frame(0x88, &close_payload(code, b"")));
        assert_eq!(
            r.s().totals.ws_close.get(code),
            0,
            "close code {code} was counted as a close"
        );
    });
}

#[test]
fn ws_close_with_a_one_byte_payload_is_a_protocol_error() {
    ws_protocol_error_from(frame(0x88, &[0x03]));
}

#[test]
fn ws_close_reason_with_invalid_utf8_is_a_protocol_error() {
    ws_protocol_error_from(frame(0x88, &close_payload(1000, &[0xff, 0xfe])));
}

#[test]
fn ws_invalid_utf8_in_a_text_frame_is_a_protocol_error() {
    each(
        vec![
            vec![b'a', 0xff, 0xfe, b'b'],
            vec![b'a', 0xe2, 0x82], // a multi-byte sequence cut by the end of the message
            vec![0xed, 0xa0, 0x80], // a UTF-16 surrogate
            vec![0xc0, 0xaf],       // an overlong encoding of '/'
        ],
        |payload| {
            ws_protocol_error_from(frame(0x81, &payload));
        },
    );
}

#[test]
fn ws_frame_announcing_2_pow_63_bytes_is_a_protocol_error() {
    let mut f = vec![0x82, 127];
    f.extend_from_slice(&(1u64 << 63).to_be_bytes());
    f.extend_from_slice(b"and then some");
    ws_protocol_error_from(f);
}

#[test]
fn ws_frame_over_the_message_limit_is_a_protocol_error() {
    // 2^40 bytes announced: a valid length, far over the 16 MiB limit.
    let mut f = vec![0x82, 127];
    f.extend_from_slice(&(1u64 << 40).to_be_bytes());
    ws_protocol_error_from(f);
}

// ---------------------------------------------------------------------------------------------
// WebSocket: closes, pings, failed handshakes

#[test]
fn ws_close_1000_is_closed_by_peer_and_the_code_is_counted() {
    let (server, seen) = ws_hostile(frame(0x88, &close_payload(1000, b"bye")));
    let r = go(ws_plan(server.addr, 2));
    assert_only(&r, ErrorClass::ClosedByPeer, 2);
    let closes = r.s().totals.ws_close.get(1000);
    assert_eq!(
        closes,
        r.errors(ErrorClass::ClosedByPeer),
        "{:?}",
        r.s().totals.ws_close
    );
    drop(server);
    // The client answers a close with a close echoing the code (RFC 6455 §5.5.1).
    let answered = seen.closes.lock().unwrap().clone();
    assert!(
        answered.iter().filter(|c| **c == Some(1000)).count() >= 2,
        "close answers the server saw: {answered:?}"
    );
}

#[test]
fn ws_close_1011_is_a_ws_close_error_and_the_code_is_counted() {
    let (server, _) = ws_hostile(frame(0x88, &close_payload(1011, b"internal error")));
    let r = go(ws_plan(server.addr, 2));
    assert_only(&r, ErrorClass::WsClose, 2);
    assert_eq!(
        r.s().totals.ws_close.get(1011),
        r.errors(ErrorClass::WsClose),
        "{:?}",
        r.s().totals.ws_close
    );
}

#[test]
fn ws_close_without_a_code_is_closed_by_peer() {
    let (server, _) = ws_hostile(frame(0x88, b""));
    let r = go(ws_plan(server.addr, 2));
    assert_only(&r, ErrorClass::ClosedByPeer, 2);
    assert_eq!(
        r.s().totals.ws_close.get(1005),
        r.errors(ErrorClass::ClosedByPeer),
        "a close without a code counts as 1005: {:?}",
        r.s().totals.ws_close
    );
}

const PING: &[u8] = b"are you there? \x00\xff";

/// An echo server that pings once right after the handshake; returns what it saw once every
/// connection has ended.
fn ping_once_then_echo() -> Arc<Seen> {
    let seen = Arc::new(Seen::default());
    let seen2 = Arc::clone(&seen);
    let done = Arc::new(AtomicUsize::new(0));
    let done2 = Arc::clone(&done);
    let server = TestServer::start(move |mut s| {
        if ws_accept(&mut s).is_some() {
            let _ = s.write_all(&frame(0x89, PING));
            echo_frames(&mut s, &seen2);
        }
        done2.fetch_add(1, Ordering::Relaxed);
    });
    let r = go(ws_plan(server.addr, 2));
    let s = r.s();
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert!(s.exchanges.completed > 10, "{:?}", s.exchanges);
    assert_eq!(s.connections.attempts, 2, "{:?}", s.connections);
    let t = Instant::now();
    while done.load(Ordering::Relaxed) < 2 && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    seen
}

#[test]
fn ws_ping_is_answered_with_a_pong_carrying_the_same_payload() {
    let seen = ping_once_then_echo();
    let pongs = seen.pongs.lock().unwrap().clone();
    let answers = pongs.iter().filter(|p| p.as_slice() == PING).count();
    assert_eq!(
        answers,
        2,
        "one pong with the ping's payload per connection; pongs with another payload: {:?}",
        pongs
            .iter()
            .filter(|p| p.as_slice() != PING)
            .take(5)
            .collect::<Vec<_>>()
    );
    // And on shutdown the client says goodbye with 1000.
    let closes = seen.closes.lock().unwrap().clone();
    assert_eq!(closes, vec![Some(1000); 2], "{closes:?}");
}

#[test]
fn ws_pong_is_sent_only_in_answer_to_a_ping() {
    let seen = ping_once_then_echo();
    let pongs = seen.pongs.lock().unwrap();
    assert_eq!(
        pongs.len(),
        2,
        "{} pongs for 2 pings; the first: {:?}",
        pongs.len(),
        pongs.iter().take(4).collect::<Vec<_>>()
    );
}

#[test]
fn ws_ping_between_echoes_is_answered_and_does_not_complete_an_exchange() {
    let seen = Arc::new(Seen::default());
    let seen2 = Arc::clone(&seen);
    let server = TestServer::start(move |mut s| {
        if ws_accept(&mut s).is_none() {
            return;
        }
        // A ping before every echo, in the same write.
        while let Some((b0, payload)) = read_frame(&mut s) {
            match b0 & 0x0f {
                0x1 | 0x2 => {
                    seen2.messages.fetch_add(1, Ordering::Relaxed);
                    let mut out = frame(0x89, b"p");
                    out.extend(frame(0x80 | (b0 & 0x0f), &payload));
                    if s.write_all(&out).is_err() {
                        return;
                    }
                }
                0xA => seen2.pongs.lock().unwrap().push(payload),
                0x8 => return,
                _ => {}
            }
        }
    });
    let mut p = ws_plan(server.addr, 1);
    p.verify = true;
    let r = go(p);
    let s = r.s();
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.exchanges.unexpected_replies, 0);
    drop(server);
    std::thread::sleep(Duration::from_millis(100));
    let msgs = seen.messages.load(Ordering::Relaxed) as u64;
    assert_eq!(s.exchanges.sent, msgs, "{:?}", s.exchanges);
    assert_eq!(s.exchanges.completed, msgs);
    let pongs = seen.pongs.lock().unwrap();
    let answers = pongs.iter().filter(|p| p.as_slice() == b"p").count() as u64;
    // The last ping may arrive after the client said goodbye.
    assert!(
        answers + 1 >= msgs && answers <= msgs,
        "{answers} pongs for {msgs} pings"
    );
}

#[test]
fn ws_handshake_answered_with_404_fails_fast_as_unreachable() {
    let server =
        http_each(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found".to_vec());
    let mut p = ws_plan(server.addr, 4);
    p.duration = Some(Duration::from_secs(2));
    let r = go(p);
    match &r.out.end {
        End::Unreachable(why) => assert!(why.contains("404"), "{why}"),
        e => panic!("expected unreachable, got {e:?}"),
    }
    assert!(r.errors(ErrorClass::Protocol) >= 3, "{:?}", r.s().errors);
    assert_eq!(r.s().exchanges.sent, 0);
}

#[test]
fn ws_handshake_with_a_wrong_accept_fails_fast_as_unreachable() {
    let server = TestServer::start(|mut s| {
        if read_head(&mut s).is_none() {
            return;
        }
        let _ = s.write_all(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
              Sec-WebSocket-Accept: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        );
        until_eof(&mut s);
    });
    let mut p = ws_plan(server.addr, 2);
    p.duration = Some(Duration::from_secs(2));
    let r = go(p);
    match &r.out.end {
        End::Unreachable(why) => assert!(why.contains("Accept"), "{why}"),
        e => panic!("expected unreachable, got {e:?}"),
    }
}

#[test]
fn ws_tls_record_on_a_plain_port_fails_fast_naming_tls() {
    let server = http_once(b"\x15\x03\x03\x00\x02\x02\x46".to_vec(), Then::Close);
    let mut p = ws_plan(server.addr, 2);
    p.duration = Some(Duration::from_secs(2));
    let r = go(p);
    match &r.out.end {
        End::Unreachable(why) => assert!(why.contains("TLS") && why.contains("wss://"), "{why}"),
        e => panic!("expected unreachable, got {e:?}"),
    }
}

#[test]
fn ws_handshake_that_never_comes_is_a_timeout_exactly_in_virtual_time() {
    let server = sink_server();
    let mut p = ws_plan(server.addr, 2);
    p.timeout = Duration::from_millis(250);
    let (r, end) = go_virtual(p);
    // Each connection's upgrade times out at 250 ms and it reconnects after at most 10 ms of
    // backoff; that upgrade is still under way when the load ends at 500 ms (the drain waits
    // for exchanges, not handshakes): two attempts and one timeout each, whatever the jitter.
    assert_eq!(r.errors(ErrorClass::Timeout), 2, "{:?}", r.s().errors);
    assert_eq!(r.s().errors.total(), 2, "{:?}", r.s().errors);
    assert_eq!(r.s().connections.attempts, 4, "{:?}", r.s().connections);
    assert_eq!(end, LOAD.as_nanos() as u64);
    assert_eq!(r.s().exchanges.sent, 0);
}

#[test]
fn ws_a_protocol_error_does_not_poison_the_next_connection() {
    let first = Arc::new(AtomicBool::new(true));
    let seen = Arc::new(Seen::default());
    let seen2 = Arc::clone(&seen);
    let server = TestServer::start(move |mut s| {
        if ws_accept(&mut s).is_none() {
            return;
        }
        if first.swap(false, Ordering::Relaxed) {
            let _ = read_frame(&mut s);
            let _ = s.write_all(&frame(0x81, &[0xff]));
            return until_eof(&mut s);
        }
        echo_frames(&mut s, &seen2);
    });
    let mut p = ws_plan(server.addr, 1);
    p.verify = true;
    // See http_a_protocol_error_does_not_poison_the_next_connection.
    p.timeout = Duration::from_millis(100);
    let r = go(p);
    let s = r.s();
    assert_eq!(r.errors(ErrorClass::Protocol), 1, "{:?}", s.errors);
    assert_eq!(s.errors.total(), 1, "{:?}", s.errors);
    assert!(s.exchanges.completed > 10, "{:?}", s.exchanges);
}

// ---------------------------------------------------------------------------------------------
// Floods: a server that sends faster than the client decodes. The run must still end at its
// duration (the loop reads a bounded share per turn and keeps its clock), and what it owes the
// server in return (pongs) must not queue without bound.

/// `unit` repeated into one buffer of about 64 KiB.
fn flood_of(unit: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(64 << 10);
    while b.len() + unit.len() <= 64 << 10 {
        b.extend_from_slice(unit);
    }
    b
}

/// After the upgrade, writes `flood` over and over until the client goes. With `read`, another
/// thread reads what the client sends meanwhile (pongs and closes land in `Seen`); without, the
/// client's writes are never read. `done` counts connections whose client went.
fn ws_flood(flood: Vec<u8>, read: bool) -> (TestServer, Arc<Seen>, Arc<AtomicUsize>) {
    let seen = Arc::new(Seen::default());
    let done = Arc::new(AtomicUsize::new(0));
    let (seen2, done2) = (Arc::clone(&seen), Arc::clone(&done));
    let server = TestServer::start(move |mut s| {
        if ws_accept(&mut s).is_none() {
            return;
        }
        let reader = read.then(|| {
            let mut r = s.try_clone().unwrap();
            let seen = Arc::clone(&seen2);
            std::thread::spawn(move || echo_frames_silently(&mut r, &seen))
        });
        while s.write_all(&flood).is_ok() {}
        if let Some(r) = reader {
            let _ = r.join();
        }
        done2.fetch_add(1, Ordering::Relaxed);
    });
    (server, seen, done)
}

/// Records what the client sends (pongs, closes, messages) without answering.
fn echo_frames_silently(s: &mut TcpStream, seen: &Seen) {
    while let Some((b0, payload)) = read_frame(s) {
        match b0 & 0x0f {
            0x1 | 0x2 => {
                seen.messages.fetch_add(1, Ordering::Relaxed);
            }
            0x8 => {
                let code =
                    (payload.len() >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]]));
                seen.closes.lock().unwrap().push(code);
                return;
            }
            0xA => seen.pongs.lock().unwrap().push(payload),
            _ => {}
        }
    }
}

fn wait_for(n: usize, count: &AtomicUsize) {
    let t = Instant::now();
    while count.load(Ordering::Relaxed) < n && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn flood_run(p: Plan) -> Ran {
    let bound = p.duration.unwrap_or_default() + p.drain + SLACK;
    let t = Instant::now();
    let out = common::go_within(p, Arc::new(AtomicBool::new(false)), bound);
    let e = out.outcome.summary.exchanges;
    assert!(e.balanced(), "conservation broken: {e:?}");
    Ran {
        out,
        took: t.elapsed(),
    }
}

#[test]
fn ws_a_ping_flood_ends_at_the_duration_with_one_pong_per_read_at_most() {
    // Regression: pings faster than the client decoded them wedged the worker (its read loop
    // never drained the socket), ignored -d, --timeout and signals, and queued a pong per
    // ping without bound.
    let (server, seen, done) = ws_flood(flood_of(&frame(0x89, b"ping")), true);
    let r = flood_run(ws_plan(server.addr, 2));
    wait_for(2, &done);
    assert_eq!(r.out.end, End::Completed, "{:?}", r.out.end);
    let pongs = seen.pongs.lock().unwrap().len() as u64;
    let reads = r.s().totals.reads;
    assert!(pongs > 0, "pings were never answered");
    assert!(
        pongs <= reads,
        "{pongs} pongs for {reads} reads: pongs must be coalesced (one per read at most)"
    );
    assert!(seen.pongs.lock().unwrap().iter().all(|p| p == b"ping"));
}

#[test]
fn ws_a_ping_flood_from_a_server_that_never_reads_ends_at_the_duration() {
    let (server, _, done) = ws_flood(flood_of(&frame(0x89, b"ping")), false);
    let r = flood_run(ws_plan(server.addr, 2));
    assert_eq!(r.out.end, End::Completed, "{:?}", r.out.end);
    drop(server);
    wait_for(2, &done);
}

#[test]
fn ws_a_text_flood_ends_at_the_duration_and_counts_the_unasked_messages() {
    let (server, _, done) = ws_flood(flood_of(&frame(0x81, b"flood")), true);
    let r = flood_run(ws_plan(server.addr, 2));
    wait_for(2, &done);
    assert_eq!(r.out.end, End::Completed, "{:?}", r.out.end);
    let s = r.s();
    assert!(s.exchanges.completed >= 2, "{:?}", s.exchanges);
    assert!(s.exchanges.unexpected_replies > 0, "{:?}", s.exchanges);
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
}

#[test]
fn tcp_a_flood_without_a_newline_ends_at_the_duration_as_timeouts() {
    // `--expect line` against a server that streams bytes and never ends a line: the read
    // loop once overran the run's bound by most of a second.
    // Three writers per connection, so the bytes come faster than one client thread reads.
    let server = TestServer::start(move |s| {
        let writers: Vec<_> = (0..3)
            .map(|_| {
                let mut s = s.try_clone().unwrap();
                std::thread::spawn(move || {
                    let flood = vec![b'x'; 64 << 10];
                    while s.write_all(&flood).is_ok() {}
                })
            })
            .collect();
        for w in writers {
            let _ = w.join();
        }
    });
    let mut p = base(server.addr, 2);
    p.framing = barrage_engine::Framing::Line;
    p.timeout = Duration::from_millis(200);
    let r = flood_run(p);
    assert_eq!(r.out.end, End::Completed, "{:?}", r.out.end);
    let s = r.s();
    assert_eq!(s.exchanges.completed, 0, "{:?}", s.exchanges);
    assert!(s.errors.get(ErrorClass::Timeout) >= 2, "{:?}", s.errors);
    assert_eq!(
        s.errors.total(),
        s.errors.get(ErrorClass::Timeout),
        "{:?}",
        s.errors
    );
}

/// Review of issue 24: a ping that came while the client's socket was backlogged (a server
/// that did not read) lost its pong for good. The latest ping's pong is kept and written once
/// the socket drains: the server, reading again, gets it with the ping's payload.
#[test]
fn ws_a_ping_while_the_socket_is_backlogged_is_answered_once_it_drains() {
    let seen = Arc::new(Seen::default());
    let seen2 = Arc::clone(&seen);
    let server = TestServer::start(move |mut s| {
        if ws_accept(&mut s).is_none() {
            return;
        }
        // Let the client's writes pile up past the socket buffers (three messages of 8 MiB in
        // the first 0.9 s: megabytes wait in the client), then ping, then read them all.
        std::thread::sleep(Duration::from_millis(1000));
        if s.write_all(&frame(0x89, b"late-ping")).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
        echo_frames_silently(&mut s, &seen2);
    });
    let mut p = ws_plan(server.addr, 1);
    p.message = barrage_engine::Template::new(vec![b'x'; 8 << 20]);
    if let barrage_engine::Protocol::Ws(w) = &mut p.protocol {
        w.max_message = 64 << 20;
    }
    p.mode = barrage_engine::Mode::Rate(4.0);
    p.rate_shape = Some(Arc::new(
        barrage_engine::shape::Shape::new(vec![(0.0, 4.0), (0.9, 4.0), (0.95, 0.0), (4.0, 0.0)])
            .unwrap(),
    ));
    p.framing = barrage_engine::Framing::None;
    p.duration = Some(Duration::from_secs(4));
    let r = flood_run(p);
    assert_eq!(r.out.end, End::Completed, "{:?}", r.out.end);
    let pongs = seen.pongs.lock().unwrap().clone();
    assert!(
        pongs.iter().any(|p| p == b"late-ping"),
        "no pong for the ping that came while backlogged ({} pongs)",
        pongs.len()
    );
}
