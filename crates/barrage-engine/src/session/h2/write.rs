//! The HTTP/2 frames this side writes for a request: HEADERS (and CONTINUATION) from the
//! HPACK encoder, and DATA as far as the stream's and the connection's send windows allow;
//! what does not fit waits as [`Pending`] and goes out as WINDOW_UPDATEs open the windows.

use super::cfg::Cfg;
use super::stream::{Pending, St};
use crate::h2::frame::{self, flag, kind, put_head, set_head};
use crate::h2::Body;
use crate::message::Fill;

impl St {
    /// Render request `fill` as stream `id` (HEADERS, CONTINUATION if the block is larger
    /// than the server's frames, DATA as far as the windows allow).
    pub(super) fn request(&mut self, cfg: &Cfg, id: u32, fill: Fill, out: &mut Vec<u8>) {
        let req = &cfg.request;
        let at = out.len();
        out.extend_from_slice(&[0; frame::HEAD]);
        req.render_block(&mut self.enc, fill, out);
        self.headers(out, at, id, !req.has_body());
        let body_len = match &req.body {
            Body::None => return,
            Body::Fixed(b) => b.len(),
            Body::Dyn(_) | Body::Grpc(_) | Body::GrpcEach(_) => {
                let h = self.held.len();
                match &req.body {
                    Body::Dyn(t) => {
                        t.render_into(fill, &mut self.held);
                    }
                    Body::Grpc(ms) => {
                        let gzip = cfg.grpc.is_some_and(|g| g.gzip);
                        for t in ms.iter() {
                            t.write_framed_as(fill, gzip, &mut self.held);
                        }
                    }
                    Body::GrpcEach(ms) => {
                        let gzip = cfg.grpc.is_some_and(|g| g.gzip);
                        let t = &ms[(fill.seq % ms.len() as u64) as usize];
                        t.write_framed_as(fill, gzip, &mut self.held);
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
    pub(super) fn headers(&mut self, out: &mut Vec<u8>, at: usize, id: u32, ends: bool) {
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
    pub(super) fn send_pending(&mut self, cfg: &Cfg, out: &mut Vec<u8>) {
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
    pub(super) fn send_pending_ctl(&mut self, cfg: &Cfg, ctl: &mut Vec<u8>) {
        let at = ctl.len();
        self.send_pending(cfg, ctl);
        self.ctl_data += ctl.len() - at;
    }
}
