//! The sockets opened before the load: the pre-flight TLS handshake (`tls.rs`), gRPC server
//! reflection (`reflect.rs`), and whether a `--source-ip` is this machine's (`local.rs`).
//! Below `resolve/` (which opens no socket of its own: a house test says so) and above
//! `sinks/`; each takes plain values and returns its reason as text, for its caller to name
//! the flag.

pub mod local;
#[cfg(feature = "grpc")]
pub mod reflect;
pub mod tls;
