//! Test helpers: plans against a local address, and a tiny thread-per-connection server whose
//! behaviour each test writes as a closure (replies in another framing, garbage, closes).

use barrage_engine::http::{RequestSpec, RequestTemplate};
use barrage_engine::users::{compile, compile::Context, Users};
use barrage_engine::{
    Framing, HttpPlan, Mode, Plan, Protocol, StatusSet, Target, Template, WsPlan,
};
use barrage_servers::echo::{self, EchoConfig};
use barrage_servers::{ServerHandle, ServerStats};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "../../../../barrage-servers/tests/it/common/alone.rs"]
mod alone;
pub use alone::alone;
#[path = "../../../../../tests/skip.rs"]
mod skip;
pub use skip::available;

pub fn plan(addr: SocketAddr, connections: u64, mode: Mode, secs: f64) -> Plan {
    Plan {
        target: Target::new(format!("tcp://{addr}"), addr),
        protocol: Protocol::Tcp,
        tls: None,
        connections,
        threads: 2,
        connect_rate: None,
        max_connecting: 1024,
        duration: Some(Duration::from_secs_f64(secs)),
        requests: None,
        warmup: Duration::ZERO,
        message: Template::new(b"hello barrage\n".to_vec()),
        first_message: None,
        framing: Framing::Echo,
        verify: false,
        mode,
        pipeline: 1,
        max_backlog: 1024,
        timer_slack: Duration::ZERO,
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(5),
        drain: Duration::from_secs(2),
        clock: Default::default(),
        shares: None,
        users: None,
        rate_shape: None,
        script: None,
    }
}

/// Run with a watchdog: a run that does not end within `bound` fails the test (instead of
/// hanging the suite).
pub fn go_within(p: Plan, stop: Arc<AtomicBool>, bound: Duration) -> barrage_engine::RunOutput {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(barrage_engine::run(p, stop, |_, _| {}).unwrap());
    });
    rx.recv_timeout(bound)
        .unwrap_or_else(|_| panic!("the run did not end within {bound:?}"))
}

/// Run on virtual time from 0, on one worker thread, with a watchdog (a hang fails the test
/// instead of hanging the suite; nothing is timed). Returns the outcome and the virtual time
/// the run ended at. Backoff, timeouts, schedules, think times and the drain happen at exact
/// virtual times, so counts of them are exact.
pub fn go_virtual(mut p: Plan) -> (barrage_engine::RunOutput, u64) {
    p.threads = 1;
    let now = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let cell = Arc::clone(&now);
    std::thread::spawn(move || {
        let stop = Arc::new(AtomicBool::new(false));
        let _ = tx.send(barrage_engine::run_virtual(p, stop, cell, |_, _| {}).unwrap());
    });
    let out = rx
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("the virtual-time run hung"));
    (out, now.load(Ordering::Acquire))
}

/// A port on 127.0.0.1 where nothing listens.
pub fn refused_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap();
    drop(l);
    a
}

/// Thread-per-connection server on 127.0.0.1:0; stops accepting when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl TestServer {
    pub fn start(handler: impl Fn(TcpStream) + Send + Sync + 'static) -> Self {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (handler, stop2) = (Arc::new(handler), Arc::clone(&stop));
        std::thread::spawn(move || {
            for s in l.incoming() {
                if stop2.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(s) = s else { continue };
                let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
                let h = Arc::clone(&handler);
                std::thread::spawn(move || h(s));
            }
        });
        Self { addr, stop }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr);
    }
}

/// For every line received, answer with `reply(line)`.
pub fn line_server(reply: impl Fn(&[u8]) -> Vec<u8> + Send + Sync + 'static) -> TestServer {
    TestServer::start(move |s| {
        let mut w = s.try_clone().unwrap();
        let mut r = BufReader::new(s);
        let mut line = Vec::new();
        loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if w.write_all(&reply(&line)).is_err() {
                        return;
                    }
                }
            }
        }
    })
}

/// Reads and discards everything, never answers.
pub fn sink_server() -> TestServer {
    TestServer::start(|mut s| {
        let mut buf = [0u8; 4096];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                return;
            }
        }
    })
}

/// Accepts and then never reads: the client's send buffer fills up.
pub fn deaf_server() -> TestServer {
    TestServer::start(|s| {
        std::thread::sleep(Duration::from_secs(10));
        drop(s);
    })
}

/// A plan for `GET path` (or another method) against an HTTP server.
pub fn http_plan(
    addr: SocketAddr,
    connections: u64,
    mode: Mode,
    secs: f64,
    method: &str,
    path: &str,
) -> Plan {
    let mut p = plan(addr, connections, mode, secs);
    let host = addr.to_string();
    let request = RequestTemplate::new(&RequestSpec {
        method,
        path,
        host_header: &host,
        headers: &[],
        body: None,
        keep_alive: true,
    })
    .unwrap();
    p.target.url = format!("http://{addr}{path}");
    p.protocol = Protocol::Http(HttpPlan {
        request,
        expect_status: StatusSet::default(),
    });
    p
}

/// A plan for a WebSocket echo exchange.
pub fn ws_plan(addr: SocketAddr, connections: u64, mode: Mode, secs: f64) -> Plan {
    let mut p = plan(addr, connections, mode, secs);
    p.target.url = format!("ws://{addr}/");
    p.message = Template::new(b"hello websocket".to_vec());
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

/// Open-loop accounting that holds whatever the machine's speed: every message due on a
/// started connection's schedule was sent or counted as not sent, and no more fell due than
/// the plan has slots after the connections came up (`rate` messages/s in total over `secs`).
pub fn assert_schedule_accounted(o: &barrage_engine::RunOutput, rate: f64, secs: f64) {
    let s = &o.outcome.summary;
    let x = s.exchanges;
    assert!(x.balanced(), "conservation broken: {x:?}");
    assert_eq!(x.scheduled, x.sent + x.not_sent, "{x:?}");
    let ready = s
        .ramp
        .unwrap()
        .all_ready_s
        .expect("every connection came up");
    let conns = s.connections.target as f64;
    assert!(
        x.scheduled as f64 <= rate * secs + conns,
        "more due than the plan: {x:?}"
    );
    assert!(
        x.scheduled as f64 >= rate * (secs - ready) - conns,
        "less due than the plan after the ramp ({ready} s): {x:?}"
    );
}

/// A run to its end, stopped by nothing but its own plan.
pub fn go(p: Plan) -> barrage_engine::RunOutput {
    barrage_engine::run(p, Arc::new(AtomicBool::new(false)), |_, _| {}).unwrap()
}

/// The reference echo server on 127.0.0.1, a free port.
pub fn echo_server(threads: usize) -> ServerHandle {
    echo::start(EchoConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads,
        ..EchoConfig::default()
    })
    .unwrap()
}

/// The server's counters once its connections are closed (or after 5 s).
pub fn settled(s: &ServerHandle) -> ServerStats {
    let t = Instant::now();
    loop {
        let st = s.stats();
        if st.connections_open == 0 || t.elapsed() > Duration::from_secs(5) {
            return st;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A scenario's users, compiled from its TOML text (the test fails on a bad file).
pub fn users(text: &str, http: bool, timeout: Duration) -> Users {
    let checked = barrage_scenario::load_str(
        "test.toml",
        text,
        barrage_scenario::Format::Toml,
        std::path::Path::new("."),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let cx = Context {
        dir: std::path::Path::new("."),
        host_header: "127.0.0.1",
        headers: &[],
        http,
        no_replies: false,
        timeout,
        secret: &|_| None,
        rpc: &[],
        mqtt: None,
    };
    compile(&checked, &cx).unwrap_or_else(|e| panic!("{e}"))
}
