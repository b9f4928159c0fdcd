//! Single values of a step: think ranges, HTTP status lists, JSON pointers, regular
//! expressions and capture sources. Each returns the message that follows `FILE:LINE: KEY: `.

use crate::model::Capture;
use crate::units;

/// `think`: a duration, or a range `A..B` with A <= B.
pub(super) fn think(t: &str) -> Result<(), String> {
    match t.split_once("..") {
        None => units::positive_duration(t).map(|_| ()),
        Some((a, b)) => {
            let (a, b) = (units::duration(a)?, units::positive_duration(b)?);
            if a > b {
                return Err(format!(
                    "'{t}': the range runs from the shorter to the longer time, e.g. 1s..3s"
                ));
            }
            Ok(())
        }
    }
}

/// `status`: codes (200), classes (2xx), ranges (200-299), separated by commas.
pub(super) fn status(s: &str) -> Result<(), String> {
    let bad = || format!("'{s}' is not a status list; write e.g. 200, 2xx, 200-299 or 200,204");
    let code = |c: &str| {
        c.trim()
            .parse::<u16>()
            .ok()
            .filter(|c| (100..=599).contains(c))
    };
    for part in s.split(',') {
        let p = part.trim();
        let ok = if let Some(d) = p.strip_suffix("xx") {
            matches!(d, "1" | "2" | "3" | "4" | "5")
        } else if let Some((a, b)) = p.split_once('-') {
            matches!((code(a), code(b)), (Some(a), Some(b)) if a <= b)
        } else {
            code(p).is_some()
        };
        if !ok {
            return Err(bad());
        }
    }
    Ok(())
}

/// A JSON pointer (RFC 6901): empty, or `/` then reference tokens (`~0`, `~1` escapes).
pub(super) fn pointer(p: &str) -> Result<(), String> {
    if !p.is_empty() && !p.starts_with('/') {
        return Err(format!(
            "'{p}' is not a JSON pointer; write it from the root, e.g. /data/token"
        ));
    }
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(format!(
                "'{p}': in a JSON pointer ~ is written ~0 and / inside a name ~1"
            ));
        }
    }
    Ok(())
}

pub(super) fn regex(r: &str) -> Result<regex::bytes::Regex, String> {
    regex::bytes::RegexBuilder::new(r)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| {
            let first = e
                .to_string()
                .lines()
                .last()
                .unwrap_or("")
                .trim()
                .to_string();
            format!(
                "'{}' is not a regular expression: {first}",
                r.escape_debug()
            )
        })
}

/// Exactly one source; its companions (`group`, `field`) only with it.
/// The values an integer field of type `t` holds.
pub(super) fn int_range(t: &str) -> (i128, i128) {
    let signed = t.starts_with('i');
    let bits = match t {
        "varint" => return (0, i128::from(u64::MAX)),
        "mqtt_varint" => return (0, 268_435_455),
        t if t.ends_with('8') => 8,
        t if t.contains("16") => 16,
        t if t.contains("32") => 32,
        _ => 64,
    };
    if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// An integer field's type, as the field language names it.
pub(super) fn int_type(t: &str) -> Result<(), String> {
    const TYPES: [&str; 16] = [
        "u8",
        "i8",
        "u16be",
        "u16le",
        "i16be",
        "i16le",
        "u32be",
        "u32le",
        "i32be",
        "i32le",
        "u64be",
        "u64le",
        "i64be",
        "i64le",
        "varint",
        "mqtt_varint",
    ];
    if TYPES.contains(&t) {
        Ok(())
    } else {
        Err(format!(
            "'{t}' is not an integer type: {}",
            TYPES.join(", ")
        ))
    }
}

pub(super) fn capture(c: &Capture, http: bool) -> Result<(), String> {
    let given: Vec<&str> = [
        ("json", c.json.is_some()),
        ("regex", c.regex.is_some()),
        ("split", c.split.is_some()),
        ("bytes", c.bytes.is_some()),
        ("header", c.header.is_some()),
        ("at", c.at.is_some() || c.type_.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, on)| on.then_some(k))
    .collect();
    match given.as_slice() {
        [] => {
            return Err(
                "give where the value comes from: json, regex, split (with field), bytes, header or at (with type)"
                    .into(),
            )
        }
        [_] => {}
        [a, b, ..] => return Err(format!("give one source, not {a} and {b}")),
    }
    if c.group.is_some() && c.regex.is_none() {
        return Err("group goes with regex".into());
    }
    if c.field.is_some() && c.split.is_none() {
        return Err("field goes with split".into());
    }
    match (&c.at, &c.type_) {
        (Some(_), None) => return Err("at goes with type = \"u16be\" (the field's type)".into()),
        (None, Some(_)) => return Err("type goes with at = N (the field's offset)".into()),
        (_, Some(t)) => int_type(t)?,
        _ => {}
    }
    if let Some(p) = &c.json {
        pointer(p)?;
    }
    if let Some(r) = &c.regex {
        let re = regex(r)?;
        let group = c.group.unwrap_or(1) as usize;
        if group >= re.captures_len() {
            return Err(format!(
                "'{}' has {} groups, so group {group} does not exist; add ( ) around the value",
                r.escape_debug(),
                re.captures_len() - 1
            ));
        }
    }
    if let Some(d) = &c.split {
        if d.is_empty() {
            return Err("split needs a delimiter, e.g. split = \",\" with field = 2".into());
        }
        if c.field.is_none() {
            return Err("split needs field = N (0-based)".into());
        }
    }
    if let Some(b) = &c.bytes {
        let bad =
            || format!("'{b}' is not a byte range; write START..END (END excluded) or START..");
        let (a, z) = b.split_once("..").ok_or_else(bad)?;
        let a: u64 = a.trim().parse().map_err(|_| bad())?;
        if !z.trim().is_empty() {
            let z: u64 = z.trim().parse().map_err(|_| bad())?;
            if z <= a {
                return Err(format!("'{b}' is empty; END must be above START"));
            }
        }
    }
    if let Some(h) = &c.header {
        if !http {
            return Err("header captures are for http:// targets".into());
        }
        if h.trim().is_empty() || h.contains(':') {
            return Err("header takes a header name, e.g. header = \"X-Session\"".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_grammars() {
        assert!(status("200, 2xx,200-299").is_ok());
        for bad in ["", "2x", "600", "300-200", "abc"] {
            assert!(status(bad).is_err(), "{bad}");
        }
        assert!(pointer("").is_ok() && pointer("/a/~0b/~1c").is_ok());
        assert!(pointer("a").is_err() && pointer("/a~2").is_err());
        assert!(think("1s..3s").is_ok() && think("500ms").is_ok());
        assert!(think("3s..1s").is_err() && think("0s").is_err());
        assert!(regex("(").is_err());
    }
}
