//! The http server through its public API with std blocking clients: keep-alive, pipelining,
//! every route, closes, errors, exact counters and the fault knobs. TLS is in `tests/it/tls.rs`.

use crate::common::http_client::{expected_body, read_response, Counting, Response};
use crate::common::{connect, wait_for};
use barrage_servers::http::{self, HttpConfig};
use barrage_servers::{HttpStats, ServerHandle};
use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);
/// Scheduling slack allowed on top of any expected time.
/// A liveness bound for "promptly" (a repeated stall would take `stall_for`, 2 s), far above any
/// loopback round trip on a loaded machine: not a measurement.
const MARGIN: Duration = Duration::from_millis(1000);

fn config(threads: usize) -> HttpConfig {
    HttpConfig {
        listen: "127.0.0.1:0".parse().expect("valid address"),
        threads,
        ..HttpConfig::default()
    }
}

fn start(cfg: HttpConfig) -> ServerHandle {
    http::start(cfg).expect("http server starts")
}

fn http_stats(server: &ServerHandle) -> HttpStats {
    server.stats().http.expect("the http server has http stats")
}

/// A client connection: writes go to the stream, reads through one buffer kept for its life.
struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn new(server: &ServerHandle) -> Client {
        Client {
            reader: BufReader::new(connect(server.local_addr())),
        }
    }

    fn send(&mut self, raw: &str) {
        self.reader
            .get_mut()
            .write_all(raw.as_bytes())
            .expect("send");
    }

    fn get(&mut self, path: &str) -> Response {
        self.send(&format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n"));
        self.read(false)
    }

    fn read(&mut self, head_request: bool) -> Response {
        read_response(&mut self.reader, head_request)
    }

    /// The server closed the connection (after everything read so far).
    fn expect_eof(&mut self) {
        let mut rest = Vec::new();
        self.reader.read_to_end(&mut rest).expect("EOF");
        assert!(rest.is_empty(), "bytes after the last response: {rest:?}");
    }
}

#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let server = start(config(2));
    let mut client = Client::new(&server);
    for _ in 0..5 {
        let response = client.get("/");
        assert_eq!(response.status, 200);
        assert_eq!(response.body, b"hello from barrage\n");
        assert_eq!(response.header("content-type"), Some("text/plain"));
        assert_eq!(response.header("content-length"), Some("19"));
        assert_eq!(response.header("server"), Some("barrage"));
        assert_eq!(response.header("connection"), None);
    }
    let stats = server.stats();
    assert_eq!(stats.connections_accepted, 1);
    let http = stats.http.expect("http stats");
    assert_eq!((http.requests, http.responses_2xx), (5, 5));
}

#[test]
fn pipelined_requests_in_one_write_are_answered_in_order() {
    let server = start(config(1));
    let mut client = Client::new(&server);
    client.send(
        "GET /status/201 HTTP/1.1\r\n\r\n\
         GET /bytes/100000 HTTP/1.1\r\n\r\n\
         HEAD /chunked/9000 HTTP/1.1\r\n\r\n\
         POST /status/404 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello\
         PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n\
         GET /chunked/5000 HTTP/1.1\r\n\r\n\
         GET /delay/50 HTTP/1.1\r\n\r\n\
         GET /status/302 HTTP/1.1\r\n\r\n",
    );
    let statuses: Vec<u16> = [false, false, true, false, false, false, false, false]
        .into_iter()
        .map(|head| {
            let response = client.read(head);
            match response.status {
                200 if response.body.len() == 100_000 => {
                    assert!(response.body == expected_body(100_000));
                }
                200 if response.chunked => assert!(response.body == expected_body(5000)),
                _ => {}
            }
            response.status
        })
        .collect();
    assert_eq!(statuses, [201, 200, 200, 404, 200, 200, 200, 302]);

    // Small answers to one batch of requests leave in fewer writes than there are answers.
    let before = server.stats();
    let batch = "GET / HTTP/1.1\r\n\r\n".repeat(20);
    client.send(&batch);
    for _ in 0..20 {
        assert_eq!(client.read(false).status, 200);
    }
    let after = server.stats();
    assert!(after.writes - before.writes < 20, "{before:?} {after:?}");
}

#[test]
fn every_route_answers_as_documented() {
    let server = start(config(2));
    let mut client = Client::new(&server);

    let hello = client.get("/");
    assert_eq!(
        (hello.status, &hello.body[..]),
        (200, &b"hello from barrage\n"[..])
    );

    client.send("HEAD / HTTP/1.1\r\n\r\n");
    let head = client.read(true);
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-length"), Some("19"));

    let no_content = client.get("/status/204");
    assert_eq!(no_content.status, 204);
    assert_eq!(no_content.header("content-length"), None);
    assert!(no_content.body.is_empty());

    let error = client.get("/status/500");
    assert_eq!(error.status, 500);
    assert_eq!(error.body, b"500 Internal Server Error\n");

    let chunked = client.get("/chunked/10000");
    assert_eq!(chunked.status, 200);
    assert!(chunked.chunked, "{:?}", chunked.headers);
    assert_eq!(chunked.header("content-length"), None);
    assert_eq!(chunked.body.len(), 10_000);
    assert!(chunked.chunks >= 3, "{} chunks", chunked.chunks);
    assert!(chunked.body == expected_body(10_000));

    let mib = client.get("/bytes/1048576");
    assert_eq!(mib.status, 200);
    assert_eq!(mib.header("content-length"), Some("1048576"));
    assert!(mib.body == expected_body(1 << 20), "/bytes body differs");

    let empty = client.get("/bytes/0");
    assert_eq!((empty.status, empty.body.len()), (200, 0));

    let delayed = client.get("/delay/20");
    assert_eq!(
        (delayed.status, &delayed.body[..]),
        (200, &b"hello from barrage\n"[..])
    );

    for (path, status) in [
        ("/nope", 404),
        ("/bytes/67108865", 400),
        ("/status/99", 400),
        ("/status/100", 400),
        ("/status/600", 400),
        ("/delay/x", 400),
        ("/status/418", 418),
        ("/status/301", 301),
    ] {
        let response = client.get(path);
        assert_eq!(response.status, status, "{path}");
        assert_eq!(response.header("server"), Some("barrage"), "{path}");
        assert_eq!(
            response.header("content-length"),
            Some(response.body.len().to_string().as_str()),
            "{path}"
        );
    }

    client.send("DELETE / HTTP/1.1\r\n\r\n");
    let not_allowed = client.read(false);
    assert_eq!(not_allowed.status, 405);
    assert_eq!(not_allowed.header("allow"), Some("GET, HEAD, POST, PUT"));

    // The connection survived all of it.
    assert_eq!(client.get("/").status, 200);
    let http = http_stats(&server);
    assert_eq!(http.requests, 18);
    assert_eq!(
        http.responses_2xx + http.responses_3xx + http.responses_4xx + http.responses_5xx,
        http.requests
    );
}

#[test]
fn http10_closes_after_the_response_unless_keep_alive() {
    let server = start(config(1));
    let mut client = Client::new(&server);
    client.send("GET / HTTP/1.0\r\n\r\n");
    let response = client.read(false);
    assert_eq!(response.status, 200);
    assert_eq!(response.header("connection"), Some("close"));
    client.expect_eof();

    let mut client = Client::new(&server);
    for _ in 0..3 {
        client.send("GET /chunked/5000 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        let response = client.read(false);
        assert_eq!(response.header("connection"), Some("keep-alive"));
        // No chunked encoding for an HTTP/1.0 client: a length instead.
        assert!(!response.chunked);
        assert!(response.body == expected_body(5000));
    }
    wait_for(&server, |s| s.connections_open == 1);
}

#[test]
fn connection_close_is_honoured() {
    let server = start(config(1));
    let mut client = Client::new(&server);
    // The request after the closing one is never answered.
    client.send("GET / HTTP/1.1\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n");
    let response = client.read(false);
    assert_eq!(response.status, 200);
    assert_eq!(response.header("connection"), Some("close"));
    client.expect_eof();
    let stats = wait_for(&server, |s| s.connections_open == 0);
    assert_eq!(stats.http.expect("http").requests, 1);
}

#[test]
fn malformed_request_gets_400_and_close() {
    let server = start(config(1));
    for garbage in [
        "BLAH\r\n\r\n",
        "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
        "GET / HTTP/1.1\r\nContent-Length: nope\r\n\r\n",
    ] {
        let mut client = Client::new(&server);
        client.send(garbage);
        let response = client.read(false);
        assert_eq!(response.status, 400, "{garbage:?}");
        assert_eq!(response.header("connection"), Some("close"));
        client.expect_eof();
    }
    let http = http_stats(&server);
    assert_eq!((http.requests, http.responses_4xx), (3, 3));
}

#[test]
fn oversized_head_gets_431_and_close() {
    let server = start(config(1));
    let mut client = Client::new(&server);
    let big = format!("GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(70 * 1024));
    client.send(&big);
    let response = client.read(false);
    assert_eq!(response.status, 431);
    assert_eq!(response.header("connection"), Some("close"));
    client.expect_eof();
}

#[test]
fn counts_reconcile_exactly() {
    const CLIENTS: usize = 6;
    const ROUNDS: usize = 25;
    let paths = [
        "/",
        "/bytes/3000",
        "/status/404",
        "/status/503",
        "/chunked/7000",
        "/status/302",
    ];
    let server = start(config(3));
    let addr = server.local_addr();
    let (sent_bytes, received_bytes): (u64, u64) = thread::scope(|scope| {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                scope.spawn(move || {
                    let stream = connect(addr);
                    let mut writer = stream.try_clone().expect("clone");
                    let mut reader = BufReader::new(Counting {
                        inner: stream,
                        count: 0,
                    });
                    let mut sent = 0u64;
                    for round in 0..ROUNDS {
                        // Two requests per round, pipelined.
                        let a = paths[(c + round) % paths.len()];
                        let b = paths[(c * 7 + round * 3) % paths.len()];
                        let raw = format!("GET {a} HTTP/1.1\r\n\r\nHEAD {b} HTTP/1.1\r\n\r\n");
                        writer.write_all(raw.as_bytes()).expect("send");
                        sent += raw.len() as u64;
                        read_response(&mut reader, false);
                        read_response(&mut reader, true);
                    }
                    (sent, reader.into_inner().count)
                })
            })
            .collect();
        clients
            .into_iter()
            .map(|client| client.join().expect("client thread"))
            .fold((0, 0), |(s, r), (cs, cr)| (s + cs, r + cr))
    });
    let stats = server.stats();
    let http = stats.http.expect("http");
    let total = (CLIENTS * ROUNDS * 2) as u64;
    assert_eq!(http.requests, total);
    assert_eq!(stats.bytes_read, sent_bytes);
    assert_eq!(stats.bytes_written, received_bytes);
    // Per class, from the same path schedule.
    let mut classes = [0u64; 6];
    for c in 0..CLIENTS {
        for round in 0..ROUNDS {
            for path in [
                paths[(c + round) % paths.len()],
                paths[(c * 7 + round * 3) % paths.len()],
            ] {
                let class = match path {
                    "/status/404" => 4,
                    "/status/503" => 5,
                    "/status/302" => 3,
                    _ => 2,
                };
                classes[class] += 1;
            }
        }
    }
    assert_eq!(
        [
            http.responses_2xx,
            http.responses_3xx,
            http.responses_4xx,
            http.responses_5xx
        ],
        [classes[2], classes[3], classes[4], classes[5]]
    );
    assert_eq!(stats.connections_accepted, CLIENTS as u64);
    let stats = wait_for(&server, |s| s.connections_open == 0);
    assert_eq!(stats.http.expect("http").requests, total);
}

#[test]
fn a_delayed_answer_does_not_block_another_connection() {
    // Judged by order, not by a clock: the fast answer comes while the slow one (2 s away) is
    // still held, so nothing is readable on the slow connection yet.
    let server = start(config(1)); // one thread: both connections share its loop
    let mut slow = Client::new(&server);
    let mut fast = Client::new(&server);
    let t0 = Instant::now();
    slow.send("GET /delay/2000 HTTP/1.1\r\n\r\n");
    thread::sleep(50 * MS); // (if the server reads it later, the order still holds)
    assert_eq!(fast.get("/").status, 200);
    let held = slow.reader.get_ref();
    held.set_nonblocking(true).unwrap();
    let mut one = [0u8; 1];
    match held.peek(&mut one) {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the slow answer came first or with the fast one: {other:?}"),
    }
    held.set_nonblocking(false).unwrap();
    assert_eq!(slow.read(false).status, 200);
    assert!(
        t0.elapsed() >= 2000 * MS,
        "the delay was cut short: {:?}",
        t0.elapsed()
    );
}

#[test]
fn delay_knob_holds_every_answer_and_keeps_pipelined_order() {
    let delay = 100 * MS;
    let server = start(HttpConfig {
        delay: Some(delay),
        ..config(1)
    });
    let mut client = Client::new(&server);
    let t0 = Instant::now();
    client.send("GET /delay/50 HTTP/1.1\r\n\r\nGET /status/201 HTTP/1.1\r\n\r\n");
    assert_eq!(client.read(false).status, 200);
    let first = t0.elapsed();
    assert_eq!(client.read(false).status, 201);
    assert!(first >= delay + 50 * MS, "first answer after {first:?}");
    assert!(t0.elapsed() < delay + 50 * MS + MARGIN);
}

#[test]
fn stall_freezes_answers_once() {
    let (stall_at, stall_for) = (1000 * MS, 2000 * MS);
    let t0 = Instant::now();
    let server = start(HttpConfig {
        stall_at: Some(stall_at),
        stall_for,
        ..config(2)
    });
    let mut client = Client::new(&server);
    assert_eq!(client.get("/").status, 200);
    assert!(t0.elapsed() < stall_at, "too slow to test before the stall");
    thread::sleep((t0 + stall_at + 100 * MS).saturating_duration_since(Instant::now()));
    let response = client.get("/bytes/10");
    assert!(
        t0.elapsed() >= stall_at + stall_for,
        "answered during the stall"
    );
    assert!(
        t0.elapsed() < stall_at + stall_for + MARGIN,
        "stall lasted too long"
    );
    assert_eq!(response.body, expected_body(10));
    let sent = Instant::now();
    assert_eq!(client.get("/").status, 200);
    assert!(sent.elapsed() < MARGIN);
}

#[test]
fn chunked_request_bodies_are_read_and_discarded() {
    let server = start(config(1));
    let mut client = Client::new(&server);
    let body = "a".repeat(100_000);
    let chunked = format!(
        "{:x}\r\n{body}\r\n5;x=y\r\nhello\r\n0\r\nTrailer: v\r\n\r\n",
        body.len()
    );
    client.send(&format!(
        "POST /status/201 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{chunked}GET / HTTP/1.1\r\n\r\n"
    ));
    assert_eq!(client.read(false).status, 201);
    assert_eq!(client.read(false).status, 200);
    let big = "b".repeat(300_000);
    client.send(&format!(
        "PUT / HTTP/1.1\r\nContent-Length: {}\r\n\r\n{big}",
        big.len()
    ));
    assert_eq!(client.read(false).status, 200);
    assert_eq!(client.get("/status/202").status, 202);
}

#[test]
fn client_gone_mid_response_is_dropped_and_the_server_keeps_serving() {
    let server = start(config(1));
    for _ in 0..5 {
        let mut client = Client::new(&server);
        client.send("GET /bytes/67108864 HTTP/1.1\r\n\r\n");
        let mut some = [0; 1000];
        client
            .reader
            .read_exact(&mut some)
            .expect("start of the answer");
        drop(client);
    }
    wait_for(&server, |s| s.connections_open == 0);
    let mut client = Client::new(&server);
    assert_eq!(client.get("/").status, 200);
}

#[test]
fn service_time_serves_one_request_at_a_time_per_thread() {
    // One thread, 40 ms per request: two clients' requests queue behind each other, so the
    // fourth answer cannot come before 4 × 40 ms (a timer never fires early), whatever the
    // connection it came on; all answers arrive, in each connection's order.
    let service = 40 * MS;
    let server = start(HttpConfig {
        service_time: Some(service),
        ..config(1)
    });
    let (mut a, mut b) = (Client::new(&server), Client::new(&server));
    let t0 = Instant::now();
    a.send("GET /status/201 HTTP/1.1\r\n\r\nGET /status/202 HTTP/1.1\r\n\r\n");
    b.send("GET /status/203 HTTP/1.1\r\n\r\nGET /status/204 HTTP/1.1\r\n\r\n");
    let statuses = [a.read(false).status, a.read(false).status];
    assert_eq!(statuses, [201, 202]);
    let statuses = [b.read(false).status, b.read(false).status];
    assert_eq!(statuses, [203, 204]);
    assert!(t0.elapsed() >= 4 * service, "served in {:?}", t0.elapsed());
}
