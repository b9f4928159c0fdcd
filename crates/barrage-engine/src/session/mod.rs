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
//!
//! This file holds the [`Session`] trait and what it renders through ([`Out`], [`Rendered`],
//! [`Msg`]) or fails with ([`ProtoError`], [`Close`]); the reply machinery a session decodes
//! into ([`Replies`], [`Verify`], `OkRun`) is in `replies.rs`, and a scenario user's replies
//! are judged in `judge.rs`.

use crate::message::Fill;
use crate::pacer::Rng;
use crate::plan::Plan;
use barrage_metrics::{ErrorClass, Recorder};
use std::collections::VecDeque;

mod caps;
pub mod h2;
pub mod http;
pub mod https;
mod judge;
pub mod memcache;
pub mod mqtt;
pub mod redis;
mod replies;
pub mod tcp;
pub mod ws;

pub use caps::{KeepAlive, Never, Owed, Streams};
pub(crate) use replies::{feed_collecting, OkRun};
pub use replies::{Replies, Verify};

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

    /// Several exchanges open at once, as many as the server allows ([`Streams`]: HTTP/2,
    /// MQTT). Without: no limit but the flags', and a timeout fails the connection.
    fn streams(&mut self) -> Option<&mut impl Streams> {
        None::<&mut Never>
    }

    /// Control answers kept while the socket is backlogged ([`Owed`]: WebSocket, HTTP/2,
    /// MQTT). Without: the protocol answers no control frame.
    fn owed(&mut self) -> Option<&mut impl Owed> {
        None::<&mut Never>
    }

    /// A keep-alive tick ([`KeepAlive`]: MQTT's PINGREQ).
    fn keepalive(&mut self) -> Option<&mut impl KeepAlive> {
        None::<&mut Never>
    }

    /// Requests are a mix of commands: counted per command (`Rendered::step`).
    const COMMANDS: bool = false;

    /// Exchanges complete when their request is written (`--expect none`): no replies.
    fn completes_on_write(_cfg: &Self::Cfg) -> bool {
        false
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::exchange::{Exchange, Exchanges, OPENING};

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
