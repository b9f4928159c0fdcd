//! barrage-servers: the reference servers that barrage is tested and benchmarked against.
//!
//! The TCP [`echo`] server, the [`http`] server (HTTP/1.1, optional TLS) and the WebSocket
//! echo server [`ws`]; a chat server will follow. They share what is not protocol-specific:
//! [`ServerStats`] (exact counters a test can reconcile with what its client saw, with an
//! [`HttpStats`] or [`WsStats`] part), [`ServerError`], [`ServerHandle`] (stop, join, read
//! counters), the event loop (`driver`) and the fault knobs (`faults`: delay, stall).
//!
//! Key decision: these servers share no code with the client engine (no codec, no I/O loop),
//! so that a bug on one side cannot hide itself by being present on both. Each server runs one
//! non-blocking event loop per thread (mio) with one `SO_REUSEPORT` listener per thread, so it is
//! fast enough to be a benchmark target rather than the bottleneck. Servers start and stop inside
//! the calling process: tests bind port 0, the CLI binds what the user asked.

pub mod chat;
mod driver;
pub mod echo;
mod faults;
pub mod frames;
#[cfg(feature = "h2")]
pub mod grpc;
pub mod http;
#[cfg(feature = "h2")]
pub mod http2;
mod runtime;
mod sock;
mod stats;
mod tls;
pub mod ws;

pub use tls::TlsFiles;

pub use runtime::ServerHandle;
pub use stats::{ChatStats, GrpcStats, HttpStats, ServerError, ServerStats, TlsStats, WsStats};
