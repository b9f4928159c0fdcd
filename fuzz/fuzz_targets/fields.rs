//! Arbitrary text into the binary field language (`--fields`, a scenario's `fields`): compiling
//! must never panic, and a list that compiles renders, for any fill, exactly as many bytes as
//! its length says, through both writers (the bounded one and the growing one).
#![no_main]

use barrage_engine::message::{binary, Fill, Reserved};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [a, b, rest @ ..] = data else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let Ok(t) = binary::compile(text, None, None) else {
        return;
    };
    let fill = Fill {
        conn: u64::from(*a) * 977,
        seq: u64::from(*b).pow(3),
        ts_us: 1_700_000_000_000_000,
    };
    let mut out = Vec::new();
    let n = t.render_into(fill, &mut out);
    assert_eq!(n, out.len());
    assert_eq!(t.rendered_len(fill), n);
    if let Some(bound) = t.bound() {
        let mut w = Vec::new();
        let mut room = Reserved::open(&mut w, bound);
        t.write(fill, &mut room);
        room.close();
        assert_eq!(w, out);
    }
});
