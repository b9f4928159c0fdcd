//! Per-step metrics of a scenario run: for each step a user sends (`login`, `join`, `say`,
//! an HTTP route), what was sent, completed, failed by class, never sent, and its latency.
//!
//! A step's exchanges are a subset of the run's, so each step conserves on its own:
//! `sent = completed + failed + in flight at the end`, and the run's counts are the sums over
//! its steps. Recorded by the worker that owns the user, in plain adds; a step's latency
//! histogram is allocated the first time it records (a step never reached costs nothing).

use crate::error::{ErrorClass, ErrorCounts};
use crate::histogram::{LatencyStats, OptHistogram};
use serde::{Deserialize, Serialize};

/// What happened to one step's exchanges.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepCount {
    pub sent: u64,
    /// Replies that arrived and met the step's `expect` (and HTTP status).
    pub completed: u64,
    /// Sent and then failed, by the reason (timeout, connection lost, `mismatch` when the
    /// reply did not meet `expect`, `unexpected_status`).
    pub failed: u64,
    pub failed_by: ErrorCounts,
    /// Open-loop steps (`every`): due and never sent (the user departed with them due, or a
    /// backlog overflowed).
    #[serde(default)]
    pub not_sent: u64,
    /// Captures of this step that found nothing in a completed reply.
    #[serde(default)]
    pub capture_misses: u64,
}

impl StepCount {
    fn merge(&mut self, o: &StepCount) {
        self.sent += o.sent;
        self.completed += o.completed;
        self.failed += o.failed;
        self.failed_by.merge(&o.failed_by);
        self.not_sent += o.not_sent;
        self.capture_misses += o.capture_misses;
    }
}

/// One step's counts and latency over some interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepRec {
    #[serde(flatten)]
    pub c: StepCount,
    /// From the intended send time for `every` steps, from the send otherwise.
    pub latency: OptHistogram,
    /// HTTP `Server-Timing`: the server's time, and the latency less it.
    #[serde(default)]
    pub server: OptHistogram,
    #[serde(default)]
    pub server_gap: OptHistogram,
}

impl StepRec {
    pub fn merge(&mut self, o: &StepRec) {
        self.c.merge(&o.c);
        self.latency.merge(&o.latency);
        self.server.merge(&o.server);
        self.server_gap.merge(&o.server_gap);
    }
}

/// Per-step records, index = step (in the order the scenario defines them).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Steps(Vec<StepRec>);

impl Steps {
    pub fn with_len(n: usize) -> Self {
        Self(vec![StepRec::default(); n])
    }

    /// Step `i`'s record (grown when needed: a merge of records of unequal length).
    #[inline]
    pub fn at(&mut self, i: usize) -> &mut StepRec {
        if i >= self.0.len() {
            self.0.resize(i + 1, StepRec::default());
        }
        &mut self.0[i]
    }

    #[inline]
    pub fn sent(&mut self, i: usize, n: u64) {
        self.at(i).c.sent += n;
    }

    /// A reply of step `i` completed after `ns`.
    #[inline]
    pub fn completed(&mut self, i: usize, ns: u64) {
        let s = self.at(i);
        s.c.completed += 1;
        s.latency.record_ns(ns);
    }

    /// `n` sent exchanges of step `i` failed with `class`.
    #[inline]
    pub fn failed(&mut self, i: usize, class: ErrorClass, n: u64) {
        let s = self.at(i);
        s.c.failed += n;
        s.c.failed_by.add(class, n);
    }

    /// A completed reply of step `i` said the server spent `server_ns` of its `latency_ns`.
    #[inline]
    pub fn server_time(&mut self, i: usize, server_ns: u64, latency_ns: u64) {
        let s = self.at(i);
        s.server.record_ns(server_ns);
        s.server_gap.record_ns(latency_ns.saturating_sub(server_ns));
    }

    #[inline]
    pub fn not_sent(&mut self, i: usize, n: u64) {
        self.at(i).c.not_sent += n;
    }

    #[inline]
    pub fn capture_miss(&mut self, i: usize) {
        self.at(i).c.capture_misses += 1;
    }

    pub fn merge(&mut self, o: &Steps) {
        for (i, s) in o.0.iter().enumerate() {
            self.at(i).merge(s);
        }
    }

    /// The records so far; this keeps zeroed records of the same length.
    pub fn take(&mut self) -> Steps {
        let n = self.0.len();
        std::mem::replace(self, Steps::with_len(n))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&StepRec> {
        self.0.get(i)
    }

    pub fn iter(&self) -> impl Iterator<Item = &StepRec> + '_ {
        self.0.iter()
    }
}

/// One step over the measured window (after the warm-up, drain included), as reports and
/// thresholds read it (`steps.NAME.p99`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepSummary {
    /// The step's name (`name = "..."` in the scenario, or `step N` for an unnamed one).
    pub name: String,
    #[serde(flatten)]
    pub c: StepCount,
    /// `(failed + not_sent) / (completed + failed + not_sent)`; `None` with nothing counted.
    pub error_rate: Option<f64>,
    /// `None` when nothing completed.
    pub latency_us: Option<LatencyStats>,
    /// Whether latency is timed from the intended send time (an `every` step).
    #[serde(default)]
    pub open_loop: bool,
    /// HTTP `Server-Timing`: the server's own time, and the client's latency less it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_us: Option<LatencyStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_gap_us: Option<LatencyStats>,
}

impl StepSummary {
    pub fn of(name: String, rec: &StepRec, open_loop: bool) -> Self {
        let bad = rec.c.failed + rec.c.not_sent;
        let all = rec.c.completed + bad;
        Self {
            name,
            c: rec.c.clone(),
            error_rate: (all > 0).then(|| bad as f64 / all as f64),
            latency_us: rec.latency.stats(),
            open_loop,
            server_us: rec.server.stats(),
            server_gap_us: rec.server_gap.stats(),
        }
    }
}

/// One step in one tick of the time series (per-step latency over time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TickStep {
    pub completed: u64,
    pub failed: u64,
    pub p50: u64,
    pub p99: u64,
}

impl TickStep {
    pub fn of(rec: &StepRec) -> Self {
        let l = rec.latency.stats().unwrap_or_default();
        Self {
            completed: rec.c.completed,
            failed: rec.c.failed,
            p50: l.p50,
            p99: l.p99,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_merge_take_and_summarize() {
        let mut a = Steps::default();
        a.sent(1, 3);
        a.completed(1, 2_000);
        a.failed(1, ErrorClass::Timeout, 1);
        a.not_sent(1, 1);
        let mut b = Steps::with_len(3);
        b.sent(2, 1);
        b.completed(2, 5_000);
        b.capture_miss(2);
        a.merge(&b);
        assert_eq!(a.len(), 3);
        let t = a.take();
        assert_eq!(a.len(), 3, "the length is kept");
        assert_eq!(a.get(1).unwrap().c, StepCount::default());
        let s = StepSummary::of("join".into(), t.get(1).unwrap(), false);
        assert_eq!((s.c.sent, s.c.completed, s.c.failed), (3, 1, 1));
        assert_eq!(s.error_rate, Some(2.0 / 3.0));
        assert_eq!(s.latency_us.unwrap().p50, 2);
        let none = StepSummary::of("idle".into(), t.get(0).unwrap(), false);
        assert_eq!((none.error_rate, none.latency_us), (None, None));
        let j = serde_json::to_string(&t).unwrap();
        let back: Steps = serde_json::from_str(&j).unwrap();
        assert_eq!(back, t);
    }
}
