//! Stable-Rust stand-in for the cargo-fuzz targets: seeded pseudo-random and mutated frames
//! and handshake responses must never panic or hang the decoders.

use super::{accept_for, FrameDecoder, FrameSink, HandshakeDecoder, OpCode};
use crate::http::smoke_tests::Rng;
use crate::http::Limits;

struct Count(u64);

impl FrameSink for Count {
    fn data(&mut self, bytes: &[u8]) {
        self.0 += bytes.len() as u64;
    }
    fn message(&mut self, _op: OpCode, len: u64) {
        self.0 += len;
    }
    fn ping(&mut self, payload: &[u8]) {
        assert!(payload.len() <= 125);
    }
    fn close(&mut self, _code: Option<u16>, reason: &[u8]) {
        assert!(std::str::from_utf8(reason).is_ok());
    }
}

const FRAME_ALPHABET: &[u8] = &[
    0x81, 0x01, 0x02, 0x82, 0x80, 0x88, 0x89, 0x8a, 0x00, 0x7e, 0x7f, 0x7d, 0x03, 0xe8, 0xff, b'a',
    0xce, 0xba, 0xe2, 0x82, 0xac, 0xf0, 0x9f,
];

fn samples() -> Vec<Vec<u8>> {
    vec![
        vec![0x81, 0x05, b'h', b'e', b'l', b'l', b'o'],
        vec![
            0x01, 0x02, 0xce, 0xba, 0x89, 0x01, b'p', 0x80, 0x02, b'o', b'k',
        ],
        vec![0x82, 0x7e, 0x00, 0x03, 1, 2, 3],
        vec![0x82, 0x7f, 0, 0, 0, 0, 0, 0, 0, 2, 9, 9],
        vec![0x88, 0x04, 0x03, 0xe8, b'o', b'k', 0x8a, 0x00],
    ]
}

#[test]
fn frame_decoder_survives_random_and_mutated_input() {
    let mut rng = Rng::new(0x00f4_a3e5);
    let samples = samples();
    for i in 0..4000 {
        let input = if i % 2 == 0 {
            rng.bytes(200, FRAME_ALPHABET)
        } else {
            let mut joined = samples[rng.below(samples.len())].clone();
            joined.extend_from_slice(&samples[rng.below(samples.len())]);
            rng.mutate(&joined, FRAME_ALPHABET)
        };
        let mut d = FrameDecoder::new(if i % 3 == 0 { 8 } else { u64::MAX });
        let mut sink = Count(0);
        for p in rng.split(&input) {
            if d.feed(p, &mut sink).is_err() {
                break;
            }
        }
    }
}

#[test]
fn handshake_decoder_survives_random_and_mutated_input() {
    const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
    let valid = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\nSec-WebSocket-Protocol: chat\r\n\r\n",
        accept_for(KEY)
    )
    .into_bytes();
    let valid = [&valid[..], &[0x81, 0x00]].concat();
    let alphabet = b"HTTP/1.1 101:\r\n,UpgradeConnectionwebsocketchat";
    let mut rng = Rng::new(0x4a5d);
    for i in 0..3000 {
        let input = if i % 4 == 0 {
            rng.bytes(200, alphabet)
        } else {
            rng.mutate(&valid, alphabet)
        };
        let mut d = HandshakeDecoder::new(KEY, Some("chat"), Limits::default());
        let parts = rng.split(&input);
        let mut seen = 0;
        for p in &parts {
            match d.feed(p) {
                Ok(super::Handshake::Done { consumed }) => {
                    assert!(consumed <= p.len());
                    assert!(seen + consumed <= input.len());
                    break;
                }
                Ok(super::Handshake::Incomplete) => seen += p.len(),
                Err(_) => break,
            }
        }
    }
}
