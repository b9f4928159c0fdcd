//! One http connection: its transport (plain or rustls), the unparsed input, the answers
//! queued in request order, and the output being written.
//!
//! Key decision: requests are answered strictly in order from a queue of small descriptors
//! ([`Answer`]: what to send and when it is due), rendered into bytes only when they are due
//! and the output has room. A delayed answer (`/delay/<ms>` or the delay knob) therefore holds
//! back the answers behind it without blocking the thread; the connection arms one timer for
//! the front answer. Reading stops while the queue or the output is full (backpressure), so a
//! connection holds at most [`MAX_ANSWERS`] descriptors, one 64 KiB batch of output and a
//! partial request head.

use super::request::{parse_head, Body, Chunked, Head, Method, Request};
use super::response::{ConnHeader, Output, Reply, Route, MAX_IOV};
use crate::driver::{Key, Turn};
use crate::faults::{after, Timers};
use crate::stats::CounterWriter;
use crate::tls::{Input, Transport};
use mio::event::Event;
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::time::{Duration, Instant};

/// Requests parsed ahead of their answers (pipelining depth held per connection).
const MAX_ANSWERS: usize = 128;
/// Socket reads per turn before a connection yields, so one fast client cannot starve the rest.
const READS_PER_TURN: usize = 16;
/// How long a closing connection keeps reading (and dropping) what the client still sends, so
/// that the kernel does not answer unread data with a reset that could destroy our last
/// response in the client's receive buffer.
const LINGER: Duration = Duration::from_secs(2);

/// What a connection's turn may use of its thread.
pub(crate) struct ThreadShare<'a> {
    /// The thread's read buffer.
    pub buf: &'a mut [u8],
    pub timers: &'a mut Timers,
    /// The delay knob: every answer is due this long after its request was read.
    pub delay: Option<Duration>,
    /// The service-time knob: an answer is not due before the thread has served it.
    pub service: Option<&'a mut crate::faults::Service>,
    /// Say in `Server-Timing` how long each request was held.
    pub server_timing: bool,
    pub key: Key,
    pub counters: &'a CounterWriter,
}

/// One request's answer, waiting for its turn.
#[derive(Debug)]
struct Answer {
    reply: Reply,
    head_only: bool,
    conn: ConnHeader,
    /// Not before then; `None` is at once.
    due: Option<Instant>,
    /// When its request was read.
    read_at: Instant,
}

/// The body of the request being read, thrown away as it arrives.
#[derive(Debug)]
enum Skip {
    Nothing,
    Length(u64),
    Chunked(Chunked),
}

pub(crate) struct Conn {
    transport: Transport,
    /// Unparsed input: a partial head, or requests not parsed because `answers` was full.
    /// Empty (and unallocated) in the common case, where requests are parsed straight out of
    /// the thread's read buffer.
    inbuf: Vec<u8>,
    skip: Skip,
    answers: VecDeque<Answer>,
    output: Output,
    /// The last request was read (it asked to close, or was rejected): parse no more.
    last: bool,
    /// Requests wait in `inbuf` because `answers` was full.
    paused: bool,
    /// The client closed its side: answer what was asked, then close.
    eof: bool,
    /// Closing: our side is shut down, we drop what arrives until the client closes or then.
    linger: Option<Instant>,
    /// The deadline a timer is armed for, so each wait arms one timer, not one per turn.
    armed: Option<Instant>,
}

impl Conn {
    pub(crate) fn new(transport: Transport) -> Conn {
        Conn {
            transport,
            inbuf: Vec::new(),
            skip: Skip::Nothing,
            answers: VecDeque::new(),
            output: Output::default(),
            last: false,
            paused: false,
            eof: false,
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
            self.flush(cx)?;
            if let Some(deadline) = self.linger {
                let sock = self.transport.sock_mut();
                let eof = sock.discard(cx.buf, cx.counters)?;
                let over = eof || Instant::now() >= deadline;
                return Ok(if over { Turn::Closed } else { Turn::Idle });
            }
            let settled =
                self.answers.is_empty() && self.output.is_empty() && !self.transport.wants_write();
            if settled && self.last {
                self.close_gracefully();
                continue;
            }
            if settled && self.eof {
                return Ok(Turn::Closed);
            }
            if self.paused && self.answers.len() < MAX_ANSWERS {
                self.paused = false;
                self.feed(&[], Instant::now(), cx);
                continue;
            }
            if self.last || self.eof || self.paused || !self.output.has_room() {
                return Ok(Turn::Idle);
            }
            if reads == READS_PER_TURN {
                return Ok(Turn::Yielded);
            }
            match self.transport.read(cx.buf, cx.counters)? {
                Input::Data(n) => {
                    reads += 1;
                    // The clock is read per read: a request's delay starts when it arrived.
                    let now = Instant::now();
                    let buf = std::mem::take(&mut cx.buf);
                    self.feed(&buf[..n], now, cx);
                    cx.buf = buf;
                }
                Input::Progress => reads += 1,
                Input::Eof => self.eof = true,
                Input::Nothing => return Ok(Turn::Idle),
            }
        }
    }

    /// Renders due answers and writes until everything is out or the socket is full.
    fn flush(&mut self, cx: &mut ThreadShare<'_>) -> io::Result<()> {
        let now = Instant::now();
        loop {
            while self.output.has_room() {
                match self.answers.front() {
                    Some(answer) if answer.due.is_none_or(|due| due <= now) => {}
                    _ => break,
                }
                let Some(answer) = self.answers.pop_front() else {
                    break;
                };
                // Counted as it is queued, before the write: see `stats`.
                let held = cx
                    .server_timing
                    .then(|| now.saturating_duration_since(answer.read_at));
                let status = self
                    .output
                    .render(answer.reply, answer.head_only, answer.conn, held);
                cx.counters.http_response(status);
            }
            if self.output.is_empty() {
                return self.transport.flush(cx.counters).map(drop);
            }
            let mut iov = [IoSlice::new(&[]); MAX_IOV];
            let k = self.output.fill(&mut iov);
            match self.transport.write(&iov[..k], cx.counters) {
                Ok(0) => return Ok(()),
                Ok(n) => self.output.advance(n),
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
    }

    /// Everything is answered and the connection must close: say so (TLS close_notify), then
    /// shut down our side and linger.
    fn close_gracefully(&mut self) {
        if self.transport.close_notify() {
            return; // the alert goes out with the next flush; come back when it has
        }
        self.transport.sock_mut().shutdown_write();
        self.linger = Some(after(Instant::now(), LINGER));
    }

    /// Takes requests from `data` (after what `inbuf` holds) and queues their answers.
    fn feed(&mut self, data: &[u8], now: Instant, cx: &mut ThreadShare<'_>) {
        if self.inbuf.is_empty() {
            let used = self.parse(data, now, cx);
            if !self.last && used < data.len() {
                self.inbuf.extend_from_slice(&data[used..]);
            }
            return;
        }
        self.inbuf.extend_from_slice(data);
        let mut input = std::mem::take(&mut self.inbuf);
        let used = self.parse(&input, now, cx);
        if self.last || used == input.len() {
            return; // dropping `input` frees it: idle connections keep no buffer
        }
        input.drain(..used);
        self.inbuf = input;
    }

    /// Parses requests and skips their bodies; returns the bytes used. Stops at a partial
    /// request, at a full queue (`paused`) or after the last request.
    fn parse(&mut self, input: &[u8], now: Instant, cx: &mut ThreadShare<'_>) -> usize {
        let mut at = 0;
        while at < input.len() && !self.last {
            let rest = &input[at..];
            match &mut self.skip {
                Skip::Nothing => {}
                Skip::Length(left) => {
                    let take = (*left).min(rest.len() as u64);
                    *left -= take;
                    at += take as usize;
                    if *left == 0 {
                        self.skip = Skip::Nothing;
                    }
                    continue;
                }
                Skip::Chunked(chunked) => {
                    match chunked.feed(rest) {
                        Ok((used, done)) => {
                            at += used;
                            if done {
                                self.skip = Skip::Nothing;
                            }
                        }
                        // Its request is already answered: close after that answer rather
                        // than answer one request twice.
                        Err(_) => self.last = true,
                    }
                    continue;
                }
            }
            if self.answers.len() >= MAX_ANSWERS {
                self.paused = true;
                break;
            }
            match parse_head(rest) {
                Head::Partial => break,
                Head::Reject(status) => {
                    self.queue(
                        Reply::Status(status),
                        false,
                        ConnHeader::Close,
                        None,
                        now,
                        cx,
                    );
                    self.last = true;
                }
                Head::Complete { len, request } => {
                    at += len;
                    self.skip = match request.body {
                        Body::Length(0) => Skip::Nothing,
                        Body::Length(n) => Skip::Length(n),
                        Body::Chunked => Skip::Chunked(Chunked::new()),
                    };
                    self.answer(&request, now, cx);
                }
            }
        }
        at
    }

    /// Queues the answer to a parsed request.
    fn answer(&mut self, request: &Request, now: Instant, cx: &mut ThreadShare<'_>) {
        let mut wait = None;
        let reply = match (request.method, request.route) {
            (Method::Other, _) => Reply::Status(405),
            (_, Route::Hello) => Reply::Hello,
            (_, Route::Delay(ms)) => {
                wait = Some(ms);
                Reply::Hello
            }
            (_, Route::Bytes(n)) => Reply::Bytes(n),
            // An HTTP/1.0 client does not know chunked: the same bytes with a length.
            (_, Route::Chunked(n)) if request.http10 => Reply::Bytes(n),
            (_, Route::Chunked(n)) => Reply::Chunked(n),
            (_, Route::Status(code)) => Reply::Status(code),
            (_, Route::NotFound) => Reply::Status(404),
            (_, Route::BadParam) => Reply::Status(400),
        };
        let conn = if !request.keep_alive {
            self.last = true;
            ConnHeader::Close
        } else if request.http10 {
            ConnHeader::KeepAlive
        } else {
            ConnHeader::Default
        };
        let head_only = request.method == Method::Head;
        self.queue(reply, head_only, conn, wait, now, cx);
    }

    fn queue(
        &mut self,
        reply: Reply,
        head_only: bool,
        conn: ConnHeader,
        wait: Option<Duration>,
        now: Instant,
        cx: &mut ThreadShare<'_>,
    ) {
        let wait = match (cx.delay, wait) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        let due = wait.filter(|w| !w.is_zero()).map(|w| after(now, w));
        let due = match (due, cx.service.as_deref_mut().map(|s| s.done_at(now))) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.answers.push_back(Answer {
            reply,
            head_only,
            conn,
            due,
            read_at: now,
        });
    }

    /// Arms a timer for what the connection waits for, unless one is armed for that already.
    fn arm(&mut self, cx: &mut ThreadShare<'_>) {
        let want = match self.linger {
            Some(deadline) => Some(deadline),
            None => self.answers.front().and_then(|answer| answer.due),
        };
        let Some(want) = want.filter(|&at| at > Instant::now()) else {
            return; // nothing to wait for, or only for the socket (a writable edge comes)
        };
        if self.armed.is_none_or(|armed| want < armed) {
            cx.timers.arm(want, cx.key.slot, cx.key.id);
            self.armed = Some(want);
        }
    }
}
