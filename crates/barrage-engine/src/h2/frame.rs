//! HTTP/2 frames (RFC 9113, section 4 and 6): a sans-IO reader that cuts input into frames
//! and hands their contents on in pieces (payloads are never buffered here), and the writers
//! of the frames a client sends.

/// Frame types.
pub mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const PRIORITY: u8 = 0x2;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PUSH_PROMISE: u8 = 0x5;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags.
pub mod flag {
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

/// SETTINGS identifiers.
pub mod setting {
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    pub const ENABLE_PUSH: u16 = 0x2;
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
}

/// The name of a frame type, for error messages.
pub fn kind_name(k: u8) -> &'static str {
    match k {
        kind::DATA => "DATA",
        kind::HEADERS => "HEADERS",
        kind::PRIORITY => "PRIORITY",
        kind::RST_STREAM => "RST_STREAM",
        kind::SETTINGS => "SETTINGS",
        kind::PUSH_PROMISE => "PUSH_PROMISE",
        kind::PING => "PING",
        kind::GOAWAY => "GOAWAY",
        kind::WINDOW_UPDATE => "WINDOW_UPDATE",
        kind::CONTINUATION => "CONTINUATION",
        _ => "unknown",
    }
}

/// Error codes (RFC 9113, section 7).
pub mod code {
    pub const NO_ERROR: u32 = 0x0;
    pub const PROTOCOL_ERROR: u32 = 0x1;
    pub const INTERNAL_ERROR: u32 = 0x2;
    pub const FLOW_CONTROL_ERROR: u32 = 0x3;
    pub const SETTINGS_TIMEOUT: u32 = 0x4;
    pub const STREAM_CLOSED: u32 = 0x5;
    pub const FRAME_SIZE_ERROR: u32 = 0x6;
    pub const REFUSED_STREAM: u32 = 0x7;
    pub const CANCEL: u32 = 0x8;
    pub const COMPRESSION_ERROR: u32 = 0x9;
    pub const CONNECT_ERROR: u32 = 0xa;
    pub const ENHANCE_YOUR_CALM: u32 = 0xb;
    pub const INADEQUATE_SECURITY: u32 = 0xc;
    pub const HTTP_1_1_REQUIRED: u32 = 0xd;
}

/// The name of an error code.
pub fn code_name(c: u32) -> &'static str {
    barrage_metrics::h2_code_name(c)
}

/// The client connection preface (RFC 9113, 3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The default SETTINGS_MAX_FRAME_SIZE, and the size of a frame head.
pub const DEFAULT_MAX_FRAME: u32 = 16_384;
pub const HEAD: usize = 9;

/// A frame head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub len: u32,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    fn parse(b: &[u8; HEAD]) -> Self {
        Self {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }

    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

/// What the reader found: a frame's head, then its content in pieces (padding and a HEADERS
/// frame's priority fields taken out), then its end.
pub trait FrameSink {
    type Error;
    fn head(&mut self, h: &Head) -> Result<(), Self::Error>;
    /// A piece of the frame's content.
    fn content(&mut self, h: &Head, bytes: &[u8]) -> Result<(), Self::Error>;
    /// The frame is over (all of `h.len` counts in flow control, padding too).
    fn end(&mut self, h: &Head) -> Result<(), Self::Error>;
    /// A frame the reader refuses (`FRAME_SIZE_ERROR` or `PROTOCOL_ERROR`): the connection
    /// fails with this message.
    fn bad(&mut self, h: &Head, why: &'static str) -> Self::Error;
    /// Stop after the frame that just ended (the handshake's SETTINGS: what follows is read
    /// again once the connection is ready).
    fn pause(&self) -> bool {
        false
    }
}

/// Where the reader is in the frame being read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum At {
    /// Bytes of the head read so far.
    #[default]
    Head,
    /// The pad length byte (PADDED).
    PadLen,
    /// Priority fields still to skip (HEADERS with PRIORITY).
    Priority(u8),
    /// Content bytes left.
    Content,
    /// Padding bytes left.
    Padding,
}

/// Cuts input into frames; keeps only the head being read and where it is in the frame.
#[derive(Debug)]
pub struct FrameReader {
    head: [u8; HEAD],
    have: u8,
    h: Head,
    at: At,
    content_left: u32,
    pad: u32,
    /// Largest frame accepted: the SETTINGS_MAX_FRAME_SIZE this side sent.
    max: u32,
}

impl FrameReader {
    pub fn new(max: u32) -> Self {
        Self {
            head: [0; HEAD],
            have: 0,
            h: Head {
                len: 0,
                kind: 0,
                flags: 0,
                stream: 0,
            },
            at: At::Head,
            content_left: 0,
            pad: 0,
            max,
        }
    }

    pub fn reset(&mut self) {
        *self = Self::new(self.max);
    }

    /// Between frames (no partial frame read).
    pub fn idle(&self) -> bool {
        self.at == At::Head && self.have == 0
    }

    /// Feed input; calls the sink as frames are read. Returns the bytes read: all of them,
    /// unless the sink paused.
    pub fn feed<S: FrameSink>(&mut self, mut data: &[u8], sink: &mut S) -> Result<usize, S::Error> {
        let all = data.len();
        while !data.is_empty() {
            if sink.pause() {
                return Ok(all - data.len());
            }
            match self.at {
                At::Head => {
                    let want = HEAD - self.have as usize;
                    let n = want.min(data.len());
                    self.head[self.have as usize..self.have as usize + n]
                        .copy_from_slice(&data[..n]);
                    self.have += n as u8;
                    data = &data[n..];
                    if (self.have as usize) < HEAD {
                        return Ok(all);
                    }
                    self.have = 0;
                    self.begin(sink)?;
                }
                At::PadLen => {
                    self.pad = u32::from(data[0]);
                    data = &data[1..];
                    // The padding, and the priority fields, must fit in the frame.
                    let prio = if self.h.kind == kind::HEADERS && self.h.has(flag::PRIORITY) {
                        5
                    } else {
                        0
                    };
                    if self.pad + prio + 1 > self.h.len {
                        return Err(sink.bad(&self.h, "padding longer than the frame"));
                    }
                    self.content_left = self.h.len - 1 - prio - self.pad;
                    self.at = if prio > 0 {
                        At::Priority(5)
                    } else {
                        At::Content
                    };
                    self.maybe_end(sink)?;
                }
                At::Priority(left) => {
                    let n = (left as usize).min(data.len());
                    data = &data[n..];
                    let left = left - n as u8;
                    self.at = if left == 0 {
                        At::Content
                    } else {
                        At::Priority(left)
                    };
                    self.maybe_end(sink)?;
                }
                At::Content => {
                    let n = (self.content_left as usize).min(data.len());
                    let h = self.h;
                    sink.content(&h, &data[..n])?;
                    self.content_left -= n as u32;
                    data = &data[n..];
                    self.maybe_end(sink)?;
                }
                At::Padding => {
                    let n = (self.pad as usize).min(data.len());
                    data = &data[n..];
                    self.pad -= n as u32;
                    if self.pad == 0 {
                        self.at = At::Head;
                        let h = self.h;
                        sink.end(&h)?;
                    }
                }
            }
        }
        Ok(all)
    }

    fn begin<S: FrameSink>(&mut self, sink: &mut S) -> Result<(), S::Error> {
        self.h = Head::parse(&self.head);
        let h = self.h;
        if h.len > self.max {
            return Err(sink.bad(&h, "a frame larger than SETTINGS_MAX_FRAME_SIZE"));
        }
        sink.head(&h)?;
        let padded = h.has(flag::PADDED)
            && matches!(h.kind, kind::DATA | kind::HEADERS | kind::PUSH_PROMISE);
        let prio = h.kind == kind::HEADERS && h.has(flag::PRIORITY);
        self.pad = 0;
        if padded {
            if h.len == 0 {
                return Err(sink.bad(&h, "a padded frame with no pad length"));
            }
            self.at = At::PadLen;
            return Ok(());
        }
        if prio {
            if h.len < 5 {
                return Err(sink.bad(&h, "a HEADERS frame too short for its priority fields"));
            }
            self.content_left = h.len - 5;
            self.at = At::Priority(5);
            return Ok(());
        }
        self.content_left = h.len;
        self.at = At::Content;
        self.maybe_end(sink)
    }

    /// After content: on to the padding, or the frame is over.
    fn maybe_end<S: FrameSink>(&mut self, sink: &mut S) -> Result<(), S::Error> {
        if self.at != At::Content || self.content_left > 0 {
            return Ok(());
        }
        if self.pad > 0 {
            self.at = At::Padding;
            return Ok(());
        }
        self.at = At::Head;
        let h = self.h;
        sink.end(&h)
    }
}

/// Append a frame head.
#[inline]
pub fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let l = (len as u32).to_be_bytes();
    let s = stream.to_be_bytes();
    out.extend_from_slice(&[l[1], l[2], l[3], kind, flags, s[0], s[1], s[2], s[3]]);
}

/// Write a frame head over the 9 bytes at `at` (reserved before the payload was rendered).
#[inline]
pub fn set_head(out: &mut [u8], at: usize, len: usize, kind: u8, flags: u8, stream: u32) {
    let l = (len as u32).to_be_bytes();
    let s = stream.to_be_bytes();
    out[at..at + HEAD].copy_from_slice(&[l[1], l[2], l[3], kind, flags, s[0], s[1], s[2], s[3]]);
}

/// A SETTINGS frame with these (id, value) pairs.
pub fn put_settings(out: &mut Vec<u8>, settings: &[(u16, u32)]) {
    put_head(out, settings.len() * 6, kind::SETTINGS, 0, 0);
    for &(id, v) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

pub fn put_settings_ack(out: &mut Vec<u8>) {
    put_head(out, 0, kind::SETTINGS, flag::ACK, 0);
}

pub fn put_window_update(out: &mut Vec<u8>, stream: u32, n: u32) {
    put_head(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&n.to_be_bytes());
}

pub fn put_ping(out: &mut Vec<u8>, ack: bool, data: &[u8; 8]) {
    put_head(out, 8, kind::PING, if ack { flag::ACK } else { 0 }, 0);
    out.extend_from_slice(data);
}

pub fn put_rst(out: &mut Vec<u8>, stream: u32, code: u32) {
    put_head(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

pub fn put_goaway(out: &mut Vec<u8>, last: u32, code: u32) {
    put_head(out, 8, kind::GOAWAY, 0, 0);
    out.extend_from_slice(&last.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what the reader reports: (kind, stream, flags, content) per frame.
    #[derive(Default)]
    struct Rec {
        frames: Vec<(u8, u32, u8, Vec<u8>)>,
        open: Option<(u8, u32, u8, Vec<u8>)>,
        pause_after: Option<usize>,
    }

    impl FrameSink for Rec {
        type Error = String;
        fn head(&mut self, h: &Head) -> Result<(), String> {
            assert!(self.open.is_none());
            self.open = Some((h.kind, h.stream, h.flags, Vec::new()));
            Ok(())
        }
        fn content(&mut self, _h: &Head, b: &[u8]) -> Result<(), String> {
            self.open.as_mut().unwrap().3.extend_from_slice(b);
            Ok(())
        }
        fn end(&mut self, _h: &Head) -> Result<(), String> {
            self.frames.push(self.open.take().unwrap());
            Ok(())
        }
        fn bad(&mut self, h: &Head, why: &'static str) -> String {
            format!("{} {why}", kind_name(h.kind))
        }
        fn pause(&self) -> bool {
            self.pause_after == Some(self.frames.len())
        }
    }

    fn sample() -> Vec<u8> {
        let mut b = Vec::new();
        put_settings(&mut b, &[(setting::MAX_CONCURRENT_STREAMS, 100)]);
        // HEADERS, padded and with priority: pad length 3, 5 priority bytes, "abc", padding.
        put_head(
            &mut b,
            1 + 5 + 3 + 3,
            kind::HEADERS,
            flag::PADDED | flag::PRIORITY | flag::END_HEADERS,
            1,
        );
        b.extend_from_slice(&[3, 0, 0, 0, 0, 16, b'a', b'b', b'c', 0, 0, 0]);
        // DATA, padded with an empty content.
        put_head(&mut b, 3, kind::DATA, flag::PADDED, 1);
        b.extend_from_slice(&[2, 0, 0]);
        // DATA "hello", ending the stream; an empty SETTINGS ACK; a PING.
        put_head(&mut b, 5, kind::DATA, flag::END_STREAM, 1);
        b.extend_from_slice(b"hello");
        put_settings_ack(&mut b);
        put_ping(&mut b, false, b"12345678");
        b
    }

    fn expected() -> Vec<(u8, u32, u8, Vec<u8>)> {
        vec![
            (kind::SETTINGS, 0, 0, vec![0, 3, 0, 0, 0, 100]),
            (
                kind::HEADERS,
                1,
                flag::PADDED | flag::PRIORITY | flag::END_HEADERS,
                b"abc".to_vec(),
            ),
            (kind::DATA, 1, flag::PADDED, vec![]),
            (kind::DATA, 1, flag::END_STREAM, b"hello".to_vec()),
            (kind::SETTINGS, 0, flag::ACK, vec![]),
            (kind::PING, 0, 0, b"12345678".to_vec()),
        ]
    }

    #[test]
    fn frames_read_the_same_at_every_split() {
        let input = sample();
        for split in 0..=input.len() {
            let mut r = FrameReader::new(DEFAULT_MAX_FRAME);
            let mut rec = Rec::default();
            assert_eq!(r.feed(&input[..split], &mut rec), Ok(split));
            assert_eq!(r.feed(&input[split..], &mut rec), Ok(input.len() - split));
            assert_eq!(rec.frames, expected(), "split at {split}");
            assert!(r.idle());
        }
        // A byte at a time.
        let mut r = FrameReader::new(DEFAULT_MAX_FRAME);
        let mut rec = Rec::default();
        for b in &input {
            r.feed(std::slice::from_ref(b), &mut rec).unwrap();
        }
        assert_eq!(rec.frames, expected());
    }

    #[test]
    fn a_pause_stops_after_the_frame_and_says_where() {
        let input = sample();
        let mut r = FrameReader::new(DEFAULT_MAX_FRAME);
        let mut rec = Rec {
            pause_after: Some(1),
            ..Rec::default()
        };
        let used = r.feed(&input, &mut rec).unwrap();
        assert_eq!(used, HEAD + 6);
        rec.pause_after = None;
        r.feed(&input[used..], &mut rec).unwrap();
        assert_eq!(rec.frames, expected());
    }

    #[test]
    fn oversized_and_badly_padded_frames_are_refused() {
        let mut b = Vec::new();
        put_head(&mut b, DEFAULT_MAX_FRAME as usize + 1, kind::DATA, 0, 1);
        let mut rec = Rec::default();
        let e = FrameReader::new(DEFAULT_MAX_FRAME).feed(&b, &mut rec);
        assert_eq!(
            e,
            Err("DATA a frame larger than SETTINGS_MAX_FRAME_SIZE".into())
        );
        let mut b = Vec::new();
        put_head(&mut b, 2, kind::DATA, flag::PADDED, 1);
        b.extend_from_slice(&[5, 0]);
        let e = FrameReader::new(DEFAULT_MAX_FRAME).feed(&b, &mut Rec::default());
        assert_eq!(e, Err("DATA padding longer than the frame".into()));
        let mut b = Vec::new();
        put_head(&mut b, 0, kind::HEADERS, flag::PADDED, 1);
        let e = FrameReader::new(DEFAULT_MAX_FRAME).feed(&b, &mut Rec::default());
        assert_eq!(e, Err("HEADERS a padded frame with no pad length".into()));
        let mut b = Vec::new();
        put_head(&mut b, 3, kind::HEADERS, flag::PRIORITY, 1);
        let e = FrameReader::new(DEFAULT_MAX_FRAME).feed(&b, &mut Rec::default());
        assert_eq!(
            e,
            Err("HEADERS a HEADERS frame too short for its priority fields".into())
        );
    }
}
