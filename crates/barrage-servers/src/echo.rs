//! The reference TCP echo server: every byte a client sends comes back on the same connection,
//! optionally late ([`EchoConfig::delay`]) or after a one-time stall ([`EchoConfig::stall_at`]).
//!
//! Key decision: one mio event loop per thread (the shared [`crate::driver`]), each with its own
//! `SO_REUSEPORT` listener and connections, sharing nothing but the stop flag: no locks, no
//! cross-thread queues. A thread echoes straight from its one 64 KiB read buffer, so a connection costs no buffer memory
//! until the kernel refuses part of an echo (see `conn` for the backpressure rule). The fault
//! knobs are timers on that same loop: the poll timeout is the next due echo or stall edge.
//! With [`EchoConfig::tls`] the echo runs over TLS (raw TCP in TLS records, no ALPN), through
//! the shared [`crate::tls`] transport.

mod conn;
mod delay;

use self::conn::{Conn, Hold};
use self::delay::{DelayQueue, Held};
use crate::driver::{self, Key, Service, Turn};
use crate::faults::Stall;
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

pub use crate::runtime::ServerHandle;
pub use crate::stats::ServerStats;

/// Size of each thread's read buffer: one read moves at most this much.
const READ_BUF: usize = 64 * 1024;

/// How to run the echo server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EchoConfig {
    /// Address to listen on; port 0 picks a free port (see [`ServerHandle::local_addr`]).
    pub listen: SocketAddr,
    /// Event-loop threads, each with its own listener. At least 1.
    pub threads: usize,
    /// Echo over TLS with this certificate and key; `None` is plain TCP.
    pub tls: Option<TlsFiles>,
    /// Echo every byte this long after it was read; `None` (or zero) echoes at once.
    pub delay: Option<Duration>,
    /// Once, this long after start, stop echoing (and reading) for `stall_for`.
    pub stall_at: Option<Duration>,
    /// Length of the stall; zero means no stall.
    pub stall_for: Duration,
    /// Share the port with servers already listening on it (`SO_REUSEPORT`: the kernel splits
    /// the connections); otherwise such a port is [`crate::ServerError::InUse`].
    pub reuse_port: bool,
}

impl Default for EchoConfig {
    /// 127.0.0.1:7000, one thread per available core, no faults.
    fn default() -> Self {
        EchoConfig {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 7000)),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            tls: None,
            delay: None,
            stall_at: None,
            stall_for: Duration::ZERO,
            reuse_port: false,
        }
    }
}

/// Loads the TLS files (if any), binds and starts an echo server. It is accepting when this
/// returns. A TLS file that cannot be read or used is a [`ServerError::Tls`] naming it.
pub fn start(cfg: EchoConfig) -> Result<ServerHandle, ServerError> {
    let started = Instant::now();
    let tls = cfg
        .tls
        .as_ref()
        .map(|files| tls::load(files, cfg.listen, &[]))
        .transpose()?;
    // A zero delay is no delay: holding bytes for zero time would only cost copies.
    let delay = cfg.delay.filter(|delay| !delay.is_zero());
    let stall = Stall::new(started, cfg.stall_at, cfg.stall_for);
    runtime::spawn(
        Kind::Echo,
        tls.is_some(),
        cfg.listen,
        cfg.reuse_port,
        cfg.threads,
        move |parts| {
            let service = Echo {
                buf: vec![0; READ_BUF].into_boxed_slice(),
                delay,
                queue: DelayQueue::default(),
                tls: tls.clone(),
            };
            driver::run(parts, service, stall);
        },
    )
}

/// One thread's echo state; the driver owns the connections.
struct Echo {
    /// The thread's only read buffer, shared by all its connections.
    buf: Box<[u8]>,
    delay: Option<Duration>,
    queue: DelayQueue,
    tls: Option<Arc<ServerConfig>>,
}

impl Service for Echo {
    type Conn = Option<Conn>;
    type Timer = Held;

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
        let hold = self.delay.map(|delay| Hold {
            queue: &mut self.queue,
            delay,
            key,
        });
        conn.pump(&mut self.buf, counters, hold)
    }

    fn next_due(&self) -> Option<Instant> {
        self.queue.next_due()
    }

    fn pop_due(&mut self, now: Instant) -> Option<(Key, Held)> {
        let held = self.queue.pop_due(now)?;
        let key = Key {
            slot: held.slot,
            id: held.conn_id,
        };
        Some((key, held))
    }

    /// Writes held bytes that are due; those of connections closed meanwhile are dropped.
    fn fire(
        &mut self,
        key: Key,
        held: Held,
        conn: Option<&mut Option<Conn>>,
        counters: &CounterWriter,
    ) -> Turn {
        let Some(slot) = conn else {
            self.queue.recycle(held.bytes);
            return Turn::Idle;
        };
        let Some(conn) = slot.as_mut() else {
            self.queue.recycle(held.bytes);
            return Turn::Closed;
        };
        conn.delayed -= held.bytes.len();
        let alive = conn.send(&held.bytes, counters);
        self.queue.recycle(held.bytes);
        let conn = slot;
        if alive {
            // Owing less may let it read again (and lets a half-closed one finish).
            self.pump(key, conn, counters)
        } else {
            Turn::Closed
        }
    }
}
