//! Scenario files as data: the model of a `barrage` scenario (target, users, steps, `on`
//! rules, departure steps, run settings), its parsing from TOML or YAML (one schema), its
//! validation, and the JSON Schema for editors. No sockets and no engine here: the binary
//! turns a [`Checked`] scenario into a plan; this crate must not depend on the engine.
//!
//! Key design decision: parse first into a model that mirrors the user's words with the line
//! of every value ([`At`]), then check it in one pass that knows the whole file (references,
//! captures used, limits), so every error is one line `FILE:LINE: KEY: what to fix`.
//! The quantity grammar (durations, rates, counts) is [`units`], shared with the CLI.

mod at;
mod check;
pub mod data;
mod file;
pub mod model;
pub mod protocol;
pub mod shape;
pub mod units;
pub mod vars;

pub use at::At;
pub use check::{Checked, Depart, SecretUse, StepCount, TargetKind};
pub use file::{Format, ScenarioError};
pub use shape::Shape;

use std::path::{Path, PathBuf};

/// Scenario files larger than this are refused before parsing.
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// Reads, parses and checks the scenario file at `path` (files it names, such as
/// `users.data`, are relative to its folder).
pub fn load(path: &Path) -> Result<Checked, ScenarioError> {
    let (text, format) = read(path)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    load_str(&path.display().to_string(), &text, format, &dir)
}

/// Reads the scenario file at `path` (its format from its name, at most [`MAX_FILE_BYTES`]),
/// for [`load_str`].
pub fn read(path: &Path) -> Result<(String, Format), ScenarioError> {
    let name = path.display().to_string();
    let whole = |m: String| ScenarioError {
        file: name.clone(),
        line: 0,
        key: String::new(),
        message: m,
    };
    let format = Format::of(path)
        .ok_or_else(|| whole("a scenario file ends in .toml, .yaml or .yml".into()))?;
    let meta = std::fs::metadata(path).map_err(|e| whole(format!("cannot read it: {e}")))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(whole("larger than 4 MiB; is this a scenario file?".into()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| whole(format!("cannot read it: {e}")))?;
    Ok((text, format))
}

/// Parses and checks scenario `text`; `name` is how errors call the file, `dir` where the
/// files it names are.
pub fn load_str(
    name: &str,
    text: &str,
    format: Format,
    dir: &Path,
) -> Result<Checked, ScenarioError> {
    let file = parse(name, text, format)?;
    check::check(file, name, &PathBuf::from(dir))
}

thread_local! {
    static PARSED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many scenario texts this thread has parsed: a run parses its file once (a test reads
/// this before and after resolving a run).
pub fn parsed_on_this_thread() -> u64 {
    PARSED.with(|p| p.get())
}

/// Parses `text` into the model (shape only: unknown keys, types, missing keys).
pub fn parse(name: &str, text: &str, format: Format) -> Result<model::File, ScenarioError> {
    PARSED.with(|p| p.set(p.get() + 1));
    match format {
        Format::Toml => {
            let _src = at::Source::enter(at::Syntax::Toml, text);
            toml::from_str(text).map_err(|e| {
                let line = e
                    .span()
                    .map_or(0, |s| at::line_of(&at::line_starts(text), s.start));
                located(name, text, format, line, e.message())
            })
        }
        Format::Yaml => {
            let _src = at::Source::enter(at::Syntax::Yaml, text);
            serde_saphyr::from_str(text).map_err(|e| {
                let line = e
                    .location()
                    .map_or(0, |l| u32::try_from(l.line()).unwrap_or(0));
                let msg = e.without_snippet().to_string();
                located(name, text, format, line, &msg)
            })
        }
    }
}

/// A parser's error as one line: its message without the position it may repeat, and the
/// key path read from the text at that line.
fn located(name: &str, text: &str, format: Format, line: u32, msg: &str) -> ScenarioError {
    let mut message = msg
        .split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    if let Some(i) = message.find(" at line ") {
        message.truncate(i);
    }
    let mut line = line;
    let mut key = check::key_at(text, format, line);
    // A missing key has no line of its own: name it under the table that lacks it.
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|m| m.split('`').next())
        .map(str::to_string)
    {
        let opens = text
            .lines()
            .nth((line as usize).saturating_sub(1))
            .map(str::trim)
            .is_some_and(|l| l.starts_with('[') || l.starts_with('-') || l.ends_with(':'));
        if opens && !key.is_empty() {
            key = format!("{key}.{field}");
        } else {
            (key, line) = (field.clone(), 0);
        }
        message = format!("missing; add {field} (see docs/scenarios.md)");
    }
    // The parsers' own advice ("set DuplicateKeyPolicy in Options") is not the user's.
    if message.starts_with("duplicate mapping key") || message.starts_with("duplicate key") {
        let last = key.rsplit('.').next().unwrap_or(&key).to_string();
        message = format!(
            "given twice in the same table; keep one {}",
            if last.is_empty() {
                "of them".to_string()
            } else {
                format!("`{last}`")
            }
        );
    }
    if let Some(t) = message.strip_prefix("invalid ") {
        if matches!(t, "u64" | "u32" | "i64") {
            message = "expected a whole number".to_string();
        }
    }
    ScenarioError {
        file: name.to_string(),
        line,
        key,
        message,
    }
}

/// The JSON Schema of scenario files, pretty-printed (`docs/scenario.schema.json`).
pub fn json_schema() -> String {
    let schema = schemars::generate::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<model::File>();
    let mut s = serde_json::to_string_pretty(&schema).expect("a schema is JSON");
    s.push('\n');
    s
}
