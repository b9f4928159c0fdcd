//! HTTP/2 (RFC 9113) as a client speaks it, sans-IO over byte slices: the frame reader and
//! writers ([`frame`]), HPACK ([`hpack`], [`huffman`]) and requests compiled into header
//! blocks ([`request`]). The connection's state (streams, settings, flow control, GOAWAY) is
//! the session's: `crate::session::h2`.

pub mod frame;
pub mod hpack;
pub mod huffman;
pub mod request;

pub use request::{Body, EncState, Encoder, H2Request, H2RequestSpec};

/// What this client advertises in its SETTINGS.
pub mod ours {
    /// SETTINGS_HEADER_TABLE_SIZE: the HPACK table a server may fill on each connection.
    pub const HEADER_TABLE: u32 = 4096;
    /// SETTINGS_INITIAL_WINDOW_SIZE: each stream's receive window. Bodies are consumed as they
    /// arrive (never held), so a large window costs nothing; WINDOW_UPDATE refills it.
    pub const STREAM_WINDOW: u32 = 1 << 30;
    /// The connection's receive window, raised from 65,535 by a WINDOW_UPDATE after the
    /// preface.
    pub const CONN_WINDOW: u32 = 1 << 30;
    /// SETTINGS_MAX_FRAME_SIZE (the protocol's default).
    pub const MAX_FRAME: u32 = super::frame::DEFAULT_MAX_FRAME;
    /// SETTINGS_MAX_HEADER_LIST_SIZE: a response's decoded header list.
    pub const MAX_HEADER_LIST: u32 = 64 * 1024;
}
