//! Generator saturation: seconds in which barrage itself, not the server, may have set the pace.
//!
//! A second is saturated when the generator's CPU reached 90 % of its worker threads (a
//! closed loop is then bounded by the client), when its event loop ran 10 ms or more late
//! (starved of CPU, e.g. by a neighbour on its core), or when the open-loop backlog grew
//! compared to the previous tick (due messages could not be sent on time). Results from saturated seconds
//! understate what the server can do; reports should say so rather than hide it.

use super::contention::{classify, Cause, CpuShares, OtherCpu, MACHINE_FULL_PCT};
use crate::aggregate::Tick;
use crate::monitor::{HostSample, ProcSample};
use crate::timeline::Phase;
use crate::window::Window;
use serde::{Deserialize, Serialize};

/// Share of `threads × 100 %` CPU at which the generator counts as saturated.
pub const CPU_SATURATED: f64 = 0.9;
/// Event-loop lateness (a timer or second boundary handled this late) at which the generator
/// counts as saturated: its loop did not get the CPU when it needed it.
pub const LAG_SATURATED_US: u64 = 10_000;

/// Mean of the values within half a tick of the tick's end (a sample's CPU covers the interval
/// that ends at its `t`). When the monitor took none there (it fell behind), the first sample
/// after the tick, whose interval covers it; `None` when there is none. `samples` are in time
/// order (as a monitor records them), so each tick costs a binary search, not a scan: a
/// 12-hour run has 43,200 ticks and as many samples per series.
fn mean_near<T>(tick: &Tick, samples: &[T], point: impl Fn(&T) -> (f64, f64)) -> Option<f64> {
    let half = tick.dt.max(1e-9) / 2.0;
    let first = samples.partition_point(|s| point(s).0 <= tick.t - half);
    let (mut sum, mut n) = (0.0, 0usize);
    for s in &samples[first..] {
        let (t, v) = point(s);
        if t > tick.t + half {
            return if n > 0 { Some(sum / n as f64) } else { Some(v) };
        }
        sum += v;
        n += 1;
    }
    (n > 0).then(|| sum / n as f64)
}

fn cpu_near(tick: &Tick, generator: &[ProcSample]) -> Option<f64> {
    mean_near(tick, generator, |s| (s.t, s.cpu_pct))
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
    /// Saturated ticks of the steady state, and all its ticks.
    pub saturated_s: usize,
    pub of_s: usize,
    /// End times of the saturated ticks of the steady state.
    pub times: Vec<f64>,
    /// Whether generator CPU samples were available (otherwise only the backlog counted).
    pub cpu_measured: bool,
    /// Saturated seconds in which barrage was at its CPU limit, or nothing else took a
    /// material share of the CPU: saturated by its own work.
    #[serde(default)]
    pub own_work_s: usize,
    /// Saturated seconds in which barrage was below its CPU limit, the machine's cores were
    /// full and the monitored server held more of them than other processes: barrage and the
    /// server ran out of CPU together.
    #[serde(default)]
    pub server_s: usize,
    /// Saturated seconds in which barrage was below its CPU limit while other processes took
    /// more than a fifth of a core (and more than the server, when the cores were full):
    /// starved by other processes.
    #[serde(default)]
    pub starved_s: usize,
    /// Saturated seconds outside the steady state (warm-up, ramp up, ramp down): reported
    /// apart, never counted in the figures above, the warnings or the readiness table; split
    /// by cause the same way.
    #[serde(default)]
    pub ramp_s: usize,
    #[serde(default)]
    pub ramp_times: Vec<f64>,
    #[serde(default)]
    pub ramp_own_work_s: usize,
    #[serde(default)]
    pub ramp_server_s: usize,
    #[serde(default)]
    pub ramp_starved_s: usize,
    pub rule: String,
}

impl SaturationSummary {
    /// Saturated seconds of the steady state whose cause is not known (no CPU samples).
    pub fn unknown_s(&self) -> usize {
        self.saturated_s
            .saturating_sub(self.own_work_s + self.server_s + self.starved_s)
    }
}

/// The CPU series that tell a saturated second's cause; any may be empty.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuSeries<'a> {
    pub generator: &'a [ProcSample],
    /// The monitored server processes, counted together.
    pub server: &'a [ProcSample],
    pub other: &'a [OtherCpu],
    pub host: &'a [HostSample],
    /// The machine's cores (0: unknown), to tell a machine reading below the server's and
    /// barrage's own CPU ([`crate::figures::below_parts`]).
    pub cores: usize,
}

impl CpuSeries<'_> {
    fn shares(&self, tk: &Tick) -> CpuShares {
        let generator = cpu_near(tk, self.generator);
        let server = cpu_near(tk, self.server);
        let machine = mean_near(tk, self.host, |h| (h.t, h.cpu_pct));
        let parts = generator.unwrap_or(0.0) + server.unwrap_or(0.0);
        let below = machine.is_some_and(|m| crate::figures::below_parts(m, self.cores, parts));
        CpuShares {
            generator,
            server,
            other: mean_near(tk, self.other, |o| (o.t, o.pct)).filter(|_| !below),
            machine: machine.filter(|_| !below),
            machine_below_parts: below,
        }
    }
}

/// Saturated seconds by cause: (own work, server, other processes).
fn causes(ticks: &[Tick], times: &[f64], cpu: &CpuSeries, limit: f64) -> (usize, usize, usize) {
    let mut n = (0, 0, 0);
    // `times` are end times of some of `ticks`, in the same order.
    let mut times = times.iter().peekable();
    for tk in ticks {
        if times.next_if(|t| **t == tk.t).is_none() {
            continue;
        }
        match classify(cpu.shares(tk), limit) {
            Cause::OwnWork => n.0 += 1,
            Cause::Server => n.1 += 1,
            Cause::OtherProcesses => n.2 += 1,
            Cause::NotMeasured => {}
        }
    }
    n
}

/// The saturated seconds, in the steady state and outside it, each with its cause
/// ([`classify`]).
pub fn saturation_summary(
    ticks: &[Tick],
    cpu: CpuSeries,
    threads: usize,
    steady: Window,
) -> SaturationSummary {
    let (times, ramp_times): (Vec<f64>, Vec<f64>) = saturation(ticks, cpu.generator, threads)
        .into_iter()
        .partition(|t| steady.contains(*t));
    let limit = CPU_SATURATED * threads.max(1) as f64 * 100.0;
    let (own_work_s, server_s, starved_s) = causes(ticks, &times, &cpu, limit);
    let (ramp_own_work_s, ramp_server_s, ramp_starved_s) = causes(ticks, &ramp_times, &cpu, limit);
    SaturationSummary {
        own_work_s,
        server_s,
        starved_s,
        saturated_s: times.len(),
        of_s: ticks
            .iter()
            .filter(|t| t.phase != Phase::Drain && steady.contains(t.t))
            .count(),
        times,
        ramp_s: ramp_times.len(),
        ramp_times,
        ramp_own_work_s,
        ramp_server_s,
        ramp_starved_s,
        cpu_measured: !cpu.generator.is_empty(),
        rule: format!(
            "a second is saturated when barrage's CPU is at least {:.0} % of its {} worker \
             thread(s) ({:.0} % of one core), its event loop ran {} ms or more late, or the \
             open-loop backlog grew since the previous second. Below that CPU, barrage was \
             starved: by the server when the machine's cores were at least {:.0} % busy and \
             the server held more of them than other processes (they ran out of CPU \
             together), by other processes when they used more than 20 % of a core; else it \
             was saturated by its own work",
            CPU_SATURATED * 100.0,
            threads.max(1),
            CPU_SATURATED * threads.max(1) as f64 * 100.0,
            LAG_SATURATED_US / 1000,
            MACHINE_FULL_PCT,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testutil::{measured, tick};

    fn from(from_s: f64) -> Window {
        Window {
            from_s,
            to_s: f64::INFINITY,
        }
    }

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
        let s = saturation_summary(&ticks, CpuSeries::default(), 1, from(4.0));
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
        let s = saturation_summary(&ticks, CpuSeries::default(), 2, from(0.0));
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
    fn a_tick_the_monitor_skipped_takes_the_sample_that_covers_it() {
        // A monitor that fell behind sampled at 1 s and then at 4 s: that sample's CPU is the
        // mean over (1, 4], so ticks 2-4 take it; tick 5 after the last sample has none.
        let ticks = measured(&[100.0; 5], 10);
        let g = [gen(1.0, 20.0), gen(4.0, 95.0)];
        let cpu: Vec<Option<f64>> = ticks.iter().map(|tk| cpu_near(tk, &g)).collect();
        assert_eq!(cpu, [Some(20.0), Some(95.0), Some(95.0), Some(95.0), None]);
        assert_eq!(saturation(&ticks, &g, 1), vec![2.0, 3.0, 4.0]);
    }

    #[test]
    fn saturated_seconds_are_split_by_cause() {
        // One thread on two cores; every second late. Seconds 1-2: barrage at 95 % (own
        // work); 3-4: at 30 % while others use 150 % of a core (starved); 5: at 30 %, others
        // idle; 6-7: at 70 %, the machine full, the server at 120 % (the server).
        let mut ticks = measured(&[100.0; 7], 10);
        for t in &mut ticks {
            t.lag_us_max = 20_000;
        }
        let series = |v: &[f64]| -> Vec<ProcSample> {
            v.iter()
                .enumerate()
                .map(|(i, c)| gen(i as f64 + 1.0, *c))
                .collect()
        };
        let g = series(&[95.0, 95.0, 30.0, 30.0, 30.0, 70.0, 70.0]);
        let server = series(&[50.0, 50.0, 10.0, 10.0, 10.0, 120.0, 120.0]);
        let other: Vec<_> = [0.0, 0.0, 150.0, 150.0, 5.0, 10.0, 10.0]
            .iter()
            .enumerate()
            .map(|(i, pct)| OtherCpu {
                t: i as f64 + 1.0,
                pct: *pct,
            })
            .collect();
        let host: Vec<_> = [72.5, 72.5, 95.0, 95.0, 22.5, 100.0, 100.0]
            .iter()
            .enumerate()
            .map(|(i, pct)| HostSample {
                t: i as f64 + 1.0,
                cpu_pct: *pct,
                ..Default::default()
            })
            .collect();
        let cpu = CpuSeries {
            generator: &g,
            server: &server,
            other: &other,
            host: &host,
            cores: 0,
        };
        let s = saturation_summary(&ticks, cpu, 1, from(0.0));
        let split = |s: &SaturationSummary| (s.saturated_s, s.own_work_s, s.server_s, s.starved_s);
        assert_eq!(split(&s), (7, 3, 2, 2));
        assert_eq!(s.unknown_s(), 0);
        // With the machine's two cores known these readings agree with their parts ...
        let known = CpuSeries { cores: 2, ..cpu };
        let s2 = saturation_summary(&ticks, known, 1, from(0.0));
        assert_eq!(split(&s2), (7, 3, 2, 2));
        // ... but a machine that read 1 % of its cores (2 % of one) beside barrage at 30 %
        // and the server at 10 % measured nothing (issue 42): never "starved by other
        // processes", whatever the other series says; those seconds have no cause.
        let mut low = host.clone();
        (low[2].cpu_pct, low[3].cpu_pct) = (1.0, 1.0);
        let under = CpuSeries {
            host: &low,
            cores: 2,
            ..cpu
        };
        let s2 = saturation_summary(&ticks, under, 1, from(0.0));
        assert_eq!(split(&s2), (7, 3, 2, 0));
        assert_eq!(s2.unknown_s(), 2);
        // Outside the steady state the same split, reported apart.
        let s = saturation_summary(
            &ticks,
            cpu,
            1,
            Window {
                from_s: 4.0,
                to_s: 5.0,
            },
        );
        assert_eq!(split(&s), (1, 1, 0, 0));
        assert_eq!(s.ramp_times, vec![1.0, 2.0, 3.0, 4.0, 6.0, 7.0]);
        assert_eq!(
            (s.ramp_own_work_s, s.ramp_server_s, s.ramp_starved_s),
            (2, 2, 2)
        );
        // Without CPU samples the cause is not claimed.
        let no_gen = CpuSeries {
            generator: &[],
            ..cpu
        };
        let s = saturation_summary(&ticks, no_gen, 1, from(0.0));
        assert_eq!(split(&s), (7, 0, 0, 0));
        assert_eq!(s.unknown_s(), 7);
    }
}
