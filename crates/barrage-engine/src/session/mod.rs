//! The protocol seam: what a protocol must say, and nothing the engine already does.
//!
//! The worker owns everything every protocol shares: the event loop, connecting with backoff
//! and pacing, the transport (plain TCP or TLS), timers and timeouts, the script (what to send
//! when: opening messages, a closed-loop window with think times, an open-loop schedule),
//! the exchanges in flight and recording. A protocol is one [`Session`] impl: the state one
//! connection keeps for it, how it opens (a handshake to send and await, or none), how it
//! renders a request, how it decodes input into completed exchanges (by key), and what an end
//! of input means. A connection holds only its own protocol's session (the worker is generic
//! over it), so a raw TCP connection carries no HTTP or WebSocket state.
//!
//! Sessions are sans-IO: they append bytes to buffers and read byte slices; the worker does
//! every system call. Adding a protocol: see ARCHITECTURE.md, "How to add a protocol".

use crate::exchange::{Exchange, Exchanges, OPENING};
use crate::message::Fill;
use crate::pacer::Rng;
use crate::plan::Plan;
use barrage_metrics::{ErrorClass, Recorder};
use std::collections::VecDeque;

pub mod h2;
pub mod http;
pub mod https;
pub mod memcache;
pub mod mqtt;
pub mod redis;
pub mod tcp;
pub mod ws;

/// Which message a script step sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Msg {
    /// Message `i` of the opening (the login, `--first-message`).
    Opening(u16),
    /// The load's request (a session with a command mix picks one by the sequence number).
    Load,
}

/// What a session rendered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rendered {
    /// Bytes an echo reply has (the payload, without protocol framing).
    pub len: u32,
    /// What was sent: the index of the command in the session's mix (0 without a mix).
    pub step: u16,
}

/// Where a session writes: the buffer, the worker's random numbers (WebSocket masks, keys),
/// and under `--verify` the queue of bytes the echo must match.
pub struct Out<'a> {
    pub buf: &'a mut Vec<u8>,
    /// The connection's number (`{conn}`: an MQTT client id is made from it).
    pub conn: u64,
    /// The key of the exchange this request opens (protocols whose replies carry a request
    /// id or stream id send it, and complete the exchange by it: [`Replies::complete_key`]);
    /// 0 for a handshake or a goodbye.
    pub key: u64,
    pub rng: &'a mut Rng,
    pub keep: Option<&'a mut VecDeque<u8>>,
    /// A scenario step's gRPC call is server streaming: its reply may be many messages
    /// (each timed from the call), not exactly one.
    pub streaming: bool,
}

impl Out<'_> {
    /// Under `--verify` with a dynamic message: remember `bytes` as what the echo must be.
    pub fn keep(&mut self, bytes: std::ops::Range<usize>) {
        if let Some(k) = self.keep.as_deref_mut() {
            k.extend(&self.buf[bytes]);
        }
    }
}

impl Rendered {
    /// A request of `len` bytes sent for command `step` of a mix.
    pub fn command(len: usize, step: usize) -> Self {
        Self {
            len: len as u32,
            step: step as u16,
        }
    }
}

/// A request of a command mix (redis, memcached): rendered, or written from its template
/// when its command has no placeholder.
fn mix_request(
    commands: &crate::command::Commands,
    msg: Msg,
    seq: u64,
) -> Option<(&[u8], Rendered)> {
    if msg != Msg::Load {
        return None;
    }
    let (bytes, i) = commands.fixed(seq)?;
    Some((bytes, Rendered::command(bytes.len(), i)))
}

/// For decoders that report whole replies but not where they end (RESP, memcached): when a
/// user's step looks into replies, feed the input a byte at a time, each byte handed to the
/// reply being collected first, so a reply's bytes are exactly its own. Scenario users send
/// at human rates; the load path (nobody collecting) feeds whole slices.
pub(crate) fn feed_collecting(
    data: &[u8],
    r: &mut Replies,
    mut feed: impl FnMut(&[u8], &mut Replies) -> Result<(), ProtoError>,
) -> Result<(), ProtoError> {
    if !r.collecting() {
        return feed(data, r);
    }
    for i in 0..data.len() {
        r.body(&data[i..=i]);
        feed(&data[i..=i], r)?;
    }
    Ok(())
}

/// Successful replies in a row, not yet counted: a decoder's sink adds each one here, and
/// they are counted together ([`Replies::complete_n`]) when a reply of another kind comes or
/// the input ends. A pipelined batch of like replies then costs one count, not one per reply.
#[derive(Default)]
pub(crate) struct OkRun {
    n: u32,
    miss: bool,
}

impl OkRun {
    /// One more successful reply; `miss` when it found nothing.
    #[inline]
    pub fn add(&mut self, r: &mut Replies, miss: bool) {
        if self.n > 0 && self.miss != miss {
            self.flush(r);
        }
        self.miss = miss;
        self.n += 1;
    }

    /// Count what is pending: before a reply of another kind, and at the end of the input.
    #[inline]
    pub fn flush(&mut self, r: &mut Replies) {
        if self.n > 0 {
            r.complete_n(self.n, self.miss);
            self.n = 0;
        }
    }
}

/// A protocol error in what the server sent: the connection fails with class `Protocol`
/// (or the class a session names: a script's error is `script.error`).
#[derive(Debug)]
pub struct ProtoError {
    pub why: String,
    /// The server answered a plain-text client with TLS: the target needs https:// or wss://.
    pub tls_answer: bool,
    pub class: ErrorClass,
}

impl ProtoError {
    pub fn new(why: impl std::fmt::Display) -> Self {
        Self::of(ErrorClass::Protocol, why)
    }

    /// The connection fails with `class`.
    pub fn of(class: ErrorClass, why: impl std::fmt::Display) -> Self {
        Self {
            why: why.to_string(),
            tls_answer: false,
            class,
        }
    }
}

/// How a session wants its connection to end, after the input it decoded.
#[derive(Debug, PartialEq, Eq)]
pub enum Close {
    /// A graceful end (HTTP `Connection: close` after the last response): reconnect at once.
    Graceful,
    /// A failure of this class (a WebSocket close frame).
    Fail(ErrorClass, String),
    /// A graceful end before the connection served anything (an HTTP/2 GOAWAY right after
    /// the handshake): reconnect after the backoff, as after a failure, so a server that
    /// turns every connection away gets no storm of connects.
    TurnedAway,
}

/// One protocol.
pub trait Session: Sized + Send + 'static {
    /// What every connection of a run shares: compiled templates, commands, limits.
    type Cfg: Send + Sync + 'static;

    fn config(plan: &Plan) -> Self::Cfg;
    fn new(cfg: &Self::Cfg) -> Self;
    /// Forget what was tied to a broken connection (before a reconnect).
    fn reset(&mut self, cfg: &Self::Cfg);

    /// The transport is up, and TLS said which protocol the server chose by ALPN (`None` in
    /// plain text): a session that speaks more than one picks here, one that needs a certain
    /// one refuses another. Called before [`Session::open`].
    fn negotiated(
        &mut self,
        _cfg: &Self::Cfg,
        _alpn: Option<&[u8]>,
        _rec: &mut Recorder,
    ) -> Result<(), ProtoError> {
        Ok(())
    }

    /// The transport is up: append the protocol's handshake to `out` (none by default).
    /// Returns true when its answer must be awaited: `input` then calls
    /// [`Replies::handshake_done`].
    fn open(&mut self, _cfg: &Self::Cfg, _out: &mut Out) -> Result<bool, ProtoError> {
        Ok(false)
    }

    /// A scenario step's message was rendered into `out.buf[start..]`: frame it as the
    /// protocol sends a message (a WebSocket frame; raw bytes and HTTP requests as they are).
    /// Returns the length an echo of it has.
    fn frame_step(&mut self, _cfg: &Self::Cfg, out: &mut Out, start: usize) -> u32 {
        (out.buf.len() - start) as u32
    }

    /// How many more exchanges the connection can open now (HTTP/2: the streams the server
    /// allows, less those in flight); what is owed beyond it waits for an exchange to end.
    fn room(&self, _cfg: &Self::Cfg) -> u64 {
        u64::MAX
    }

    /// Messages of an open loop fell due while [`Session::room`] said none could go: count
    /// them as the protocol names that limit (HTTP/2: waits for a stream).
    fn waited_for_room(_rec: &mut Recorder, _n: u64) {}

    /// Request ids taken from the exchange keys in a ring of this many (MQTT's 65,535 packet
    /// ids; 0: none): the worker opens no exchange whose id the oldest one in flight still
    /// holds.
    const KEY_RING: u64 = 0;

    /// Append one request to `out.buf`.
    fn render(&mut self, cfg: &Self::Cfg, msg: Msg, fill: Fill, out: &mut Out) -> Rendered;

    /// A request could not be rendered (a script's `request` raised an error): the worker
    /// asks after each batch it rendered, and fails the connection with this error instead
    /// of writing the batch (what it opened fails with the class).
    fn failed(&mut self) -> Option<ProtoError> {
        None
    }

    /// Whether one exchange can be given up on alone (HTTP/2: RST_STREAM with CANCEL), so that
    /// a timeout fails that exchange and the connection carries the others on.
    fn cancels(&self) -> bool {
        false
    }

    /// Give up on the exchange with this key ([`Session::cancels`]): forget it, and append to
    /// `ctl` what tells the server. Returns whether the connection has nothing left to do
    /// (HTTP/2: its last stream after a GOAWAY), so that it is closed and opened again.
    fn cancel(&mut self, _cfg: &Self::Cfg, _key: u64, _ctl: &mut Vec<u8>) -> bool {
        false
    }

    /// Hand over what the session counted where no recorder was at hand (HTTP/2's frames
    /// written while rendering): the worker calls it before a connection is reset and when
    /// the run ends.
    fn counts(&mut self, _rec: &mut barrage_metrics::Recorder) {}

    /// The wire bytes of request `seq` when they are the same every time (sent with no
    /// copy), and what rendering them would have said.
    fn static_request(_cfg: &Self::Cfg, _msg: Msg, _seq: u64) -> Option<(&[u8], Rendered)> {
        None
    }

    /// Bytes received: complete exchanges through `r`.
    fn input(&mut self, cfg: &Self::Cfg, data: &[u8], r: &mut Replies) -> Result<(), ProtoError>;

    /// The server closed the connection. `Ok(true)`: a graceful end that completed the
    /// exchange it framed; `Ok(false)`: the connection was lost.
    fn eof(&mut self, _cfg: &Self::Cfg, _r: &mut Replies) -> Result<bool, ProtoError> {
        Ok(false)
    }

    /// Bytes to send when the run closes a healthy connection (a WebSocket close frame).
    fn goodbye(&mut self, _cfg: &Self::Cfg, _out: &mut Out) {}

    /// A control answer (`ctl`, a pong) the socket had no room for: kept, the latest only,
    /// and written once it drains ([`Session::take_owed`]). Others than WebSocket have none.
    fn owe(&mut self, _ctl: &[u8]) {}

    /// The control answer kept by [`Session::owe`], to write now.
    fn take_owed(&mut self) -> Option<Box<[u8]>> {
        None
    }

    /// Append what [`Session::owe`] kept to `out` and forget it, keeping the session's buffer
    /// (no allocation: HTTP/2 sends its control answers this way with the next request).
    fn drain_owed(&mut self, out: &mut Vec<u8>) {
        if let Some(k) = self.take_owed() {
            out.extend_from_slice(&k);
        }
    }

    /// What [`Session::owe`] kept must go out before newer control bytes, not be replaced by
    /// them (HTTP/2: every acknowledgement and window update counts; a WebSocket pong does not).
    /// Such a session's control answers also wait for the requests its replies free, and go
    /// out in the same write (an HTTP/2 PING answered with the next request: one system call,
    /// not two); what no request takes is written when the connection's events are done.
    const OWED_IN_ORDER: bool = false;

    /// How often [`Session::tick`] runs on a connection that is up (after its handshake),
    /// in nanoseconds: a keep-alive (MQTT's PINGREQ). `None`: never.
    fn tick_ns(&self, _cfg: &Self::Cfg) -> Option<u64> {
        None
    }

    /// The time of the connection's pending tick (`u64::MAX`: none), kept by the session so
    /// that a connection of a protocol without ticks carries no field for it; a timer entry
    /// at another time is stale (an earlier connection's).
    fn tick_at(&self) -> u64 {
        u64::MAX
    }

    fn set_tick_at(&mut self, _at: u64) {}

    /// An answer is awaited that no exchange stands for (MQTT: the PINGRESP to a PINGREQ):
    /// on virtual time the clock waits for a quiet moment before it jumps, as for a reply.
    fn awaits_answer(&self) -> bool {
        false
    }

    /// A keep-alive tick: append to `out` what keeps the connection alive (written as
    /// control bytes, not an exchange). `Err`: the connection is dead (no answer to the last
    /// keep-alive) and fails as `timeout` with this message.
    fn tick(
        &mut self,
        _cfg: &Self::Cfg,
        _out: &mut Vec<u8>,
        _rec: &mut Recorder,
    ) -> Result<(), String> {
        Ok(())
    }

    /// Requests are a mix of commands: counted per command (`Rendered::step`).
    const COMMANDS: bool = false;

    /// Exchanges complete when their request is written (`--expect none`): no replies.
    fn completes_on_write(_cfg: &Self::Cfg) -> bool {
        false
    }
}

/// Under `--verify`: what the echo of the exchanges in flight must be.
#[derive(Debug, Default)]
pub struct Verify {
    /// Bytes sent and not yet echoed (dynamic messages, the opening message).
    pub pending: VecDeque<u8>,
    /// Static message: offset into it of the next echoed byte.
    pub off: usize,
    pub bad: bool,
}

/// The context a session completes exchanges through, for one batch of input.
pub struct Replies<'a> {
    pub ex: &'a mut Exchanges,
    pub verify: Option<&'a mut Verify>,
    pub rec: &'a mut Recorder,
    pub now: u64,
    /// `--verify` against this static message (empty when not verifying or dynamic).
    pub verify_static: &'a [u8],
    pub closed_loop: bool,
    /// Control bytes to write after this input (pongs, close answers).
    pub ctl: &'a mut Vec<u8>,
    pub rng: &'a mut Rng,
    // What the input did, for the worker to act on.
    /// The opening's last reply arrived.
    pub opening_done: bool,
    /// Closed loop: window slots freed by completed exchanges.
    pub freed: u32,
    /// Something useful happened (a completed exchange or handshake): backoff starts over.
    pub useful: bool,
    /// The protocol handshake completed, consuming this many bytes of the input.
    pub handshake: Option<usize>,
    pub close: Option<Close>,
    /// A scenario's user: its replies are matched, captured from and counted per step.
    pub user: Option<crate::users::UserCtx<'a>>,
    /// The server's own time for the reply being completed (HTTP `Server-Timing`).
    pub server_ns: Option<u64>,
}

impl<'a> Replies<'a> {
    /// The context for one batch of input; what it did starts empty.
    #[allow(clippy::too_many_arguments)] // the borrowed parts of a connection and its worker
    pub fn new(
        ex: &'a mut Exchanges,
        verify: Option<&'a mut Verify>,
        rec: &'a mut Recorder,
        now: u64,
        verify_static: &'a [u8],
        closed_loop: bool,
        ctl: &'a mut Vec<u8>,
        rng: &'a mut Rng,
    ) -> Self {
        Self {
            ex,
            verify,
            rec,
            now,
            verify_static,
            closed_loop,
            ctl,
            rng,
            opening_done: false,
            freed: 0,
            useful: false,
            handshake: None,
            close: None,
            user: None,
            server_ns: None,
        }
    }

    /// Bytes of the reply being decoded (a frame's payload, a message, an HTTP body): checked
    /// under `--verify`, and collected when a user's step looks into its reply.
    #[inline]
    pub fn body(&mut self, bytes: &[u8]) {
        self.verify_body(bytes);
        if let Some(u) = self.user.as_mut() {
            if u.prog.collect {
                let room = crate::users::MAX_REPLY.saturating_sub(u.st.reply.len());
                u.st.reply
                    .extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
        }
    }

    /// HTTP: a response header of the exchange at the front (a user's step may capture it).
    pub fn header(&mut self, name: &[u8], value: &[u8]) {
        let Some(u) = self.user.as_mut() else { return };
        let Some(f) = self.ex.front() else { return };
        let Some(step) = u.prog.steps.get(f.step as usize) else {
            return;
        };
        for (slot, h) in step.header_captures.iter() {
            if name.eq_ignore_ascii_case(h.as_bytes()) {
                u.st.vars.set(*slot, value);
            }
        }
        if let Some(crate::users::ServerTimeFrom::Header(h)) = &step.server_time {
            if name.eq_ignore_ascii_case(h.as_bytes()) {
                if let Some(ns) = crate::users::parse_server_time(value) {
                    self.server_ns = Some(ns);
                }
            }
        }
    }

    /// HTTP: whether `status` is a success for the exchange at the front: its step's status
    /// set for a user, else `default`.
    pub fn status_ok(&mut self, status: u16, default: &crate::plan::StatusSet) -> bool {
        if let Some(u) = self.user.as_mut() {
            u.st.status = status;
            let step = self
                .ex
                .front()
                .and_then(|f| u.prog.steps.get(f.step as usize));
            if let Some(set) = step.and_then(|s| s.status.as_ref()) {
                return set.contains(status);
            }
        }
        default.contains(status)
    }

    /// Whether a user's step looks into replies (their bytes are wanted by `body`).
    #[inline]
    pub fn collecting(&self) -> bool {
        self.user.as_ref().is_some_and(|u| u.prog.collect)
    }

    /// Whether a user's replies are being judged (a scenario run).
    #[inline]
    pub fn is_user(&self) -> bool {
        self.user.is_some()
    }

    /// A scenario file's user: its steps judge their replies (not the flags' load program
    /// that `--conn-stages` runs as users).
    pub fn scenario_user(&self) -> bool {
        self.user.as_ref().is_some_and(|u| {
            !matches!(
                u.prog.steps.first().map(|s| &s.msg),
                Some(crate::users::StepMsg::Load)
            )
        })
    }

    /// A user's message is complete: an `on` rule's push, a reply that does not match the
    /// awaited step (message protocols: a push, and the step waits on), or the reply of the
    /// exchange at the front, matched and captured from.
    fn complete_user(&mut self, bad: Option<ErrorClass>) -> Option<Exchange> {
        self.rec.counters.replies += 1;
        let u = self.user.as_mut().expect("a user");
        let msg = std::mem::take(&mut u.st.reply);
        let out = self.judge_user(&msg, bad);
        let u = self.user.as_mut().expect("a user");
        u.st.reply = msg;
        u.st.reply.clear();
        // A server time goes with the reply that carried it, whether or not it completed an
        // exchange (a push, an unasked reply): never into the next one.
        self.server_ns = None;
        out
    }

    /// A message the server pushed out of band (RESP3 `>` pushes: pub/sub messages and
    /// subscribe confirmations), never a reply: for a user, its stamps are deliveries and its
    /// `on` rules apply; otherwise it is ignored, as before.
    pub fn push(&mut self) {
        let Some(u) = self.user.as_mut() else { return };
        let msg = std::mem::take(&mut u.st.reply);
        self.deliveries(&msg);
        let u = self.user.as_mut().expect("a user");
        for (i, rule) in u.prog.on.iter().enumerate() {
            if rule.matcher.matches(&msg) {
                for (slot, c) in rule.captures.iter() {
                    u.st.vars.capture(*slot, c, &msg);
                }
                if rule.reply.is_some() {
                    u.st.pushes.push(i as u16);
                }
                // Counted as what an `on` rule took (a delivery no rule matched is not).
                self.rec.counters.pushed += 1;
                break;
            }
        }
        let u = self.user.as_mut().expect("a user");
        u.st.reply = msg;
        u.st.reply.clear();
    }

    /// Broadcast: every stamp in a message a user received is a delivery (counted once per
    /// stamp and receiver, timed from its send). Returns whether there was one.
    fn deliveries(&mut self, msg: &[u8]) -> bool {
        let u = self.user.as_mut().expect("a user");
        if u.prog.stamp_slot.is_none() {
            return false;
        }
        let now_us = u.wall_base_us + self.now / 1000;
        let (gid, rec) = (u.gid, &mut *self.rec);
        let windows = &mut u.st.windows;
        let mut any = false;
        crate::users::stamp::scan_form(u.prog.stamp_form, msg, |s| {
            any = true;
            use crate::users::stamp::Arrival;
            let arrival = windows.arrive(s.user, s.seq);
            if arrival == Arrival::First {
                // Once per sender a receiver hears: the two are in one room.
                rec.heard(s.user, gid as u32);
            }
            let b = &mut rec.counters.broadcast;
            let first = match arrival {
                Arrival::First => true,
                Arrival::InOrder { gap } => {
                    b.gaps += u64::from(gap);
                    true
                }
                Arrival::Late => {
                    b.late += 1;
                    true
                }
                Arrival::BeforeStart => {
                    // Counted as the gap it fills, so that `lost` (gaps not filled) holds.
                    b.gaps += 1;
                    b.late += 1;
                    true
                }
                Arrival::TooOld => {
                    b.too_old += 1;
                    true
                }
                Arrival::Duplicate => {
                    b.duplicates += 1;
                    false
                }
            };
            let remote = s.shard != u.prog.shard;
            if first && remote && !u.prog.one_clock {
                // From another process (a shard of a split run), whose clock is not known to
                // agree with this one: counted, and timed apart on the two clocks; a merge
                // shows that time only if the clocks are known to agree closely enough.
                b.delivered += 1;
                b.remote += 1;
                let us = now_us.saturating_sub(s.ts_us & ((1 << 56) - 1));
                rec.bcast_remote.record_ns(us.saturating_mul(1000));
            } else if first {
                if remote {
                    b.remote += 1;
                }
                b.delivered += 1;
                let own = u64::from(s.user) == gid & 0xffff_ffff;
                if own {
                    b.own += 1;
                }
                let us = now_us.saturating_sub(s.ts_us & ((1 << 56) - 1));
                rec.msg_delivered((u64::from(s.user) << 32) | u64::from(s.seq), us);
                if own {
                    rec.bcast_own.record_ns(us.saturating_mul(1000));
                } else {
                    rec.bcast_peer.record_ns(us.saturating_mul(1000));
                }
            }
        });
        any
    }

    fn judge_user(&mut self, msg: &[u8], bad: Option<ErrorClass>) -> Option<Exchange> {
        let stamped = self.deliveries(msg);
        let u = self.user.as_mut().expect("a user");
        let prog = u.prog;
        for (i, rule) in prog.on.iter().enumerate() {
            if rule.matcher.matches(msg) {
                for (slot, c) in rule.captures.iter() {
                    u.st.vars.capture(*slot, c, msg);
                }
                if rule.reply.is_some() {
                    u.st.pushes.push(i as u16);
                }
                self.rec.counters.pushed += 1;
                return None;
            }
        }
        // A delivery nobody awaits is not an unexpected reply.
        let unasked = u64::from(!stamped);
        let Some(front) = self.ex.front().copied() else {
            self.rec.counters.unexpected += unasked;
            return None;
        };
        let Some(step) = prog.steps.get(front.step as usize) else {
            self.rec.counters.unexpected += unasked;
            return None;
        };
        let mut bad = bad;
        // A gRPC call's reply is looked into as JSON, decoded with its method's descriptors;
        // one that does not decode as the method's output is not what the step expects.
        let decoded;
        let msg: &[u8] = match (&step.decode, bad) {
            (Some(d), None) => match (d.0)(msg) {
                Ok(json) => {
                    decoded = json;
                    &decoded
                }
                Err(_) => {
                    bad = Some(ErrorClass::Mismatch);
                    msg
                }
            },
            _ => msg,
        };
        if bad.is_none() {
            if let Some(m) = &step.expect {
                if !m.matches(msg) {
                    if u.skip_unmatched {
                        self.rec.counters.unexpected += unasked;
                        return None;
                    }
                    bad = Some(ErrorClass::Mismatch);
                }
            }
        }
        if let (None, Some(f), Some(h)) = (bad, &step.check, u.hook) {
            use crate::hook::Check;
            match h.check(f, u.gid, msg) {
                Ok(Check::Right) => {}
                // Not this step's reply: a push, as for `expect` (the step waits on).
                Ok(Check::NotThis) if u.skip_unmatched => {
                    self.rec.counters.unexpected += unasked;
                    return None;
                }
                Ok(Check::NotThis) => bad = Some(ErrorClass::Mismatch),
                Ok(Check::Fail(class)) => bad = Some(class),
                Err(_) => bad = Some(ErrorClass::ScriptError),
            }
        }
        if let Some(crate::users::ServerTimeFrom::Json(p)) = &step.server_time {
            if let Some(ns) = p
                .find(msg)
                .and_then(|(s, e)| crate::users::parse_server_time(&msg[s..e]))
            {
                self.server_ns = Some(ns);
            }
        }
        if bad.is_none() {
            for (slot, c) in step.captures.iter() {
                if !u.st.vars.capture(*slot, c, msg) {
                    self.rec.steps.capture_miss(front.step as usize);
                }
            }
        }
        if u.st.await_key == front.key {
            u.st.step_done = true;
        }
        let ex = self.ex.pop_front()?;
        self.finish(&ex, bad);
        Some(ex)
    }

    /// Whether replies are checked against the request (`--verify`).
    #[inline]
    pub fn verifying(&self) -> bool {
        self.verify.is_some()
    }

    /// Reply bytes of the exchange at the front, checked under `--verify`.
    pub fn verify_body(&mut self, bytes: &[u8]) {
        let Some(v) = self.verify.as_deref_mut() else {
            return;
        };
        let opening = self.ex.front().is_some_and(|e| e.step == OPENING);
        if !self.verify_static.is_empty() && !opening {
            let end = v.off + bytes.len();
            if self.verify_static.get(v.off..end) != Some(bytes) {
                v.bad = true;
            }
            v.off = end;
        } else {
            for &b in bytes {
                if v.pending.pop_front() != Some(b) {
                    v.bad = true;
                }
            }
        }
    }

    /// The reply of the front exchange does not match it (under `--verify`).
    pub fn mismatch(&mut self) {
        if let Some(v) = self.verify.as_deref_mut() {
            v.bad = true;
        }
    }

    /// The exchange at the front got its reply: completed, or failed with `bad`. A reply
    /// with nothing in flight is counted as unexpected. Returns the step of the exchange
    /// (what [`Replies::count_command`] takes): only the step, so that the whole exchange
    /// is not copied out through the stack once per reply.
    #[inline]
    pub fn complete(&mut self, bad: Option<ErrorClass>) -> Option<u16> {
        if self.user.is_some() {
            return self.complete_user(bad).map(|ex| ex.step);
        }
        self.rec.counters.replies += 1;
        let Some(ex) = self.ex.pop_front() else {
            self.rec.counters.unexpected += 1;
            self.server_ns = None; // an unasked reply's server time is no one's
            return None;
        };
        self.finish(&ex, bad);
        Some(ex.step)
    }

    /// `n` replies in a row, each completing the exchange at the front without an error;
    /// `miss`: each found nothing. Counted exactly as `n` calls of [`Replies::complete`] and
    /// [`Replies::count_command`] would count them, but a pipelined batch of like exchanges
    /// (a run, see [`Exchanges::pop_run`]) is counted once with its size. Scenario users,
    /// `--verify` and server timing take the one-by-one path.
    pub fn complete_n(&mut self, mut n: u32, miss: bool) {
        if self.user.is_some() {
            for _ in 0..n {
                if let Some(step) = self.complete(None) {
                    self.count_command(step, miss, false);
                }
            }
            return;
        }
        // `--verify` and server timing are per reply: one exchange at a time.
        let per_reply = self.verify.is_some() || self.server_ns.is_some();
        while n > 0 {
            let Some((ex, k)) = self.ex.pop_run(if per_reply { 1 } else { n }) else {
                self.rec.counters.replies += u64::from(n);
                self.rec.counters.unexpected += u64::from(n);
                return;
            };
            n -= k;
            self.rec.counters.replies += u64::from(k);
            self.finish_n(&ex, None, u64::from(k));
            self.count_command_n(ex.step, miss, false, u64::from(k));
        }
    }

    /// The exchange with this key got its reply (protocols whose replies carry a key).
    /// A scenario user's exchange at the front ended with an acknowledgement that carries
    /// nothing to look into (MQTT's PUBACK, SUBACK): no `on` rule, `expect` or capture is run
    /// on it, only the step's accounting.
    pub fn complete_ack(&mut self, bad: Option<ErrorClass>) -> Option<Exchange> {
        self.rec.counters.replies += 1;
        let front = self.ex.front().copied();
        if let (Some(u), Some(f)) = (self.user.as_mut(), front) {
            if u.st.await_key == f.key {
                u.st.step_done = true;
            }
        }
        let Some(ex) = self.ex.pop_front() else {
            self.rec.counters.unexpected += 1;
            return None;
        };
        self.finish(&ex, bad);
        Some(ex)
    }

    pub fn complete_key(&mut self, key: u64, bad: Option<ErrorClass>) -> Option<Exchange> {
        self.rec.counters.replies += 1;
        let Some(ex) = self.ex.complete(key) else {
            self.rec.counters.unexpected += 1;
            return None;
        };
        self.finish(&ex, bad);
        Some(ex)
    }

    #[inline]
    fn finish(&mut self, ex: &Exchange, bad: Option<ErrorClass>) {
        self.finish_n(ex, bad, 1);
    }

    /// `k` exchanges like `ex` got their replies ([`Exchanges::pop_run`]). What is judged or
    /// recorded per reply (`--verify`, server timing, a scenario user's step) takes `k == 1`.
    #[inline]
    fn finish_n(&mut self, ex: &Exchange, bad: Option<ErrorClass>, k: u64) {
        debug_assert!(
            k == 1 || (self.verify.is_none() && self.server_ns.is_none() && self.user.is_none())
        );
        let mismatch = match self.verify.as_deref_mut() {
            Some(v) => {
                v.off = 0;
                std::mem::take(&mut v.bad)
            }
            None => false,
        };
        if ex.step == OPENING {
            self.opening_done = self.ex.front().is_none_or(|e| e.step != OPENING);
            self.useful = true; // a login answered is useful work: the backoff starts over
            return;
        }
        self.rec.in_flight -= k;
        let user = self.user.is_some();
        let server = self.server_ns.take();
        match bad.or(mismatch.then_some(ErrorClass::Mismatch)) {
            Some(class) => {
                self.rec.exchanges_failed(class, k);
                self.rec.counters.error(class, k);
                if user {
                    self.rec.steps.failed(ex.step as usize, class, k);
                }
            }
            None => {
                self.useful = true;
                self.rec.counters.completed += k;
                let ns = self.now.saturating_sub(ex.start);
                self.rec.record_latency_ns(ns, k);
                if let Some(s) = server {
                    self.rec.server.record_ns(s);
                    self.rec.server_gap.record_ns(ns.saturating_sub(s));
                }
                if user {
                    self.rec.steps.completed(ex.step as usize, ns);
                    if let Some(s) = server {
                        self.rec.steps.server_time(ex.step as usize, s, ns);
                    }
                }
            }
        }
        if self.closed_loop {
            self.freed += k as u32;
        }
    }

    /// Count the outcome of a command's exchange (sessions with a command mix): a completed
    /// exchange, `miss` when it found nothing, or an error reply when `error`.
    #[inline]
    pub fn count_command(&mut self, step: u16, miss: bool, error: bool) {
        self.count_command_n(step, miss, error, 1);
    }

    /// [`Replies::count_command`] for `n` exchanges of the same command and outcome.
    #[inline]
    fn count_command_n(&mut self, step: u16, miss: bool, error: bool, n: u64) {
        if step == OPENING || self.user.is_some() {
            return;
        }
        let i = step as usize;
        if error {
            self.rec.counters.commands.error(i, n);
        } else {
            self.rec.counters.commands.completed(i, n);
            if miss {
                self.rec.counters.misses += n;
                self.rec.counters.commands.miss(i, n);
            }
        }
    }

    /// The protocol handshake is done; `consumed` bytes of this input belonged to it.
    pub fn handshake_done(&mut self, consumed: usize) {
        self.useful = true;
        self.handshake = Some(consumed);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A connection's state for one input: its exchanges, recorder and what the input did.
    pub(crate) struct Conn {
        pub ex: Exchanges,
        pub rec: Recorder,
        ctl: Vec<u8>,
        rng: Rng,
    }

    impl Conn {
        /// Exchanges in flight: batches of (start, count, step), keys as a connection's.
        pub fn new(batches: &[(u64, usize, u16)]) -> Self {
            let mut ex = Exchanges::default();
            let mut rec = Recorder::new();
            let mut key = 1;
            for &(start, n, step) in batches {
                for _ in 0..n {
                    ex.push(Exchange::new(key, start, start, 20, step));
                    key += 2;
                    if step != OPENING {
                        rec.in_flight += 1;
                    }
                }
            }
            Self {
                ex,
                rec,
                ctl: Vec::new(),
                rng: Rng::new(1),
            }
        }

        /// One input through `f`: what it did (window slots freed, useful, opening done).
        pub fn input(&mut self, f: impl FnOnce(&mut Replies)) -> (u32, bool, bool) {
            let mut r = Replies::new(
                &mut self.ex,
                None,
                &mut self.rec,
                5_000_000,
                &[],
                true,
                &mut self.ctl,
                &mut self.rng,
            );
            f(&mut r);
            (r.freed, r.useful, r.opening_done)
        }
    }

    /// `input` fed to a new session in two parts, at every split point, with `batches` in
    /// flight: for each split, the per-command (completed, errors, misses), the totals
    /// (completed, misses, `reply_error`s), and what is still in flight (gauge, queue).
    pub fn at_every_split<S: Session>(
        cfg: &S::Cfg,
        input: &[u8],
        batches: &[(u64, usize, u16)],
        commands: usize,
    ) -> Vec<SplitCounts> {
        (0..=input.len())
            .map(|split| {
                let mut s = S::new(cfg);
                let mut c = Conn::new(batches);
                for part in [&input[..split], &input[split..]] {
                    c.input(|r| s.input(cfg, part, r).unwrap());
                }
                let d = c.rec.take(0, 0, 0, 1);
                let g = |i| d.counters.commands.get(i);
                SplitCounts {
                    per_command: (0..commands)
                        .map(|i| (g(i).completed, g(i).errors, g(i).misses))
                        .collect(),
                    totals: (
                        d.counters.completed,
                        d.counters.misses,
                        d.counters.failed_by.get(ErrorClass::ReplyError),
                    ),
                    left: (c.rec.in_flight, c.ex.len()),
                }
            })
            .collect()
    }

    /// What [`at_every_split`] found for one split.
    #[derive(Debug, PartialEq, Eq)]
    pub struct SplitCounts {
        pub per_command: Vec<(u64, u64, u64)>,
        pub totals: (u64, u64, u64),
        pub left: (u64, usize),
    }

    /// Replies counted in batches count exactly as one by one: counters per command,
    /// latencies, misses, window slots, the opening, and replies with nothing in flight.
    #[test]
    fn a_batch_of_replies_counts_as_the_same_replies_one_by_one() {
        // (the batches in flight: start, count, step; the inputs: replies, miss)
        type Case<'a> = (&'a [(u64, usize, u16)], &'a [(u32, bool)]);
        let cases: &[Case] = &[
            (&[(1_000, 16, 0)], &[(16, true)]),
            (
                &[(1_000, 16, 0), (2_000, 16, 1)],
                &[(5, false), (20, true), (7, false)],
            ),
            (&[(0, 1, OPENING), (1_000, 3, 0)], &[(4, false)]),
            (&[(1_000, 2, 0)], &[(5, false)]),
            (&[], &[(3, true)]),
            (
                &[(1_000, 1, 0), (1_500, 1, 0), (2_000, 1, 1)],
                &[(1, true), (2, false)],
            ),
        ];
        for (batches, replies) in cases {
            let mut one = Conn::new(batches);
            let mut many = Conn::new(batches);
            let mut did_one = Vec::new();
            let mut did_many = Vec::new();
            for &(n, miss) in *replies {
                did_one.push(one.input(|r| {
                    for _ in 0..n {
                        if let Some(step) = r.complete(None) {
                            r.count_command(step, miss, false);
                        }
                    }
                }));
                did_many.push(many.input(|r| r.complete_n(n, miss)));
            }
            assert_eq!(did_one, did_many, "{batches:?} {replies:?}");
            assert_eq!(one.rec.in_flight, many.rec.in_flight);
            assert!(one.ex.iter().eq(many.ex.iter()));
            let (a, b) = (one.rec.take(0, 0, 0, 1), many.rec.take(0, 0, 0, 1));
            assert!(a.counters.completed > 0 || batches.is_empty());
            assert_eq!(a, b, "{batches:?} {replies:?}");
        }
    }
}
