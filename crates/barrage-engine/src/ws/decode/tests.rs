use super::*;
use crate::ws::encode::tests::unmask;
use crate::ws::encode_frame;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Rec {
    events: Vec<Ev>,
    data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Message(OpCode, u64),
    Ping(Vec<u8>),
    Pong,
    Close(Option<u16>, Vec<u8>),
}

impl FrameSink for Rec {
    fn data(&mut self, bytes: &[u8]) {
        self.data.extend_from_slice(bytes);
    }
    fn message(&mut self, op: OpCode, len: u64) {
        self.events.push(Ev::Message(op, len));
    }
    fn ping(&mut self, payload: &[u8]) {
        self.events.push(Ev::Ping(payload.to_vec()));
    }
    fn pong(&mut self) {
        self.events.push(Ev::Pong);
    }
    fn close(&mut self, code: Option<u16>, reason: &[u8]) {
        self.events.push(Ev::Close(code, reason.to_vec()));
    }
}

/// A server frame (unmasked, minimal length encoding) with first byte `b0`.
fn frame(b0: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![b0];
    let n = payload.len();
    if n < 126 {
        f.push(n as u8);
    } else if n <= 0xffff {
        f.push(126);
        f.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        f.push(127);
        f.extend_from_slice(&(n as u64).to_be_bytes());
    }
    f.extend_from_slice(payload);
    f
}

const FIN: u8 = 0x80;
const MAX: u64 = 16 << 20;

type Fed = (Rec, Result<(), WsError>);

fn decode(parts: &[&[u8]]) -> Fed {
    let mut d = FrameDecoder::new(MAX);
    let mut r = Rec::default();
    for p in parts {
        if let Err(e) = d.feed(p, &mut r) {
            return (r, Err(e));
        }
    }
    (r, Ok(()))
}

/// The outcome must not depend on how the stream was cut into reads: every pair of split
/// points for short inputs, every single split point near the edges and a stride elsewhere
/// for long ones.
fn all_splits(input: &[u8]) -> Fed {
    let whole = decode(&[input]);
    if input.len() <= 300 {
        for i in 0..=input.len() {
            for j in i..=input.len() {
                let got = decode(&[&input[..i], &input[i..j], &input[j..]]);
                assert_eq!(got, whole, "split at {i},{j}");
            }
        }
    } else {
        let n = input.len();
        let points = (0..=20).chain((n - 20)..=n).chain((0..n).step_by(997));
        for i in points {
            let got = decode(&[&input[..i], &input[i..]]);
            assert_eq!(got, whole, "split at {i}");
        }
    }
    whole
}

#[test]
fn client_frames_round_trip_through_the_decoder() {
    for (op, payload) in [
        (OpCode::Text, "héllo wörld".as_bytes().to_vec()),
        (OpCode::Binary, (0..=255).collect::<Vec<u8>>()),
        (OpCode::Binary, vec![7; 70_000]),
        (OpCode::Text, Vec::new()),
    ] {
        let mut out = Vec::new();
        encode_frame(op, &payload, [0xde, 0xad, 0xbe, 0xef], &mut out);
        let (code, fin, unmasked) = unmask(&out);
        assert_eq!(unmasked, payload);
        let server = frame(code | if fin { FIN } else { 0 }, &unmasked);
        let (r, res) = decode(&[&server]);
        assert_eq!(res, Ok(()));
        assert_eq!(r.events, [Ev::Message(op, payload.len() as u64)]);
        assert_eq!(r.data, payload);
    }
}

#[test]
fn every_length_class_at_every_split() {
    for len in [0usize, 1, 125, 126, 200, 65535, 65536, 70_001] {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7 % 256) as u8).collect();
        let mut input = frame(FIN | 0x2, &payload);
        input.extend_from_slice(&frame(FIN | 0x9, b"p"));
        let (r, res) = all_splits(&input);
        assert_eq!(res, Ok(()));
        assert_eq!(
            r.events,
            [
                Ev::Message(OpCode::Binary, len as u64),
                Ev::Ping(b"p".to_vec())
            ]
        );
        assert_eq!(r.data, payload, "{len}");
    }
}

#[test]
fn a_fragmented_text_with_a_ping_in_between() {
    let text = "κόσμε ok";
    let bytes = text.as_bytes();
    // Cut inside the two-byte 'κ' and inside 'ό' across fragments.
    let mut input = frame(0x1, &bytes[..1]);
    input.extend_from_slice(&frame(0x0, &bytes[1..4]));
    input.extend_from_slice(&frame(FIN | 0x9, b"are you there"));
    input.extend_from_slice(&frame(0x0, &[]));
    input.extend_from_slice(&frame(FIN | 0xA, b""));
    input.extend_from_slice(&frame(FIN, &bytes[4..]));
    input.extend_from_slice(&frame(FIN | 0x8, &[0x03, 0xe8, b'b', b'y', b'e']));
    let (r, res) = all_splits(&input);
    assert_eq!(res, Ok(()));
    assert_eq!(
        r.events,
        [
            Ev::Ping(b"are you there".to_vec()),
            Ev::Pong,
            Ev::Message(OpCode::Text, bytes.len() as u64),
            Ev::Close(Some(1000), b"bye".to_vec()),
        ]
    );
    assert_eq!(r.data, bytes);
}

#[test]
fn close_frames() {
    let (r, res) = decode(&[&frame(FIN | 0x8, &[])]);
    assert_eq!((r.events, res), (vec![Ev::Close(None, vec![])], Ok(())));
    for code in [
        1000u16, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999,
        4000, 4999,
    ] {
        let (r, res) = decode(&[&frame(FIN | 0x8, &code.to_be_bytes())]);
        assert_eq!(
            (r.events, res),
            (vec![Ev::Close(Some(code), vec![])], Ok(())),
            "{code}"
        );
    }
    for code in [
        0u16, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535,
    ] {
        let (_, res) = decode(&[&frame(FIN | 0x8, &code.to_be_bytes())]);
        assert_eq!(res, Err(WsError::InvalidCloseCode(code)));
    }
    assert_eq!(
        decode(&[&frame(FIN | 0x8, &[3])]).1,
        Err(WsError::CloseTooShort)
    );
    let bad_reason = frame(FIN | 0x8, &[0x03, 0xe8, 0xff, 0xfe]);
    assert_eq!(decode(&[&bad_reason]).1, Err(WsError::InvalidUtf8));
}

fn err(input: &[u8]) -> WsError {
    decode(&[input]).1.unwrap_err()
}

#[test]
fn protocol_violations() {
    assert_eq!(
        err(&[FIN | 0x1, 0x81, 1, 2, 3, 4, b'x']),
        WsError::MaskedServerFrame
    );
    for rsv in [0x40, 0x20, 0x10] {
        assert_eq!(err(&frame(FIN | rsv | 0x1, b"x")), WsError::ReservedBits);
    }
    for op in (3..=7).chain(11..=15) {
        assert_eq!(err(&frame(FIN | op, b"")), WsError::UnknownOpcode(op));
    }
    for op in [0x8, 0x9, 0xA] {
        assert_eq!(err(&frame(op, b"")), WsError::FragmentedControl);
        assert_eq!(err(&frame(FIN | op, &[b'a'; 126])), WsError::ControlTooLong);
    }
    assert_eq!(decode(&[&frame(FIN | 0x9, &[b'a'; 125])]).1, Ok(()));
    assert_eq!(err(&frame(FIN, b"x")), WsError::UnexpectedContinuation);
    assert_eq!(err(&frame(0x0, b"x")), WsError::UnexpectedContinuation);
    let mut open = frame(0x1, b"a");
    open.extend_from_slice(&frame(FIN | 0x2, b"b"));
    assert_eq!(err(&open), WsError::ExpectedContinuation);
    let mut open = frame(0x2, b"a");
    open.extend_from_slice(&frame(0x1, b"b"));
    assert_eq!(err(&open), WsError::ExpectedContinuation);
}

#[test]
fn an_absurd_length_fails_before_any_payload() {
    let mut d = FrameDecoder::new(u64::MAX);
    let mut header = vec![FIN | 0x2, 127];
    header.extend_from_slice(&(1u64 << 63).to_be_bytes());
    assert_eq!(
        d.feed(&header, &mut Rec::default()),
        Err(WsError::MessageTooLarge(1 << 63))
    );
    let mut d = FrameDecoder::new(1000);
    assert_eq!(
        d.feed(&[FIN | 0x2, 126, 0x03, 0xe9], &mut Rec::default()),
        Err(WsError::MessageTooLarge(1001))
    );
    // The limit counts the whole message across fragments.
    let mut d = FrameDecoder::new(10);
    let mut r = Rec::default();
    assert_eq!(d.feed(&frame(0x2, &[0; 6]), &mut r), Ok(()));
    assert_eq!(
        d.feed(&frame(FIN, &[0; 5]), &mut r),
        Err(WsError::MessageTooLarge(11))
    );
    let mut d = FrameDecoder::new(10);
    assert_eq!(d.feed(&frame(FIN | 0x2, &[0; 10]), &mut r), Ok(()));
}

#[test]
fn text_must_be_valid_utf8_across_fragments() {
    assert_eq!(err(&frame(FIN | 0x1, b"ok\xff")), WsError::InvalidUtf8);
    assert_eq!(
        err(&frame(FIN | 0x1, b"\xed\xa0\x80")),
        WsError::InvalidUtf8,
        "surrogate"
    );
    assert_eq!(
        err(&frame(FIN | 0x1, b"\xc0\xaf")),
        WsError::InvalidUtf8,
        "overlong"
    );
    assert_eq!(
        err(&frame(FIN | 0x1, b"\xe2\x82")),
        WsError::InvalidUtf8,
        "ends mid-sequence"
    );
    let mut split = frame(0x1, b"\xe2");
    split.extend_from_slice(&frame(FIN, b"\x82\xac"));
    assert_eq!(all_splits(&split).0.data, "€".as_bytes());
    let mut bad = frame(0x1, b"\xe2");
    bad.extend_from_slice(&frame(FIN, b"\x41\xac"));
    assert_eq!(err(&bad), WsError::InvalidUtf8);
    // Binary messages are not checked.
    assert_eq!(decode(&[&frame(FIN | 0x2, b"\xff\xfe")]).1, Ok(()));
    // Fail fast (Autobahn 6.4.x): an impossible prefix fails before the message ends.
    let mut d = FrameDecoder::new(MAX);
    let mut r = Rec::default();
    let head = [0x1, 10];
    assert_eq!(d.feed(&head, &mut r), Ok(()));
    assert_eq!(
        d.feed(b"\xce\xba\xf4\x90", &mut r),
        Err(WsError::InvalidUtf8)
    );
}

#[test]
fn errors_are_latched_until_reset() {
    let mut d = FrameDecoder::new(MAX);
    let mut r = Rec::default();
    assert_eq!(
        d.feed(&[FIN | 0x3, 0], &mut r),
        Err(WsError::UnknownOpcode(3))
    );
    assert_eq!(
        d.feed(&frame(FIN | 0x1, b"x"), &mut r),
        Err(WsError::UnknownOpcode(3))
    );
    d.reset();
    assert_eq!(d.feed(&frame(FIN | 0x1, b"x"), &mut r), Ok(()));
    assert_eq!(r.events, [Ev::Message(OpCode::Text, 1)]);
}

#[test]
fn the_decoder_is_small() {
    assert!(std::mem::size_of::<FrameDecoder>() <= 256);
}
