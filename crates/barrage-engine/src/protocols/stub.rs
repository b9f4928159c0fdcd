//! The recipe's stub protocol (docs/protocol-recipe.md): `WORD <seq>` lines out (`--stub-word`,
//! default `STUB`), `OK <seq>` lines back, in order; OK replies counted (`stub_oks`).

use crate::message::Fill;
use crate::plan::{Plan, Protocol, StubPlan};
use crate::session::{Msg, Out, ProtoError, Rendered, Replies, Session};
use crate::spec::cx::{PlanCx, SpecError, Spoken};
use serde::{Deserialize, Serialize};
use std::io::Write;

/// The stub in the spec's words.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StubSpec {
    /// Escaped as `-m` reads it.
    pub word: String,
}

impl StubSpec {
    pub(crate) fn plan(&self, cx: &PlanCx) -> Result<Spoken, SpecError> {
        let word = cx.bytes("--stub-word", &self.word)?;
        Ok(Spoken::own_words(Protocol::Stub(StubPlan { word })))
    }
}

pub struct Stub {
    line: Vec<u8>,
}

impl Session for Stub {
    type Cfg = Vec<u8>;

    fn config(plan: &Plan) -> Vec<u8> {
        match &plan.protocol {
            Protocol::Stub(s) => s.word.clone(),
            other => unreachable!("stub session for a {} plan", other.name()),
        }
    }

    fn new(_cfg: &Vec<u8>) -> Self {
        Stub { line: Vec::new() }
    }

    fn reset(&mut self, _cfg: &Vec<u8>) {
        self.line.clear();
    }

    fn render(&mut self, word: &Vec<u8>, _msg: Msg, fill: Fill, out: &mut Out) -> Rendered {
        let at = out.buf.len();
        out.buf.extend_from_slice(word);
        let _ = writeln!(out.buf, " {}", fill.seq);
        Rendered {
            len: (out.buf.len() - at) as u32,
            step: 0,
        }
    }

    fn input(&mut self, _cfg: &Vec<u8>, data: &[u8], r: &mut Replies) -> Result<(), ProtoError> {
        for &b in data {
            if b != b'\n' {
                self.line.push(b);
                continue;
            }
            let ok = self.line.starts_with(b"OK ");
            self.line.clear();
            if !ok {
                return Err(ProtoError::new("a stub reply starts with OK"));
            }
            r.rec.counters.stub_oks += 1;
            r.complete(None);
        }
        Ok(())
    }
}
