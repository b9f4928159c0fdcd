//! Redis client codec, sans-IO: `--command` compilation to RESP requests
//! (`Commands::redis`, over the mix shared with memcached, [`crate::command`]) and the
//! streaming RESP2/RESP3 reply decoder ([`RespDecoder`]).
//!
//! Redis answers in order, so a reply completes the oldest request in flight; pushes (RESP3
//! `>`) are out-of-band and complete nothing. The decoder reports only top-level values, with
//! a fixed stack for nesting and no copy of any payload, so a connection's redis state is a
//! couple of hundred bytes whatever the replies.

mod command;
mod resp;
pub mod spec;

pub use crate::command::{CommandError, Commands, Last, MAX_TOTAL_WEIGHT};
pub use resp::{RespDecoder, RespError, RespReply, RespSink, MAX_AGGREGATE, MAX_BULK, STACK};

#[cfg(test)]
mod tests;
