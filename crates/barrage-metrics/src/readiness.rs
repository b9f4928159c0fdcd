//! Readiness: one row per aspect of a server (performance, stability, resource use, memory
//! management, errors), each Pass, Warn, Fail or Not measured, with its figure and its rule.
//!
//! Built only from measured data: an aspect without the data to judge it is `NotMeasured`,
//! never a pass (without monitoring, resource use and memory management are not measured).
//! Every rule is explicit and printed with its row:
//!
//! - **performance**: no completed exchange → Fail. With latency/throughput thresholds
//!   (`p*`, `latency.*`, `connect.p99`, `rps.*`, `requests`, `connections.peak`): all passed →
//!   Pass, else Fail. Without: p99 ≤ 10 × p50 → Pass, else Warn (a long tail, never a Fail
//!   without a user's limit), on the latency the run measures: a broadcast scenario's
//!   deliveries (its messages are fire-and-forget), else the exchanges'; nothing timed → Not
//!   measured. A Pass becomes Warn when the generator was saturated in more
//!   than 5 % of the seconds (the figures may be barrage's limit, not the server's), or when
//!   other processes used more than 20 % of a core on average under load (a shared machine).
//! - **stability**: fewer than [`MIN_STEADY_SECONDS`] full seconds in the steady state → Not
//!   measured ("not enough steady seconds"); else CV of the steady per-second rate < 5 % →
//!   Pass, < 10 % → Warn, else Fail; a Pass becomes Warn when throughput grows or shrinks or
//!   p99 grows (trend rule; an "unclear" trend claims nothing either way). Fail or Warn is
//!   Warn, "inconclusive", when in at least half the steady seconds that dipped more than 5 %
//!   below the mean the generator was saturated or its machine busy (`busy.rs`): a server is
//!   not failed for the noise of the machine that loads it.
//! - **resource use**: server CPU on average < 80 % of its usable cores → Pass, < 95 % → Warn,
//!   else Fail (usable cores: its most threads, at most the machine's cores); a Pass becomes
//!   Warn when its open fds grow beyond the connections barrage holds open (fds that follow
//!   arriving users are not a warning).
//! - **memory management**: no leak and RSS back after the recovery phase → Pass; leak → Fail;
//!   anything else (inconclusive, no recovery phase, not back without growth) → Warn.
//! - **errors**: failed requests / (completed + failed requests) after the warm-up < 0.1 % → Pass, < 1 % → Warn,
//!   else Fail; a Pass becomes Warn when the error rate grows (trend rule).
//! - **correctness**: unexpected replies / completed exchanges: 0 → Pass, ≤ 1 % → Warn, else
//!   Fail (a reply framing that does not match the server is not a pass).
//! - **connections**: the planned connections (users) that were ever ready: all → Pass,
//!   ≥ 99 % → Warn, else Fail; then those open in the steady state ([`steady_open`]): fewer
//!   than 99 % in the typical (median) second → Fail when the run had errors (the server did
//!   not hold them), else at most Warn (closed without an error: `Connection: close`); a Pass
//!   becomes Warn when fewer than 99 % were open in some second.

mod assess;
mod busy;
mod connections;
#[cfg(test)]
mod tests;

pub use assess::assess;
pub use connections::{steady_open, SteadyOpen};

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Aspect {
    #[serde(rename = "performance")]
    Performance,
    #[serde(rename = "stability")]
    Stability,
    #[serde(rename = "resource use")]
    ResourceUse,
    #[serde(rename = "memory management")]
    MemoryManagement,
    #[serde(rename = "errors")]
    Errors,
    #[serde(rename = "correctness")]
    Correctness,
    #[serde(rename = "connections")]
    Connections,
}

impl Aspect {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Performance => "performance",
            Self::Stability => "stability",
            Self::ResourceUse => "resource use",
            Self::MemoryManagement => "memory management",
            Self::Errors => "errors",
            Self::Correctness => "correctness",
            Self::Connections => "connections",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grade {
    Pass,
    Warn,
    Fail,
    NotMeasured,
}

impl Grade {
    /// Pass becomes Warn; the others stay.
    pub(crate) fn at_most_warn(self) -> Self {
        if self == Self::Pass {
            Self::Warn
        } else {
            self
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub aspect: Aspect,
    pub status: Grade,
    pub figure: String,
    pub rule: String,
}

pub const PERFORMANCE_RULE: &str = "no completed exchange: Fail; with latency/throughput \
    thresholds: Pass if all pass, else Fail; without: Pass if p99 <= 10 x p50, else Warn, on \
    the latency the run measures (broadcast deliveries when there are any, else the exchanges'; \
    not measured when nothing was timed); Pass \
    becomes Warn if the generator was saturated (for any cause) \
    in more than 5 % of the seconds, or if other processes used more than 20 % of a core on \
    average under load";
pub const STABILITY_RULE: &str = "fewer than 8 full steady seconds: not measured (not enough \
    steady seconds to judge); else CV of the steady per-second rate < 5 %: Pass, < 10 %: Warn, \
    else Fail; Pass becomes Warn if throughput drifts (grows or shrinks by the trend rule) or \
    p99 grows; Fail or Warn is Warn, inconclusive, when in at least half the steady seconds \
    that dipped more than 5 % below the mean the generator was saturated or its machine busy \
    (other processes above 20 % of a core, or its cores at least 90 % busy)";

/// Full seconds of the steady state the stability row needs before it grades anything.
pub const MIN_STEADY_SECONDS: usize = 8;
pub const RESOURCE_RULE: &str = "server CPU average < 80 % of its usable cores (its most \
    threads, at most the machine's cores): Pass, < 95 %: Warn, else Fail; Pass becomes Warn if \
    its open fds grow beyond the connections barrage holds open (trend rule)";
pub const MEMORY_RULE: &str = "no leak and RSS back after the recovery phase: Pass; leak: Fail; \
    otherwise (inconclusive, no recovery phase, not back): Warn";
pub const ERRORS_RULE: &str = "failed requests (failed after sending, or not sent) / (completed + \
    failed) after the warm-up < 0.1 %: Pass, \
    < 1 %: Warn, else Fail; Pass becomes Warn if the error rate grows; a second of the load \
    with no connection open (the server went away) is Fail";

pub const CONNECTIONS_RULE: &str = "planned connections (users) ever ready: all: Pass, >= 99 %: \
    Warn, else Fail; then the steady state (a URL run's from its last connection's first \
    ready to the load's end), open at the end of each full second over the plan: typically \
    (median) < 99 %: Fail when the run had errors (the server did not hold them), else at most \
    Warn (closed without an error, e.g. Connection: close); fewer than 99 % in some second: \
    Pass becomes Warn";

pub(crate) fn row(aspect: Aspect, status: Grade, figure: String, rule: &str) -> Row {
    Row {
        aspect,
        status,
        figure,
        rule: rule.into(),
    }
}
