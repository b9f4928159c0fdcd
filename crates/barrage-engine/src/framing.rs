//! Reply framing for raw TCP: where one reply ends, as a sans-IO decoder over byte slices.
//!
//! The decoder never copies or buffers reply bytes: it keeps a few bytes of state (bytes left
//! in the current reply, a partial length prefix, how much of a delimiter matched) and reports
//! reply boundaries to a [`Sink`]. So a connection needs no receive buffer of its own and the
//! worker reads every socket into one shared buffer.

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
    /// No reply: an exchange completes when its request is written.
    None,
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

    fn value(self, b: &[u8; 4]) -> u64 {
        match self {
            Self::U16Be => u16::from_be_bytes([b[0], b[1]]) as u64,
            Self::U16Le => u16::from_le_bytes([b[0], b[1]]) as u64,
            Self::U32Be => u32::from_be_bytes(*b) as u64,
            Self::U32Le => u32::from_le_bytes(*b) as u64,
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
    hdr: [u8; 4],
    hdr_len: u8,
    matched: usize,
}

impl Decoder {
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// Feed the bytes of one read.
    pub fn feed(&mut self, framing: &Framing, mut data: &[u8], sink: &mut impl Sink) {
        let collect = sink.collecting();
        match framing {
            Framing::None => {}
            Framing::Echo => {
                while !data.is_empty() {
                    if self.remaining == 0 {
                        match sink.expect_len() {
                            Some(n) if n > 0 => self.remaining = n,
                            _ => return sink.unexpected(data),
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
                    let mut k = self.matched;
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
                    self.matched = k;
                }
                if collect && start < data.len() {
                    sink.body(&data[start..]);
                }
            }
            Framing::Len(kind) => {
                let size = kind.size();
                while !data.is_empty() {
                    if !self.in_body {
                        let need = size - self.hdr_len as usize;
                        let take = need.min(data.len());
                        let at = self.hdr_len as usize;
                        self.hdr[at..at + take].copy_from_slice(&data[..take]);
                        self.hdr_len += take as u8;
                        data = &data[take..];
                        if (self.hdr_len as usize) < size {
                            return;
                        }
                        self.remaining = kind.value(&self.hdr);
                        self.hdr = [0; 4];
                        self.hdr_len = 0;
                        self.in_body = true;
                    }
                    let take = self.remaining.min(data.len() as u64) as usize;
                    if collect {
                        sink.body(&data[..take]);
                    }
                    self.remaining -= take as u64;
                    data = &data[take..];
                    if self.remaining == 0 {
                        self.in_body = false;
                        sink.frame();
                    }
                }
                // A zero-length body right at the end of the data.
                if self.in_body && self.remaining == 0 {
                    self.in_body = false;
                    sink.frame();
                }
            }
        }
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
            Decoder::default().feed(f, input, &mut r);
            r.frames
        };
        for i in 0..=input.len() {
            for j in i..=input.len() {
                let mut r = Rec::default();
                let mut d = Decoder::default();
                for part in [&input[..i], &input[i..j], &input[j..]] {
                    d.feed(f, part, &mut r);
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
            for i in 0..=input.len() {
                for j in i..=input.len() {
                    let mut r = Collect::default();
                    let mut d = Decoder::default();
                    for part in [&input[..i], &input[i..j], &input[j..]] {
                        d.feed(&f, part, &mut r);
                    }
                    assert_eq!(r.frames, want, "{f:?} split at {i},{j}");
                }
            }
        }
    }

    #[test]
    fn echo_frames_follow_request_lengths() {
        let mut r = Rec {
            lens: vec![3, 2],
            ..Default::default()
        };
        let mut d = Decoder::default();
        d.feed(&Framing::Echo, b"ab", &mut r);
        assert_eq!(r.frames, 0);
        d.feed(&Framing::Echo, b"cde", &mut r);
        assert_eq!(r.frames, 2);
        assert_eq!(r.body, b"abcde");
        d.feed(&Framing::Echo, b"zz", &mut r);
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
            Decoder::default().feed(&Framing::Len(k), &s, &mut r);
            assert_eq!(r.frames, 1, "{k:?}: second frame still needs its body");
        }
    }

    #[test]
    fn empty_delimiter_is_rejected() {
        assert!(Delimiter::new(b"").is_none());
    }
}
