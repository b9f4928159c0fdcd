//! Reply framing for raw TCP: where one reply ends, as a sans-IO decoder over byte slices.
//!
//! The decoder never copies or buffers reply bytes: it keeps a few bytes of state (bytes left
//! in the current reply, a partial length prefix, how much of a delimiter matched) and reports
//! reply boundaries to a [`Sink`]. So a connection needs no receive buffer of its own and the
//! worker reads every socket into one shared buffer.

pub mod spec;

use crate::message::binary::IntKind;

/// How the end of a reply is recognised (`--expect`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Framing {
    /// As many bytes as the request had.
    Echo,
    /// Exactly N bytes (N > 0).
    Bytes(u64),
    /// Up to and including `\n`.
    Line,
    /// Up to and including this byte string (non-empty).
    Delim(Delimiter),
    /// A length prefix of this kind, then that many bytes.
    Len(LenPrefix),
    /// A length field somewhere in a header (`field:OFFSET:TYPE:ADJUST:STRIP`, MQTT's
    /// `mqtt`), as Netty's `LengthFieldBasedFrameDecoder` reads it.
    Field(LenField),
    /// No reply: an exchange completes when its request is written.
    None,
}

/// A frame whose length is a field of its header: the frame is `offset` bytes, the field, then
/// as many bytes as the field says plus `adjust`; `strip` bytes from its start are not part of
/// the reply a step looks into; a frame longer than `max` fails the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LenField {
    pub offset: u8,
    pub kind: IntKind,
    pub adjust: i64,
    pub strip: u32,
    pub max: u64,
}

/// The most header bytes before a length field.
pub const MAX_FIELD_OFFSET: u8 = 16;

/// The default `--max-frame`.
pub const DEFAULT_MAX_FRAME: u64 = 16 << 20;

impl LenField {
    /// MQTT's frames: a fixed header byte, the remaining length as a variable byte integer.
    pub const MQTT: LenField = LenField {
        offset: 1,
        kind: IntKind::Mqtt,
        adjust: 0,
        strip: 0,
        max: DEFAULT_MAX_FRAME,
    };

    /// `field:OFFSET:TYPE[:ADJUST[:STRIP]]` (after `field:`).
    pub fn parse(s: &str) -> Result<LenField, String> {
        let parts: Vec<&str> = s.split(':').collect();
        let usage = "write field:OFFSET:TYPE[:ADJUST[:STRIP]], e.g. field:1:u16be (a type byte, \
                     then a u16be length of the rest) or field:0:u32be:-4 (a length that counts \
                     itself)";
        if !(2..=4).contains(&parts.len()) {
            return Err(usage.into());
        }
        let offset: u8 = parts[0]
            .parse()
            .ok()
            .filter(|o| *o <= MAX_FIELD_OFFSET)
            .ok_or_else(|| format!("OFFSET '{}' is 0 to {MAX_FIELD_OFFSET}; {usage}", parts[0]))?;
        let kind = IntKind::parse(parts[1]).ok_or_else(|| {
            format!(
                "TYPE '{}' is one of u8, u16be, u16le, u32be, u32le, u64be, u64le, varint, \
                 mqtt_varint",
                parts[1]
            )
        })?;
        let adjust = match parts.get(2) {
            Some(a) => a
                .trim_start_matches('+')
                .parse()
                .map_err(|_| format!("ADJUST '{a}' is a whole number, e.g. -4 or 2"))?,
            None => 0,
        };
        let strip = match parts.get(3) {
            Some(a) => a
                .parse()
                .map_err(|_| format!("STRIP '{a}' is a number of bytes"))?,
            None => 0,
        };
        Ok(LenField {
            offset,
            kind,
            adjust,
            strip,
            max: DEFAULT_MAX_FRAME,
        })
    }
}

/// A frame the decoder cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("a frame of {0} bytes, over --max-frame {1}")]
    TooLong(u64, u64),
    #[error("a frame whose length field says {0} bytes, less than its header")]
    TooShort(i128),
    #[error("a malformed length field (a variable-length integer that does not end)")]
    Malformed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LenPrefix {
    U16Be,
    U16Le,
    U32Be,
    U32Le,
}

impl LenPrefix {
    pub fn size(self) -> usize {
        match self {
            Self::U16Be | Self::U16Le => 2,
            Self::U32Be | Self::U32Le => 4,
        }
    }

    /// The integer type of the prefix.
    fn int_kind(self) -> IntKind {
        let (bytes, le) = match self {
            Self::U16Be => (2, false),
            Self::U16Le => (2, true),
            Self::U32Be => (4, false),
            Self::U32Le => (4, true),
        };
        IntKind::Fixed {
            bytes,
            le,
            signed: false,
        }
    }
}

/// A delimiter with its KMP failure table, so matches spanning reads cost no buffering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delimiter {
    bytes: Box<[u8]>,
    fail: Box<[usize]>,
}

impl Delimiter {
    /// `None` for an empty delimiter.
    pub fn new(bytes: &[u8]) -> Option<Self> {
        if bytes.is_empty() {
            return None;
        }
        let mut fail = vec![0usize; bytes.len()];
        let mut k = 0;
        for i in 1..bytes.len() {
            while k > 0 && bytes[i] != bytes[k] {
                k = fail[k - 1];
            }
            if bytes[i] == bytes[k] {
                k += 1;
            }
            fail[i] = k;
        }
        Some(Self {
            bytes: bytes.into(),
            fail: fail.into(),
        })
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl Framing {
    pub fn describe(&self) -> String {
        match self {
            Self::Echo => "echo".into(),
            Self::Bytes(n) => format!("bytes:{n}"),
            Self::Line => "line".into(),
            Self::Delim(d) => format!("delim:{}", crate::message::escape(d.as_bytes())),
            Self::Len(k) => format!(
                "len:{}",
                match k {
                    LenPrefix::U16Be => "u16be",
                    LenPrefix::U16Le => "u16le",
                    LenPrefix::U32Be => "u32be",
                    LenPrefix::U32Le => "u32le",
                }
            ),
            Self::Field(f)
                if *f
                    == LenField {
                        max: f.max,
                        ..LenField::MQTT
                    } =>
            {
                "mqtt".into()
            }
            Self::Field(f) => format!(
                "field:{}:{}:{}:{}",
                f.offset,
                f.kind.name(),
                f.adjust,
                f.strip
            ),
            Self::None => "none".into(),
        }
    }
}

/// Receives what the decoder finds.
pub trait Sink {
    /// Length of the reply that starts now (echo framing only); `None` if nothing is in flight.
    fn expect_len(&mut self) -> Option<u64>;
    /// Bytes of the current echo reply, in order, for `--verify`.
    fn body(&mut self, bytes: &[u8]);
    /// Whether every framing should hand its frames' bytes to `body` (echo framing always
    /// does; the others only when someone looks into replies).
    fn collecting(&self) -> bool {
        false
    }
    /// A reply is complete.
    fn frame(&mut self);
    /// Echo framing: bytes arrived while no reply was expected.
    fn unexpected(&mut self, bytes: &[u8]);
}

/// Per-connection decoder state: a handful of bytes.
#[derive(Clone, Debug, Default)]
pub struct Decoder {
    remaining: u64,
    in_body: bool,
    /// A length prefix's bytes, or a length field's (never the header before it).
    hdr: [u8; 10],
    /// Bytes of the prefix (`Len`) or of the header (`Field`) seen so far.
    hdr_len: u8,
    /// `Delim`: how much of the delimiter matched; `Field`: frame bytes still to skip (at most
    /// its `strip`, a u32). A u32 keeps the decoder, so a raw TCP connection, 8 bytes smaller.
    matched: u32,
}

impl Decoder {
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// Feed the bytes of one read.
    pub fn feed(
        &mut self,
        framing: &Framing,
        mut data: &[u8],
        sink: &mut impl Sink,
    ) -> Result<(), FrameError> {
        let collect = sink.collecting();
        match framing {
            Framing::Field(f) => return self.feed_field(f, data, sink, collect),
            Framing::None => {}
            Framing::Echo => {
                while !data.is_empty() {
                    if self.remaining == 0 {
                        match sink.expect_len() {
                            Some(n) if n > 0 => self.remaining = n,
                            _ => {
                                sink.unexpected(data);
                                return Ok(());
                            }
                        }
                    }
                    let take = self.remaining.min(data.len() as u64) as usize;
                    sink.body(&data[..take]);
                    self.remaining -= take as u64;
                    data = &data[take..];
                    if self.remaining == 0 {
                        sink.frame();
                    }
                }
            }
            Framing::Bytes(n) => {
                while !data.is_empty() {
                    if self.remaining == 0 {
                        self.remaining = *n;
                    }
                    let take = self.remaining.min(data.len() as u64) as usize;
                    if collect {
                        sink.body(&data[..take]);
                    }
                    self.remaining -= take as u64;
                    data = &data[take..];
                    if self.remaining == 0 {
                        sink.frame();
                    }
                }
            }
            Framing::Line if collect => {
                // A line's body is the line without its `\n`.
                while let Some(i) = memchr::memchr(b'\n', data) {
                    sink.body(&data[..i]);
                    sink.frame();
                    data = &data[i + 1..];
                }
                if !data.is_empty() {
                    sink.body(data);
                }
            }
            Framing::Line => {
                for _ in data.iter().filter(|&&b| b == b'\n') {
                    sink.frame();
                }
            }
            Framing::Delim(d) => {
                let (bytes, fail) = (&d.bytes, &d.fail);
                // Collected bodies keep their delimiter (it may span reads).
                let mut start = 0;
                for (i, &b) in data.iter().enumerate() {
                    let mut k = self.matched as usize;
                    while k > 0 && b != bytes[k] {
                        k = fail[k - 1];
                    }
                    if b == bytes[k] {
                        k += 1;
                    }
                    if k == bytes.len() {
                        if collect {
                            sink.body(&data[start..=i]);
                            start = i + 1;
                        }
                        sink.frame();
                        k = 0;
                    }
                    self.matched = k as u32;
                }
                if collect && start < data.len() {
                    sink.body(&data[start..]);
                }
            }
            // A length prefix is a length field at the start, stripped, unbounded.
            Framing::Len(kind) => {
                let f = LenField {
                    offset: 0,
                    kind: kind.int_kind(),
                    adjust: 0,
                    strip: kind.size() as u32,
                    max: u64::MAX,
                };
                return self.feed_field(&f, data, sink, collect);
            }
        }
        Ok(())
    }

    /// `Framing::Field`: the header gathered a byte at a time up to its length field's end,
    /// then the rest of the frame streamed (never buffered), `strip` bytes left out of what
    /// is collected.
    fn feed_field(
        &mut self,
        f: &LenField,
        mut data: &[u8],
        sink: &mut impl Sink,
        collect: bool,
    ) -> Result<(), FrameError> {
        let off = f.offset as usize;
        let strip = f.strip as usize;
        while !data.is_empty() {
            if !self.in_body {
                let b = data[0];
                data = &data[1..];
                let pos = self.hdr_len as usize;
                self.hdr_len += 1;
                if collect && pos >= strip {
                    sink.body(&[b]);
                }
                if pos < off {
                    continue;
                }
                let k = pos - off;
                self.hdr[k] = b;
                let Some((v, w)) = f.kind.decode(&self.hdr[..=k]) else {
                    if k + 1 >= f.kind.max_len() {
                        return Err(FrameError::Malformed);
                    }
                    continue;
                };
                let head = (off + w) as i128;
                let value = if f.kind.signed() {
                    i128::from(v as i64)
                } else {
                    i128::from(v)
                };
                let total = head + value + i128::from(f.adjust);
                if total < head {
                    return Err(FrameError::TooShort(total));
                }
                if total > i128::from(f.max) {
                    return Err(FrameError::TooLong(
                        total.min(i128::from(u64::MAX)) as u64,
                        f.max,
                    ));
                }
                self.matched = strip.saturating_sub(head as usize) as u32;
                self.remaining = (total - head) as u64;
                self.hdr_len = 0;
                self.in_body = true;
            }
            let take = self.remaining.min(data.len() as u64) as usize;
            let skip = (self.matched as usize).min(take);
            if collect && take > skip {
                sink.body(&data[skip..take]);
            }
            self.matched -= skip as u32;
            self.remaining -= take as u64;
            data = &data[take..];
            if self.remaining == 0 {
                self.in_body = false;
                sink.frame();
            }
        }
        if self.in_body && self.remaining == 0 {
            self.in_body = false;
            sink.frame();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Rec {
        lens: Vec<u64>,
        frames: usize,
        body: Vec<u8>,
        unexpected: Vec<u8>,
    }

    impl Sink for Rec {
        fn expect_len(&mut self) -> Option<u64> {
            (!self.lens.is_empty()).then(|| self.lens.remove(0))
        }
        fn body(&mut self, b: &[u8]) {
            self.body.extend_from_slice(b);
        }
        fn frame(&mut self) {
            self.frames += 1;
        }
        fn unexpected(&mut self, b: &[u8]) {
            self.unexpected.extend_from_slice(b);
        }
    }

    /// Feed `input` split at every possible pair of points; the frame count must not depend
    /// on how the stream was cut into reads.
    fn frames_all_splits(f: &Framing, input: &[u8]) -> usize {
        let whole = {
            let mut r = Rec::default();
            Decoder::default().feed(f, input, &mut r).unwrap();
            r.frames
        };
        for i in 0..=input.len() {
            for j in i..=input.len() {
                let mut r = Rec::default();
                let mut d = Decoder::default();
                for part in [&input[..i], &input[i..j], &input[j..]] {
                    d.feed(f, part, &mut r).unwrap();
                }
                assert_eq!(r.frames, whole, "{f:?} split at {i},{j}");
            }
        }
        whole
    }

    /// A sink that looks into replies: every frame's bytes, as collected.
    #[derive(Default)]
    struct Collect {
        cur: Vec<u8>,
        frames: Vec<Vec<u8>>,
    }

    impl Sink for Collect {
        fn expect_len(&mut self) -> Option<u64> {
            None
        }
        fn body(&mut self, b: &[u8]) {
            self.cur.extend_from_slice(b);
        }
        fn collecting(&self) -> bool {
            true
        }
        fn frame(&mut self) {
            self.frames.push(std::mem::take(&mut self.cur));
        }
        fn unexpected(&mut self, _b: &[u8]) {}
    }

    /// `input` cut at every pair of points collects `want`, frame by frame.
    fn collected_at_every_split<W: AsRef<[u8]> + std::fmt::Debug>(
        f: &Framing,
        input: &[u8],
        want: &[W],
    ) {
        let want: Vec<&[u8]> = want.iter().map(AsRef::as_ref).collect();
        for i in 0..=input.len() {
            for j in i..=input.len() {
                let mut r = Collect::default();
                let mut d = Decoder::default();
                for part in [&input[..i], &input[i..j], &input[j..]] {
                    d.feed(f, part, &mut r).unwrap();
                }
                assert_eq!(r.frames, want, "{f:?} split at {i},{j}");
            }
        }
    }

    #[test]
    fn collected_frames_are_the_same_whatever_the_reads() {
        type Case<'a> = (Framing, &'a [u8], Vec<&'a [u8]>);
        let cases: [Case; 4] = [
            (Framing::Line, b"ab\n\ncd\r\n", vec![b"ab", b"", b"cd\r"]),
            (
                Framing::Delim(Delimiter::new(b"::").unwrap()),
                b"a:b::c::",
                vec![b"a:b::", b"c::"],
            ),
            (Framing::Bytes(3), b"abcdef", vec![b"abc", b"def"]),
            (
                Framing::Len(LenPrefix::U16Be),
                b"\x00\x02hi\x00\x00\x00\x01!",
                vec![b"hi", b"", b"!"],
            ),
        ];
        for (f, input, want) in cases {
            collected_at_every_split(&f, input, &want);
        }
    }

    #[test]
    fn echo_frames_follow_request_lengths() {
        let mut r = Rec {
            lens: vec![3, 2],
            ..Default::default()
        };
        let mut d = Decoder::default();
        d.feed(&Framing::Echo, b"ab", &mut r).unwrap();
        assert_eq!(r.frames, 0);
        d.feed(&Framing::Echo, b"cde", &mut r).unwrap();
        assert_eq!(r.frames, 2);
        assert_eq!(r.body, b"abcde");
        d.feed(&Framing::Echo, b"zz", &mut r).unwrap();
        assert_eq!(r.unexpected, b"zz");
    }

    #[test]
    fn fixed_line_delim_and_length_framings() {
        assert_eq!(frames_all_splits(&Framing::Bytes(3), b"abcdefgh"), 2);
        assert_eq!(
            frames_all_splits(&Framing::Line, b"+PONG\r\n+PONG\r\n+PO"),
            2
        );
        let d = Framing::Delim(Delimiter::new(b"\r\n\r\n").unwrap());
        assert_eq!(frames_all_splits(&d, b"a\r\n\r\nb\r\n\r\r\n\r\n"), 2);
        let d = Framing::Delim(Delimiter::new(b"aab").unwrap());
        assert_eq!(frames_all_splits(&d, b"aaabaab"), 2);
        let mut stream = vec![0, 3, b'x', b'y', b'z', 0, 0, 0, 1];
        stream.push(b'q');
        assert_eq!(
            frames_all_splits(&Framing::Len(LenPrefix::U16Be), &stream),
            3
        );
        assert_eq!(
            frames_all_splits(
                &Framing::Len(LenPrefix::U32Le),
                &[2, 0, 0, 0, 7, 7, 0, 0, 0, 0]
            ),
            2
        );
        assert_eq!(frames_all_splits(&Framing::None, b"anything"), 0);
    }

    #[test]
    fn length_prefix_reads_each_endianness() {
        for (k, hdr) in [
            (LenPrefix::U16Be, vec![0u8, 2]),
            (LenPrefix::U16Le, vec![2, 0]),
            (LenPrefix::U32Be, vec![0, 0, 0, 2]),
            (LenPrefix::U32Le, vec![2, 0, 0, 0]),
        ] {
            let mut s = hdr.clone();
            s.extend_from_slice(b"ok");
            s.extend_from_slice(&hdr);
            let mut r = Rec::default();
            Decoder::default()
                .feed(&Framing::Len(k), &s, &mut r)
                .unwrap();
            assert_eq!(r.frames, 1, "{k:?}: second frame still needs its body");
        }
    }

    fn field(s: &str) -> Framing {
        Framing::Field(LenField::parse(s).unwrap())
    }

    #[test]
    fn length_fields_frame_as_netty_reads_them() {
        type Case<'a> = (Framing, Vec<u8>, Vec<Vec<u8>>);
        let mut big = vec![0x30, 0xc8, 0x01];
        big.extend(std::iter::repeat_n(b'm', 200));
        let cases: Vec<Case> = vec![
            // A type byte, then a u16be length of the rest; the whole frame collected.
            (
                field("1:u16be"),
                vec![9, 0, 2, b'h', b'i', 8, 0, 0, 7, 0, 1, b'!'],
                vec![
                    vec![9, 0, 2, b'h', b'i'],
                    vec![8, 0, 0],
                    vec![7, 0, 1, b'!'],
                ],
            ),
            // A u32be length that counts itself, stripped.
            (
                field("0:u32be:-4:4"),
                vec![0, 0, 0, 6, b'o', b'k', 0, 0, 0, 4],
                vec![b"ok".to_vec(), vec![]],
            ),
            // Strip past the header: the first body byte too.
            (
                field("0:u8:0:2"),
                vec![3, b'a', b'b', b'c'],
                vec![b"bc".to_vec()],
            ),
            // A little-endian length after a 2-byte header, with an adjustment for a
            // trailer.
            (
                field("2:u16le:1"),
                vec![0xaa, 0xbb, 1, 0, b'x', b'\n'],
                vec![vec![0xaa, 0xbb, 1, 0, b'x', b'\n']],
            ),
            // MQTT: PINGRESP (no remaining bytes), then a PUBLISH of 200 bytes.
            (
                Framing::Field(LenField::MQTT),
                [&[0xd0u8, 0][..], &big].concat(),
                vec![vec![0xd0, 0], big.clone()],
            ),
            // A varint length of 129.
            (
                field("0:varint"),
                [&[0x81u8, 0x01, b'z'][..], &[b'v'; 128][..]].concat(),
                vec![[&[0x81u8, 0x01, b'z'][..], &[b'v'; 128][..]].concat()],
            ),
        ];
        for (f, input, want) in cases {
            collected_at_every_split(&f, &input, &want);
            // Not collecting: the same frames counted.
            let mut r = Rec::default();
            Decoder::default().feed(&f, &input, &mut r).unwrap();
            assert_eq!(r.frames, want.len(), "{f:?}");
        }
    }

    #[test]
    fn length_fields_that_cannot_be_taken_are_errors() {
        let mut f = LenField::parse("0:u32be").unwrap();
        f.max = 1024;
        let mut r = Rec::default();
        assert_eq!(
            Decoder::default().feed(&Framing::Field(f), &[0, 0, 4, 0], &mut r),
            Err(FrameError::TooLong(1028, 1024))
        );
        let f = Framing::Field(LenField::parse("0:u16be:-3").unwrap());
        assert!(matches!(
            Decoder::default().feed(&f, &[0, 0], &mut r),
            Err(FrameError::TooShort(_))
        ));
        let f = Framing::Field(LenField::MQTT);
        assert_eq!(
            Decoder::default().feed(&f, &[0x30, 0xff, 0xff, 0xff, 0xff], &mut r),
            Err(FrameError::Malformed)
        );
        let f = Framing::Field(LenField::parse("0:i16be").unwrap());
        assert!(matches!(
            Decoder::default().feed(&f, &[0xff, 0xfe], &mut r),
            Err(FrameError::TooShort(_))
        ));
        for bad in [
            "",
            "1",
            "17:u8",
            "x:u8",
            "0:u12",
            "0:u8:x",
            "0:u8:0:-1",
            "0:u8:0:0:0",
        ] {
            assert!(LenField::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Framing::Field(LenField::MQTT).describe(), "mqtt");
        assert_eq!(field("2:u16le:1:4").describe(), "field:2:u16le:1:4");
    }

    #[test]
    fn empty_delimiter_is_rejected() {
        assert!(Delimiter::new(b"").is_none());
    }
}
