//! HTTP/2 stream state: each stream in flight (its key, fill, send window, what its reply
//! said so far), the server's settings, bodies waiting for window, and the connection's
//! state but the frame reader ([`St`]): the HPACK tables, the connection windows, GOAWAY,
//! the control frames owed, and the streams this side reset.

use crate::grpc::MsgReader;
use crate::h2::frame;
use crate::h2::hpack::Decoder;
use crate::h2::Encoder;
use crate::message::Fill;

/// A stream in flight.
#[derive(Clone, Copy, Debug)]
pub(super) struct Stream {
    pub(super) id: u32,
    pub(super) key: u64,
    /// Its request's fill, to send it again after `REFUSED_STREAM`.
    pub(super) fill: Fill,
    /// The response's status (0 until its head came).
    pub(super) status: u16,
    /// Send window for its body.
    pub(super) send: i64,
    /// Bytes received since its window was last refilled.
    pub(super) unacked: u32,
    pub(super) server_ns: Option<u64>,
    pub(super) retried: bool,
    /// gRPC: the reply's messages, how many ended, and its `grpc-status` (once it came).
    pub(super) msgs: MsgReader,
    pub(super) n_msgs: u32,
    pub(super) grpc_status: Option<u32>,
    /// gRPC: a server-streaming call (any number of messages, each timed), else unary.
    pub(super) streaming: bool,
    /// gRPC: the reply's head said `content-type: application/grpc...`.
    pub(super) grpc_type: bool,
    /// The response's content-length, and the body bytes received (DATA less padding).
    pub(super) length: Option<u64>,
    pub(super) got: u64,
    /// A HEAD request: its response has no body, whatever its content-length says.
    pub(super) head: bool,
}

impl Stream {
    pub(super) fn new(
        id: u32,
        key: u64,
        fill: Fill,
        send: i64,
        retried: bool,
        streaming: bool,
    ) -> Self {
        Self {
            id,
            key,
            fill,
            status: 0,
            send,
            unacked: 0,
            server_ns: None,
            retried,
            msgs: MsgReader::default(),
            n_msgs: 0,
            grpc_status: None,
            streaming,
            grpc_type: false,
            length: None,
            got: 0,
            head: false,
        }
    }
}

/// The server's settings.
#[derive(Clone, Copy, Debug)]
pub(super) struct Peer {
    pub(super) max_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE: each new stream's send window.
    pub(super) window: u32,
    pub(super) max_frame: u32,
}

impl Default for Peer {
    fn default() -> Self {
        Self {
            max_streams: u32::MAX,
            window: 65_535,
            max_frame: frame::DEFAULT_MAX_FRAME,
        }
    }
}

/// A body (or its rest) waiting for send window.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pending {
    pub(super) stream: u32,
    /// Range of the bytes: in the request's fixed body, or in `St::held`.
    pub(super) at: usize,
    pub(super) end: usize,
    pub(super) held: bool,
}

/// The connection's state but the frame reader.
pub(super) struct St {
    pub(super) hp: Decoder,
    pub(super) enc: Encoder,
    pub(super) streams: Vec<Stream>,
    pub(super) next_id: u32,
    pub(super) peer: Peer,
    pub(super) conn_send: i64,
    pub(super) conn_unacked: u32,
    /// The server's first SETTINGS came (the handshake is over).
    pub(super) settled: bool,
    /// The handshake ended inside this input: stop reading there.
    pub(super) paused: bool,
    /// GOAWAY's last stream id and code.
    pub(super) goaway: Option<(u32, u32)>,
    /// A control frame's payload (PING, RST_STREAM, WINDOW_UPDATE, GOAWAY's first 8 bytes,
    /// a SETTINGS entry).
    pub(super) small: [u8; 8],
    pub(super) small_len: u8,
    /// The header block being collected (HEADERS then CONTINUATION), or GOAWAY's debug text.
    pub(super) block: Vec<u8>,
    /// Awaiting CONTINUATION for the block of this stream.
    pub(super) cont: Option<u32>,
    /// The block's HEADERS frame ended the stream.
    pub(super) block_ends: bool,
    pub(super) pending: Vec<Pending>,
    /// Bodies with placeholders that wait for window.
    pub(super) held: Vec<u8>,
    /// A scenario step's request as rendered (HTTP/1.1 text), while it is framed.
    pub(super) step: Vec<u8>,
    /// A scenario step's request could not be framed (not a valid request): the connection
    /// fails at its next input, saying so.
    pub(super) unframed: bool,
    /// Control frames (SETTINGS and PING acknowledgements, WINDOW_UPDATE, a request sent
    /// again) the socket had no room for: all of them go out, in order, once it drains.
    pub(super) owed: Vec<u8>,
    /// Frames written since the recorder last took the count (`h2.frames_written`).
    pub(super) frames_out: u64,
    /// Bytes of request frames (DATA a WINDOW_UPDATE released, a refused request sent
    /// again) among the control bytes of this input, and among `owed`: the server's windows
    /// bound them, not the cap on answers owed ([`MAX_OWED`]).
    pub(super) ctl_data: usize,
    pub(super) owed_data: usize,
    /// Streams this side reset (timed out, malformed replies): what the server still sends
    /// on them is dropped (RFC 9113 5.1); the most recent [`RESET_KEPT`]. Frames on other
    /// closed streams are a connection error (STREAM_CLOSED).
    pub(super) reset_here: Vec<u32>,
    /// An exchange completed on this connection (a GOAWAY before any did turns it away).
    pub(super) served: bool,
}

/// Stream `id` among the streams reset (the most recent [`RESET_KEPT`]).
pub(super) fn remember(reset: &mut Vec<u32>, id: u32) {
    if reset.len() >= RESET_KEPT {
        reset.remove(0);
    }
    reset.push(id);
}

/// The last stream id a client may open (odd, at most 2^31 - 1).
pub(super) const LAST_ID: u32 = (1 << 31) - 1;

/// Control frames owed to a server that does not read them, at most: past this it floods.
pub(super) const MAX_OWED: usize = 1 << 20;

/// Streams reset by this side remembered per connection, at most.
pub(super) const RESET_KEPT: usize = 1024;

impl St {
    /// `header_table`: the SETTINGS_HEADER_TABLE_SIZE advertised, the decoder's limit.
    pub(super) fn new(header_table: u32) -> Self {
        Self {
            hp: Decoder::new(header_table as usize),
            enc: Encoder::new(),
            streams: Vec::new(),
            next_id: 1,
            peer: Peer::default(),
            conn_send: 65_535,
            conn_unacked: 0,
            settled: false,
            paused: false,
            goaway: None,
            small: [0; 8],
            small_len: 0,
            block: Vec::new(),
            cont: None,
            block_ends: false,
            pending: Vec::new(),
            held: Vec::new(),
            step: Vec::new(),
            unframed: false,
            owed: Vec::new(),
            frames_out: 0,
            ctl_data: 0,
            owed_data: 0,
            reset_here: Vec::new(),
            served: false,
        }
    }

    /// Stream `id` reset by this side: RST_STREAM with `code`, and what still comes on it
    /// is dropped.
    pub(super) fn reset_here(&mut self, ctl: &mut Vec<u8>, id: u32, code: u32) {
        frame::put_rst(ctl, id, code);
        self.frames_out += 1;
        remember(&mut self.reset_here, id);
    }

    pub(super) fn stream(&mut self, id: u32) -> Option<&mut Stream> {
        self.streams.iter_mut().find(|s| s.id == id)
    }
}
