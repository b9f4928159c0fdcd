//! Who starved whom: the CPU that processes other than the server and barrage used while the
//! load ran, and why each saturated second was saturated.
//!
//! Other processes' CPU is the machine's busy time minus the monitored server's minus
//! barrage's, per sample, in % of one core (`host.cpu_pct × cores − server − generator`,
//! never below 0). It is *material* above [`OTHER_MATERIAL_PCT`] (a fifth of a core) on
//! average under load: the machine was shared, so the figures may describe the neighbours as
//! much as the server. A saturated second is then told apart ([`classify`]): barrage at its
//! CPU limit is *saturated by its own work*; below it, on a machine whose cores were full and
//! where the server held more of them than other processes, it *ran out of CPU together with
//! the server*; with other processes above a fifth of a core in that second, it was *starved by
//! other processes*.
//!
//! A machine reading below what the server and barrage alone used ([`below_parts`]) is not
//! measured: on some VMs /proc/stat undercounts ("machine 1.0 %" beside a server at 7.5 % and
//! barrage at 13 %, issue 42). Such a sample tells nothing of other processes: it is left out
//! of their CPU, and a saturated second it covers has no cause but barrage's own limit.

use crate::figures::below_parts;
use crate::monitor::{MonitorSeries, ProcSample};
use crate::window::Window;
use serde::{Deserialize, Serialize};

/// Other processes' CPU, % of one core, from which it counts as material.
pub const OTHER_MATERIAL_PCT: f64 = 20.0;

pub const CONTENTION_RULE: &str = "other processes' CPU = machine - server - barrage, per \
    sample, % of one core; material when its average under load exceeds 20 % of a core; a \
    machine sample below the server's and barrage's own CPU (beyond 5 % of a core + 10 %) is \
    not measured and left out";

/// Other processes' CPU in one sample.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OtherCpu {
    pub t: f64,
    /// % of one core.
    pub pct: f64,
}

/// The sample of `series` nearest to `t`, within `half`.
fn near(series: &[ProcSample], t: f64, half: f64) -> Option<&ProcSample> {
    series
        .iter()
        .filter(|s| (s.t - t).abs() <= half)
        .min_by(|a, b| (a.t - t).abs().total_cmp(&(b.t - t).abs()))
}

/// Other processes' CPU at every machine sample that has a barrage sample (and, when servers
/// are monitored, a server sample) within half an interval, and that is not below those
/// parts ([`below_parts`]).
pub fn other_cpu(m: &MonitorSeries, server: &[ProcSample], cores: usize) -> Vec<OtherCpu> {
    let half = if m.interval_s > 0.0 {
        m.interval_s / 2.0
    } else {
        0.5
    };
    let cores = cores.max(1) as f64;
    m.host
        .iter()
        .filter_map(|h| {
            let g = near(&m.generator, h.t, half)?.cpu_pct;
            let s = if m.processes.is_empty() {
                0.0
            } else {
                near(server, h.t, half)?.cpu_pct
            };
            // A machine reading below its parts measured nothing: no other processes'
            // figure from it (issue 42).
            if below_parts(h.cpu_pct, cores as usize, s + g) {
                return None;
            }
            Some(OtherCpu {
                t: h.t,
                pct: (h.cpu_pct * cores - s - g).max(0.0),
            })
        })
        .collect()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Contention {
    /// Under load, % of one core.
    pub other_avg_pct: f64,
    pub other_max_pct: f64,
    /// The average exceeds [`OTHER_MATERIAL_PCT`].
    pub material: bool,
    /// Every sample (idle and recovery included), for charts and tables.
    pub per_second: Vec<OtherCpu>,
    pub rule: String,
}

/// `None` without a sample under load.
pub fn contention(other: Vec<OtherCpu>, under_load: Window) -> Option<Contention> {
    let load: Vec<f64> = other
        .iter()
        .filter(|o| under_load.contains(o.t))
        .map(|o| o.pct)
        .collect();
    if load.is_empty() {
        return None;
    }
    let points: Vec<(f64, f64)> = other.iter().map(|o| (o.t, o.pct)).collect();
    let avg = crate::figures::time_mean(&points, under_load)?;
    Some(Contention {
        other_avg_pct: avg,
        other_max_pct: load.iter().copied().fold(0.0, f64::max),
        material: avg > OTHER_MATERIAL_PCT,
        per_second: other,
        rule: CONTENTION_RULE.into(),
    })
}

/// The machine's busy share of all its cores (%) from which its CPU counts as full.
pub const MACHINE_FULL_PCT: f64 = 90.0;

/// Why a saturated second was saturated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// barrage used all the CPU it could, or nothing else wanted the CPU: its own work.
    OwnWork,
    /// The machine's cores were full and the monitored server held more of them than other
    /// processes: barrage and the server ran out of CPU together (they share the machine).
    Server,
    /// barrage was below its CPU limit while other processes took a material share.
    OtherProcesses,
    /// No CPU samples for that second.
    NotMeasured,
}

/// CPU use in one second, each in % of one core except `machine` (busy share of all cores,
/// %); `None` where not sampled.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuShares {
    pub generator: Option<f64>,
    pub server: Option<f64>,
    pub other: Option<f64>,
    pub machine: Option<f64>,
    /// The machine read below the server's and barrage's own CPU ([`below_parts`]): `machine`
    /// and `other` are then `None`, and nothing but barrage's own limit can be told.
    pub machine_below_parts: bool,
}

/// The cause of one saturated second from the CPU use in it and barrage's CPU limit (% of one
/// core). barrage at its limit: its own work. Below it, with the machine full: whoever of the
/// server and the other processes held more of the CPU (the server only when it used a
/// material share). Below it on a machine with CPU to spare: other processes when they used a
/// material share, else barrage's own work (a hot thread, the kernel on its behalf).
pub fn classify(s: CpuShares, limit: f64) -> Cause {
    let Some(g) = s.generator else {
        return Cause::NotMeasured;
    };
    if g >= limit {
        return Cause::OwnWork;
    }
    if s.machine_below_parts {
        // The machine was not measured: neither the server's share of a full machine nor
        // other processes can be told (never "starved by other processes" from it).
        return Cause::NotMeasured;
    }
    let other = s.other.unwrap_or(0.0);
    let server = s.server.unwrap_or(0.0);
    let full = s.machine.is_some_and(|m| m >= MACHINE_FULL_PCT);
    if full && server > OTHER_MATERIAL_PCT && server >= other {
        Cause::Server
    } else if other > OTHER_MATERIAL_PCT {
        Cause::OtherProcesses
    } else {
        Cause::OwnWork
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::{HostSample, ProcessSeries};

    fn p(t: f64, cpu: f64) -> ProcSample {
        ProcSample {
            t,
            cpu_pct: cpu,
            ..Default::default()
        }
    }

    /// Two cores; server at 40 %, barrage at 30 %; the machine at 35 % (70 % of a core), then
    /// 100 % (two `nice` busy loops fill the rest: 130 % of a core).
    fn shared(secs: usize) -> MonitorSeries {
        MonitorSeries {
            unasked: false,
            interval_s: 1.0,
            processes: vec![ProcessSeries {
                pid: 1,
                command: "srv".into(),
                samples: (0..secs).map(|i| p(i as f64 + 0.01, 40.0)).collect(),
            }],
            host: (0..secs)
                .map(|i| HostSample {
                    t: i as f64,
                    cpu_pct: if i < 3 { 35.0 } else { 100.0 },
                    ..Default::default()
                })
                .collect(),
            generator: (0..secs).map(|i| p(i as f64 - 0.02, 30.0)).collect(),
        }
    }

    #[test]
    fn other_processes_are_machine_minus_server_minus_generator() {
        let m = shared(6);
        let o = other_cpu(&m, &m.processes[0].samples, 2);
        let pcts: Vec<f64> = o.iter().map(|x| (x.pct * 10.0).round() / 10.0).collect();
        assert_eq!(pcts, [0.0, 0.0, 0.0, 130.0, 130.0, 130.0]);
        let w = Window {
            from_s: 0.0,
            to_s: 5.0,
        };
        let c = contention(o, w).unwrap();
        assert!(c.material);
        assert!((c.other_avg_pct - 130.0 * 3.0 / 5.0).abs() < 1e-9);
        assert_eq!(c.other_max_pct, 130.0);
        // A quiet machine is not material.
        let quiet = shared(3);
        let o = other_cpu(&quiet, &quiet.processes[0].samples, 2);
        assert!(!contention(o, w).unwrap().material);
        assert!(contention(Vec::new(), w).is_none());
    }

    #[test]
    fn starved_and_self_saturated_seconds_are_told_apart() {
        let c = |generator, server, other, machine| {
            classify(
                CpuShares {
                    generator,
                    server,
                    other,
                    machine,
                    ..Default::default()
                },
                90.0, // one worker thread: limit 90 % of a core
            )
        };
        assert_eq!(c(Some(95.0), None, Some(150.0), None), Cause::OwnWork);
        assert_eq!(
            c(Some(40.0), None, Some(150.0), None),
            Cause::OtherProcesses
        );
        assert_eq!(c(Some(40.0), None, Some(20.0), None), Cause::OwnWork);
        assert_eq!(c(Some(40.0), None, None, None), Cause::OwnWork);
        assert_eq!(c(None, None, Some(150.0), None), Cause::NotMeasured);
        // Two cores full, the server holding most of what barrage left: the server.
        let full = Some(MACHINE_FULL_PCT);
        assert_eq!(c(Some(80.0), Some(110.0), Some(10.0), full), Cause::Server);
        // ... unless other processes held more, or the machine had CPU to spare.
        assert_eq!(
            c(Some(80.0), Some(50.0), Some(70.0), full),
            Cause::OtherProcesses
        );
        assert_eq!(
            c(Some(80.0), Some(110.0), Some(5.0), Some(89.0)),
            Cause::OwnWork
        );
        // A full machine with a server that barely ran is not the server's doing.
        assert_eq!(c(Some(80.0), Some(15.0), Some(5.0), full), Cause::OwnWork);
        // barrage at its limit is its own work, whatever the rest did.
        assert_eq!(c(Some(90.0), Some(110.0), Some(0.0), full), Cause::OwnWork);
    }

    /// Issue 42 item 7: on some VMs /proc/stat undercounts ("machine 1.0 %" beside a server
    /// at 7.5 % and barrage at 13 %). A machine reading below the sum of its parts is not
    /// measured: no other processes' CPU from it, and no "starved by other processes".
    #[test]
    fn a_machine_below_the_sum_of_its_parts_is_not_measured() {
        // Four cores; the machine reads 1.0 % of them (4 % of one core), the server 7.5 %,
        // barrage 13 %; then 0.5 s later a machine that agrees (8 % of all = 32 % of a core).
        let m = MonitorSeries {
            unasked: false,
            interval_s: 1.0,
            processes: vec![ProcessSeries {
                pid: 1,
                command: "srv".into(),
                samples: (0..6).map(|i| p(i as f64, 7.5)).collect(),
            }],
            host: (0..6)
                .map(|i| HostSample {
                    t: i as f64,
                    cpu_pct: if i < 4 { 1.0 } else { 8.0 },
                    ..Default::default()
                })
                .collect(),
            generator: (0..6).map(|i| p(i as f64, 13.0)).collect(),
        };
        assert!(below_parts(1.0, 4, 20.5));
        assert!(!below_parts(5.0, 4, 20.5), "within the tolerance");
        assert!(!below_parts(1.0, 0, 20.5), "cores unknown");
        let o = other_cpu(&m, &m.processes[0].samples, 4);
        let times: Vec<f64> = o.iter().map(|x| x.t).collect();
        assert_eq!(times, [4.0, 5.0], "the undercounting samples are left out");
        assert!((o[0].pct - (32.0 - 20.5)).abs() < 1e-9);
        // A saturated second below barrage's limit on such a reading: not measured, never
        // "starved by other processes", whatever the other figure says.
        let starved = CpuShares {
            generator: Some(13.0),
            server: Some(7.5),
            other: Some(150.0),
            machine: None,
            machine_below_parts: true,
        };
        assert_eq!(classify(starved, 90.0), Cause::NotMeasured);
        // barrage at its own limit is still its own work.
        let own = CpuShares {
            generator: Some(95.0),
            ..starved
        };
        assert_eq!(classify(own, 90.0), Cause::OwnWork);
    }
}
