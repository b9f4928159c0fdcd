//! `capture`: one value taken from a complete reply (JSON pointer, regex group, delimited
//! field, byte range).
//!
//! [`Capture::find`] returns where the value is, borrowed from the reply ([`Found`]); only a
//! JSON string holding escapes needs work to become bytes ([`Found::write_to`] unescapes it
//! into the caller's buffer), so nothing is allocated per reply. A miss is `None`.

use std::sync::Mutex;

use regex::bytes::{CaptureLocations, Regex};

use super::json::{self, Kind, Pointer};
use super::CaptureError;

/// Which line a delimited field is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The whole reply (one trailing `\n` or `\r\n` dropped).
    Whole,
    /// Line N, counted from 1 (lines end at `\n`; a trailing `\r` is dropped).
    Line(usize),
    /// The first line starting with these bytes, which are removed before splitting.
    Prefix(Box<[u8]>),
}

enum How {
    Json(Pointer),
    Regex {
        re: Regex,
        group: usize,
        /// Reused locations, so a group capture does not allocate; taken with `try_lock`
        /// (when two workers capture with the same compiled step at once, the loser
        /// allocates its own).
        locs: Mutex<CaptureLocations>,
    },
    Split {
        sep: Box<[u8]>,
        /// Counted from 0 here (the user counts from 1).
        field: usize,
        anchor: Anchor,
    },
    Bytes {
        start: usize,
        end: Option<usize>,
    },
    /// An integer field at an offset.
    Int {
        at: usize,
        kind: crate::message::binary::IntKind,
    },
}

/// A compiled capture; see `docs/captures.md` for the text forms.
pub struct Capture(How);

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            How::Json(p) => write!(f, "Capture(json {:?})", p.text()),
            How::Regex { re, group, .. } => write!(f, "Capture(regex {:?} group {group})", re),
            How::Split { sep, field, anchor } => {
                write!(f, "Capture(split {sep:?} field {} {anchor:?})", field + 1)
            }
            How::Bytes { start, end } => write!(f, "Capture(bytes {start}..{end:?})"),
            How::Int { at, kind } => write!(f, "Capture(at {at} {})", kind.name()),
        }
    }
}

/// Where a captured value is in the reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found<'r> {
    /// The value's bytes as they are in the reply.
    Raw(&'r [u8]),
    /// A JSON string's contents holding escapes: [`Found::write_to`] unescapes them.
    Escaped(&'r [u8]),
    /// A binary integer: its decimal text (signed or not).
    Num(u64, bool),
}

impl Found<'_> {
    /// Appends the value's bytes to `out`.
    pub fn write_to(self, out: &mut Vec<u8>) {
        match self {
            Found::Raw(b) => out.extend_from_slice(b),
            Found::Escaped(b) => json::unescape_into(b, out),
            Found::Num(v, false) => crate::message::push_u64(out, v),
            Found::Num(v, true) => {
                if (v as i64) < 0 {
                    out.push(b'-');
                }
                crate::message::push_u64(out, (v as i64).unsigned_abs());
            }
        }
    }

    /// The value as bytes (allocates only for an escaped JSON string).
    pub fn to_vec(self) -> Vec<u8> {
        let mut v = Vec::new();
        self.write_to(&mut v);
        v
    }
}

impl Capture {
    /// The value at `pointer`: a string's unescaped contents, a number or boolean's text, an
    /// object or array's JSON text as in the reply; `null` and absence are misses.
    pub fn json(pointer: &str) -> Result<Self, CaptureError> {
        Pointer::parse(pointer).map(|p| Self(How::Json(p)))
    }

    /// A group of the first match of `pattern`: `group` is a number (`"0"` the whole match)
    /// or a name (`(?P<name>...)`); `None` takes group 1 when the pattern has one, else 0.
    pub fn regex(pattern: &str, group: Option<&str>) -> Result<Self, CaptureError> {
        let re = super::compile_regex(pattern)?;
        let count = re.captures_len();
        let index = match group {
            None => usize::from(count > 1),
            Some(g) => match g.parse::<usize>() {
                Ok(n) if n < count => n,
                Ok(_) => return Err(group_error(pattern, g, &re)),
                Err(_) => re
                    .capture_names()
                    .position(|n| n == Some(g))
                    .ok_or_else(|| group_error(pattern, g, &re))?,
            },
        };
        let locs = Mutex::new(re.capture_locations());
        Ok(Self(How::Regex {
            re,
            group: index,
            locs,
        }))
    }

    /// Field `field` (counted from 1) of the reply split at `sep`, on the line `anchor` picks.
    pub fn split(sep: &[u8], field: usize, anchor: Anchor) -> Result<Self, CaptureError> {
        if sep.is_empty() {
            return Err(CaptureError::Split(
                "the separator is empty; give one or more bytes, e.g. split = \",\"".into(),
            ));
        }
        if field == 0 {
            return Err(CaptureError::Split(
                "fields are counted from 1: field = 1 is the first".into(),
            ));
        }
        if anchor == Anchor::Line(0) {
            return Err(CaptureError::Split(
                "lines are counted from 1: line = 1 is the first".into(),
            ));
        }
        if matches!(&anchor, Anchor::Prefix(p) if p.is_empty()) {
            return Err(CaptureError::Split(
                "the line prefix is empty; leave it out to split the whole reply".into(),
            ));
        }
        Ok(Self(How::Split {
            sep: sep.into(),
            field: field - 1,
            anchor,
        }))
    }

    /// The bytes `START..END` (END excluded), `START..` (to the end) or `..END` of the reply;
    /// a reply shorter than END (or than START) is a miss.
    pub fn bytes(range: &str) -> Result<Self, CaptureError> {
        let bad = || CaptureError::Range(range.to_string());
        let (a, b) = range.trim().split_once("..").ok_or_else(bad)?;
        let num = |s: &str| s.trim().parse::<usize>().map_err(|_| bad());
        let start = if a.trim().is_empty() { 0 } else { num(a)? };
        let end = if b.trim().is_empty() {
            None
        } else {
            Some(num(b)?)
        };
        if end.is_some_and(|e| e <= start) || (a.trim().is_empty() && end.is_none()) {
            return Err(bad());
        }
        Ok(Self(How::Bytes { start, end }))
    }

    /// The integer field of type `kind` (`u16be`, `varint`, ...) at byte `at`, as decimal
    /// text; a reply too short to hold it is a miss.
    pub fn int(at: usize, kind: &str) -> Result<Self, CaptureError> {
        Ok(Self(How::Int {
            at,
            kind: super::int_kind(kind)?,
        }))
    }

    /// Where the value is in `reply`, or `None` (a miss).
    pub fn find<'r>(&self, reply: &'r [u8]) -> Option<Found<'r>> {
        match &self.0 {
            How::Json(p) => {
                let (s, e) = p.find(reply)?;
                match json::kind(&reply[s..e]) {
                    (Kind::Null, _) => None,
                    (Kind::Str(true), v) => Some(Found::Escaped(v)),
                    (_, v) => Some(Found::Raw(v)),
                }
            }
            How::Regex { re, group, locs } => {
                if *group == 0 {
                    return re.find(reply).map(|m| Found::Raw(m.as_bytes()));
                }
                let span = match locs.try_lock() {
                    Ok(mut l) => {
                        re.captures_read(&mut l, reply)?;
                        l.get(*group)
                    }
                    Err(_) => {
                        let mut l = re.capture_locations();
                        re.captures_read(&mut l, reply)?;
                        l.get(*group)
                    }
                }?;
                Some(Found::Raw(&reply[span.0..span.1]))
            }
            How::Split { sep, field, anchor } => {
                let text = line(reply, anchor)?;
                let mut fields = FieldIter {
                    rest: Some(text),
                    sep,
                };
                fields.nth(*field).map(Found::Raw)
            }
            How::Bytes { start, end } => match end {
                Some(e) => reply.get(*start..*e).map(Found::Raw),
                None => reply.get(*start..).map(Found::Raw),
            },
            How::Int { at, kind } => {
                let (v, _) = kind.decode(reply.get(*at..)?)?;
                Some(Found::Num(v, kind.signed()))
            }
        }
    }

    /// Appends the value to `out`; `false` (and `out` untouched) on a miss.
    pub fn capture_into(&self, reply: &[u8], out: &mut Vec<u8>) -> bool {
        self.find(reply).map(|f| f.write_to(out)).is_some()
    }
}

fn group_error(pattern: &str, group: &str, re: &Regex) -> CaptureError {
    let mut groups: Vec<String> = (0..re.captures_len()).map(|n| n.to_string()).collect();
    groups.extend(re.capture_names().flatten().map(str::to_string));
    CaptureError::Group(pattern.to_string(), group.to_string(), groups.join(", "))
}

/// `b` without one trailing `\r`.
fn trim_cr(b: &[u8]) -> &[u8] {
    b.strip_suffix(b"\r").unwrap_or(b)
}

/// The text a delimited field is read from.
fn line<'r>(reply: &'r [u8], anchor: &Anchor) -> Option<&'r [u8]> {
    match anchor {
        Anchor::Whole => Some(trim_cr(reply.strip_suffix(b"\n").unwrap_or(reply))),
        Anchor::Line(n) => reply.split(|c| *c == b'\n').nth(n - 1).map(trim_cr),
        Anchor::Prefix(p) => reply
            .split(|c| *c == b'\n')
            .find_map(|l| l.strip_prefix(&p[..]))
            .map(trim_cr),
    }
}

struct FieldIter<'r, 's> {
    rest: Option<&'r [u8]>,
    sep: &'s [u8],
}

impl<'r> Iterator for FieldIter<'r, '_> {
    type Item = &'r [u8];

    fn next(&mut self) -> Option<&'r [u8]> {
        let rest = self.rest?;
        match memchr::memmem::find(rest, self.sep) {
            Some(at) => {
                self.rest = Some(&rest[at + self.sep.len()..]);
                Some(&rest[..at])
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn got(c: &Capture, reply: &[u8]) -> Option<Vec<u8>> {
        c.find(reply).map(Found::to_vec)
    }

    #[test]
    fn json_captures_strings_unescaped_and_scalars_as_text() {
        let doc = br#"{"token":"a\"b\u00e9\ud83d\ude00","id":42,"f":-1.5e3,"ok":false,
            "none":null,"obj":{"x":[1, 2]},"list":["p","q"],"plain":"abc"}"#;
        let cases: [(&str, Option<&[u8]>); 10] = [
            ("/token", Some("a\"bé😀".as_bytes())),
            ("/id", Some(b"42")),
            ("/f", Some(b"-1.5e3")),
            ("/ok", Some(b"false")),
            ("/none", None),
            ("/obj", Some(br#"{"x":[1, 2]}"#)),
            ("/list/1", Some(b"q")),
            ("/list/2", None),
            ("/missing", None),
            ("/plain", Some(b"abc")),
        ];
        for (p, want) in cases {
            assert_eq!(got(&Capture::json(p).unwrap(), doc).as_deref(), want, "{p}");
        }
        // Unescaped strings borrow the reply: nothing to copy.
        let c = Capture::json("/plain").unwrap();
        assert!(matches!(c.find(doc), Some(Found::Raw(b"abc"))));
        assert_eq!(got(&c, b"<html>"), None);
    }

    #[test]
    fn regex_captures_numbered_and_named_groups() {
        let reply = b"HTTP/1.1 200 OK\r\nSet-Cookie: sid=XYZ42; Path=/\r\n\r\n";
        let c = Capture::regex(r"sid=([A-Z0-9]+)", None).unwrap();
        assert_eq!(got(&c, reply).as_deref(), Some(&b"XYZ42"[..]));
        let c = Capture::regex(r"sid=(?P<sid>\w+); (\w+)", Some("sid")).unwrap();
        assert_eq!(got(&c, reply).as_deref(), Some(&b"XYZ42"[..]));
        let c = Capture::regex(r"sid=(?P<sid>\w+); (\w+)", Some("2")).unwrap();
        assert_eq!(got(&c, reply).as_deref(), Some(&b"Path"[..]));
        let c = Capture::regex(r"\d{3}", None).unwrap();
        assert_eq!(
            got(&c, reply).as_deref(),
            Some(&b"200"[..]),
            "no group: group 0"
        );
        // An optional group that did not take part is a miss.
        let c = Capture::regex(r"OK(x)?", Some("1")).unwrap();
        assert_eq!(got(&c, reply), None);
        assert_eq!(got(&c, b"nothing"), None);
    }

    #[test]
    fn regex_capture_errors_name_the_group_and_the_ones_there_are() {
        let e = Capture::regex(r"a(?P<x>b)", Some("y"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "regex 'a(?P<x>b)' has no group y; its groups: 0, 1, x");
        let e = Capture::regex(r"a(b)", Some("2")).unwrap_err().to_string();
        assert!(e.contains("no group 2"), "{e}");
        assert!(Capture::regex("[", None).is_err());
    }

    #[test]
    fn delimited_fields_on_the_whole_reply_a_line_or_a_prefixed_line() {
        let c = Capture::split(b",", 2, Anchor::Whole).unwrap();
        assert_eq!(got(&c, b"a,b,c\r\n").as_deref(), Some(&b"b"[..]));
        let c = Capture::split(b",", 3, Anchor::Whole).unwrap();
        assert_eq!(got(&c, b"a,b,c\r\n").as_deref(), Some(&b"c"[..]));
        assert_eq!(got(&c, b"a,b").as_deref(), None);
        assert_eq!(got(&c, b"a,b,").as_deref(), Some(&b""[..]));
        let c = Capture::split(b" :: ", 2, Anchor::Line(2)).unwrap();
        let reply = b"HELLO\r\nroom :: lobby :: 3\r\nEND\r\n";
        assert_eq!(got(&c, reply).as_deref(), Some(&b"lobby"[..]));
        let c = Capture::split(b" ", 1, Anchor::Prefix(b"JOINED ".as_slice().into())).unwrap();
        let reply = b"WELCOME\nJOINED r42 5 users\r\n";
        assert_eq!(got(&c, reply).as_deref(), Some(&b"r42"[..]));
        assert_eq!(got(&c, b"WELCOME\n"), None);
        let c = Capture::split(b",", 1, Anchor::Line(9)).unwrap();
        assert_eq!(got(&c, b"a\nb\n"), None);
    }

    #[test]
    fn bad_splits_are_one_line_errors() {
        for (sep, field, anchor) in [
            (&b""[..], 1, Anchor::Whole),
            (b",", 0, Anchor::Whole),
            (b",", 1, Anchor::Line(0)),
            (b",", 1, Anchor::Prefix(Box::default())),
        ] {
            let e = Capture::split(sep, field, anchor).unwrap_err().to_string();
            assert!(e.starts_with("split: ") && !e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn byte_ranges_take_exact_spans_and_miss_on_short_replies() {
        let reply = b"0123456789abcdef";
        for (range, want) in [
            ("4..12", Some(&b"456789ab"[..])),
            ("..4", Some(b"0123")),
            ("12..", Some(b"cdef")),
            ("16..", Some(b"")),
            ("17..", None),
            ("10..17", None),
            (" 0 .. 16 ", Some(&reply[..])),
        ] {
            let c = Capture::bytes(range).unwrap();
            assert_eq!(got(&c, reply).as_deref(), want, "{range}");
        }
        for bad in ["", "4", "12..4", "4..4", "..", "a..b", "-1..3", "1...3"] {
            let e = Capture::bytes(bad).unwrap_err().to_string();
            assert!(e.contains("START..END"), "{bad}: {e}");
        }
    }

    #[test]
    fn capture_into_appends_and_leaves_the_buffer_alone_on_a_miss() {
        let c = Capture::json("/t").unwrap();
        let mut out = b"x=".to_vec();
        assert!(c.capture_into(br#"{"t":"a\nb"}"#, &mut out));
        assert_eq!(out, b"x=a\nb");
        assert!(!c.capture_into(br#"{"u":1}"#, &mut out));
        assert_eq!(out, b"x=a\nb");
    }

    #[test]
    fn captures_are_shared_between_threads() {
        fn sync<T: Sync + Send>() {}
        sync::<Capture>();
        let c = Capture::regex(r"id=(\d+)", None).unwrap();
        std::thread::scope(|s| {
            for t in 0..2u8 {
                let c = &c;
                s.spawn(move || {
                    for i in 0..500u32 {
                        let reply = format!("id={}{t}", i);
                        assert_eq!(got(c, reply.as_bytes()).unwrap(), &reply.as_bytes()[3..]);
                    }
                });
            }
        });
    }
}
