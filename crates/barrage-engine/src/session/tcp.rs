//! Raw TCP: the message as given, replies framed by `--expect` (see [`crate::framing`]).

use super::{Msg, Out, ProtoError, Rendered, Replies, Session};
use crate::framing::{Decoder, Framing};
use crate::message::{Fill, Template};
use crate::plan::Plan;

pub struct Cfg {
    message: Template,
    first: Option<Template>,
    framing: Framing,
}

pub struct Tcp {
    dec: Decoder,
}

impl Session for Tcp {
    type Cfg = Cfg;

    fn config(plan: &Plan) -> Cfg {
        Cfg {
            message: plan.message.clone(),
            first: plan.first_message.clone(),
            framing: plan.framing.clone(),
        }
    }

    fn new(_cfg: &Cfg) -> Self {
        Self {
            dec: Decoder::default(),
        }
    }

    fn reset(&mut self, _cfg: &Cfg) {
        self.dec.reset();
    }

    #[inline]
    fn render(&mut self, cfg: &Cfg, msg: Msg, fill: Fill, out: &mut Out) -> Rendered {
        let t = match (msg, &cfg.first) {
            (Msg::Opening(_), Some(f)) => f,
            _ => &cfg.message,
        };
        let at = out.buf.len();
        let len = t.render_into(fill, out.buf);
        if !t.is_static() || matches!(msg, Msg::Opening(_)) {
            out.keep(at..at + len);
        }
        Rendered {
            len: len as u32,
            step: 0,
        }
    }

    fn static_request(cfg: &Cfg, msg: Msg, _seq: u64) -> Option<(&[u8], Rendered)> {
        let raw = cfg.message.raw();
        let r = Rendered {
            len: raw.len() as u32,
            step: 0,
        };
        (msg == Msg::Load && cfg.message.is_static()).then_some((raw, r))
    }

    #[inline]
    fn input(&mut self, cfg: &Cfg, data: &[u8], r: &mut Replies) -> Result<(), ProtoError> {
        self.dec
            .feed(&cfg.framing, data, r)
            .map_err(ProtoError::new)
    }

    fn completes_on_write(cfg: &Cfg) -> bool {
        cfg.framing == Framing::None
    }
}

impl crate::framing::Sink for Replies<'_> {
    fn expect_len(&mut self) -> Option<u64> {
        self.ex.front().map(|f| f.len as u64)
    }

    fn body(&mut self, bytes: &[u8]) {
        Replies::body(self, bytes);
    }

    fn collecting(&self) -> bool {
        self.user.as_ref().is_some_and(|u| u.prog.collect)
    }

    fn frame(&mut self) {
        self.complete(None);
    }

    fn unexpected(&mut self, _bytes: &[u8]) {
        self.rec.counters.unexpected += 1;
    }
}
