//! `{var}` references in templates: which names a template uses, so that every one can be
//! resolved at load time (a capture defined earlier, a CSV column, a built-in).
//!
//! A placeholder is `{` + a name + `}` where the name starts with a letter or `_` and holds no
//! space, quote or brace; anything else between braces (JSON such as `{"op":"join"}`) is
//! literal text. This is the engine's rule for `{conn}`/`{seq}` widened to named values.

/// Built-in values every template may use.
pub const BUILTINS: [&str; 5] = ["conn", "seq", "ts_us", "user", "stamp"];

/// What one placeholder refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ref<'a> {
    /// `{conn}`, `{seq}`, `{ts_us}`, `{user}`, `{seq%N}`, `{rand%N}`, `{conn%N}`, `{user%N}`.
    Builtin,
    /// `{secret:NAME}`, filled from the environment at plan time.
    Secret(&'a str),
    /// `{row.COLUMN}` from `users.data`.
    Row(&'a str),
    /// A captured value.
    Capture(&'a str),
    /// Malformed: the placeholder text and why.
    Bad(&'a str, &'static str),
}

/// The placeholders of `template`, in order, with their text (`{name}`).
pub fn refs(template: &str) -> Vec<(&str, Ref<'_>)> {
    let mut out = Vec::new();
    let b = template.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'{' {
            i += 1;
            continue;
        }
        let rest = &template[i + 1..];
        let Some(end) =
            rest.find(|c: char| c == '}' || c == '{' || c.is_whitespace() || c == '"' || c == '\'')
        else {
            break;
        };
        let starts_name = rest
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !starts_name || rest.as_bytes()[end] != b'}' {
            i += 1;
            continue;
        }
        let name = &rest[..end];
        out.push((&template[i..i + end + 2], classify(name)));
        i += end + 2;
    }
    out
}

fn classify(name: &str) -> Ref<'_> {
    if BUILTINS.contains(&name) {
        return Ref::Builtin;
    }
    if let Some(n) = name
        .strip_prefix("seq%")
        .or_else(|| name.strip_prefix("rand%"))
        .or_else(|| name.strip_prefix("conn%"))
        .or_else(|| name.strip_prefix("user%"))
    {
        return match n.parse::<u64>() {
            Ok(v) if v > 0 => Ref::Builtin,
            _ => Ref::Bad(
                name,
                "write {seq%N}, {rand%N}, {conn%N} or {user%N} with N a whole number from 1",
            ),
        };
    }
    if let Some(v) = name.strip_prefix("secret:") {
        return if is_ident(v) {
            Ref::Secret(v)
        } else {
            Ref::Bad(
                name,
                "write {secret:NAME} with NAME an environment variable name",
            )
        };
    }
    if let Some(col) = name.strip_prefix("row.") {
        return if col.is_empty() {
            Ref::Bad(
                name,
                "write {row.COLUMN} with COLUMN a header of users.data",
            )
        } else {
            Ref::Row(col)
        };
    }
    if is_ident(name) {
        Ref::Capture(name)
    } else {
        Ref::Bad(
            name,
            "a name holds letters, digits and _ (captures), or is a built-in",
        )
    }
}

/// A capture name: a letter or `_`, then letters, digits and `_`.
pub fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_placeholders_and_leaves_json_alone() {
        let r = refs(r#"{"op":"say","user":"{row.name}","n":{seq},"t":"{token}"} {x y} {}"#);
        let names: Vec<_> = r.iter().map(|(t, _)| *t).collect();
        assert_eq!(names, ["{row.name}", "{seq}", "{token}"]);
        assert_eq!(r[0].1, Ref::Row("name"));
        assert_eq!(r[1].1, Ref::Builtin);
        assert_eq!(r[2].1, Ref::Capture("token"));
    }

    #[test]
    fn classifies_every_kind() {
        assert_eq!(refs("{rand%100}")[0].1, Ref::Builtin);
        assert_eq!(refs("{secret:API_KEY}")[0].1, Ref::Secret("API_KEY"));
        assert!(matches!(refs("{seq%0}")[0].1, Ref::Bad(..)));
        assert!(matches!(refs("{row.}")[0].1, Ref::Bad(..)));
        assert!(matches!(refs("{a-b}")[0].1, Ref::Bad(..)));
        assert!(refs("no braces { at all").is_empty());
        assert!(refs("{unterminated").is_empty());
    }
}
