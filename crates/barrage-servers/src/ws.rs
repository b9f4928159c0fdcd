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
//! Key decision: the same event loop and fault knobs as the other servers ([`crate::driver`],
//! delay and stall); frames are decoded in place in the thread's read buffer (see `conn`), and
//! nothing is shared with the client engine's WebSocket codec.

mod conn;
mod frame;
mod handshake;

use self::conn::{Conn, Cx};
use crate::driver::{self, Key, Service, Turn};
use crate::faults::{Stall, Timers};
use crate::runtime;
use crate::sock::Sock;
use crate::stats::{CounterWriter, Kind, ServerError};
use mio::event::Event;
use mio::net::TcpStream;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

pub use self::conn::MAX_MESSAGE;
pub use crate::runtime::ServerHandle;
pub use crate::stats::{ServerStats, WsStats};

/// Size of each thread's read buffer: one read moves at most this much.
const READ_BUF: usize = 64 * 1024;

/// How to run the WebSocket server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WsConfig {
    /// Address to listen on; port 0 picks a free port (see [`ServerHandle::local_addr`]).
    pub listen: SocketAddr,
    /// Event-loop threads, each with its own listener. At least 1.
    pub threads: usize,
    /// Every echo, pong and close reply leaves this long after its frame was read; `None`
    /// (or zero) answers at once.
    pub delay: Option<Duration>,
    /// Once, this long after start, stop reading and answering for `stall_for`.
    pub stall_at: Option<Duration>,
    /// Length of the stall; zero means no stall.
    pub stall_for: Duration,
}

impl Default for WsConfig {
    /// 127.0.0.1:9000, one thread per available core, no faults.
    fn default() -> Self {
        WsConfig {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 9000)),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            delay: None,
            stall_at: None,
            stall_for: Duration::ZERO,
        }
    }
}

/// Binds and starts a WebSocket echo server. It is accepting when this returns.
pub fn start(cfg: WsConfig) -> Result<ServerHandle, ServerError> {
    let started = Instant::now();
    let delay = cfg.delay.filter(|delay| !delay.is_zero());
    let stall = Stall::new(started, cfg.stall_at, cfg.stall_for);
    runtime::spawn(Kind::Ws, cfg.listen, cfg.threads, move |parts| {
        let service = WsService {
            buf: vec![0; READ_BUF].into_boxed_slice(),
            timers: Timers::default(),
            delay,
        };
        driver::run(parts, service, stall);
    })
}

/// One thread's WebSocket state; the driver owns the connections.
struct WsService {
    /// The thread's only read buffer, shared by all its connections.
    buf: Box<[u8]>,
    /// Held answers (the delay knob) and lingering closes of this thread.
    timers: Timers,
    delay: Option<Duration>,
}

impl Service for WsService {
    type Conn = Conn;
    type Timer = ();

    fn open(&mut self, stream: TcpStream, _key: Key) -> Conn {
        Conn::new(Sock::new(stream))
    }

    fn note(conn: &mut Conn, event: &Event) {
        conn.note(event);
    }

    fn pump(&mut self, key: Key, conn: &mut Conn, counters: &CounterWriter) -> Turn {
        conn.pump(&mut Cx {
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
        conn: Option<&mut Conn>,
        counters: &CounterWriter,
    ) -> Turn {
        let Some(conn) = conn else {
            return Turn::Idle;
        };
        conn.timer_fired();
        self.pump(key, conn, counters)
    }
}
