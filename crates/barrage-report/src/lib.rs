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
pub mod find_max;
mod find_max_html;
pub mod fmt;
mod html;
mod json;
pub mod live;
mod markdown;
mod monitor_text;
mod protocols;
pub mod series;
pub mod stream;
mod text;
mod verdicts;

/// `barrage find-max --report`: the record as a page (HTML or Markdown).
pub use find_max_html::report as find_max_report;

pub use compare_html::render_comparison_html;
pub use compare_text::render_comparison_text;
pub use html::esc as html_escape;
pub use html::HtmlRenderer;
pub use json::JsonRenderer;
pub use markdown::{escape as markdown_escape, MarkdownRenderer};
pub use text::{headline, headline_rate, TextRenderer};
pub use verdicts::{baseline_verdict, regression_line};

use barrage_metrics::result::SCHEMA;
use barrage_metrics::RunResult;
use serde::Deserialize;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Renders a finished run into one output format.
pub trait Renderer {
    fn render(&self, r: &RunResult, out: &mut dyn Write) -> io::Result<()>;
}

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

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot read result file {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot write report {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error("{} is not a valid barrage result (JSON): {source}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// `found` is the `schema` value as written in the file (`None` when absent).
    #[error("{}", schema_message(path, found.as_deref()))]
    Schema {
        path: PathBuf,
        found: Option<String>,
    },
    #[error("unknown report format {0:?} (expected one of: text, json, markdown, html)")]
    UnknownFormat(String),
    #[error("{} is a result without its seconds: only a shard's --json result (--shard I/N) embeds them; merge the shards' --out directories or --json results", path.display())]
    NoStream { path: PathBuf },
    /// A second of a stream that is refused (see [`stream::decode_second`], [`stream::Order`]).
    #[error("{}, {place}{}: {why}", path.display(), second.as_ref().map(|s| format!(" ({s})")).unwrap_or_default())]
    Second {
        path: PathBuf,
        /// `line 12`, `stream.seconds[11]`.
        place: String,
        /// The second it claims to be, when it decoded.
        second: Option<String>,
        /// Boxed: the other variants are small, and Windows' paths make this one large.
        why: Box<stream::SecondError>,
    },
}

fn schema_message(path: &Path, found: Option<&str>) -> String {
    match found {
        None => format!(
            "{} is not a barrage result: it has no \"schema\" field (expected {SCHEMA:?})",
            path.display()
        ),
        Some(s) => format!(
            "{} has schema {s:?}, but this barrage reads {SCHEMA:?} only",
            path.display()
        ),
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

/// Writes a file all or nothing: a regular file (or a new one) is written to a temporary file
/// beside it, synced and renamed over it, so a failed write (a full disk) leaves the earlier
/// file as it was and no torn one (through a symlink, the file it names); anything else
/// (`/dev/stdout`, a FIFO, a device) is written in place.
pub fn write_whole(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let in_place = std::fs::metadata(path).is_ok_and(|m| !m.is_file());
    // A symlink is written through: the file it names is replaced, the link stays.
    let real;
    let path = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() && !in_place => {
            real = std::fs::canonicalize(path)?;
            real.as_path()
        }
        _ => path,
    };
    if in_place {
        let mut out = io::BufWriter::new(std::fs::OpenOptions::new().write(true).open(path)?);
        fill(&mut out)?;
        return out.flush();
    }
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    // A new file (never one that is there, nor a link planted at the name), readable like
    // the one it replaces.
    let (file, tmp) = {
        let mut attempt = 0u32;
        loop {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let mut tmp_name = std::ffi::OsString::from(".");
            tmp_name.push(name);
            tmp_name.push(format!(".{}.{nanos:08x}{attempt}.tmp", std::process::id()));
            let tmp = path.with_file_name(tmp_name);
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
            {
                Ok(f) => break (f, tmp),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    };
    if let Ok(m) = std::fs::metadata(path) {
        let _ = file.set_permissions(m.permissions());
    }
    let result = (|| {
        let mut out = io::BufWriter::new(file);
        fill(&mut out)?;
        let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
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
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, path)
}

/// What [`load`] does after reading; `path` only names the origin in errors.
pub fn parse(text: &str, path: &Path) -> Result<RunResult, ReportError> {
    #[derive(Deserialize)]
    struct Probe {
        schema: Option<serde_json::Value>,
    }
    let json_err = |source| ReportError::Json {
        path: path.to_path_buf(),
        source,
    };
    let probe: Probe = serde_json::from_str(text).map_err(json_err)?;
    match probe.schema {
        Some(serde_json::Value::String(s)) if s == SCHEMA => {}
        other => {
            return Err(ReportError::Schema {
                path: path.to_path_buf(),
                found: other.map(|v| match v {
                    serde_json::Value::String(s) => s,
                    v => v.to_string(),
                }),
            })
        }
    }
    let mut r: RunResult = serde_json::from_str(text).map_err(json_err)?;
    r.summary.fill_legacy();
    if let Some(a) = &mut r.analysis {
        a.fill_legacy();
    }
    Ok(r)
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
