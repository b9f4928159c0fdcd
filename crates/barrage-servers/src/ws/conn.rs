//! One WebSocket connection: the handshake, then frames in and echoes out, then the close.
//!
//! Key decision: frames are decoded where they lie. A whole unfragmented data frame in the
//! thread's read buffer (the common case) is unmasked in place and its echo written straight
//! to the output: no per-connection input buffer is touched. Only what does not fit that path
//! costs memory, and only while it lasts: a partial frame head or control frame (`inbuf`, at
//! most 139 bytes), a message arriving in pieces (`msg`, reassembled, at most
//! [`MAX_MESSAGE`]), output the socket refused (`out`), echoes held by the delay knob (`held`).
//! Reading stops while the connection owes [`HOLD_LIMIT`] bytes (backpressure).

use super::frame::{self, FrameHead, Parsed};
use super::handshake::{self, Outcome};
use crate::driver::{Key, Turn};
use crate::faults::{after, Timers};
use crate::sock::Sock;
use crate::stats::{CounterWriter, Ws};
use mio::event::Event;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
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
pub(crate) struct Cx<'a> {
    /// The thread's read buffer.
    pub buf: &'a mut [u8],
    pub timers: &'a mut Timers,
    /// The delay knob: every answer leaves this long after its frame was read.
    pub delay: Option<Duration>,
    pub key: Key,
    pub counters: &'a CounterWriter,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Handshake,
    Open,
    /// Our last frame (or refusal) is queued: no more input is decoded.
    Closing,
}

/// Why a frame is sent, for counting it when it is queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sent {
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
struct Payload {
    left: u64,
    mask: [u8; 4],
    /// Payload bytes of this frame already unmasked.
    offset: u64,
    fin: bool,
}

pub(crate) struct Conn {
    sock: Sock,
    phase: Phase,
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
    pub(crate) fn new(sock: Sock) -> Conn {
        Conn {
            sock,
            phase: Phase::Handshake,
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
        self.sock.note(event);
    }

    /// Its timer fired: the next turn arms a new one if it still has to wait.
    pub(crate) fn timer_fired(&mut self) {
        self.armed = None;
    }

    fn owed(&self) -> usize {
        self.out.len() - self.pos + self.held.bytes.len() - self.held.pos
    }

    pub(crate) fn pump(&mut self, cx: &mut Cx<'_>) -> Turn {
        match self.turn(cx) {
            Ok(Turn::Closed) | Err(_) => Turn::Closed,
            Ok(turn) => {
                self.arm(cx);
                turn
            }
        }
    }

    fn turn(&mut self, cx: &mut Cx<'_>) -> io::Result<Turn> {
        let mut reads = 0;
        loop {
            self.release_due(Instant::now(), cx.counters);
            self.flush(cx.counters)?;
            if let Some(deadline) = self.linger {
                let eof = self.sock.discard(cx.buf, cx.counters)?;
                let over = eof || Instant::now() >= deadline;
                return Ok(if over { Turn::Closed } else { Turn::Idle });
            }
            let owed = self.owed();
            if owed == 0 && self.phase == Phase::Closing {
                self.sock.shutdown_write();
                self.linger = Some(after(Instant::now(), LINGER));
                continue;
            }
            if self.sock.eof() {
                // The client left without a close frame: finish what it is owed, then close.
                return Ok(if owed == 0 { Turn::Closed } else { Turn::Idle });
            }
            if self.phase == Phase::Closing || owed >= HOLD_LIMIT {
                return Ok(Turn::Idle);
            }
            if reads == READS_PER_TURN {
                return Ok(Turn::Yielded);
            }
            let buf = std::mem::take(&mut cx.buf);
            let read = self.sock.counted(cx.counters).read(buf);
            match read {
                Ok(0) => {}
                Ok(n) => {
                    reads += 1;
                    // The clock is read per read: a message's delay starts when it arrived.
                    self.input(&mut buf[..n], Instant::now(), cx);
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    cx.buf = buf;
                    return Ok(Turn::Idle);
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
            cx.buf = buf;
        }
    }

    /// Writes `out` until it is empty or the socket is full.
    fn flush(&mut self, counters: &CounterWriter) -> io::Result<()> {
        while self.pos < self.out.len() {
            match self.sock.counted(counters).write(&self.out[self.pos..]) {
                Ok(n) => self.pos += n,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
        self.pos = 0;
        self.out.clear();
        if self.out.capacity() > RETAIN {
            self.out = Vec::new();
        }
        Ok(())
    }

    /// Handles bytes just read.
    fn input(&mut self, data: &mut [u8], now: Instant, cx: &mut Cx<'_>) {
        if self.phase == Phase::Handshake {
            self.handshake(data, now, cx);
        } else {
            self.frames(data, now, cx);
        }
    }

    fn handshake(&mut self, data: &mut [u8], now: Instant, cx: &mut Cx<'_>) {
        let mut head = std::mem::take(&mut self.inbuf);
        let buffered = !head.is_empty();
        let whole: &mut [u8] = if buffered {
            head.extend_from_slice(data);
            &mut head
        } else {
            data
        };
        match handshake::answer(whole, &mut self.out) {
            Outcome::Partial if buffered => self.inbuf = head,
            Outcome::Partial => self.inbuf.extend_from_slice(whole),
            Outcome::Refused(_) => {
                cx.counters.ws(Ws::HandshakesRejected);
                self.phase = Phase::Closing;
            }
            Outcome::Upgraded { len } => {
                cx.counters.ws(Ws::Handshakes);
                self.phase = Phase::Open;
                self.frames(&mut whole[len..], now, cx);
            }
        }
    }

    /// Decodes frames from `data`, which follows what `inbuf` holds.
    fn frames(&mut self, mut data: &mut [u8], now: Instant, cx: &mut Cx<'_>) {
        while !data.is_empty() && self.phase == Phase::Open {
            if let Some(payload) = &mut self.payload {
                let take = payload.left.min(data.len() as u64) as usize;
                let (piece, rest) = std::mem::take(&mut data).split_at_mut(take);
                frame::unmask(piece, payload.mask, payload.offset);
                self.msg.extend_from_slice(piece);
                payload.left -= take as u64;
                payload.offset += take as u64;
                data = rest;
                if payload.left == 0 {
                    let fin = payload.fin;
                    self.payload = None;
                    if fin {
                        self.message_done(now, cx);
                    }
                }
                continue;
            }
            if self.inbuf.is_empty() {
                match self.unit(data, now, cx) {
                    Some(used) => data = &mut std::mem::take(&mut data)[used..],
                    None => {
                        self.inbuf.extend_from_slice(data);
                        return;
                    }
                }
                continue;
            }
            // Complete the unit begun in `inbuf`; it is never longer than a control frame.
            let old = self.inbuf.len();
            let take = data.len().min(frame::MAX_CONTROL_FRAME.saturating_sub(old));
            let mut unit = std::mem::take(&mut self.inbuf);
            unit.extend_from_slice(&data[..take]);
            match self.unit(&mut unit, now, cx) {
                Some(used) => {
                    unit.clear();
                    self.inbuf = unit; // at most 139 bytes: kept
                    let from_data = used.saturating_sub(old).min(data.len());
                    data = &mut std::mem::take(&mut data)[from_data..];
                }
                None => {
                    self.inbuf = unit;
                    return;
                }
            }
        }
    }

    /// Decodes one unit at the front of `buf`: a whole control frame, a whole unfragmented
    /// data frame, or the head of a data frame whose payload then streams into `msg`.
    /// Returns the bytes used, `None` if `buf` holds too little.
    fn unit(&mut self, buf: &mut [u8], now: Instant, cx: &mut Cx<'_>) -> Option<usize> {
        let head = match frame::parse_head(buf) {
            Parsed::Partial => return None,
            Parsed::Fail(code) => {
                self.fail(code, now, cx);
                return Some(buf.len());
            }
            Parsed::Head(head) => head,
        };
        let start = head.head_len;
        let end = start.saturating_add(usize::try_from(head.len).unwrap_or(usize::MAX));
        if head.is_control() {
            if buf.len() < end {
                return None;
            }
            let payload = &mut buf[start..end];
            frame::unmask(payload, head.mask, 0);
            self.control(&head, payload, now, cx);
            return Some(end);
        }
        match (head.opcode, self.message) {
            (frame::CONTINUATION, None) | (frame::TEXT | frame::BINARY, Some(_)) => {
                self.fail(frame::PROTOCOL_ERROR, now, cx);
                return Some(buf.len());
            }
            _ => {}
        }
        if self.msg.len() as u64 + head.len > MAX_MESSAGE {
            self.fail(frame::TOO_BIG, now, cx);
            return Some(buf.len());
        }
        if head.fin && head.opcode != frame::CONTINUATION && buf.len() >= end {
            // The common case: a whole message in one frame, in one buffer.
            let payload = &mut buf[start..end];
            frame::unmask(payload, head.mask, 0);
            self.message(head.opcode, payload, now, cx);
            return Some(end);
        }
        if head.opcode != frame::CONTINUATION {
            self.message = Some(head.opcode);
        }
        self.payload = Some(Payload {
            left: head.len,
            mask: head.mask,
            offset: 0,
            fin: head.fin,
        });
        if head.len == 0 {
            self.payload = None;
            if head.fin {
                self.message_done(now, cx);
            }
        }
        Some(start)
    }

    /// The message in `msg` is complete.
    fn message_done(&mut self, now: Instant, cx: &mut Cx<'_>) {
        let opcode = self.message.take().unwrap_or(frame::BINARY);
        let msg = std::mem::take(&mut self.msg);
        self.message(opcode, &msg, now, cx);
        self.msg = msg;
        self.msg.clear();
        if self.msg.capacity() > RETAIN {
            self.msg = Vec::new();
        }
    }

    /// A complete text or binary message: check it and echo it.
    fn message(&mut self, opcode: u8, payload: &[u8], now: Instant, cx: &mut Cx<'_>) {
        if opcode == frame::TEXT && std::str::from_utf8(payload).is_err() {
            self.fail(frame::INVALID_DATA, now, cx);
            return;
        }
        cx.counters.ws(Ws::MessagesIn);
        self.send(Sent::Echo, opcode, payload, now, cx);
    }

    fn control(&mut self, head: &FrameHead, payload: &[u8], now: Instant, cx: &mut Cx<'_>) {
        match head.opcode {
            frame::PING => {
                cx.counters.ws(Ws::Pings);
                self.send(Sent::Pong, frame::PONG, payload, now, cx);
            }
            frame::CLOSE => {
                cx.counters.ws(Ws::ClosesReceived);
                let code = match *payload {
                    [] => None,
                    [hi, lo, ref reason @ ..] => {
                        let code = u16::from_be_bytes([hi, lo]);
                        if !frame::valid_close_code(code) {
                            return self.fail(frame::PROTOCOL_ERROR, now, cx);
                        }
                        if std::str::from_utf8(reason).is_err() {
                            return self.fail(frame::INVALID_DATA, now, cx);
                        }
                        Some(code)
                    }
                    [_] => return self.fail(frame::PROTOCOL_ERROR, now, cx),
                };
                let body = code.map(u16::to_be_bytes);
                let body: &[u8] = match &body {
                    Some(code) => code,
                    None => &[],
                };
                self.send(Sent::Close, frame::CLOSE, body, now, cx);
                self.phase = Phase::Closing;
            }
            _ => {} // an unsolicited pong needs no answer
        }
    }

    /// The client broke the protocol: close with `code`.
    fn fail(&mut self, code: u16, now: Instant, cx: &mut Cx<'_>) {
        cx.counters.ws(Ws::ProtocolErrors);
        self.send(Sent::Close, frame::CLOSE, &code.to_be_bytes(), now, cx);
        self.phase = Phase::Closing;
        self.payload = None;
        self.message = None;
        self.msg = Vec::new();
    }

    /// Queues one server frame, at once or held by the delay knob.
    fn send(&mut self, sent: Sent, opcode: u8, payload: &[u8], now: Instant, cx: &mut Cx<'_>) {
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
    fn arm(&mut self, cx: &mut Cx<'_>) {
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
