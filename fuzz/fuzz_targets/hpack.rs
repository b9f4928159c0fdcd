//! Arbitrary header blocks into the HPACK decoder, one after another on one table (the
//! first byte picks the table size this side allows): it must never panic, the table never
//! outgrows its limit, and the Huffman code round-trips any bytes.
#![no_main]

use barrage_engine::h2::hpack::Decoder;
use barrage_engine::h2::huffman;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [a, rest @ ..] = data else { return };
    let limit = [0usize, 64, 256, 4096][*a as usize % 4];
    let mut d = Decoder::new(limit);
    // Blocks separated by 0xff 0xfe, as a connection's successive HEADERS.
    for block in rest.split(|&b| b == 0xfe) {
        let mut fields = 0usize;
        let res = d.decode(block, 16 << 10, |n, v| {
            fields += 1;
            assert!(n.len() + v.len() <= block.len() * 8 / 5 + 64 * 1024);
        });
        assert!(d.table_len().1 <= limit, "table {} over {limit}", d.table_len().1);
        if res.is_err() {
            break;
        }
    }
    let mut enc = Vec::new();
    huffman::encode(rest, &mut enc);
    let mut back = Vec::new();
    huffman::decode(&enc, &mut back).expect("an encoding decodes");
    assert_eq!(back, rest);
});
