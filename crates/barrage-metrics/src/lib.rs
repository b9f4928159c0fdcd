//! barrage-metrics: the measurement records of a run, as pure data.
//!
//! One record family flows through everything: a worker's [`Recorder`] yields a [`Delta`] per
//! timeline segment; the [`Aggregator`] merges deltas into [`Tick`]s and a [`Summary`]; the
//! [`RunResult`] wraps them for every report. All of it is mergeable (counts add, histograms
//! merge exactly) and serializable; nothing here does I/O, spawns threads or knows sockets.

pub mod aggregate;
pub mod analysis;
pub mod codes;
pub mod compare;
pub mod counters;
pub mod error;
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

pub use aggregate::{
    Aggregator, BroadcastSummary, Connections, Exchanges, Io, LatencyBasis, Outcome, PhaseSummary,
    Ramp, Rps, Summary, Tick, TickLatency,
};
pub use analysis::{
    analyze, AnalysisReport, Fit, LeakStatus, LeakVerdict, Recovery, Stability, Trend, Verdict,
    Window,
};
pub use codes::CodeCounts;
pub use counters::{BroadcastCounts, CommandCount, CommandCounts, Counters};
pub use error::{ErrorClass, ErrorCounts};
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
