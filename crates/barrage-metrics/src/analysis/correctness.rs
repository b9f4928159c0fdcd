//! Reply framing: whether the replies barrage counted are the replies the server sent.
//!
//! A framing that does not match the server's replies (`--expect line` against redis' two-line
//! bulk replies, say) does not fail exchanges: the first part of each reply completes one, and
//! the rest arrives with nothing in flight as an *unexpected reply*. Latency and throughput then
//! count the wrong things, so a run whose unexpected replies exceed [`UNEXPECTED_MAX_PCT`] of
//! its completions is flagged (warning in every output, readiness "correctness" Fail) instead
//! of passing as error-free.

use crate::aggregate::Exchanges;
use serde::{Deserialize, Serialize};

/// Unexpected replies above this share of completed exchanges (whole run) are a wrong framing.
pub const UNEXPECTED_MAX_PCT: f64 = 1.0;

pub const CORRECTNESS_RULE: &str = "unexpected replies (data with no exchange in flight) / \
    completed exchanges, whole run: 0: Pass, <= 1 %: Warn, > 1 %: Fail (the reply framing, \
    --expect, does not match what the server sends)";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Correctness {
    pub completed: u64,
    pub unexpected_replies: u64,
    /// Unexpected replies in % of completed exchanges (100 when nothing completed but
    /// something unexpected arrived).
    pub unexpected_pct: f64,
    /// Above [`UNEXPECTED_MAX_PCT`]: the framing is probably wrong.
    pub framing_suspect: bool,
    pub rule: String,
}

pub fn correctness(x: &Exchanges) -> Correctness {
    let (done, odd) = (x.completed, x.unexpected_replies);
    let unexpected_pct = match (done, odd) {
        (_, 0) => 0.0,
        (0, _) => 100.0,
        (d, o) => o as f64 / d as f64 * 100.0,
    };
    Correctness {
        completed: done,
        unexpected_replies: odd,
        unexpected_pct,
        framing_suspect: unexpected_pct > UNEXPECTED_MAX_PCT,
        rule: CORRECTNESS_RULE.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(completed: u64, unexpected_replies: u64) -> Exchanges {
        Exchanges {
            sent: completed,
            completed,
            unexpected_replies,
            ..Default::default()
        }
    }

    #[test]
    fn unexpected_replies_beyond_one_percent_are_a_wrong_framing() {
        let c = correctness(&x(1000, 0));
        assert_eq!((c.unexpected_pct, c.framing_suspect), (0.0, false));
        let c = correctness(&x(1000, 10));
        assert_eq!((c.unexpected_pct, c.framing_suspect), (1.0, false));
        let c = correctness(&x(1000, 11));
        assert!(c.framing_suspect);
        // redis GET with `--expect line`: every reply's second line is unexpected.
        let c = correctness(&x(1000, 870));
        assert_eq!((c.unexpected_pct, c.framing_suspect), (87.0, true));
        let c = correctness(&x(0, 3));
        assert_eq!((c.unexpected_pct, c.framing_suspect), (100.0, true));
    }
}
