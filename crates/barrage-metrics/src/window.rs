//! A span of the run's clock, and the seconds of the load that fall in one: the unit every
//! figure ([`crate::figures`]) and every judgement ([`crate::analysis`]) is taken over.

use crate::aggregate::Tick;
use crate::monitor::ProcSample;
use crate::timeline::Phase;
use serde::{Deserialize, Serialize};

/// A span of the run's clock: samples with `from_s < t ≤ to_s`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub from_s: f64,
    pub to_s: f64,
}

impl Window {
    pub fn contains(&self, t: f64) -> bool {
        t > self.from_s && t <= self.to_s
    }

    pub fn select<'a>(&self, samples: &'a [ProcSample]) -> impl Iterator<Item = &'a ProcSample> {
        let w = *self;
        samples.iter().filter(move |s| w.contains(s.t))
    }
}

/// The full measured seconds of the steady state: those that began at or after its start (a
/// second that began before, say during the last arrivals, is not steady) and ended by its end.
pub fn steady_ticks(ticks: &[Tick], steady: Window) -> impl Iterator<Item = &Tick> {
    ticks.iter().filter(move |t| {
        t.phase == Phase::Measured
            && t.dt >= 0.999
            && t.t - t.dt >= steady.from_s - 1e-6
            && t.t <= steady.to_s
    })
}
