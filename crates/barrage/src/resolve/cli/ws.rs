//! `barrage run`'s WebSocket flags (ws://, wss://), flattened into `RunArgs`.

use clap::Args;

#[derive(Args, Debug, Clone, Default)]
pub struct WsArgs {
    /// WebSocket subprotocol to request (Sec-WebSocket-Protocol)
    #[arg(long, value_name = "NAME", help_heading = "HTTP and WebSocket")]
    pub subprotocol: Option<String>,

    /// WebSocket: send binary frames instead of text
    #[arg(long, help_heading = "HTTP and WebSocket")]
    pub binary: bool,
}
