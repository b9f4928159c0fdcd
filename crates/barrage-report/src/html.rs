//! HTML: one self-contained page (styles, uPlot, data and drawing script inlined) that opens
//! from `file://` with no network access.
//!
//! Key decisions: the content comes from `doc::build`, like the Markdown report; every string
//! from the record is HTML-escaped here, and the chart data travels as a JSON blob in a
//! `<script type="application/json">` with `<`, `>` and `&` escaped, so no record value can
//! close a tag or start a script. A Content-Security-Policy forbids any fetch. The tables carry
//! every figure, so the page reads without JavaScript; the charts are an addition.

use crate::doc::{self, Block, Section};
use crate::Renderer;
use barrage_metrics::RunResult;
use std::io::{self, Write};

pub struct HtmlRenderer;

/// uPlot 1.6.32 (MIT, assets/uplot/LICENSE), vendored from the npm tarball.
pub(crate) const UPLOT_JS: &str = include_str!("../assets/uplot/uPlot.iife.min.js");
pub(crate) const UPLOT_CSS: &str = include_str!("../assets/uplot/uPlot.min.css");
pub(crate) const REPORT_CSS: &str = include_str!("../assets/report.css");
pub(crate) const REPORT_JS: &str = include_str!("../assets/report.js");
/// What the report, the comparison page, the find-max page and the live page share: axes sized to their labels,
/// durations in the unit that fits, the list of charts drawn.
pub(crate) const AXES_JS: &str = include_str!("../assets/axes.js");

/// Inline scripts and styles only; nothing may be fetched, not even an image.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; \
                   style-src 'unsafe-inline'; img-src data:";

/// Escapes text for element content and quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON that is safe inside a `<script>` element: no `<`, `>` or `&` survive (they only occur
/// inside JSON strings, where `\u003c` etc. mean the same).
pub(crate) fn script_json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v)
        .expect("chart data serializes")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

impl Renderer for HtmlRenderer {
    fn render(&self, r: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        let sections = doc::build(r);
        let target = esc(&doc::target(r));
        write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <meta name=\"generator\" content=\"barrage {}\">\n\
             <title>barrage report: {target}</title>\n\
             <style>{UPLOT_CSS}</style>\n<style>{REPORT_CSS}</style>\n</head>\n<body>\n\
             <header>\n<h1>barrage report</h1>\n<p class=\"target\">{target}</p>\n</header>\n",
            esc(&r.environment.barrage_version)
        )?;
        writeln!(out, "<nav>")?;
        for s in &sections {
            writeln!(out, "<a href=\"#{}\">{}</a>", s.id, esc(s.title))?;
        }
        writeln!(out, "</nav>\n<main>")?;
        let mut charts = Vec::new();
        for s in &sections {
            section(s, out, &mut charts)?;
        }
        writeln!(out, "</main>")?;
        let data = serde_json::json!({ "charts": charts });
        writeln!(
            out,
            "<script type=\"application/json\" id=\"barrage-data\">{}</script>",
            script_json(&data)
        )?;
        writeln!(out, "<script>{UPLOT_JS}</script>")?;
        writeln!(out, "<script>{AXES_JS}</script>")?;
        writeln!(out, "<script>{REPORT_JS}</script>")?;
        writeln!(out, "</body>\n</html>")
    }
}

fn section<'a>(
    s: &'a Section,
    out: &mut dyn Write,
    charts: &mut Vec<&'a doc::charts::Chart>,
) -> io::Result<()> {
    writeln!(out, "<section id=\"{}\">\n<h2>{}</h2>", s.id, esc(s.title))?;
    if s.blocks.iter().any(|b| matches!(b, Block::Chart(_))) {
        writeln!(
            out,
            "<noscript><p>The charts need JavaScript; every figure is also in the tables.</p></noscript>"
        )?;
    }
    for b in &s.blocks {
        match b {
            Block::Heading(h) => writeln!(out, "<h3>{}</h3>", esc(h))?,
            Block::Para(p) => writeln!(out, "<p>{}</p>", esc(p))?,
            Block::Warning(w) => writeln!(out, "<p class=\"warning\">⚠ {}</p>", esc(w))?,
            Block::Code(c) => writeln!(out, "<pre><code>{}</code></pre>", esc(c))?,
            Block::Kv(pairs) => {
                writeln!(out, "<div class=\"table-wrap\"><table class=\"kv\">")?;
                for (k, v) in pairs {
                    writeln!(out, "<tr><th>{}</th>{}</tr>", esc(k), td(v))?;
                }
                writeln!(out, "</table></div>")?;
            }
            Block::Table { head, rows } => {
                write!(out, "<div class=\"table-wrap\"><table>\n<thead><tr>")?;
                for h in head {
                    write!(out, "<th>{}</th>", esc(h))?;
                }
                writeln!(out, "</tr></thead>\n<tbody>")?;
                for row in rows {
                    let cells: String = row.iter().map(|c| td(c)).collect();
                    writeln!(out, "<tr>{cells}</tr>")?;
                }
                writeln!(out, "</tbody>\n</table></div>")?;
            }
            Block::Chart(c) => {
                writeln!(
                    out,
                    "<figure class=\"chart\"><div class=\"chart-box\" id=\"{}\"></div>\
                     <figcaption>{}: {} over {}</figcaption></figure>",
                    esc(&c.id),
                    esc(&c.title),
                    esc(&c.y_label),
                    esc(&c.x_label)
                )?;
                charts.push(c);
            }
        }
    }
    writeln!(out, "</section>")
}

/// A cell; grades get a class so that pass/warn/FAIL stand out.
fn td(v: &str) -> String {
    let class = match v.split([' ', ':']).next().unwrap_or("") {
        "pass" => " class=\"grade-pass\"",
        "warn" => " class=\"grade-warn\"",
        "FAIL" | "LEAK" => " class=\"grade-fail\"",
        _ => "",
    };
    format!("<td{class}>{}</td>", esc(v))
}
