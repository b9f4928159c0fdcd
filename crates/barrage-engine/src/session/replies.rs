//! The reply machinery: [`Replies`], the context a session completes exchanges through for
//! one batch of input (verifying echoes under `--verify`, counting replies and commands,
//! freeing closed-loop slots, what the worker acts on after the input), with the helpers the
//! decoders share ([`OkRun`], [`feed_collecting`]). A scenario user's replies are judged in
//! `judge.rs`.

use super::{Close, ProtoError};
use crate::exchange::{Exchange, Exchanges, OPENING};
use crate::pacer::Rng;
use barrage_metrics::{ErrorClass, Recorder};
use std::collections::VecDeque;

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
    pub(super) fn finish(&mut self, ex: &Exchange, bad: Option<ErrorClass>) {
        self.finish_n(ex, bad, 1);
    }

    /// `k` exchanges like `ex` got their replies ([`Exchanges::pop_run`]). What is judged or
    /// recorded per reply (`--verify`, server timing, a scenario user's step) takes `k == 1`.
    #[inline]
    pub(super) fn finish_n(&mut self, ex: &Exchange, bad: Option<ErrorClass>, k: u64) {
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
    pub(super) fn count_command_n(&mut self, step: u16, miss: bool, error: bool, n: u64) {
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
