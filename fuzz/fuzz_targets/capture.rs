//! Arbitrary bytes as a reply to the capture primitives: nothing may panic; the streaming
//! JSON pointer scanner must agree with serde_json on documents serde_json accepts
//! (re-serialized first, so duplicate keys, where the two legitimately differ, are gone);
//! every capture's value must lie within the reply or be its unescaped string; templates with
//! variables must render exactly what a plain left-to-right replacement gives.
#![no_main]

use barrage_engine::capture::{Anchor, Capture, Matcher, Pointer, Vars};
use barrage_engine::message::Fill;
use barrage_engine::Template;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fuzz_target!(|data: &[u8]| {
    // The first line (if short) is a pointer; the rest is the reply.
    let (head, reply) = match data.iter().position(|c| *c == b'\n') {
        Some(at) if at < 64 => (&data[..at], &data[at + 1..]),
        _ => (&b"/a/0"[..], data),
    };
    let pointer = String::from_utf8_lossy(head).into_owned();
    if let Ok(p) = Pointer::parse(&pointer) {
        check_pointer(&p, reply);
    }
    check_captures(reply);
    check_template(data);
});

fn check_pointer(p: &Pointer, reply: &[u8]) {
    if let Some((s, e)) = p.find(reply) {
        assert!(s <= e && e <= reply.len());
    }
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(reply) else {
        return;
    };
    // Canonical text: no duplicate keys, and what serde_json would find (read back from the
    // same text, so both sides see the same float rounding).
    let canon = serde_json::to_vec(&doc).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&canon).unwrap();
    let want = doc.pointer(p.text());
    let got = p.find(&canon).map(|(s, e)| {
        serde_json::from_slice::<serde_json::Value>(&canon[s..e]).expect("a span is one value")
    });
    assert_eq!(got.as_ref(), want, "pointer {:?}", p.text());
    // The JSON matcher agrees with an equality test on the tree.
    if let Some(v) = want {
        let m = Matcher::json(p.text(), v.clone()).unwrap();
        assert!(m.matches(&canon), "{:?} = {v}", p.text());
        let c = Capture::json(p.text()).unwrap();
        match (c.find(&canon), v) {
            (None, v) => assert!(v.is_null()),
            (Some(f), serde_json::Value::String(s)) => assert_eq!(f.to_vec(), s.as_bytes()),
            (Some(_), _) => {}
        }
    }
}

fn check_captures(reply: &[u8]) {
    let within = |v: &[u8]| {
        let (r, p) = (reply.as_ptr() as usize, v.as_ptr() as usize);
        v.is_empty() || (p >= r && p + v.len() <= r + reply.len())
    };
    // Compiled once, as a scenario's are: a regex compile per input would be most of the run.
    static COMPILED: OnceLock<(Vec<Capture>, Vec<Matcher>)> = OnceLock::new();
    let (caps, matchers) = COMPILED.get_or_init(|| {
        let caps = vec![
            Capture::regex(r"(\w+)=(?P<v>[^;\s]*)", Some("v")).unwrap(),
            Capture::regex(r"\d+", None).unwrap(),
            Capture::split(b",", 2, Anchor::Whole).unwrap(),
            Capture::split(b" ", 1, Anchor::Line(2)).unwrap(),
            Capture::split(b":", 3, Anchor::Prefix(b"X".as_slice().into())).unwrap(),
            Capture::bytes("2..5").unwrap(),
            Capture::bytes("3..").unwrap(),
            Capture::json("/token").unwrap(),
        ];
        let matchers = vec![
            Matcher::prefix(b"+OK"),
            Matcher::equals(b"PONG"),
            Matcher::regex(r"^\{").unwrap(),
            Matcher::json_text("/status", r#""ok""#).unwrap(),
        ];
        (caps, matchers)
    });
    let mut vars = Vars::new(caps.len());
    for (slot, c) in caps.iter().enumerate() {
        if let Some(barrage_engine::capture::Found::Raw(v)) = c.find(reply) {
            assert!(within(v));
        }
        let hit = vars.capture(slot, c, reply);
        assert_eq!(hit, vars.get(slot).is_some());
    }
    for m in matchers {
        m.matches(reply);
    }
}

/// Variables `{a}`, `{b_1}`, `{row.x}` in slots 0..3 (and `{user}`, the connection's number)
/// against a plain replacement.
fn check_template(raw: &[u8]) {
    const NAMES: [&str; 3] = ["a", "b_1", "row.x"];
    let resolve = |n: &str| NAMES.iter().position(|m| *m == n);
    let Ok(t) = Template::with_vars(raw.to_vec(), resolve) else {
        return;
    };
    let mut vars = Vars::new(3);
    vars.set(0, b"{b_1}");
    vars.set(2, b"X");
    let fill = Fill {
        conn: 1,
        seq: 2,
        ts_us: 3,
    };
    let mut out = Vec::new();
    let n = t.render_vars_into(fill, &vars, &mut out);
    assert_eq!(n, out.len());
    assert_eq!(n, t.rendered_len_vars(fill, &vars));
    // Without key ranges (`{seq%N}`, `{rand%N}`, `{conn%N}`, `{user%N}`) the plain replacement
    // is easy to state.
    let ranged = [&b"{seq%"[..], b"{rand%", b"{conn%", b"{user%"]
        .iter()
        .any(|p| raw.windows(p.len()).any(|w| w == *p));
    if !ranged {
        let mut want = Vec::new();
        let mut i = 0;
        'outer: while i < raw.len() {
            for (tag, val) in [
                (&b"{conn}"[..], &b"1"[..]),
                (b"{seq}", b"2"),
                (b"{ts_us}", b"3"),
                (b"{user}", b"1"),
                (b"{a}", b"{b_1}"),
                (b"{b_1}", b""),
                (b"{row.x}", b"X"),
            ] {
                if raw[i..].starts_with(tag) {
                    want.extend_from_slice(val);
                    i += tag.len();
                    continue 'outer;
                }
            }
            want.push(raw[i]);
            i += 1;
        }
        assert_eq!(out, want);
    }
}
