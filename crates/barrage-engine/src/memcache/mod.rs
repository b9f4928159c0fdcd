//! memcached client codec (text protocol), sans-IO: the `--command` grammar
//! (`Commands::memcache` in `command.rs`, which frames storage commands with flags 0, exptime 0
//! and the byte count of the filled value, over the mix shared with redis,
//! [`crate::command`]) and the streaming reply decoder ([`McDecoder`]).
//!
//! The text protocol answers in order and every reply kind is recognisable without knowing
//! the request, so the decoder is context-free: it reports one [`McReply`] per reply and the
//! session pairs it with the oldest request in flight. Misses (`END` alone, `NOT_FOUND`) are
//! completed requests, counted apart from errors.

mod command;
mod decode;
pub mod spec;

pub use crate::command::McCommandError;
pub use decode::{McDecoder, McError, McReply, McSink, MAX_LINE, MAX_VALUE};

#[cfg(test)]
mod tests;
