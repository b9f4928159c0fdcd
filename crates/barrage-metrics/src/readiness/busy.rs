//! Whether an uneven rate was the load generator's machine's doing: the seconds that dipped
//! below the steady mean, set beside what the run measured of its own side in them (the
//! generator saturated, by the one saturation rule; other processes' CPU; the machine's CPU).
//! A server is not failed for the noise of the machine that loads it (issue 43).

use crate::aggregate::Tick;
use crate::analysis::{AnalysisReport, MACHINE_FULL_PCT, OTHER_MATERIAL_PCT};
use crate::result::RunResult;
use crate::window::{steady_ticks, Window};

/// A steady second this far below the steady mean (a share of it) is a dip.
pub const DIP: f64 = 0.05;

/// The dips of an uneven steady state that the generator's side explains.
#[derive(Debug, PartialEq)]
pub(super) struct BusyDips {
    /// Seconds that dipped, and those in which the generator or its machine was busy.
    pub dips: usize,
    pub busy: usize,
    /// What was busy, as measured: "other processes used 1.6 of 2 cores", ...
    pub why: String,
}

fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// The mean of the samples within half a tick of the tick's end (a sample's CPU covers the
/// interval that ends at its time), or the first one after it when there is none there (the
/// sampler fell behind), as the saturation rule reads them; `None` without one.
fn near<T>(tick: &Tick, samples: &[T], point: impl Fn(&T) -> (f64, f64)) -> Option<f64> {
    let half = tick.dt.max(1e-9) / 2.0;
    let w = Window {
        from_s: tick.t - half,
        to_s: tick.t + half,
    };
    mean(
        samples
            .iter()
            .map(&point)
            .filter(|p| w.contains(p.0))
            .map(|p| p.1),
    )
    .or_else(|| {
        samples
            .iter()
            .map(&point)
            .find(|p| p.0 > tick.t)
            .map(|p| p.1)
    })
}

/// `Some` when in at least half of the steady seconds that dipped more than [`DIP`] below the
/// mean the generator was saturated (any cause), other processes took a material share of
/// the CPU, or the machine's cores were full; `None` otherwise (the dips are the server's, as
/// far as this run can tell) or without a stability figure.
pub(super) fn busy_dips(result: &RunResult, a: &AnalysisReport) -> Option<BusyDips> {
    let st = a.stability.as_ref()?;
    let steady = Window {
        from_s: a.steady_from_s,
        to_s: a.steady_to_s,
    };
    let dips: Vec<&Tick> = steady_ticks(&result.timeseries, steady)
        .filter(|t| (t.requests as f64 / t.dt) < st.mean_rps * (1.0 - DIP))
        .collect();
    let other = a.contention.as_ref().map_or(&[][..], |c| &c.per_second[..]);
    let host = result.monitor.as_ref().map_or(&[][..], |m| &m.host[..]);
    let (mut busy, mut saturated) = (0, 0);
    let (mut others, mut machine) = (Vec::new(), Vec::new());
    for t in &dips {
        let sat = a.saturation.times.iter().any(|s| (s - t.t).abs() < 1e-6);
        let o = near(t, other, |o| (o.t, o.pct));
        let m = near(t, host, |h| (h.t, h.cpu_pct));
        if sat
            || o.is_some_and(|o| o > OTHER_MATERIAL_PCT)
            || m.is_some_and(|m| m >= MACHINE_FULL_PCT)
        {
            busy += 1;
            saturated += usize::from(sat);
            others.extend(o);
            machine.extend(m);
        }
    }
    if busy == 0 || busy * 2 < dips.len() {
        return None;
    }
    let cores = result.environment.cores;
    let mut why = Vec::new();
    if let Some(o) = mean(others.into_iter()).filter(|o| *o > OTHER_MATERIAL_PCT) {
        why.push(if cores > 0 {
            format!("other processes used {:.1} of {cores} cores", o / 100.0)
        } else {
            format!("other processes used {o:.0} % of a core")
        });
    } else if let Some(m) = mean(machine.into_iter()).filter(|m| *m >= MACHINE_FULL_PCT) {
        why.push(format!("the machine's CPU was {m:.0} % busy"));
    }
    if saturated > 0 {
        why.push(format!(
            "barrage itself was saturated in {saturated} of them (its event loop ran late, its \
             backlog grew or its CPU was at its limit)"
        ));
    }
    Some(BusyDips {
        dips: dips.len(),
        busy,
        why: why.join("; "),
    })
}
