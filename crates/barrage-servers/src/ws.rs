//! The reference WebSocket server (RFC 6455): every text or binary message comes back as one
//! frame with the same opcode; pings get pongs, a close gets a close with the same code.
//!
//! The opening handshake checks `Upgrade: websocket`, a `Connection` header with `upgrade`,
//! `Sec-WebSocket-Version: 13` and the key, answers 101 with `Sec-WebSocket-Accept` and echoes
//! the first offered subprotocol. Client frames must be masked (else close 1002); fragmented
//! messages are reassembled and echoed once (at most [`MAX_MESSAGE`] bytes, else 1009); a text
//! message that is not UTF-8 is closed with 1007. After a close frame either way the server
//! closes the TCP connection.
//!
//! With [`WsConfig::tls`] it is a `wss://` server: the same connection over the shared
//! [`crate::tls`] transport.
//!
//! Key decision: the same event loop and fault knobs as the other servers ([`crate::driver`],
//! delay and stall); frames are decoded in place in the thread's read buffer (see `conn`), and
//! nothing is shared with the client engine's WebSocket codec.

mod conn;
pub(crate) mod frame;
pub(crate) mod handshake;

use self::conn::{Conn, ThreadShare};
use crate::driver::{self, Key, Service, Turn};
use crate::faults::{Stall, Timers};
use crate::runtime;
use crate::sock::Sock;
use crate::stats::{CounterWriter, Kind, ServerError};
use crate::tls::{self, TlsFiles, Transport};
use mio::event::Event;
use mio::net::TcpStream;
use rustls::ServerConfig;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use self::conn::MAX_MESSAGE;
pub use crate::runtime::ServerHandle;
pub use crate::stats::{ServerStats, WsStats};

/// Size of each thread's read buffer: one read moves at most this much.
const READ_BUF: usize = 64 * 1024;

/// How to run the WebSocket server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WsConfig {
    /// Address to listen on; port 0 picks a free port (see [`ServerHandle::local_addr`]).
    pub listen: SocketAddr,
    /// Event-loop threads, each with its own listener. At least 1.
    pub threads: usize,
    /// Serve `wss://` with this certificate and key; `None` is plain `ws://`.
    pub tls: Option<TlsFiles>,
    /// Every echo, pong and close reply leaves this long after its frame was read; `None`
    /// (or zero) answers at once.
    pub delay: Option<Duration>,
    /// Once, this long after start, stop reading and answering for `stall_for`.
    pub stall_at: Option<Duration>,
    /// Length of the stall; zero means no stall.
    pub stall_for: Duration,
    /// Share the port with servers already listening on it (`SO_REUSEPORT`: the kernel splits
    /// the connections); otherwise such a port is [`crate::ServerError::InUse`].
    pub reuse_port: bool,
}

impl Default for WsConfig {
    /// 127.0.0.1:9000, one thread per available core, no faults.
    fn default() -> Self {
        WsConfig {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 9000)),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            tls: None,
            delay: None,
            stall_at: None,
            stall_for: Duration::ZERO,
            reuse_port: false,
        }
    }
}

/// Loads the TLS files (if any), binds and starts a WebSocket echo server. It is accepting when
/// this returns. A TLS file that cannot be read or used is a [`ServerError::Tls`] naming it.
pub fn start(cfg: WsConfig) -> Result<ServerHandle, ServerError> {
    let started = Instant::now();
    let tls = cfg
        .tls
        .as_ref()
        .map(|files| tls::load(files, cfg.listen, &[b"http/1.1"]))
        .transpose()?;
    let delay = cfg.delay.filter(|delay| !delay.is_zero());
    let stall = Stall::new(started, cfg.stall_at, cfg.stall_for);
    runtime::spawn(
        Kind::Ws,
        tls.is_some(),
        cfg.listen,
        cfg.reuse_port,
        cfg.threads,
        move |parts| {
            let service = WsService {
                buf: vec![0; READ_BUF].into_boxed_slice(),
                timers: Timers::default(),
                delay,
                tls: tls.clone(),
            };
            driver::run(parts, service, stall);
        },
    )
}

/// One thread's WebSocket state; the driver owns the connections.
struct WsService {
    /// The thread's only read buffer, shared by all its connections.
    buf: Box<[u8]>,
    /// Held answers (the delay knob) and lingering closes of this thread.
    timers: Timers,
    delay: Option<Duration>,
    tls: Option<Arc<ServerConfig>>,
}

impl Service for WsService {
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
