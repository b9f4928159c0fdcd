//! The redis and memcached decoders on generated streams (seeded, deterministic): random
//! sequences of protocol fragments, valid or not, fed whole, cut in two at a random point and
//! byte by byte must give the same events and the same error. The fuzz targets
//! (`fuzz/fuzz_targets/{resp,memcache}_decode.rs`) check the same property on any bytes.

use barrage_engine::memcache::{McDecoder, McError, McReply, McSink};
use barrage_engine::redis::{RespDecoder, RespError, RespReply, RespSink};

#[derive(Default, PartialEq, Debug)]
struct RespEvents(Vec<Option<RespReply>>);

impl RespSink for RespEvents {
    fn reply(&mut self, r: RespReply) {
        self.0.push(Some(r));
    }
    fn push(&mut self) {
        self.0.push(None);
    }
}

#[derive(Default, PartialEq, Debug)]
struct McReplies(Vec<McReply>);

impl McSink for McReplies {
    fn reply(&mut self, r: McReply) {
        self.0.push(r);
    }
}

fn resp(depth: usize, pieces: &[&[u8]]) -> (RespEvents, Option<RespError>) {
    let mut d = RespDecoder::new(depth);
    let mut ev = RespEvents::default();
    for p in pieces {
        if let Err(e) = d.feed(p, &mut ev) {
            return (ev, Some(e));
        }
    }
    (ev, None)
}

fn mc(pieces: &[&[u8]]) -> (McReplies, Option<McError>) {
    let mut d = McDecoder::default();
    let mut r = McReplies::default();
    for p in pieces {
        if let Err(e) = d.feed(p, &mut r) {
            return (r, Some(e));
        }
    }
    (r, None)
}

/// xorshift64: a seeded, reproducible stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 as usize
    }

    /// Up to 30 fragments, concatenated.
    fn stream(&mut self, fragments: &[&[u8]]) -> Vec<u8> {
        let n = self.next() % 30;
        (0..n)
            .flat_map(|_| fragments[self.next() % fragments.len()].iter().copied())
            .collect()
    }
}

const ITERATIONS: usize = 20_000;

#[test]
fn resp_events_do_not_depend_on_where_reads_end() {
    let fragments: &[&[u8]] = &[
        b"+OK\r\n",
        b"$3\r\n",
        b"abc",
        b"\r\n",
        b"*2\r\n",
        b"%1\r\n",
        b"|1\r\n",
        b">1\r\n",
        b":1\r\n",
        b"_\r\n",
        b"#t\r\n",
        b"-E\r\n",
        b"$-1\r\n",
        b"*0\r\n",
        b"\r",
        b"\n",
        b"$0\r\n",
        b"=3\r\n",
        b"!1\r\n",
        b"x",
        b"(12\r\n",
        b",1.5\r\n",
        b"*-1\r\n",
        b"~1\r\n",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut valid = 0;
    for _ in 0..ITERATIONS {
        let data = rng.stream(fragments);
        let depth = if rng.next() & 1 == 0 { 3 } else { 32 };
        let cut = rng.next() % (data.len() + 1);
        let (a, b) = data.split_at(cut);
        let whole = resp(depth, &[&data]);
        let shown = String::from_utf8_lossy(&data);
        assert_eq!(resp(depth, &[a, b]), whole, "{shown:?} cut at {cut}");
        let bytes: Vec<&[u8]> = data.chunks(1).collect();
        assert_eq!(resp(depth, &bytes), whole, "{shown:?} byte by byte");
        valid += usize::from(whole.1.is_none());
    }
    // The generator reaches both outcomes often.
    assert!(valid > ITERATIONS / 50 && valid < ITERATIONS / 2, "{valid}");
}

#[test]
fn memcached_replies_do_not_depend_on_where_reads_end() {
    let long = [b'y'; 200];
    let fragments: &[&[u8]] = &[
        b"VALUE k 0 3\r\n",
        b"abc",
        b"\r\n",
        b"END\r\n",
        b"STORED\r\n",
        b"12\r\n",
        b"ERROR\r\n",
        b"CLIENT_ERROR x",
        b"VALUE ",
        b"k 0 0",
        b"\r",
        b"NOT_FOUND\r\n",
        b"SERVER_ERROR ",
        &long,
    ];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut valid = 0;
    for _ in 0..ITERATIONS {
        let data = rng.stream(fragments);
        let cut = rng.next() % (data.len() + 1);
        let (a, b) = data.split_at(cut);
        let whole = mc(&[&data]);
        let split = mc(&[a, b]);
        let bytes: Vec<&[u8]> = data.chunks(1).collect();
        let one = mc(&bytes);
        // A line over the 320-byte buffer fails only when a read cut it (a whole line is
        // parsed in place): those runs may differ.
        let too_long = |r: &(McReplies, Option<McError>)| matches!(r.1, Some(McError::LineTooLong));
        if too_long(&whole) || too_long(&split) || too_long(&one) {
            continue;
        }
        let shown = String::from_utf8_lossy(&data);
        assert_eq!(split, whole, "{shown:?} cut at {cut}");
        assert_eq!(one, whole, "{shown:?} byte by byte");
        valid += usize::from(whole.1.is_none());
    }
    assert!(valid > ITERATIONS / 50 && valid < ITERATIONS / 2, "{valid}");
}
