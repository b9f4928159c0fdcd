//! `expect` matches over one complete reply: prefix, equals, regex, JSON pointer equals.
//!
//! Compiled once (a scenario's load), then `matches` runs per reply without allocating,
//! except a JSON pointer compared with an object or array, which parses the value it found
//! with serde_json (scalars, the common case, are compared in place).

use super::json::{self, Kind, Pointer};
use super::CaptureError;

/// What a compiled JSON comparison expects at its pointer.
#[derive(Clone, Debug)]
enum Want {
    /// Unescaped contents.
    Str(Box<[u8]>),
    Number(serde_json::Number),
    /// `true`, `false` or `null`, as written.
    Word(&'static [u8]),
    /// An object or array: compared as parsed values (order of members ignored).
    Tree(serde_json::Value),
}

#[derive(Clone, Debug)]
enum Kind2 {
    Prefix(Box<[u8]>),
    Equals(Box<[u8]>),
    Regex(regex::bytes::Regex),
    Json(Pointer, Want),
    /// The pointer finds a value (any but `null`).
    Exists(Pointer),
    /// An integer field at an offset: present, or equal to a value.
    Int {
        at: usize,
        kind: crate::message::binary::IntKind,
        want: Option<u64>,
    },
}

/// A compiled match; see `docs/captures.md` for the text forms.
#[derive(Clone, Debug)]
pub struct Matcher(Kind2);

impl Matcher {
    /// The reply starts with `bytes`.
    pub fn prefix(bytes: &[u8]) -> Self {
        Self(Kind2::Prefix(bytes.into()))
    }

    /// The reply is exactly `bytes`.
    pub fn equals(bytes: &[u8]) -> Self {
        Self(Kind2::Equals(bytes.into()))
    }

    /// The reply contains a match of `pattern` (the `regex` crate's syntax, over bytes).
    pub fn regex(pattern: &str) -> Result<Self, CaptureError> {
        super::compile_regex(pattern).map(|r| Self(Kind2::Regex(r)))
    }

    /// The value at `pointer` equals `value`, given as JSON text (`"ok"`, `200`, `true`,
    /// `{"a": 1}`).
    pub fn json_text(pointer: &str, value: &str) -> Result<Self, CaptureError> {
        let v = serde_json::from_str(value).map_err(|e| {
            CaptureError::JsonValue(
                value.to_string(),
                format!("{e}; write a string with its quotes, e.g. \"ok\""),
            )
        })?;
        Self::json(pointer, v)
    }

    /// The reply is JSON with a value (not `null`) at `pointer`.
    pub fn json_exists(pointer: &str) -> Result<Self, CaptureError> {
        Pointer::parse(pointer).map(|p| Self(Kind2::Exists(p)))
    }

    /// The value at `pointer` equals `value` (a string compares with a JSON string's
    /// unescaped contents, a number numerically, `true`/`false`/`null` as such).
    pub fn json(pointer: &str, value: serde_json::Value) -> Result<Self, CaptureError> {
        let ptr = Pointer::parse(pointer)?;
        let want = match value {
            serde_json::Value::String(s) => Want::Str(s.into_bytes().into()),
            serde_json::Value::Number(n) => Want::Number(n),
            serde_json::Value::Bool(true) => Want::Word(b"true"),
            serde_json::Value::Bool(false) => Want::Word(b"false"),
            serde_json::Value::Null => Want::Word(b"null"),
            tree => Want::Tree(tree),
        };
        Ok(Self(Kind2::Json(ptr, want)))
    }

    /// The reply holds an integer field of type `kind` at byte `at`, equal to `equals` when
    /// given (a whole number).
    pub fn int(
        at: usize,
        kind: &str,
        equals: Option<&serde_json::Value>,
    ) -> Result<Self, CaptureError> {
        let kind = super::int_kind(kind)?;
        let want = match equals {
            None => None,
            Some(v) => Some(
                v.as_u64()
                    .or_else(|| v.as_i64().map(|i| i as u64))
                    .ok_or_else(|| CaptureError::IntValue(v.to_string()))?,
            ),
        };
        Ok(Self(Kind2::Int { at, kind, want }))
    }

    pub fn matches(&self, reply: &[u8]) -> bool {
        match &self.0 {
            Kind2::Int { at, kind, want } => reply
                .get(*at..)
                .and_then(|b| kind.decode(b))
                .is_some_and(|(v, _)| want.is_none_or(|w| w == v)),
            Kind2::Prefix(p) => reply.starts_with(p),
            Kind2::Equals(e) => reply == &e[..],
            Kind2::Regex(r) => r.is_match(reply),
            Kind2::Exists(ptr) => ptr
                .find(reply)
                .is_some_and(|(s, e)| json::kind(&reply[s..e]).0 != Kind::Null),
            Kind2::Json(ptr, want) => {
                let Some((s, e)) = ptr.find(reply) else {
                    return false;
                };
                let (kind, v) = json::kind(&reply[s..e]);
                match (want, kind) {
                    (Want::Str(w), Kind::Str(escaped)) => json::key_eq(v, escaped, w),
                    (Want::Number(n), Kind::Number) => number_eq(v, n),
                    (Want::Word(w), Kind::Bool | Kind::Null) => v == *w,
                    (Want::Tree(t), Kind::Container) => {
                        serde_json::from_slice::<serde_json::Value>(v).is_ok_and(|got| got == *t)
                    }
                    _ => false,
                }
            }
        }
    }
}

/// A number's text against an expected number: exactly as integers when both are, else as
/// f64 (`1.0` equals `1`, `1e2` equals `100`).
fn number_eq(text: &[u8], want: &serde_json::Number) -> bool {
    let Ok(text) = std::str::from_utf8(text) else {
        return false;
    };
    if let (Some(w), Ok(got)) = (want.as_i64(), text.parse::<i64>()) {
        return got == w;
    }
    if let (Some(w), Ok(got)) = (want.as_u64(), text.parse::<u64>()) {
        return got == w;
    }
    // serde_json's own float reader, as for the expected value: the two sides round alike
    // (without `float_roundtrip`, serde_json may read a long decimal one unit off).
    match (want.as_f64(), serde_json::from_str::<f64>(text)) {
        (Some(w), Ok(got)) => got == w,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_equals_and_regex_match_whole_replies() {
        let p = Matcher::prefix(b"+OK");
        assert!(p.matches(b"+OK ready\r\n"));
        assert!(!p.matches(b"-ERR\r\n"));
        assert!(!p.matches(b"+O"));
        let e = Matcher::equals(b"3");
        assert!(e.matches(b"3"));
        assert!(!e.matches(b"3 "));
        assert!(!e.matches(b""));
        let r = Matcher::regex(r"^joined (\w+)$").unwrap();
        assert!(r.matches(b"joined lobby"));
        assert!(!r.matches(b"joined "));
        // Bytes API: a reply that is not UTF-8 is matched, not refused.
        assert!(Matcher::regex(r"(?-u)^\xff").unwrap().matches(b"\xff\x00"));
    }

    #[test]
    fn bad_regex_is_one_line_naming_the_pattern() {
        let e = Matcher::regex("(abc").unwrap_err().to_string();
        assert!(e.contains("(abc"), "{e}");
        assert!(e.contains("unclosed group"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn json_equals_strings_numbers_words_and_trees() {
        let doc = br#"{"status":"ok","n":100,"f":1.5,"big":18446744073709551615,
            "neg":-3,"t":true,"z":null,"esc":"a\"b\u00e9","arr":[1,{"k":"v"}]}"#;
        let yes = [
            ("/status", r#""ok""#),
            ("/n", "100"),
            ("/n", "1e2"),
            ("/n", "100.0"),
            ("/f", "1.5"),
            ("/big", "18446744073709551615"),
            ("/neg", "-3"),
            ("/t", "true"),
            ("/z", "null"),
            ("/esc", r#""a\"bé""#),
            ("/arr", r#"[1, {"k": "v"}]"#),
            ("/arr/1", r#"{"k":"v"}"#),
            ("/arr/1/k", r#""v""#),
        ];
        for (p, v) in yes {
            assert!(Matcher::json_text(p, v).unwrap().matches(doc), "{p} = {v}");
        }
        let no = [
            ("/status", r#""OK""#),
            ("/status", "1"),
            ("/n", r#""100""#),
            ("/n", "101"),
            ("/t", "false"),
            ("/z", "false"),
            ("/missing", "null"),
            ("/arr", "[1]"),
            ("/esc", r#""a\"b""#),
        ];
        for (p, v) in no {
            assert!(!Matcher::json_text(p, v).unwrap().matches(doc), "{p} = {v}");
        }
        assert!(!Matcher::json_text("/a", "1").unwrap().matches(b"not json"));
        // A long decimal is read by the same float reader on both sides.
        let long = Matcher::json_text("/f", "265169101.95204282").unwrap();
        assert!(long.matches(br#"{"f": 265169101.95204282}"#));
        assert!(!long.matches(br#"{"f": 265169101.952}"#));
    }

    #[test]
    fn bad_json_values_and_pointers_are_one_line_errors() {
        let e = Matcher::json_text("/status", "ok").unwrap_err().to_string();
        assert!(e.contains("\"ok\"") && !e.contains('\n'), "{e}");
        let e = Matcher::json_text("status", "1").unwrap_err().to_string();
        assert!(e.contains("'/'"), "{e}");
    }

    /// A 1 KiB JSON body with the pointer's member last, so the scanner skips everything.
    pub(crate) fn kib_body() -> Vec<u8> {
        let mut doc = String::from(r#"{"meta":{"page":1,"tags":["a","b\"c"]},"items":["#);
        let mut i = 0;
        while doc.len() < 900 {
            doc.push_str(&format!(
                r#"{{"id":{i},"name":"user \u00e9{i}","ok":true}},"#
            ));
            i += 1;
        }
        doc.pop();
        doc.push_str(r#"],"data":{"status":"ok","token":"abc123"}}"#);
        while doc.len() < 1024 {
            doc.insert(doc.len() - 1, ' ');
        }
        doc.into_bytes()
    }

    /// Not a check (timings are not asserted): prints ns per reply for the scanner and for a
    /// full serde_json parse of the same 1 KiB body. Run with
    /// `cargo test --release -p barrage-engine --lib json_pointer_cost -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn json_pointer_cost() {
        let body = kib_body();
        assert_eq!(body.len(), 1024);
        let m = Matcher::json_text("/data/status", r#""ok""#).unwrap();
        let n = 200_000;
        let t = std::time::Instant::now();
        let hits = (0..n)
            .filter(|_| m.matches(std::hint::black_box(&body)))
            .count();
        let scan = t.elapsed().as_nanos() / n as u128;
        assert_eq!(hits, n);
        let t = std::time::Instant::now();
        let hits = (0..n)
            .filter(|_| {
                let v: serde_json::Value =
                    serde_json::from_slice(std::hint::black_box(&body)).unwrap();
                v.pointer("/data/status") == Some(&serde_json::json!("ok"))
            })
            .count();
        let tree = t.elapsed().as_nanos() / n as u128;
        assert_eq!(hits, n);
        println!("1 KiB body: scanner {scan} ns/reply, serde_json Value {tree} ns/reply");
    }
}
