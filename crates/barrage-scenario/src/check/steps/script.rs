//! The script's keys: a file's `script`, a step's `call` (its message made by a function of
//! the script from `send` rendered) and `check` (its reply judged by one), an `on` rule's
//! `call`. The names are checked here as names; that the script defines them is the binary's
//! check, which compiles the script.

use super::{CheckResult, StepsCheck};
use crate::at::At;
use crate::model::{OnRule, Step};
use crate::protocol::TargetKind;

/// Whether `name` can be a Lua global function's name.
fn lua_name(name: &str) -> bool {
    let mut b = name.bytes();
    b.next()
        .is_some_and(|c| c == b'_' || c.is_ascii_alphabetic())
        && b.all(|c| c == b'_' || c.is_ascii_alphanumeric())
}

impl StepsCheck<'_> {
    /// A function name of the script: there is a script, the target speaks raw TCP, and the
    /// name is a name.
    fn script_fn(&self, v: &At<String>, key: &str) -> CheckResult {
        let cx = self.cx;
        if !self.script {
            return Err(cx.err(
                v.line,
                key,
                "names a function of the file's script, and the file has none: add \
                 script = \"FILE.lua\" at the top",
            ));
        }
        if self.target != TargetKind::Tcp {
            return Err(cx.err(
                v.line,
                key,
                "is for tcp:// targets (a script speaks raw TCP)",
            ));
        }
        if !lua_name(&v.value) {
            return Err(cx.err(
                v.line,
                key,
                format!(
                    "'{}' is not a function's name (letters, digits, _)",
                    v.value
                ),
            ));
        }
        Ok(())
    }

    /// A step's `call` and `check`.
    pub(super) fn script_keys(&self, s: &At<Step>, key: &str, kind: &str) -> CheckResult {
        if let Some(c) = &s.call {
            let k = format!("{key}.call");
            self.script_fn(c, &k)?;
            if kind != "send" {
                return Err(self.cx.err(
                    c.line,
                    k,
                    format!("makes a message from a send step's `send` (or from nothing), not a {kind} step's"),
                ));
            }
        }
        if let Some(c) = &s.check {
            let k = format!("{key}.check");
            self.script_fn(c, &k)?;
            if !matches!(kind, "send" | "fields") || self.framing_none {
                return Err(self.cx.err(
                    c.line,
                    k,
                    "judges a reply: it goes with a send or fields step that awaits one",
                ));
            }
        }
        Ok(())
    }

    /// An `on` rule's `call`: it makes the rule's reply.
    pub(super) fn on_call(&self, rule: &At<OnRule>, key: &str) -> CheckResult {
        let Some(c) = &rule.call else { return Ok(()) };
        let k = format!("{key}.call");
        self.script_fn(c, &k)?;
        if rule.reply.is_none() {
            return Err(self.cx.err(
                c.line,
                k,
                "makes the rule's reply from `reply` rendered: add reply = \"\" (or a template)",
            ));
        }
        Ok(())
    }
}
