//! The reference TCP echo server: every byte a client sends comes back on the same connection,
//! optionally late ([`EchoConfig::delay`]) or after a one-time stall ([`EchoConfig::stall_at`]).
//!
//! Key decision: one mio event loop per thread, each with its own `SO_REUSEPORT` listener and
//! connections, sharing nothing but the stop flag: no locks, no cross-thread queues. A thread
//! echoes straight from its one 64 KiB read buffer, so a connection costs no buffer memory
//! until the kernel refuses part of an echo (see `conn` for the backpressure rule). The fault
//! knobs are timers on that same loop: the poll timeout is the next due echo or stall edge.

mod conn;
mod faults;

use self::conn::{Conn, Conns, Hold, Turn};
use self::faults::{DelayQueue, Stall};
use crate::runtime::{self, LoopParts, FIRST_CONN, LISTENER, WAKER};
use crate::stats::ServerError;
use mio::event::Event;
use mio::net::TcpStream;
use mio::{Events, Interest, Token};
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

pub use crate::runtime::ServerHandle;
pub use crate::stats::ServerStats;

/// Size of each thread's read buffer: one read moves at most this much.
const READ_BUF: usize = 64 * 1024;
/// Events taken per `poll`.
const EVENTS: usize = 1024;
/// Pause after an accept error such as `EMFILE`: the listener stays readable while the
/// process is out of descriptors, so retrying at once would spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// How to run the echo server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EchoConfig {
    /// Address to listen on; port 0 picks a free port (see [`ServerHandle::local_addr`]).
    pub listen: SocketAddr,
    /// Event-loop threads, each with its own listener. At least 1.
    pub threads: usize,
    /// Echo every byte this long after it was read; `None` (or zero) echoes at once.
    pub delay: Option<Duration>,
    /// Once, this long after start, stop echoing (and reading) for `stall_for`.
    pub stall_at: Option<Duration>,
    /// Length of the stall; zero means no stall.
    pub stall_for: Duration,
}

impl Default for EchoConfig {
    /// 127.0.0.1:7000, one thread per available core, no faults.
    fn default() -> Self {
        EchoConfig {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 7000)),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            delay: None,
            stall_at: None,
            stall_for: Duration::ZERO,
        }
    }
}

/// Binds and starts an echo server. It is accepting when this returns.
pub fn start(cfg: EchoConfig) -> Result<ServerHandle, ServerError> {
    let started = Instant::now();
    // A zero delay is no delay: holding bytes for zero time would only cost copies.
    let delay = cfg.delay.filter(|delay| !delay.is_zero());
    let stall = Stall::new(started, cfg.stall_at, cfg.stall_for);
    runtime::spawn("echo", cfg.listen, cfg.threads, move |parts| {
        EchoLoop::new(parts, delay, stall).run();
    })
}

/// One thread's event loop and everything it owns.
struct EchoLoop {
    parts: LoopParts,
    conns: Conns,
    /// Id of the last accepted connection.
    last_id: u64,
    /// The thread's only read buffer, shared by all its connections.
    buf: Box<[u8]>,
    delay: Option<Duration>,
    queue: DelayQueue,
    stall: Option<Stall>,
    /// The previous turn ran inside the stall: the next one outside must resume everyone.
    was_stalled: bool,
    /// Connections that used their read budget and get another turn after this poll.
    again: Vec<usize>,
    /// Accepting pauses until then after an accept error.
    accept_backoff: Option<Instant>,
    /// Accept errors are logged once per thread, not once per retry.
    accept_error_logged: bool,
}

impl EchoLoop {
    fn new(parts: LoopParts, delay: Option<Duration>, stall: Option<Stall>) -> EchoLoop {
        EchoLoop {
            parts,
            conns: Conns::default(),
            last_id: 0,
            buf: vec![0; READ_BUF].into_boxed_slice(),
            delay,
            queue: DelayQueue::default(),
            stall,
            was_stalled: false,
            again: Vec::new(),
            accept_backoff: None,
            accept_error_logged: false,
        }
    }

    fn run(mut self) {
        let mut events = Events::with_capacity(EVENTS);
        while !self.parts.should_stop() {
            let timeout = self.timeout(Instant::now());
            if let Err(err) = self.parts.poll.poll(&mut events, timeout) {
                if err.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                eprintln!(
                    "barrage echo server on {}: poll failed, this thread stops: {err}",
                    self.parts.addr
                );
                break;
            }
            if self.parts.should_stop() {
                break;
            }
            self.turn(&events, Instant::now());
        }
        self.close_all();
    }

    /// How long `poll` may sleep: until the next accept retry, stall edge or due echo.
    fn timeout(&self, now: Instant) -> Option<Duration> {
        let stalled = self.is_stalled(now);
        if !stalled && (self.was_stalled || !self.again.is_empty()) {
            return Some(Duration::ZERO);
        }
        let mut deadline = self.accept_backoff;
        let mut consider = |at: Option<Instant>| {
            if let Some(at) = at {
                deadline = Some(deadline.map_or(at, |d| d.min(at)));
            }
        };
        consider(self.stall.and_then(|stall| stall.next_edge(now)));
        if !stalled {
            consider(self.queue.next_due());
        }
        deadline.map(|at| at.saturating_duration_since(now))
    }

    fn is_stalled(&self, now: Instant) -> bool {
        self.stall.is_some_and(|stall| stall.is_active(now))
    }

    /// Handles one poll's events, then the timers.
    fn turn(&mut self, events: &Events, now: Instant) {
        let stalled = self.is_stalled(now);
        for event in events.iter() {
            match event.token() {
                LISTENER => self.accept(),
                WAKER => {}
                Token(token) => self.on_conn_event(token - FIRST_CONN, event, stalled),
            }
        }
        if self.accept_backoff.is_some_and(|until| now >= until) {
            self.accept();
        }
        if stalled {
            self.was_stalled = true;
            return;
        }
        if self.was_stalled {
            // Nobody got an edge for what arrived during the stall: everyone gets a turn.
            self.was_stalled = false;
            for slot in 0..self.conns.capacity() {
                self.pump_slot(slot);
            }
        }
        self.release_due(now);
        self.run_again();
    }

    fn on_conn_event(&mut self, slot: usize, event: &Event, stalled: bool) {
        let Some(conn) = self.conns.get_mut(slot) else {
            return; // closed earlier in this same batch of events
        };
        conn.note(event);
        if !stalled {
            self.pump_slot(slot);
        }
    }

    /// Gives one connection a turn and acts on how it ended.
    fn pump_slot(&mut self, slot: usize) {
        let Some(conn) = self.conns.get_mut(slot) else {
            return;
        };
        let hold = self.delay.map(|delay| Hold {
            queue: &mut self.queue,
            delay,
            slot,
        });
        match conn.pump(&mut self.buf, &self.parts.counters, hold) {
            Turn::Idle => {}
            Turn::Yielded => {
                if !conn.queued {
                    conn.queued = true;
                    self.again.push(slot);
                }
            }
            Turn::Closed => self.close(slot),
        }
    }

    /// Another turn for connections that used their read budget.
    fn run_again(&mut self) {
        let mut batch = std::mem::take(&mut self.again);
        for &slot in &batch {
            if let Some(conn) = self.conns.get_mut(slot) {
                conn.queued = false;
                self.pump_slot(slot);
            }
        }
        if self.again.is_empty() {
            batch.clear();
            self.again = batch; // keep the allocation
        }
    }

    /// Writes every held echo that is due; bytes of connections closed meanwhile are dropped.
    fn release_due(&mut self, now: Instant) {
        while let Some(held) = self.queue.pop_due(now) {
            let slot = held.slot;
            let alive = match self.conns.get_mut(slot) {
                Some(conn) if conn.id == held.conn_id => {
                    conn.delayed -= held.bytes.len();
                    Some(conn.send(&held.bytes, &self.parts.counters))
                }
                _ => None,
            };
            self.queue.recycle(held.bytes);
            match alive {
                // Owing less may let it read again (and lets a half-closed one finish).
                Some(true) => self.pump_slot(slot),
                Some(false) => self.close(slot),
                None => {}
            }
        }
    }

    /// Accepts until the listener's queue is empty (edge-triggered: no second notice).
    fn accept(&mut self) {
        if let Some(until) = self.accept_backoff {
            if Instant::now() < until {
                return;
            }
            self.accept_backoff = None;
        }
        loop {
            match self.parts.listener.accept() {
                Ok((stream, _peer)) => self.add_conn(stream),
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return,
                // Failures of one queued connection, not of the listener: take the next.
                Err(err)
                    if matches!(
                        err.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) => {}
                Err(err) => {
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM: wait for resources instead of spinning.
                    self.warn_once(format_args!("accept failed, retrying every 10 ms: {err}"));
                    self.accept_backoff = Some(Instant::now() + ACCEPT_BACKOFF);
                    return;
                }
            }
        }
    }

    fn add_conn(&mut self, mut stream: TcpStream) {
        self.parts.counters.accepted();
        // Echoes are small and clients measure latency: never let Nagle hold one back.
        let _ = stream.set_nodelay(true);
        let slot = self.conns.vacant();
        // Both interests once, for good: edge-triggered writable edges only come after a
        // write hit a full buffer, so this costs nothing and saves re-registering.
        let interest = Interest::READABLE | Interest::WRITABLE;
        let registry = self.parts.poll.registry();
        if let Err(err) = registry.register(&mut stream, Token(slot + FIRST_CONN), interest) {
            self.warn_once(format_args!(
                "cannot watch a new connection, closing it: {err}"
            ));
            self.conns.release(slot);
            self.parts.counters.closed();
            return;
        }
        self.last_id += 1;
        self.conns.fill(slot, Conn::new(stream, self.last_id));
    }

    fn close(&mut self, slot: usize) {
        // Dropping the stream closes its only descriptor, which also removes it from the epoll
        // set: an explicit deregister would be one more syscall per connection.
        if self.conns.remove(slot).is_some() {
            self.parts.counters.closed();
        }
    }

    fn close_all(&mut self) {
        for slot in 0..self.conns.capacity() {
            self.close(slot);
        }
    }

    fn warn_once(&mut self, message: std::fmt::Arguments<'_>) {
        if !self.accept_error_logged {
            self.accept_error_logged = true;
            eprintln!(
                "barrage echo server on {}: {message} (logged once)",
                self.parts.addr
            );
        }
    }
}
