//! A throw-away stub protocol: `STUB <seq>\n` out, a line starting `OK ` back, in order.

use super::{Msg, Out, ProtoError, Rendered, Replies, Session};
use crate::message::Fill;
use crate::plan::Plan;
use std::io::Write;

pub struct Stub {
    in_line: bool,
    ok: bool,
    at: u8,
}

impl Session for Stub {
    type Cfg = ();

    fn config(_plan: &Plan) {}

    fn new(_cfg: &()) -> Self {
        Stub {
            in_line: false,
            ok: true,
            at: 0,
        }
    }

    fn reset(&mut self, cfg: &()) {
        *self = Self::new(cfg);
    }

    fn render(&mut self, _cfg: &(), _msg: Msg, fill: Fill, out: &mut Out) -> Rendered {
        let at = out.buf.len();
        let _ = writeln!(out.buf, "STUB {}", fill.seq);
        out.keep(at..out.buf.len());
        Rendered {
            len: (out.buf.len() - at) as u32,
            step: 0,
        }
    }

    fn input(&mut self, _cfg: &(), data: &[u8], r: &mut Replies) -> Result<(), ProtoError> {
        for &b in data {
            if b == b'\n' {
                if !self.ok || self.at < 3 {
                    return Err(ProtoError::new("a stub reply starts with OK"));
                }
                r.complete(None);
                (self.in_line, self.ok, self.at) = (false, true, 0);
                continue;
            }
            self.in_line = true;
            if self.at < 3 {
                self.ok &= b"OK "[self.at as usize] == b;
                self.at += 1;
            }
        }
        Ok(())
    }
}
