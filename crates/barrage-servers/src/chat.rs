//! The chat reference server: users log in, are put into rooms of a random size in a range,
//! and every message a member publishes is broadcast to the room. It is the target of
//! barrage's one-to-many delivery tests and benchmarks, so it counts what it did exactly
//! (logins, rooms, messages in, deliveries out) and has fault knobs whose effects it counts
//! too (dropped, duplicated and reordered deliveries), for a client's loss, duplicate and
//! reorder figures to be compared with what was injected.
//!
//! Protocol: one JSON object per line over TCP, or one JSON object per WebSocket text message
//! (the same port: a connection whose first bytes are `GET ` is taken as a WebSocket upgrade;
//! any path is accepted). The messages are the same either way. A connection whose first byte
//! is `0x80` or `0x88` speaks the binary game protocol of [`crate::frames`] (`serve frames`):
//! typed objects in length-prefixed frames, with the same rooms, broadcast and knobs (a login
//! there names the user; joining a room is its own message).
//!
//! | client sends | server answers |
//! |---|---|
//! | `{"op":"login","user":"ann"}` | `{"op":"joined","room":7,"size":3,"cap":5}` to ann, `{"op":"member","room":7,"size":3}` to the other members |
//! | `{"op":"pub","text":"..."}` | `{"op":"msg","room":7,"from":"ann","text":"..."}` to every member (ann too, unless `self_delivery` is off) |
//! | `{"op":"leave"}` | `{"op":"bye"}`, and `member` to those who stay |
//! | anything else | `{"op":"error"}` |
//!
//! Rooms: a login joins the newest room with a free seat, or creates one whose capacity is
//! drawn uniformly from the size range; a room that filled up takes no one else (even when a
//! member leaves). The text of a `pub` is relayed byte for byte (up to its closing quote), so a
//! client's stamps in it arrive unchanged.
//!
//! Output is bounded per member: what its socket has not taken may grow to
//! [`ChatConfig::max_queue`] bytes; a member that falls further behind (a client that does not
//! read) is disconnected, counted in `slow_disconnects`, and the deliveries it was owed in
//! `slow_dropped`. A delivery counts in `deliveries_out` once the socket has taken all of its
//! bytes, not when it is queued.
//!
//! Key decision: rooms are per event-loop thread (the kernel spreads connections over the
//! threads' `SO_REUSEPORT` listeners), so a broadcast never crosses threads: no lock, no queue;
//! with one thread (the default) there is one set of rooms.

use crate::frames::{self, Writer};
use crate::runtime::{self, LoopParts, FIRST_CONN, LISTENER, WAKER};
use crate::stats::{Chat, CounterWriter, Kind, ServerError};
use crate::ws::frame::{self, Parsed};
use crate::ws::handshake::{self, Upgrade};
use crate::ServerHandle;
use mio::net::TcpStream;
use mio::{Events, Interest, Token};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

/// Lines longer than this close the connection (a client that never sends a newline).
const MAX_LINE: usize = 64 * 1024;
const READ_BUF: usize = 64 * 1024;
/// [`ChatConfig::max_queue`]'s default: 1 MB a member beyond what its socket holds.
pub const MAX_QUEUE: usize = 1_000_000;

#[derive(Clone, Debug)]
pub struct ChatConfig {
    pub listen: SocketAddr,
    /// Event-loop threads, each with its own rooms. At least 1.
    pub threads: usize,
    /// Room capacities are drawn uniformly from this inclusive range (at least 1).
    pub room_min: usize,
    pub room_max: usize,
    /// A publisher gets its own message too.
    pub self_delivery: bool,
    /// Fault knobs, probabilities per delivery in [0, 1]: drop it, send it twice, hold it back
    /// behind the next delivery from the same sender to the same member (`reordered` counts
    /// those released behind a later one; one held per member at a time).
    pub drop: f64,
    pub dup: f64,
    pub reorder: f64,
    /// Seed of the room sizes and the faults (per thread: seed + thread index).
    pub seed: u64,
    /// Fault knob: every delivery is written this long after its message arrived (order kept;
    /// a `bye` comes after the deliveries still owed; deliveries out are counted when written).
    pub delay: Option<Duration>,
    /// Fault knob: once, this long after start, stop reading and writing for `stall_for`
    /// (connections are still accepted; what arrived meanwhile is handled after).
    pub stall_at: Option<Duration>,
    pub stall_for: Duration,
    /// Bytes a member may have queued that its socket has not taken (at least 1); one whose
    /// output would grow past it is disconnected (`slow_disconnects`), the deliveries it was
    /// owed counted as `slow_dropped`. What a client that never reads costs the server.
    pub max_queue: usize,
    /// Share the port with servers already listening on it (`SO_REUSEPORT`: the kernel splits
    /// the connections); otherwise such a port is [`crate::ServerError::InUse`].
    pub reuse_port: bool,
}

impl Default for ChatConfig {
    fn default() -> Self {
        ChatConfig {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 7100)),
            threads: 1,
            room_min: 3,
            room_max: 8,
            self_delivery: true,
            drop: 0.0,
            dup: 0.0,
            reorder: 0.0,
            seed: 1,
            delay: None,
            stall_at: None,
            stall_for: Duration::ZERO,
            max_queue: MAX_QUEUE,
            reuse_port: false,
        }
    }
}

/// Binds and starts the chat server; it is accepting when this returns.
pub fn start(cfg: ChatConfig) -> Result<ServerHandle, ServerError> {
    let bad = |reason: String| ServerError::Config {
        addr: cfg.listen,
        reason,
    };
    if cfg.max_queue == 0 {
        return Err(bad("max_queue 0: give at least 1 byte".to_owned()));
    }
    if cfg.room_min == 0 || cfg.room_min > cfg.room_max {
        return Err(bad(format!(
            "room sizes {}-{}: give a range like 3-8 (at least 1)",
            cfg.room_min, cfg.room_max
        )));
    }
    for (name, p) in [
        ("drop", cfg.drop),
        ("dup", cfg.dup),
        ("reorder", cfg.reorder),
    ] {
        if !(0.0..=1.0).contains(&p) {
            return Err(bad(format!("{name} {p}: a probability from 0 to 1")));
        }
    }
    let threads = cfg.threads;
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    runtime::spawn(
        Kind::Chat,
        false,
        cfg.listen,
        cfg.reuse_port,
        threads,
        move |parts| {
            let index = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Loop::new(parts, cfg.clone(), index).run();
        },
    )
}

/// What a connection speaks, known from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wire {
    Unknown,
    Lines,
    /// A WebSocket upgrade request, not yet whole.
    Upgrade,
    Ws,
    /// The binary game protocol ([`crate::frames`]).
    Frames,
}

/// What the server says to a member, encoded by [`encode`] as the member's wire carries it.
enum Say<'a> {
    Joined {
        room: usize,
        size: usize,
        cap: usize,
    },
    Member {
        room: usize,
        size: usize,
    },
    Msg {
        room: usize,
        from: &'a str,
        text: &'a [u8],
    },
    Bye,
    /// An error answer to `action` (frames); `why` empty: `{"op":"error"}`.
    Error {
        action: i16,
        why: &'a str,
    },
    /// Frames only: a login's answer, a ping's.
    Login {
        user: &'a [u8],
    },
    Pong,
}

/// Appends `say` to `out` as `wire` carries it: a JSON line, a WebSocket text frame of it, or
/// a frame of the game protocol.
fn encode(wire: Wire, say: &Say, out: &mut Vec<u8>) {
    if wire == Wire::Frames {
        return encode_frame(say, out);
    }
    let line = match *say {
        Say::Joined { room, size, cap } => {
            format!("{{\"op\":\"joined\",\"room\":{room},\"size\":{size},\"cap\":{cap}}}\n")
        }
        Say::Member { room, size } => {
            format!("{{\"op\":\"member\",\"room\":{room},\"size\":{size}}}\n")
        }
        Say::Msg { room, from, text } => {
            let mut msg = Vec::with_capacity(text.len() + from.len() + 48);
            msg.extend_from_slice(b"{\"op\":\"msg\",\"room\":");
            msg.extend_from_slice(room.to_string().as_bytes());
            msg.extend_from_slice(b",\"from\":\"");
            msg.extend_from_slice(from.as_bytes());
            msg.extend_from_slice(b"\",\"text\":\"");
            msg.extend_from_slice(text);
            msg.extend_from_slice(b"\"}\n");
            return put(wire, out, &msg);
        }
        Say::Bye => "{\"op\":\"bye\"}\n".to_string(),
        Say::Error { why: "", .. } | Say::Login { .. } | Say::Pong => {
            "{\"op\":\"error\"}\n".to_string()
        }
        Say::Error { why, .. } => format!("{{\"op\":\"error\",\"why\":\"{why}\"}}\n"),
    };
    put(wire, out, line.as_bytes());
}

/// [`encode`] for the game protocol.
fn encode_frame(say: &Say, out: &mut Vec<u8>) {
    let i = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    match *say {
        Say::Joined { room, size, cap } => {
            let mut w = Writer::message(out, frames::JOIN, 3);
            w.int("r", i(room)).int("n", i(size)).int("cap", i(cap));
            w.finish();
        }
        Say::Member { room, size } => {
            let mut w = Writer::message(out, frames::MEMBERS, 2);
            w.int("r", i(room)).int("n", i(size));
            w.finish();
        }
        Say::Msg { room, from, text } => {
            let mut w = Writer::message(out, frames::PUBLIC_MESSAGE, 4);
            w.int("r", i(room))
                .int("n", 0)
                .str("u", from.as_bytes())
                .bytes("m", text);
            w.finish();
        }
        Say::Bye => Writer::message(out, frames::LEAVE, 0).finish(),
        Say::Error { action, why } => {
            let mut w = Writer::message(out, action, 2);
            w.short("ec", 1).str("em", why.as_bytes());
            w.finish();
        }
        Say::Login { user } => {
            let mut w = Writer::message(out, frames::LOGIN, 1);
            w.str("un", user);
            w.finish();
        }
        Say::Pong => Writer::message(out, frames::PING, 0).finish(),
    }
}

/// A WebSocket message (so far) longer than a line may be.
fn h_too_long(frame_len: u64, so_far: usize) -> bool {
    frame_len.saturating_add(so_far as u64) > MAX_LINE as u64
}

/// Appends one message (a JSON line ending in `\n`) to `out` as `wire` carries it: the line
/// itself, or a WebSocket text frame of the line without its newline.
fn put(wire: Wire, out: &mut Vec<u8>, line: &[u8]) {
    if wire == Wire::Ws {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        frame::write_head(out, frame::TEXT, body.len());
        out.extend_from_slice(body);
    } else {
        out.extend_from_slice(line);
    }
}

struct Conn {
    stream: TcpStream,
    wire: Wire,
    /// A WebSocket message arriving in fragments, so far.
    frag: Vec<u8>,
    inbuf: Vec<u8>,
    /// Queued output: the bytes after the first `sent` of everything queued.
    out: Vec<u8>,
    /// Bytes of output the socket has taken so far.
    sent: u64,
    /// Where deliveries queued in `out` end (counting as `sent` does) and how many end there;
    /// each counts as a delivery out once the socket has taken its last byte.
    marks: std::collections::VecDeque<(u64, u64)>,
    /// Deliveries in `marks`.
    queued: u64,
    /// Its output would have passed `max_queue`: closed at the next flush.
    slow: bool,
    /// A write failed: closed at the next flush.
    failed: bool,
    /// A delivery held back by the reorder knob (with its sender's connection id and its
    /// copies), sent after the next delivery from the same sender: a reorder the member can see.
    held: Option<(u64, Vec<u8>, u64)>,
    /// Which connection this is, never reused (slots are).
    id: u64,
    /// The delay knob: deliveries waiting for their time, in order (a `bye` waits behind
    /// them); the flag says whether the bytes are a delivery, counted when released.
    delayed: std::collections::VecDeque<(std::time::Instant, Vec<u8>, bool)>,
    user: Box<str>,
    room: Option<usize>,
    /// Closing once `out` is written (after a `bye`).
    closing: bool,
}

impl Conn {
    /// The `n` deliveries just appended to `out` end here.
    fn mark(&mut self, n: u64) {
        let end = self.sent + self.out.len() as u64;
        match self.marks.back_mut() {
            Some(last) if last.0 == end => last.1 += n,
            _ => self.marks.push_back((end, n)),
        }
        self.queued += n;
    }

    /// Deliveries the connection was owed and has not been written: queued, held back,
    /// delayed.
    fn owed(&self) -> u64 {
        self.queued
            + self.held.as_ref().map_or(0, |h| h.2)
            + self.delayed.iter().filter(|d| d.2).count() as u64
    }
}

struct Room {
    members: Vec<usize>,
    cap: usize,
    /// Takes new members (never again once it was full).
    open: bool,
}

struct Loop {
    parts: LoopParts,
    /// The stall knob's window, and whether events were left unhandled during it.
    stall: Option<(std::time::Instant, std::time::Instant)>,
    missed: bool,
    cfg: ChatConfig,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    rooms: Vec<Room>,
    /// The room new users join while it has a free seat.
    current: Option<usize>,
    rng: u64,
    next_id: u64,
    /// Connections with output to write after this turn.
    dirty: Vec<usize>,
    rbuf: Box<[u8]>,
    /// What is being said to one member, encoded for its wire.
    sbuf: Vec<u8>,
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The value of `"key":"...` in a JSON line (up to the next quote), or `None`.
fn field<'a>(line: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut pat = Vec::with_capacity(key.len() + 4);
    pat.push(b'"');
    pat.extend_from_slice(key);
    pat.extend_from_slice(b"\":\"");
    let at = memchr::memmem::find(line, &pat)? + pat.len();
    let len = memchr::memchr(b'"', &line[at..])?;
    Some(&line[at..at + len])
}

impl Loop {
    fn new(parts: LoopParts, cfg: ChatConfig, index: u64) -> Loop {
        let rng = cfg.seed.wrapping_add(index.wrapping_mul(0x1000_0000_01b3));
        let started = std::time::Instant::now();
        let stall = cfg
            .stall_at
            .filter(|_| !cfg.stall_for.is_zero())
            .map(|at| (started + at, started + at + cfg.stall_for));
        Loop {
            parts,
            stall,
            missed: false,
            cfg,
            conns: Vec::new(),
            free: Vec::new(),
            rooms: Vec::new(),
            current: None,
            rng,
            next_id: 0,
            dirty: Vec::new(),
            rbuf: vec![0; READ_BUF].into_boxed_slice(),
            sbuf: Vec::new(),
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && ((splitmix(&mut self.rng) >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        let mut backoff = false;
        while !self.parts.should_stop() {
            let now = std::time::Instant::now();
            let stalled = self.stall.is_some_and(|(a, b)| a <= now && now < b);
            if !stalled && self.missed {
                // The stall is over: handle what arrived during it.
                self.missed = false;
                for slot in 0..self.conns.len() {
                    if self.conns[slot].is_some() {
                        self.read(slot);
                        self.mark(slot);
                    }
                }
            }
            let stall_edge = self
                .stall
                .map(|(a, b)| if now < a { a } else { b })
                .filter(|t| *t > now);
            let next_due = match (self.next_due(), stall_edge) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            };
            let timeout = match (backoff, next_due) {
                (true, _) => Some(Duration::from_millis(10)),
                (false, Some(t)) => Some(t.saturating_duration_since(std::time::Instant::now())),
                (false, None) => None,
            };
            if let Err(e) = self.parts.poll.poll(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    eprintln!("barrage chat server: poll failed: {e}");
                    break;
                }
            }
            backoff = false;
            for ev in events.iter() {
                match ev.token() {
                    WAKER => {}
                    LISTENER => backoff = !self.accept(),
                    Token(_) if stalled => self.missed = true,
                    Token(t) => {
                        let slot = t - FIRST_CONN;
                        if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                            self.read(slot);
                        }
                        if ev.is_writable() {
                            self.mark(slot);
                        }
                    }
                }
            }
            if backoff {
                backoff = !self.accept();
            }
            if !stalled {
                self.release_due();
                self.flush_dirty();
            }
        }
        for slot in 0..self.conns.len() {
            if self.conns[slot].is_some() {
                self.drop_conn(slot);
            }
        }
    }

    /// Accept what is queued; false when out of resources (retry after a pause).
    fn accept(&mut self) -> bool {
        loop {
            match self.parts.listener.accept() {
                Ok((mut stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let slot = self.free.pop().unwrap_or_else(|| {
                        self.conns.push(None);
                        self.conns.len() - 1
                    });
                    let token = Token(slot + FIRST_CONN);
                    if self
                        .parts
                        .poll
                        .registry()
                        .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
                        .is_err()
                    {
                        self.free.push(slot);
                        continue;
                    }
                    self.parts.counters.accepted();
                    self.next_id += 1;
                    self.conns[slot] = Some(Conn {
                        stream,
                        wire: Wire::Unknown,
                        frag: Vec::new(),
                        inbuf: Vec::new(),
                        out: Vec::new(),
                        sent: 0,
                        marks: Default::default(),
                        queued: 0,
                        slow: false,
                        failed: false,
                        held: None,
                        id: self.next_id,
                        delayed: Default::default(),
                        user: "".into(),
                        room: None,
                        closing: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) => {}
                Err(_) => return false,
            }
        }
    }

    /// The earliest delayed delivery.
    fn next_due(&self) -> Option<std::time::Instant> {
        self.cfg.delay?;
        self.conns
            .iter()
            .flatten()
            .filter_map(|c| c.delayed.front().map(|d| d.0))
            .min()
    }

    /// Move delayed deliveries whose time has come to their connection's output.
    fn release_due(&mut self) {
        if self.cfg.delay.is_none() {
            return;
        }
        let now = std::time::Instant::now();
        for slot in 0..self.conns.len() {
            let mut any = false;
            while let Some(len) = self.conns[slot]
                .as_ref()
                .and_then(|c| c.delayed.front())
                .filter(|d| d.0 <= now)
                .map(|d| d.1.len())
            {
                // Counted as written when the socket takes them: a connection that goes before
                // its time drops them uncounted, as a server that never wrote them.
                if self.full(slot, len) {
                    break;
                }
                let c = self.conns[slot].as_mut().expect("checked");
                let (_, bytes, delivery) = c.delayed.pop_front().expect("front");
                c.out.extend_from_slice(&bytes);
                if delivery {
                    c.mark(1);
                }
                any = true;
            }
            if any {
                self.dirty.push(slot);
            }
        }
    }

    fn mark(&mut self, slot: usize) {
        self.dirty.push(slot);
    }

    fn read(&mut self, slot: usize) {
        let mut rbuf = std::mem::take(&mut self.rbuf);
        while let Some(c) = self.conns[slot].as_mut() {
            match c.stream.read(&mut rbuf) {
                Ok(0) => {
                    self.drop_conn(slot);
                    break;
                }
                Ok(n) => {
                    self.parts.counters.read(n);
                    c.inbuf.extend_from_slice(&rbuf[..n]);
                    self.lines(slot);
                    let too_long = self.conns[slot]
                        .as_ref()
                        // A WebSocket frame of a whole line is a little longer: its head.
                        .is_some_and(|c| c.inbuf.len() > MAX_LINE + 14);
                    if too_long {
                        self.drop_conn(slot);
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.drop_conn(slot);
                    break;
                }
            }
        }
        self.rbuf = rbuf;
    }

    /// Handle every complete message of the connection's input: lines, or (after an upgrade)
    /// WebSocket frames.
    fn lines(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        if c.wire == Wire::Unknown {
            match c.inbuf.first() {
                None => return,
                Some(b'G') => c.wire = Wire::Upgrade,
                Some(0x80 | 0x88) => c.wire = Wire::Frames,
                Some(_) => c.wire = Wire::Lines,
            }
        }
        if c.wire == Wire::Frames {
            return self.game(slot);
        }
        if c.wire != Wire::Lines {
            return self.frames(slot);
        }
        let input = std::mem::take(&mut c.inbuf);
        let mut start = 0;
        while let Some(n) = memchr::memchr(b'\n', &input[start..]) {
            let line = &input[start..start + n];
            start += n + 1;
            self.handle(slot, line);
            if self.conns[slot].is_none() {
                return;
            }
        }
        if let Some(c) = self.conns[slot].as_mut() {
            c.inbuf = input;
            c.inbuf.drain(..start);
        }
    }

    /// The WebSocket side of [`Self::lines`]: the opening handshake, then every whole frame
    /// (masked client frames; fragments reassembled; pings answered; a close answered and the
    /// connection closed once the answer is written).
    fn frames(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let mut input = std::mem::take(&mut c.inbuf);
        let mut start = 0;
        if c.wire == Wire::Upgrade {
            match handshake::answer(&input, &mut c.out) {
                Upgrade::Partial => {
                    c.inbuf = input;
                    return;
                }
                Upgrade::Refused(_) => {
                    c.closing = true;
                    self.dirty.push(slot);
                    return;
                }
                Upgrade::Upgraded { len } => {
                    c.wire = Wire::Ws;
                    start = len;
                    self.dirty.push(slot);
                }
            }
        }
        loop {
            let Some(c) = self.conns[slot].as_mut() else {
                return;
            };
            if c.closing {
                return; // nothing more is read after a close
            }
            let head = match frame::parse_head(&input[start..]) {
                Parsed::Partial => break,
                Parsed::Fail(code) => return self.ws_close(slot, code),
                Parsed::Head(h) => h,
            };
            if h_too_long(head.len, c.frag.len()) {
                return self.ws_close(slot, frame::TOO_BIG);
            }
            let end = start + head.head_len + head.len as usize;
            if input.len() < end {
                break;
            }
            let payload = &mut input[start + head.head_len..end];
            frame::unmask(payload, head.mask, 0);
            start = end;
            match head.opcode {
                frame::PING => {
                    let len = payload.len();
                    if !self.full(slot, len + 10) {
                        let c = self.conns[slot].as_mut().expect("not full");
                        frame::write_head(&mut c.out, frame::PONG, len);
                        c.out.extend_from_slice(&input[end - len..end]);
                        self.dirty.push(slot);
                    }
                }
                frame::PONG => {}
                frame::CLOSE => {
                    let code = match *payload {
                        [a, b, ..] => u16::from_be_bytes([a, b]),
                        [_] => frame::PROTOCOL_ERROR,
                        [] => 1000,
                    };
                    let code = if frame::valid_close_code(code) {
                        code
                    } else {
                        frame::PROTOCOL_ERROR
                    };
                    return self.ws_close(slot, code);
                }
                // A continuation with nothing to continue, or a new message while one is
                // still arriving in fragments.
                frame::CONTINUATION if c.frag.is_empty() => {
                    return self.ws_close(slot, frame::PROTOCOL_ERROR);
                }
                frame::TEXT | frame::BINARY if !c.frag.is_empty() => {
                    return self.ws_close(slot, frame::PROTOCOL_ERROR);
                }
                _ if head.fin && c.frag.is_empty() => self.handle(slot, payload),
                _ => {
                    c.frag.extend_from_slice(payload);
                    if head.fin {
                        let msg = std::mem::take(&mut c.frag);
                        self.handle(slot, &msg);
                    }
                }
            }
        }
        if let Some(c) = self.conns[slot].as_mut() {
            input.drain(..start);
            c.inbuf = input;
        }
    }

    /// Answers (or starts) the WebSocket closing handshake and closes once that is written.
    fn ws_close(&mut self, slot: usize, code: u16) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        frame::write_head(&mut c.out, frame::CLOSE, 2);
        c.out.extend_from_slice(&code.to_be_bytes());
        c.closing = true;
        self.dirty.push(slot);
    }

    fn handle(&mut self, slot: usize, line: &[u8]) {
        match field(line, b"op") {
            Some(b"login") => self.login(slot, field(line, b"user").unwrap_or(b"")),
            Some(b"pub") => {
                let text = field(line, b"text").unwrap_or(b"").to_vec();
                self.publish(slot, &text);
            }
            Some(b"leave") => self.leave(slot, true),
            _ => self.say(slot, &Say::Error { action: 0, why: "" }),
        }
    }

    /// The game protocol's side of [`Self::lines`]: every whole frame, each a message. A
    /// frame or object that breaks the rules closes the connection (`malformed`).
    fn game(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let input = std::mem::take(&mut c.inbuf);
        let mut start = 0;
        loop {
            let (len, payload) = match frames::frame(&input[start..]) {
                frames::Parsed::Partial => break,
                frames::Parsed::Bad(_) => return self.malformed(slot),
                frames::Parsed::Frame { len, payload } => (len, payload),
            };
            start += len;
            let Ok(obj) = frames::object(payload) else {
                return self.malformed(slot);
            };
            let Ok((action, p)) = frames::message(&obj) else {
                return self.malformed(slot);
            };
            self.act(slot, action, p);
            if self.conns[slot].is_none() {
                return;
            }
        }
        if let Some(c) = self.conns[slot].as_mut() {
            c.inbuf = input;
            c.inbuf.drain(..start);
        }
    }

    /// One message of the game protocol.
    fn act(&mut self, slot: usize, action: i16, p: &frames::Value) {
        use frames::Value;
        match action {
            frames::LOGIN => match p.get("un") {
                Some(Value::Str(user)) => {
                    // A second login moves the user out of its room.
                    self.leave(slot, false);
                    if let Some(c) = self.conns[slot].as_mut() {
                        c.user = String::from_utf8_lossy(user).into();
                    }
                    self.parts.counters.chat(Chat::Logins, 1);
                    self.say(slot, &Say::Login { user });
                }
                _ => self.say(
                    slot,
                    &Say::Error {
                        action,
                        why: "login names the user: {un: string}",
                    },
                ),
            },
            frames::JOIN => {
                if self.conns[slot].as_ref().is_some_and(|c| c.user.is_empty()) {
                    return self.say(
                        slot,
                        &Say::Error {
                            action,
                            why: "login first",
                        },
                    );
                }
                self.leave(slot, false);
                self.join(slot);
            }
            frames::PUBLIC_MESSAGE => match p.get("m") {
                Some(Value::Bytes(m) | Value::Str(m)) => self.publish(slot, m),
                _ => self.say(
                    slot,
                    &Say::Error {
                        action,
                        why: "a message is {m: byte array}",
                    },
                ),
            },
            frames::LEAVE => self.leave(slot, true),
            frames::PING => self.say(slot, &Say::Pong),
            _ => self.say(
                slot,
                &Say::Error {
                    action,
                    why: "unknown action",
                },
            ),
        }
    }

    /// A frame or object that breaks the game protocol's rules: the connection closes.
    fn malformed(&mut self, slot: usize) {
        self.parts.counters.chat(Chat::Malformed, 1);
        self.drop_conn(slot);
    }

    fn say(&mut self, slot: usize, say: &Say) {
        let Some(wire) = self.conns[slot].as_ref().map(|c| c.wire) else {
            return;
        };
        let mut b = std::mem::take(&mut self.sbuf);
        b.clear();
        encode(wire, say, &mut b);
        if !self.full(slot, b.len()) {
            if let Some(c) = self.conns[slot].as_mut() {
                c.out.extend_from_slice(&b);
                self.dirty.push(slot);
            }
        }
        self.sbuf = b;
    }

    /// Whether `slot`'s output has no room for `len` more bytes (or it is gone or closing
    /// as slow): what its socket takes is written first; past `max_queue`, the member is
    /// marked slow and closed at the next flush.
    fn full(&mut self, slot: usize, len: usize) -> bool {
        let cap = self.cfg.max_queue;
        match self.conns[slot].as_ref() {
            None => return true,
            Some(c) if c.slow || c.failed => return true,
            // One message always fits an empty queue.
            Some(c) if c.out.is_empty() || c.out.len() + len <= cap => return false,
            Some(_) => {}
        }
        self.write_out(slot);
        let c = self.conns[slot].as_mut().expect("still there");
        if c.failed {
            self.dirty.push(slot);
            return true;
        }
        if c.out.is_empty() || c.out.len() + len <= cap {
            return false;
        }
        c.slow = true;
        self.dirty.push(slot);
        true
    }

    fn login(&mut self, slot: usize, user: &[u8]) {
        // A second login moves the user: it leaves its room first.
        self.leave(slot, false);
        if let Some(c) = self.conns[slot].as_mut() {
            c.user = String::from_utf8_lossy(user).into();
        }
        self.parts.counters.chat(Chat::Logins, 1);
        self.join(slot);
    }

    /// Put the user in the newest room with a free seat (or a new one), tell it and the room.
    fn join(&mut self, slot: usize) {
        let room = match self.current.filter(|&r| self.rooms[r].open) {
            Some(r) => r,
            None => {
                let span = (self.cfg.room_max - self.cfg.room_min + 1) as u64;
                let cap = self.cfg.room_min + (splitmix(&mut self.rng) % span) as usize;
                self.rooms.push(Room {
                    members: Vec::with_capacity(cap),
                    cap,
                    open: true,
                });
                self.parts.counters.chat(Chat::Rooms, 1);
                self.current = Some(self.rooms.len() - 1);
                self.rooms.len() - 1
            }
        };
        let r = &mut self.rooms[room];
        r.members.push(slot);
        if r.members.len() >= r.cap {
            r.open = false;
        }
        let (size, cap) = (r.members.len(), r.cap);
        if let Some(c) = self.conns[slot].as_mut() {
            c.room = Some(room);
        }
        self.say(slot, &Say::Joined { room, size, cap });
        self.members_changed(room, slot);
    }

    /// Tell the members of `room` other than `except` its size now.
    fn members_changed(&mut self, room: usize, except: usize) {
        let size = self.rooms[room].members.len();
        let others: Vec<usize> = self.rooms[room]
            .members
            .iter()
            .copied()
            .filter(|&m| m != except)
            .collect();
        for m in others {
            self.say(m, &Say::Member { room, size });
            self.parts.counters.chat(Chat::MemberPushes, 1);
        }
    }

    fn publish(&mut self, slot: usize, text: &[u8]) {
        let Some(c) = self.conns[slot].as_ref() else {
            return;
        };
        let Some(room) = c.room else {
            let action = frames::PUBLIC_MESSAGE;
            return self.say(
                slot,
                &Say::Error {
                    action,
                    why: "login first",
                },
            );
        };
        self.parts.counters.chat(Chat::MessagesIn, 1);
        let (from, user) = (c.id, c.user.clone());
        let members = self.rooms[room].members.clone();
        let mut msg = Vec::new();
        for m in members {
            if m == slot && !self.cfg.self_delivery {
                continue;
            }
            // Encoded for the member's wire (a room may mix lines, WebSocket and frames).
            let Some(wire) = self.conns[m].as_ref().map(|c| c.wire) else {
                continue;
            };
            msg.clear();
            encode(
                wire,
                &Say::Msg {
                    room,
                    from: &user,
                    text,
                },
                &mut msg,
            );
            self.deliver(m, from, &msg);
        }
    }

    /// One delivery to member `m` of a message from connection `from`, through the fault
    /// knobs.
    fn deliver(&mut self, m: usize, from: u64, msg: &[u8]) {
        if self.chance(self.cfg.drop) {
            self.parts.counters.chat(Chat::Dropped, 1);
            return;
        }
        let copies = if self.chance(self.cfg.dup) {
            self.parts.counters.chat(Chat::Duplicated, 1);
            2
        } else {
            1
        };
        let hold = self.chance(self.cfg.reorder);
        let delay = self.cfg.delay;
        let held = self.conns[m].as_ref().and_then(|c| c.held.as_ref());
        // Held back now (below): nothing is queued for the socket yet.
        let holds = hold && held.is_none();
        let held_len = held.filter(|h| h.0 == from).map_or(0, |h| h.1.len());
        if delay.is_none() && !holds && self.full(m, copies * (msg.len() + 10) + held_len) {
            if self.conns[m].as_ref().is_some_and(|c| c.slow) {
                self.parts.counters.chat(Chat::SlowDropped, copies as u64);
            }
            return;
        }
        let Some(c) = self.conns[m].as_mut() else {
            return;
        };
        if let Some(d) = delay {
            // Delayed deliveries keep their order; the other knobs still applied above. They are
            // counted as deliveries out when their time comes (release_due).
            let due = std::time::Instant::now() + d;
            for _ in 0..copies {
                c.delayed.push_back((due, msg.to_vec(), true));
            }
            return;
        }
        if holds {
            // Sent after the next delivery from the same sender to this member (or, not
            // reordered after all, before its `bye`).
            let mut framed = Vec::with_capacity(copies * msg.len());
            for _ in 0..copies {
                framed.extend_from_slice(msg);
            }
            c.held = Some((from, framed, copies as u64));
            return;
        }
        for _ in 0..copies {
            c.out.extend_from_slice(msg);
            c.mark(1);
        }
        if c.held.as_ref().is_some_and(|h| h.0 == from) {
            let (_, h, n) = c.held.take().expect("held");
            c.out.extend_from_slice(&h);
            c.mark(n);
            // Counted when it happened: the member got a later message of this sender
            // before this one.
            self.parts.counters.chat(Chat::Reordered, 1);
        }
        self.dirty.push(m);
    }

    /// Leave the room; `reply`: answer `bye` and close once it is written.
    fn leave(&mut self, slot: usize, reply: bool) {
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        let room = c.room.take();
        if let Some((_, h, n)) = c.held.take() {
            c.out.extend_from_slice(&h);
            c.mark(n);
        }
        if reply {
            self.parts.counters.chat(Chat::Leaves, 1);
            if let Some(&(due, ..)) = c.delayed.back() {
                // The delay knob: `bye` comes after the deliveries still owed, as from a
                // server whose every write is late.
                let mut bye = Vec::new();
                encode(c.wire, &Say::Bye, &mut bye);
                c.delayed.push_back((due, bye, false));
            } else {
                encode(c.wire, &Say::Bye, &mut c.out);
                self.dirty.push(slot);
            }
        }
        if let Some(r) = room {
            self.rooms[r].members.retain(|&m| m != slot);
            self.members_changed(r, slot);
        }
    }

    fn flush_dirty(&mut self) {
        // A connection that closes while flushing tells its room: flush those members too.
        while !self.dirty.is_empty() {
            let mut dirty = std::mem::take(&mut self.dirty);
            dirty.sort_unstable();
            dirty.dedup();
            for &slot in &dirty {
                self.flush(slot);
            }
            dirty.clear();
            if self.dirty.is_empty() {
                self.dirty = dirty; // keep the allocation
            }
        }
    }

    /// Writes what the socket takes of `slot`'s output. Deliveries are counted out as their
    /// last byte is taken: optimistically before the write, corrected after it (the rule of
    /// `stats.rs`: a client that has read a delivery finds it counted). A failed write sets
    /// `failed`.
    fn write_out(&mut self, slot: usize) {
        let counters: &CounterWriter = &self.parts.counters;
        let Some(c) = self.conns[slot].as_mut() else {
            return;
        };
        counters.chat_peak(Chat::QueuePeakBytes, c.out.len() as u64);
        while !c.out.is_empty() && !c.failed {
            let len = c.out.len();
            let stream = &mut c.stream;
            let out = &c.out;
            let all = c.queued;
            counters.chat(Chat::DeliveriesOut, all);
            let wrote = match counters.counted_write(len, || stream.write(out)) {
                Ok(n) => n,
                Err(e) => {
                    counters.chat_undo(Chat::DeliveriesOut, all);
                    match e.kind() {
                        io::ErrorKind::Interrupted => continue,
                        io::ErrorKind::WouldBlock => {}
                        _ => c.failed = true,
                    }
                    break;
                }
            };
            c.sent += wrote as u64;
            c.out.drain(..wrote);
            while let Some(&(end, n)) = c.marks.front() {
                if end > c.sent {
                    break;
                }
                c.marks.pop_front();
                c.queued -= n;
            }
            counters.chat_undo(Chat::DeliveriesOut, c.queued);
            if wrote == 0 && len > 0 {
                break;
            }
        }
    }

    fn flush(&mut self, slot: usize) {
        self.write_out(slot);
        let Some(c) = self.conns[slot].as_ref() else {
            return;
        };
        if c.slow {
            // Its deliveries still owed are dropped with it (a partly written one too).
            let owed = c.owed();
            self.parts.counters.chat(Chat::SlowDisconnects, 1);
            self.parts.counters.chat(Chat::SlowDropped, owed);
            self.drop_conn(slot);
        } else if c.failed || (c.closing && c.out.is_empty()) {
            self.drop_conn(slot);
        }
    }

    fn drop_conn(&mut self, slot: usize) {
        self.leave(slot, false);
        if let Some(mut c) = self.conns[slot].take() {
            let _ = self.parts.poll.registry().deregister(&mut c.stream);
            self.parts.counters.closed();
            self.free.push(slot);
        }
    }
}
