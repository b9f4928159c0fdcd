//! The per-worker recorder and the delta it hands over at every segment boundary.
//!
//! One recorder per worker thread, owned by that thread only: recording is a plain add or a
//! histogram increment, no locks, no atomics. At each timeline boundary the worker calls
//! `take`, which moves the interval's counts into a `Delta` (sent to the aggregator) and starts
//! a fresh interval; gauges (open connections, in flight, backlog) carry over.

use crate::counters::Counters;
use crate::error::ErrorClass;
use crate::histogram::{LatencyHistogram, OptHistogram};
use serde::{Deserialize, Serialize};

#[derive(Debug, Default)]
pub struct Recorder {
    pub counters: Counters,
    pub latency: LatencyHistogram,
    pub connect: LatencyHistogram,
    /// HTTP: time to the response head; TLS handshake; WebSocket upgrade handshake.
    pub ttfb: OptHistogram,
    pub tls: OptHistogram,
    pub handshake: OptHistogram,
    /// HTTP `Server-Timing`: the server's own time per response, and the client's latency
    /// less it (what the network, queues and the client added).
    pub server: OptHistogram,
    pub server_gap: OptHistogram,
    /// gRPC server streaming: each message of a stream, from its call's start (the call's
    /// end is the exchange, in `latency`).
    pub stream_msg: OptHistogram,
    /// Broadcast delivery latency (send -> this receiver): the sender's own copy, and the
    /// other recipients' in this process (same clock).
    pub bcast_own: OptHistogram,
    pub bcast_peer: OptHistogram,
    /// Broadcast deliveries from another process of a split run (not one clock): this
    /// receiver's clock less the sender's stamp, kept apart; a merge shows them only when the
    /// processes' clocks are known to agree closely enough.
    pub bcast_remote: OptHistogram,
    /// Broadcast, per message (sender << 32 | sequence) received in this segment: the first
    /// and last recipient's latency (µs) and the recipients here. Merged across workers and
    /// segments by the aggregator, which makes first, last and spread exact in the process.
    pub msg_spans: std::collections::HashMap<u64, MsgSpan>,
    /// Broadcast: the groups of users the deliveries here joined, and the links of this
    /// segment that said something new (`crate::groups`).
    groups: crate::groups::Groups,
    links: Vec<(u32, u32)>,
    /// Gauges owned by the worker: connections open now, exchanges in flight now, due
    /// messages waiting in backlogs now.
    pub open: u64,
    pub in_flight: u64,
    pub backlog: u64,
    /// Worst lateness of the event loop in this segment: how long after its due time a timer
    /// was handled, in nanoseconds (scheduler lag; a busy or starved worker shows here).
    pub lag_max_ns: u64,
    /// When the last connection so far became ready for the first time (ns since the start).
    pub ready_last_ns: u64,
    /// Scenario runs: per-step counts and latency (empty otherwise).
    pub steps: crate::steps::Steps,
    open_peak: u64,
    /// Exchange latencies not yet in `latency`: `pending_n` times `pending_us`
    /// ([`Recorder::record_latency_ns`]); `take` records them first.
    pending_us: u64,
    pending_n: u64,
    /// Reasons formatted per class in this segment: at most [`REASON_TRIES`] each, so a run
    /// that fails every request formats a bounded number of texts per second.
    reason_tries: ReasonTries,
}

#[derive(Debug)]
struct ReasonTries([u8; ErrorClass::COUNT]);

impl Default for ReasonTries {
    fn default() -> Self {
        Self([0; ErrorClass::COUNT])
    }
}

/// How many reasons per class and segment a recorder formats to compare with those it keeps.
pub const REASON_TRIES: u8 = 8;

/// Broadcast per-message figures of the messages that settled (no recipient added for a few
/// seconds): the first recipient's latency, the last one's, and the spread between them, a
/// value per message. What the durable stream carries instead of the raw per-message spans:
/// a second's worth is three histograms however many messages there were.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SettledSpans {
    pub first: OptHistogram,
    pub last: OptHistogram,
    pub spread: OptHistogram,
}

impl SettledSpans {
    pub fn is_empty(&self) -> bool {
        self.first.is_empty() && self.last.is_empty() && self.spread.is_empty()
    }

    pub fn record(&mut self, s: &MsgSpan) {
        self.first.record_ns(s.first_us.saturating_mul(1000));
        self.last.record_ns(s.last_us.saturating_mul(1000));
        self.spread
            .record_ns((s.last_us - s.first_us).saturating_mul(1000));
    }

    pub fn merge(&mut self, o: &SettledSpans) {
        self.first.merge(&o.first);
        self.last.merge(&o.last);
        self.spread.merge(&o.spread);
    }
}

/// One broadcast message's recipients so far: the first and last latency (µs) and how many;
/// and, from its sender, how many recipients it expects (0: not known here).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MsgSpan {
    pub first_us: u64,
    pub last_us: u64,
    pub n: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub expected: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

impl MsgSpan {
    pub fn merge(&mut self, o: &MsgSpan) {
        self.expected = self.expected.max(o.expected);
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            (self.first_us, self.last_us, self.n) = (o.first_us, o.last_us, o.n);
            return;
        }
        self.first_us = self.first_us.min(o.first_us);
        self.last_us = self.last_us.max(o.last_us);
        self.n += o.n;
    }

    /// Every recipient the sender expected has it: nothing more to wait for.
    pub fn complete(&self) -> bool {
        self.expected > 0 && self.n >= self.expected
    }
}

impl Recorder {
    /// A TLS handshake that took `ns`.
    pub fn record_tls_handshake(&mut self, ns: u64) {
        self.tls.record_ns(ns);
    }

    pub fn new() -> Self {
        Self::default()
    }

    /// A recipient got broadcast message `key` after `us`.
    #[inline]
    pub fn msg_delivered(&mut self, key: u64, us: u64) {
        self.msg_spans.entry(key).or_default().merge(&MsgSpan {
            first_us: us,
            last_us: us,
            n: 1,
            expected: 0,
        });
    }

    /// `receiver` heard `sender` for the first time (its own stamp: `sender == receiver`): they
    /// are in one group (a room). Once per pair, not per message.
    pub fn heard(&mut self, sender: u32, receiver: u32) {
        if self.groups.link(sender, receiver) {
            self.links.push((sender, receiver));
        }
    }

    /// A sender sent broadcast message `key`, expecting `expected` recipients: once they all
    /// have it, its per-message figures need not wait (they settle at once).
    #[inline]
    pub fn msg_sent(&mut self, key: u64, expected: u32) {
        self.msg_spans.entry(key).or_default().merge(&MsgSpan {
            expected,
            ..MsgSpan::default()
        });
    }

    #[inline]
    pub fn conn_opened(&mut self) {
        self.open += 1;
        self.open_peak = self.open_peak.max(self.open);
    }

    #[inline]
    pub fn conn_closed(&mut self) {
        self.open = self.open.saturating_sub(1);
    }

    /// A connection is ready for load for the first time, at `now_ns`.
    #[inline]
    pub fn conn_first_ready(&mut self, now_ns: u64) {
        self.counters.first_ready += 1;
        self.ready_last_ns = self.ready_last_ns.max(now_ns);
    }

    /// `n` exchanges that were sent failed because of `class`.
    #[inline]
    pub fn exchanges_failed(&mut self, class: ErrorClass, n: u64) {
        self.counters.failed += n;
        self.counters.failed_by.add(class, n);
    }

    /// An error of `class` said `why` at `now_ns`: kept among the class's first few reasons.
    /// Formats `why` at most [`REASON_TRIES`] times per class and segment.
    pub fn reason(&mut self, class: ErrorClass, now_ns: u64, why: &dyn std::fmt::Display) {
        let tries = &mut self.reason_tries.0[class as usize];
        if *tries >= REASON_TRIES || !self.counters.reasons.wants(class) {
            return;
        }
        *tries += 1;
        let text = why.to_string();
        self.counters.reasons.note(class, &text, now_ns / 1_000_000);
    }

    /// `n` due messages were never sent (backlog overflow, or still due at the end).
    #[inline]
    pub fn not_sent(&mut self, n: u64) {
        self.counters.error(ErrorClass::NotSent, n);
        self.counters.failed_by.add(ErrorClass::NotSent, n);
    }

    /// `n` exchanges' latency (nanoseconds, kept to the nearest microsecond like
    /// [`LatencyHistogram::record_ns`]): one, or a batch completed by one input. Equal values
    /// in a row are counted and recorded together: the replies to a pipelined batch, read at
    /// once, complete requests written at once, so their latencies are equal, and the
    /// histogram (a cache miss per record under load) is touched once per batch.
    #[inline]
    pub fn record_latency_ns(&mut self, ns: u64, n: u64) {
        let us = LatencyHistogram::us_of_ns(ns);
        if us != self.pending_us || self.pending_n == 0 {
            self.flush_latency();
            self.pending_us = us;
        }
        self.pending_n += n;
    }

    fn flush_latency(&mut self) {
        if self.pending_n > 0 {
            self.latency.record_us_n(self.pending_us, self.pending_n);
            self.pending_n = 0;
        }
    }

    /// Close the interval `[start_ns, end_ns)` identified by `key` and start the next one.
    pub fn take(&mut self, worker: u32, key: u64, start_ns: u64, end_ns: u64) -> Delta {
        self.flush_latency();
        self.reason_tries = ReasonTries::default();
        // Per-command counts restart at their length, so the next segment does not grow them
        // again on the hot path (one allocation per segment, here).
        let commands = self.counters.commands.len();
        let counters = std::mem::take(&mut self.counters);
        if commands > 0 {
            self.counters.commands = crate::counters::CommandCounts::with_len(commands);
        }
        let d = Delta {
            worker,
            key,
            start_ns,
            end_ns,
            counters,
            latency: std::mem::take(&mut self.latency),
            connect: std::mem::take(&mut self.connect),
            ttfb: std::mem::take(&mut self.ttfb),
            tls: std::mem::take(&mut self.tls),
            handshake: std::mem::take(&mut self.handshake),
            server: std::mem::take(&mut self.server),
            server_gap: std::mem::take(&mut self.server_gap),
            stream_msg: std::mem::take(&mut self.stream_msg),
            bcast_own: std::mem::take(&mut self.bcast_own),
            bcast_peer: std::mem::take(&mut self.bcast_peer),
            bcast_remote: std::mem::take(&mut self.bcast_remote),
            msg_spans: self.msg_spans.drain().collect(),
            settled: Default::default(),
            links: std::mem::take(&mut self.links),
            open: self.open,
            open_peak: self.open_peak,
            in_flight: self.in_flight,
            backlog: self.backlog,
            lag_max_ns: std::mem::take(&mut self.lag_max_ns),
            ready_last_ns: self.ready_last_ns,
            steps: self.steps.take(),
        };
        self.open_peak = self.open;
        d
    }
}

/// What one worker recorded during one segment of the timeline. Serializable (histograms as
/// their lossless V2 encoding), so a share running in another process can stream its deltas
/// to the aggregator; a round trip merges to the same figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    pub worker: u32,
    /// Segment key: its start in ns since the run's start, or `DRAIN_KEY`.
    pub key: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub counters: Counters,
    pub latency: LatencyHistogram,
    pub connect: LatencyHistogram,
    pub ttfb: OptHistogram,
    pub tls: OptHistogram,
    pub handshake: OptHistogram,
    /// HTTP `Server-Timing` (server time, and client latency less it).
    #[serde(default)]
    pub server: OptHistogram,
    #[serde(default)]
    pub server_gap: OptHistogram,
    /// gRPC server streaming: each message from its call's start.
    #[serde(default, skip_serializing_if = "OptHistogram::is_empty")]
    pub stream_msg: OptHistogram,
    /// Broadcast delivery latency: own copies, other recipients.
    #[serde(default)]
    pub bcast_own: OptHistogram,
    #[serde(default)]
    pub bcast_peer: OptHistogram,
    /// Broadcast deliveries from another process, on two clocks (see the recorder's).
    #[serde(default, skip_serializing_if = "OptHistogram::is_empty")]
    pub bcast_remote: OptHistogram,
    /// Broadcast: per message seen in this segment, (key, its spans here). From the workers
    /// only: a kept (merged) segment has them settled into `settled` instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub msg_spans: Vec<(u64, MsgSpan)>,
    /// Broadcast: the per-message figures that settled in this segment (kept segments: the
    /// durable stream, a shard's seconds).
    #[serde(default, skip_serializing_if = "SettledSpans::is_empty")]
    pub settled: SettledSpans,
    /// Broadcast: (sender, receiver) links that joined users into groups (rooms) in this
    /// segment, new to the worker that heard them (`crate::groups`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<(u32, u32)>,
    pub open: u64,
    pub open_peak: u64,
    pub in_flight: u64,
    pub backlog: u64,
    pub lag_max_ns: u64,
    /// When the worker's last connection so far became ready for the first time.
    pub ready_last_ns: u64,
    /// Scenario runs: per-step counts and latency.
    #[serde(default, skip_serializing_if = "crate::steps::Steps::is_empty")]
    pub steps: crate::steps::Steps,
}

impl Delta {
    /// Merge another worker's delta for the same segment: counts add, gauges add (they are
    /// per-worker shares of one total), the segment spans both.
    pub fn merge(&mut self, o: &Delta) {
        self.counters.merge(&o.counters);
        self.latency.merge(&o.latency);
        self.connect.merge(&o.connect);
        self.ttfb.merge(&o.ttfb);
        self.tls.merge(&o.tls);
        self.handshake.merge(&o.handshake);
        self.server.merge(&o.server);
        self.server_gap.merge(&o.server_gap);
        self.stream_msg.merge(&o.stream_msg);
        self.bcast_own.merge(&o.bcast_own);
        self.bcast_peer.merge(&o.bcast_peer);
        self.bcast_remote.merge(&o.bcast_remote);
        self.msg_spans.extend_from_slice(&o.msg_spans);
        self.settled.merge(&o.settled);
        self.links.extend_from_slice(&o.links);
        self.open += o.open;
        self.open_peak += o.open_peak;
        self.in_flight += o.in_flight;
        self.backlog += o.backlog;
        self.lag_max_ns = self.lag_max_ns.max(o.lag_max_ns);
        self.ready_last_ns = self.ready_last_ns.max(o.ready_last_ns);
        self.steps.merge(&o.steps);
        self.start_ns = self.start_ns.min(o.start_ns);
        self.end_ns = self.end_ns.max(o.end_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_moves_counts_and_keeps_gauges() {
        let mut r = Recorder::new();
        r.conn_opened();
        r.conn_opened();
        r.conn_closed();
        r.counters.sent = 5;
        r.counters.error(ErrorClass::Timeout, 1);
        r.latency.record_us(10);
        let d = r.take(0, 0, 0, 1_000);
        assert_eq!(d.counters.sent, 5);
        assert_eq!(d.latency.count(), 1);
        assert_eq!((d.open, d.open_peak), (1, 2));
        let d2 = r.take(0, 1_000, 1_000, 2_000);
        assert_eq!(d2.counters.sent, 0);
        assert_eq!(d2.counters.errors.total(), 0);
        assert!(d2.latency.is_empty());
        assert_eq!((d2.open, d2.open_peak), (1, 1));
    }

    #[test]
    fn latencies_recorded_in_runs_are_all_in_the_delta_that_takes_them() {
        let mut r = Recorder::new();
        let mut direct = LatencyHistogram::new();
        // Runs of equal values, single ones, values that round to the same microsecond, and
        // one beyond the histogram's range.
        let ns = [
            900,
            1_400,
            1_000,
            1_000,
            5_000_000,
            7,
            7,
            7,
            3_000,
            3_499,
            4_000_000_000_000,
        ];
        for &v in &ns {
            r.record_latency_ns(v, 1);
            direct.record_ns(v);
        }
        let d = r.take(0, 0, 0, 1_000);
        assert_eq!(d.latency.count(), ns.len() as u64);
        assert_eq!(d.latency, direct);
        // Nothing is carried into the next segment.
        r.record_latency_ns(1_000, 1);
        assert_eq!(r.take(0, 1_000, 1_000, 2_000).latency.count(), 1);
        assert!(r.take(0, 2_000, 2_000, 3_000).latency.is_empty());
    }

    #[test]
    fn take_moves_command_counts_and_keeps_their_length() {
        let mut r = Recorder::new();
        r.counters.commands.sent(2);
        r.counters.commands.completed(2, 1);
        let d = r.take(0, 0, 0, 1_000);
        assert_eq!(d.counters.commands.get(2).completed, 1);
        // Zeroed, at the same length: the next segment counts without growing.
        assert_eq!(r.counters.commands.len(), 3);
        assert_eq!(r.counters.commands.get(2), Default::default());
        let d2 = r.take(0, 1_000, 1_000, 2_000);
        assert_eq!(d2.counters.commands.get(2).sent, 0);
    }
}
