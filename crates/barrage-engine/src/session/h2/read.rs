//! The HTTP/2 frames this side reads ([`Sink`], fed by the frame reader): SETTINGS, PING,
//! GOAWAY, WINDOW_UPDATE and RST_STREAM handled for the connection, header blocks decoded
//! and judged, DATA counted against the receive windows (refilled as it is consumed), and a
//! stream's end turned into its exchange's end.

use super::cfg::Cfg;
use super::fields::{parse_status, Fields};
use super::stream::{remember, St, LAST_ID};
use crate::grpc::MsgReader;
use crate::h2::frame::{self, code, flag, kind, FrameSink, Head};
use crate::h2::ours;
use crate::session::{ProtoError, Replies};
use barrage_metrics::ErrorClass;

pub(super) struct Sink<'s, 'c, 'r, 'a> {
    pub(super) st: &'s mut St,
    pub(super) cfg: &'c Cfg,
    pub(super) r: &'r mut Replies<'a>,
}

pub(super) fn bad(h: &Head, why: impl std::fmt::Display) -> ProtoError {
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
pub(super) fn end_exchange(r: &mut Replies, key: u64, bad: Option<ErrorClass>) {
    if r.is_user() && r.ex.front().is_some_and(|f| f.key == key) {
        r.complete(bad);
    } else {
        r.complete_key(key, bad);
    }
}

pub(super) fn code_u16(c: u32) -> u16 {
    c.min(u32::from(u16::MAX)) as u16
}

impl Sink<'_, '_, '_, '_> {
    pub(super) fn setting(&mut self, h: &Head, id: u16, v: u32) -> Result<(), ProtoError> {
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
    pub(super) fn consumed(&mut self, stream: Option<usize>, n: u32) {
        let st = &mut *self.st;
        st.conn_unacked += n;
        let set = &self.cfg.settings;
        if st.conn_unacked >= set.conn_window / 2 {
            frame::put_window_update(self.r.ctl, 0, st.conn_unacked);
            st.frames_out += 1;
            st.conn_unacked = 0;
        }
        if let Some(i) = stream {
            let s = &mut st.streams[i];
            s.unacked += n;
            if s.unacked >= set.stream_window / 2 {
                frame::put_window_update(self.r.ctl, s.id, s.unacked);
                st.frames_out += 1;
                s.unacked = 0;
            }
        }
    }

    pub(super) fn data_end(&mut self, h: &Head) -> Result<(), ProtoError> {
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
    pub(super) fn closed(&mut self, h: &Head) -> Result<(), ProtoError> {
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
    pub(super) fn malformed(&mut self, h: &Head, i: usize, why: &str) {
        let s = self.st.streams.swap_remove(i);
        self.st.pending.retain(|p| p.stream != s.id);
        self.st.reset_here(self.r.ctl, s.id, code::PROTOCOL_ERROR);
        let e = bad(h, why);
        self.r.rec.reason(ErrorClass::Protocol, self.r.now, &e.why);
        end_exchange(self.r, s.key, Some(ErrorClass::Protocol));
    }

    pub(super) fn headers_end(&mut self, h: &Head) -> Result<(), ProtoError> {
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

    /// Stream `i` ended (END_STREAM on `h`): its exchange is complete, its status judged;
    /// a body other than its content-length is malformed (`protocol`, as HTTP/1.1 says). A
    /// request body still waiting for window goes no further: the stream is reset (CANCEL).
    pub(super) fn finish(&mut self, h: &Head, i: usize) {
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

    /// The server reset a stream.
    pub(super) fn reset(&mut self, id: u32, c: u32) {
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
