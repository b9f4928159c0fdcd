//! barrage-metrics: the measurement records of a run and every judgement over them, as pure
//! functions of data.
//!
//! One record family flows through everything: a worker's [`Recorder`] yields a [`Delta`] per
//! timeline segment ([`timeline`]); the [`Aggregator`] merges deltas into [`Tick`]s and a
//! [`Summary`] (with per-step figures, [`steps`], and a broadcast run's rooms, [`groups`]); the
//! [`RunResult`] wraps them, with the monitor's samples ([`monitor`]), for every report. Deltas
//! are mergeable (counts add, histograms merge exactly) and serializable, so threads,
//! processes and shards merge the same way.
//!
//! Over the records: [`figures`] (one function per server, generator and machine figure, over
//! a [`window`]), [`vocabulary`] (the one registry of named figures, `vocabulary::FIGURES`,
//! through which thresholds, compare and readiness read them), [`analysis`], [`thresholds`],
//! [`readiness`] and [`compare`]; `RunResult::conclude` runs the judges in order. Nothing here
//! does I/O, spawns threads or knows sockets.
//!
//! Imports go one way, and the house test keeps the crate free of import circles: the
//! records the judges leave in a [`RunResult`] (`AnalysisReport`, `ThresholdCheck`, readiness
//! `Row`, `BaselineCheck`) are types in files that import no judge, so `result.rs` sits below
//! the judges that read it (`analysis/run.rs`, `figures/run.rs`, `vocabulary.rs`,
//! `thresholds/`, `compare/`, `readiness/`), and `conclude.rs` above them all.

pub mod aggregate;
pub mod analysis;
pub mod codes;
pub mod compare;
mod conclude;
pub mod counters;
pub mod error;
pub mod failure;
pub mod figures;
pub mod groups;
pub mod histogram;
pub mod monitor;
pub mod readiness;
pub mod recorder;
pub mod result;
pub mod steps;
pub mod thresholds;
pub mod timeline;
pub mod vocabulary;
pub mod window;

pub use aggregate::{
    Aggregator, BroadcastSummary, Connections, Exchanges, Io, LatencyBasis, Outcome, PhaseSummary,
    Ramp, Rps, Running, Summary, Tick, TickLatency,
};
pub use analysis::{
    analyze, AnalysisReport, Fit, LeakStatus, LeakVerdict, Recovery, Stability, Trend, Verdict,
    Window,
};
pub use codes::CodeCounts;
pub use counters::{
    grpc_code_name, h2_code_name, BroadcastCounts, CommandCount, CommandCounts, Counters,
    GrpcCounts, H2Counts, MqttCounts,
};
pub use error::{ErrorClass, ErrorCounts, ErrorReason, ErrorReasons};
pub use groups::{Groups, RoomSize, Rooms};
pub use histogram::{LatencyHistogram, LatencyStats, OptHistogram};
pub use monitor::{
    HostSample, MonitorSeries, NetIfSample, ProcSample, ProcessSeries, ServerMetric, SpawnRecord,
    TcpStates,
};
pub use readiness::{assess, Aspect, Grade, Row};
pub use recorder::{Delta, MsgSpan, Recorder};
pub use result::{
    ConfigStep, ConfigUsers, Environment, HistogramRecord, Histograms, RunConfig, RunResult, Status,
};
pub use steps::{StepCount, StepRec, StepSummary, Steps, TickStep};
pub use thresholds::{Facts, Threshold, ThresholdError};
pub use timeline::{Phase, Timeline, DRAIN_KEY, SECOND_NS};

/// `20012` -> `20,012`: counts as every output writes them (the readiness rows here, and
/// `barrage_report::fmt::thousands` is this one).
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let (head, tail) = digits.split_at(match digits.len() % 3 {
        0 => 3.min(digits.len()),
        r => r,
    });
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    out.push_str(head);
    for group in tail.as_bytes().chunks(3) {
        out.push(',');
        out.extend(group.iter().map(|&b| b as char));
    }
    out
}
