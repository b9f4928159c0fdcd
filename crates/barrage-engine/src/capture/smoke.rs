//! Stable "smoke" runs of the `capture` fuzz target's properties on seeded pseudo-random
//! documents (the fuzz target needs nightly and cargo-fuzz): the streaming JSON pointer
//! scanner finds exactly what serde_json's `Value::pointer` finds, in compact, pretty and
//! `\u`-escaped renderings of the same document; and mutated documents never panic it.

use serde_json::{json, Map, Value};

use super::{Capture, Found, Matcher, Pointer};
use crate::message::splitmix64;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = splitmix64(self.0);
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const KEYS: [&str; 9] = ["a", "token", "a/b", "m~n", "café", "\"q\"", "😀", "", "0"];

fn string(r: &mut Rng) -> String {
    const PARTS: [&str; 8] = ["x", "\"", "\\", "\n", "é", "😀", "\u{1}", "]}"];
    (0..r.below(5))
        .map(|_| PARTS[r.below(8) as usize])
        .collect()
}

fn value(r: &mut Rng, depth: u32) -> Value {
    let leaf = depth >= 4 || r.below(3) == 0;
    match (leaf, r.below(7)) {
        (false, 0..=2) => {
            let mut m = Map::new();
            for _ in 0..r.below(5) {
                m.insert(KEYS[r.below(9) as usize].to_string(), value(r, depth + 1));
            }
            Value::Object(m)
        }
        (false, _) => Value::Array((0..r.below(5)).map(|_| value(r, depth + 1)).collect()),
        (true, 0) => Value::Null,
        (true, 1) => json!(r.below(2) == 0),
        (true, 2) => json!(r.next() as i64),
        (true, 3) => json!(r.next()),
        // Binary fractions with short decimals: serde_json (without `float_roundtrip`) reads
        // long decimals back a unit off, which would be its difference, not the scanner's.
        (true, 4) => json!((r.below(1 << 20) as f64 - 5e5) / 64.0),
        (true, _) => Value::String(string(r)),
    }
}

/// A pointer to a member or element that exists (mostly), sometimes one that does not.
fn pointer(r: &mut Rng, mut v: &Value) -> String {
    let mut p = String::new();
    loop {
        let step = match v {
            Value::Object(m) if !m.is_empty() && r.below(4) != 0 => {
                let (k, next) = m.iter().nth(r.below(m.len() as u64) as usize).unwrap();
                v = next;
                k.replace('~', "~0").replace('/', "~1")
            }
            Value::Array(a) if !a.is_empty() && r.below(4) != 0 => {
                let i = r.below(a.len() as u64) as usize;
                v = &a[i];
                i.to_string()
            }
            _ if r.below(3) == 0 => ["nope", "9", "-", "01"][r.below(4) as usize].to_string(),
            _ => return p,
        };
        p.push('/');
        p.push_str(&step);
    }
}

/// Every non-ASCII character as `\uXXXX` (surrogate pairs above U+FFFF): valid JSON, since
/// such characters only occur inside strings.
fn ascii_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

#[test]
fn scanner_agrees_with_serde_json_on_random_documents() {
    let mut r = Rng(0x5eed);
    let mut found = 0;
    for _ in 0..3000 {
        let doc = value(&mut r, 0);
        let texts = [
            serde_json::to_string(&doc).unwrap(),
            serde_json::to_string_pretty(&doc).unwrap(),
            ascii_escaped(&serde_json::to_string(&doc).unwrap()),
        ];
        for _ in 0..3 {
            let p = pointer(&mut r, &doc);
            let want = doc.pointer(&p);
            found += usize::from(want.is_some());
            let ptr = Pointer::parse(&p).unwrap();
            for text in &texts {
                let got = ptr.find(text.as_bytes()).map(|(s, e)| {
                    serde_json::from_str::<Value>(&text[s..e]).expect("a span is one value")
                });
                assert_eq!(got.as_ref(), want, "{p} in {text}");
                let Some(v) = want else { continue };
                let m = Matcher::json(&p, v.clone()).unwrap();
                assert!(m.matches(text.as_bytes()), "{p} = {v} in {text}");
                let c = Capture::json(&p).unwrap().find(text.as_bytes());
                match (c, v) {
                    (None, v) => assert!(v.is_null(), "{p} in {text}"),
                    (Some(f), Value::String(s)) => assert_eq!(f.to_vec(), s.as_bytes()),
                    (Some(f), _) => assert!(matches!(f, Found::Raw(_))),
                }
            }
        }
    }
    // The generator reaches real values, not only misses.
    assert!(found > 3000, "{found}");
}

#[test]
fn mutated_documents_never_panic_the_scanner() {
    let mut r = Rng(7);
    let ptrs: Vec<Pointer> = ["", "/a", "/a/0", "/token", "/0/a/1"]
        .iter()
        .map(|p| Pointer::parse(p).unwrap())
        .collect();
    let cap = Capture::json("/a/0").unwrap();
    for _ in 0..3000 {
        let mut b = serde_json::to_vec(&value(&mut r, 0)).unwrap();
        for _ in 0..=r.below(4) {
            if b.is_empty() {
                break;
            }
            let at = r.below(b.len() as u64) as usize;
            match r.below(3) {
                0 => b.truncate(at),
                1 => b[at] = b"{}[]\",:\\u0"[r.below(10) as usize],
                _ => {
                    b.remove(at);
                }
            }
        }
        for p in &ptrs {
            if let Some((s, e)) = p.find(&b) {
                assert!(s <= e && e <= b.len());
            }
        }
        if let Some(f) = cap.find(&b) {
            f.to_vec();
        }
    }
}
