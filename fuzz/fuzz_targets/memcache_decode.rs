//! Arbitrary bytes into the memcached reply decoder, fed whole, cut at a point taken from the
//! first two bytes, and byte by byte: it must never panic, and where reads end must not change
//! the replies reported (or the error, once one is hit).
#![no_main]

use barrage_engine::memcache::{McDecoder, McError, McReply, McSink};
use libfuzzer_sys::fuzz_target;

#[derive(Default, PartialEq, Debug)]
struct Rec(Vec<McReply>);

impl McSink for Rec {
    fn reply(&mut self, r: McReply) {
        self.0.push(r);
    }
}

fn run(pieces: &[&[u8]]) -> (Rec, Option<McError>) {
    let mut d = McDecoder::default();
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
    let cut = u16::from_le_bytes([*a, *b]) as usize % (rest.len() + 1);
    let (x, y) = rest.split_at(cut);
    let whole = run(&[rest]);
    let split = run(&[x, y]);
    let bytes: Vec<&[u8]> = rest.chunks(1).collect();
    let one_by_one = run(&bytes);
    // A line over the buffer is an error only when it had to be gathered (a whole line in one
    // read is parsed in place): then the runs may differ.
    let too_long = |r: &(Rec, Option<McError>)| matches!(r.1, Some(McError::LineTooLong));
    if too_long(&whole) || too_long(&split) || too_long(&one_by_one) {
        return;
    }
    assert_eq!(split, whole, "cut at {cut}");
    assert_eq!(one_by_one, whole, "byte by byte");
});
