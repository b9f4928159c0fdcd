//! The key path at a line of the file's text, for the parsers' own errors (an unknown key, a
//! wrong type), which give a position but not the path: `[[steps]]` tables and YAML
//! sequences are numbered as the model's checks number them (`steps[2].send`).

use crate::Format;

/// The key path at 1-based `line` of `text` (empty when it cannot be told).
pub(crate) fn key_at(text: &str, format: Format, line: u32) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let Some(idx) = (line as usize).checked_sub(1).filter(|&i| i < lines.len()) else {
        return String::new();
    };
    match format {
        Format::Toml => toml_key(&lines, idx),
        Format::Yaml => yaml_key(&lines, idx),
    }
}

fn toml_key(lines: &[&str], idx: usize) -> String {
    let own = lines[idx].trim();
    let mut table = String::new();
    for (i, l) in lines[..=idx].iter().enumerate().rev() {
        let t = l.trim();
        if let Some(h) = t.strip_prefix("[[").and_then(|h| h.split("]]").next()) {
            let h = h.trim();
            let n = lines[..i]
                .iter()
                .filter(|x| {
                    x.trim()
                        .strip_prefix("[[")
                        .and_then(|x| x.split("]]").next())
                        .map(str::trim)
                        == Some(h)
                })
                .count();
            table = format!("{h}[{n}]");
            break;
        }
        if let Some(h) = t.strip_prefix('[').and_then(|h| h.split(']').next()) {
            table = h.trim().to_string();
            break;
        }
    }
    if own.starts_with('[') {
        return table;
    }
    let key = own
        .split('=')
        .next()
        .unwrap_or("")
        .trim()
        .trim_matches(['"', '\'']);
    if own.contains('=') && !key.is_empty() {
        if table.is_empty() {
            key.to_string()
        } else {
            format!("{table}.{key}")
        }
    } else {
        table
    }
}

fn indent(l: &str) -> usize {
    l.len() - l.trim_start().len()
}

/// A YAML line's key (`key: ...` or `- key: ...`), whether it opens a sequence item, and the
/// column of its key.
fn yaml_entry(l: &str) -> (Option<String>, bool, usize) {
    let t = l.trim_start();
    let (item, rest) = match t.strip_prefix('-') {
        Some(r) if r.is_empty() || r.starts_with(' ') => (true, r.trim_start()),
        _ => (false, t),
    };
    let key = rest
        .split_once(':')
        .map(|(k, _)| k.trim().trim_matches(['"', '\'']).to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('#') && !k.contains([' ', '{', '[']));
    (key, item, l.len() - rest.len())
}

fn skip(l: &str) -> bool {
    l.trim().is_empty() || l.trim_start().starts_with('#')
}

fn yaml_key(lines: &[&str], idx: usize) -> String {
    // Components, innermost first.
    let mut parts: Vec<String> = Vec::new();
    let (key, item, mut kc) = yaml_entry(lines[idx]);
    parts.extend(key);
    let mut cur = idx;
    let mut in_item = item.then(|| indent(lines[idx]));
    loop {
        if let Some(d) = in_item {
            // The sequence's parent: above, less indented (or a key at the dash's column).
            let parent = (0..cur).rev().find(|&j| {
                !skip(lines[j])
                    && (indent(lines[j]) < d || (indent(lines[j]) == d && !yaml_entry(lines[j]).1))
            });
            let from = parent.map_or(0, |p| p + 1);
            let n = (from..=cur)
                .filter(|&j| !skip(lines[j]) && indent(lines[j]) == d && yaml_entry(lines[j]).1)
                .count();
            parts.push(format!("[{}]", n.saturating_sub(1)));
            let Some(p) = parent else { break };
            let (pk, pitem, pkc) = yaml_entry(lines[p]);
            parts.extend(pk);
            (cur, kc, in_item) = (p, pkc, pitem.then(|| indent(lines[p])));
            continue;
        }
        let mut next = None;
        for j in (0..cur).rev() {
            if skip(lines[j]) {
                continue;
            }
            let (pk, pitem, pkc) = yaml_entry(lines[j]);
            if pitem && pkc == kc {
                // A sibling key that opens the item holding us.
                next = Some((j, kc, Some(indent(lines[j])), None));
                break;
            }
            if pkc < kc {
                next = Some((j, pkc, pitem.then(|| indent(lines[j])), pk));
                break;
            }
        }
        let Some((j, c, it, pk)) = next else { break };
        parts.extend(pk);
        (cur, kc, in_item) = (j, c, it);
    }
    let mut out = String::new();
    for p in parts.iter().rev() {
        if !out.is_empty() && !p.starts_with('[') {
            out.push('.');
        }
        out.push_str(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_paths() {
        let t = "target = \"x\"\n[users]\ncount = 1\n[[steps]]\nsend = \"a\"\n[[steps]]\nsned = \"b\"\n";
        assert_eq!(key_at(t, Format::Toml, 1), "target");
        assert_eq!(key_at(t, Format::Toml, 3), "users.count");
        assert_eq!(key_at(t, Format::Toml, 5), "steps[0].send");
        assert_eq!(key_at(t, Format::Toml, 7), "steps[1].sned");
        assert_eq!(key_at(t, Format::Toml, 99), "");
    }

    #[test]
    fn yaml_paths() {
        let t = "target: x\nusers:\n  count: 1\nsteps:\n  - send: a\n  - send: b\n    expct: c\n";
        assert_eq!(key_at(t, Format::Yaml, 1), "target");
        assert_eq!(key_at(t, Format::Yaml, 3), "users.count");
        assert_eq!(key_at(t, Format::Yaml, 5), "steps[0].send");
        assert_eq!(key_at(t, Format::Yaml, 7), "steps[1].expct");
        let t = "steps:\n- name: a\n  steps:\n    - send: x\n    - pause: 1s\n      bad: 2\n";
        assert_eq!(key_at(t, Format::Yaml, 6), "steps[0].steps[1].bad");
    }
}
