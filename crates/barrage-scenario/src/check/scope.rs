//! What every part of the check shares: the file being checked ([`FileScope`], whose errors
//! name it), the counts and secrets a checked scenario reports, and the limits.

use crate::at::At;
use crate::{units, ScenarioError};
use std::path::PathBuf;
use std::time::Duration;

/// Header lines a step, or `protocol.headers`, may have (HTTP/2 frames a step's request from
/// at most 256 lines).
pub(crate) const MAX_HEADERS: usize = 100;

/// How many steps of each kind a scenario has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepCount {
    /// Steps a user runs after connecting, blocks and the steps inside them included.
    pub steps: usize,
    /// `on` rules.
    pub on: usize,
    /// Departure steps.
    pub leave: usize,
    /// Steps that send (a message or a request), departure steps included: the rows of the
    /// run's Steps table, which the run's header counts too; and how many are departure steps.
    pub sends: usize,
    pub leave_sends: usize,
    /// `pause` and `think` steps.
    pub pauses: usize,
}

/// One `{secret:NAME}` of a scenario: where it is, for the line that says it is unset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretUse {
    /// The environment variable.
    pub name: String,
    pub line: u32,
    /// The key, e.g. `steps[0].send`; for a `users.data` cell, the key and the cell.
    pub key: String,
}

/// A duration as a file's messages write it (`1.5s`, `250ms`).
pub(crate) fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{}s", (s * 100.0).round() / 100.0)
    } else {
        format!("{}ms", (s * 1e5).round() / 100.0)
    }
}

/// Errors of one file: each names the file.
pub(crate) struct FileScope<'a> {
    pub file: &'a str,
    pub dir: PathBuf,
}

impl FileScope<'_> {
    pub fn err(
        &self,
        line: u32,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> ScenarioError {
        ScenarioError {
            file: self.file.to_string(),
            line,
            key: key.into(),
            message: message.into(),
        }
    }

    /// A duration value, with the CLI's grammar; `positive` refuses zero.
    pub fn duration(
        &self,
        v: &At<String>,
        key: &str,
        positive: bool,
    ) -> Result<Duration, ScenarioError> {
        let f = if positive {
            units::positive_duration
        } else {
            units::duration
        };
        f(v).map_err(|e| self.err(v.line, key, e))
    }

    /// A file named by the scenario, relative to its folder.
    pub fn path(&self, p: &str) -> PathBuf {
        self.dir.join(p)
    }
}
