//! Stable-Rust stand-in for the cargo-fuzz targets: seeded pseudo-random and mutated inputs,
//! cut at random points, must never panic or hang the decoders.

use super::{Limits, ResponseDecoder, ResponseSink};

/// xorshift64*: deterministic, no dependency.
pub(crate) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    /// Random bytes, biased towards the ones protocols care about.
    pub fn bytes(&mut self, max_len: usize, alphabet: &[u8]) -> Vec<u8> {
        let len = self.below(max_len + 1);
        (0..len)
            .map(|_| match self.below(4) {
                0 => self.next() as u8,
                _ => alphabet[self.below(alphabet.len())],
            })
            .collect()
    }

    /// A few random edits of `input`: byte flips, insertions, deletions, duplications.
    pub fn mutate(&mut self, input: &[u8], alphabet: &[u8]) -> Vec<u8> {
        let mut v = input.to_vec();
        for _ in 0..=self.below(4) {
            let at = self.below(v.len() + 1);
            match self.below(5) {
                0 if at < v.len() => v[at] ^= 1 << self.below(8),
                1 => v.insert(at, alphabet[self.below(alphabet.len())]),
                2 if at < v.len() => {
                    v.remove(at);
                }
                3 => {
                    let end = (at + self.below(16)).min(v.len());
                    let dup = v[at..end].to_vec();
                    v.splice(at..at, dup);
                }
                _ => {
                    let end = (at + self.below(8)).min(v.len());
                    v.truncate(end.max(at));
                }
            }
        }
        v
    }

    /// `input` cut at 0 to 3 random points.
    pub fn split<'a>(&mut self, input: &'a [u8]) -> Vec<&'a [u8]> {
        let mut cuts: Vec<usize> = (0..self.below(4))
            .map(|_| self.below(input.len() + 1))
            .collect();
        cuts.sort_unstable();
        let mut parts = Vec::new();
        let mut from = 0;
        for c in cuts {
            parts.push(&input[from..c]);
            from = c;
        }
        parts.push(&input[from..]);
        parts
    }
}

struct Count(usize);

impl ResponseSink for Count {
    fn head(&mut self, _status: u16) {
        self.0 += 1;
    }
    fn body(&mut self, bytes: &[u8]) {
        self.0 += bytes.len();
    }
    fn complete(&mut self, _status: u16, _keep_alive: bool) {
        self.0 += 1;
    }
}

const HTTP_ALPHABET: &[u8] = b"HTTP/1.0 2345:;,\r\n\r\n\t0123456789abcdefABCDEF-chunkedContent-LengthTransfer-Encodingclosekeep-alive";

const SAMPLES: [&[u8]; 6] = [
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: v\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx",
    b"HTTP/1.1 200 OK\r\n\r\nuntil close",
    b"HTTP/1.1 304 Not Modified\r\nConnection: close\r\n\r\n",
];

fn run_http(parts: &[&[u8]], small: bool, head_requests: bool) {
    let limits = if small {
        Limits {
            max_header_bytes: 64,
            max_header_lines: 3,
        }
    } else {
        Limits::default()
    };
    let mut d = ResponseDecoder::new(limits, head_requests);
    let mut sink = Count(0);
    for p in parts {
        if d.feed(p, &mut sink).is_err() {
            break;
        }
    }
    let _ = d.eof(&mut sink);
    let _ = d.in_response();
}

#[test]
fn http_decoder_survives_random_and_mutated_input() {
    let mut rng = Rng::new(0x5eed_4177);
    for i in 0..4000 {
        let input = if i % 2 == 0 {
            rng.bytes(200, HTTP_ALPHABET)
        } else {
            let sample = SAMPLES[rng.below(SAMPLES.len())];
            let mut doubled = sample.to_vec();
            doubled.extend_from_slice(SAMPLES[rng.below(SAMPLES.len())]);
            rng.mutate(&doubled, HTTP_ALPHABET)
        };
        let parts = rng.split(&input);
        run_http(&parts, i % 7 == 0, i % 5 == 0);
    }
}
