//! `protocol.layout`: a binary reply header's fields by name ("kind:u8, len:u16be,
//! room:u32be"), so that `expect`, `match` and captures say `layout = "room"`. Resolved before
//! the checks into the offset and type they stand for (`at`, `type`), so everything after
//! this pass, the engine included, sees only offsets.

use super::scope::FileScope;
use crate::at::At;
use crate::model::{Capture, File, Step};
use crate::ScenarioError;
use std::collections::BTreeMap;

/// A named field: its offset and type.
type Fields = Vec<(String, u32, String)>;

/// Replaces every `layout = "NAME"` in the file by the `at` and `type` of that field.
pub(super) fn resolve(file: &mut File, cx: &FileScope) -> Result<(), ScenarioError> {
    let fields = match file.protocol.as_ref().and_then(|p| p.layout.as_ref()) {
        Some(l) => Some(parse(&l.value).map_err(|e| cx.err(l.line, "protocol.layout", e))?),
        None => None,
    };
    let r = Resolver {
        cx,
        fields: fields.as_ref(),
    };
    for (i, s) in file.steps.iter_mut().enumerate() {
        r.step(s, &format!("steps[{i}]"))?;
    }
    for (i, s) in file.leave.iter_mut().enumerate() {
        r.step(s, &format!("leave[{i}]"))?;
    }
    for (i, rule) in file.on.iter_mut().enumerate() {
        let key = format!("on[{i}]");
        let line = rule.line;
        let m = &mut rule.value.matches.value;
        if let Some(name) = m.layout.take() {
            let (at, t) = r.field(
                &name,
                m.at.is_some() || m.type_.is_some(),
                &format!("{key}.match"),
            )?;
            m.at = Some(At::new(at, name.line));
            m.type_ = Some(At::new(t, name.line));
        }
        r.captures(&mut rule.value.capture, &key, line)?;
    }
    Ok(())
}

struct Resolver<'a> {
    cx: &'a FileScope<'a>,
    fields: Option<&'a Fields>,
}

impl Resolver<'_> {
    fn step(&self, s: &mut At<Step>, key: &str) -> Result<(), ScenarioError> {
        let line = s.line;
        if let Some(e) = s.value.expect.as_mut() {
            if let Some(name) = e.value.layout.take() {
                let given = e.value.at.is_some() || e.value.type_.is_some();
                let (at, t) = self.field(&name, given, &format!("{key}.expect"))?;
                e.value.at = Some(At::new(at, name.line));
                e.value.type_ = Some(At::new(t, name.line));
            }
        }
        self.captures(&mut s.value.capture, key, line)?;
        for (i, inner) in s.value.steps.iter_mut().enumerate() {
            self.step(inner, &format!("{key}.steps[{i}]"))?;
        }
        Ok(())
    }

    fn captures(
        &self,
        caps: &mut BTreeMap<String, At<Capture>>,
        key: &str,
        _line: u32,
    ) -> Result<(), ScenarioError> {
        for (name, c) in caps.iter_mut() {
            if let Some(f) = c.value.layout.take() {
                let given = c.value.at.is_some() || c.value.type_.is_some();
                let (at, t) =
                    self.field(&At::new(f, c.line), given, &format!("{key}.capture.{name}"))?;
                c.value.at = Some(at);
                c.value.type_ = Some(t);
            }
        }
        Ok(())
    }

    /// The offset and type of the field `name` names.
    fn field(
        &self,
        name: &At<String>,
        given: bool,
        key: &str,
    ) -> Result<(u32, String), ScenarioError> {
        let cx = self.cx;
        if given {
            return Err(cx.err(
                name.line,
                key,
                "give layout = \"NAME\" or at and type, not both",
            ));
        }
        let Some(fields) = self.fields else {
            return Err(cx.err(
                name.line,
                key,
                format!(
                    "layout = \"{}\" names a field of protocol.layout; add one, e.g. [protocol] layout = \"kind:u8, len:u16be, {}:u32be\"",
                    name.value, name.value
                ),
            ));
        };
        match fields.iter().find(|(n, _, _)| *n == name.value) {
            Some((_, at, t)) => Ok((*at, t.clone())),
            None => {
                let names: Vec<&str> = fields.iter().map(|(n, _, _)| n.as_str()).collect();
                Err(cx.err(
                    name.line,
                    key,
                    format!(
                        "protocol.layout has no field {} (it has {})",
                        name.value,
                        names.join(", ")
                    ),
                ))
            }
        }
    }
}

/// The bytes of a fixed-width integer type; `None` for anything else.
fn width(t: &str) -> Option<u32> {
    let digits = t.trim_start_matches(['u', 'i']);
    let bits = digits
        .strip_suffix("be")
        .or_else(|| digits.strip_suffix("le"))
        .unwrap_or(digits);
    let signed_or_unsigned = t.starts_with('u') || t.starts_with('i');
    match (signed_or_unsigned, bits, t.len()) {
        (true, "8", 2) => Some(1),
        (true, "16" | "32" | "64", 5) => Some(bits.parse::<u32>().ok()? / 8),
        _ => None,
    }
}

/// `"kind:u8, len:u16be, bytes:2, room:u32be"`: the named fields with their offsets.
fn parse(text: &str) -> Result<Fields, String> {
    let mut out: Fields = Vec::new();
    let mut at = 0u32;
    for item in text.split(',').map(str::trim) {
        let Some((name, t)) = item.split_once(':') else {
            return Err(format!(
                "'{item}': write NAME:TYPE (room:u32be) or bytes:N (N bytes passed over)"
            ));
        };
        let (name, t) = (name.trim(), t.trim());
        if name == "bytes" {
            let n: u32 = t
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("'{item}': bytes:N passes over N bytes, N from 1"))?;
            at = at.saturating_add(n);
            continue;
        }
        let ok_name = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !ok_name {
            return Err(format!(
                "'{name}': a field's name holds letters, digits and _"
            ));
        }
        if out.iter().any(|(n, _, _)| n == name) {
            return Err(format!("'{name}' is named twice"));
        }
        let w = width(t).ok_or_else(|| {
            format!("'{item}': a layout's fields are fixed-width integers: u8, u16be, ..., i64le")
        })?;
        out.push((name.to_string(), at, t.to_string()));
        at = at.saturating_add(w);
    }
    if out.is_empty() {
        return Err("names no field; e.g. \"kind:u8, len:u16be, room:u32be\"".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_get_their_offsets() {
        let f = parse("kind:u8, len:u16be, bytes:3, room:u32le, big:i64be").unwrap();
        let got: Vec<(&str, u32, &str)> = f
            .iter()
            .map(|(n, a, t)| (n.as_str(), *a, t.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("kind", 0, "u8"),
                ("len", 1, "u16be"),
                ("room", 6, "u32le"),
                ("big", 10, "i64be")
            ]
        );
        for bad in [
            "",
            "kind",
            "kind:u24be",
            "kind:varint",
            "a:u8, a:u8",
            "1x:u8",
            "bytes:0",
            "k:u16",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
