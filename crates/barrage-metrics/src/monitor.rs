//! Samples of the server under test and of the machine, on the run's timeline.
//!
//! Plain data, produced by `barrage-monitor` (which reads /proc) and consumed by the analysis,
//! the thresholds and the reports. Times are seconds since the run's start, the same clock as
//! the ticks, so a server's memory and the client's throughput line up second by second.
//! Rates (CPU %, per-second network figures, context switches) cover the interval that ends
//! at `t`.

use serde::{Deserialize, Serialize};

/// TCP sockets by state (as in /proc/net/tcp).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpStates {
    pub established: u64,
    pub syn_sent: u64,
    pub syn_recv: u64,
    pub fin_wait1: u64,
    pub fin_wait2: u64,
    pub time_wait: u64,
    pub close: u64,
    pub close_wait: u64,
    pub last_ack: u64,
    pub listen: u64,
    pub closing: u64,
}

/// One sample of one process (its threads included; children summed in when asked).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcSample {
    pub t: f64,
    /// user + system, in % of one core (200 = two cores busy).
    pub cpu_pct: f64,
    pub cpu_user_pct: f64,
    pub cpu_sys_pct: f64,
    /// user + system in % of the whole machine (all cores = 100).
    pub cpu_machine_pct: f64,
    pub rss_bytes: u64,
    /// Highest RSS so far (VmHWM; Windows: the peak working set).
    pub rss_peak_bytes: u64,
    /// Private committed memory (Windows' "private bytes": memory the process alone holds,
    /// resident or paged out). 0 on Linux, which has no exact equivalent (and in results
    /// written before it existed).
    #[serde(default)]
    pub private_bytes: u64,
    pub threads: u64,
    /// The descendants summed into this sample (a pre-forked server's workers; 0: the
    /// process alone). 0 in results written before it existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub children: u64,
    pub fds: u64,
    /// Context switches during the interval.
    pub ctx_voluntary: u64,
    pub ctx_involuntary: u64,
    pub tcp: TcpStates,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Everything sampled for one monitored process.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessSeries {
    pub pid: u32,
    /// Its command line, as /proc shows it (arguments joined by spaces).
    pub command: String,
    pub samples: Vec<ProcSample>,
}

/// One network interface's traffic during the interval, per second.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NetIfSample {
    pub name: String,
    pub rx_bytes_per_s: f64,
    pub tx_bytes_per_s: f64,
    pub rx_packets_per_s: f64,
    pub tx_packets_per_s: f64,
}

/// One sample of the machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSample {
    pub t: f64,
    /// Busy share of all cores, %.
    pub cpu_pct: f64,
    pub per_core_pct: Vec<f64>,
    pub mem_used_bytes: u64,
    pub mem_total_bytes: u64,
    pub net: Vec<NetIfSample>,
    /// TCP sockets in use and in TIME_WAIT, machine-wide (/proc/net/sockstat).
    pub tcp_inuse: u64,
    pub tcp_time_wait: u64,
}

/// The monitoring part of a run's result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MonitorSeries {
    pub interval_s: f64,
    pub processes: Vec<ProcessSeries>,
    pub host: Vec<HostSample>,
    /// barrage's own process.
    pub generator: Vec<ProcSample>,
    /// Sampled without being asked (no `--monitor`, `--spawn` or `--processes`): every run
    /// samples barrage and its machine so the stability and saturation rules can tell a busy
    /// generator machine. The reports show none of it but one line when other processes took a
    /// material share; `processes` then holds at most a loopback target's listener, found
    /// quietly, only so that its CPU is not counted as other processes'. Absent (false) in
    /// results of watched runs and in results written before it existed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unasked: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What happened to a server barrage started with `--spawn`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SpawnRecord {
    pub command: String,
    pub pid: u32,
    /// From the start of the command until its port accepted a connection.
    pub ready_after_ms: f64,
    /// It exited by itself after the stop request, with status 0 (or by the signal, as
    /// servers do).
    pub exited_cleanly: bool,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// From the stop request to the end of the process.
    pub stop_took_ms: f64,
    /// It ignored the stop request for the grace period (or none could be sent) and was
    /// killed (SIGKILL; Windows: its job terminated).
    pub killed: bool,
    /// How it was asked to stop: `SIGTERM` (Unix), `Ctrl-Break` (Windows), or empty when no
    /// request could be sent (Windows, barrage without a console). Results written before
    /// this field was added read as `SIGTERM`.
    #[serde(default = "sigterm")]
    pub stop_request: String,
}

fn sigterm() -> String {
    "SIGTERM".into()
}

impl SpawnRecord {
    /// How the server ended, in words: `exited cleanly 12 ms after SIGTERM`, `ignored
    /// Ctrl-Break and was killed after 10.0 s`.
    pub fn ending(&self) -> String {
        let asked = &self.stop_request;
        if self.killed {
            if asked.is_empty() {
                return "was killed: no stop request could be sent to it (no console)".into();
            }
            return format!(
                "ignored {asked} and was killed after {:.1} s",
                self.stop_took_ms / 1e3
            );
        }
        let by = if asked.is_empty() {
            "by itself".to_string()
        } else {
            format!("after {asked}")
        };
        if self.exited_cleanly {
            return format!("exited cleanly {:.0} ms {by}", self.stop_took_ms);
        }
        let status = match (self.exit_code, self.signal) {
            (Some(c), _) => format!("status {c}"),
            (_, Some(sig)) => format!("signal {sig}"),
            _ => "unknown status".into(),
        };
        format!("exited {by} with {status} in {:.0} ms", self.stop_took_ms)
    }
}

impl ProcessSeries {
    /// The most descendants summed into one of its samples (0: it ran alone).
    pub fn children_max(&self) -> u64 {
        self.samples.iter().map(|s| s.children).max().unwrap_or(0)
    }

    /// What its figures are of, truthfully: `PID 123` alone, `PID 123 and 2 child
    /// processes` when its descendants (a pre-forked server's workers) are summed in.
    pub fn who(&self) -> String {
        match self.children_max() {
            0 => format!("PID {}", self.pid),
            1 => format!("PID {} and 1 child process", self.pid),
            n => format!("PID {} and {n} child processes", self.pid),
        }
    }
}

impl MonitorSeries {
    /// The samples the reports show: `None` for an [`unasked`](Self::unasked) series.
    pub fn shown(m: Option<&MonitorSeries>) -> Option<&MonitorSeries> {
        m.filter(|m| !m.unasked)
    }

    /// Puts the samples on the run's clock: the sampler's clock runs about `lead_s` (its idle
    /// baseline interval) ahead, and its first sample, taken as the load began, is t = 0
    /// (scheduling may have delayed it a little from the nominal interval; at most 1.5 x).
    pub fn to_run_clock(&mut self, lead_s: f64) {
        let first = self
            .processes
            .iter()
            .filter_map(|p| p.samples.first())
            .chain(self.generator.first())
            .map(|s| s.t)
            .fold(f64::INFINITY, f64::min);
        let lead = if first.is_finite() {
            first.min(lead_s * 1.5)
        } else {
            lead_s
        };
        for p in &mut self.processes {
            p.samples.iter_mut().for_each(|s| s.t -= lead);
        }
        self.generator.iter_mut().for_each(|s| s.t -= lead);
        self.host.iter_mut().for_each(|h| h.t -= lead);
    }
}

/// The monitored processes as one server: each sample of the longest series plus, from every
/// other series, the sample nearest in time (within half an interval).
pub fn combined_server(monitor: &MonitorSeries) -> Vec<ProcSample> {
    let mut series: Vec<&ProcessSeries> = monitor.processes.iter().collect();
    series.sort_by_key(|p| std::cmp::Reverse(p.samples.len()));
    let Some((first, rest)) = series.split_first() else {
        return Vec::new();
    };
    let half = if monitor.interval_s > 0.0 {
        monitor.interval_s / 2.0
    } else {
        0.5
    };
    let mut out = first.samples.clone();
    for s in &mut out {
        for p in rest {
            let near = p
                .samples
                .iter()
                .filter(|o| (o.t - s.t).abs() <= half)
                .min_by(|a, b| (a.t - s.t).abs().total_cmp(&(b.t - s.t).abs()));
            if let Some(o) = near {
                s.cpu_pct += o.cpu_pct;
                s.cpu_user_pct += o.cpu_user_pct;
                s.cpu_sys_pct += o.cpu_sys_pct;
                s.cpu_machine_pct += o.cpu_machine_pct;
                s.rss_bytes += o.rss_bytes;
                s.rss_peak_bytes += o.rss_peak_bytes;
                s.threads += o.threads;
                s.fds += o.fds;
            }
        }
    }
    out
}

/// One series of the server's own metrics (`--server-metrics URL --server-metric SELECTOR`),
/// on the run's timeline.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerMetric {
    /// What thresholds and reports call it (`server.metric.NAME.max`).
    pub name: String,
    /// The selector as given (`queue_depth`, `http_requests_total{code="500"}`, `/stats/x`).
    pub selector: String,
    /// `gauge` (the value as scraped) or `rate` (a counter, per second between scrapes).
    pub kind: String,
    /// `[t, value]`: seconds since the run's start, and the value (or the rate over the
    /// interval that ends at t). The series the selector matched are summed, over every URL.
    pub samples: Vec<[f64; 2]>,
    /// A counter: how much it grew from the first scrape to the last (resets counted from 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub increase: Option<f64>,
    /// Scrapes in which the selector matched nothing, or the URL could not be read.
    #[serde(default)]
    pub missed: u64,
}

impl ServerMetric {
    fn values(&self) -> impl Iterator<Item = f64> + '_ {
        self.samples.iter().map(|s| s[1]).filter(|v| v.is_finite())
    }

    pub fn min(&self) -> Option<f64> {
        self.values().reduce(f64::min)
    }

    pub fn max(&self) -> Option<f64> {
        self.values().reduce(f64::max)
    }

    pub fn mean(&self) -> Option<f64> {
        let (n, sum) = self.values().fold((0u64, 0.0), |(n, s), v| (n + 1, s + v));
        (n > 0).then(|| sum / n as f64)
    }

    pub fn last(&self) -> Option<f64> {
        self.values().last()
    }
}
