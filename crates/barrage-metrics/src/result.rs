//! The canonical result of a run: the one record every report is rendered from.
//!
//! Its JSON form is a documented interface (docs/result-schema.md): fields are added, never
//! renamed or removed, within one `schema` version.

use crate::aggregate::{Outcome, PhaseSummary, Summary, Tick};
use crate::histogram::{HistogramError, LatencyHistogram};
use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "barrage.result/1";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The run reached its duration or request count.
    Completed,
    /// A signal stopped it early; the figures cover the time until then.
    Interrupted,
    /// The user stopped it early (`q` in the dashboard): a normal end, the recovery window
    /// still runs; the figures cover the time until then.
    Stopped,
    /// It could not do its job (e.g. nothing could connect).
    Failed,
    /// Rebuilt from a durable stream (`--out DIR`) that has no summary: the process ended
    /// (killed, crashed) before it wrote one; the figures cover the seconds it recorded.
    Incomplete,
}

/// The plan as the user will want to read it back: plain values, resolved defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub target: String,
    pub protocol: String,
    pub connections: u64,
    pub threads: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    pub warmup_s: f64,
    /// `ping-pong`, `think`, `interval` or `rate`.
    pub mode: String,
    pub pipeline: u32,
    /// HTTP/2: streams in flight per connection at most (`--streams`; `pipeline` then says
    /// the same of a closed loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_rate: Option<f64>,
    pub timeout_ms: f64,
    pub connect_timeout_ms: f64,
    pub max_backlog: u64,
    /// Open loop: the timer slack (messages due within it go out together, each timed from
    /// its aligned intended time); absent in closed-loop modes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_slack_ms: Option<f64>,
    /// The message with non-printable bytes escaped (first 256 bytes).
    pub message: String,
    pub message_bytes: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_message: Option<String>,
    pub expect: String,
    pub verify: bool,
    /// HTTP: method, path and body size (headers are not recorded: they may hold secrets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<String>,
    /// TLS: "verified" or "verification off (--insecure)".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<String>,
    /// The HTTP proxy the connections tunnelled through, and what named it:
    /// `http://HOST:PORT (--proxy)`, `... (https_proxy)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subprotocol: Option<String>,
    /// redis:// and memcache://: the `--command` mix as written, in order (the per-command
    /// counts in `summary.totals.commands` follow this order).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// `--rate-stages` as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_stages: Option<String>,
    /// The planned open-loop rate over time, (seconds since the start, per second) points,
    /// linear between them (`--rate-stages`); empty for a constant rate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub planned_rate: Vec<(f64, f64)>,
    /// `--conn-stages` as given, and its points (seconds, connections), linear between them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conn_stages: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub planned_connections: Vec<(f64, f64)>,
    /// Scenario runs: the steps users send, in order (per-step figures follow this order).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<ConfigStep>,
    /// Scenario runs: the users, their arrival and departure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<ConfigUsers>,
    /// The source addresses connections came from (`--source-ip`, `auto` resolved); empty:
    /// the kernel's choice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    /// `--processes N`: the run was N local shard processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
}

/// A step of a scenario as the result names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigStep {
    pub name: String,
    /// An `every` step: sent on an open-loop schedule (latency from the intended time).
    #[serde(default)]
    pub open_loop: bool,
    /// Its sends await a reply (false for fire-and-forget steps, `framing = "none"`, whose
    /// latency is only how late they were written). True in results written before it was
    /// recorded.
    #[serde(default = "awaits_by_default")]
    pub awaits: bool,
}

fn awaits_by_default() -> bool {
    true
}

impl Default for ConfigStep {
    fn default() -> Self {
        Self {
            name: String::new(),
            open_loop: false,
            awaits: true,
        }
    }
}

/// A scenario's users.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfigUsers {
    pub count: u64,
    /// As the scenario (or --arrive) says, e.g. "50/s".
    pub arrive: String,
    /// Seconds from the start to the last arrival.
    pub last_arrival_s: f64,
    pub hold_s: f64,
    /// The longest a user thinks after arriving before its own pacing begins (the pauses
    /// before its first repeated step): the steady state starts this long after the last
    /// arrival. 0 in results written before it was recorded.
    #[serde(default)]
    pub pacing_after_s: f64,
    /// "at_end" or a rate.
    pub depart: String,
    /// The scenario file.
    pub scenario: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub barrage_version: String,
    pub os: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cores: usize,
    pub hostname: String,
    /// The clock of each process of the run (one for a single run, one per shard for a
    /// merged one): whether clocks of different hosts can be compared, and how well.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clocks: Vec<ClockRecord>,
}

/// One process's wall clock as the kernel reports it (`adjtimex`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockRecord {
    /// The host's boot id: processes with the same one read the same clock.
    pub boot_id: String,
    pub hostname: String,
    /// Whether NTP/PTP (chrony, ntpd, ptp4l) keeps the clock synchronized.
    pub synced: bool,
    /// The kernel's bound on the clock's error, µs (`maxerror`; meaningful when synced).
    pub max_error_us: u64,
    /// The kernel's estimated error, µs (`esterror`).
    pub est_error_us: u64,
}

/// How far apart the clocks of a run's processes may be, µs: 0 when they all read one
/// host's clock, the sum of the two largest error bounds when every host is synchronized,
/// `None` (unknown) otherwise.
pub fn clock_spread_us(clocks: &[ClockRecord]) -> Option<u64> {
    let first = clocks.first()?;
    if clocks
        .iter()
        .all(|c| c.boot_id == first.boot_id && !c.boot_id.is_empty())
    {
        return Some(0);
    }
    if !clocks.iter().all(|c| c.synced) {
        return None;
    }
    let mut bounds: Vec<u64> = clocks.iter().map(|c| c.max_error_us).collect();
    bounds.sort_unstable_by(|a, b| b.cmp(a));
    Some(bounds[0] + bounds.get(1).copied().unwrap_or(0))
}

/// A histogram as stored in the result: compressed HdrHistogram V2, base64, microseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistogramRecord {
    pub encoding: String,
    pub unit: String,
    pub overflow: u64,
    pub data: String,
}

impl HistogramRecord {
    pub fn encode(h: &LatencyHistogram) -> Self {
        Self {
            encoding: "hdrhistogram-v2-deflate+base64".into(),
            unit: "us".into(),
            overflow: h.overflow(),
            data: h.to_base64(),
        }
    }

    pub fn decode(&self) -> Result<LatencyHistogram, HistogramError> {
        LatencyHistogram::from_base64(&self.data, self.overflow)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Histograms {
    /// Exchange latency after the warm-up (behind `summary.latency_us`).
    pub latency: HistogramRecord,
    /// Connect time, whole run.
    pub connect: HistogramRecord,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup_latency: Option<HistogramRecord>,
    /// HTTP time to the response head, after the warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfb: Option<HistogramRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<HistogramRecord>,
    /// WebSocket upgrade handshake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshake: Option<HistogramRecord>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema: String,
    pub status: Status,
    /// Why the run failed, was interrupted or was stopped, in one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub command_line: Vec<String>,
    /// UTC start time, RFC 3339.
    pub started_at: String,
    pub config: RunConfig,
    pub environment: Environment,
    pub summary: Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup: Option<PhaseSummary>,
    pub timeseries: Vec<Tick>,
    pub histograms: Histograms,
    /// Samples of the monitored server processes, the machine and barrage itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<crate::monitor::MonitorSeries>,
    /// The server's own metrics, scraped while the run went (`--server-metrics`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_metrics: Vec<crate::monitor::ServerMetric>,
    /// The server barrage started (`--spawn`) and how it stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn: Option<crate::monitor::SpawnRecord>,
    /// Stability, trends, recovery, leak and saturation verdicts (see `analysis`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<crate::analysis::AnalysisReport>,
    /// Every `--threshold` with its measured value and outcome.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<crate::thresholds::ThresholdCheck>,
    /// The readiness assessment: one row per aspect, each with its rule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readiness: Vec<crate::readiness::Row>,
    /// `--baseline FILE --max-regression LIMITS`: each limit checked against the earlier run
    /// (a failed one makes the exit code 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<crate::compare::BaselineCheck>,
    /// The run as data (`barrage_engine::Spec`: what was asked, defaults resolved; header
    /// values hidden, secrets as `{secret:NAME}`), from which the run's plan was built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<serde_json::Value>,
}

impl RunResult {
    pub fn new(
        status: Status,
        message: Option<String>,
        command_line: Vec<String>,
        started_at: String,
        config: RunConfig,
        environment: Environment,
        outcome: Outcome,
    ) -> Self {
        let histograms = Histograms {
            latency: HistogramRecord::encode(&outcome.latency),
            connect: HistogramRecord::encode(&outcome.connect),
            warmup_latency: outcome
                .warmup
                .as_ref()
                .map(|_| HistogramRecord::encode(&outcome.warmup_latency)),
            ttfb: outcome.ttfb.get().map(HistogramRecord::encode),
            tls: outcome.tls.get().map(HistogramRecord::encode),
            handshake: outcome.handshake.get().map(HistogramRecord::encode),
        };
        let mut summary = outcome.summary;
        for (i, s) in summary.steps.iter_mut().enumerate() {
            if let Some(c) = config.steps.get(i) {
                s.name.clone_from(&c.name);
                s.open_loop = c.open_loop;
            }
        }
        Self {
            schema: SCHEMA.into(),
            status,
            message,
            command_line,
            started_at,
            config,
            environment,
            summary,
            warmup: outcome.warmup,
            timeseries: outcome.timeseries,
            histograms,
            monitor: None,
            server_metrics: Vec::new(),
            spawn: None,
            analysis: None,
            thresholds: Vec::new(),
            readiness: Vec::new(),
            baseline: None,
            spec: None,
        }
    }
}

impl RunResult {
    /// Whether any threshold failed (or could not be measured).
    pub fn thresholds_failed(&self) -> bool {
        crate::thresholds::any_failed(&self.thresholds)
    }
}

#[cfg(test)]
mod clock_tests {
    use super::*;

    fn clock(boot: &str, synced: bool, max: u64) -> ClockRecord {
        ClockRecord {
            boot_id: boot.into(),
            hostname: boot.into(),
            synced,
            max_error_us: max,
            est_error_us: max / 2,
        }
    }

    #[test]
    fn clocks_compare_on_one_host_or_within_their_ntp_bounds() {
        assert_eq!(clock_spread_us(&[]), None);
        let one = [clock("a", false, 16_000_000), clock("a", false, 16_000_000)];
        assert_eq!(clock_spread_us(&one), Some(0), "one host: one clock");
        let synced = [
            clock("a", true, 300),
            clock("b", true, 500),
            clock("c", true, 100),
        ];
        assert_eq!(
            clock_spread_us(&synced),
            Some(800),
            "the two largest bounds"
        );
        let unsynced = [clock("a", true, 300), clock("b", false, 500)];
        assert_eq!(clock_spread_us(&unsynced), None);
        assert_eq!(
            clock_spread_us(&[clock("", true, 5), clock("", true, 5)]),
            Some(10)
        );
    }
}
