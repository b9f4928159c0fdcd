//! HTTP/1.1 client codec, sans-IO: request templates built once, responses decoded from byte
//! slices.
//!
//! Requests are validated and pre-built at plan time ([`RequestTemplate`]): a request without
//! placeholders is one byte string written as is; with `{conn}`, `{seq}` or `{ts_us}` it is
//! rendered into the caller's reused buffer, with the Content-Length of a templated body
//! computed arithmetically (no second pass, no memmove).
//!
//! The [`ResponseDecoder`] keeps only a few words of state per connection. A response head is
//! parsed (httparse) straight from the read buffer; only a head that spans reads is copied into
//! a buffer owned by the decoder, allocated on first need and capped by [`Limits`]. Body bytes
//! are never copied: the decoder counts them down (length, chunked, until EOF) and hands the
//! slices to the sink.

mod head;
mod request;
mod response;
pub mod spec;
pub mod status;
pub mod tunnel;

pub(crate) use head::{has_token, header_values, list_items, Head, HeadReader, Progress};
pub(crate) use request::{
    check_placeholders, ranged, validate_header, validate_path, validate_value, USER_AGENT,
};
pub use request::{RequestSpec, RequestTemplate};
pub(crate) use response::server_timing_of;
pub use response::{ResponseDecoder, ResponseSink};

/// Bounds on a response head, so a server that never ends its headers cannot grow a buffer
/// beyond `max_header_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of status line + header lines (also caps the trailer section of a chunked body).
    pub max_header_bytes: usize,
    /// Header fields in one head (at most [`MAX_HEADER_LINES`]: the parser's slots live on
    /// the stack).
    pub max_header_lines: usize,
}

/// Hard ceiling for [`Limits::max_header_lines`].
pub const MAX_HEADER_LINES: usize = 256;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_header_bytes: 64 * 1024,
            max_header_lines: 100,
        }
    }
}

/// Why a response stream cannot be decoded; the connection is unusable afterwards.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    #[error("malformed HTTP status line")]
    BadStatusLine,
    #[error("malformed HTTP header")]
    BadHeader,
    #[error("response headers exceed the size limit")]
    HeadersTooLarge,
    #[error("response has too many header lines")]
    TooManyHeaders,
    #[error("invalid Content-Length")]
    BadContentLength,
    #[error("malformed chunked body")]
    BadChunk,
    #[error("connection closed in the middle of a response")]
    Truncated,
    #[error("the server answered with TLS; use https:// (or wss://) for this port")]
    TlsOnPlainPort,
}

/// Why a request cannot be built; each message names what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("the HTTP method is empty")]
    EmptyMethod,
    #[error("the HTTP method {0:?} is not a token (letters, digits and !#$%&'*+-.^_`|~ only)")]
    InvalidMethod(String),
    #[error("{1} contains CR or LF, which would inject header lines")]
    Injection(Field, String),
    #[error("the header name {0:?} is not a token (letters, digits and !#$%&'*+-.^_`|~ only)")]
    InvalidHeaderName(String),
    #[error("the value of header {0} contains a control character")]
    InvalidHeaderValue(String),
    #[error("the path {0:?} must start with '/' (or be '*' with OPTIONS)")]
    PathNotAbsolute(String),
    #[error("the path {0:?} contains a space, control or non-ASCII character; percent-encode it")]
    InvalidPath(String),
    #[error("a {0} request has no body; use -X POST")]
    BodyNotAllowed(String),
    #[error("Content-Length is computed from the body by barrage; remove the header")]
    ContentLengthGiven,
    #[error("Transfer-Encoding is not supported: barrage sends bodies with Content-Length; remove the header")]
    TransferEncodingGiven,
    #[error("the header {0} is given twice")]
    DuplicateHeader(String),
    #[error("the header {0} is set by the WebSocket handshake; remove it")]
    HandshakeHeader(String),
    #[error("the subprotocol {0:?} is not a comma-separated list of tokens")]
    InvalidSubprotocol(String),
    #[error("the header {0} is HTTP/1.1's own and HTTP/2 forbids it; remove it")]
    ConnectionSpecific(String),
    /// A malformed `{seq%N}`, `{rand%N}`, `{conn%N}` or `{user%N}` in the path, a header or
    /// the body.
    #[error("{1} has a malformed placeholder: {2}")]
    Placeholder(Field, String, crate::message::TemplateError),
}

/// The part of the user's request a [`RequestError`] is about, so that the CLI names the right
/// flag without guessing it from the message's wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The HTTP method (`-X`).
    Method,
    /// The target URL: its path or host.
    Target,
    /// A header the user gave (`-H`).
    Header,
    /// The request body (`--body`).
    Body,
    /// The WebSocket subprotocol (`--subprotocol`).
    Subprotocol,
}

impl RequestError {
    /// What the user has to change.
    pub fn field(&self) -> Field {
        match self {
            Self::EmptyMethod | Self::InvalidMethod(_) => Field::Method,
            Self::Injection(f, _) | Self::Placeholder(f, _, _) => *f,
            Self::InvalidHeaderName(_)
            | Self::InvalidHeaderValue(_)
            | Self::ContentLengthGiven
            | Self::TransferEncodingGiven
            | Self::DuplicateHeader(_)
            | Self::HandshakeHeader(_)
            | Self::ConnectionSpecific(_) => Field::Header,
            Self::PathNotAbsolute(_) | Self::InvalidPath(_) => Field::Target,
            Self::BodyNotAllowed(_) => Field::Body,
            Self::InvalidSubprotocol(_) => Field::Subprotocol,
        }
    }
}

/// `tchar` of RFC 9110 §5.6.2.
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

pub fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_tchar)
}

#[cfg(test)]
pub(crate) mod smoke_tests;
