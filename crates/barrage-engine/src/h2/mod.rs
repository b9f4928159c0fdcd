//! HTTP/2 (RFC 9113) as a client speaks it, sans-IO over byte slices: the frame reader and
//! writers ([`frame`]), HPACK ([`hpack`], [`huffman`]) and requests compiled into header
//! blocks ([`request`]). The connection's state (streams, settings, flow control, GOAWAY) is
//! the session's: `crate::session::h2`.

pub mod frame;
pub mod hpack;
pub mod huffman;
pub mod request;

pub use request::{Body, EncState, Encoder, H2Request, H2RequestSpec};

/// What a run's HTTP/2 connections advertise and keep open for the server (`--h2-window`,
/// `--h2-conn-window`, `--h2-header-table`; h2load's `-w`, `-W` and `--header-table-size`):
/// [`ours`]'s values unless asked otherwise. A small window makes the server wait for the
/// client's WINDOW_UPDATEs, as a slow or careful client does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct H2Settings {
    /// SETTINGS_INITIAL_WINDOW_SIZE: each stream's receive window.
    pub stream_window: u32,
    /// The connection's receive window (a WINDOW_UPDATE after the preface raises it from
    /// 65,535).
    pub conn_window: u32,
    /// SETTINGS_HEADER_TABLE_SIZE: the HPACK table the server may fill on a connection.
    pub header_table: u32,
}

impl Default for H2Settings {
    fn default() -> Self {
        H2Settings {
            stream_window: ours::STREAM_WINDOW,
            conn_window: ours::CONN_WINDOW,
            header_table: ours::HEADER_TABLE,
        }
    }
}

impl H2Settings {
    /// The largest flow-control window (RFC 9113, 6.9.1).
    pub const MAX_WINDOW: u32 = (1 << 31) - 1;
    /// The largest header table offered: a server may fill it on every connection.
    pub const MAX_HEADER_TABLE: u32 = 16 << 20;

    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// What this client advertises in its SETTINGS by default ([`H2Settings`]).
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
