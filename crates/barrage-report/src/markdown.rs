//! Markdown: the report as GitHub-flavoured tables, ready to paste into a README or an issue.
//!
//! Same sections and figures as the HTML page (both come from `doc::build`); charts are left
//! out, their figures are in the tables. Cells are escaped for table syntax (`|`, line breaks)
//! and record strings in prose are put in code spans, so nothing from the record can turn
//! into markup.

use crate::doc::{self, Block};
use crate::Renderer;
use barrage_metrics::RunResult;
use std::io::{self, Write};

pub struct MarkdownRenderer;

impl Renderer for MarkdownRenderer {
    fn render(&self, r: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "# barrage report: {}", inline(&doc::target(r)))?;
        for s in doc::build(r) {
            let blocks: Vec<&Block> = s
                .blocks
                .iter()
                .filter(|b| !matches!(b, Block::Chart(_)))
                .collect();
            if blocks.is_empty() {
                continue;
            }
            writeln!(out, "\n## {}", s.title)?;
            for b in blocks {
                writeln!(out)?;
                block(b, out)?;
            }
        }
        Ok(())
    }
}

/// Text for a table cell or a line: no line breaks, no column separators, no HTML tags.
fn cell(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\r', '\n'], " ")
}

fn inline(s: &str) -> String {
    cell(s)
}

fn row(cells: &[String], out: &mut dyn Write) -> io::Result<()> {
    let cells: Vec<String> = cells.iter().map(|c| cell(c)).collect();
    writeln!(out, "| {} |", cells.join(" | "))
}

fn block(b: &Block, out: &mut dyn Write) -> io::Result<()> {
    match b {
        Block::Heading(h) => writeln!(out, "### {}", inline(h)),
        Block::Para(p) => writeln!(out, "{}", inline(p)),
        Block::Warning(w) => writeln!(out, "> **Warning:** {}", inline(w)),
        Block::Code(c) => {
            // A fence longer than any run of backticks inside cannot be closed early.
            let longest = c.split(|ch| ch != '`').map(str::len).max().unwrap_or(0);
            let fence = "`".repeat(longest.max(2) + 1);
            writeln!(out, "{fence}sh\n{}\n{fence}", c.replace(['\r', '\n'], " "))
        }
        Block::Kv(pairs) => {
            writeln!(out, "| | |\n|---|---|")?;
            for (k, v) in pairs {
                row(&[format!("**{k}**"), v.clone()], out)?;
            }
            Ok(())
        }
        Block::Table { head, rows } => {
            row(head, out)?;
            writeln!(out, "|{}", "---|".repeat(head.len()))?;
            for r in rows {
                row(r, out)?;
            }
            Ok(())
        }
        Block::Chart(_) => Ok(()),
    }
}
