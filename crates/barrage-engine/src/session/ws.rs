//! WebSocket (RFC 6455): the upgrade handshake, then one data message per request; a data
//! message from the server completes the oldest request. Pings are answered, close frames
//! answered and recorded.

use super::{Close, Msg, Out, Owed, ProtoError, Rendered, Replies, Session};
use crate::http::Limits;
use crate::message::{Fill, Template};
use crate::plan::{Plan, Protocol, WsPlan};
use crate::ws::{FrameDecoder, FrameSink, Handshake, HandshakeDecoder, HandshakeSpec, OpCode};
use barrage_metrics::ErrorClass;

pub struct Cfg {
    ws: WsPlan,
    message: Template,
    op: OpCode,
    on_write: bool,
}

pub struct Ws {
    /// The upgrade response decoder while the handshake is under way.
    upgrade: Option<Box<HandshakeDecoder>>,
    frames: FrameDecoder,
    /// The pong owed for the latest ping while the socket was backlogged (RFC 6455 lets only
    /// the most recent ping be answered); written when it drains. A thin box: 8 bytes on
    /// every connection, allocated only when a pong had to wait.
    owed: Option<Box<Pong>>,
}

/// A masked pong frame: at most 2 + 4 + 125 bytes.
struct Pong {
    len: u8,
    bytes: [u8; 131],
}

fn mask(out: &mut Out) -> [u8; 4] {
    (out.rng.next_u64() as u32).to_le_bytes()
}

impl Session for Ws {
    type Cfg = Cfg;

    fn config(plan: &Plan) -> Cfg {
        match &plan.protocol {
            Protocol::Ws(w) => Cfg {
                ws: w.clone(),
                message: plan.message.clone(),
                op: if w.binary {
                    OpCode::Binary
                } else {
                    OpCode::Text
                },
                on_write: plan.framing == crate::framing::Framing::None,
            },
            other => unreachable!("WebSocket session for a {} plan", other.name()),
        }
    }

    fn new(cfg: &Cfg) -> Self {
        Self {
            upgrade: None,
            frames: FrameDecoder::new(cfg.ws.max_message),
            owed: None,
        }
    }

    fn reset(&mut self, _cfg: &Cfg) {
        self.upgrade = None;
        self.frames.reset();
        self.owed = None;
    }

    fn open(&mut self, cfg: &Cfg, out: &mut Out) -> Result<bool, ProtoError> {
        let mut raw = [0u8; 16];
        for chunk in raw.chunks_mut(8) {
            chunk.copy_from_slice(&out.rng.next_u64().to_le_bytes());
        }
        let key = crate::ws::new_key(raw);
        let w = &cfg.ws;
        let spec = HandshakeSpec {
            host_header: &w.host_header,
            path: &w.path,
            headers: &w.headers,
            subprotocol: w.subprotocol.as_deref(),
        };
        crate::ws::handshake_request(&spec, &key, out.buf).map_err(ProtoError::new)?;
        self.upgrade = Some(Box::new(HandshakeDecoder::new(
            &key,
            w.subprotocol.as_deref(),
            Limits::default(),
        )));
        Ok(true)
    }

    #[inline]
    fn render(&mut self, cfg: &Cfg, _msg: Msg, fill: Fill, out: &mut Out) -> Rendered {
        let at = out.buf.len();
        let len = cfg.message.render_into(fill, out.buf);
        if !cfg.message.is_static() {
            out.keep(at..at + len);
        }
        let m = mask(out);
        crate::ws::frame_in_place(cfg.op, out.buf, at, m);
        Rendered {
            len: len as u32,
            step: 0,
        }
    }

    fn frame_step(&mut self, cfg: &Cfg, out: &mut Out, start: usize) -> u32 {
        let len = out.buf.len() - start;
        let m = mask(out);
        crate::ws::frame_in_place(cfg.op, out.buf, start, m);
        len as u32
    }

    fn input(&mut self, _cfg: &Cfg, data: &[u8], r: &mut Replies) -> Result<(), ProtoError> {
        if let Some(hs) = self.upgrade.as_mut() {
            return match hs.feed(data).map_err(ProtoError::new)? {
                Handshake::Incomplete => Ok(()),
                Handshake::Done { consumed } => {
                    self.upgrade = None;
                    r.handshake_done(consumed);
                    Ok(())
                }
            };
        }
        self.frames
            .feed(data, &mut Sink { r })
            .map_err(ProtoError::new)
    }

    fn eof(&mut self, _cfg: &Cfg, r: &mut Replies) -> Result<bool, ProtoError> {
        r.rec.counters.ws_close.add(1006, 1);
        Ok(false)
    }

    fn goodbye(&mut self, _cfg: &Cfg, out: &mut Out) {
        if self.upgrade.is_none() {
            let m = mask(out);
            crate::ws::close_frame(1000, m, out.buf);
        }
    }

    fn completes_on_write(cfg: &Cfg) -> bool {
        cfg.on_write
    }

    fn owed(&mut self) -> Option<&mut impl Owed> {
        Some(self)
    }
}

/// The pong for the latest ping only (RFC 6455 lets a ping go unanswered when a newer one
/// came).
impl Owed for Ws {
    fn in_order(&self) -> bool {
        false
    }

    fn owe(&mut self, ctl: &[u8]) {
        // `ctl` holds one pong (pings are coalesced to the latest) unless a close came too,
        // and a close answer is never kept.
        if ctl.len() <= 131 {
            let o = self.owed.get_or_insert_with(|| {
                Box::new(Pong {
                    len: 0,
                    bytes: [0; 131],
                })
            });
            o.bytes[..ctl.len()].copy_from_slice(ctl);
            o.len = ctl.len() as u8;
        }
    }

    fn take(&mut self) -> Option<Box<[u8]>> {
        self.owed
            .take()
            .map(|o| o.bytes[..o.len as usize].to_vec().into_boxed_slice())
    }
}

struct Sink<'r, 'a> {
    r: &'r mut Replies<'a>,
}

impl Sink<'_, '_> {
    fn mask(&mut self) -> [u8; 4] {
        (self.r.rng.next_u64() as u32).to_le_bytes()
    }
}

impl FrameSink for Sink<'_, '_> {
    fn data(&mut self, bytes: &[u8]) {
        // A user looks into every message (pushes too); otherwise only replies are checked.
        if !self.r.ex.is_empty() || self.r.is_user() {
            self.r.body(bytes);
        }
    }

    fn message(&mut self, _op: OpCode, len: u64) {
        if self.r.verifying() && self.r.ex.front().is_some_and(|f| f.len as u64 != len) {
            self.r.mismatch();
        }
        self.r.complete(None);
    }

    fn ping(&mut self, payload: &[u8]) {
        if self.r.close.is_some() {
            return; // closing: nothing more is answered
        }
        // Only the latest ping of a read is answered (RFC 6455 5.5.3 allows a pong for just
        // the most recently processed ping): a ping flood costs one pong per read, not one
        // per ping. Until a close, `ctl` holds nothing but that pong.
        self.r.ctl.clear();
        let m = self.mask();
        crate::ws::encode_frame(OpCode::Pong, payload, m, self.r.ctl);
    }

    fn close(&mut self, code: Option<u16>, _reason: &[u8]) {
        if self.r.close.is_some() {
            return;
        }
        let code_or = code.unwrap_or(1005);
        self.r.rec.counters.ws_close.add(code_or, 1);
        // Answer the close (echoing its code, as RFC 6455 asks), then drop the connection.
        let m = self.mask();
        crate::ws::close_frame(code.unwrap_or(1000), m, self.r.ctl);
        let class = match code {
            None | Some(1000) | Some(1001) => ErrorClass::ClosedByPeer,
            Some(_) => ErrorClass::WsClose,
        };
        self.r.close = Some(Close::Fail(class, format!("close code {code_or}")));
    }
}
