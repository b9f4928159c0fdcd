//! `https://` without a version asked for: each connection offers `h2` and `http/1.1` by
//! ALPN and speaks what the server chose, HTTP/2 ([`H2`]) or HTTP/1.1 ([`Http`]); the
//! connections of each kind are counted (`h2.connections`, `h2.http1_connections`).

use super::h2::{self, H2};
use super::http::{self, Http};
use super::{Msg, Out, Owed, ProtoError, Rendered, Replies, Session, Streams};
use crate::message::Fill;
use crate::plan::{Plan, Protocol};
use barrage_metrics::Recorder;

pub struct Cfg {
    h1: http::Cfg,
    h2: h2::Cfg,
}

/// One connection: HTTP/1.1 until its ALPN says h2.
pub enum AnyHttp {
    H1(Http),
    H2(Box<H2>),
}

/// Both versions' methods, on the one the connection speaks.
macro_rules! each {
    ($self:ident, $cfg:ident, $s:ident, $c:ident => $e:expr) => {
        match $self {
            AnyHttp::H1($s) => {
                let $c = &$cfg.h1;
                $e
            }
            AnyHttp::H2($s) => {
                let $c = &$cfg.h2;
                $e
            }
        }
    };
}

impl Session for AnyHttp {
    type Cfg = Cfg;

    fn config(plan: &Plan) -> Cfg {
        match &plan.protocol {
            Protocol::HttpAuto(a) => Cfg {
                h1: http::Cfg::of(&a.h1),
                h2: h2::Cfg::of(&a.h2),
            },
            other => unreachable!("HTTPS session for a {} plan", other.name()),
        }
    }

    fn new(cfg: &Cfg) -> Self {
        AnyHttp::H1(Http::new(&cfg.h1))
    }

    fn reset(&mut self, cfg: &Cfg) {
        each!(self, cfg, s, c => s.reset(c))
    }

    fn negotiated(
        &mut self,
        cfg: &Cfg,
        alpn: Option<&[u8]>,
        rec: &mut Recorder,
    ) -> Result<(), ProtoError> {
        let h2 = alpn == Some(b"h2");
        match (h2, &mut *self) {
            (true, AnyHttp::H1(_)) => *self = AnyHttp::H2(Box::new(H2::new(&cfg.h2))),
            (false, AnyHttp::H2(_)) => *self = AnyHttp::H1(Http::new(&cfg.h1)),
            _ => {}
        }
        if !h2 {
            rec.counters.h2.http1_connections += 1;
        }
        Ok(())
    }

    fn open(&mut self, cfg: &Cfg, out: &mut Out) -> Result<bool, ProtoError> {
        each!(self, cfg, s, c => s.open(c, out))
    }

    fn frame_step(&mut self, cfg: &Cfg, out: &mut Out, start: usize) -> u32 {
        each!(self, cfg, s, c => s.frame_step(c, out, start))
    }

    fn render(&mut self, cfg: &Cfg, msg: Msg, fill: Fill, out: &mut Out) -> Rendered {
        each!(self, cfg, s, c => s.render(c, msg, fill, out))
    }

    fn counts(&mut self, rec: &mut Recorder) {
        if let AnyHttp::H2(s) = self {
            s.counts(rec)
        }
    }

    fn input(&mut self, cfg: &Cfg, data: &[u8], r: &mut Replies) -> Result<(), ProtoError> {
        each!(self, cfg, s, c => s.input(c, data, r))
    }

    fn eof(&mut self, cfg: &Cfg, r: &mut Replies) -> Result<bool, ProtoError> {
        each!(self, cfg, s, c => s.eof(c, r))
    }

    fn goodbye(&mut self, cfg: &Cfg, out: &mut Out) {
        each!(self, cfg, s, c => s.goodbye(c, out))
    }

    // Only an HTTP/2 connection has streams under a limit, and control answers to keep.
    fn streams(&mut self) -> Option<&mut impl Streams> {
        match self {
            AnyHttp::H2(s) => s.streams(),
            AnyHttp::H1(_) => None,
        }
    }

    fn owed(&mut self) -> Option<&mut impl Owed> {
        match self {
            AnyHttp::H2(s) => s.owed(),
            AnyHttp::H1(_) => None,
        }
    }
}
