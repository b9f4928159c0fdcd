//! The figures of a whole run ([`RunResult`]): the headline rate and [`RunFigures::of`], over
//! the window functions of [`crate::figures`].

use super::{MonitorSeries, RunFigures};
use crate::analysis::AnalysisReport;
use crate::result::RunResult;
use crate::timeline::Phase;

/// The one throughput figure a run is summed up by (the summary's Answer line, the readiness
/// performance row, the reports' overview, `barrage versus`), and the window it covers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeadlineRate {
    /// Completed exchanges per second.
    pub rps: f64,
    /// `Some((from_s, to_s))`: the steady state's mean rate, because the run ramped (the
    /// connections or users came up after the measured window began, or left before the load
    /// ended), so the measured average covers the ramp too. `None`: the measured window's
    /// average, `summary.rps.avg`.
    pub steady: Option<(f64, f64)>,
}

/// The run's [`HeadlineRate`]: the steady state's rate when the run ramped, else the measured
/// window's average. `a`: the analysis when it is not in `r` yet (readiness is assessed
/// before it is stored).
pub fn headline_rate(r: &RunResult, a: Option<&AnalysisReport>) -> HeadlineRate {
    let avg = HeadlineRate {
        rps: r.summary.rps.avg,
        steady: None,
    };
    let Some(a) = a.or(r.analysis.as_ref()) else {
        return avg;
    };
    let Some(st) = &a.stability else {
        return avg;
    };
    // The steady state of a run that did not ramp begins with the measured window (at the
    // warm-up's end) or at the end of its first second (the first tick with every connection
    // open): it is then the measured window, and its average says the same.
    let first_end = r
        .timeseries
        .iter()
        .find(|t| t.phase == Phase::Measured)
        .map_or(0.0, |t| t.t);
    let ramped = a.steady_from_s > first_end + 1e-6 || a.steady_to_s < a.load_end_s - 1e-6;
    if !ramped {
        return avg;
    }
    HeadlineRate {
        rps: st.mean_rps,
        steady: Some((a.steady_from_s, a.steady_to_s)),
    }
}

impl RunFigures {
    /// `None` without monitoring (or with only the samples every run takes unasked).
    pub fn of(r: &RunResult) -> Option<Self> {
        let m = MonitorSeries::shown(r.monitor.as_ref())?;
        Self::from_monitor(&r.timeseries, m, r.environment.cores)
    }
}
