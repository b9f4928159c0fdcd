//! barrage-engine: runs a plan against a target.
//!
//! A [`Spec`] is the run as data (serde, secrets left as placeholders); each process builds
//! its runtime [`Plan`] from it ([`Spec::plan`]) and runs its shares: all of them, or the
//! [`ShareSet`] of a split run, with time zero at a common instant ([`Clock::At`]). Each share
//! runs on one worker thread with its own mio event loop, its connections as state machines
//! generic over the protocol's [`session::Session`], and its own recorder. What a connection
//! sends and when is its [`modes`] (compiled from the flags) or a scenario user's program
//! ([`users`]); pacing is pure functions of time ([`pacer`], [`shape`]). Protocol knowledge
//! lives in sans-IO sessions and codecs ([`session`], [`framing`], [`http`], [`ws`],
//! [`redis`], [`memcache`]) that see byte slices, never sockets.
//!
//! The coordinator ([`run()`], [`run_observed`]; [`run_session`] for a session defined
//! outside this crate) starts one worker per share for the plan's protocol, merges their
//! per-segment deltas into ticks and the final outcome, hands each tick (and, when asked, each
//! second's merged delta) to its [`Observer`], and says how the run ended ([`End`]).

pub mod capture;
pub mod classify;
pub mod clock;
pub mod command;
mod conn;
pub mod exchange;
pub mod framing;
pub mod grpc;
pub mod h2;
pub mod hook;
pub mod http;
pub mod memcache;
pub mod message;
pub mod modes;
pub mod mqtt;
pub mod os;
pub mod pacer;
pub mod plan;
pub mod ports;
pub mod protocols;
pub mod redis;
pub mod run;
pub mod session;
pub mod shape;
pub mod spec;
mod stop;
mod transport;
pub mod users;
mod worker;
pub mod ws;

pub use framing::{Delimiter, Framing, LenPrefix};
pub use h2::H2Settings;
pub use message::{escape, unescape, EscapeError, Fill, Template, TemplateError, VarTemplateError};
pub use plan::{
    GrpcMode, H2Plan, HttpPlan, McPlan, Mode, Plan, Protocol, ProxyPlan, RedisPlan, ScriptPlan,
    Share, StatusSet, Target, TlsPlan, WsPlan,
};
pub use run::{
    hurry, observe, run, run_observed, run_session, run_virtual, End, EngineError, Observer,
    RunOutput,
};
pub use spec::{
    Clock, GrpcSpec, HttpSpec, HttpVersion, McSpec, ModeSpec, MqttSpec, ProtocolSpec, ProxySpec,
    RedisSpec, ScenarioSpec, ScriptSpec, ShareSet, Spec, SpecError, TcpSpec, TlsSpec, WsSpec,
};
pub use worker::classify_tls;
