//! `barrage run`'s HTTP flags (http://, https://, h2c://; `-H`, `--streams` and the HTTP/2
//! settings for gRPC and WebSocket too), flattened into `RunArgs`.

use super::units;
use clap::Args;

#[derive(Args, Debug, Clone, Default)]
pub struct HttpArgs {
    /// HTTP method [default: GET]
    #[arg(
        short = 'X',
        long,
        value_name = "METHOD",
        help_heading = "HTTP and WebSocket"
    )]
    pub method: Option<String>,

    /// Request header 'Name: value' (repeatable); for ws:// sent with the handshake
    #[arg(
        short = 'H',
        long = "header",
        value_name = "NAME: VALUE",
        help_heading = "HTTP and WebSocket"
    )]
    pub headers: Vec<String>,

    /// Request body: TEXT, or @FILE to read it from a file
    #[arg(
        long,
        value_name = "TEXT|@FILE",
        allow_hyphen_values = true,
        help_heading = "HTTP and WebSocket"
    )]
    pub body: Option<String>,

    /// Status codes that count as success, e.g. 200,204 or 2xx,3xx or 200-299 [default: 2xx,3xx]
    #[arg(
        long,
        value_name = "LIST",
        allow_hyphen_values = true,
        help_heading = "HTTP and WebSocket"
    )]
    pub expect_status: Option<String>,

    /// Speak HTTP/2: h2c with prior knowledge on http://, ALPN h2 only on https:// (h2c:// targets speak it anyway)
    #[arg(long, help_heading = "HTTP and WebSocket")]
    pub http2: bool,

    /// Speak HTTP/1.1 on https:// (offer only http/1.1 by ALPN)
    #[arg(long = "http1.1", help_heading = "HTTP and WebSocket")]
    pub http1_1: bool,

    /// HTTP/2: concurrent streams per connection (h2load's -m), capped by the server's SETTINGS_MAX_CONCURRENT_STREAMS
    #[arg(long, value_parser = units::count, value_name = "N", allow_hyphen_values = true, help_heading = "HTTP and WebSocket")]
    pub streams: Option<u64>,

    /// HTTP/2: each stream's receive window the server may fill before the client's
    /// WINDOW_UPDATE (h2load's -w), e.g. 64k [default: 1GiB]
    #[arg(long, value_parser = units::bytes, value_name = "BYTES", help_heading = "HTTP and WebSocket")]
    pub h2_window: Option<u64>,

    /// HTTP/2: the connection's receive window, over all its streams (h2load's -W), at least
    /// 64KiB - 1 [default: 1GiB]
    #[arg(long, value_parser = units::bytes, value_name = "BYTES", help_heading = "HTTP and WebSocket")]
    pub h2_conn_window: Option<u64>,

    /// HTTP/2: the HPACK header table the server may fill per connection (h2load's
    /// --header-table-size), 0 for none [default: 4KiB]
    #[arg(long, value_parser = table_size, value_name = "BYTES", help_heading = "HTTP and WebSocket")]
    pub h2_header_table: Option<u64>,
}

/// A header table's size: a size, or 0 for none.
fn table_size(s: &str) -> Result<u64, String> {
    if s.trim() == "0" {
        return Ok(0);
    }
    units::bytes(s)
}
