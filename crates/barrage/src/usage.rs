//! `Usage`: a mistake in the command line or its files, holding the flag (or file, or
//! `target`) it is about, so every bad-input line starts the same way: with what to fix.
//!
//! Printed by `main` as `error: LINE` with exit code 2. The line is the flag and what follows
//! it, in one of three shapes: `FLAG: why` ([`Usage::new`]), `FLAG VALUE: why`
//! ([`Usage::value`]) and `FLAG does ...` when the flag is the subject of the sentence
//! ([`Usage::says`]); a file's own error that already names it is kept as it is
//! ([`Usage::file`]). The flag is written by `Display`, so no line can start otherwise.

use std::fmt;

#[derive(Debug)]
pub struct Usage {
    flag: String,
    /// What follows the flag on the line (`: why`, ` VALUE: why`, ` does ...`); for a file's
    /// own error, the whole line.
    rest: String,
    /// The line is `rest` alone: a file's error that names the file itself.
    named_inside: bool,
}

impl Usage {
    /// `FLAG: why`.
    pub fn new(flag: impl Into<String>, why: impl fmt::Display) -> Usage {
        Usage::shape(flag.into(), format!(": {why}"))
    }

    /// `FLAG VALUE: why`: the value as the user gave it (a path, a PID, an expression).
    pub fn value(
        flag: impl Into<String>,
        value: impl fmt::Display,
        why: impl fmt::Display,
    ) -> Usage {
        Usage::shape(flag.into(), format!(" {value}: {why}"))
    }

    /// `FLAG rest`: the flag is the subject (`--pipeline applies to closed-loop modes ...`).
    pub fn says(flag: impl Into<String>, rest: impl fmt::Display) -> Usage {
        Usage::shape(flag.into(), format!(" {rest}"))
    }

    /// A file's own error, which names the file already (`cannot read result file F: ...`).
    pub fn file(path: impl fmt::Display, e: impl fmt::Display) -> Usage {
        Usage {
            flag: path.to_string(),
            rest: e.to_string(),
            named_inside: true,
        }
    }

    fn shape(flag: String, rest: String) -> Usage {
        Usage {
            flag,
            rest,
            named_inside: false,
        }
    }

    /// The flag (or file, or `target`) to fix.
    pub fn flag(&self) -> &str {
        &self.flag
    }

    /// The same error with its text rewritten (secrets scrubbed, a shown form of a value).
    pub fn map(self, f: impl Fn(&str) -> String) -> Usage {
        Usage {
            flag: f(&self.flag),
            rest: f(&self.rest),
            named_inside: self.named_inside,
        }
    }
}

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.named_inside {
            f.write_str(&self.flag)?;
        }
        f.write_str(&self.rest)
    }
}

impl std::error::Error for Usage {}

/// An error and its causes in one line, each cause once: a message that already quotes its
/// source (thiserror's `{source}`) would otherwise print the OS error twice.
pub(crate) fn error_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain().map(|c| c.to_string()) {
        if line.contains(&cause) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&cause);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_starts_with_the_flag_it_holds() {
        let cases = [
            Usage::new("--threshold", "unknown metric 'p98'"),
            Usage::value("--monitor", 42, "no such process"),
            Usage::says("--pipeline", "applies to closed-loop modes"),
            Usage::new("-H/--header", "bad"),
        ];
        for u in &cases {
            assert!(u.to_string().starts_with(u.flag()), "{u}");
        }
        assert_eq!(cases[1].to_string(), "--monitor 42: no such process");
        assert_eq!(cases[1].flag(), "--monitor");
        let m = Usage::value("--body", "s3cr3t", "x").map(|s| s.replace("s3cr3t", "{secret:K}"));
        assert_eq!(m.to_string(), "--body {secret:K}: x");
        let f = Usage::file("a.json", "cannot read result file a.json: gone");
        assert_eq!(
            (f.flag(), f.to_string().as_str()),
            ("a.json", "cannot read result file a.json: gone")
        );
    }
}
