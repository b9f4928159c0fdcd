//! One connection's state, and the sink that turns decoded replies into completed exchanges.
//!
//! A connection owns no receive buffer (the decoder keeps a few bytes of state) and allocates
//! its send buffer only when a write was short; its queue of exchanges in flight grows to the
//! most ever in flight and then stays. That keeps an idle connection within a few hundred bytes.

use crate::framing::{Decoder, Sink};
use barrage_metrics::{ErrorClass, Recorder};
use mio::net::TcpStream;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Not connected: waiting for its turn to connect (first time, or backoff after a failure).
    Waiting,
    Connecting,
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

pub struct Conn {
    pub gid: u64,
    pub state: State,
    pub stream: Option<TcpStream>,
    pub connect_started: u64,
    pub inflight: VecDeque<Inflight>,
    pub decoder: Decoder,
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
    pub fn new(gid: u64) -> Self {
        Self {
            gid,
            state: State::Waiting,
            stream: None,
            connect_started: 0,
            inflight: VecDeque::new(),
            decoder: Decoder::default(),
            wbuf: Vec::new(),
            wpos: 0,
            vbuf: VecDeque::new(),
            voff: 0,
            vbad: false,
            sent_k: 0,
            due_k: 0,
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

    pub fn pending_write(&self) -> bool {
        self.wpos < self.wbuf.len()
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
        self.inflight.clear();
        self.decoder.reset();
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

/// Applies decoded replies to one connection.
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

impl Sink for Replies<'_> {
    fn expect_len(&mut self) -> Option<u64> {
        self.conn.inflight.front().map(|f| f.len as u64)
    }

    fn body(&mut self, bytes: &[u8]) {
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

    fn frame(&mut self) {
        let c = &mut *self.conn;
        let Some(ex) = c.inflight.pop_front() else {
            self.rec.c.unexpected += 1;
            return;
        };
        let bad = std::mem::take(&mut c.vbad);
        c.voff = 0;
        if c.state == State::Login {
            c.state = State::Ready;
            self.login_done = true;
            return;
        }
        self.rec.in_flight -= 1;
        if bad {
            self.rec.c.failed += 1;
            self.rec.c.error(ErrorClass::Mismatch, 1);
        } else {
            self.rec.c.completed += 1;
            self.rec
                .latency
                .record_ns(self.now.saturating_sub(ex.start));
        }
        if self.closed_loop {
            self.conn.owed += 1;
        }
    }

    fn unexpected(&mut self, _bytes: &[u8]) {
        self.rec.c.unexpected += 1;
    }
}
