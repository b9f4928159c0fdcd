//! barrage-report: renders a run's [`RunResult`] for people and for programs.
//!
//! One [`Renderer`] trait, one file per format (`text.rs`, `json.rs`, `markdown.rs`, `html.rs`;
//! the last two share their content, built by `doc.rs`), one [`Format`] arm per
//! file: adding a format is one file plus one arm, as in hyperfine's `src/export/`. Renderers
//! read only the [`RunResult`], never live state, so every report can be produced again offline
//! from a saved JSON result ([`load`]), like `vegeta attack | vegeta report`.
//!
//! Rendering writes to any `io::Write` and returns plain I/O errors; the functions that touch
//! files ([`load`], [`save`]) return a [`ReportError`] that names the file.

mod compare_html;
pub mod compare_text;
mod doc;
mod file;
pub mod find_max;
mod find_max_html;
pub mod fmt;
mod html;
mod json;
pub mod live;
mod markdown;
mod monitor_text;
mod protocols;
mod render;
pub mod series;
pub mod stream;
mod text;
mod verdicts;

/// `barrage find-max --report`: the record as a page (HTML or Markdown).
pub use file::{parse, write_whole, ReportError};
pub use find_max_html::report as find_max_report;
pub use render::Renderer;

pub use compare_html::render_comparison_html;
pub use compare_text::render_comparison_text;
pub use html::esc as html_escape;
pub use html::HtmlRenderer;
pub use json::JsonRenderer;
pub use markdown::{escape as markdown_escape, MarkdownRenderer};
pub use text::{headline, headline_rate, TextRenderer};
pub use verdicts::{baseline_verdict, regression_line};

use barrage_metrics::RunResult;
use std::io::{self, Write};
use std::path::Path;
use std::str::FromStr;

/// The output formats, by the names the CLI accepts (`text`, `json`, `markdown`, `html`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// The human summary (what the binary prints on stdout).
    Text,
    /// The canonical result, schema `barrage.result/1` (docs/result-schema.md).
    Json,
    /// The report as tables, for a README or an issue.
    Markdown,
    /// One self-contained page with tables and charts.
    Html,
}

impl Format {
    pub const ALL: [Format; 4] = [Format::Text, Format::Json, Format::Markdown, Format::Html];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Markdown => "markdown",
            Format::Html => "html",
        }
    }

    /// The usual file extension for this format, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Text => "txt",
            Format::Json => "json",
            Format::Markdown => "md",
            Format::Html => "html",
        }
    }

    /// The format a file name asks for, by its extension (case-insensitive): `.html`/`.htm`,
    /// `.md`/`.markdown`, `.json`, `.txt`. `None` for anything else.
    pub fn from_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "html" | "htm" => Some(Format::Html),
            "md" | "markdown" => Some(Format::Markdown),
            "json" => Some(Format::Json),
            "txt" => Some(Format::Text),
            _ => None,
        }
    }

    pub fn renderer(self) -> Box<dyn Renderer> {
        match self {
            Format::Text => Box::new(TextRenderer::default()),
            Format::Json => Box::new(JsonRenderer),
            Format::Markdown => Box::new(MarkdownRenderer),
            Format::Html => Box::new(HtmlRenderer),
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = ReportError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(s) || f.extension().eq_ignore_ascii_case(s))
            .ok_or_else(|| ReportError::UnknownFormat(s.to_string()))
    }
}
/// Render `r` in `format` to `out`.
pub fn render(r: &RunResult, format: Format, out: &mut dyn Write) -> io::Result<()> {
    format.renderer().render(r, out)
}

/// Render `r` in `format` into a string (reports are UTF-8).
pub fn render_to_string(r: &RunResult, format: Format) -> String {
    let mut buf = Vec::new();
    render(r, format, &mut buf).expect("rendering into a Vec cannot fail");
    String::from_utf8(buf).expect("renderers write UTF-8")
}

/// Write `r` in `format` to the file at `path` (created or truncated).
pub fn save(r: &RunResult, format: Format, path: impl AsRef<Path>) -> Result<(), ReportError> {
    let path = path.as_ref();
    write_whole(path, |out| render(r, format, out)).map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Read a result saved as JSON, for re-rendering offline. Unknown fields are ignored (newer
/// writers may add some); a missing or different `schema` is refused before anything else is
/// looked at, so that feeding the wrong file gives one clear message.
///
/// A run's stream directory (`--out DIR`) loads too: its `result.json`, or the result rebuilt
/// from the seconds it recorded (see [`stream`]).
pub fn load(path: impl AsRef<Path>) -> Result<RunResult, ReportError> {
    let path = path.as_ref();
    if stream::is_stream(path) {
        return stream::load_dir(path);
    }
    file::read_json(path)
}

#[cfg(test)]
mod write_whole_tests {
    use super::write_whole;
    use std::io;

    #[test]
    fn write_whole_replaces_all_or_nothing_and_writes_through_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("r.json");
        std::fs::write(&f, b"old").unwrap();
        let failed = write_whole(&f, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        });
        assert!(failed.is_err());
        assert_eq!(
            std::fs::read(&f).unwrap(),
            b"old",
            "the earlier file is kept"
        );
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        write_whole(&link, |w| w.write_all(b"new")).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&f).unwrap(), b"new");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
    }
}
