//! Arbitrary bytes, cut at a point chosen by the first two bytes, into the HTTP response
//! decoder, then EOF. The first byte's low bits also pick HEAD mode and tight limits.
#![no_main]

use barrage_engine::http::{Limits, ResponseDecoder, ResponseSink};
use libfuzzer_sys::fuzz_target;

struct Sink {
    open: bool,
}

impl ResponseSink for Sink {
    fn head(&mut self, _status: u16) {
        assert!(!self.open, "head while a response is open");
        self.open = true;
    }
    fn complete(&mut self, _status: u16, _keep_alive: bool) {
        assert!(self.open, "complete without head");
        self.open = false;
    }
}

fuzz_target!(|data: &[u8]| {
    let [a, b, rest @ ..] = data else { return };
    let limits = if a & 2 != 0 {
        Limits {
            max_header_bytes: 256,
            max_header_lines: 4,
        }
    } else {
        Limits::default()
    };
    let mut d = ResponseDecoder::new(limits, a & 1 != 0);
    let mut sink = Sink { open: false };
    let cut = u16::from_le_bytes([*a, *b]) as usize % (rest.len() + 1);
    let (x, y) = rest.split_at(cut);
    if d.feed(x, &mut sink).is_ok() && d.feed(y, &mut sink).is_ok() {
        let _ = d.eof(&mut sink);
    }
});
