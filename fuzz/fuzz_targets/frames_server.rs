//! Arbitrary bytes into `serve frames`' decoder (`barrage_servers::frames`): frames cut from
//! the input one after another, each payload read as an object and a message. Never a panic;
//! a frame never claims more bytes than the input has; an object that reads writes back (its
//! strings and byte arrays through the writer) to a frame that reads again.
#![no_main]

use barrage_servers::frames::{frame, message, object, Parsed, Value, Writer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Parsed::Frame { len, payload } = frame(rest) {
        assert!(len <= rest.len() && payload.len() < len);
        if let Ok(o) = object(payload) {
            if let Ok((action, p)) = message(&o) {
                let Value::Object(entries) = p else {
                    panic!("message() gave parameters that are not an object")
                };
                let mut out = Vec::new();
                let mut w = Writer::message(&mut out, action, entries.len() as u16);
                for (k, v) in entries {
                    let k = std::str::from_utf8(k).expect("keys are UTF-8");
                    match v {
                        Value::Str(s) => w.str(k, s),
                        Value::Bytes(b) => w.bytes(k, b),
                        Value::Short(n) => w.short(k, *n),
                        _ => w.int(k, 0),
                    };
                }
                w.finish();
                let Parsed::Frame { payload, .. } = frame(&out) else {
                    panic!("a written message is not a frame")
                };
                let again = object(payload).expect("a written message reads");
                assert_eq!(message(&again).expect("and is a message").0, action);
            }
        }
        rest = &rest[len..];
    }
});
