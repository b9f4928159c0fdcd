//! Generator saturation: seconds in which barrage itself, not the server, may have set the pace.
//!
//! A second is saturated when the generator's CPU reached 90 % of its worker threads (a
//! closed loop is then bounded by the client), when its event loop ran 10 ms or more late
//! (starved of CPU, e.g. by a neighbour on its core), or when the open-loop backlog grew
//! compared to the previous tick (due messages could not be sent on time). Results from saturated seconds
//! understate what the server can do; reports should say so rather than hide it.

use super::contention::{classify, Cause, OtherCpu};
use crate::aggregate::Tick;
use crate::monitor::ProcSample;
use crate::timeline::Phase;
use serde::{Deserialize, Serialize};

/// Share of `threads × 100 %` CPU at which the generator counts as saturated.
pub const CPU_SATURATED: f64 = 0.9;
/// Event-loop lateness (a timer or second boundary handled this late) at which the generator
/// counts as saturated: its loop did not get the CPU when it needed it.
pub const LAG_SATURATED_US: u64 = 10_000;

/// Mean of the values within half a tick of the tick's end (a sample's CPU covers the interval
/// that ends at its `t`); `None` when there is none.
fn mean_near(tick: &Tick, samples: impl Iterator<Item = (f64, f64)>) -> Option<f64> {
    let half = tick.dt.max(1e-9) / 2.0;
    let (sum, n) = samples
        .filter(|(t, _)| *t > tick.t - half && *t <= tick.t + half)
        .fold((0.0, 0usize), |(sum, n), (_, v)| (sum + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

fn cpu_near(tick: &Tick, generator: &[ProcSample]) -> Option<f64> {
    mean_near(tick, generator.iter().map(|s| (s.t, s.cpu_pct)))
}

/// What made one tick saturated, by the one rule that the analysis, the reports and the live
/// dashboard all apply ([`sign`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sign {
    /// The event loop ran this late (µs): it did not get the CPU when it needed it.
    Lag(u64),
    /// The open-loop backlog grew to this many due messages: they could not be sent on time.
    Backlog(u64),
    /// The generator's CPU (% of one core) reached `CPU_SATURATED` of its worker threads.
    Cpu(f64),
}

/// The saturation rule for one tick: `prev_backlog` is the previous tick's backlog (0 for the
/// first), `cpu_pct` the generator's CPU over the tick when it was sampled. Drain ticks (the
/// load is over) are never saturated.
pub fn sign(tick: &Tick, prev_backlog: u64, cpu_pct: Option<f64>, threads: usize) -> Option<Sign> {
    let limit = CPU_SATURATED * threads.max(1) as f64 * 100.0;
    if tick.phase == Phase::Drain {
        None
    } else if tick.lag_us_max >= LAG_SATURATED_US {
        Some(Sign::Lag(tick.lag_us_max))
    } else if tick.backlog > prev_backlog {
        Some(Sign::Backlog(tick.backlog))
    } else {
        cpu_pct.filter(|c| *c >= limit).map(Sign::Cpu)
    }
}

/// End times (`t`) of the saturated ticks of the warm-up and load phases.
pub fn saturation(ticks: &[Tick], generator: &[ProcSample], threads: usize) -> Vec<f64> {
    let mut prev_backlog = 0;
    let mut out = Vec::new();
    for tk in ticks.iter().filter(|t| t.phase != Phase::Drain) {
        if sign(tk, prev_backlog, cpu_near(tk, generator), threads).is_some() {
            out.push(tk.t);
        }
        prev_backlog = tk.backlog;
    }
    out
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SaturationSummary {
    /// Saturated ticks, and all ticks of the warm-up and load phases.
    pub saturated_s: usize,
    pub of_s: usize,
    /// End times of the saturated ticks.
    pub times: Vec<f64>,
    /// Whether generator CPU samples were available (otherwise only the backlog counted).
    pub cpu_measured: bool,
    /// Saturated seconds in which barrage was at its CPU limit, or nothing else took a
    /// material share of the CPU: saturated by its own work.
    #[serde(default)]
    pub own_work_s: usize,
    /// Saturated seconds in which barrage was below its CPU limit while other processes took
    /// more than a fifth of a core: starved by other processes.
    #[serde(default)]
    pub starved_s: usize,
    /// Saturated seconds before the steady state (warm-up and connection ramp): reported
    /// apart, never counted in the figures above, the warnings or the readiness table.
    #[serde(default)]
    pub ramp_s: usize,
    #[serde(default)]
    pub ramp_times: Vec<f64>,
    pub rule: String,
}

/// The saturated seconds, each with its cause ([`classify`]); `other`: other processes' CPU.
pub fn saturation_summary(
    ticks: &[Tick],
    generator: &[ProcSample],
    other: &[OtherCpu],
    threads: usize,
    steady_from_s: f64,
) -> SaturationSummary {
    let (ramp_times, times): (Vec<f64>, Vec<f64>) = saturation(ticks, generator, threads)
        .into_iter()
        .partition(|t| *t <= steady_from_s);
    let limit = CPU_SATURATED * threads.max(1) as f64 * 100.0;
    let (mut own_work_s, mut starved_s) = (0, 0);
    for tk in ticks.iter().filter(|tk| times.contains(&tk.t)) {
        let other = mean_near(tk, other.iter().map(|o| (o.t, o.pct)));
        match classify(cpu_near(tk, generator), limit, other) {
            Cause::OwnWork => own_work_s += 1,
            Cause::OtherProcesses => starved_s += 1,
            Cause::NotMeasured => {}
        }
    }
    SaturationSummary {
        own_work_s,
        starved_s,
        saturated_s: times.len(),
        of_s: ticks
            .iter()
            .filter(|t| t.phase != Phase::Drain && t.t > steady_from_s)
            .count(),
        times,
        ramp_s: ramp_times.len(),
        ramp_times,
        cpu_measured: !generator.is_empty(),
        rule: format!(
            "a second is saturated when barrage's CPU is at least {:.0} % of its {} worker \
             thread(s) ({:.0} % of one core), its event loop ran {} ms or more late, or the \
             open-loop backlog grew since the previous second; starved by other processes when \
             barrage was below that CPU while other processes used more than 20 % of a core, \
             else saturated by its own work",
            CPU_SATURATED * 100.0,
            threads.max(1),
            CPU_SATURATED * threads.max(1) as f64 * 100.0,
            LAG_SATURATED_US / 1000
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testutil::{measured, tick};

    fn gen(t: f64, cpu: f64) -> ProcSample {
        ProcSample {
            t,
            cpu_pct: cpu,
            ..Default::default()
        }
    }

    #[test]
    fn one_rule_gives_the_reason_of_a_saturated_tick() {
        let mut t = tick(3.0, Phase::Measured, 100, 10);
        assert_eq!(sign(&t, 0, None, 2), None);
        assert_eq!(sign(&t, 0, Some(179.0), 2), None);
        assert_eq!(sign(&t, 0, Some(180.0), 2), Some(Sign::Cpu(180.0)));
        t.backlog = 5;
        assert_eq!(
            sign(&t, 5, None, 2),
            None,
            "a steady backlog is not growing"
        );
        assert_eq!(sign(&t, 4, None, 2), Some(Sign::Backlog(5)));
        t.lag_us_max = LAG_SATURATED_US;
        assert_eq!(sign(&t, 4, None, 2), Some(Sign::Lag(LAG_SATURATED_US)));
        t.phase = Phase::Drain;
        assert_eq!(
            sign(&t, 0, Some(1e9), 2),
            None,
            "the drain is never saturated"
        );
    }

    #[test]
    fn a_late_event_loop_is_saturated() {
        let mut ticks = measured(&[100.0; 4], 10);
        for (t, lag) in ticks.iter_mut().zip([200, 9_999, 10_000, 45_000]) {
            t.lag_us_max = lag;
        }
        assert_eq!(saturation(&ticks, &[], 1), vec![3.0, 4.0]);
    }

    #[test]
    fn late_seconds_of_the_connection_ramp_are_reported_apart() {
        // Regression: a connection ramp's late event loop was blamed on the generator in the
        // headline warning and the readiness table.
        let mut ticks = measured(&[100.0; 8], 10);
        for (t, lag) in ticks
            .iter_mut()
            .zip([11_000, 25_000, 12_000, 0, 0, 15_000, 0, 0])
        {
            t.lag_us_max = lag;
        }
        let s = saturation_summary(&ticks, &[], &[], 1, 4.0);
        assert_eq!((s.saturated_s, s.of_s), (1, 4), "{s:?}");
        assert_eq!(s.times, vec![6.0]);
        assert_eq!((s.ramp_s, s.ramp_times.clone()), (3, vec![1.0, 2.0, 3.0]));
    }

    #[test]
    fn busy_cpu_and_growing_backlog_are_saturated() {
        let mut ticks = measured(&[100.0; 6], 10);
        for (t, b) in ticks.iter_mut().zip([0, 5, 5, 3, 4, 4]) {
            t.backlog = b;
        }
        ticks.push(tick(6.5, Phase::Drain, 0, 0));
        // Two threads: saturated from 180 %.
        let g: Vec<_> = [50.0, 60.0, 185.0, 90.0, 100.0, 195.0]
            .iter()
            .enumerate()
            .map(|(i, c)| gen(i as f64 + 1.02, *c))
            .collect();
        assert_eq!(saturation(&ticks, &g, 2), vec![2.0, 3.0, 5.0, 6.0]);
        let s = saturation_summary(&ticks, &[], &[], 2, 0.0);
        assert_eq!((s.saturated_s, s.of_s, s.cpu_measured), (2, 6, false));
        assert_eq!(s.times, vec![2.0, 5.0]);
        assert!(s.rule.contains("180 %"));
    }

    #[test]
    fn several_samples_per_tick_are_averaged() {
        let ticks = measured(&[100.0; 2], 1);
        let g: Vec<_> = (1..=8)
            .map(|i| gen(i as f64 * 0.25, if i % 2 == 0 { 100.0 } else { 70.0 }))
            .collect();
        assert!(saturation(&ticks, &g, 1).is_empty());
        let g: Vec<_> = (1..=8).map(|i| gen(i as f64 * 0.25, 95.0)).collect();
        assert_eq!(saturation(&ticks, &g, 1), vec![1.0, 2.0]);
    }

    #[test]
    fn saturated_seconds_are_split_by_cause() {
        // One thread; every second late. Seconds 1-2: barrage at 95 % (own work); 3-4: at
        // 30 % while others use 150 % of a core (starved); 5: at 30 %, others idle.
        let mut ticks = measured(&[100.0; 5], 10);
        for t in &mut ticks {
            t.lag_us_max = 20_000;
        }
        let g: Vec<_> = [95.0, 95.0, 30.0, 30.0, 30.0]
            .iter()
            .enumerate()
            .map(|(i, c)| gen(i as f64 + 1.0, *c))
            .collect();
        let other: Vec<_> = [0.0, 0.0, 150.0, 150.0, 5.0]
            .iter()
            .enumerate()
            .map(|(i, pct)| OtherCpu {
                t: i as f64 + 1.0,
                pct: *pct,
            })
            .collect();
        let s = saturation_summary(&ticks, &g, &other, 1, 0.0);
        assert_eq!((s.saturated_s, s.own_work_s, s.starved_s), (5, 3, 2));
        // Without CPU samples the cause is not claimed.
        let s = saturation_summary(&ticks, &[], &other, 1, 0.0);
        assert_eq!((s.saturated_s, s.own_work_s, s.starved_s), (5, 0, 0));
    }
}
