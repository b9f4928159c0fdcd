//! A result as a file: read and checked ([`read_json`], [`parse`]), written whole or not at all
//! ([`write_whole`]), and what can go wrong ([`ReportError`]).

use barrage_metrics::result::SCHEMA;
use barrage_metrics::RunResult;
use serde::Deserialize;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

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
    /// A second of a stream that is refused (see [`crate::stream::decode_second`], [`crate::stream::Order`]).
    #[error("{}, {place}{}: {why}", path.display(), second.as_ref().map(|s| format!(" ({s})")).unwrap_or_default())]
    Second {
        path: PathBuf,
        /// `line 12`, `stream.seconds[11]`.
        place: String,
        /// The second it claims to be, when it decoded.
        second: Option<String>,
        /// Boxed: the other variants are small, and Windows' paths make this one large.
        why: Box<crate::stream::SecondError>,
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

/// A result saved as JSON, read and checked ([`parse`]).
pub fn read_json(path: &Path) -> Result<RunResult, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, path)
}

/// What [`crate::load`] does after reading; `path` only names the origin in errors.
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
