//! A small YAML writer: block style, strings plain only when nothing could read them as
//! another type, multi-line text as literal blocks (exactly as written) when it can be.

pub(super) enum Yaml {
    Str(String),
    Int(u64),
    Bool(bool),
    Map(Vec<(String, Yaml)>),
    List(Vec<Yaml>),
}

pub(super) fn emit(out: &mut String, y: &Yaml, indent: usize) {
    let pad = " ".repeat(indent);
    match y {
        Yaml::Map(entries) => {
            for (k, v) in entries {
                out.push_str(&pad);
                out.push_str(&scalar(k));
                out.push(':');
                value_after(out, v, indent, true);
            }
        }
        Yaml::List(items) => {
            for item in items {
                match item {
                    Yaml::Map(e) if !e.is_empty() => {
                        let mut inner = String::new();
                        emit(&mut inner, item, indent + 2);
                        out.push_str(&pad);
                        out.push_str("- ");
                        out.push_str(&inner[indent + 2..]);
                    }
                    _ => {
                        out.push_str(&pad);
                        out.push('-');
                        value_after(out, item, indent, false);
                    }
                }
            }
        }
        other => {
            out.push_str(&pad);
            value_after(out, other, indent, false);
        }
    }
}

/// The value after `key:` or `-`, with its line break.
pub(super) fn value_after(out: &mut String, v: &Yaml, indent: usize, in_map: bool) {
    match v {
        Yaml::Map(e) if e.is_empty() => out.push_str(" {}\n"),
        Yaml::List(l) if l.is_empty() => out.push_str(" []\n"),
        Yaml::Map(_) => {
            out.push('\n');
            emit(out, v, indent + 2);
        }
        Yaml::List(_) => {
            out.push('\n');
            // Kubernetes style: a list under a key at the key's indentation.
            emit(out, v, if in_map { indent } else { indent + 2 });
        }
        Yaml::Int(i) => out.push_str(&format!(" {i}\n")),
        Yaml::Bool(b) => out.push_str(&format!(" {b}\n")),
        Yaml::Str(t) => match literal_block(t, indent + 2) {
            Some(block) => {
                out.push(' ');
                out.push_str(&block);
            }
            None => {
                out.push(' ');
                out.push_str(&scalar(t));
                out.push('\n');
            }
        },
    }
}

/// A string as a YAML scalar: plain when it is plainly a string, else JSON-quoted (a JSON
/// string is a YAML double-quoted scalar).
pub(super) fn scalar(s: &str) -> String {
    const WORDS: [&str; 11] = [
        "y", "n", "yes", "no", "true", "false", "on", "off", "null", "nan", "inf",
    ];
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '/')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c))
        && !WORDS.contains(&s.to_ascii_lowercase().as_str());
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("a string serializes")
    }
}

/// Multi-line text as a literal block (`|`, `|-` or `|+` by its trailing line breaks), its
/// lines at `indent`; `None` when a block could not hold it exactly (control characters, a
/// first line that starts with a space, a single line).
pub(super) fn literal_block(t: &str, indent: usize) -> Option<String> {
    if !t.contains('\n') || t.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return None;
    }
    if t.starts_with('\u{feff}') {
        return None;
    }
    let body = t.trim_end_matches('\n');
    let trailing = t.len() - body.len();
    let first = body.lines().find(|l| !l.is_empty())?;
    if first.starts_with([' ', '\t']) {
        return None;
    }
    let chomp = match trailing {
        0 => "-",
        1 => "",
        _ => "+",
    };
    let pad = " ".repeat(indent);
    let mut out = format!("|{chomp}\n");
    for line in body.split('\n') {
        if !line.is_empty() {
            out.push_str(&pad);
            out.push_str(line);
        }
        out.push('\n');
    }
    for _ in 1..trailing {
        out.push('\n');
    }
    Some(out)
}
