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
use crate::h2::frame::{self, code, flag, kind, put_head, set_head, FrameReader, FrameSink, Head};
use crate::h2::hpack::Decoder;
use crate::h2::{ours, Body, Encoder, H2Request};
use crate::message::Fill;
use crate::plan::{Plan, Protocol, StatusSet};
use barrage_metrics::ErrorClass;

pub struct Cfg {
    request: H2Request,
    expect: StatusSet,
    streams: u32,
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
}

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
        }
    }

    fn stream(&mut self, id: u32) -> Option<&mut Stream> {
        self.streams.iter_mut().find(|s| s.id == id)
    }

    /// Render request `fill` as stream `id` (HEADERS, CONTINUATION if the block is larger
    /// than the server's frames, DATA as far as the windows allow).
    fn request(&mut self, cfg: &Cfg, id: u32, fill: Fill, out: &mut Vec<u8>) {
        let req = &cfg.request;
        let ends = !req.has_body();
        let at = out.len();
        out.extend_from_slice(&[0; frame::HEAD]);
        req.render_block(&mut self.enc, fill, out);
        let len = out.len() - at - frame::HEAD;
        let max = self.peer.max_frame as usize;
        let es = if ends { flag::END_STREAM } else { 0 };
        if len <= max {
            set_head(out, at, len, kind::HEADERS, flag::END_HEADERS | es, id);
        } else {
            // HEADERS with the first `max` bytes, then CONTINUATION frames.
            let block = out.split_off(at + frame::HEAD);
            out.truncate(at);
            let mut parts = block.chunks(max).peekable();
            let mut first = true;
            while let Some(p) = parts.next() {
                let last = parts.peek().is_none();
                let (k, f) = if first { (kind::HEADERS, es) } else { (kind::CONTINUATION, 0) };
                let f = f | if last { flag::END_HEADERS } else { 0 };
                put_head(out, p.len(), k, f, id);
                out.extend_from_slice(p);
                first = false;
            }
        }
        let body_len = match &req.body {
            Body::None => return,
            Body::Fixed(b) => b.len(),
            Body::Dyn(t) => {
                let h = self.held.len();
                t.render_into(fill, &mut self.held);
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

    /// Send what waits for window, as far as the windows allow.
    fn send_pending(&mut self, cfg: &Cfg, out: &mut Vec<u8>) {
        let mut i = 0;
        while i < self.pending.len() {
            let p = self.pending[i];
            let Some(sw) = self.streams.iter().find(|s| s.id == p.stream).map(|s| s.send) else {
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
                put_head(out, n, kind::DATA, if last { flag::END_STREAM } else { 0 }, p.stream);
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
}

impl Session for H2 {
    type Cfg = Cfg;

    fn config(plan: &Plan) -> Cfg {
        match &plan.protocol {
            Protocol::H2(h) => Cfg {
                request: h.request.clone(),
                expect: h.expect_status.clone(),
                streams: h.streams,
            },
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
        Ok(true)
    }

    fn render(&mut self, cfg: &Cfg, _msg: Msg, fill: Fill, out: &mut Out) -> Rendered {
        let id = self.st.next_id;
        self.st.next_id += 2;
        let at = out.buf.len();
        self.st.streams.push(Stream {
            id,
            key: out.key,
            fill,
            status: 0,
            send: i64::from(self.st.peer.window),
            unacked: 0,
            server_ns: None,
            retried: false,
        });
        self.st.request(cfg, id, fill, out.buf);
        Rendered {
            len: (out.buf.len() - at) as u32,
            step: 0,
        }
    }

    fn room(&self, cfg: &Cfg) -> u64 {
        if !self.st.settled || self.st.goaway.is_some() || self.st.next_id > (1 << 31) - 2 {
            return 0;
        }
        let max = self.st.peer.max_streams.min(cfg.streams.max(1));
        u64::from(max).saturating_sub(self.st.streams.len() as u64)
    }

    fn input(&mut self, cfg: &Cfg, data: &[u8], r: &mut Replies) -> Result<(), ProtoError> {
        if !self.st.settled && self.rd.idle() && self.st.next_id == 1 {
            if let Some(e) = not_h2(data) {
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
            r.handshake_done(used);
            return Ok(());
        }
        if let Some((_, c)) = st.goaway {
            if st.streams.is_empty() {
                r.close = Some(if c == code::NO_ERROR {
                    Close::Graceful
                } else {
                    Close::Fail(
                        ErrorClass::Goaway,
                        format!("the server sent GOAWAY {}", frame::code_name(c)),
                    )
                });
            }
        }
        Ok(())
    }

    fn eof(&mut self, _cfg: &Cfg, _r: &mut Replies) -> Result<bool, ProtoError> {
        // After a GOAWAY whose streams all ended, a close is the expected end.
        Ok(self.st.goaway.is_some() && self.st.streams.is_empty())
    }

    fn goodbye(&mut self, _cfg: &Cfg, out: &mut Out) {
        frame::put_goaway(out.buf, 0, code::NO_ERROR);
    }
}

/// The first bytes from a server that does not speak HTTP/2 here.
fn not_h2(data: &[u8]) -> Option<ProtoError> {
    if data.starts_with(b"HTTP/1.") {
        return Some(ProtoError::new(
            "the server answered in HTTP/1.1: it does not speak HTTP/2 with prior knowledge \
             (h2c) on this port; use http:// without --http2",
        ));
    }
    if matches!(data.first(), Some(0x15 | 0x16)) && data.get(1) == Some(&3) {
        return Some(ProtoError {
            why: "the server answered with TLS: use https://".into(),
            tls_answer: true,
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
                return Err(bad(h, format!("expected CONTINUATION of stream {id}'s headers")));
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
                return Err(bad(h, "server push, which this client disabled (SETTINGS_ENABLE_PUSH 0)"))
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
            kind::DATA if self.r.collecting() => self.r.body(bytes),
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
            kind::HEADERS | kind::CONTINUATION if h.has(flag::END_HEADERS) => self.headers_end(h)?,
            kind::SETTINGS if h.has(flag::ACK) => {}
            kind::SETTINGS => {
                frame::put_settings_ack(self.r.ctl);
                if !self.st.settled {
                    self.st.settled = true;
                    self.st.paused = true;
                }
            }
            kind::PING if !h.has(flag::ACK) => {
                let data = self.st.small;
                frame::put_ping(self.r.ctl, true, &data);
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
                    self.st.send_pending(self.cfg, self.r.ctl);
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
                        self.r.complete_key(s.key, Some(ErrorClass::Goaway));
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
            s::MAX_CONCURRENT_STREAMS => st.peer.max_streams = v,
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
                    st.send_pending(self.cfg, self.r.ctl);
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
            st.conn_unacked = 0;
        }
        if let Some(i) = stream {
            let s = &mut st.streams[i];
            s.unacked += n;
            if s.unacked >= ours::STREAM_WINDOW / 2 {
                frame::put_window_update(self.r.ctl, s.id, s.unacked);
                s.unacked = 0;
            }
        }
    }

    fn data_end(&mut self, h: &Head) -> Result<(), ProtoError> {
        let i = self.st.streams.iter().position(|s| s.id == h.stream);
        let ends = h.has(flag::END_STREAM);
        self.consumed(if ends { None } else { i }, h.len);
        let Some(i) = i else {
            return if h.stream >= self.st.next_id {
                Err(bad(h, "a stream this client did not open"))
            } else {
                Ok(()) // a stream this side gave up on (reset, timed out): its data is late
            };
        };
        if self.st.streams[i].status == 0 {
            return Err(bad(h, "DATA before the response's HEADERS"));
        }
        if ends {
            self.finish(i);
        }
        Ok(())
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
        let user = self.r.is_user();
        let r = &mut *self.r;
        let res = self
            .st
            .hp
            .decode(&block, ours::MAX_HEADER_LIST as usize, |n, v| {
                plain += (n.len() + v.len() + 4) as u64; // as "name: value\r\n"
                if n == b":status" {
                    match parse_status(v) {
                        Some(s) => status = Some(s),
                        None => bad_status = true,
                    }
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
            return if id >= self.st.next_id {
                Err(bad(h, "a stream this client did not open"))
            } else {
                Ok(())
            };
        };
        let ends = self.st.block_ends;
        let s = &mut self.st.streams[i];
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
            self.finish(i);
        }
        Ok(())
    }

    /// Stream `i` ended: its exchange is complete, its status judged.
    fn finish(&mut self, i: usize) {
        let s = self.st.streams.swap_remove(i);
        self.r.rec.counters.status.add(s.status, 1);
        let ok = self.r.status_ok(s.status, &self.cfg.expect);
        self.r.server_ns = s.server_ns;
        self.r.complete_key(s.key, (!ok).then_some(ErrorClass::UnexpectedStatus));
    }

    /// The server reset a stream.
    fn reset(&mut self, id: u32, c: u32) {
        self.r.rec.counters.h2.resets.add(code_u16(c), 1);
        let Some(i) = self.st.streams.iter().position(|s| s.id == id) else {
            return;
        };
        let s = self.st.streams[i];
        if c == code::REFUSED_STREAM && !s.retried && self.st.goaway.is_none() {
            // Not processed: send it again once, on a new stream, as the same exchange.
            self.r.rec.counters.h2.refused_retried += 1;
            let nid = self.st.next_id;
            self.st.next_id += 2;
            let st = &mut self.st.streams[i];
            st.id = nid;
            st.retried = true;
            st.status = 0;
            st.send = i64::from(self.st.peer.window);
            st.unacked = 0;
            self.st.pending.retain(|p| p.stream != id);
            self.st.request(self.cfg, nid, s.fill, self.r.ctl);
            return;
        }
        self.st.streams.swap_remove(i);
        self.st.pending.retain(|p| p.stream != id);
        self.r.complete_key(s.key, Some(ErrorClass::StreamReset));
    }
}

fn parse_status(v: &[u8]) -> Option<u16> {
    if v.len() != 3 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = v.iter().fold(0u16, |a, &d| a * 10 + u16::from(d - b'0'));
    (100..=999).contains(&n).then_some(n)
}
