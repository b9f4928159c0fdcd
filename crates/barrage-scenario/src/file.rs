//! A scenario file's syntax ([`Format`]) and what is wrong with one ([`ScenarioError`]).

use std::fmt;
use std::path::Path;

/// A scenario that cannot be used: one line naming the file, the line (when known), the key
/// and what to fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ScenarioError {
    pub file: String,
    /// 1-based; 0 when the mistake has no single line (a missing key).
    pub line: u32,
    /// The key path, e.g. `users.arrive` or `steps[2].capture.token`.
    pub key: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        if !self.key.is_empty() {
            write!(f, ": {}", self.key)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// The two syntaxes of the one schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Toml,
    Yaml,
}

impl Format {
    /// From the file name: `.toml`, `.yaml`/`.yml`.
    pub fn of(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "toml" => Some(Format::Toml),
            "yaml" | "yml" => Some(Format::Yaml),
            _ => None,
        }
    }
}
