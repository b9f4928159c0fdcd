//! JSON: the canonical result, pretty-printed, exactly as `load` reads it back.
//!
//! No projection or renaming happens here: the serde form of `RunResult` *is* the documented
//! schema (docs/result-schema.md), so the file and the in-memory record cannot drift apart.

use crate::Renderer;
use barrage_metrics::RunResult;
use std::io::{self, Write};

pub struct JsonRenderer;

impl Renderer for JsonRenderer {
    fn render(&self, r: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, r)?;
        out.write_all(b"\n")
    }
}
