//! Markdown: the report as GitHub-flavoured tables, ready to paste into a README or an issue.
//!
//! Same sections and figures as the HTML page (both come from `doc::build`); charts are left
//! out, their figures are in the tables. Every string from the record goes through [`escape`]
//! (table syntax, emphasis, code spans, links, HTML, line breaks), so nothing from the record
//! can turn into markup.

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

/// Text from a record for a Markdown table cell or a line, shown literally: nothing in it can
/// become markup. The one escaper of every Markdown barrage writes (reports, comparisons).
///
/// Backslash-escaped: `\`, `` ` `` (code spans), `*` (emphasis, intraword too), `[` `]`
/// (links), `|` (table cells), and `_` where it could open or close emphasis (at a word
/// boundary; `not_sent` stays as it is, as GFM treats it literally). HTML is neutralised as
/// entities (`&`, `<`, `>`), and line breaks become spaces (a cell or line is one line).
pub fn escape(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let word = |i: Option<usize>| {
        i.and_then(|i| chars.get(i))
            .is_some_and(|c| c.is_alphanumeric())
    };
    let mut out = String::with_capacity(s.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\\' | '`' | '*' | '[' | ']' | '|' => {
                out.push('\\');
                out.push(c);
            }
            '_' if !(word(i.checked_sub(1)) && word(Some(i + 1))) => out.push_str("\\_"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' | '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn inline(s: &str) -> String {
    escape(s)
}

fn row(cells: &[String], out: &mut dyn Write) -> io::Result<()> {
    let cells: Vec<String> = cells.iter().map(|c| escape(c)).collect();
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
                writeln!(out, "| **{}** | {} |", escape(k), escape(v))?;
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

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn tricky_record_strings_stay_literal() {
        for (raw, want) in [
            ("a|b", "a\\|b"),
            ("`rm -rf`", "\\`rm -rf\\`"),
            ("*bold* and 2*3", "\\*bold\\* and 2\\*3"),
            ("_em_ not_sent __x__", "\\_em\\_ not_sent \\_\\_x\\_\\_"),
            ("<script>&amp;", "&lt;script&gt;&amp;amp;"),
            ("line1\nline2\r\n", "line1 line2  "),
            ("[x](http://e)", "\\[x\\](http://e)"),
            ("C:\\tmp", "C:\\\\tmp"),
            ("p99 < 20ms", "p99 &lt; 20ms"),
        ] {
            assert_eq!(escape(raw), want, "{raw:?}");
        }
    }
}
