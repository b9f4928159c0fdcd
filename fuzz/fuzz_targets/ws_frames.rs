//! Arbitrary bytes, cut at a point chosen by the first two bytes, into the WebSocket frame
//! decoder; the first byte also picks a tight message limit.
#![no_main]

use barrage_engine::ws::{FrameDecoder, FrameSink, OpCode};
use libfuzzer_sys::fuzz_target;

struct Sink;

impl FrameSink for Sink {
    fn message(&mut self, op: OpCode, _len: u64) {
        assert!(matches!(op, OpCode::Text | OpCode::Binary));
    }
    fn ping(&mut self, payload: &[u8]) {
        assert!(payload.len() <= 125);
    }
    fn close(&mut self, _code: Option<u16>, reason: &[u8]) {
        assert!(std::str::from_utf8(reason).is_ok());
    }
}

fuzz_target!(|data: &[u8]| {
    let [a, b, rest @ ..] = data else { return };
    let mut d = FrameDecoder::new(if a & 1 != 0 { 64 } else { u64::MAX });
    let cut = u16::from_le_bytes([*a, *b]) as usize % (rest.len() + 1);
    let (x, y) = rest.split_at(cut);
    if d.feed(x, &mut Sink).is_ok() {
        let _ = d.feed(y, &mut Sink);
    }
});
