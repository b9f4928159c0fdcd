//! Captures and `{var}` references: where each capture is made, who may see it, and whether
//! every placeholder of a template resolves where it is used.

use super::TargetKind;
use super::{CheckResult, Def, Part, StepsCheck};
use crate::at::At;
use crate::check::values::capture;
use crate::model::Capture;
use crate::vars::{self, Ref};

impl StepsCheck<'_> {
    pub(super) fn captures(
        &mut self,
        caps: &std::collections::BTreeMap<String, At<Capture>>,
        key: &str,
        part: Part,
    ) -> CheckResult {
        for (name, c) in caps {
            let k = format!("{key}.capture.{name}");
            if !vars::is_ident(name)
                || vars::BUILTINS.contains(&name.as_str())
                || name == "row"
                || name == "rand"
                || name == "secret"
            {
                return Err(self.cx.err(c.line, k, "a capture name holds letters, digits and _, and is not a built-in (conn, seq, ts_us, user, row, rand, secret)"));
            }
            let on_side = matches!(part, Part::On(_));
            if let Some(d) = self.defs.iter_mut().find(|d| &d.name == name) {
                if d.rule.is_some() != on_side {
                    // A value a step captured and an `on` rule keeps current (a room's size
                    // from membership pushes): one variable, two writers.
                    capture(c, self.target == TargetKind::Http)
                        .map_err(|e| self.cx.err(c.line, k.clone(), e))?;
                    if !on_side {
                        // Defined by the step list from here on.
                        d.rule = None;
                        d.key = k;
                        d.line = c.line;
                    }
                    continue;
                }
                return Err(self.cx.err(
                    c.line,
                    k,
                    format!(
                        "{name} is already captured by {} (line {}); give this one another name",
                        d.key, d.line
                    ),
                ));
            }
            capture(c, self.target == TargetKind::Http)
                .map_err(|e| self.cx.err(c.line, k.clone(), e))?;
            self.defs.push(Def {
                name: name.clone(),
                key: k,
                line: c.line,
                used: false,
                rule: match part {
                    Part::On(i) => Some(i),
                    _ => None,
                },
            });
        }
        Ok(())
    }

    /// Every placeholder of `t` resolves from where it is used.
    pub(super) fn template(&mut self, t: &At<String>, key: &str, part: Part) -> CheckResult {
        let cx = self.cx;
        for (text, r) in vars::refs(t) {
            match r {
                Ref::Builtin => {}
                Ref::Secret(name) => self.secrets.push(super::super::SecretUse {
                    name: name.to_string(),
                    line: t.line,
                    key: key.to_string(),
                }),
                Ref::Bad(_, why) => return Err(cx.err(t.line, key, format!("{text}: {why}"))),
                Ref::Row(col) => match self.columns {
                    None => {
                        return Err(cx.err(
                            t.line,
                            key,
                            format!("{text} needs users.data = \"FILE.csv\" with a column {col}"),
                        ))
                    }
                    Some(cols) if !cols.iter().any(|c| c == col) => {
                        return Err(cx.err(
                            t.line,
                            key,
                            format!(
                                "{text}: users.data has no column {col} (columns: {})",
                                cols.join(", ")
                            ),
                        ))
                    }
                    Some(_) => {}
                },
                Ref::Capture(name) => {
                    let visible = |d: &Def| match (part, d.rule) {
                        (Part::Leave, _) => true,
                        (Part::Steps, None) => true,
                        (Part::On(i), Some(j)) => i == j,
                        _ => false,
                    };
                    match self.defs.iter_mut().find(|d| d.name == name) {
                        Some(d) if visible(d) => d.used = true,
                        Some(d) => {
                            return Err(cx.err(t.line, key, format!("{text} is captured by {}, which may not have run yet here (on rules fire at any time); use it in leave steps", d.key)))
                        }
                        None => {
                            let so_far: Vec<&str> = self.defs.iter().filter(|d| visible(d)).map(|d| d.name.as_str()).collect();
                            let so_far = if so_far.is_empty() { "none".to_string() } else { so_far.join(", ") };
                            return Err(cx.err(
                                t.line,
                                key,
                                format!("{text} is not defined here (captures so far: {so_far}; built-ins: {{conn}} {{seq}} {{ts_us}} {{user}} {{seq%N}} {{rand%N}} {{conn%N}} {{user%N}} {{secret:NAME}} {{row.COLUMN}})"),
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
