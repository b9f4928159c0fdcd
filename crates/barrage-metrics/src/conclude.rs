//! A run's judgement, in order: [`RunResult::conclude`] analyses the finished run, evaluates
//! its thresholds and assesses its readiness over that analysis, and stores all three in the
//! record. Above every judge; the record ([`crate::result`]) knows only their results.

use crate::analysis::analyze;
use crate::readiness::assess;
use crate::result::RunResult;
use crate::thresholds::{evaluate_all, Facts, Threshold};

impl RunResult {
    /// Analyse the run (with its monitoring, if any), evaluate `thresholds` and assess
    /// readiness; everything lands in the record. `recovery_s` is the length of the recovery
    /// window after the load, when one was sampled.
    pub fn conclude(&mut self, thresholds: &[Threshold], recovery_s: Option<f64>) {
        let analysis = analyze(self, self.monitor.as_ref(), recovery_s);
        let facts = Facts::from_result(self, Some(&analysis));
        self.thresholds = evaluate_all(thresholds, &facts);
        self.readiness = assess(self, &analysis, &self.thresholds);
        // Both lists are end times of ticks, in order: one pass, not a search per tick.
        let sat = &analysis.saturation;
        let (mut steady, mut ramp) = (
            sat.times.iter().peekable(),
            sat.ramp_times.iter().peekable(),
        );
        for tick in &mut self.timeseries {
            let in_steady = steady.next_if(|t| **t == tick.t).is_some();
            let in_ramp = ramp.next_if(|t| **t == tick.t).is_some();
            tick.saturated = in_steady || in_ramp;
        }
        self.analysis = Some(analysis);
    }
}
