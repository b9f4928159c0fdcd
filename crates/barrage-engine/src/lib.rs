//! barrage-engine: executes a plan against a target.
//!
//! A [`Plan`] (validated by the binary) splits into shares; each share runs on one worker
//! thread with its own mio event loop, its connections as state machines, and its own
//! recorder. Protocol knowledge lives in sans-IO codecs ([`framing`]) that see byte slices,
//! never sockets; pacing is pure functions of time ([`pacer`]). The coordinator ([`run()`])
//! merges the workers' per-segment deltas into ticks and the final outcome.

pub mod capture;
pub mod classify;
pub mod clock;
pub mod command;
mod conn;
pub mod exchange;
pub mod framing;
pub mod http;
pub mod memcache;
pub mod message;
pub mod pacer;
pub mod plan;
pub mod ports;
pub mod redis;
pub mod run;
pub mod script;
pub mod session;
pub mod shape;
pub mod spec;
mod transport;
pub mod users;
mod worker;
pub mod ws;

pub use framing::{Delimiter, Framing, LenPrefix};
pub use message::{escape, unescape, EscapeError, Fill, Template, TemplateError, VarTemplateError};
pub use plan::{
    HttpPlan, McPlan, Mode, Plan, Protocol, RedisPlan, Share, StatusSet, Target, TlsPlan, WsPlan,
};
pub use run::{
    hurry, observe, run, run_observed, run_session, run_virtual, End, EngineError, Observer,
    RunOutput,
};
pub use spec::{Clock, ModeSpec, ProtocolSpec, ScenarioSpec, ShareSet, Spec, SpecError, TlsSpec};
pub use worker::classify_tls;
