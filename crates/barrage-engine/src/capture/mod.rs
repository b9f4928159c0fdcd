//! Matching and capturing values in replies (`expect` matches, `capture` into variables).
//!
//! Sans-IO: every function here sees one complete reply as a `&[u8]` (an HTTP body, a
//! WebSocket message, a framed TCP reply), never a socket. Everything that can fail on the
//! user's text fails at compile time (a scenario's load) with a one-line [`CaptureError`];
//! per reply, a [`Matcher`] answers yes/no and a [`Capture`] finds a value or misses, both
//! without allocating (the exceptions are named where they are). Variables live in a per-user
//! [`Vars`] indexed by slot: names are resolved to slots when a scenario is compiled
//! ([`crate::message::Template::with_vars`]), so rendering never looks a name up.

mod extract;
pub mod json;
mod matcher;
#[cfg(test)]
mod smoke;
mod vars;

pub use extract::{Anchor, Capture, Found};
pub use json::Pointer;
pub use matcher::Matcher;
pub use vars::Vars;

/// Replies collected for matching are cut at this size (the rest is not kept).
pub const MAX_REPLY: usize = 1 << 20;

/// A matcher or capture that cannot be compiled; one line, naming the text at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptureError {
    #[error("JSON pointer '{0}': {1}")]
    Pointer(String, String),
    #[error("JSON value '{0}': {1}")]
    JsonValue(String, String),
    #[error("regex '{0}': {1}")]
    Regex(String, String),
    #[error("regex '{0}' has no group {1}; its groups: {2}")]
    Group(String, String, String),
    #[error("split: {0}")]
    Split(String),
    #[error("bytes '{0}': write START..END, START.. or ..END with END above START (e.g. 4..12)")]
    Range(String),
    #[error("type '{0}' is not an integer type: u8, u16be, u16le, u32be, u32le, u64be, u64le (i8 ... i64le), varint, mqtt_varint")]
    IntType(String),
    #[error("a binary field equals a whole number, not {0}")]
    IntValue(String),
}

/// An integer field's type by its name.
fn int_kind(name: &str) -> Result<crate::message::binary::IntKind, CaptureError> {
    crate::message::binary::IntKind::parse(name).ok_or_else(|| CaptureError::IntType(name.into()))
}

/// Compiles a pattern; the regex crate's multi-line diagnostic becomes one line.
fn compile_regex(pattern: &str) -> Result<regex::bytes::Regex, CaptureError> {
    regex::bytes::Regex::new(pattern).map_err(|e| {
        let text = e.to_string();
        let why = text
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("error: "))
            .unwrap_or_else(|| text.lines().last().unwrap_or("invalid pattern"))
            .trim()
            .to_string();
        CaptureError::Regex(pattern.to_string(), why)
    })
}
