//! Arbitrary bytes, cut at a point chosen by the first two bytes, into the handshake decoder;
//! `consumed` must stay within what was fed.
#![no_main]

use barrage_engine::http::Limits;
use barrage_engine::ws::{Handshake, HandshakeDecoder};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [a, b, rest @ ..] = data else { return };
    let sub = (a & 1 != 0).then_some("chat");
    let mut d = HandshakeDecoder::new("dGhlIHNhbXBsZSBub25jZQ==", sub, Limits::default());
    let cut = u16::from_le_bytes([*a, *b]) as usize % (rest.len() + 1);
    let (x, y) = rest.split_at(cut);
    for part in [x, y] {
        match d.feed(part) {
            Ok(Handshake::Done { consumed }) => {
                assert!(consumed <= part.len());
                break;
            }
            Ok(Handshake::Incomplete) => {}
            Err(_) => break,
        }
    }
});
