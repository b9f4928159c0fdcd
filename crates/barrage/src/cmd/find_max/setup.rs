//! What every step of a search shares: its setup, checked before the first step, and the
//! run flags a step runs with.

use super::search::Bounds;
use crate::resolve::cli::FindMaxArgs;
use barrage_metrics::thresholds::Threshold;
use std::time::Duration;

/// Share of its worker threads' CPU at which barrage is its own limit over a step.
pub(crate) const CPU_LIMIT: f64 = barrage_metrics::analysis::CPU_SATURATED;

/// Everything checked before the first step.
pub(crate) struct Setup {
    pub(crate) slos: Vec<Threshold>,
    pub(crate) bounds: Bounds,
    pub(crate) json: Option<String>,
    pub(crate) report: Option<(String, barrage_report::Format)>,
    /// Longest one step can take: warm-up + step + drain + connect timeout.
    pub(crate) step_bound: Duration,
}

/// The run flags of one step: the user's, with the step's rate, length and warm-up.
pub(crate) fn step_args(a: &FindMaxArgs, rate: f64) -> crate::resolve::cli::RunArgs {
    let mut r = a.run.clone();
    r.modes.rate = Some(rate);
    r.load.duration = Some(a.step_duration);
    r.load.warmup = Some(a.step_warmup);
    r.output.json = None;
    r.output.report = None;
    r
}
