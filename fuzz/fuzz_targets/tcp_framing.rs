//! Arbitrary bytes into the raw-TCP reply decoder under every framing: the first byte picks
//! the framing, the next ones its parameter; the rest is fed once whole and once cut at a
//! point taken from the second byte. Where a read ends must not change what is found: the
//! same replies, the same echo bodies and unexpected bytes.
#![no_main]

use barrage_engine::framing::{Decoder, LenField, Sink};
use barrage_engine::message::binary::IntKind;
use barrage_engine::{Delimiter, Framing, LenPrefix};
use libfuzzer_sys::fuzz_target;

/// Records what the decoder reports; echo replies have lengths 2, 3 ... 7, 1, 2 ...
#[derive(Default, PartialEq, Debug)]
struct Rec {
    asked: u64,
    frames: usize,
    body: Vec<u8>,
    unexpected: Vec<u8>,
}

impl Sink for Rec {
    fn expect_len(&mut self) -> Option<u64> {
        self.asked += 1;
        // Every tenth reply finds nothing in flight, so `unexpected` is exercised too.
        (self.asked % 10 != 0).then_some(self.asked % 7 + 1)
    }
    fn body(&mut self, bytes: &[u8]) {
        assert!(!bytes.is_empty(), "an empty body slice");
        self.body.extend_from_slice(bytes);
    }
    fn frame(&mut self) {
        self.frames += 1;
    }
    fn unexpected(&mut self, bytes: &[u8]) {
        self.unexpected.extend_from_slice(bytes);
    }
}

fn framing(pick: u8, param: &[u8]) -> Option<Framing> {
    Some(match pick % 7 {
        5 => {
            const KINDS: [&str; 16] = [
                "u8", "i8", "u16be", "u16le", "i16be", "i16le", "u32be", "u32le", "i32be",
                "i32le", "u64be", "u64le", "i64be", "i64le", "varint", "mqtt_varint",
            ];
            let p = param;
            Framing::Field(LenField {
                offset: p[0] % 17,
                kind: IntKind::parse(KINDS[usize::from(p[1]) % 16])?,
                adjust: i64::from(p[2] as i8),
                strip: u32::from(p[2] >> 4),
                max: 1 << 16,
            })
        }
        0 => Framing::Echo,
        1 => Framing::Bytes(u64::from(*param.first()?) + 1),
        2 => Framing::Line,
        3 => Framing::Delim(Delimiter::new(&param[..param.len().min(3)])?),
        4 => Framing::Len(
            [
                LenPrefix::U16Be,
                LenPrefix::U16Le,
                LenPrefix::U32Be,
                LenPrefix::U32Le,
            ][usize::from(*param.first()?) % 4],
        ),
        _ => Framing::None,
    })
}

fuzz_target!(|data: &[u8]| {
    let [pick, cut, p0, p1, p2, rest @ ..] = data else {
        return;
    };
    let Some(f) = framing(*pick, &[*p0, *p1, *p2]) else {
        return;
    };
    let mut whole = Rec::default();
    let whole_ok = Decoder::default().feed(&f, rest, &mut whole);
    let at = usize::from(*cut) % (rest.len() + 1);
    let (x, y) = rest.split_at(at);
    let mut split = Rec::default();
    let mut d = Decoder::default();
    let split_ok = d.feed(&f, x, &mut split).and_then(|()| d.feed(&f, y, &mut split));
    // A frame that cannot be taken is found however the reads fall, and ends the decoding.
    assert_eq!(whole_ok.is_ok(), split_ok.is_ok(), "{f:?} cut at {at}");
    if whole_ok.is_err() {
        assert!(matches!(f, Framing::Field(_)));
        return;
    }
    // Bytes nobody waited for end their read (the rest of the read is dropped), so only runs
    // without them must agree exactly; every other framing keeps no such rule.
    if whole.unexpected.is_empty() && split.unexpected.is_empty() {
        assert_eq!(whole, split, "{f:?} cut at {at}");
    }
    if !matches!(f, Framing::Echo) {
        assert!(whole.body.is_empty() && whole.unexpected.is_empty());
    }
    match f {
        Framing::Line => {
            assert_eq!(whole.frames, rest.iter().filter(|&&b| b == b'\n').count());
        }
        Framing::Bytes(n) => assert_eq!(whole.frames as u64, rest.len() as u64 / n),
        Framing::None => assert_eq!(whole.frames, 0),
        _ => {}
    }
});
