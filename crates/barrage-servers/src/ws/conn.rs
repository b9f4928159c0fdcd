//! One WebSocket connection: the handshake, then frames in and echoes out, then the close.
//!
//! Key decision: frames are decoded where they lie. A whole unfragmented data frame in the
//! thread's read buffer (the common case) is unmasked in place and its echo written straight
//! to the output: no per-connection input buffer is touched. Only what does not fit that path
//! costs memory, and only while it lasts: a partial frame head or control frame (`inbuf`, at
//! most 139 bytes), a message arriving in pieces (`msg`, reassembled, at most
//! [`MAX_MESSAGE`]), output the socket refused (`out`), echoes held by the delay knob (`held`).
//! Reading stops while the connection owes [`HOLD_LIMIT`] bytes (backpressure). Decoding what
//! was read is in `decode`.

mod decode;

use super::frame;
use crate::driver::{Key, Turn};
use crate::faults::{after, Timers};
use crate::stats::{CounterWriter, Ws};
use crate::tls::{Input, Transport};
use mio::event::Event;
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::time::{Duration, Instant};

/// Largest message (after reassembly); a larger one is closed with 1009.
pub const MAX_MESSAGE: u64 = 16 << 20;
/// Bytes a connection may owe its client before it stops reading.
const HOLD_LIMIT: usize = 256 * 1024;
/// Reads per turn before a connection yields, so one fast client cannot starve the rest.
const READS_PER_TURN: usize = 16;
/// A buffer larger than this is freed once it is empty.
const RETAIN: usize = 64 * 1024;
/// How long a closing connection keeps reading (and dropping) what the client still sends
/// after our last frame, so unread data does not turn our close into a reset.
const LINGER: Duration = Duration::from_secs(2);

/// What a connection's turn may use of its thread.
pub(crate) struct ThreadShare<'a> {
    /// The thread's read buffer.
    pub buf: &'a mut [u8],
    pub timers: &'a mut Timers,
    /// The delay knob: every answer leaves this long after its frame was read.
    pub delay: Option<Duration>,
    pub key: Key,
    pub counters: &'a CounterWriter,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ConnState {
    Handshake,
    Open,
    /// Our last frame (or refusal) is queued: no more input is decoded.
    Closing,
}

/// Why a frame is sent, for counting it when it is queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sent {
    Echo,
    Pong,
    Close,
}

/// Answers held by the delay knob: `bytes[pos..]`, cut into entries with their due times.
#[derive(Debug, Default)]
struct Held {
    bytes: Vec<u8>,
    pos: usize,
    entries: VecDeque<(Instant, usize, Sent)>,
}

/// The data frame whose payload is arriving in pieces.
#[derive(Clone, Copy, Debug)]
pub(super) struct Payload {
    left: u64,
    mask: [u8; 4],
    /// Payload bytes of this frame already unmasked.
    offset: u64,
    fin: bool,
}

pub(crate) struct Conn {
    /// The socket, or rustls on it (`wss://`).
    transport: Transport,
    /// The client is done sending (end of stream, or its TLS close_notify).
    eof: bool,
    phase: ConnState,
    /// A partial handshake head, frame head or control frame.
    inbuf: Vec<u8>,
    /// The opcode of the message being received, while it is incomplete.
    message: Option<u8>,
    /// Its payload so far (when it did not arrive as one frame in one read).
    msg: Vec<u8>,
    payload: Option<Payload>,
    /// `out[pos..]` is queued for the socket.
    out: Vec<u8>,
    pos: usize,
    held: Held,
    /// Closing: our side is shut down, we drop what arrives until the client closes or then.
    linger: Option<Instant>,
    /// The deadline a timer is armed for, so each wait arms one timer, not one per turn.
    armed: Option<Instant>,
}

impl Conn {
    pub(crate) fn new(transport: Transport) -> Conn {
        Conn {
            transport,
            eof: false,
            phase: ConnState::Handshake,
            inbuf: Vec::new(),
            message: None,
            msg: Vec::new(),
            payload: None,
            out: Vec::new(),
            pos: 0,
            held: Held::default(),
            linger: None,
            armed: None,
        }
    }

    pub(crate) fn note(&mut self, event: &Event) {
        self.transport.sock_mut().note(event);
    }

    /// Its timer fired: the next turn arms a new one if it still has to wait.
    pub(crate) fn timer_fired(&mut self) {
        self.armed = None;
    }

    fn owed(&self) -> usize {
        self.out.len() - self.pos + self.held.bytes.len() - self.held.pos
    }

    pub(crate) fn pump(&mut self, cx: &mut ThreadShare<'_>) -> Turn {
        match self.turn(cx) {
            Ok(Turn::Closed) | Err(_) => Turn::Closed,
            Ok(turn) => {
                self.arm(cx);
                turn
            }
        }
    }

    fn turn(&mut self, cx: &mut ThreadShare<'_>) -> io::Result<Turn> {
        let mut reads = 0;
        loop {
            self.release_due(Instant::now(), cx.counters);
            self.flush(cx.counters)?;
            if let Some(deadline) = self.linger {
                let eof = self.transport.sock_mut().discard(cx.buf, cx.counters)?;
                let over = eof || Instant::now() >= deadline;
                return Ok(if over { Turn::Closed } else { Turn::Idle });
            }
            let owed = self.owed();
            if owed == 0 && self.phase == ConnState::Closing && !self.transport.wants_write() {
                // TLS: our close_notify first (it goes out with the next flush), then the FIN.
                if !self.transport.close_notify() {
                    self.transport.sock_mut().shutdown_write();
                    self.linger = Some(after(Instant::now(), LINGER));
                }
                continue;
            }
            if self.eof {
                // The client left without a close frame: finish what it is owed, then close.
                let done = owed == 0 && !self.transport.wants_write();
                return Ok(if done { Turn::Closed } else { Turn::Idle });
            }
            if self.phase == ConnState::Closing || owed >= HOLD_LIMIT {
                return Ok(Turn::Idle);
            }
            if reads == READS_PER_TURN {
                return Ok(Turn::Yielded);
            }
            let buf = std::mem::take(&mut cx.buf);
            let read = self.transport.read(buf, cx.counters);
            let read = match read {
                Ok(Input::Data(n)) => {
                    reads += 1;
                    // The clock is read per read: a message's delay starts when it arrived.
                    self.input(&mut buf[..n], Instant::now(), cx);
                    Ok(None)
                }
                Ok(Input::Progress) => {
                    reads += 1;
                    Ok(None)
                }
                Ok(Input::Eof) => {
                    self.eof = true;
                    Ok(None)
                }
                Ok(Input::Nothing) => Ok(Some(Turn::Idle)),
                Err(err) => Err(err),
            };
            cx.buf = buf;
            if let Some(turn) = read? {
                return Ok(turn);
            }
        }
    }

    /// Writes `out` (and what rustls has encrypted) until it is empty or the socket is full.
    fn flush(&mut self, counters: &CounterWriter) -> io::Result<()> {
        while self.pos < self.out.len() {
            let iov = [IoSlice::new(&self.out[self.pos..])];
            match self.transport.write(&iov, counters) {
                Ok(0) => return Ok(()), // TLS: rustls' buffer is full until the socket drains
                Ok(n) => self.pos += n,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
        self.transport.flush(counters)?;
        self.pos = 0;
        self.out.clear();
        if self.out.capacity() > RETAIN {
            self.out = Vec::new();
        }
        Ok(())
    }

    /// Queues one server frame, at once or held by the delay knob.
    fn send(
        &mut self,
        sent: Sent,
        opcode: u8,
        payload: &[u8],
        now: Instant,
        cx: &mut ThreadShare<'_>,
    ) {
        match cx.delay {
            Some(delay) => {
                let start = self.held.bytes.len();
                frame::write_head(&mut self.held.bytes, opcode, payload.len());
                self.held.bytes.extend_from_slice(payload);
                let len = self.held.bytes.len() - start;
                self.held.entries.push_back((after(now, delay), len, sent));
            }
            None => {
                frame::write_head(&mut self.out, opcode, payload.len());
                self.out.extend_from_slice(payload);
                count_sent(sent, cx.counters);
            }
        }
    }

    /// Moves held frames that are due to the output.
    fn release_due(&mut self, now: Instant, counters: &CounterWriter) {
        let held = &mut self.held;
        while let Some(&(due, len, sent)) = held.entries.front() {
            if due > now {
                break;
            }
            held.entries.pop_front();
            self.out
                .extend_from_slice(&held.bytes[held.pos..held.pos + len]);
            held.pos += len;
            count_sent(sent, counters);
        }
        if held.pos == held.bytes.len() && held.pos > 0 {
            held.pos = 0;
            held.bytes.clear();
            if held.bytes.capacity() > RETAIN {
                held.bytes = Vec::new();
            }
        }
    }

    /// Arms a timer for what the connection waits for, unless one is armed for that already.
    fn arm(&mut self, cx: &mut ThreadShare<'_>) {
        let want = match self.linger {
            Some(deadline) => Some(deadline),
            None => self.held.entries.front().map(|&(due, _, _)| due),
        };
        let Some(want) = want.filter(|&at| at > Instant::now()) else {
            return;
        };
        if self.armed.is_none_or(|armed| want < armed) {
            cx.timers.arm(want, cx.key.slot, cx.key.id);
            self.armed = Some(want);
        }
    }
}

/// Counts a frame as it is queued for the socket, before the write that sends it.
fn count_sent(sent: Sent, counters: &CounterWriter) {
    match sent {
        Sent::Echo => counters.ws(Ws::MessagesOut),
        Sent::Close => counters.ws(Ws::ClosesSent),
        Sent::Pong => {}
    }
}
