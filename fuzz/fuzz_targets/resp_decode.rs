//! Arbitrary bytes into the RESP reply decoder, fed whole, cut at a point taken from the first
//! two bytes, and byte by byte: it must never panic, and where reads end must not change the
//! events reported (or the error, once one is hit).
#![no_main]

use barrage_engine::redis::{RespDecoder, RespError, RespReply, RespSink};
use libfuzzer_sys::fuzz_target;

#[derive(Default, PartialEq, Debug)]
struct Rec(Vec<Option<RespReply>>);

impl RespSink for Rec {
    fn reply(&mut self, r: RespReply) {
        self.0.push(Some(r));
    }
    fn push(&mut self) {
        self.0.push(None);
    }
}

fn run(depth: usize, pieces: &[&[u8]]) -> (Rec, Option<RespError>) {
    let mut d = RespDecoder::new(depth);
    let mut rec = Rec::default();
    for p in pieces {
        if let Err(e) = d.feed(p, &mut rec) {
            return (rec, Some(e));
        }
    }
    (rec, None)
}

fuzz_target!(|data: &[u8]| {
    let [a, b, rest @ ..] = data else { return };
    // A tight nesting limit sometimes.
    let depth = if a & 1 != 0 { 3 } else { 32 };
    let cut = u16::from_le_bytes([*a, *b]) as usize % (rest.len() + 1);
    let (x, y) = rest.split_at(cut);
    let whole = run(depth, &[rest]);
    assert_eq!(run(depth, &[x, y]), whole, "cut at {cut}");
    let bytes: Vec<&[u8]> = rest.chunks(1).collect();
    assert_eq!(run(depth, &bytes), whole, "byte by byte");
});
