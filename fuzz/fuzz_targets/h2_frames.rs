//! Arbitrary bytes from a "server" into an HTTP/2 session past its handshake with a few
//! streams in flight (the frame reader, HPACK and the stream logic together), fed whole and
//! cut at a point taken from the first two bytes: it must never panic, every exchange ends in
//! exactly one of completed, failed or in flight, and where reads end must not change the
//! outcome. Bit 2 of the first byte makes the streams gRPC calls (the message reader and
//! the trailers' status too), bit 3 server-streaming ones.
#![no_main]

use barrage_engine::session::h2::fuzz_feed;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [a, b, rest @ ..] = data else { return };
    let n = 1 + (*a as usize % 4);
    let grpc = (a & 4 != 0).then_some(a & 8 != 0);
    let whole = fuzz_feed(&[rest], n, grpc);
    if let Ok((done, failed, left)) = whole {
        assert_eq!(done + failed + left, n as u64, "every exchange accounted for");
    }
    let cut = u16::from_le_bytes([*a, *b]) as usize % (rest.len() + 1);
    let (x, y) = rest.split_at(cut);
    let split = fuzz_feed(&[x, y], n, grpc);
    assert_eq!(whole.is_ok(), split.is_ok(), "cut at {cut}: {whole:?} vs {split:?}");
    if whole.is_ok() {
        assert_eq!(whole, split, "cut at {cut}");
    }
});
