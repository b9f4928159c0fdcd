//! Arbitrary text through the message pipeline: `unescape` must never panic, `escape` then
//! `unescape` must give the same bytes back, and a template must render exactly what a plain
//! left-to-right replacement of `{conn}`, `{seq}` and `{ts_us}` gives (`Template::new`), or
//! of those and `{seq%N}`, `{rand%N}`, `{conn%N}`, `{user%N}` (`Template::try_new`, which
//! rejects a malformed `{seq%...}`/`{rand%...}`/`{conn%...}`/`{user%...}`).
#![no_main]

use barrage_engine::message::{rand_mod, Fill};
use barrage_engine::{escape, unescape, Template};
use libfuzzer_sys::fuzz_target;

/// The reference: replace the placeholders left to right, the obvious way.
fn naive(raw: &[u8], f: Fill, ranges: bool) -> Vec<u8> {
    let tags: [(&[u8], u64); 3] = [
        (b"{conn}", f.conn),
        (b"{seq}", f.seq),
        (b"{ts_us}", f.ts_us),
    ];
    let mut out = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        if let Some((len, v)) = modulo(&raw[i..], f).filter(|_| ranges) {
            out.extend_from_slice(v.to_string().as_bytes());
            i += len;
            continue;
        }
        match tags.iter().find(|(t, _)| raw[i..].starts_with(t)) {
            Some((t, v)) => {
                out.extend_from_slice(v.to_string().as_bytes());
                i += t.len();
            }
            None => {
                out.push(raw[i]);
                i += 1;
            }
        }
    }
    out
}

/// `{seq%N}` / `{rand%N}` / `{conn%N}` / `{user%N}` (N a u64 above 0) at the start of `b`:
/// its length and value.
fn modulo(b: &[u8], f: Fill) -> Option<(usize, u64)> {
    let (open, kind) = if b.starts_with(b"{seq%") {
        (5, 0)
    } else if b.starts_with(b"{rand%") {
        (6, 1)
    } else if b.starts_with(b"{conn%") || b.starts_with(b"{user%") {
        (6, 2)
    } else {
        return None;
    };
    let close = b.iter().position(|c| *c == b'}')?;
    let n: u64 = std::str::from_utf8(&b[open..close]).ok()?.parse().ok()?;
    if n == 0 || !b[open..close].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = match kind {
        0 => f.seq % n,
        1 => rand_mod(f.conn, f.seq, n),
        _ => f.conn % n,
    };
    Some((close + 1, v))
}

fuzz_target!(|data: &[u8]| {
    // Bytes as they arrive from a file (--message-file) ...
    check_template(data);
    // ... and text with escapes as typed on the command line (-m).
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(bytes) = unescape(text) {
        let printed = escape(&bytes);
        assert!(printed.is_ascii(), "{printed:?}");
        assert_eq!(unescape(&printed).as_deref(), Ok(&bytes[..]), "{printed:?}");
        check_template(&bytes);
    }
});

fn check_template(raw: &[u8]) {
    check(raw, Template::new(raw.to_vec()), false);
    match Template::try_new(raw.to_vec()) {
        Ok(t) => check(raw, t, true),
        Err(e) => assert!(
            ["{seq%", "{rand%", "{conn%", "{user%"]
                .iter()
                .any(|p| e.0.starts_with(p)),
            "{e}"
        ),
    }
}

fn check(raw: &[u8], t: Template, ranges: bool) {
    assert_eq!(t.raw(), raw);
    let seed = raw
        .iter()
        .fold(0u64, |h, &b| h.rotate_left(5) ^ u64::from(b));
    for fill in [
        Fill {
            conn: 0,
            seq: 0,
            ts_us: 0,
        },
        Fill {
            conn: seed % 100_000,
            seq: u64::MAX,
            ts_us: seed,
        },
    ] {
        let mut out = b"prefix".to_vec();
        let n = t.render_into(fill, &mut out);
        assert_eq!(n, out.len() - 6, "returned length");
        let want = naive(raw, fill, ranges);
        assert_eq!(&out[6..], &want[..]);
        if t.is_static() {
            assert_eq!(&out[6..], raw);
        }
    }
}
