//! The run's timeline: where one-second segments, warm-up and load end fall.
//!
//! Workers and the aggregator compute the same boundaries from the same pure function, so a
//! segment is identified by its start time alone and deltas from different workers (threads
//! today, processes and machines later) line up without coordination.

use serde::{Deserialize, Serialize};

pub const SECOND_NS: u64 = 1_000_000_000;
/// Segment key of the drain phase (after the load stopped, waiting for replies in flight).
pub const DRAIN_KEY: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Warmup,
    #[default]
    Measured,
    Drain,
}

/// Boundaries in nanoseconds since the run's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    pub warmup_ns: u64,
    /// End of the load phase; `None` when the run is bounded by a request count only.
    pub load_end_ns: Option<u64>,
}

impl Timeline {
    /// The first boundary strictly after `t`: the next whole second, warm-up end or load end.
    pub fn next_boundary(&self, t: u64) -> u64 {
        let mut b = (t / SECOND_NS + 1).saturating_mul(SECOND_NS);
        if self.warmup_ns > t {
            b = b.min(self.warmup_ns);
        }
        if let Some(end) = self.load_end_ns {
            if end > t {
                b = b.min(end);
            } else {
                b = DRAIN_KEY;
            }
        }
        b
    }

    /// The phase of the segment that starts at `start`.
    pub fn phase(&self, start: u64) -> Phase {
        if start == DRAIN_KEY || self.load_end_ns.is_some_and(|e| start >= e) {
            Phase::Drain
        } else if start < self.warmup_ns {
            Phase::Warmup
        } else {
            Phase::Measured
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const S: u64 = SECOND_NS;

    #[test]
    fn boundaries_fall_on_seconds_warmup_and_end() {
        let tl = Timeline {
            warmup_ns: 1_500_000_000,
            load_end_ns: Some(3_200_000_000),
        };
        let mut t = 0;
        let mut seen = vec![];
        while t != DRAIN_KEY {
            t = tl.next_boundary(t);
            seen.push(t);
        }
        assert_eq!(
            seen,
            vec![S, 1_500_000_000, 2 * S, 3 * S, 3_200_000_000, DRAIN_KEY]
        );
        assert_eq!(tl.phase(0), Phase::Warmup);
        assert_eq!(tl.phase(S), Phase::Warmup);
        assert_eq!(tl.phase(1_500_000_000), Phase::Measured);
        assert_eq!(tl.phase(3 * S), Phase::Measured);
        assert_eq!(tl.phase(3_200_000_000), Phase::Drain);
        assert_eq!(tl.phase(DRAIN_KEY), Phase::Drain);
    }

    #[test]
    fn unbounded_timeline_ticks_every_second() {
        let tl = Timeline {
            warmup_ns: 0,
            load_end_ns: None,
        };
        assert_eq!(tl.next_boundary(0), S);
        assert_eq!(tl.next_boundary(S), 2 * S);
        assert_eq!(tl.next_boundary(S + 1), 2 * S);
        assert_eq!(tl.phase(5 * S), Phase::Measured);
    }
}
