//! Through a proxy (`Target::proxy`), in-process against scripted proxies on 127.0.0.1: one
//! that opens the tunnel and then echoes (the run completes exactly, each connection one
//! CONNECT naming the target), one that answers a byte at a time, and hostile ones that
//! refuse (407), answer in another protocol, send bytes past their answer, or never answer.
//! Each failure lands in its class and nowhere else; conservation holds; runs are bounded.

use crate::common::{go_virtual, go_within, plan, TestServer};
use barrage_engine::{Mode, Plan, ProxyPlan, RunOutput};
use barrage_metrics::ErrorClass;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The CONNECT request a connection sends, to this (unused) target.
const CONNECT: &[u8] = b"CONNECT target.test:7000 HTTP/1.1\r\nHost: target.test:7000\r\n\r\n";

/// A TCP echo run through the proxy at `proxy`.
fn through(proxy: SocketAddr, connections: u64) -> Plan {
    let mut p = plan(
        "127.0.0.1:9".parse().unwrap(),
        connections,
        Mode::PingPong,
        0.5,
    );
    p.threads = 1;
    p.connect_timeout = Duration::from_millis(300);
    p.drain = Duration::from_millis(300);
    p.target.proxy = Some(ProxyPlan {
        addr: proxy,
        connect: CONNECT.into(),
    });
    p
}

/// Reads a CONNECT head (to its blank line), saving it in `heads`.
fn read_head(s: &mut BufReader<TcpStream>, heads: &Mutex<Vec<String>>) -> bool {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        match s.read_line(&mut line) {
            Ok(0) | Err(_) => return false,
            Ok(_) => {}
        }
        head.push_str(&line);
        if line == "\r\n" {
            heads.lock().unwrap().push(head);
            return true;
        }
    }
}

/// A proxy that answers `answer` to each CONNECT (a byte at a time with `trickle`), then, on
/// a 2xx, echoes lines as the target would.
fn proxy(answer: &'static [u8], trickle: bool) -> (TestServer, Arc<Mutex<Vec<String>>>) {
    let heads = Arc::new(Mutex::new(Vec::new()));
    let h = Arc::clone(&heads);
    let server = TestServer::start(move |s| {
        let mut w = s.try_clone().unwrap();
        let _ = w.set_nodelay(true);
        let mut r = BufReader::new(s);
        if !read_head(&mut r, &h) {
            return;
        }
        if trickle {
            for b in answer {
                if w.write_all(&[*b]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        } else if w.write_all(answer).is_err() {
            return;
        }
        let mut line = Vec::new();
        loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if w.write_all(&line).is_err() {
                        return;
                    }
                }
            }
        }
    });
    (server, heads)
}

fn run(p: Plan) -> RunOutput {
    let o = go_within(p, Arc::new(AtomicBool::new(false)), Duration::from_secs(10));
    let e = o.outcome.summary.exchanges;
    assert!(e.balanced(), "conservation broken: {e:?}");
    o
}

/// Every error of the run is `class`, and there is at least one per connection (on virtual
/// time: however busy the machine, the load holds as many attempts).
fn only(o: &RunOutput, class: ErrorClass, connections: u64) {
    let s = &o.outcome.summary;
    assert!(
        s.exchanges.balanced(),
        "conservation broken: {:?}",
        s.exchanges
    );
    assert!(s.errors.get(class) >= connections, "{:?}", s.errors);
    assert_eq!(s.errors.total(), s.errors.get(class), "{:?}", s.errors);
    assert_eq!(s.exchanges.completed, 0);
}

#[test]
fn through_an_open_tunnel_the_run_completes_exactly() {
    for trickle in [false, true] {
        let (server, heads) = proxy(b"HTTP/1.1 200 Connection established\r\n\r\n", trickle);
        let mut p = through(server.addr, 3);
        p.requests = Some(300);
        p.duration = Some(Duration::from_secs(5));
        let o = run(p);
        let s = &o.outcome.summary;
        assert_eq!(
            s.exchanges.completed, 300,
            "trickle {trickle}: {:?}",
            s.errors
        );
        assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
        // Every tunnel asked for; none failed (the quota may end the run before a slow
        // tunnel opens: a connect still under way is neither).
        assert_eq!(
            (s.connections.attempts, s.connections.failed),
            (3, 0),
            "{:?}",
            s.connections
        );
        // The run may end on its quota before the last tunnels are even asked for.
        let heads = heads.lock().unwrap();
        assert!(
            (1..=3).contains(&heads.len()),
            "one tunnel per connection: {heads:?}"
        );
        assert!(heads.iter().all(|h| h.as_bytes() == CONNECT), "{heads:?}");
    }
}

/// A refused tunnel is a failed connect: nothing reached the target.
#[test]
fn a_proxy_that_refuses_fails_every_connect_as_refused() {
    let (server, _) = proxy(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n", false);
    let (o, _) = go_virtual(through(server.addr, 2));
    only(&o, ErrorClass::Refused, 2);
    let c = &o.outcome.summary.connections;
    assert_eq!(c.succeeded, 0, "{c:?}");
    // Every attempt failed, but for one per connection still under way as the run ended.
    assert!(c.failed >= 2 && c.attempts - c.failed <= 2, "{c:?}");
}

#[test]
fn a_proxy_that_answers_in_another_protocol_or_past_its_answer_is_a_protocol_error() {
    for answer in [
        &b"SSH-2.0-OpenSSH_9.2\r\n\r\n"[..],
        b"HTTP/1.1 200 OK\r\n\r\nhello before the client spoke\n",
    ] {
        let (server, _) = proxy(answer, false);
        only(
            &go_virtual(through(server.addr, 2)).0,
            ErrorClass::Protocol,
            2,
        );
    }
}

/// A proxy that takes the CONNECT and says nothing: each connection fails as
/// `connect_timeout` after exactly the connect timeout (virtual time).
#[test]
fn a_silent_proxy_is_a_connect_timeout() {
    let connects = Arc::new(AtomicUsize::new(0));
    let n = Arc::clone(&connects);
    let server = TestServer::start(move |mut s| {
        n.fetch_add(1, Ordering::Relaxed);
        let mut buf = [0u8; 1024];
        while let Ok(k) = s.read(&mut buf) {
            if k == 0 {
                return;
            }
        }
    });
    let (o, _) = go_virtual(through(server.addr, 2));
    only(&o, ErrorClass::ConnectTimeout, 2);
    assert!(connects.load(Ordering::Relaxed) >= 2);
}
