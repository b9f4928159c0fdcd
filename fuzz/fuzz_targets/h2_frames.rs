//! Arbitrary bytes from a "server" into an HTTP/2 session past its handshake with a few
//! streams in flight (the frame reader, HPACK, the stream logic and flow control together),
//! fed whole and cut at a point taken from the first two bytes: it must never panic, every
//! exchange ends in exactly one of completed, failed or in flight, no more request body goes
//! out than the requests hold, and where reads end must not change the outcome (nor the body
//! bytes sent). Bits of the first byte: 0-1 the streams (1-4), 2 gRPC calls (the message
//! reader and the trailers' status too), 3 server-streaming ones, 4 uploads of 100 KB
//! (bodies that wait for the server's WINDOW_UPDATEs and SETTINGS), 5 every answer kept as
//! owed (a full socket) and drained between parts.
#![no_main]

use barrage_engine::session::h2::{fuzz_feed, FuzzCase};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [a, b, rest @ ..] = data else { return };
    let case = FuzzCase {
        n: 1 + (*a as usize % 4),
        grpc: (a & 4 != 0).then_some(a & 8 != 0),
        upload: if a & 16 != 0 { 100_000 } else { 0 },
        owe: a & 32 != 0,
    };
    let whole = fuzz_feed(&[rest], case);
    if let Ok((done, failed, left, _)) = whole {
        assert_eq!(done + failed + left, case.n as u64, "every exchange accounted for");
    }
    let cut = u16::from_le_bytes([*a, *b]) as usize % (rest.len() + 1);
    let (x, y) = rest.split_at(cut);
    let split = fuzz_feed(&[x, y], case);
    assert_eq!(whole.is_ok(), split.is_ok(), "cut at {cut}: {whole:?} vs {split:?}");
    if whole.is_ok() {
        assert_eq!(whole, split, "cut at {cut}");
    }
});
