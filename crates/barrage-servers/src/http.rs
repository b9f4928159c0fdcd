//! The reference HTTP/1.1 server: a handful of routes with known answers, keep-alive and
//! pipelining, optional TLS (rustls), and the fault knobs of the echo server.
//!
//! Routes (GET and HEAD; POST and PUT are accepted everywhere, their body thrown away; other
//! methods get 405):
//!
//! | path | answer |
//! |---|---|
//! | `/` | 200, `hello from barrage\n` (text/plain) |
//! | `/delay/<ms>` | the same, `<ms>` later (at most [`MAX_DELAY_MS`]) |
//! | `/bytes/<n>` | 200, `n` bytes of [`BODY_PATTERN`] with Content-Length (at most [`MAX_BODY`]) |
//! | `/chunked/<n>` | 200, the same bytes chunked, [`CHUNK`] data bytes per chunk |
//! | `/status/<code>` | `code` (200-599), a one-line body (none for 204 and 304) |
//! | anything else | 404 |
//!
//! A bad number is 400. Every answer carries `Server: barrage` and Content-Length (or chunked
//! encoding; 204 and 304 carry neither). A malformed request gets 400 and a head over 64 KiB
//! 431, then the connection closes; so does an HTTP/1.0 exchange without
//! `Connection: keep-alive`, or any with `Connection: close`. Chunked request bodies are read.
//!
//! Key decision: the server shares the echo server's event loop ([`crate::driver`]), one per
//! thread with its own `SO_REUSEPORT` listener; a request's answer is a small descriptor queued
//! in request order and rendered when due (see `conn`), and `/delay` is a per-thread timer, so
//! a delayed answer never blocks the thread. Request parsing uses httparse; nothing is shared
//! with the client engine's codec.

mod conn;
mod request;
mod response;

use self::conn::{Conn, ThreadShare};
use crate::driver::{self, Key, Service, Turn};
use crate::faults::{self, Stall, Timers};
use crate::runtime;
use crate::sock::Sock;
use crate::stats::{CounterWriter, Kind, ServerError};
use crate::tls::{self, Transport};
use mio::event::Event;
use mio::net::TcpStream;
use rustls::ServerConfig;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use self::response::{BODY_PATTERN, CHUNK, MAX_BODY, MAX_DELAY_MS};
pub use crate::runtime::ServerHandle;
pub use crate::stats::{HttpStats, ServerStats};
pub use crate::tls::TlsFiles;

/// Size of each thread's read buffer: one read moves at most this much.
const READ_BUF: usize = 64 * 1024;

/// How to run the http server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpConfig {
    /// Address to listen on; port 0 picks a free port (see [`ServerHandle::local_addr`]).
    pub listen: SocketAddr,
    /// Event-loop threads, each with its own listener. At least 1.
    pub threads: usize,
    /// Serve HTTPS with this certificate and key; `None` is plain HTTP.
    pub tls: Option<TlsFiles>,
    /// Every response is sent this long after its request was read (on top of `/delay`);
    /// `None` (or zero) answers at once. Pipelined answers keep their order.
    pub delay: Option<Duration>,
    /// Each thread serves one request at a time, each taking this long (a timer, not CPU): a
    /// thread answers at most 1 / `service_time` requests per second (capacity: threads /
    /// service time). `None` (or zero): no service time.
    pub service_time: Option<Duration>,
    /// Once, this long after start, stop reading and answering for `stall_for`.
    pub stall_at: Option<Duration>,
    /// Length of the stall; zero means no stall.
    pub stall_for: Duration,
    /// Every response says how long the server held its request, from reading it to
    /// rendering the response: `Server-Timing: app;dur=MS`.
    pub server_timing: bool,
    /// Share the port with servers already listening on it (`SO_REUSEPORT`: the kernel splits
    /// the connections); otherwise such a port is [`crate::ServerError::InUse`].
    pub reuse_port: bool,
}

impl Default for HttpConfig {
    /// 127.0.0.1:8080, one thread per available core, plain HTTP, no faults.
    fn default() -> Self {
        HttpConfig {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 8080)),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            tls: None,
            delay: None,
            service_time: None,
            stall_at: None,
            stall_for: Duration::ZERO,
            server_timing: false,
            reuse_port: false,
        }
    }
}

/// Loads the TLS files (if any), binds and starts an http server. It is accepting when this
/// returns. A TLS file that cannot be read or used is a [`ServerError::Tls`] naming it.
pub fn start(cfg: HttpConfig) -> Result<ServerHandle, ServerError> {
    let started = Instant::now();
    let tls = cfg
        .tls
        .as_ref()
        .map(|files| tls::load(files, cfg.listen, &[b"http/1.1"]))
        .transpose()?;
    let delay = cfg.delay.filter(|delay| !delay.is_zero());
    let service_time = cfg.service_time.filter(|t| !t.is_zero());
    let stall = Stall::new(started, cfg.stall_at, cfg.stall_for);
    let server_timing = cfg.server_timing;
    runtime::spawn(
        Kind::Http,
        tls.is_some(),
        cfg.listen,
        cfg.reuse_port,
        cfg.threads,
        move |parts| {
            let service = HttpService {
                buf: vec![0; READ_BUF].into_boxed_slice(),
                timers: Timers::default(),
                delay,
                service: service_time.map(faults::Service::new),
                tls: tls.clone(),
                server_timing,
            };
            driver::run(parts, service, stall);
        },
    )
}

/// One thread's http state; the driver owns the connections.
struct HttpService {
    /// The thread's only read buffer, shared by all its connections.
    buf: Box<[u8]>,
    /// Due answers (`/delay`, the delay knob) and lingering closes of this thread.
    timers: Timers,
    delay: Option<Duration>,
    /// The service-time knob: this thread's one request at a time.
    service: Option<faults::Service>,
    tls: Option<Arc<ServerConfig>>,
    server_timing: bool,
}

impl Service for HttpService {
    type Conn = Option<Conn>;
    type Timer = ();

    /// `None` if rustls refused to start a session (checked at start, so not expected): the
    /// first turn closes it.
    fn open(&mut self, stream: TcpStream, _key: Key) -> Option<Conn> {
        let transport = Transport::new(Sock::new(stream), self.tls.as_ref()).ok()?;
        Some(Conn::new(transport))
    }

    fn note(conn: &mut Option<Conn>, event: &Event) {
        if let Some(conn) = conn {
            conn.note(event);
        }
    }

    fn pump(&mut self, key: Key, conn: &mut Option<Conn>, counters: &CounterWriter) -> Turn {
        let Some(conn) = conn else {
            return Turn::Closed;
        };
        conn.pump(&mut ThreadShare {
            buf: &mut self.buf,
            timers: &mut self.timers,
            delay: self.delay,
            service: self.service.as_mut(),
            server_timing: self.server_timing,
            key,
            counters,
        })
    }

    fn next_due(&self) -> Option<Instant> {
        self.timers.next_due()
    }

    fn pop_due(&mut self, now: Instant) -> Option<(Key, ())> {
        let (slot, id) = self.timers.pop_due(now)?;
        Some((Key { slot, id }, ()))
    }

    fn fire(
        &mut self,
        key: Key,
        _timer: (),
        conn: Option<&mut Option<Conn>>,
        counters: &CounterWriter,
    ) -> Turn {
        let Some(conn) = conn else {
            return Turn::Idle;
        };
        if let Some(conn) = conn.as_mut() {
            conn.timer_fired();
        }
        self.pump(key, conn, counters)
    }
}
