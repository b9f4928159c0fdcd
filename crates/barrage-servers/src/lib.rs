//! barrage-servers: the reference servers that barrage is tested and benchmarked against.
//!
//! Today this is the TCP [`echo`] server; http, ws and chat servers will follow and reuse what
//! is not echo-specific: [`ServerStats`] (exact counters a test can reconcile with what its
//! client saw), [`ServerError`] and [`ServerHandle`] (stop, join, read counters).
//!
//! Key decision: these servers share no code with the client engine (no codec, no I/O loop),
//! so that a bug on one side cannot hide itself by being present on both. Each server runs one
//! non-blocking event loop per thread (mio) with one `SO_REUSEPORT` listener per thread, so it is
//! fast enough to be a benchmark target rather than the bottleneck. Servers start and stop inside
//! the calling process: tests bind port 0, the CLI binds what the user asked.

pub mod echo;
mod runtime;
mod stats;

pub use runtime::ServerHandle;
pub use stats::{ServerError, ServerStats};
