//! Arbitrary bytes as a proxy's answer to CONNECT, read as every prefix of it would be (the
//! worker asks after each read): no panic, an open tunnel's head ends in its blank line within
//! what was read, and once a prefix is decided, every longer one is decided the same way.
#![no_main]

use barrage_engine::http::tunnel::{answer, Answer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut decided: Option<Answer> = None;
    for cut in 0..=data.len().min(20_000) {
        let a = answer(&data[..cut]);
        if let Answer::Open(len) = a {
            assert!(len <= cut && data[..len].ends_with(b"\r\n\r\n"), "{len} of {cut}");
        }
        match (&decided, &a) {
            (None, Answer::More) => {}
            (None, _) => decided = Some(a),
            (Some(d), _) => assert_eq!(
                std::mem::discriminant(d),
                std::mem::discriminant(&a),
                "decided {d:?}, then {a:?} at {cut}"
            ),
        }
    }
});
