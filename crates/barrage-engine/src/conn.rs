//! One connection's state, and the sink that turns decoded replies into completed exchanges.
//!
//! A connection owns no receive buffer (the decoder keeps a few bytes of state) and allocates
//! its send buffer only when a write was short; its queue of exchanges in flight grows to the
//! most ever in flight and then stays. That keeps an idle connection within a few hundred bytes.

use crate::framing::Decoder;
use crate::plan::{Plan, Protocol};
use barrage_metrics::{ErrorClass, Recorder};
use mio::net::TcpStream;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Not connected: waiting for its turn to connect (first time, or backoff after a failure).
    Waiting,
    Connecting,
    /// TCP connected; the TLS handshake is under way.
    Tls,
    /// The WebSocket upgrade request is sent and its 101 awaited.
    Upgrade,
    /// Connected; the first message is in flight and its reply awaited.
    Login,
    Ready,
    /// Done for good (end of run).
    Closed,
}

/// An exchange in flight.
#[derive(Clone, Copy, Debug)]
pub struct Inflight {
    /// Latency is measured from here: the actual send (closed loop) or the intended one.
    pub start: u64,
    /// When it was actually written; timeouts count from here.
    pub sent: u64,
    pub len: u32,
}

/// The reply decoder of a connection, by protocol: a few bytes of state, or for HTTP a header
/// buffer allocated only when a response head spans reads.
pub enum Codec {
    Tcp(Decoder),
    Http(crate::http::ResponseDecoder),
    Ws {
        upgrade: Option<Box<crate::ws::HandshakeDecoder>>,
        frames: crate::ws::FrameDecoder,
    },
}

impl Codec {
    pub fn for_plan(plan: &Plan) -> Self {
        match &plan.protocol {
            Protocol::Tcp => Codec::Tcp(Decoder::default()),
            Protocol::Http(h) => Codec::Http(crate::http::ResponseDecoder::new(
                crate::http::Limits::default(),
                h.request.is_head(),
            )),
            Protocol::Ws(w) => Codec::Ws {
                upgrade: None,
                frames: crate::ws::FrameDecoder::new(w.max_message),
            },
        }
    }

    pub fn reset(&mut self) {
        match self {
            Codec::Tcp(d) => d.reset(),
            Codec::Http(d) => d.reset(),
            Codec::Ws { upgrade, frames } => {
                *upgrade = None;
                frames.reset();
            }
        }
    }
}

pub struct Conn {
    pub gid: u64,
    pub state: State,
    pub stream: Option<TcpStream>,
    /// TLS session over `stream` (`https://`, `wss://`).
    pub tls: Option<Box<rustls::ClientConnection>>,
    pub connect_started: u64,
    /// When the transport (TCP, then TLS) became usable: handshake times count from here.
    pub opened_at: u64,
    pub inflight: VecDeque<Inflight>,
    pub codec: Codec,
    /// WebSocket: payload of a ping to answer with a pong (at most 125 bytes), and whether the
    /// server closed (with the code it sent, if any).
    pub pong: Option<Vec<u8>>,
    pub peer_close: Option<Option<u16>>,
    /// HTTP: the server announced it closes the connection after the current response.
    pub server_closes: bool,
    /// Bytes accepted for sending that the socket did not take yet, from `wpos`.
    pub wbuf: Vec<u8>,
    pub wpos: usize,
    /// `--verify` with a message that has placeholders: the bytes sent and not yet echoed.
    pub vbuf: VecDeque<u8>,
    /// `--verify` with a static message: offset into it of the next echoed byte.
    pub voff: usize,
    pub vbad: bool,
    /// Open loop: next schedule index to send, and how many were due at the last look.
    pub sent_k: u64,
    pub due_k: u64,
    /// Open loop: the first schedule index of this connection, fixed when it was first ready
    /// (messages due before it connected were never part of its load); `u64::MAX` until then.
    /// A reconnect keeps the schedule, so an outage shows as latency and `not_sent`.
    pub k0: u64,
    /// `--expect none`: bytes of the front exchange already written.
    pub written_front: u64,
    /// `--expect none`: login bytes still to be written, which complete no exchange.
    pub skip: u64,
    pub seq: u64,
    /// Closed loop: sends owed now, and think deadlines (in order) of sends owed later.
    pub owed: u32,
    pub thinking: VecDeque<u64>,
    pub failures: u32,
    pub retry_at: u64,
    /// Times of the pending wake and timeout timer entries (u64::MAX: none pending).
    pub wake_at: u64,
    pub timeout_at: u64,
    /// In the worker's ready queue already.
    pub ready_queued: bool,
}

impl Conn {
    pub fn new(gid: u64, codec: Codec) -> Self {
        Self {
            gid,
            state: State::Waiting,
            stream: None,
            tls: None,
            connect_started: 0,
            opened_at: 0,
            inflight: VecDeque::new(),
            codec,
            pong: None,
            peer_close: None,
            server_closes: false,
            wbuf: Vec::new(),
            wpos: 0,
            vbuf: VecDeque::new(),
            voff: 0,
            vbad: false,
            sent_k: 0,
            due_k: 0,
            k0: u64::MAX,
            written_front: 0,
            skip: 0,
            seq: 0,
            owed: 0,
            thinking: VecDeque::new(),
            failures: 0,
            retry_at: u64::MAX,
            wake_at: u64::MAX,
            timeout_at: u64::MAX,
            ready_queued: false,
        }
    }

    /// Whether the connection has been ready for load at least once (its schedule runs).
    pub fn started(&self) -> bool {
        self.k0 != u64::MAX
    }

    pub fn pending_write(&self) -> bool {
        self.wpos < self.wbuf.len() || self.tls.as_ref().is_some_and(|t| t.wants_write())
    }

    /// Exchanges in flight that count (the login message does not).
    pub fn counted_in_flight(&self) -> u64 {
        let n = self.inflight.len() as u64;
        if self.state == State::Login {
            n.saturating_sub(1)
        } else {
            n
        }
    }

    /// Forget everything tied to the broken connection; keep the schedule position.
    pub fn reset_io(&mut self) {
        self.stream = None;
        self.tls = None;
        self.inflight.clear();
        self.codec.reset();
        self.pong = None;
        self.peer_close = None;
        self.server_closes = false;
        self.wbuf.clear();
        self.wpos = 0;
        self.vbuf.clear();
        self.voff = 0;
        self.vbad = false;
        self.written_front = 0;
        self.skip = 0;
        self.owed = 0;
        self.thinking.clear();
        self.timeout_at = u64::MAX;
    }
}

/// Applies decoded replies to one connection; the protocol sinks (sinks.rs) build on it.
pub struct Replies<'a> {
    pub conn: &'a mut Conn,
    pub rec: &'a mut Recorder,
    pub now: u64,
    /// `--verify` against this static message (empty when not verifying or dynamic).
    pub verify_static: &'a [u8],
    pub verify_dynamic: bool,
    pub closed_loop: bool,
    pub login_done: bool,
}

impl Replies<'_> {
    /// Reply bytes of the exchange at the front, checked under `--verify`.
    pub fn verify_body(&mut self, bytes: &[u8]) {
        let c = &mut *self.conn;
        if !self.verify_static.is_empty() {
            let end = c.voff + bytes.len();
            if self.verify_static.get(c.voff..end) != Some(bytes) {
                c.vbad = true;
            }
            c.voff = end;
        } else if self.verify_dynamic {
            for &b in bytes {
                if c.vbuf.pop_front() != Some(b) {
                    c.vbad = true;
                }
            }
        }
    }

    /// The exchange at the front got its reply: completed, or failed with `bad` (or a
    /// verification mismatch). A reply with nothing in flight is counted as unexpected.
    pub fn complete(&mut self, bad: Option<ErrorClass>) {
        let c = &mut *self.conn;
        self.rec.c.replies += 1;
        let Some(ex) = c.inflight.pop_front() else {
            self.rec.c.unexpected += 1;
            return;
        };
        let mismatch = std::mem::take(&mut c.vbad);
        c.voff = 0;
        if c.state == State::Login {
            c.state = State::Ready;
            c.failures = 0; // a login answered is useful work: the backoff starts over
            self.login_done = true;
            return;
        }
        self.rec.in_flight -= 1;
        match bad.or(mismatch.then_some(ErrorClass::Mismatch)) {
            Some(class) => {
                self.rec.exchanges_failed(class, 1);
                self.rec.c.error(class, 1);
            }
            None => {
                c.failures = 0; // useful work: the backoff starts over
                self.rec.c.completed += 1;
                self.rec
                    .latency
                    .record_ns(self.now.saturating_sub(ex.start));
            }
        }
        if self.closed_loop {
            c.owed += 1;
        }
    }
}
