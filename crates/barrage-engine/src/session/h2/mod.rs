//! HTTP/2: one connection carries many streams, each one exchange (its key is the stream's).
//!
//! The connection opens with the preface, this side's SETTINGS and a WINDOW_UPDATE that
//! lifts the connection's receive window; the server's first SETTINGS (acknowledged) ends
//! the handshake, so its SETTINGS_MAX_CONCURRENT_STREAMS is known before a request goes out:
//! [`Streams::room`] keeps the streams in flight under it, and what a connection owes beyond
//! that waits for a stream to end. Responses are read frame by frame ([`FrameReader`]):
//! header blocks are decoded with the connection's HPACK table, bodies are counted (and
//! given to a scenario step that looks into them) and never kept, and the receive windows
//! are refilled as data is consumed. A stream ends as its exchange: completed (its status
//! judged as HTTP/1.1's), reset by the server (`stream_reset`, by code; `REFUSED_STREAM` is
//! sent again once), or refused by a GOAWAY (`goaway`). A GOAWAY lets the streams it covers
//! finish, then the connection is opened again. What the server sends that breaks the
//! protocol fails the connection with the frame named.
//!
//! This file is the [`Session`] that ties the parts: `stream` (the per-stream and connection
//! state, windows), `write` (the request's HEADERS and DATA as the windows allow), `read`
//! (the frames the server sends: settings, ping, goaway, resets, header blocks, data),
//! `fields` (a header block's checks), `grpc` (a call's messages and status) and `fuzz` (the
//! fuzz target's entry).

mod cfg;
mod fields;
mod fuzz;
mod grpc;
mod read;
mod stream;
mod write;

pub use cfg::Cfg;
pub use fuzz::{fuzz_feed, FuzzCase};

use super::{Close, Msg, Out, Owed, ProtoError, Rendered, Replies, Session, Streams};
use crate::h2::frame::{self, code, FrameReader};
use crate::h2::hpack::Decoder;
use crate::h2::ours;
use crate::message::Fill;
use crate::plan::{Plan, Protocol};
use barrage_metrics::{ErrorClass, Recorder};
use read::Sink;
use stream::{Pending, St, Stream, LAST_ID, MAX_OWED};

pub struct H2 {
    rd: FrameReader,
    st: St,
    /// `--streams`: the most streams in flight (0: no cap but the server's).
    cap: u32,
}

impl Session for H2 {
    type Cfg = Cfg;

    fn config(plan: &Plan) -> Cfg {
        match &plan.protocol {
            Protocol::H2(h) => Cfg::of(h),
            other => unreachable!("HTTP/2 session for a {} plan", other.name()),
        }
    }

    fn new(cfg: &Cfg) -> Self {
        Self {
            rd: FrameReader::new(ours::MAX_FRAME),
            st: St::new(cfg.settings.header_table),
            cap: cfg.streams,
        }
    }

    fn reset(&mut self, cfg: &Cfg) {
        self.rd.reset();
        let mut st = St::new(cfg.settings.header_table);
        // Keep the allocations: a reconnect is not a new connection's worth of heap.
        st.hp = std::mem::replace(&mut self.st.hp, Decoder::new(0));
        st.hp.reset();
        st.streams = std::mem::take(&mut self.st.streams);
        st.streams.clear();
        st.block = std::mem::take(&mut self.st.block);
        st.block.clear();
        self.st = st;
    }

    fn open(&mut self, cfg: &Cfg, out: &mut Out) -> Result<bool, ProtoError> {
        out.buf.extend_from_slice(frame::PREFACE);
        use frame::setting as s;
        let set = &cfg.settings;
        frame::put_settings(
            out.buf,
            &[
                (s::ENABLE_PUSH, 0),
                (s::INITIAL_WINDOW_SIZE, set.stream_window),
                (s::HEADER_TABLE_SIZE, set.header_table),
                (s::MAX_HEADER_LIST_SIZE, ours::MAX_HEADER_LIST),
            ],
        );
        self.st.frames_out += 1;
        // The connection's window starts at 65,535: raised when asked for more.
        if set.conn_window > 65_535 {
            frame::put_window_update(out.buf, 0, set.conn_window - 65_535);
            self.st.frames_out += 1;
        }
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

    fn counts(&mut self, rec: &mut Recorder) {
        rec.counters.h2.frames_written += std::mem::take(&mut self.st.frames_out);
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

    fn streams(&mut self) -> Option<&mut impl Streams> {
        Some(self)
    }

    fn owed(&mut self) -> Option<&mut impl Owed> {
        Some(self)
    }
}

/// HTTP/2's streams: as many as the server's SETTINGS_MAX_CONCURRENT_STREAMS and `--streams`
/// allow, each one given up alone with RST_STREAM.
impl Streams for H2 {
    fn waited(&self, rec: &mut Recorder, n: u64) {
        rec.counters.h2.stream_waits += n;
    }

    fn room(&self) -> u64 {
        let st = &self.st;
        if !st.settled || st.goaway.is_some() || st.next_id > LAST_ID || st.unframed {
            return 0;
        }
        // `--streams` 0: no cap but the server's (open loop without --streams).
        let ours = if self.cap == 0 { u32::MAX } else { self.cap };
        let max = self.st.peer.max_streams.min(ours);
        u64::from(max).saturating_sub(self.st.streams.len() as u64)
    }

    fn cancels(&self) -> bool {
        true
    }

    /// A stream given up on (it timed out): RST_STREAM CANCEL. What the server still sends
    /// on it is read and dropped (its id is below `next_id`); its window is not given back
    /// per stream, the connection's is as data arrives.
    fn cancel(&mut self, key: u64, ctl: &mut Vec<u8>) -> bool {
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
}

/// HTTP/2's control answers (SETTINGS and PING acknowledgements, WINDOW_UPDATEs, RST_STREAMs):
/// every one kept, in order.
impl Owed for H2 {
    fn in_order(&self) -> bool {
        true
    }

    fn owe(&mut self, ctl: &[u8]) {
        // Unlike a WebSocket pong, none of these may be dropped: keep them all. The request
        // bytes among them (DATA released by WINDOW_UPDATE) are noted apart.
        self.st.owed.extend_from_slice(ctl);
        self.st.owed_data += std::mem::take(&mut self.st.ctl_data).min(ctl.len());
    }

    fn take(&mut self) -> Option<Box<[u8]>> {
        self.st.owed_data = 0;
        (!self.st.owed.is_empty()).then(|| std::mem::take(&mut self.st.owed).into_boxed_slice())
    }

    fn drain(&mut self, out: &mut Vec<u8>) {
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

#[cfg(test)]
mod tests;
