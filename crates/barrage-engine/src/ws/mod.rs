//! WebSocket client codec (RFC 6455), sans-IO: handshake, frame encoding, frame decoding.
//!
//! The handshake response reuses the HTTP head reader (same limits, same no-copy fast path).
//! Frames are encoded straight into the caller's send buffer and masked in place, 8 bytes at a
//! time; [`frame_in_place`] frames a payload the caller already rendered there. The
//! [`FrameDecoder`] holds a fixed, small state (header bytes, bytes left, fragmentation and
//! UTF-8 state, a 125-byte array for control payloads): data payloads are validated and passed
//! on as slices of the read buffer, never copied. No extension is negotiated, so any RSV bit
//! is an error.

mod decode;
mod encode;
mod handshake;
pub mod spec;

pub use decode::{FrameDecoder, FrameSink};
pub use encode::{apply_mask, close_frame, encode_frame, frame_in_place};
pub use handshake::{
    accept_for, handshake_request, new_key, Handshake, HandshakeDecoder, HandshakeSpec,
};

use crate::http::HttpError;

/// Frame opcodes of RFC 6455 §5.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpCode {
    Continuation,
    Text,
    Binary,
    Close,
    Ping,
    Pong,
}

impl OpCode {
    pub fn code(self) -> u8 {
        match self {
            Self::Continuation => 0x0,
            Self::Text => 0x1,
            Self::Binary => 0x2,
            Self::Close => 0x8,
            Self::Ping => 0x9,
            Self::Pong => 0xA,
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0x0 => Self::Continuation,
            0x1 => Self::Text,
            0x2 => Self::Binary,
            0x8 => Self::Close,
            0x9 => Self::Ping,
            0xA => Self::Pong,
            _ => return None,
        })
    }

    pub fn is_control(self) -> bool {
        self.code() & 0x8 != 0
    }
}

/// A protocol violation by the server (or a failed handshake); the connection must be closed
/// (RFC 6455 "_Fail the WebSocket Connection_").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WsError {
    #[error("the server sent a masked frame (server frames must not be masked)")]
    MaskedServerFrame,
    #[error("a frame has RSV bits set, but no extension was negotiated")]
    ReservedBits,
    #[error("unknown WebSocket opcode {0:#x}")]
    UnknownOpcode(u8),
    #[error("a control frame is fragmented")]
    FragmentedControl,
    #[error("a control frame carries more than 125 bytes")]
    ControlTooLong,
    #[error("a close frame with a 1-byte payload (a close code takes 2)")]
    CloseTooShort,
    #[error("invalid close code {0}")]
    InvalidCloseCode(u16),
    #[error("invalid UTF-8 in a text message or close reason")]
    InvalidUtf8,
    #[error("a message of {0} bytes exceeds the message size limit")]
    MessageTooLarge(u64),
    #[error("a continuation frame arrived with no fragmented message open")]
    UnexpectedContinuation,
    #[error("a new data message started before the fragmented one ended")]
    ExpectedContinuation,
    #[error("the WebSocket handshake got HTTP status {0} instead of 101")]
    HandshakeStatus(u16),
    #[error("the WebSocket handshake response has a missing or wrong {0} header")]
    HandshakeHeader(&'static str),
    #[error("Sec-WebSocket-Accept in the handshake response does not match the key sent")]
    BadAccept,
    #[error("the server did not agree on the requested subprotocol")]
    Subprotocol,
    #[error("the handshake response headers exceed the limit")]
    HeadersTooLarge,
    #[error("malformed handshake response: {0}")]
    BadHandshake(HttpError),
}

#[cfg(test)]
mod smoke_tests;
