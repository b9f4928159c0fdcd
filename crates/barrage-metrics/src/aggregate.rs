//! The aggregator: merges worker deltas into one tick per timeline segment and, at the end,
//! into the run's summary.
//!
//! Owned by the coordinating thread. A segment is final once every worker has delivered it or
//! moved past it (workers deliver in timeline order), so ticks come out in order, once each,
//! whatever the interleaving of workers. Headline figures cover what followed the warm-up;
//! rates divide by the measured window only; `totals` covers the whole run so that counts can
//! be reconciled against what the server saw.

use crate::counters::Counters;
use crate::error::ErrorCounts;
use crate::histogram::{LatencyHistogram, LatencyStats, OptHistogram};
use crate::recorder::Delta;
use crate::timeline::{Phase, Timeline, DRAIN_KEY};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One entry of the per-second time series.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tick {
    /// End of the segment, seconds since the run's start.
    pub t: f64,
    /// Length of the segment in seconds (1 except at warm-up end, load end and drain).
    pub dt: f64,
    pub phase: Phase,
    /// Exchanges completed in the segment.
    pub requests: u64,
    /// `requests / dt`.
    pub rps: f64,
    pub sent: u64,
    pub failed: u64,
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub connects: u64,
    pub connect_failures: u64,
    pub closed_by_peer: u64,
    /// Connections open at the segment's end, and the most open at once during it (upper bound:
    /// the sum of each worker's own peak).
    pub open: u64,
    pub open_peak: u64,
    pub in_flight: u64,
    pub backlog: u64,
    /// Open loop: messages that fell due in the segment on started connections' schedules.
    #[serde(default)]
    pub scheduled: u64,
    /// Exchanges that did not complete in the segment (failed after sending, or not sent).
    #[serde(default)]
    pub failed_requests: u64,
    /// Worst event-loop lateness of any worker in the segment, microseconds.
    #[serde(default)]
    pub lag_us_max: u64,
    /// The load generator was the bottleneck in this segment (see `analysis.saturation`):
    /// its figures describe barrage, not the server.
    #[serde(default)]
    pub saturated: bool,
    pub errors: ErrorCounts,
    pub latency_us: TickLatency,
    /// Broadcast: deliveries received in this tick, and their p99 latency (to other
    /// recipients), µs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub deliveries: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delivery_p99_us: u64,
    /// Broadcast: deliveries the messages sent in this tick were expected to make (reach per
    /// second = deliveries / expected, within a second of lag).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub deliveries_expected: u64,
    /// Scenario runs: each step in this tick (index = step), for per-step latency over time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<crate::steps::TickStep>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TickLatency {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
    pub mean: f64,
    /// Exchanges timed in the segment (fire-and-forget ones have no latency): 0 means the
    /// figures above are of nothing, not 0 µs. Missing (0) in results written before it was
    /// recorded.
    #[serde(default)]
    pub count: u64,
    /// Missing (0) in results written before it was recorded.
    #[serde(default)]
    pub p999: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rps {
    /// Rate in the last full second of the measured window.
    pub current: f64,
    /// Completed exchanges in the measured window divided by its length.
    pub avg: f64,
    /// The best full one-second segment.
    pub peak: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Io {
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub reads_per_s: f64,
    pub writes_per_s: f64,
    pub bytes_read_per_s: f64,
    pub bytes_written_per_s: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Connections {
    pub target: u64,
    /// Open when the load stopped.
    pub open: u64,
    pub peak: u64,
    pub attempts: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub closed_by_peer: u64,
}

/// Conservation over the whole run: `sent = completed + failed + in_flight_at_end`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchanges {
    pub sent: u64,
    pub completed: u64,
    pub failed: u64,
    pub in_flight_at_end: u64,
    pub not_sent: u64,
    pub unexpected_replies: u64,
    /// Open loop: messages due on the connections' schedules (`sent + not_sent`, unless `-n`
    /// ended the run first); 0 in closed-loop modes.
    #[serde(default)]
    pub scheduled: u64,
}

impl Exchanges {
    pub fn balanced(&self) -> bool {
        self.sent == self.completed + self.failed + self.in_flight_at_end
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyBasis {
    /// Closed loop: from the moment the request was written (service time).
    #[default]
    ActualSend,
    /// Open loop: from the moment the request was due (no coordinated omission).
    IntendedSend,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Length of the measured window (load phase after warm-up), seconds.
    pub duration_s: f64,
    /// Exchanges completed after the warm-up (measured window and drain).
    pub requests: u64,
    pub rps: Rps,
    pub latency_basis: LatencyBasis,
    pub latency_us: LatencyStats,
    pub connect_us: LatencyStats,
    /// HTTP: time from the request to the response head (after the warm-up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfb_us: Option<LatencyStats>,
    /// TLS handshake time, whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_us: Option<LatencyStats>,
    /// WebSocket upgrade handshake time, whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshake_us: Option<LatencyStats>,
    /// HTTP `Server-Timing` after the warm-up: the server's own time per response, and the
    /// client's latency less it (network, queues, the client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_us: Option<LatencyStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_gap_us: Option<LatencyStats>,
    /// gRPC server streaming: each streamed message's time from its call's start (after the
    /// warm-up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_msg_us: Option<LatencyStats>,
    pub io: Io,
    pub connections: Connections,
    /// Error events after the warm-up, by class: failed connects, broken or timed-out
    /// connections (one each), rejected replies, messages not sent.
    pub errors: ErrorCounts,
    /// Exchanges after the warm-up that did not complete, by the reason: what the error rate
    /// counts (see [`Summary::error_rate`]).
    #[serde(default)]
    pub failed_requests: ErrorCounts,
    /// How the connections came up (`None` in records written before it was measured).
    #[serde(default)]
    pub ramp: Option<Ramp>,
    pub exchanges: Exchanges,
    /// Whole-run counters, warm-up included: what the server saw.
    pub totals: Counters,
    /// Scenario runs with broadcast steps: one-to-many delivery (whole run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broadcast: Option<BroadcastSummary>,
    /// Scenario runs: each step after the warm-up, in the scenario's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<crate::steps::StepSummary>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// One-to-many delivery as reports read it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BroadcastSummary {
    #[serde(flatten)]
    pub c: crate::counters::BroadcastCounts,
    /// delivered / expected; `None` when nothing was expected.
    pub reach: Option<f64>,
    /// Gaps still open at the end.
    pub lost: u64,
    /// expected - delivered (0 if more came than expected): deliveries owed and not
    /// received, whether a gap revealed them (`lost`) or not (a sender's last messages, those
    /// still on their way at the end).
    #[serde(default)]
    pub missing: u64,
    /// Send to the sender's own copy, and to the other recipients in this process.
    pub own_us: Option<LatencyStats>,
    pub peer_us: Option<LatencyStats>,
    /// Deliveries from other processes whose clocks are not one (a merge of shards on several
    /// hosts): timed on two clocks, shown only when their agreement is known to be within the
    /// merge's tolerance (`remote_clock_us`: the bound, µs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_us: Option<LatencyStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_clock_us: Option<u64>,
    /// Per message, over its recipients in this process: the first one's latency, the last
    /// one's, and the spread between them (a message with one recipient spreads 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_us: Option<LatencyStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_us: Option<LatencyStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_us: Option<LatencyStats>,
    /// The groups (rooms) the deliveries joined users into: how many, and of which sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rooms: Option<crate::groups::Rooms>,
}

impl BroadcastSummary {
    /// Whether the deliveries from other processes were timed too (they shared one clock):
    /// every delivery received is in the latency figures.
    pub fn remote_timed(&self) -> bool {
        let count = |l: &Option<LatencyStats>| l.as_ref().map_or(0, |l| l.count);
        count(&self.own_us) + count(&self.peer_us) >= self.c.delivered
    }
}

/// Broadcast messages still gathering recipients: merged across workers and segments, and
/// recorded once every recipient their sender expected has them, or no segment added to them
/// for [`SPAN_SETTLE`] ticks (or at the end). A message that reached no one here (its
/// recipients were in other processes, or lost) is dropped unrecorded.
#[derive(Default)]
struct Spans {
    open: std::collections::HashMap<u64, (crate::recorder::MsgSpan, u64)>,
    ticks: u64,
    /// Every settled message so far.
    all: crate::recorder::SettledSpans,
}

/// Ticks a message waits for more recipients before its figures are recorded.
const SPAN_SETTLE: u64 = 5;

impl Spans {
    fn add(&mut self, spans: &[(u64, crate::recorder::MsgSpan)]) {
        for (k, s) in spans {
            let e = self.open.entry(*k).or_default();
            e.0.merge(s);
            e.1 = self.ticks;
        }
    }

    /// Figures of messages that settled elsewhere (a kept segment: a stream, a shard).
    fn add_settled(&mut self, s: &crate::recorder::SettledSpans) {
        self.all.merge(s);
    }

    /// One tick has passed: record the messages that settled (all of them with `all`);
    /// returns them.
    fn tick(&mut self, all: bool) -> crate::recorder::SettledSpans {
        self.ticks += 1;
        let now = self.ticks;
        let mut settled = crate::recorder::SettledSpans::default();
        self.open.retain(|_, (s, seen)| {
            if !all && !s.complete() && now - *seen < SPAN_SETTLE {
                return true;
            }
            if s.n > 0 {
                settled.record(s);
            }
            false
        });
        self.all.merge(&settled);
        settled
    }
}

impl Summary {
    /// The share of exchanges after the warm-up that did not complete:
    /// `failed_requests / (completed + failed_requests)`, where failed requests are those sent
    /// and then failed (timeout, reset, closed, rejected reply) plus those due and never sent.
    /// `None` when there was nothing to count.
    pub fn error_rate(&self) -> Option<f64> {
        let failed = self.failed_requests.total();
        let all = self.requests + failed;
        (all > 0).then(|| failed as f64 / all as f64)
    }

    /// Records written before failed requests were counted by reason hold failures only in
    /// `exchanges` and `errors`: read their failed requests as the error events, the rate
    /// those records were judged by. (A new record with failures always has them here.)
    pub fn fill_legacy(&mut self) {
        // `missing` came later: what a record without it did not receive.
        if let Some(b) = &mut self.broadcast {
            b.missing = b.c.expected.saturating_sub(b.c.delivered);
        }
        let x = &self.exchanges;
        if self.failed_requests.total() == 0 && x.failed + x.not_sent > 0 {
            self.failed_requests = self.errors;
        }
    }
}

/// The connection ramp, apart from the load: an open-loop schedule starts when its connection
/// is first ready, so the load during the ramp follows the connections that are up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ramp {
    /// Connections that were ready for load at least once.
    pub ready: u64,
    /// Seconds from the start until the last of them was first ready; `None` when some
    /// connection never was.
    pub all_ready_s: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseSummary {
    pub duration_s: f64,
    pub requests: u64,
    pub rps: f64,
    pub latency_us: LatencyStats,
    pub errors: ErrorCounts,
}

#[derive(Default)]
struct Acc {
    counters: Counters,
    latency: LatencyHistogram,
    ttfb: OptHistogram,
    server: OptHistogram,
    server_gap: OptHistogram,
    stream_msg: OptHistogram,
    bcast_own: OptHistogram,
    bcast_peer: OptHistogram,
    bcast_remote: OptHistogram,
    steps: crate::steps::Steps,
    ns: u64,
}

impl Acc {
    fn add(&mut self, d: &Delta) {
        self.counters.merge(&d.counters);
        self.steps.merge(&d.steps);
        self.latency.merge(&d.latency);
        self.ttfb.merge(&d.ttfb);
        self.server.merge(&d.server);
        self.server_gap.merge(&d.server_gap);
        self.stream_msg.merge(&d.stream_msg);
        self.bcast_own.merge(&d.bcast_own);
        self.bcast_peer.merge(&d.bcast_peer);
        self.bcast_remote.merge(&d.bcast_remote);
        if d.key != DRAIN_KEY {
            self.ns += d.end_ns.saturating_sub(d.start_ns);
        }
    }
}

/// Everything the aggregator knows at the end of a run.
pub struct Outcome {
    pub summary: Summary,
    pub warmup: Option<PhaseSummary>,
    pub timeseries: Vec<Tick>,
    /// After warm-up; the histogram behind `summary.latency_us`.
    pub latency: LatencyHistogram,
    pub connect: LatencyHistogram,
    pub warmup_latency: LatencyHistogram,
    pub ttfb: OptHistogram,
    pub tls: OptHistogram,
    pub handshake: OptHistogram,
}

impl Outcome {
    /// The outcome of a run stopped before any load (e.g. a TLS pre-flight that refused the
    /// server's certificate): the plan's targets and basis, no deltas, every count zero. No
    /// engine ran; this is what an aggregator that never received a delta reports.
    pub fn nothing_measured(
        timeline: Timeline,
        target_connections: u64,
        basis: LatencyBasis,
    ) -> Self {
        Aggregator::new(timeline, 0).finish(target_connections, basis)
    }
}

pub struct Aggregator {
    timeline: Timeline,
    last_key: Vec<Option<u64>>,
    pending: BTreeMap<u64, Delta>,
    ticks: Vec<Tick>,
    warmup: Acc,
    measured: Acc,
    drain: Acc,
    connect: LatencyHistogram,
    tls: OptHistogram,
    handshake: OptHistogram,
    measured_counts: Vec<(f64, u64)>,
    last_open: u64,
    peak_open: u64,
    in_flight_end: u64,
    /// Each worker's in-flight gauge in its last delta.
    last_in_flight: Vec<u64>,
    /// Workers that ended without their drain (a shard killed mid-write, a child that died):
    /// the key of their last delta and the exchanges they had in flight then. Nothing settles
    /// those any more: every later second carries them as in flight, so that conservation
    /// (`sent = completed + failed + in_flight_at_end`) holds over the merge.
    stranded: Vec<(u64, u64)>,
    ready_last_ns: u64,
    spans: Spans,
    /// With [`Aggregator::keep_segments`]: the merged deltas finalized since the last
    /// [`Aggregator::take_segments`].
    segments: Option<Vec<Delta>>,
    /// [`Aggregator::time_remote`]: the bound on the shards' clock disagreement, µs.
    time_remote: Option<u64>,
    /// Broadcast: the groups (rooms) of the whole run, from every delta's links.
    groups: crate::groups::Groups,
}

/// The run so far after the warm-up, as a live view reads it ([`Aggregator::running`]).
pub struct Running<'a> {
    /// Exchanges completed.
    pub completed: u64,
    /// Completed per second of measured time.
    pub avg_rps: f64,
    /// Their latency.
    pub latency: &'a LatencyHistogram,
    /// Error events.
    pub errors: u64,
}

impl Aggregator {
    /// Keep each segment's merged delta (all workers' figures for that second) for
    /// [`Aggregator::take_segments`]: the run's durable stream. Pushing those deltas, in order,
    /// into a fresh aggregator of one worker with the same timeline gives the same ticks and
    /// outcome.
    pub fn keep_segments(&mut self) {
        self.segments.get_or_insert_with(Vec::new);
    }

    /// The shards' clocks agree within `bound_us`, close enough for a merge to show the
    /// deliveries between them, timed on two clocks (`remote_us`).
    pub fn time_remote(&mut self, bound_us: u64) {
        self.time_remote = Some(bound_us);
    }

    /// The merged deltas finalized since the last call, in order (empty unless kept).
    pub fn take_segments(&mut self) -> Vec<Delta> {
        self.segments
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    pub fn new(timeline: Timeline, workers: usize) -> Self {
        Self {
            timeline,
            last_key: vec![None; workers],
            pending: BTreeMap::new(),
            ticks: Vec::new(),
            warmup: Acc::default(),
            measured: Acc::default(),
            drain: Acc::default(),
            connect: LatencyHistogram::new(),
            tls: OptHistogram::default(),
            handshake: OptHistogram::default(),
            measured_counts: Vec::new(),
            last_open: 0,
            peak_open: 0,
            in_flight_end: 0,
            last_in_flight: vec![0; workers],
            stranded: Vec::new(),
            ready_last_ns: 0,
            spans: Spans::default(),
            segments: None,
            time_remote: None,
            groups: Default::default(),
        }
    }

    /// Add one worker's delta; returns the ticks that became final, in order.
    pub fn push(&mut self, d: Delta) -> Vec<Tick> {
        let w = d.worker as usize;
        debug_assert!(
            self.last_key[w].is_none_or(|k| k <= d.key),
            "deltas out of order"
        );
        self.last_key[w] = Some(d.key);
        self.last_in_flight[w] = d.in_flight;
        match self.pending.get_mut(&d.key) {
            Some(acc) => acc.merge(&d),
            None => {
                self.pending.insert(d.key, d);
            }
        }
        self.release()
    }

    /// Worker `w` will send nothing more (a shard whose stream ended early, a child process
    /// that died or had nothing to do): the seconds that waited for it become final without
    /// it; returns them, in order.
    pub fn end_worker(&mut self, w: usize) -> Vec<Tick> {
        // Ended before its drain: what it had in flight stays in flight.
        if let Some(last) = self.last_key[w].filter(|k| *k != DRAIN_KEY) {
            let n = std::mem::take(&mut self.last_in_flight[w]);
            if n > 0 {
                self.stranded.push((last, n));
            }
        }
        self.last_key[w] = Some(DRAIN_KEY);
        self.release()
    }

    /// The pending seconds every worker has passed, finalized in order.
    fn release(&mut self) -> Vec<Tick> {
        let mut out = Vec::new();
        while let Some((&key, _)) = self.pending.first_key_value() {
            if !self.last_key.iter().all(|k| k.is_some_and(|k| k >= key)) {
                break;
            }
            let d = self.pending.remove(&key).expect("key just seen");
            out.push(self.finalize(d));
        }
        out
    }

    /// Segments held waiting for a worker that has not passed them yet (a delta each, its
    /// histograms in full): what a merge of long streams must keep small.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Whether every worker has delivered its drain delta.
    pub fn complete(&self) -> bool {
        self.pending.is_empty() && self.last_key.iter().all(|k| *k == Some(DRAIN_KEY))
    }

    fn finalize(&mut self, mut d: Delta) -> Tick {
        // A worker that ended early has no share in this second: its last in-flight does.
        d.in_flight += self
            .stranded
            .iter()
            .filter(|(last, _)| d.key > *last)
            .map(|(_, n)| n)
            .sum::<u64>();
        let phase = self.timeline.phase(d.key);
        let dt_ns = d.end_ns.saturating_sub(d.start_ns.min(d.end_ns));
        let dt = dt_ns as f64 / 1e9;
        let c = &d.counters;
        let l = d.latency.stats();
        let tick = Tick {
            t: d.end_ns as f64 / 1e9,
            dt,
            phase,
            requests: c.completed,
            rps: if dt > 0.0 {
                c.completed as f64 / dt
            } else {
                0.0
            },
            sent: c.sent,
            failed: c.failed,
            reads: c.reads,
            writes: c.writes,
            bytes_read: c.bytes_read,
            bytes_written: c.bytes_written,
            connects: c.connects,
            connect_failures: c.connect_failures,
            closed_by_peer: c.closed_by_peer,
            open: d.open,
            open_peak: d.open_peak,
            in_flight: d.in_flight,
            backlog: d.backlog,
            scheduled: c.scheduled,
            failed_requests: c.failed_by.total(),
            lag_us_max: d.lag_max_ns / 1000,
            saturated: false,
            errors: c.errors,
            latency_us: TickLatency {
                p50: l.p50,
                p90: l.p90,
                p99: l.p99,
                max: l.max,
                mean: l.mean,
                count: l.count,
                p999: l.p999,
            },
            deliveries: c.broadcast.delivered,
            delivery_p99_us: d.bcast_peer.stats().map_or(0, |l| l.p99),
            deliveries_expected: c.broadcast.expected,
            steps: d.steps.iter().map(crate::steps::TickStep::of).collect(),
        };
        self.spans.add(&d.msg_spans);
        self.spans.add_settled(&d.settled);
        for &(sender, receiver) in &d.links {
            self.groups.link(sender, receiver);
        }
        // The drain segment is the last: every message still open settles with it, so that
        // the kept segments carry every figure.
        let settled = self.spans.tick(d.key == DRAIN_KEY);
        self.connect.merge(&d.connect);
        self.tls.merge(&d.tls);
        self.handshake.merge(&d.handshake);
        self.peak_open = self.peak_open.max(d.open_peak);
        self.ready_last_ns = self.ready_last_ns.max(d.ready_last_ns);
        match phase {
            Phase::Warmup => self.warmup.add(&d),
            Phase::Measured => {
                self.measured.add(&d);
                self.measured_counts.push((dt, c.completed));
            }
            Phase::Drain => {
                self.drain.add(&d);
                self.in_flight_end = d.in_flight;
            }
        }
        if phase != Phase::Drain {
            self.last_open = d.open;
            self.in_flight_end = d.in_flight;
        }
        self.ticks.push(tick.clone());
        if let Some(segs) = &mut self.segments {
            // Kept with the messages settled in it, not their raw spans: a second of the
            // stream is the same size at any message rate. Replayed, the settled figures add
            // up to the same histograms.
            let mut d = d;
            d.worker = 0;
            d.msg_spans = Vec::new();
            d.settled.merge(&settled);
            segs.push(d);
        }
        tick
    }

    /// Everything after warm-up so far, for live views.
    pub fn running(&self) -> Running<'_> {
        let secs = self.measured.ns as f64 / 1e9;
        let avg_rps = if secs > 0.0 {
            self.measured.counters.completed as f64 / secs
        } else {
            0.0
        };
        Running {
            completed: self.measured.counters.completed,
            avg_rps,
            latency: &self.measured.latency,
            errors: self.measured.counters.errors.total(),
        }
    }

    pub fn finish(mut self, target_connections: u64, basis: LatencyBasis) -> Outcome {
        self.spans.tick(true);
        let mut after = Counters::default();
        after.merge(&self.measured.counters);
        after.merge(&self.drain.counters);
        let mut latency = self.measured.latency.clone();
        latency.merge(&self.drain.latency);
        let mut ttfb = self.measured.ttfb.clone();
        ttfb.merge(&self.drain.ttfb);
        let mut server = self.measured.server.clone();
        server.merge(&self.drain.server);
        let mut server_gap = self.measured.server_gap.clone();
        server_gap.merge(&self.drain.server_gap);
        let mut stream_msg = self.measured.stream_msg.clone();
        stream_msg.merge(&self.drain.stream_msg);
        let mut own = self.warmup.bcast_own.clone();
        own.merge(&self.measured.bcast_own);
        own.merge(&self.drain.bcast_own);
        let mut peer = self.warmup.bcast_peer.clone();
        peer.merge(&self.measured.bcast_peer);
        peer.merge(&self.drain.bcast_peer);
        let mut remote = self.warmup.bcast_remote.clone();
        remote.merge(&self.measured.bcast_remote);
        remote.merge(&self.drain.bcast_remote);
        let remote_us = self.time_remote.and_then(|_| remote.stats());
        let remote_clock_us = self.time_remote.filter(|_| remote_us.is_some());
        let mut steps = self.measured.steps.clone();
        steps.merge(&self.drain.steps);
        let mut totals = after.clone();
        totals.merge(&self.warmup.counters);

        let secs = self.measured.ns as f64 / 1e9;
        let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let m = &self.measured.counters;
        let avg = per_s(m.completed);
        let full: Vec<f64> = self
            .measured_counts
            .iter()
            .filter(|(dt, _)| *dt >= 0.999)
            .map(|(dt, n)| *n as f64 / dt)
            .collect();
        let peak = full.iter().copied().fold(f64::NAN, f64::max);
        let current = full.last().copied().unwrap_or(avg);

        let summary = Summary {
            duration_s: secs,
            requests: after.completed,
            rps: Rps {
                current,
                avg,
                peak: if peak.is_nan() { avg } else { peak },
            },
            latency_basis: basis,
            latency_us: latency.stats(),
            connect_us: self.connect.stats(),
            ttfb_us: ttfb.stats(),
            tls_us: self.tls.stats(),
            handshake_us: self.handshake.stats(),
            server_us: server.stats(),
            server_gap_us: server_gap.stats(),
            stream_msg_us: stream_msg.stats(),
            broadcast: (!totals.broadcast.is_empty()).then(|| {
                let b = totals.broadcast;
                BroadcastSummary {
                    c: b,
                    reach: (b.expected > 0).then(|| b.delivered as f64 / b.expected as f64),
                    lost: b.lost(),
                    missing: b.expected.saturating_sub(b.delivered),
                    own_us: own.stats(),
                    peer_us: peer.stats(),
                    remote_us,
                    remote_clock_us,
                    first_us: self.spans.all.first.stats(),
                    last_us: self.spans.all.last.stats(),
                    spread_us: self.spans.all.spread.stats(),
                    rooms: self.groups.rooms(),
                }
            }),
            io: Io {
                reads: after.reads,
                writes: after.writes,
                bytes_read: after.bytes_read,
                bytes_written: after.bytes_written,
                reads_per_s: per_s(m.reads),
                writes_per_s: per_s(m.writes),
                bytes_read_per_s: per_s(m.bytes_read),
                bytes_written_per_s: per_s(m.bytes_written),
            },
            connections: Connections {
                target: target_connections,
                open: self.last_open,
                peak: self.peak_open,
                attempts: totals.connect_attempts,
                succeeded: totals.connects,
                failed: totals.connect_failures,
                closed_by_peer: totals.closed_by_peer,
            },
            errors: after.errors,
            failed_requests: after.failed_by,
            ramp: Some(Ramp {
                ready: totals.first_ready,
                all_ready_s: (totals.first_ready >= target_connections)
                    .then_some(self.ready_last_ns as f64 / 1e9),
            }),
            exchanges: Exchanges {
                sent: totals.sent,
                completed: totals.completed,
                failed: totals.failed,
                in_flight_at_end: self.in_flight_end,
                not_sent: totals.errors.get(crate::ErrorClass::NotSent),
                unexpected_replies: totals.unexpected,
                scheduled: totals.scheduled,
            },
            totals,
            steps: steps
                .iter()
                .enumerate()
                .map(|(i, s)| crate::steps::StepSummary::of(format!("step {}", i + 1), s, false))
                .collect(),
        };
        let warmup = (self.warmup.ns > 0).then(|| {
            let s = self.warmup.ns as f64 / 1e9;
            PhaseSummary {
                duration_s: s,
                requests: self.warmup.counters.completed,
                rps: self.warmup.counters.completed as f64 / s,
                latency_us: self.warmup.latency.stats(),
                errors: self.warmup.counters.errors,
            }
        });
        Outcome {
            summary,
            warmup,
            timeseries: self.ticks,
            latency,
            connect: self.connect,
            warmup_latency: self.warmup.latency,
            ttfb,
            tls: self.tls,
            handshake: self.handshake,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::SECOND_NS as S;

    fn delta(worker: u32, key: u64, start: u64, end: u64, completed: u64) -> Delta {
        let mut d = Delta {
            worker,
            key,
            start_ns: start,
            end_ns: end,
            ..Default::default()
        };
        d.counters.sent = completed;
        d.counters.completed = completed;
        for _ in 0..completed {
            d.latency.record_us(100);
        }
        d
    }

    #[test]
    fn ticks_are_final_only_when_every_worker_delivered() {
        let tl = Timeline {
            warmup_ns: 0,
            load_end_ns: Some(2 * S),
        };
        let mut a = Aggregator::new(tl, 2);
        assert!(a.push(delta(0, 0, 0, S, 10)).is_empty());
        assert!(a.push(delta(0, S, S, 2 * S, 20)).is_empty());
        let t = a.push(delta(1, 0, 0, S, 5));
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].requests, 15);
        assert_eq!(t[0].rps, 15.0);
        let t = a.push(delta(1, S, S, 2 * S, 1));
        assert_eq!(t[0].requests, 21);
        a.push(delta(0, DRAIN_KEY, 2 * S, 2 * S + 1000, 0));
        assert!(!a.complete());
        let t = a.push(delta(1, DRAIN_KEY, 2 * S, 2 * S + 5000, 2));
        assert_eq!(t[0].phase, Phase::Drain);
        assert!(a.complete());
        let o = a.finish(2, LatencyBasis::ActualSend);
        assert_eq!(o.summary.requests, 38);
        assert_eq!(o.summary.rps.avg, 18.0);
        assert_eq!(o.summary.rps.peak, 21.0);
        assert_eq!(o.summary.rps.current, 21.0);
        assert_eq!(o.summary.duration_s, 2.0);
        assert_eq!(o.summary.latency_us.count, 38);
        assert!(o.summary.exchanges.balanced());
    }

    #[test]
    fn warmup_is_reported_apart_from_the_headline() {
        let tl = Timeline {
            warmup_ns: S,
            load_end_ns: Some(3 * S),
        };
        let mut a = Aggregator::new(tl, 1);
        a.push(delta(0, 0, 0, S, 1000));
        a.push(delta(0, S, S, 2 * S, 10));
        a.push(delta(0, 2 * S, 2 * S, 3 * S, 30));
        a.push(delta(0, DRAIN_KEY, 3 * S, 3 * S, 0));
        let o = a.finish(1, LatencyBasis::IntendedSend);
        assert_eq!(o.summary.requests, 40);
        assert_eq!(o.summary.rps.avg, 20.0);
        assert_eq!(o.summary.totals.completed, 1040);
        let w = o.warmup.unwrap();
        assert_eq!((w.requests, w.rps), (1000, 1000.0));
        assert_eq!(o.timeseries.len(), 4);
        assert_eq!(o.timeseries[0].phase, Phase::Warmup);
    }

    #[test]
    fn a_worker_that_finished_early_does_not_hold_back_ticks() {
        let tl = Timeline {
            warmup_ns: 0,
            load_end_ns: None,
        };
        let mut a = Aggregator::new(tl, 2);
        a.push(delta(0, 0, 0, S / 2, 5));
        a.push(delta(0, DRAIN_KEY, S / 2, S / 2, 0));
        let t = a.push(delta(1, 0, 0, S, 7));
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].requests, 12);
        let t = a.push(delta(1, S, S, S + S / 4, 3));
        assert_eq!(t.len(), 1);
        let t = a.push(delta(1, DRAIN_KEY, S + S / 4, S + S / 4, 0));
        assert_eq!(t.len(), 1);
        assert!(a.complete());
    }

    /// A worker that stops sending (a shard killed, or with nothing to do) holds the others'
    /// seconds back only until it is ended: then they are final, and the run complete.
    #[test]
    fn an_ended_worker_releases_the_seconds_waiting_for_it() {
        let tl = Timeline {
            warmup_ns: 0,
            load_end_ns: Some(3 * S),
        };
        let mut a = Aggregator::new(tl, 2);
        assert!(
            a.push(delta(0, 0, 0, S, 5)).is_empty(),
            "waits for worker 1"
        );
        assert!(a.push(delta(0, S, S, 2 * S, 6)).is_empty());
        assert!(a.push(delta(0, DRAIN_KEY, 2 * S, 2 * S, 0)).is_empty());
        let t = a.end_worker(1);
        assert_eq!(t.iter().map(|t| t.requests).collect::<Vec<_>>(), [5, 6, 0]);
        assert!(a.complete());
        let o = a.finish(2, LatencyBasis::ActualSend);
        assert_eq!(o.summary.exchanges.completed, 11);
    }

    #[test]
    fn conservation_counts_failures_and_in_flight() {
        let tl = Timeline {
            warmup_ns: 0,
            load_end_ns: Some(S),
        };
        let mut a = Aggregator::new(tl, 1);
        let mut d = delta(0, 0, 0, S, 10);
        d.counters.sent = 15;
        d.counters.failed = 3;
        a.push(d);
        let mut d = delta(0, DRAIN_KEY, S, S, 0);
        d.in_flight = 2;
        a.push(d);
        let o = a.finish(1, LatencyBasis::ActualSend);
        assert_eq!(o.summary.exchanges.in_flight_at_end, 2);
        assert!(o.summary.exchanges.balanced());
    }

    /// The durable stream keeps a second's settled per-message figures, not the raw spans:
    /// kept segments have none, and replayed into a fresh aggregator (as `barrage report DIR`
    /// and `merge` do) they give the same first, last and spread as the live run, the messages
    /// still open at the drain included.
    #[test]
    fn kept_segments_carry_settled_spans_and_replay_to_the_same_figures() {
        use crate::recorder::MsgSpan;
        let tl = Timeline {
            warmup_ns: 0,
            load_end_ns: Some(10 * S),
        };
        let mut live = Aggregator::new(tl, 2);
        live.keep_segments();
        let mut kept = Vec::new();
        for k in 0..10u64 {
            for w in 0..2u32 {
                let mut d = delta(w, k * S, k * S, (k + 1) * S, 1);
                d.counters.broadcast.delivered = 3;
                // Message k has recipients in both workers; message 100 + k in one.
                d.msg_spans.push((
                    k,
                    MsgSpan {
                        first_us: 100 + u64::from(w) * 50 + k,
                        last_us: 400 + u64::from(w) * 300,
                        n: 2,
                        expected: 0,
                    },
                ));
                if w == 0 {
                    d.msg_spans.push((
                        100 + k,
                        MsgSpan {
                            first_us: 7,
                            last_us: 9,
                            n: 1,
                            expected: 0,
                        },
                    ));
                }
                live.push(d);
                kept.extend(live.take_segments());
            }
        }
        for w in 0..2 {
            live.push(delta(w, DRAIN_KEY, 10 * S, 10 * S, 0));
            kept.extend(live.take_segments());
        }
        assert_eq!(kept.len(), 11);
        assert!(kept.iter().all(|d| d.msg_spans.is_empty()));
        assert!(
            !kept[9].settled.is_empty(),
            "messages settle as the run goes"
        );
        let mut again = Aggregator::new(tl, 1);
        for d in kept {
            // Through the stream's own encoding.
            let d: Delta = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
            again.push(d);
        }
        let b = |a: Aggregator| {
            let o = a.finish(2, LatencyBasis::ActualSend);
            let b = o.summary.broadcast;
            b.map(|b| (b.first_us, b.last_us, b.spread_us))
        };
        let (l, r) = (b(live), b(again));
        assert_eq!(l, r);
        let (first, _, spread) = l.unwrap();
        assert_eq!(first.unwrap().count, 20, "one record per message");
        assert_eq!(
            spread.unwrap().max,
            700 - 100,
            "over both workers' recipients"
        );
    }

    /// A message whose every expected recipient has it settles at once (a killed run loses
    /// its figures only if it was still under way); one short of a recipient waits the settle
    /// time; one that reached no one here is dropped unrecorded.
    #[test]
    fn a_complete_message_settles_at_once() {
        use crate::recorder::MsgSpan;
        let got = |f, l, n| MsgSpan {
            first_us: f,
            last_us: l,
            n,
            expected: 0,
        };
        let sent = |expected| MsgSpan {
            expected,
            ..MsgSpan::default()
        };
        let mut sp = Spans::default();
        // Message 1: the sender expects 3; two recipients in one worker, one in another.
        sp.add(&[(1, sent(3)), (1, got(100, 200, 2))]);
        sp.add(&[(1, got(150, 150, 1))]);
        // Message 2: expects 3, two came. Message 3: expected 2, reached no one here.
        sp.add(&[(2, sent(3)), (2, got(10, 20, 2)), (3, sent(2))]);
        let now = sp.tick(false);
        assert_eq!(
            now.first.stats().map(|s| s.count),
            Some(1),
            "message 1 only"
        );
        assert_eq!(now.spread.stats().map(|s| s.max), Some(100));
        assert_eq!(sp.open.len(), 2);
        // Added before the first tick: they settle on tick SPAN_SETTLE.
        for _ in 2..SPAN_SETTLE {
            assert!(sp.tick(false).is_empty());
        }
        let late = sp.tick(false);
        assert_eq!(
            late.first.stats().map(|s| s.count),
            Some(1),
            "message 2; 3 unrecorded"
        );
        assert!(sp.open.is_empty());
        assert_eq!(sp.all.first.stats().map(|s| s.count), Some(2));
    }

    #[test]
    fn a_broadcast_message_is_one_record_over_its_recipients_in_every_worker() {
        use crate::recorder::MsgSpan;
        let span = |f, l, n| MsgSpan {
            first_us: f,
            last_us: l,
            n,
            expected: 0,
        };
        let mut sp = Spans::default();
        sp.add(&[(7, span(100, 300, 3))]);
        sp.tick(false);
        // Another worker's recipients of message 7, a tick later, and a new message 8.
        sp.add(&[(7, span(50, 120, 2)), (8, span(10, 10, 1))]);
        for _ in 0..SPAN_SETTLE - 1 {
            sp.tick(false);
        }
        assert_eq!(sp.open.len(), 2, "neither settled yet");
        sp.tick(false);
        assert_eq!(sp.open.len(), 0);
        let (f, l, s) = (
            sp.all.first.stats().unwrap(),
            sp.all.last.stats().unwrap(),
            sp.all.spread.stats().unwrap(),
        );
        assert_eq!((f.count, f.min, f.max), (2, 10, 50));
        assert_eq!((l.count, l.min, l.max), (2, 10, 300));
        assert_eq!((s.min, s.max), (0, 250));
    }
}
