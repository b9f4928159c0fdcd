//! HTTP/2: one connection carries many streams, each one exchange (its key is the stream's).
//!
//! The connection opens with the preface, this side's SETTINGS and a WINDOW_UPDATE that
//! lifts the connection's receive window; the server's first SETTINGS (acknowledged) ends
//! the handshake, so its SETTINGS_MAX_CONCURRENT_STREAMS is known before a request goes out:
//! [`Session::room`] keeps the streams in flight under it, and what a connection owes beyond
//! that waits for a stream to end. Responses are read frame by frame ([`FrameReader`]):
//! header blocks are decoded with the connection's HPACK table, bodies are counted (and
//! given to a scenario step that looks into them) and never kept, and the receive windows
//! are refilled as data is consumed. A stream ends as its exchange: completed (its status
//! judged as HTTP/1.1's), reset by the server (`stream_reset`, by code; `REFUSED_STREAM` is
//! sent again once), or refused by a GOAWAY (`goaway`). A GOAWAY lets the streams it covers
//! finish, then the connection is opened again. What the server sends that breaks the
//! protocol fails the connection with the frame named.

use super::{Close, Msg, Out, ProtoError, Rendered, Replies, Session};
use crate::grpc::MsgReader;
use crate::h2::frame::{self, code, flag, kind, put_head, set_head, FrameReader, FrameSink, Head};
use crate::h2::hpack::Decoder;
use crate::h2::{ours, Body, Encoder, H2Request};
use crate::message::Fill;
use crate::plan::{GrpcMode, Plan, Protocol, StatusSet};
use barrage_metrics::{ErrorClass, Recorder};

pub struct Cfg {
    request: H2Request,
    expect: StatusSet,
    streams: u32,
    grpc: Option<GrpcMode>,
}

/// A stream in flight.
#[derive(Clone, Copy, Debug)]
struct Stream {
    id: u32,
    key: u64,
    /// Its request's fill, to send it again after `REFUSED_STREAM`.
    fill: Fill,
    /// The response's status (0 until its head came).
    status: u16,
    /// Send window for its body.
    send: i64,
    /// Bytes received since its window was last refilled.
    unacked: u32,
    server_ns: Option<u64>,
    retried: bool,
    /// gRPC: the reply's messages, how many ended, and its `grpc-status` (once it came).
    msgs: MsgReader,
    n_msgs: u32,
    grpc_status: Option<u32>,
    /// gRPC: a server-streaming call (any number of messages, each timed), else unary.
    streaming: bool,
    /// gRPC: the reply's head said `content-type: application/grpc...`.
    grpc_type: bool,
    /// The response's content-length, and the body bytes received (DATA less padding).
    length: Option<u64>,
    got: u64,
    /// A HEAD request: its response has no body, whatever its content-length says.
    head: bool,
}

impl Stream {
    fn new(id: u32, key: u64, fill: Fill, send: i64, retried: bool, streaming: bool) -> Self {
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
struct Peer {
    max_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE: each new stream's send window.
    window: u32,
    max_frame: u32,
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
struct Pending {
    stream: u32,
    /// Range of the bytes: in the request's fixed body, or in `St::held`.
    at: usize,
    end: usize,
    held: bool,
}

/// The connection's state but the frame reader.
struct St {
    hp: Decoder,
    enc: Encoder,
    streams: Vec<Stream>,
    next_id: u32,
    peer: Peer,
    conn_send: i64,
    conn_unacked: u32,
    /// The server's first SETTINGS came (the handshake is over).
    settled: bool,
    /// The handshake ended inside this input: stop reading there.
    paused: bool,
    /// GOAWAY's last stream id and code.
    goaway: Option<(u32, u32)>,
    /// A control frame's payload (PING, RST_STREAM, WINDOW_UPDATE, GOAWAY's first 8 bytes,
    /// a SETTINGS entry).
    small: [u8; 8],
    small_len: u8,
    /// The header block being collected (HEADERS then CONTINUATION), or GOAWAY's debug text.
    block: Vec<u8>,
    /// Awaiting CONTINUATION for the block of this stream.
    cont: Option<u32>,
    /// The block's HEADERS frame ended the stream.
    block_ends: bool,
    pending: Vec<Pending>,
    /// Bodies with placeholders that wait for window.
    held: Vec<u8>,
    /// A scenario step's request as rendered (HTTP/1.1 text), while it is framed.
    step: Vec<u8>,
    /// A scenario step's request could not be framed (not a valid request): the connection
    /// fails at its next input, saying so.
    unframed: bool,
    /// Control frames (SETTINGS and PING acknowledgements, WINDOW_UPDATE, a request sent
    /// again) the socket had no room for: all of them go out, in order, once it drains.
    owed: Vec<u8>,
    /// Frames written since the recorder last took the count (`h2.frames_written`).
    frames_out: u64,
    /// Bytes of request frames (DATA a WINDOW_UPDATE released, a refused request sent
    /// again) among the control bytes of this input, and among `owed`: the server's windows
    /// bound them, not the cap on answers owed ([`MAX_OWED`]).
    ctl_data: usize,
    owed_data: usize,
    /// Streams this side reset (timed out, malformed replies): what the server still sends
    /// on them is dropped (RFC 9113 5.1); the most recent [`RESET_KEPT`]. Frames on other
    /// closed streams are a connection error (STREAM_CLOSED).
    reset_here: Vec<u32>,
    /// An exchange completed on this connection (a GOAWAY before any did turns it away).
    served: bool,
}

/// Stream `id` among the streams reset (the most recent [`RESET_KEPT`]).
fn remember(reset: &mut Vec<u32>, id: u32) {
    if reset.len() >= RESET_KEPT {
        reset.remove(0);
    }
    reset.push(id);
}

/// The last stream id a client may open (odd, at most 2^31 - 1).
const LAST_ID: u32 = (1 << 31) - 1;

/// Control frames owed to a server that does not read them, at most: past this it floods.
const MAX_OWED: usize = 1 << 20;

/// Streams reset by this side remembered per connection, at most.
const RESET_KEPT: usize = 1024;

pub struct H2 {
    rd: FrameReader,
    st: St,
}

impl St {
    fn new() -> Self {
        Self {
            hp: Decoder::new(ours::HEADER_TABLE as usize),
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
    fn reset_here(&mut self, ctl: &mut Vec<u8>, id: u32, code: u32) {
        frame::put_rst(ctl, id, code);
        self.frames_out += 1;
        remember(&mut self.reset_here, id);
    }

    fn stream(&mut self, id: u32) -> Option<&mut Stream> {
        self.streams.iter_mut().find(|s| s.id == id)
    }

    /// Render request `fill` as stream `id` (HEADERS, CONTINUATION if the block is larger
    /// than the server's frames, DATA as far as the windows allow).
    fn request(&mut self, cfg: &Cfg, id: u32, fill: Fill, out: &mut Vec<u8>) {
        let req = &cfg.request;
        let at = out.len();
        out.extend_from_slice(&[0; frame::HEAD]);
        req.render_block(&mut self.enc, fill, out);
        self.headers(out, at, id, !req.has_body());
        let body_len = match &req.body {
            Body::None => return,
            Body::Fixed(b) => b.len(),
            Body::Dyn(_) | Body::Grpc(_) => {
                let h = self.held.len();
                match &req.body {
                    Body::Dyn(t) => {
                        t.render_into(fill, &mut self.held);
                    }
                    Body::Grpc(ms) => {
                        for t in ms.iter() {
                            t.write_framed(fill, &mut self.held);
                        }
                    }
                    _ => {}
                }
                self.pending.push(Pending {
                    stream: id,
                    at: h,
                    end: self.held.len(),
                    held: true,
                });
                return self.send_pending(cfg, out);
            }
        };
        self.pending.push(Pending {
            stream: id,
            at: 0,
            end: body_len,
            held: false,
        });
        self.send_pending(cfg, out);
    }

    /// Frame header block `out[at + HEAD..]` as stream `id`'s HEADERS (and CONTINUATION
    /// frames when it is larger than the server's frames) over the 9 bytes kept at `at`.
    fn headers(&mut self, out: &mut Vec<u8>, at: usize, id: u32, ends: bool) {
        let len = out.len() - at - frame::HEAD;
        let max = self.peer.max_frame as usize;
        let es = if ends { flag::END_STREAM } else { 0 };
        if len <= max {
            set_head(out, at, len, kind::HEADERS, flag::END_HEADERS | es, id);
            self.frames_out += 1;
            return;
        }
        self.frames_out += len.div_ceil(max) as u64;
        let block = out.split_off(at + frame::HEAD);
        out.truncate(at);
        let mut parts = block.chunks(max).peekable();
        let mut first = true;
        while let Some(p) = parts.next() {
            let last = parts.peek().is_none();
            let (k, f) = if first {
                (kind::HEADERS, es)
            } else {
                (kind::CONTINUATION, 0)
            };
            let f = f | if last { flag::END_HEADERS } else { 0 };
            put_head(out, p.len(), k, f, id);
            out.extend_from_slice(p);
            first = false;
        }
    }

    /// Send what waits for window, as far as the windows allow (the connection's and each
    /// stream's, in frames of at most the server's SETTINGS_MAX_FRAME_SIZE).
    fn send_pending(&mut self, cfg: &Cfg, out: &mut Vec<u8>) {
        let mut i = 0;
        while i < self.pending.len() {
            let p = self.pending[i];
            let Some(sw) = self
                .streams
                .iter()
                .find(|s| s.id == p.stream)
                .map(|s| s.send)
            else {
                self.pending.remove(i); // the stream is gone (reset)
                continue;
            };
            let mut at = p.at;
            let mut stream_window = sw;
            // An empty body still ends its stream with one empty DATA frame.
            while at < p.end || (p.at == p.end && at == p.end) {
                let room = self.conn_send.min(stream_window).max(0) as usize;
                let n = (p.end - at).min(room).min(self.peer.max_frame as usize);
                if n == 0 && at < p.end {
                    break;
                }
                let last = at + n == p.end;
                put_head(
                    out,
                    n,
                    kind::DATA,
                    if last { flag::END_STREAM } else { 0 },
                    p.stream,
                );
                self.frames_out += 1;
                let src = if p.held {
                    &self.held[at..at + n]
                } else {
                    match &cfg.request.body {
                        Body::Fixed(b) => &b[at..at + n],
                        _ => &[][..],
                    }
                };
                out.extend_from_slice(src);
                at += n;
                self.conn_send -= n as i64;
                stream_window -= n as i64;
                if last {
                    break;
                }
            }
            if let Some(s) = self.stream(p.stream) {
                s.send = stream_window;
            }
            if at == p.end {
                self.pending.remove(i);
            } else {
                self.pending[i].at = at;
                i += 1;
            }
        }
        if self.pending.is_empty() {
            self.held.clear();
        }
    }

    /// [`St::send_pending`] into the control bytes of an input: what it wrote counts as
    /// request bytes there, not as answers owed.
    fn send_pending_ctl(&mut self, cfg: &Cfg, ctl: &mut Vec<u8>) {
        let at = ctl.len();
        self.send_pending(cfg, ctl);
        self.ctl_data += ctl.len() - at;
    }
}

impl Cfg {
    pub(crate) fn of(h: &crate::plan::H2Plan) -> Self {
        Cfg {
            request: h.request.clone(),
            expect: h.expect_status.clone(),
            streams: h.streams,
            grpc: h.grpc,
        }
    }
}

impl Session for H2 {
    type Cfg = Cfg;

    fn config(plan: &Plan) -> Cfg {
        match &plan.protocol {
            Protocol::H2(h) => Cfg::of(h),
            other => unreachable!("HTTP/2 session for a {} plan", other.name()),
        }
    }

    fn new(_cfg: &Cfg) -> Self {
        Self {
            rd: FrameReader::new(ours::MAX_FRAME),
            st: St::new(),
        }
    }

    fn reset(&mut self, _cfg: &Cfg) {
        self.rd.reset();
        let mut st = St::new();
        // Keep the allocations: a reconnect is not a new connection's worth of heap.
        st.hp = std::mem::replace(&mut self.st.hp, Decoder::new(0));
        st.hp.reset();
        st.streams = std::mem::take(&mut self.st.streams);
        st.streams.clear();
        st.block = std::mem::take(&mut self.st.block);
        st.block.clear();
        self.st = st;
    }

    fn open(&mut self, _cfg: &Cfg, out: &mut Out) -> Result<bool, ProtoError> {
        out.buf.extend_from_slice(frame::PREFACE);
        use frame::setting as s;
        frame::put_settings(
            out.buf,
            &[
                (s::ENABLE_PUSH, 0),
                (s::INITIAL_WINDOW_SIZE, ours::STREAM_WINDOW),
                (s::HEADER_TABLE_SIZE, ours::HEADER_TABLE),
                (s::MAX_HEADER_LIST_SIZE, ours::MAX_HEADER_LIST),
            ],
        );
        frame::put_window_update(out.buf, 0, ours::CONN_WINDOW - 65_535);
        self.st.frames_out += 2;
        Ok(true)
    }

    fn negotiated(
        &mut self,
        cfg: &Cfg,
        alpn: Option<&[u8]>,
        _rec: &mut Recorder,
    ) -> Result<(), ProtoError> {
        match alpn {
            None | Some(b"h2") => Ok(()),
            Some(other) if cfg.grpc.is_some() => Err(ProtoError::new(format!(
                "the server chose {} by ALPN, not h2: gRPC needs HTTP/2, which it does not \
                 speak over TLS here",
                alpn_name(other)
            ))),
            Some(other) => Err(ProtoError::new(format!(
                "the server chose {} by ALPN, not h2: it does not speak HTTP/2 over TLS here; \
                 drop --http2",
                alpn_name(other)
            ))),
        }
    }

    fn render(&mut self, cfg: &Cfg, _msg: Msg, fill: Fill, out: &mut Out) -> Rendered {
        let id = self.st.next_id;
        self.st.next_id += 2;
        let at = out.buf.len();
        let send = i64::from(self.st.peer.window);
        let streaming = cfg.grpc.is_some_and(|g| g.streaming);
        let mut stream = Stream::new(id, out.key, fill, send, false, streaming);
        stream.head = cfg.request.is_head();
        self.st.streams.push(stream);
        self.st.request(cfg, id, fill, out.buf);
        Rendered {
            len: (out.buf.len() - at) as u32,
            step: 0,
        }
    }

    /// A scenario step's request, rendered as HTTP/1.1 text at `out.buf[start..]`, sent as
    /// HEADERS and DATA on a new stream.
    fn frame_step(&mut self, cfg: &Cfg, out: &mut Out, start: usize) -> u32 {
        let st = &mut self.st;
        st.step.clear();
        st.step.extend_from_slice(&out.buf[start..]);
        out.buf.truncate(start);
        let id = st.next_id;
        st.next_id += 2;
        out.buf.extend_from_slice(&[0; frame::HEAD]);
        let Some(body_at) =
            crate::h2::request::block_of_http1(&st.step, cfg.request.scheme(), out.buf)
        else {
            // Not sent: the step's exchange fails with the connection.
            out.buf.truncate(start);
            st.next_id -= 2;
            st.unframed = true;
            return 0;
        };
        let has_body = body_at < st.step.len();
        st.headers(out.buf, start, id, !has_body);
        let fill = Fill {
            conn: 0,
            seq: 0,
            ts_us: 0,
        };
        // A step's request is not rendered again: a refused one fails.
        let send = i64::from(st.peer.window);
        let mut stream = Stream::new(id, out.key, fill, send, true, out.streaming);
        stream.head = st.step.starts_with(b"HEAD ");
        st.streams.push(stream);
        if has_body {
            let h = st.held.len();
            st.held.extend_from_slice(&st.step[body_at..]);
            st.pending.push(Pending {
                stream: id,
                at: h,
                end: st.held.len(),
                held: true,
            });
            st.send_pending(cfg, out.buf);
        }
        (out.buf.len() - start) as u32
    }

    fn cancels(&self) -> bool {
        true
    }

    /// A stream given up on (it timed out): RST_STREAM CANCEL. What the server still sends
    /// on it is read and dropped (its id is below `next_id`); its window is not given back
    /// per stream, the connection's is as data arrives.
    fn cancel(&mut self, _cfg: &Cfg, key: u64, ctl: &mut Vec<u8>) -> bool {
        let st = &mut self.st;
        st.ctl_data = 0;
        if let Some(i) = st.streams.iter().position(|s| s.key == key) {
            let s = st.streams.swap_remove(i);
            st.pending.retain(|p| p.stream != s.id);
            st.reset_here(ctl, s.id, code::CANCEL);
        }
        // After a GOAWAY, or with every stream id used, the last stream ending ends the
        // connection (as `input` says when a reply ends it).
        st.streams.is_empty() && (st.goaway.is_some() || st.next_id > LAST_ID)
    }

    fn counts(&mut self, rec: &mut Recorder) {
        rec.counters.h2.frames_written += std::mem::take(&mut self.st.frames_out);
    }

    fn waited_for_room(rec: &mut barrage_metrics::Recorder, n: u64) {
        rec.counters.h2.stream_waits += n;
    }

    fn room(&self, cfg: &Cfg) -> u64 {
        let st = &self.st;
        if !st.settled || st.goaway.is_some() || st.next_id > LAST_ID || st.unframed {
            return 0;
        }
        // `--streams` 0: no cap but the server's (open loop without --streams).
        let ours = if cfg.streams == 0 {
            u32::MAX
        } else {
            cfg.streams
        };
        let max = self.st.peer.max_streams.min(ours);
        u64::from(max).saturating_sub(self.st.streams.len() as u64)
    }

    fn input(&mut self, cfg: &Cfg, data: &[u8], r: &mut Replies) -> Result<(), ProtoError> {
        r.rec.counters.h2.frames_written += std::mem::take(&mut self.st.frames_out);
        if self.st.unframed {
            return Err(ProtoError::new(
                "a scenario step's request is not a valid HTTP request (more than 256 header \
                 lines?): not sent",
            ));
        }
        self.st.ctl_data = 0;
        if self.st.owed.len() - self.st.owed_data > MAX_OWED {
            // Request bytes waiting with them (DATA the server's windows let out) do not
            // count: the server asked for those.
            return Err(ProtoError::new(
                "the server does not read what this client owes it: over 1 MiB of answers to \
                 its frames (SETTINGS and PING acknowledgements, WINDOW_UPDATEs, RST_STREAMs) \
                 waits to be written; it sends frames that need an answer faster than it reads",
            ));
        }
        if !self.st.settled && self.rd.idle() && self.st.next_id == 1 {
            if let Some(e) = not_h2(data, cfg.grpc.is_some()) {
                return Err(e);
            }
        }
        let mut sink = Sink {
            st: &mut self.st,
            cfg,
            r,
        };
        let used = self.rd.feed(data, &mut sink)?;
        let st = &mut self.st;
        if std::mem::take(&mut st.paused) {
            if st.peer.max_streams == 0 {
                return Err(no_streams());
            }
            r.handshake_done(used);
            // Not yet useful work: a server that turns every connection away after its
            // SETTINGS (GOAWAY, a close) gets the backoff, not a storm of connects.
            r.useful = false;
            return Ok(());
        }
        if let Some((_, c)) = st.goaway {
            if st.streams.is_empty() {
                r.close = Some(if c == code::NO_ERROR && st.served {
                    Close::Graceful
                } else if c == code::NO_ERROR {
                    // Not one exchange served: reconnect as after a failure, backing off.
                    Close::TurnedAway
                } else {
                    Close::Fail(
                        ErrorClass::Goaway,
                        format!("the server sent GOAWAY {}", frame::code_name(c)),
                    )
                });
            }
        } else if st.next_id > LAST_ID && st.streams.is_empty() {
            // Every stream id of the connection used (a billion requests): a new connection.
            r.close = Some(Close::Graceful);
        } else if st.peer.max_streams == 0 && st.streams.is_empty() {
            // SETTINGS_MAX_CONCURRENT_STREAMS 0 and nothing left in flight: the connection
            // can carry nothing; it fails (and is opened again after the backoff).
            let e = no_streams();
            r.close = Some(Close::Fail(e.class, e.why));
        }
        Ok(())
    }

    fn eof(&mut self, _cfg: &Cfg, _r: &mut Replies) -> Result<bool, ProtoError> {
        // After a GOAWAY whose streams all ended, a close is the expected end.
        Ok(self.st.goaway.is_some() && self.st.streams.is_empty())
    }

    fn goodbye(&mut self, _cfg: &Cfg, out: &mut Out) {
        frame::put_goaway(out.buf, 0, code::NO_ERROR);
        self.st.frames_out += 1;
    }

    const OWED_IN_ORDER: bool = true;

    fn owe(&mut self, ctl: &[u8]) {
        // Unlike a WebSocket pong, none of these may be dropped: keep them all. The request
        // bytes among them (DATA released by WINDOW_UPDATE) are noted apart.
        self.st.owed.extend_from_slice(ctl);
        self.st.owed_data += std::mem::take(&mut self.st.ctl_data).min(ctl.len());
    }

    fn take_owed(&mut self) -> Option<Box<[u8]>> {
        self.st.owed_data = 0;
        (!self.st.owed.is_empty()).then(|| std::mem::take(&mut self.st.owed).into_boxed_slice())
    }

    fn drain_owed(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.st.owed);
        self.st.owed.clear();
        self.st.owed_data = 0;
    }
}

/// The server's SETTINGS_MAX_CONCURRENT_STREAMS is 0: no request can go out on the
/// connection.
fn no_streams() -> ProtoError {
    ProtoError::new(
        "the server allows 0 streams (SETTINGS_MAX_CONCURRENT_STREAMS 0): no request can be \
         sent on its connections",
    )
}

/// An ALPN protocol's name for a message (none: the server chose nothing).
pub(crate) fn alpn_name(p: &[u8]) -> String {
    if p.is_empty() {
        "no protocol".into()
    } else {
        format!("'{}'", String::from_utf8_lossy(p))
    }
}

/// The first bytes from a server that does not speak HTTP/2 here.
fn not_h2(data: &[u8], grpc: bool) -> Option<ProtoError> {
    if data.starts_with(b"HTTP/1.") && grpc {
        return Some(ProtoError::new(
            "the server answered in HTTP/1.1: it does not speak gRPC (HTTP/2 with prior \
             knowledge) on this port",
        ));
    }
    if data.starts_with(b"HTTP/1.") {
        return Some(ProtoError::new(
            "the server answered in HTTP/1.1: it does not speak HTTP/2 with prior knowledge \
             (h2c) on this port; use http:// without --http2",
        ));
    }
    if matches!(data.first(), Some(0x15 | 0x16)) && data.get(1) == Some(&3) {
        return Some(ProtoError {
            tls_answer: true,
            ..ProtoError::new("the server answered with TLS: use https://")
        });
    }
    None
}

struct Sink<'s, 'c, 'r, 'a> {
    st: &'s mut St,
    cfg: &'c Cfg,
    r: &'r mut Replies<'a>,
}

fn bad(h: &Head, why: impl std::fmt::Display) -> ProtoError {
    if h.stream == 0 {
        ProtoError::new(format!("{} frame: {why}", frame::kind_name(h.kind)))
    } else {
        ProtoError::new(format!(
            "{} frame on stream {}: {why}",
            frame::kind_name(h.kind),
            h.stream
        ))
    }
}

impl FrameSink for Sink<'_, '_, '_, '_> {
    type Error = ProtoError;

    fn bad(&mut self, h: &Head, why: &'static str) -> ProtoError {
        bad(h, why)
    }

    fn pause(&self) -> bool {
        self.st.paused
    }

    fn head(&mut self, h: &Head) -> Result<(), ProtoError> {
        let st = &mut *self.st;
        self.r.rec.counters.h2.frames_read += 1;
        if let Some(id) = st.cont {
            if h.kind != kind::CONTINUATION || h.stream != id {
                return Err(bad(
                    h,
                    format!("expected CONTINUATION of stream {id}'s headers"),
                ));
            }
        } else if h.kind == kind::CONTINUATION {
            return Err(bad(h, "CONTINUATION without HEADERS before it"));
        }
        if !st.settled && h.kind != kind::SETTINGS {
            return Err(bad(
                h,
                "the server did not begin with SETTINGS: is it an HTTP/2 server?",
            ));
        }
        st.small_len = 0;
        let fixed = |n: u32| -> Result<(), ProtoError> {
            if h.len != n {
                return Err(bad(h, format!("length {} instead of {n}", h.len)));
            }
            Ok(())
        };
        let on_conn = h.stream == 0;
        match h.kind {
            kind::DATA | kind::HEADERS | kind::RST_STREAM if on_conn => {
                return Err(bad(h, "on stream 0"))
            }
            kind::SETTINGS | kind::PING | kind::GOAWAY if !on_conn => {
                return Err(bad(h, "on a stream"))
            }
            kind::SETTINGS if h.has(flag::ACK) && h.len != 0 => {
                return Err(bad(h, "an ACK with a payload"))
            }
            kind::SETTINGS if !h.len.is_multiple_of(6) => {
                return Err(bad(h, "a length that is not a multiple of 6"))
            }
            kind::PING => fixed(8)?,
            kind::RST_STREAM | kind::WINDOW_UPDATE => fixed(4)?,
            kind::PRIORITY => fixed(5)?,
            kind::GOAWAY if h.len < 8 => return Err(bad(h, "shorter than 8 bytes")),
            kind::PUSH_PROMISE => {
                return Err(bad(
                    h,
                    "server push, which this client disabled (SETTINGS_ENABLE_PUSH 0)",
                ))
            }
            kind::HEADERS => {
                if h.stream.is_multiple_of(2) {
                    return Err(bad(h, "a stream this client did not open"));
                }
                st.block.clear();
                st.block_ends = h.has(flag::END_STREAM);
            }
            kind::GOAWAY => st.block.clear(),
            _ => {}
        }
        if h.kind == kind::DATA && h.stream.is_multiple_of(2) {
            return Err(bad(h, "a stream this client did not open"));
        }
        if matches!(h.kind, kind::HEADERS | kind::CONTINUATION) && !h.has(flag::END_HEADERS) {
            st.cont = Some(h.stream);
        } else if h.kind == kind::CONTINUATION {
            st.cont = None;
        }
        Ok(())
    }

    fn content(&mut self, h: &Head, bytes: &[u8]) -> Result<(), ProtoError> {
        let st = &mut *self.st;
        match h.kind {
            kind::DATA => {
                let Some(s) = st.stream(h.stream) else {
                    return Ok(()); // closed: data_end judges the stream id
                };
                s.got += bytes.len() as u64;
                // A gRPC reply's messages, when it is one (an HTTP error's body is not).
                if self.cfg.grpc.is_some() && s.status == 200 && s.grpc_type {
                    self.grpc_data(h, bytes)?;
                }
                // A user's step looks into the reply of the exchange at the front: its
                // stream's bytes alone (an `every` block's other streams interleave).
                if self.r.collecting() {
                    let front = self.r.ex.front().map(|f| f.key);
                    let st = &self.st;
                    if st
                        .streams
                        .iter()
                        .any(|s| s.id == h.stream && Some(s.key) == front)
                    {
                        self.r.body(bytes);
                    }
                }
            }
            kind::HEADERS | kind::CONTINUATION => {
                if st.block.len() + bytes.len() > ours::MAX_HEADER_LIST as usize * 2 {
                    return Err(bad(h, "a header block larger than this client's limit"));
                }
                st.block.extend_from_slice(bytes);
            }
            kind::SETTINGS => {
                for &b in bytes {
                    let st = &mut *self.st;
                    st.small[st.small_len as usize] = b;
                    st.small_len += 1;
                    if st.small_len == 6 {
                        st.small_len = 0;
                        let m = st.small;
                        let id = u16::from_be_bytes([m[0], m[1]]);
                        let v = u32::from_be_bytes([m[2], m[3], m[4], m[5]]);
                        self.setting(h, id, v)?;
                    }
                }
            }
            kind::PING | kind::RST_STREAM | kind::WINDOW_UPDATE | kind::GOAWAY => {
                for &b in bytes {
                    if (st.small_len as usize) < st.small.len() {
                        st.small[st.small_len as usize] = b;
                        st.small_len += 1;
                    } else if st.block.len() < 256 {
                        st.block.push(b); // GOAWAY's debug data, for the message
                    }
                }
            }
            _ => {} // PRIORITY, unknown types: ignored
        }
        Ok(())
    }

    fn end(&mut self, h: &Head) -> Result<(), ProtoError> {
        let s = &self.st.small;
        let word = |i: usize| u32::from_be_bytes([s[i], s[i + 1], s[i + 2], s[i + 3]]);
        match h.kind {
            kind::DATA => self.data_end(h)?,
            kind::HEADERS | kind::CONTINUATION if h.has(flag::END_HEADERS) => {
                self.headers_end(h)?
            }
            kind::SETTINGS if h.has(flag::ACK) => {}
            kind::SETTINGS => {
                frame::put_settings_ack(self.r.ctl);
                self.st.frames_out += 1;
                if !self.st.settled {
                    self.r.rec.counters.h2.connections += 1;
                    self.st.settled = true;
                    self.st.paused = true;
                }
            }
            kind::PING if !h.has(flag::ACK) => {
                let data = self.st.small;
                frame::put_ping(self.r.ctl, true, &data);
                self.st.frames_out += 1;
            }
            kind::WINDOW_UPDATE => {
                let n = word(0) & 0x7fff_ffff;
                if n == 0 {
                    return Err(bad(h, "an increment of 0"));
                }
                if h.stream == 0 {
                    self.st.conn_send += i64::from(n);
                    if self.st.conn_send > i64::from(i32::MAX) {
                        return Err(bad(h, "the connection's send window past 2^31-1"));
                    }
                } else if let Some(st) = self.st.stream(h.stream) {
                    st.send += i64::from(n);
                    if st.send > i64::from(i32::MAX) {
                        return Err(bad(h, "the stream's send window past 2^31-1"));
                    }
                }
                if !self.st.pending.is_empty() {
                    self.st.send_pending_ctl(self.cfg, self.r.ctl);
                }
            }
            kind::RST_STREAM => self.reset(h.stream, word(0)),
            kind::GOAWAY => {
                let last = word(0) & 0x7fff_ffff;
                let c = word(4);
                self.r.rec.counters.h2.goaways.add(code_u16(c), 1);
                self.st.goaway = Some((last, c));
                // The streams above `last` were never processed.
                let mut i = 0;
                while i < self.st.streams.len() {
                    let s = self.st.streams[i];
                    if s.id > last {
                        self.st.streams.swap_remove(i);
                        end_exchange(self.r, s.key, Some(ErrorClass::Goaway));
                    } else {
                        i += 1;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The exchange with this key ended. A scenario user's goes through the front-of-queue path
/// that judges it against its step (captures, `expect`, the step's counts): a user has one
/// exchange in flight, or its `every` ticks in send order, which HTTP/2 may answer out of
/// order (then by key, counted but not judged).
fn end_exchange(r: &mut Replies, key: u64, bad: Option<ErrorClass>) {
    if r.is_user() && r.ex.front().is_some_and(|f| f.key == key) {
        r.complete(bad);
    } else {
        r.complete_key(key, bad);
    }
}

fn code_u16(c: u32) -> u16 {
    c.min(u32::from(u16::MAX)) as u16
}

impl Sink<'_, '_, '_, '_> {
    fn setting(&mut self, h: &Head, id: u16, v: u32) -> Result<(), ProtoError> {
        use frame::setting as s;
        let st = &mut *self.st;
        match id {
            s::HEADER_TABLE_SIZE => st.enc.set_limit(v),
            s::ENABLE_PUSH if v > 1 => return Err(bad(h, "SETTINGS_ENABLE_PUSH above 1")),
            s::MAX_CONCURRENT_STREAMS => {
                st.peer.max_streams = v;
                if v > 0 {
                    self.r.rec.counters.h2.granted(v); // 0 fails the connection instead
                }
            }
            s::INITIAL_WINDOW_SIZE => {
                if v > i32::MAX as u32 {
                    return Err(bad(h, "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1"));
                }
                // The change applies to the streams open now too.
                let delta = i64::from(v) - i64::from(st.peer.window);
                for s in st.streams.iter_mut() {
                    s.send += delta;
                }
                st.peer.window = v;
                if !st.pending.is_empty() {
                    st.send_pending_ctl(self.cfg, self.r.ctl);
                }
            }
            s::MAX_FRAME_SIZE => {
                if !(frame::DEFAULT_MAX_FRAME..=(1 << 24) - 1).contains(&v) {
                    return Err(bad(h, format!("SETTINGS_MAX_FRAME_SIZE {v} out of range")));
                }
                st.peer.max_frame = v;
            }
            _ => {} // MAX_HEADER_LIST_SIZE (advisory), unknown settings
        }
        Ok(())
    }

    /// Refill the receive windows for `n` bytes of a DATA frame consumed.
    fn consumed(&mut self, stream: Option<usize>, n: u32) {
        let st = &mut *self.st;
        st.conn_unacked += n;
        if st.conn_unacked >= ours::CONN_WINDOW / 2 {
            frame::put_window_update(self.r.ctl, 0, st.conn_unacked);
            st.frames_out += 1;
            st.conn_unacked = 0;
        }
        if let Some(i) = stream {
            let s = &mut st.streams[i];
            s.unacked += n;
            if s.unacked >= ours::STREAM_WINDOW / 2 {
                frame::put_window_update(self.r.ctl, s.id, s.unacked);
                st.frames_out += 1;
                s.unacked = 0;
            }
        }
    }

    fn data_end(&mut self, h: &Head) -> Result<(), ProtoError> {
        let i = self.st.streams.iter().position(|s| s.id == h.stream);
        let ends = h.has(flag::END_STREAM);
        self.consumed(if ends { None } else { i }, h.len);
        let Some(i) = i else {
            return self.closed(h);
        };
        let s = &self.st.streams[i];
        if s.status == 0 {
            return Err(bad(h, "DATA before the response's HEADERS"));
        }
        if let Some(n) = s.length.filter(|&n| s.got > n && !s.head) {
            let why = format!("a body longer than its content-length ({n})");
            self.malformed(h, i, &why);
            return Ok(());
        }
        if ends {
            self.finish(h, i);
        }
        Ok(())
    }

    /// A DATA or HEADERS frame on a stream not in flight: dropped when this side reset it
    /// (or the server did), a connection error otherwise (RFC 9113 5.1: after END_STREAM
    /// the stream is closed, STREAM_CLOSED; a stream never opened, PROTOCOL_ERROR).
    fn closed(&mut self, h: &Head) -> Result<(), ProtoError> {
        if h.stream >= self.st.next_id {
            Err(bad(h, "a stream this client did not open"))
        } else if self.st.reset_here.contains(&h.stream) {
            Ok(()) // a stream given up on (reset, timed out): what comes on it is late
        } else {
            Err(bad(
                h,
                "a stream already closed by END_STREAM (STREAM_CLOSED)",
            ))
        }
    }

    /// Stream `i`'s response is malformed (RFC 9113 8.1.1): a stream error. Its exchange
    /// fails as `protocol` with `why`, the stream is reset (PROTOCOL_ERROR) and what the
    /// server still sends on it is dropped; the connection carries on.
    fn malformed(&mut self, h: &Head, i: usize, why: &str) {
        let s = self.st.streams.swap_remove(i);
        self.st.pending.retain(|p| p.stream != s.id);
        self.st.reset_here(self.r.ctl, s.id, code::PROTOCOL_ERROR);
        let e = bad(h, why);
        self.r.rec.reason(ErrorClass::Protocol, self.r.now, &e.why);
        end_exchange(self.r, s.key, Some(ErrorClass::Protocol));
    }

    fn headers_end(&mut self, h: &Head) -> Result<(), ProtoError> {
        self.st.cont = None;
        let id = h.stream;
        let i = self.st.streams.iter().position(|s| s.id == id);
        let block = std::mem::take(&mut self.st.block);
        let wire = block.len() as u64;
        // Decode always: the table must stay in step even for a stream given up on.
        let mut status: Option<u16> = None;
        let mut bad_status = false;
        let mut server: Option<u64> = None;
        let mut plain = 0u64;
        let mut grpc_status: Option<Option<u32>> = None;
        let mut f = Fields::default();
        let user = self.r.is_user();
        let r = &mut *self.r;
        let res = self
            .st
            .hp
            .decode(&block, ours::MAX_HEADER_LIST as usize, |n, v| {
                plain += (n.len() + v.len() + 4) as u64; // as "name: value\r\n"
                f.check(n, v);
                if n == b":status" {
                    match parse_status(v) {
                        Some(s) => status = Some(s),
                        None => bad_status = true,
                    }
                } else if n == b"grpc-status" {
                    grpc_status = Some(crate::grpc::status_of(v));
                } else if n == b"server-timing" {
                    if let Some(ns) = crate::http::server_timing_of(std::iter::once(v)) {
                        server.get_or_insert(ns);
                    }
                } else if user {
                    r.header(n, v);
                }
            });
        self.st.block = block;
        self.st.block.clear();
        res.map_err(|e| bad(h, format!("HPACK: {e}")))?;
        let c = &mut self.r.rec.counters.h2;
        c.header_bytes += wire;
        c.header_bytes_plain += plain;
        let Some(i) = i else {
            return self.closed(h);
        };
        let ends = self.st.block_ends;
        let trailers = self.st.streams[i].status != 0;
        if trailers && f.pseudo {
            f.bad
                .get_or_insert_with(|| "a pseudo-header in trailers".into());
        }
        if let Some(why) = f.bad.take() {
            self.malformed(h, i, &why);
            return Ok(());
        }
        let s = &mut self.st.streams[i];
        if self.cfg.grpc.is_some() {
            match grpc_status {
                Some(Some(code)) if ends => s.grpc_status = Some(code),
                Some(None) => return Err(bad(h, "a grpc-status that is not a number")),
                _ => {}
            }
        }
        if s.status == 0 {
            // The response's head (or an informational 1xx before it).
            if bad_status {
                return Err(bad(h, "a :status that is not three digits"));
            }
            let Some(st) = status else {
                return Err(bad(h, "a response without :status"));
            };
            if (100..200).contains(&st) {
                if ends {
                    return Err(bad(h, "an informational response that ends the stream"));
                }
                return Ok(());
            }
            s.status = st;
            s.server_ns = server;
            s.length = f.length;
            s.grpc_type = f.grpc_type;
            let key = s.key;
            if let Some(e) = self.r.ex.get(key) {
                let t = self.r.now.saturating_sub(e.start);
                self.r.rec.ttfb.record_ns(t);
            }
        } else if !ends {
            return Err(bad(h, "trailers that do not end the stream"));
        } else if server.is_some() && s.server_ns.is_none() {
            s.server_ns = server; // Server-Timing as a trailer
        }
        if ends {
            self.finish(h, i);
        }
        Ok(())
    }

    /// A gRPC stream's DATA: its messages counted (and, streaming, each timed from the
    /// call's start).
    fn grpc_data(&mut self, h: &Head, bytes: &[u8]) -> Result<(), ProtoError> {
        let Some(i) = self.st.streams.iter().position(|s| s.id == h.stream) else {
            return Ok(()); // given up on; data_end judges the stream id
        };
        let s = &mut self.st.streams[i];
        let n = s.msgs.feed(bytes).map_err(|e| bad(h, e))?;
        s.n_msgs = s.n_msgs.saturating_add(n);
        let r = &mut *self.r;
        r.rec.counters.grpc.messages_received += u64::from(n);
        if s.streaming && n > 0 {
            // Each message ended in this chunk, timed from the call's start.
            if let Some(e) = r.ex.get(s.key) {
                let t = r.now.saturating_sub(e.start);
                for _ in 0..n {
                    r.rec.stream_msg.record_ns(t);
                }
            }
        }
        Ok(())
    }

    /// Stream `i` ended (END_STREAM on `h`): its exchange is complete, its status judged;
    /// a body other than its content-length is malformed (`protocol`, as HTTP/1.1 says). A
    /// request body still waiting for window goes no further: the stream is reset (CANCEL).
    fn finish(&mut self, h: &Head, i: usize) {
        let s = self.st.streams[i];
        if self.st.pending.iter().any(|p| p.stream == s.id) {
            self.st.pending.retain(|p| p.stream != s.id);
            self.st.reset_here(self.r.ctl, s.id, code::CANCEL);
        }
        if let Some(n) = s.length {
            if s.got != n && !s.head && !matches!(s.status, 204 | 304) {
                let why = format!("a body of {} bytes where content-length said {n}", s.got);
                let e = bad(h, why);
                self.r.rec.counters.status.add(s.status, 1);
                self.r.rec.reason(ErrorClass::Protocol, self.r.now, &e.why);
                self.st.streams.swap_remove(i);
                return end_exchange(self.r, s.key, Some(ErrorClass::Protocol));
            }
        }
        self.st.served = true;
        if self.cfg.grpc.is_some() {
            return self.finish_call(i);
        }
        let s = self.st.streams.swap_remove(i);
        self.r.rec.counters.status.add(s.status, 1);
        let ok = self.r.status_ok(s.status, &self.cfg.expect);
        self.r.server_ns = s.server_ns;
        end_exchange(self.r, s.key, (!ok).then_some(ErrorClass::UnexpectedStatus));
    }

    /// A gRPC call's stream ended: judged by its HTTP status, then its `grpc-status` (each
    /// non-OK code its own class), then whether its messages were whole (and, unary, one).
    fn finish_call(&mut self, i: usize) {
        let s = self.st.streams.swap_remove(i);
        let c = &mut self.r.rec.counters;
        c.status.add(s.status, 1);
        let bad = if s.status != 200 {
            Some(ErrorClass::UnexpectedStatus)
        } else if !s.grpc_type {
            // Not a gRPC reply (its content-type is not application/grpc...): the spec's
            // client fails such a call, whatever its trailers say.
            c.grpc.no_status += u64::from(s.grpc_status.is_none());
            self.r.rec.reason(
                ErrorClass::Protocol,
                self.r.now,
                &"a reply to a gRPC call without content-type application/grpc",
            );
            Some(ErrorClass::Protocol)
        } else if let Some(code) = s.grpc_status {
            c.grpc.status.add(code_u16(code), 1);
            match ErrorClass::grpc(code) {
                Some(e) => Some(e),
                // OK with a message cut short, or a unary call's reply not one message.
                None if !s.msgs.idle() || (!s.streaming && s.n_msgs != 1) => {
                    Some(ErrorClass::Protocol)
                }
                None => None,
            }
        } else {
            c.grpc.no_status += 1;
            Some(ErrorClass::Protocol)
        };
        self.r.server_ns = s.server_ns;
        end_exchange(self.r, s.key, bad);
    }

    /// The server reset a stream.
    fn reset(&mut self, id: u32, c: u32) {
        self.r.rec.counters.h2.resets.add(code_u16(c), 1);
        let Some(i) = self.st.streams.iter().position(|s| s.id == id) else {
            return;
        };
        let s = self.st.streams[i];
        if c == code::REFUSED_STREAM
            && !s.retried
            && self.st.goaway.is_none()
            && self.st.next_id <= LAST_ID
        {
            // Not processed: send it again once, on a new stream, as the same exchange.
            self.r.rec.counters.h2.refused_retried += 1;
            remember(&mut self.st.reset_here, id);
            let nid = self.st.next_id;
            self.st.next_id += 2;
            let st = &mut self.st.streams[i];
            st.id = nid;
            st.retried = true;
            st.status = 0;
            st.send = i64::from(self.st.peer.window);
            st.unacked = 0;
            st.msgs = MsgReader::default();
            st.n_msgs = 0;
            st.grpc_status = None;
            self.st.pending.retain(|p| p.stream != id);
            let at = self.r.ctl.len();
            self.st.request(self.cfg, nid, s.fill, self.r.ctl);
            self.st.ctl_data += self.r.ctl.len() - at;
            return;
        }
        self.st.streams.swap_remove(i);
        self.st.pending.retain(|p| p.stream != id);
        remember(&mut self.st.reset_here, id); // what it still sent before the reset is late
        end_exchange(self.r, s.key, Some(ErrorClass::StreamReset));
    }
}

/// What [`fuzz_feed`] sets up: `n` requests in flight, gRPC calls (server-streaming or not)
/// with `grpc`, else GETs, or POSTs of `upload` bytes when not 0 (bodies that wait for the
/// server's windows and go out as its WINDOW_UPDATEs and SETTINGS open them); with `owe`,
/// every answer is kept as owed (as when the socket is full), drained after every other
/// part.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct FuzzCase {
    pub n: usize,
    pub grpc: Option<bool>,
    pub upload: usize,
    pub owe: bool,
}

/// For the fuzz target (`fuzz/fuzz_targets/h2_frames.rs`): a session past its handshake
/// (the server's SETTINGS allowed `n` streams) with the case's requests in flight, fed
/// `parts` of what a server sent. Returns the exchanges (completed, failed, still in
/// flight) and the request body bytes written in DATA frames, or the protocol error; every
/// exchange must be in exactly one of the three, and no more body than the requests' goes
/// out (checked here: a panic).
#[doc(hidden)]
pub fn fuzz_feed(parts: &[&[u8]], case: FuzzCase) -> Result<(u64, u64, u64, u64), String> {
    let FuzzCase {
        n,
        grpc,
        upload,
        owe,
    } = case;
    let body = vec![b'u'; upload];
    use crate::exchange::{Exchange, Exchanges};
    use crate::pacer::Rng;
    let mut request = H2Request::new(&crate::h2::H2RequestSpec {
        method: if grpc.is_some() || upload > 0 {
            "POST"
        } else {
            "GET"
        },
        scheme: "http",
        path: "/",
        authority: "fuzz",
        headers: &[],
        body: (upload > 0 && grpc.is_none()).then_some(&body[..]),
        content_type: grpc.map(|_| "application/grpc"),
        te_trailers: grpc.is_some(),
    })
    .map_err(|e| e.to_string())?;
    if grpc.is_some() {
        request = request.with_grpc_messages(vec![crate::grpc::PbTemplate::bytes(vec![8, 1])]);
    }
    let cfg = Cfg {
        request,
        expect: StatusSet::default(),
        streams: n as u32,
        grpc: grpc.map(|streaming| GrpcMode { streaming }),
    };
    let mut s = H2::new(&cfg);
    let (mut ex, mut rec, mut rng, mut ctl) = (
        Exchanges::default(),
        Recorder::new(),
        Rng::new(1),
        Vec::new(),
    );
    let mut settings = Vec::new();
    frame::put_settings(
        &mut settings,
        &[(frame::setting::MAX_CONCURRENT_STREAMS, n as u32)],
    );
    let mut buf = Vec::new();
    let mut data_out = 0u64;
    let mut feed = |s: &mut H2, ex: &mut Exchanges, rec: &mut Recorder, data: &[u8]| {
        let mut r = Replies::new(ex, None, rec, 1_000_000, &[], true, &mut ctl, &mut rng);
        let res = s.input(&cfg, data, &mut r).map_err(|e| e.why);
        data_out += data_bytes(&ctl);
        if owe && res.is_ok() {
            s.owe(&ctl);
            assert!(s.st.owed_data <= s.st.owed.len());
        }
        ctl.clear();
        res
    };
    feed(&mut s, &mut ex, &mut rec, &settings)?;
    let mut rng = Rng::new(2);
    for k in 0..n as u64 {
        let key = 2 * k + 1;
        let mut out = Out {
            conn: 0,
            buf: &mut buf,
            key,
            rng: &mut rng,
            keep: None,
            streaming: false,
        };
        s.render(
            &cfg,
            Msg::Load,
            Fill {
                conn: 0,
                seq: k,
                ts_us: 0,
            },
            &mut out,
        );
        ex.push(Exchange::new(key, 0, 0, 0, 0));
        rec.in_flight += 1;
    }
    let mut drained = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        feed(&mut s, &mut ex, &mut rec, p)?;
        if owe && k % 2 == 1 {
            drained.clear();
            s.drain_owed(&mut drained);
        }
    }
    let data_out = data_out + data_bytes(&buf);
    // Each body at most twice: once more after REFUSED_STREAM. A gRPC call's is its one
    // message (2 bytes and the 5-byte prefix).
    let each = if grpc.is_some() { 7 } else { upload };
    assert!(
        data_out <= 2 * (n * each) as u64,
        "more body than the requests'"
    );
    let c = &rec.counters;
    let failed = c.failed_by.total();
    Ok((c.completed, failed, rec.in_flight, data_out))
}

/// The payload bytes of the DATA frames in `b` (whole frames, as this side writes them).
fn data_bytes(b: &[u8]) -> u64 {
    let (mut at, mut n) = (0, 0);
    while at + frame::HEAD <= b.len() {
        let len = u32::from_be_bytes([0, b[at], b[at + 1], b[at + 2]]) as usize;
        if b[at + 3] == kind::DATA {
            n += len as u64;
        }
        at += frame::HEAD + len;
    }
    n
}

/// What a header block's fields say beyond their values, and what makes it malformed
/// (RFC 9113 8.1.1, 8.2): upper-case names, connection-specific fields, pseudo-headers other
/// than `:status` or after a regular field, a `:status` twice, content-lengths that differ.
#[derive(Default)]
struct Fields {
    pseudo: bool,
    regular: bool,
    status: bool,
    length: Option<u64>,
    grpc_type: bool,
    bad: Option<String>,
}

impl Fields {
    fn check(&mut self, n: &[u8], v: &[u8]) {
        if self.bad.is_some() {
            return;
        }
        let name = || String::from_utf8_lossy(n).into_owned();
        if n.iter().any(u8::is_ascii_uppercase) {
            self.bad = Some(format!("an upper-case header name ({})", name()));
        } else if n.first() == Some(&b':') {
            self.pseudo = true;
            if n != b":status" {
                self.bad = Some(format!(
                    "a pseudo-header a response has none of ({})",
                    name()
                ));
            } else if self.regular {
                self.bad = Some(":status after a regular field".into());
            } else if std::mem::replace(&mut self.status, true) {
                self.bad = Some(":status twice".into());
            }
        } else {
            self.regular = true;
            match n {
                b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding"
                | b"upgrade" => {
                    self.bad = Some(format!("a connection-specific header field ({})", name()));
                }
                b"te" if v != b"trailers" => self.bad = Some("te other than trailers".into()),
                b"content-length" => {
                    let n = std::str::from_utf8(v)
                        .ok()
                        .and_then(|t| t.parse::<u64>().ok());
                    match (n, self.length) {
                        (Some(n), None) => self.length = Some(n),
                        (Some(n), Some(m)) if n == m => {}
                        _ => self.bad = Some("a content-length that is not one number".into()),
                    }
                }
                b"content-type" => self.grpc_type = v.starts_with(b"application/grpc"),
                _ => {}
            }
        }
    }
}

fn parse_status(v: &[u8]) -> Option<u16> {
    if v.len() != 3 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = v.iter().fold(0u16, |a, &d| a * 10 + u16::from(d - b'0'));
    (100..=999).contains(&n).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::frame::{put_goaway, put_ping, put_rst, put_settings, put_window_update};
    use crate::h2::hpack::put_str;
    use crate::h2::H2RequestSpec;
    use crate::pacer::Rng;
    use crate::session::tests::Conn;

    fn cfg(streams: u32) -> Cfg {
        cfg_grpc(streams, None)
    }

    fn cfg_grpc(streams: u32, grpc: Option<GrpcMode>) -> Cfg {
        let grpc_request = |r: H2Request| match grpc {
            Some(_) => r.with_grpc_messages(vec![crate::grpc::PbTemplate::new(vec![
                crate::grpc::Part::Text {
                    tag: crate::grpc::len_tag(1),
                    value: crate::message::Template::new(b"n{seq}".to_vec()),
                },
            ])]),
            None => r,
        };
        Cfg {
            request: H2Request::new(&H2RequestSpec {
                method: if grpc.is_some() { "POST" } else { "GET" },
                scheme: "http",
                path: "/",
                authority: "127.0.0.1",
                headers: &[],
                body: None,
                content_type: grpc.map(|_| "application/grpc"),
                te_trailers: grpc.is_some(),
            })
            .map(grpc_request)
            .unwrap(),
            expect: StatusSet::default(),
            streams,
            grpc,
        }
    }

    fn server_settings(max_streams: u32) -> Vec<u8> {
        let mut b = Vec::new();
        put_settings(
            &mut b,
            &[(frame::setting::MAX_CONCURRENT_STREAMS, max_streams)],
        );
        b
    }

    /// A session past its handshake with `n` requests rendered (keys 1, 3, ...), and the
    /// connection state that holds their exchanges.
    fn ready(cfg: &Cfg, n: usize, max_streams: u32) -> (H2, Conn) {
        let mut s = H2::new(cfg);
        let mut rng = Rng::new(1);
        let mut buf = Vec::new();
        let mut out = Out {
            conn: 0,
            buf: &mut buf,
            key: 0,
            rng: &mut rng,
            keep: None,
            streaming: false,
        };
        assert!(s.open(cfg, &mut out).unwrap());
        assert!(buf.starts_with(frame::PREFACE));
        let mut c = Conn::new(&[(1_000, n, 0)]);
        // The server's SETTINGS and then more: the handshake takes the SETTINGS alone.
        let mut input = server_settings(max_streams);
        let settings_len = input.len();
        input.extend_from_slice(&[0; 3]);
        let (_, useful, _) = c.input(|r| {
            s.input(cfg, &input, r).unwrap();
            assert_eq!(r.handshake, Some(settings_len));
            // The SETTINGS acknowledged.
            assert_eq!(r.ctl[..], [0, 0, 0, kind::SETTINGS, flag::ACK, 0, 0, 0, 0]);
            r.ctl.clear();
        });
        assert!(!useful, "a handshake alone does not end the backoff");
        assert_eq!(s.room(cfg), u64::from(max_streams.min(cfg.streams)));
        for k in 0..n {
            let mut buf = Vec::new();
            let mut out = Out {
                conn: 0,
                buf: &mut buf,
                key: 1 + 2 * k as u64,
                rng: &mut rng,
                keep: None,
                streaming: false,
            };
            s.render(
                cfg,
                Msg::Load,
                Fill {
                    conn: 0,
                    seq: k as u64,
                    ts_us: 0,
                },
                &mut out,
            );
            assert_eq!(buf[3], kind::HEADERS);
            assert_eq!(
                u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]),
                1 + 2 * k as u32
            );
        }
        (s, c)
    }

    fn headers(out: &mut Vec<u8>, stream: u32, flags: u8, block: &[u8]) {
        put_head(
            out,
            block.len(),
            kind::HEADERS,
            flags | flag::END_HEADERS,
            stream,
        );
        out.extend_from_slice(block);
    }

    /// A gRPC reply on `stream`: its head, `msgs` messages of `len` bytes in DATA frames of
    /// at most 7 bytes, then trailers with `status` (none: no trailers' status).
    fn grpc_reply(stream: u32, msgs: usize, len: usize, status: Option<&str>) -> Vec<u8> {
        let mut input = Vec::new();
        let mut head = vec![0x88]; // :status 200
        head.push(0x00);
        put_str(&mut head, b"content-type");
        put_str(&mut head, b"application/grpc");
        headers(&mut input, stream, 0, &head);
        let mut body = Vec::new();
        for _ in 0..msgs {
            crate::grpc::put_prefix(&mut body, len);
            body.extend(std::iter::repeat_n(b'm', len));
        }
        for c in body.chunks(7) {
            put_head(&mut input, c.len(), kind::DATA, 0, stream);
            input.extend_from_slice(c);
        }
        let mut trailers = vec![0x00];
        put_str(&mut trailers, b"grpc-status");
        put_str(&mut trailers, status.unwrap_or("").as_bytes());
        if status.is_none() {
            trailers.clear();
            trailers.push(0x00);
            put_str(&mut trailers, b"grpc-message");
            put_str(&mut trailers, b"none");
        }
        headers(&mut input, stream, flag::END_STREAM, &trailers);
        input
    }

    fn run_grpc(cfg: &Cfg, n: usize, input: &[u8]) -> barrage_metrics::Delta {
        let (mut s, mut c) = ready(cfg, n, 100);
        for split in [input.len() / 3, input.len()] {
            let at = input.len() / 3;
            let part = if split == at {
                &input[..at]
            } else {
                &input[at..]
            };
            c.input(|r| s.input(cfg, part, r).unwrap());
        }
        assert_eq!(c.rec.in_flight, 0);
        c.rec.take(0, 0, 0, 1)
    }

    #[test]
    fn a_grpc_call_is_sent_as_a_prefixed_message_with_te_trailers() {
        let cfg = cfg_grpc(4, Some(GrpcMode { streaming: false }));
        let mut s = H2::new(&cfg);
        let (mut rng, mut buf) = (Rng::new(1), Vec::new());
        let mut out = Out {
            conn: 0,
            buf: &mut buf,
            key: 1,
            rng: &mut rng,
            keep: None,
            streaming: false,
        };
        let fill = Fill {
            conn: 0,
            seq: 42,
            ts_us: 0,
        };
        s.render(&cfg, Msg::Load, fill, &mut out);
        let hlen = u32::from_be_bytes([0, buf[0], buf[1], buf[2]]) as usize;
        let block = &buf[frame::HEAD..frame::HEAD + hlen];
        let mut d = Decoder::new(4096);
        let mut fields = Vec::new();
        d.decode(block, 1 << 16, |n, v| {
            fields.push((n.to_vec(), v.to_vec()));
        })
        .unwrap();
        let has = |n: &[u8], v: &[u8]| fields.iter().any(|(a, b)| a == n && b == v);
        assert!(has(b":method", b"POST") && has(b"te", b"trailers"));
        assert!(has(b"content-type", b"application/grpc"));
        let data = &buf[frame::HEAD + hlen..];
        assert_eq!(data[3], kind::DATA);
        assert_eq!(data[4], flag::END_STREAM);
        // The message: field 1 = "n42", after its prefix.
        assert_eq!(
            &data[frame::HEAD..],
            &[0, 0, 0, 0, 5, 0x0a, 3, b'n', b'4', b'2']
        );
    }

    #[test]
    fn grpc_calls_are_judged_by_their_status_and_messages() {
        let unary = cfg_grpc(10, Some(GrpcMode { streaming: false }));
        // OK, one message split over frames.
        let d = run_grpc(&unary, 1, &grpc_reply(1, 1, 20, Some("0")));
        assert_eq!(d.counters.completed, 1);
        assert_eq!(d.counters.grpc.status.get(0), 1);
        assert_eq!(d.counters.grpc.messages_received, 1);
        // UNAVAILABLE in a trailers-only reply, and RESOURCE_EXHAUSTED after a message.
        let mut input = Vec::new();
        let mut only = vec![0x88];
        only.extend(lit_field(b"content-type", b"application/grpc"));
        only.push(0x00);
        put_str(&mut only, b"grpc-status");
        put_str(&mut only, b"14");
        headers(&mut input, 1, flag::END_STREAM, &only);
        input.extend(grpc_reply(3, 1, 3, Some("8")));
        let d = run_grpc(&unary, 2, &input);
        let f = &d.counters.failed_by;
        assert_eq!(f.get(ErrorClass::GrpcUnavailable), 1);
        assert_eq!(f.get(ErrorClass::GrpcResourceExhausted), 1);
        assert_eq!(d.counters.completed, 0);
        assert_eq!(
            (
                d.counters.grpc.status.get(14),
                d.counters.grpc.status.get(8)
            ),
            (1, 1)
        );
        // No grpc-status; and an OK unary call with two messages: protocol errors.
        let mut input = grpc_reply(1, 1, 3, None);
        input.extend(grpc_reply(3, 2, 3, Some("0")));
        let d = run_grpc(&unary, 2, &input);
        assert_eq!(d.counters.failed_by.get(ErrorClass::Protocol), 2);
        assert_eq!(d.counters.grpc.no_status, 1);
        // Streaming: every message timed, the call completes.
        let streaming = cfg_grpc(10, Some(GrpcMode { streaming: true }));
        let d = run_grpc(&streaming, 1, &grpc_reply(1, 5, 10, Some("0")));
        assert_eq!(d.counters.completed, 1);
        assert_eq!(d.counters.grpc.messages_received, 5);
        assert_eq!(d.stream_msg.stats().map(|s| s.count), Some(5));
    }

    /// A plain HTTP/2 run ignores `grpc-status` (a gateway may send one), even one that is
    /// not a number; a gRPC run fails the connection on that.
    #[test]
    fn grpc_status_is_read_only_in_grpc_mode() {
        let mut input = Vec::new();
        let mut block = vec![0x88];
        block.extend(lit_field(b"grpc-status", b"OK"));
        headers(&mut input, 1, flag::END_STREAM, &block);
        let plain = cfg(4);
        let (mut s, mut c) = ready(&plain, 1, 100);
        c.input(|r| s.input(&plain, &input, r).unwrap());
        assert_eq!(c.rec.take(0, 0, 0, 1).counters.completed, 1);
        let grpc = cfg_grpc(4, Some(GrpcMode { streaming: false }));
        let (mut s, mut c) = ready(&grpc, 1, 100);
        c.input(|r| assert!(s.input(&grpc, &input, r).is_err()));
    }

    fn lit_field(name: &[u8], value: &[u8]) -> Vec<u8> {
        let mut b = vec![0x00];
        put_str(&mut b, name);
        put_str(&mut b, value);
        b
    }

    /// Two responses, interleaved and cut at every point: a 200 with a body in two DATA
    /// frames, and a 404 in one HEADERS frame with Server-Timing (indexed by the server, then
    /// used by index), a PING and a WINDOW_UPDATE between them.
    #[test]
    fn interleaved_responses_complete_their_own_exchanges_at_every_split() {
        let cfg = cfg(10);
        let mut input = Vec::new();
        headers(&mut input, 1, 0, &[0x88]); // :status 200
        put_head(&mut input, 3, kind::DATA, 0, 1);
        input.extend_from_slice(b"hel");
        let mut b404 = vec![0x8d, 0x40]; // :status 404, a literal with indexing
        put_str(&mut b404, b"server-timing");
        put_str(&mut b404, b"app;dur=3");
        headers(&mut input, 3, flag::END_STREAM, &b404);
        put_ping(&mut input, false, b"pingpong");
        put_window_update(&mut input, 0, 1000);
        put_head(&mut input, 2, kind::DATA, flag::END_STREAM, 1);
        input.extend_from_slice(b"lo");
        for split in 0..=input.len() {
            let (mut s, mut c) = ready(&cfg, 2, 100);
            let mut ctl = Vec::new();
            for part in [&input[..split], &input[split..]] {
                c.input(|r| {
                    s.input(&cfg, part, r).unwrap();
                    ctl.extend_from_slice(r.ctl);
                    r.ctl.clear();
                });
            }
            let d = c.rec.take(0, 0, 0, 1);
            assert_eq!(d.counters.completed, 1, "split {split}");
            assert_eq!(d.counters.failed_by.get(ErrorClass::UnexpectedStatus), 1);
            assert_eq!(
                (d.counters.status.get(200), d.counters.status.get(404)),
                (1, 1)
            );
            assert_eq!(c.rec.in_flight, 0);
            assert!(s.st.streams.is_empty());
            // The PING is answered.
            assert!(ctl.windows(8).any(|w| w == b"pingpong"), "split {split}");
            // Six, and the handshake's SETTINGS.
            assert_eq!(d.counters.h2.frames_read, 7);
        }
        // The server's table entry is used by index on a later response.
        let (mut s, mut c) = ready(&cfg, 2, 100);
        let mut first = Vec::new();
        headers(&mut first, 1, flag::END_STREAM, &b404);
        let mut again = Vec::new();
        headers(&mut again, 3, flag::END_STREAM, &[0x88, 0xbe]);
        c.input(|r| s.input(&cfg, &first, r).unwrap());
        c.input(|r| s.input(&cfg, &again, r).unwrap());
        let d = c.rec.take(0, 0, 0, 1);
        assert_eq!(
            d.server.get().map(|h| h.count()),
            Some(1),
            "the 200's server time"
        );
    }

    /// GOAWAY: the streams above its last id fail as `goaway` at once; those below finish,
    /// then the connection ends gracefully.
    #[test]
    fn goaway_fails_the_unprocessed_streams_and_lets_the_rest_finish() {
        let cfg = cfg(10);
        let (mut s, mut c) = ready(&cfg, 3, 100);
        let mut input = Vec::new();
        put_goaway(&mut input, 3, code::NO_ERROR);
        c.input(|r| {
            s.input(&cfg, &input, r).unwrap();
            assert!(r.close.is_none());
        });
        assert_eq!(s.room(&cfg), 0, "no new stream after GOAWAY");
        let mut input = Vec::new();
        headers(&mut input, 1, flag::END_STREAM, &[0x88]);
        headers(&mut input, 3, flag::END_STREAM, &[0x88]);
        c.input(|r| {
            s.input(&cfg, &input, r).unwrap();
            assert_eq!(r.close, Some(Close::Graceful));
        });
        let d = c.rec.take(0, 0, 0, 1);
        assert_eq!(d.counters.completed, 2);
        assert_eq!(d.counters.failed_by.get(ErrorClass::Goaway), 1);
        assert_eq!(d.counters.h2.goaways.get(0), 1);
    }

    /// REFUSED_STREAM: the request goes out again once, on a new stream, as the same
    /// exchange; a second refusal fails it as `stream_reset`, as any other code does.
    #[test]
    fn a_refused_stream_is_sent_again_once() {
        let cfg = cfg(10);
        let (mut s, mut c) = ready(&cfg, 2, 100);
        let mut input = Vec::new();
        put_rst(&mut input, 1, code::REFUSED_STREAM);
        put_rst(&mut input, 3, code::INTERNAL_ERROR);
        c.input(|r| {
            s.input(&cfg, &input, r).unwrap();
            // The request again, as stream 5.
            assert_eq!(r.ctl[3], kind::HEADERS);
            assert_eq!(r.ctl[8], 5);
            r.ctl.clear();
        });
        let mut input = Vec::new();
        put_rst(&mut input, 5, code::REFUSED_STREAM);
        c.input(|r| s.input(&cfg, &input, r).unwrap());
        let d = c.rec.take(0, 0, 0, 1);
        assert_eq!(d.counters.failed_by.get(ErrorClass::StreamReset), 2);
        assert_eq!(d.counters.h2.refused_retried, 1);
        assert_eq!(d.counters.h2.resets.get(7), 2);
        assert_eq!(d.counters.h2.resets.get(2), 1);
        assert_eq!(c.rec.in_flight, 0);
    }

    /// Stream ids run out after about a billion requests: no new stream, and once the last
    /// one ends the connection closes gracefully (and is opened again).
    #[test]
    fn a_connection_whose_stream_ids_ran_out_starts_over() {
        let cfg = cfg(10);
        let (mut s, mut c) = ready(&cfg, 1, 100);
        s.st.next_id = LAST_ID + 2;
        assert_eq!(s.room(&cfg), 0);
        let mut input = Vec::new();
        headers(&mut input, 1, flag::END_STREAM, &[0x88]);
        c.input(|r| {
            s.input(&cfg, &input, r).unwrap();
            assert_eq!(r.close, Some(Close::Graceful));
        });
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS caps the streams in flight.
    #[test]
    fn room_is_the_servers_stream_limit_less_what_is_in_flight() {
        let cfg = cfg(10);
        let (s, _) = ready(&cfg, 2, 3);
        assert_eq!(s.room(&cfg), 1);
        let (s, _) = ready(&cfg, 0, 1000);
        assert_eq!(s.room(&cfg), 10, "--streams caps it too");
    }

    /// What breaks the protocol is a protocol error naming the frame, never a panic.
    #[test]
    fn malformed_frames_are_named_protocol_errors() {
        let cfg = cfg(10);
        let cases: Vec<(Vec<u8>, &str)> = vec![
            ({ let mut b = Vec::new(); put_head(&mut b, 3, kind::PING, 0, 0); b.extend([0; 3]); b }, "PING frame: length 3 instead of 8"),
            ({ let mut b = Vec::new(); headers(&mut b, 1, 0, &[0x80]); b }, "HEADERS frame on stream 1: HPACK: index 0"),
            ({ let mut b = Vec::new(); headers(&mut b, 2, 0, &[0x88]); b }, "HEADERS frame on stream 2: a stream this client did not open"),
            ({ let mut b = Vec::new(); put_head(&mut b, 2, kind::DATA, 0, 1); b.extend([0; 2]); b }, "DATA frame on stream 1: DATA before the response's HEADERS"),
            ({ let mut b = Vec::new(); put_head(&mut b, 1, kind::HEADERS, 0, 1); b.push(0x88); put_head(&mut b, 0, kind::DATA, 0, 1); b }, "DATA frame on stream 1: expected CONTINUATION of stream 1's headers"),
            ({ let mut b = Vec::new(); headers(&mut b, 1, 0, &[0x40, 1, b'x', 1, b'y']); b }, "HEADERS frame on stream 1: a response without :status"),
            ({ let mut b = Vec::new(); put_head(&mut b, 4, kind::PUSH_PROMISE, flag::END_HEADERS, 1); b.extend([0, 0, 0, 2]); b }, "PUSH_PROMISE frame on stream 1: server push, which this client disabled (SETTINGS_ENABLE_PUSH 0)"),
            ({ let mut b = Vec::new(); put_window_update(&mut b, 0, 0); b }, "WINDOW_UPDATE frame: an increment of 0"),
            ({ let mut b = Vec::new(); put_window_update(&mut b, 0, i32::MAX as u32); b }, "WINDOW_UPDATE frame: the connection's send window past 2^31-1"),
        ];
        for (input, want) in cases {
            let (mut s, mut c) = ready(&cfg, 1, 100);
            let mut got = None;
            c.input(|r| got = s.input(&cfg, &input, r).err());
            assert_eq!(got.map(|e| e.why).as_deref(), Some(want));
        }
        // Not an HTTP/2 server at all.
        let mut s = H2::new(&cfg);
        let mut c = Conn::new(&[]);
        let mut got = None;
        c.input(|r| got = s.input(&cfg, b"HTTP/1.1 400 Bad Request\r\n\r\n", r).err());
        assert!(got.unwrap().why.contains("does not speak HTTP/2"));
    }

    /// A body larger than the server's windows goes out as the windows open.
    #[test]
    fn a_body_waits_for_window_and_goes_on_after_window_update() {
        let body = vec![b'x'; 100_000];
        let cfg = Cfg {
            request: H2Request::new(&H2RequestSpec {
                method: "POST",
                scheme: "http",
                path: "/",
                authority: "h",
                headers: &[],
                body: Some(&body),
                content_type: None,
                te_trailers: false,
            })
            .unwrap(),
            expect: StatusSet::default(),
            streams: 1,
            grpc: None,
        };
        let (mut s, mut c) = ready(&cfg, 0, 100);
        let mut rng = Rng::new(1);
        let mut buf = Vec::new();
        let mut out = Out {
            conn: 0,
            buf: &mut buf,
            key: 1,
            rng: &mut rng,
            keep: None,
            streaming: false,
        };
        s.render(
            &cfg,
            Msg::Load,
            Fill {
                conn: 0,
                seq: 0,
                ts_us: 0,
            },
            &mut out,
        );
        let data = |b: &[u8]| -> usize {
            // Sum of DATA payloads in `b`.
            let (mut at, mut n) = (0, 0);
            while at + 9 <= b.len() {
                let len = u32::from_be_bytes([0, b[at], b[at + 1], b[at + 2]]) as usize;
                if b[at + 3] == kind::DATA {
                    n += len;
                }
                at += 9 + len;
            }
            n
        };
        assert_eq!(data(&buf), 65_535, "the default windows");
        let mut input = Vec::new();
        put_window_update(&mut input, 0, 50_000);
        put_window_update(&mut input, 1, 50_000);
        let mut more = Vec::new();
        c.input(|r| {
            s.input(&cfg, &input, r).unwrap();
            more.extend_from_slice(r.ctl);
        });
        assert_eq!(data(&more), 100_000 - 65_535);
        assert!(s.st.pending.is_empty());
    }

    fn post_cfg(body: &[u8]) -> Cfg {
        Cfg {
            request: H2Request::new(&H2RequestSpec {
                method: "POST",
                scheme: "http",
                path: "/",
                authority: "h",
                headers: &[],
                body: Some(body),
                content_type: None,
                te_trailers: false,
            })
            .unwrap(),
            expect: StatusSet::default(),
            streams: 4,
            grpc: None,
        }
    }

    /// Issue 42: DATA that a WINDOW_UPDATE lets out waits with the control answers while the
    /// socket is full, but it is what the server asked for: it does not count against the
    /// cap on answers owed (1 MiB), which once failed 2 MiB uploads as `protocol` blaming the
    /// server. Answers alone past the cap still fail the connection, saying what waits.
    #[test]
    fn body_bytes_released_by_window_update_do_not_count_as_owed_answers() {
        let body = vec![b'u'; 2 << 20];
        let cfg = post_cfg(&body);
        let (mut s, mut c) = ready(&cfg, 0, 100);
        let (mut rng, mut buf) = (Rng::new(1), Vec::new());
        let mut out = Out {
            conn: 0,
            buf: &mut buf,
            key: 1,
            rng: &mut rng,
            keep: None,
            streaming: false,
        };
        let fill = Fill {
            conn: 0,
            seq: 0,
            ts_us: 0,
        };
        s.render(&cfg, Msg::Load, fill, &mut out);
        let mut input = Vec::new();
        put_window_update(&mut input, 0, 4 << 20);
        put_window_update(&mut input, 1, 4 << 20);
        put_ping(&mut input, false, b"pingpong");
        c.input(|r| {
            s.input(&cfg, &input, r).unwrap();
            assert!(r.ctl.len() > (2 << 20) - 65_535, "the rest of the body");
            // The socket is full: all of it waits (as the worker does).
            s.owe(r.ctl);
            r.ctl.clear();
        });
        assert!(s.st.owed.len() > MAX_OWED);
        let mut ping = Vec::new();
        put_ping(&mut ping, false, b"pingpong");
        c.input(|r| s.input(&cfg, &ping, r).expect("DATA owed is not a flood"));
        // Drained: nothing owed. Then answers alone past the cap.
        let mut all = Vec::new();
        s.drain_owed(&mut all);
        assert!(all.len() > MAX_OWED);
        s.owe(&vec![0; MAX_OWED + 1]);
        let mut got = None;
        c.input(|r| got = s.input(&cfg, &ping, r).err());
        let why = got.expect("a flood of answers").why;
        assert!(
            why.contains("does not read what this client owes it"),
            "{why}"
        );
    }

    /// RFC 9113 5.1: DATA or HEADERS on a stream that ended by END_STREAM is a connection
    /// error (STREAM_CLOSED); on a stream this side reset (it timed out) it is late, dropped.
    #[test]
    fn frames_on_closed_streams_are_refused_unless_this_side_reset_them() {
        let cfg = cfg(10);
        let (mut s, mut c) = ready(&cfg, 2, 100);
        let mut done = Vec::new();
        headers(&mut done, 1, flag::END_STREAM, &[0x88]);
        c.input(|r| s.input(&cfg, &done, r).unwrap());
        // Stream 3 given up on (timed out): RST_STREAM CANCEL.
        let mut ctl = Vec::new();
        assert!(!s.cancel(&cfg, 3, &mut ctl));
        assert_eq!(ctl[3], kind::RST_STREAM);
        let mut late = Vec::new();
        headers(&mut late, 3, 0, &[0x88]);
        put_head(&mut late, 2, kind::DATA, flag::END_STREAM, 3);
        late.extend_from_slice(b"ok");
        c.input(|r| s.input(&cfg, &late, r).expect("late frames are dropped"));
        for kind_ in [kind::DATA, kind::HEADERS] {
            let mut again = Vec::new();
            if kind_ == kind::DATA {
                put_head(&mut again, 2, kind::DATA, 0, 1);
                again.extend_from_slice(b"no");
            } else {
                headers(&mut again, 1, flag::END_STREAM, &[0x88]);
            }
            let mut got = None;
            c.input(|r| got = s.input(&cfg, &again, r).err());
            let why = got.expect("STREAM_CLOSED").why;
            assert!(
                why.contains("already closed by END_STREAM (STREAM_CLOSED)"),
                "{why}"
            );
        }
        let d = c.rec.take(0, 0, 0, 1);
        assert_eq!(d.counters.completed, 1);
    }

    /// Malformed responses (RFC 9113 8.1.1, 8.2) fail their own exchange as `protocol`: the
    /// stream is reset with PROTOCOL_ERROR, the connection carries on. A body shorter or
    /// longer than its content-length too (HTTP/1.1 says `protocol` for it as well).
    #[test]
    fn malformed_responses_fail_their_stream_as_protocol() {
        let cfg = cfg(10);
        let cl = |n: &str| {
            let mut b = vec![0x88];
            b.extend(lit_field(b"content-length", n.as_bytes()));
            b
        };
        let cases: Vec<(Vec<u8>, &str, bool)> = vec![
            (
                {
                    let mut b = Vec::new();
                    headers(
                        &mut b,
                        1,
                        flag::END_STREAM,
                        &[&[0x88][..], &lit_field(b"Server", b"x")].concat(),
                    );
                    b
                },
                "an upper-case header name (Server)",
                true,
            ),
            (
                {
                    let mut b = Vec::new();
                    headers(
                        &mut b,
                        1,
                        flag::END_STREAM,
                        &[&[0x88][..], &lit_field(b"connection", b"close")].concat(),
                    );
                    b
                },
                "a connection-specific header field (connection)",
                true,
            ),
            (
                {
                    let mut b = Vec::new();
                    headers(
                        &mut b,
                        1,
                        flag::END_STREAM,
                        &[&[0x88][..], &lit_field(b":path", b"/")].concat(),
                    );
                    b
                },
                "a pseudo-header a response has none of (:path)",
                true,
            ),
            (
                {
                    let mut b = Vec::new();
                    headers(
                        &mut b,
                        1,
                        flag::END_STREAM,
                        &[&lit_field(b"x", b"y")[..], &[0x88]].concat(),
                    );
                    b
                },
                ":status after a regular field",
                true,
            ),
            (
                {
                    let mut b = Vec::new();
                    headers(&mut b, 1, 0, &[0x88]);
                    headers(&mut b, 1, flag::END_STREAM, &[0x88]);
                    b
                },
                "a pseudo-header in trailers",
                true,
            ),
            (
                {
                    let mut b = Vec::new();
                    headers(&mut b, 1, 0, &cl("10"));
                    put_head(&mut b, 3, kind::DATA, flag::END_STREAM, 1);
                    b.extend_from_slice(b"abc");
                    b
                },
                "a body of 3 bytes where content-length said 10",
                false,
            ),
            (
                {
                    let mut b = Vec::new();
                    headers(&mut b, 1, 0, &cl("2"));
                    put_head(&mut b, 3, kind::DATA, flag::END_STREAM, 1);
                    b.extend_from_slice(b"abc");
                    b
                },
                "a body longer than its content-length (2)",
                true,
            ),
        ];
        for (input, want, reset) in cases {
            let (mut s, mut c) = ready(&cfg, 2, 100);
            let mut ctl = Vec::new();
            c.input(|r| {
                s.input(&cfg, &input, r).unwrap();
                ctl.extend_from_slice(r.ctl);
            });
            // The connection goes on: stream 3 completes.
            let mut ok = Vec::new();
            headers(&mut ok, 3, flag::END_STREAM, &cl("0"));
            c.input(|r| s.input(&cfg, &ok, r).unwrap());
            let d = c.rec.take(0, 0, 0, 1);
            assert_eq!(d.counters.failed_by.get(ErrorClass::Protocol), 1, "{want}");
            assert_eq!(d.counters.completed, 1, "{want}");
            let reason = d
                .counters
                .reasons
                .of(ErrorClass::Protocol)
                .next()
                .map(|r| r.reason.clone());
            assert!(
                reason.as_deref().is_some_and(|r| r.ends_with(want)),
                "{want}: {reason:?}"
            );
            let rst = ctl.windows(4).any(|w| w == [kind::RST_STREAM, 0, 0, 0]);
            assert_eq!(
                rst && ctl.ends_with(&code::PROTOCOL_ERROR.to_be_bytes()),
                reset,
                "{want}"
            );
        }
    }

    /// The fuzz target's harness: uploads go out as the server's windows open, whole or cut
    /// anywhere, the same bytes; kept as owed (a full socket) they are no flood.
    #[test]
    fn the_fuzz_harness_sends_upload_bodies_as_windows_open() {
        let mut input = Vec::new();
        put_window_update(&mut input, 0, 200_000);
        put_window_update(&mut input, 1, 20_000);
        put_settings(
            &mut input,
            &[(frame::setting::INITIAL_WINDOW_SIZE, 100_000)],
        );
        headers(&mut input, 1, flag::END_STREAM, &[0x88]);
        for owe in [false, true] {
            let case = FuzzCase {
                n: 2,
                grpc: None,
                upload: 100_000,
                owe,
            };
            let whole = fuzz_feed(&[&input], case).unwrap();
            // 65,535 of stream 1 at first; the connection's window opens (stream 3's first
            // 65,535), stream 1's (20,000 more), then SETTINGS lifts both streams' windows
            // by 34,465: both bodies whole (100,000 each). Stream 1 completed.
            assert_eq!(whole, (1, 0, 1, 200_000), "{owe}");
            for cut in 0..=input.len() {
                let split = fuzz_feed(&[&input[..cut], &input[cut..]], case).unwrap();
                assert_eq!(split, whole, "cut at {cut}");
            }
        }
    }

    /// A response that ends its stream while the request body still waits for window: the
    /// exchange completes, the rest of the body is not sent, and the stream is reset (CANCEL)
    /// rather than left half-open at the server.
    #[test]
    fn an_early_response_resets_the_stream_whose_body_still_waits() {
        let body = vec![b'x'; 100_000];
        let cfg = post_cfg(&body);
        // One request in flight (its exchange held by the connection), 65,535 bytes sent.
        let (mut s, mut c) = ready(&cfg, 1, 100);
        assert_eq!(s.st.pending.len(), 1);
        let mut input = Vec::new();
        headers(&mut input, 1, flag::END_STREAM, &[0x88]);
        put_window_update(&mut input, 0, 100_000);
        put_window_update(&mut input, 1, 100_000);
        let mut ctl = Vec::new();
        c.input(|r| {
            s.input(&cfg, &input, r).unwrap();
            ctl.extend_from_slice(r.ctl);
        });
        let mut rst = Vec::new();
        put_rst(&mut rst, 1, code::CANCEL);
        assert_eq!(ctl, rst, "the reset alone, no more DATA");
        assert!(s.st.pending.is_empty());
        assert_eq!(c.rec.take(0, 0, 0, 1).counters.completed, 1);
    }
}
