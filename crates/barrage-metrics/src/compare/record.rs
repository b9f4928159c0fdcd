//! What a comparison leaves in the records: a figure's unit and better direction (read by
//! [`crate::vocabulary`]), and the `--baseline` gate's check that a [`crate::RunResult`]
//! keeps.

use serde::{Deserialize, Serialize};

/// Which direction of change is an improvement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

/// The unit a figure is stored in, for renderers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Microseconds.
    Duration,
    /// Per second.
    Rate,
    /// A fraction in [0, 1].
    Fraction,
    /// Percent of one core.
    Percent,
    Bytes,
    Count,
}

/// One `--max-regression` limit checked against a baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Regression {
    pub metric: String,
    /// `None` when the run does not have the figure.
    pub reference: Option<f64>,
    pub candidate: Option<f64>,
    /// `(candidate − reference) / reference · 100`; `None` when not computable (a figure is
    /// missing, or the reference is 0 and the candidate is not).
    pub change_pct: Option<f64>,
    pub limit_pct: f64,
    /// Worse by more than `limit_pct` (higher for latency, errors, cpu, rss; lower for rps and
    /// connections) and significant. From a reference of 0, any significant worsening counts.
    pub regressed: bool,
    pub significant: bool,
    /// The runs held enough data to judge the difference (the mark is not `?`).
    #[serde(default = "yes")]
    pub judged: bool,
}

fn yes() -> bool {
    true
}

impl Regression {
    /// Whether both runs have the figure, i.e. the limit could be checked at all.
    pub fn measured(&self) -> bool {
        self.reference.is_some() && self.candidate.is_some()
    }

    /// Whether the limit was checked: both runs have the figure and enough data to judge it.
    pub fn checked(&self) -> bool {
        self.measured() && self.judged
    }

    /// Whether this limit fails the `--max-regression` gate: it regressed, or it could not be
    /// checked (as a threshold that cannot be measured fails).
    pub fn fails(&self) -> bool {
        self.regressed || !self.checked()
    }
}

/// `--baseline FILE` with `--max-regression`: every limit checked against the earlier run, as
/// the result records it (`baseline` in the JSON), so every report names the regression that
/// failed the run (exit 3) where its verdict is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineCheck {
    /// The baseline file as given.
    pub file: String,
    /// One per limit, in the order given.
    pub regressions: Vec<Regression>,
}

impl BaselineCheck {
    /// The limits that fail the gate: regressed, or could not be checked.
    pub fn failed(&self) -> impl Iterator<Item = &Regression> {
        self.regressions.iter().filter(|r| r.fails())
    }

    /// Whether the run regressed against the baseline (exit 3).
    pub fn regressed(&self) -> bool {
        self.failed().next().is_some()
    }
}
