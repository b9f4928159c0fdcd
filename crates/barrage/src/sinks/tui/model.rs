//! What the dashboard shows: what it knows before the first tick ([`DashInfo`]) and each
//! tick's figures ([`Snapshot`]), written by the run and read by the UI thread's view.

use barrage_metrics::Tick;
use barrage_report::fmt;
use std::time::Duration;

/// Seconds of history in the rolling charts.
pub(super) const HISTORY: usize = 60;

/// What the dashboard knows before the first tick.
#[derive(Clone, Debug)]
pub struct DashInfo {
    pub target: String,
    /// e.g. `tcp ping-pong` or `http rate 20000/s`.
    pub mode: String,
    /// Length of the load including warm-up; `None` when bounded by a request count.
    pub duration: Option<Duration>,
    pub warmup: Duration,
    pub connections: u64,
}

impl DashInfo {
    pub fn from_plan(p: &barrage_engine::Plan) -> DashInfo {
        use barrage_engine::Mode;
        let mode = match p.mode {
            Mode::Rate(r) => format!("rate {}/s", fmt::real(r)),
            Mode::Interval(d) => format!("interval {}", fmt::setting_us(d.as_micros() as f64)),
            Mode::Think(d) => format!("think {}", fmt::setting_us(d.as_micros() as f64)),
            Mode::PingPong => "ping-pong".to_string(),
        };
        DashInfo {
            target: p.target.url.clone(),
            mode: format!("{} {mode}", p.protocol.name()),
            duration: p.duration.map(|d| d + p.warmup),
            warmup: p.warmup,
            connections: p.connections,
        }
    }
}

/// Server figures from the monitor, when there is one.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServerSample {
    /// Percent of one core.
    pub cpu_pct: Option<f64>,
    pub rss_bytes: Option<u64>,
}

/// One tick and the running figures that go with it: all the UI thread ever sees of a run.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub tick: Tick,
    /// Since the warm-up ended.
    pub avg_rps: f64,
    pub completed: u64,
    pub errors: u64,
    pub p99_overall: Option<u64>,
    pub server: Option<ServerSample>,
}
