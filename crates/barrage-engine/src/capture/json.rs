//! RFC 6901 JSON pointers, resolved by a streaming scanner over a reply's bytes.
//!
//! Design decision: no `serde_json::Value` tree per reply. The scanner walks the reply once,
//! descends only into the members and elements the pointer names and skips everything else
//! (strings by their escapes, containers by bracket balance), then returns the byte span of the
//! value it found. Nothing is allocated. It checks the syntax on the path it walks (keys,
//! colons, commas, the value found) and only strings and bracket balance in what it skips, so
//! a malformed document may still yield a value when the path through it is well formed (and
//! the scan stops at the value found: what follows it is not read).
//! With duplicate keys the first member wins (RFC 8259 leaves this open; serde_json keeps the
//! last). Nesting deeper than [`MAX_DEPTH`] inside a skipped value is a miss, not a stack
//! overflow: skipping is iterative.

use super::CaptureError;

/// How deep a skipped value may nest before the scanner gives up (a miss).
pub const MAX_DEPTH: usize = 128;

/// One reference token of a pointer, unescaped (`~1` -> `/`, `~0` -> `~`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Token {
    key: Box<[u8]>,
    /// The token read as an array index (`0` or digits without a leading zero).
    index: Option<usize>,
}

/// A compiled JSON pointer (`""` is the whole document, `/a/0/b~1c` a path).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pointer {
    text: Box<str>,
    tokens: Box<[Token]>,
}

impl Pointer {
    pub fn parse(text: &str) -> Result<Self, CaptureError> {
        let bad = |why: &str| CaptureError::Pointer(text.to_string(), why.to_string());
        if text.is_empty() {
            return Ok(Self {
                text: "".into(),
                tokens: Box::default(),
            });
        }
        let Some(rest) = text.strip_prefix('/') else {
            return Err(bad(
                "a pointer starts with '/' (e.g. /data/token), or is empty for the whole reply",
            ));
        };
        let mut tokens = Vec::new();
        for part in rest.split('/') {
            let mut key = Vec::with_capacity(part.len());
            let mut b = part.bytes();
            while let Some(c) = b.next() {
                if c != b'~' {
                    key.push(c);
                    continue;
                }
                match b.next() {
                    Some(b'0') => key.push(b'~'),
                    Some(b'1') => key.push(b'/'),
                    _ => return Err(bad("'~' must be written ~0 (and '/' inside a key ~1)")),
                }
            }
            let index = (part == "0" || (!part.starts_with('0') && !part.is_empty()))
                .then(|| part.parse::<usize>().ok())
                .flatten()
                .filter(|_| part.bytes().all(|c| c.is_ascii_digit()));
            tokens.push(Token {
                key: key.into(),
                index,
            });
        }
        Ok(Self {
            text: text.into(),
            tokens: tokens.into(),
        })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The span `start..end` of the value the pointer names in `doc`, or `None` when the
    /// member or element is absent or the document is not JSON along the way.
    pub fn find(&self, doc: &[u8]) -> Option<(usize, usize)> {
        let mut s = Scan { b: doc, i: 0 };
        s.ws();
        for tok in self.tokens.iter() {
            match s.peek()? {
                b'{' => {
                    s.i += 1;
                    s.ws();
                    if s.peek()? == b'}' {
                        return None;
                    }
                    loop {
                        s.ws();
                        let (ks, ke, escaped) = s.string()?;
                        s.ws();
                        s.expect(b':')?;
                        s.ws();
                        if key_eq(&doc[ks..ke], escaped, &tok.key) {
                            break;
                        }
                        s.skip_value()?;
                        s.ws();
                        match s.next()? {
                            b',' => {}
                            _ => return None,
                        }
                    }
                }
                b'[' => {
                    let n = tok.index?;
                    s.i += 1;
                    s.ws();
                    if s.peek()? == b']' {
                        return None;
                    }
                    for _ in 0..n {
                        s.skip_value()?;
                        s.ws();
                        if s.next()? != b',' {
                            return None;
                        }
                        s.ws();
                    }
                }
                _ => return None,
            }
        }
        let start = s.i;
        s.skip_value()?;
        Some((start, s.i))
    }
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scan<'_> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    /// A string at `i`: the span of its contents (between the quotes) and whether it holds
    /// an escape.
    fn string(&mut self) -> Option<(usize, usize, bool)> {
        self.expect(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            let at = memchr::memchr2(b'"', b'\\', &self.b[self.i..])? + self.i;
            if self.b[at] == b'"' {
                self.i = at + 1;
                return Some((start, at, escaped));
            }
            escaped = true;
            match self.b.get(at + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i = at + 2,
                b'u' => {
                    let hex = self.b.get(at + 2..at + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    self.i = at + 6;
                }
                _ => return None,
            }
        }
    }

    /// A scalar (number, `true`, `false`, `null`) at `i`.
    fn scalar(&mut self) -> Option<()> {
        let rest = &self.b[self.i..];
        for word in [&b"true"[..], b"false", b"null"] {
            if rest.starts_with(word) {
                self.i += word.len();
                return Some(());
            }
        }
        let len = rest
            .iter()
            .take_while(|c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
            .count();
        if len == 0 || !matches!(rest[0], b'-' | b'0'..=b'9') {
            return None;
        }
        self.i += len;
        Some(())
    }

    /// Skips one value; containers by bracket balance (their kinds kept in a bit stack).
    fn skip_value(&mut self) -> Option<()> {
        let mut stack = [0u64; MAX_DEPTH / 64];
        let mut depth = 0usize;
        loop {
            self.ws();
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                open @ (b'{' | b'[') => {
                    if depth == MAX_DEPTH {
                        return None;
                    }
                    let bit = 1u64 << (depth % 64);
                    if open == b'{' {
                        stack[depth / 64] |= bit;
                    } else {
                        stack[depth / 64] &= !bit;
                    }
                    depth += 1;
                    self.i += 1;
                    continue;
                }
                close @ (b'}' | b']') => {
                    if depth == 0 {
                        return None;
                    }
                    depth -= 1;
                    let object = stack[depth / 64] & (1u64 << (depth % 64)) != 0;
                    if object != (close == b'}') {
                        return None;
                    }
                    self.i += 1;
                }
                b',' | b':' if depth > 0 => {
                    self.i += 1;
                    continue;
                }
                _ => self.scalar()?,
            }
            if depth == 0 {
                return Some(());
            }
        }
    }
}

/// What the value at a span is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A string: the span given is its contents, still escaped; `true` when it holds escapes.
    Str(bool),
    Number,
    Bool,
    Null,
    Container,
}

/// The kind of the value in `v` (a span returned by [`Pointer::find`]); for a string, `v` is
/// narrowed to its contents.
pub fn kind(v: &[u8]) -> (Kind, &[u8]) {
    match v.first() {
        Some(b'"') => {
            let inner = &v[1..v.len() - 1];
            (Kind::Str(memchr::memchr(b'\\', inner).is_some()), inner)
        }
        Some(b't' | b'f') => (Kind::Bool, v),
        Some(b'n') => (Kind::Null, v),
        Some(b'{' | b'[') => (Kind::Container, v),
        _ => (Kind::Number, v),
    }
}

/// Calls `f` with the unescaped contents of a string, in pieces (runs of literal bytes and
/// decoded escapes); stops early when `f` returns false. The contents were checked by the
/// scanner. A lone surrogate decodes as U+FFFD.
fn unescaped(raw: &[u8], mut f: impl FnMut(&[u8]) -> bool) -> bool {
    let mut i = 0;
    while i < raw.len() {
        let Some(at) = memchr::memchr(b'\\', &raw[i..]).map(|p| p + i) else {
            return f(&raw[i..]);
        };
        if at > i && !f(&raw[i..at]) {
            return false;
        }
        let Some(&c) = raw.get(at + 1) else {
            return false;
        };
        i = at + 2;
        let byte = match c {
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let (ch, used) = unicode_escape(&raw[at..]);
                i = at + used;
                let mut buf = [0u8; 4];
                if !f(ch.encode_utf8(&mut buf).as_bytes()) {
                    return false;
                }
                continue;
            }
            other => other,
        };
        if !f(&[byte]) {
            return false;
        }
    }
    true
}

fn hex4(b: &[u8]) -> Option<u32> {
    let h = std::str::from_utf8(b.get(..4)?).ok()?;
    u32::from_str_radix(h, 16).ok()
}

/// `\uXXXX` (and its low surrogate `\uYYYY` when it is a high one) at the start of `b`: the
/// character and the bytes used.
fn unicode_escape(b: &[u8]) -> (char, usize) {
    let Some(hi) = b.get(2..).and_then(hex4) else {
        return ('\u{fffd}', b.len().min(6));
    };
    if (0xd800..0xdc00).contains(&hi) && b.get(6..8) == Some(b"\\u") {
        if let Some(lo) = b
            .get(8..)
            .and_then(hex4)
            .filter(|lo| (0xdc00..0xe000).contains(lo))
        {
            let c = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
            return (char::from_u32(c).unwrap_or('\u{fffd}'), 12);
        }
    }
    (char::from_u32(hi).unwrap_or('\u{fffd}'), 6)
}

/// Appends the unescaped contents of a string to `out`.
pub fn unescape_into(raw: &[u8], out: &mut Vec<u8>) {
    unescaped(raw, |piece| {
        out.extend_from_slice(piece);
        true
    });
}

/// Whether a string's contents (escaped when `escaped`) equal `want`, without allocating.
pub fn key_eq(raw: &[u8], escaped: bool, want: &[u8]) -> bool {
    if !escaped {
        return raw == want;
    }
    let mut rest = want;
    unescaped(raw, |piece| match rest.strip_prefix(piece) {
        Some(r) => {
            rest = r;
            true
        }
        None => false,
    }) && rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<'a>(ptr: &str, doc: &'a str) -> Option<&'a str> {
        let p = Pointer::parse(ptr).unwrap();
        p.find(doc.as_bytes()).map(|(s, e)| &doc[s..e])
    }

    #[test]
    fn pointers_find_nested_members_and_elements() {
        let doc = r#" { "a" : {"b": [10, {"c": "x"}, [1,2]]}, "d": true, "e": null } "#;
        assert_eq!(at("", doc), Some(doc.trim()));
        assert_eq!(at("/a/b/0", doc), Some("10"));
        assert_eq!(at("/a/b/1/c", doc), Some(r#""x""#));
        assert_eq!(at("/a/b/2", doc), Some("[1,2]"));
        assert_eq!(at("/a/b/2/1", doc), Some("2"));
        assert_eq!(at("/d", doc), Some("true"));
        assert_eq!(at("/e", doc), Some("null"));
    }

    #[test]
    fn missing_members_and_elements_are_misses() {
        let doc = r#"{"a": {"b": [1, 2]}, "s": "text"}"#;
        for ptr in [
            "/x", "/a/c", "/a/b/2", "/a/b/-", "/a/b/01", "/s/0", "/a/b/0/x", "/a/b/x",
        ] {
            assert_eq!(at(ptr, doc), None, "{ptr}");
        }
        assert_eq!(at("/a", "{}"), None);
        assert_eq!(at("/0", "[]"), None);
    }

    #[test]
    fn escaped_keys_and_pointer_escapes_match() {
        let doc = r#"{"a/b": 1, "m~n": 2, "caf\u00e9": 3, "\"q\"": 4, "\ud83d\ude00": 5}"#;
        assert_eq!(at("/a~1b", doc), Some("1"));
        assert_eq!(at("/m~0n", doc), Some("2"));
        assert_eq!(at("/café", doc), Some("3"));
        assert_eq!(at("/\"q\"", doc), Some("4"));
        assert_eq!(at("/😀", doc), Some("5"));
    }

    #[test]
    fn skipping_copes_with_strings_holding_brackets_and_deep_values() {
        let doc = r#"{"x": ["]", "}", "\"]"], "y": {"z": [[[{}]]]}, "t": 7}"#;
        assert_eq!(at("/t", doc), Some("7"));
        let deep = format!(r#"{{"x": {}{}, "t": 1}}"#, "[".repeat(200), "]".repeat(200));
        assert_eq!(at("/t", &deep), None, "deeper than MAX_DEPTH is a miss");
        let ok = format!(r#"{{"x": {}{}, "t": 1}}"#, "[".repeat(100), "]".repeat(100));
        assert_eq!(at("/t", &ok), Some("1"));
    }

    #[test]
    fn malformed_documents_are_misses_not_panics() {
        for doc in [
            "",
            "{",
            r#"{"a""#,
            r#"{"a":"#,
            r#"{"a":tru"#,
            r#"{"b":[1}"#,
            r#"{"b":"\q"}"#,
            r#"{"b":"\u12"}"#,
            "[1,",
            "nope",
            r#"{"b" 1, "a": 1}"#,
        ] {
            assert_eq!(at("/a", doc), None, "{doc}");
        }
        assert_eq!(at("/b", r#"{"b":[1}"#), None);
        // Documented leniency: the scan stops at the value found; what follows is unchecked.
        assert_eq!(at("/a", r#"{"a":1,"#), Some("1"));
    }

    #[test]
    fn bad_pointers_are_errors_naming_the_pointer() {
        for bad in ["a/b", "/a~2", "/a~"] {
            let e = Pointer::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn strings_unescape_including_surrogate_pairs() {
        let raw = br#"a\"b\\c\/d\n\t\u00e9\ud83d\ude00\ud800x"#;
        let mut out = Vec::new();
        unescape_into(raw, &mut out);
        assert_eq!(out, "a\"b\\c/d\n\té😀\u{fffd}x".as_bytes());
        assert!(key_eq(raw, true, &out));
        assert!(!key_eq(raw, true, &out[..out.len() - 1]));
        assert!(!key_eq(br"ab", true, b"abc"));
    }
}
