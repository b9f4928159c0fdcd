//! gRPC over HTTP/2, sans-IO: a request message compiled once into a protobuf template
//! ([`PbTemplate`]), the 5-byte message prefix, the reader that finds messages in DATA
//! ([`MsgReader`]), and the trailers' `grpc-status` and `grpc-timeout`. The calls themselves
//! are HTTP/2 streams: `crate::session::h2` runs them in its gRPC mode.
//!
//! The template holds protobuf bytes with holes: a string field whose value has placeholders
//! (`{seq}`, `{rand%N}`, ...) is rendered per message, and every message field
//! around it gets its length then (two passes: lengths, then bytes), so a message costs no
//! allocation and no protobuf library at run time. The binary builds the template from the
//! user's JSON and `.proto` (protox, prost-reflect); the engine never parses either.

pub mod spec;

use crate::capture::Vars;
use crate::message::{Fill, Template};

/// The bytes before each message: a compressed flag and the length (big-endian u32).
pub const PREFIX: usize = 5;

/// A part of a protobuf message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Encoded fields, as they are.
    Lit(Box<[u8]>),
    /// A length-delimited field (a string) whose value is rendered: its tag, then the
    /// rendered length and value.
    Text { tag: Box<[u8]>, value: Template },
    /// A message field with holes inside: its tag, then its length and fields.
    Msg { tag: Box<[u8]>, inner: PbTemplate },
}

/// A protobuf message with holes, rendered per message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PbTemplate {
    parts: Vec<Part>,
}

impl PbTemplate {
    pub fn new(parts: Vec<Part>) -> Self {
        // Adjacent literals as one: fewer parts to walk per message.
        let mut out: Vec<Part> = Vec::with_capacity(parts.len());
        for p in parts {
            match (out.last_mut(), p) {
                (Some(Part::Lit(a)), Part::Lit(b)) => {
                    let mut v = a.to_vec();
                    v.extend_from_slice(&b);
                    *a = v.into_boxed_slice();
                }
                (_, Part::Text { tag, value }) if value.is_static() => {
                    let mut v = tag.to_vec();
                    put_varint(&mut v, value.raw().len() as u64);
                    v.extend_from_slice(value.raw());
                    push_lit(&mut out, v);
                }
                (_, Part::Msg { tag, inner }) if inner.is_static() => {
                    let mut v = tag.to_vec();
                    let body = inner.static_bytes();
                    put_varint(&mut v, body.len() as u64);
                    v.extend_from_slice(&body);
                    push_lit(&mut out, v);
                }
                (_, p) => out.push(p),
            }
        }
        Self { parts: out }
    }

    /// A message without holes (`--data-bin`, or JSON without placeholders).
    pub fn bytes(b: Vec<u8>) -> Self {
        Self::new(vec![Part::Lit(b.into_boxed_slice())])
    }

    /// No holes: every message is the same bytes.
    pub fn is_static(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Lit(_)))
    }

    /// The bytes of a template without holes.
    pub fn static_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.write(
            Fill {
                conn: 0,
                seq: 0,
                ts_us: 0,
            },
            &mut v,
        );
        v
    }

    /// The encoded length for `fill`.
    pub fn len(&self, fill: Fill) -> usize {
        self.len_in(fill, None)
    }

    /// The encoded length for `fill` and a scenario user's `vars`.
    pub fn len_vars(&self, fill: Fill, vars: &Vars) -> usize {
        self.len_in(fill, Some(vars))
    }

    fn len_in(&self, fill: Fill, vars: Option<&Vars>) -> usize {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Lit(b) => b.len(),
                Part::Text { tag, value } => {
                    let n = text_len(value, fill, vars);
                    tag.len() + varint_len(n as u64) + n
                }
                Part::Msg { tag, inner } => {
                    let n = inner.len_in(fill, vars);
                    tag.len() + varint_len(n as u64) + n
                }
            })
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Append the message for `fill`.
    pub fn write(&self, fill: Fill, out: &mut Vec<u8>) {
        self.write_in(fill, None, out);
    }

    fn write_in(&self, fill: Fill, vars: Option<&Vars>, out: &mut Vec<u8>) {
        for p in &self.parts {
            match p {
                Part::Lit(b) => out.extend_from_slice(b),
                Part::Text { tag, value } => {
                    out.extend_from_slice(tag);
                    put_varint(out, text_len(value, fill, vars) as u64);
                    match vars {
                        Some(v) => value.render_vars_into(fill, v, out),
                        None => value.render_into(fill, out),
                    };
                }
                Part::Msg { tag, inner } => {
                    out.extend_from_slice(tag);
                    put_varint(out, inner.len_in(fill, vars) as u64);
                    inner.write_in(fill, vars, out);
                }
            }
        }
    }

    /// Append the message for `fill` with its gRPC prefix (gzipped with `gzip`).
    pub fn write_framed(&self, fill: Fill, out: &mut Vec<u8>) {
        put_prefix(out, self.len(fill));
        self.write(fill, out);
    }

    /// [`PbTemplate::write_framed`], gzipped when `gzip` (`grpc-encoding: gzip`).
    pub fn write_framed_as(&self, fill: Fill, gzip: bool, out: &mut Vec<u8>) {
        let at = out.len();
        self.write_framed(fill, out);
        if gzip {
            gzip_in_place(out, at);
        }
    }

    /// Append a scenario step's message for `fill` and the user's `vars`, with its prefix.
    pub fn write_framed_vars(&self, fill: Fill, vars: &Vars, out: &mut Vec<u8>) {
        put_prefix(out, self.len_vars(fill, vars));
        self.write_in(fill, Some(vars), out);
    }

    /// The template of `src`, each text field's value made a template by `text` (plain
    /// placeholders for a run's message, a scenario's `{var}`s for a step's).
    pub fn compile<E>(
        src: &[PartSrc],
        text: &mut dyn FnMut(Vec<u8>) -> Result<Template, E>,
    ) -> Result<Self, E> {
        let mut out = Vec::with_capacity(src.len());
        for p in src {
            out.push(match p {
                PartSrc::Lit(b) => Part::Lit(b.clone().into_boxed_slice()),
                PartSrc::Text { field, raw } => Part::Text {
                    tag: len_tag(*field),
                    value: text(raw.clone())?,
                },
                PartSrc::Msg { field, parts } => Part::Msg {
                    tag: len_tag(*field),
                    inner: Self::compile(parts, text)?,
                },
            });
        }
        Ok(Self::new(out))
    }
}

fn text_len(t: &Template, fill: Fill, vars: Option<&Vars>) -> usize {
    match vars {
        Some(v) => t.rendered_len_vars(fill, v),
        None => t.rendered_len(fill),
    }
}

/// A message's parts before their text fields are templates: bytes as they are (escapes
/// undone, secrets filled), by field number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartSrc {
    Lit(Vec<u8>),
    Text { field: u32, raw: Vec<u8> },
    Msg { field: u32, parts: Vec<PartSrc> },
}

/// A scenario's `rpc` step as the binary resolved it from the .proto: what the engine
/// compiles into the step's request, and how its reply is read.
#[derive(Clone, Debug)]
pub struct StepCall {
    /// The step's key in the file (`steps[2]`, `leave[0].steps[1]`).
    pub key: String,
    /// `/package.Service/Method`.
    pub path: String,
    /// Server streaming: the reply is any number of messages, each timed from the call.
    pub streaming: bool,
    /// The request's messages (one; a client stream's in order).
    pub messages: Vec<Vec<PartSrc>>,
    /// The reply's messages as JSON, for the step's captures and `expect` (set when the
    /// step looks into its reply).
    pub decode: Option<Decode>,
}

/// Reads a call's reply (its DATA: prefixed messages) into JSON: a unary call's message as an
/// object, a streaming call's as an array of them; `Err` names what did not decode.
#[derive(Clone)]
pub struct Decode(pub std::sync::Arc<DecodeFn>);

/// What a [`Decode`] calls: the reply's bytes in, JSON out.
pub type DecodeFn = dyn Fn(&[u8]) -> Result<Vec<u8>, String> + Send + Sync;

impl std::fmt::Debug for Decode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Decode")
    }
}

/// The whole messages in a call's DATA (each prefixed) as a scenario step keeps it, and
/// whether more followed that the step did not keep (its first [`crate::capture::MAX_REPLY`]
/// bytes are kept); or what is wrong with their framing.
pub fn messages(mut data: &[u8]) -> Result<(Vec<&[u8]>, bool), String> {
    let kept_all = data.len() < crate::capture::MAX_REPLY;
    let mut out = Vec::new();
    while !data.is_empty() {
        if data.len() < PREFIX || data.len() < PREFIX + body_len(data) {
            if kept_all {
                return Err("a message cut short".into());
            }
            return Ok((out, true));
        }
        if data[0] != 0 {
            return Err(format!("a message whose flag byte is {}", data[0]));
        }
        let n = body_len(data);
        out.push(&data[PREFIX..PREFIX + n]);
        data = &data[PREFIX + n..];
    }
    Ok((out, !kept_all))
}

fn body_len(data: &[u8]) -> usize {
    match data {
        [_, a, b, c, d, ..] => u32::from_be_bytes([*a, *b, *c, *d]) as usize,
        _ => 0,
    }
}

fn push_lit(out: &mut Vec<Part>, v: Vec<u8>) {
    if let Some(Part::Lit(a)) = out.last_mut() {
        let mut w = a.to_vec();
        w.extend_from_slice(&v);
        *a = w.into_boxed_slice();
    } else {
        out.push(Part::Lit(v.into_boxed_slice()));
    }
}

/// A protobuf varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// The tag of a length-delimited field (wire type 2).
pub fn len_tag(field: u32) -> Box<[u8]> {
    let mut v = Vec::new();
    put_varint(&mut v, (u64::from(field) << 3) | 2);
    v.into_boxed_slice()
}

/// A message's prefix: uncompressed, `len` bytes.
pub fn put_prefix(out: &mut Vec<u8>, len: usize) {
    out.push(0);
    out.extend_from_slice(&(len as u32).to_be_bytes());
}

thread_local! {
    /// Each worker thread's deflate state and output, made once (a deflate state is hundreds
    /// of KiB: one per connection would not do) and reset per message.
    static GZIP: std::cell::RefCell<Option<(flate2::Compress, Vec<u8>)>> =
        const { std::cell::RefCell::new(None) };
}

/// `grpc-encoding: gzip` (`--compression gzip`): the uncompressed message framed at
/// `out[at..]` (its prefix, then its bytes) replaced by its gzip member, the prefix's flag set
/// and its length the compressed one. No allocation once the thread's state is made.
pub fn gzip_in_place(out: &mut Vec<u8>, at: usize) {
    use flate2::{Compress, Compression, Crc, FlushCompress};
    GZIP.with(|g| {
        let mut g = g.borrow_mut();
        let (z, buf) =
            g.get_or_insert_with(|| (Compress::new(Compression::fast(), false), Vec::new()));
        let body = &out[at + PREFIX..];
        let mut crc = Crc::new();
        crc.update(body);
        buf.clear();
        // The gzip header: magic, deflate, no flags, no time, fast, unknown OS.
        buf.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255]);
        z.reset();
        buf.reserve(body.len() + body.len() / 8 + 64);
        loop {
            let before = z.total_in() as usize;
            let status = z
                .compress_vec(&body[before..], buf, FlushCompress::Finish)
                .unwrap_or(flate2::Status::StreamEnd);
            if status == flate2::Status::StreamEnd {
                break;
            }
            buf.reserve(buf.capacity().max(64));
        }
        buf.extend_from_slice(&crc.sum().to_le_bytes());
        buf.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.truncate(at);
        out.push(1);
        out.extend_from_slice(&(buf.len() as u32).to_be_bytes());
        out.extend_from_slice(buf);
    });
}

/// Finds the messages in a stream's DATA, however the frames split them; keeps none of
/// their bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsgReader {
    head: [u8; PREFIX],
    have: u8,
    /// Bytes of the current message still to come.
    left: u32,
}

/// What [`MsgReader::feed`] found wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsgError {
    /// The compressed flag set, though this client asked for no compression.
    Compressed,
    /// A flag byte other than 0 or 1.
    BadFlag(u8),
}

impl std::fmt::Display for MsgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MsgError::Compressed => {
                f.write_str("a compressed message, though this client sent no grpc-accept-encoding")
            }
            MsgError::BadFlag(b) => write!(f, "a message whose flag byte is {b}, not 0 or 1"),
        }
    }
}

impl MsgReader {
    /// Read `bytes`. Returns how many messages ended in them.
    /// `gzip`: the call asked for `grpc-encoding: gzip`, so a compressed message is one too
    /// (counted, never opened: its bytes are not kept).
    pub fn feed(&mut self, mut bytes: &[u8], gzip: bool) -> Result<u32, MsgError> {
        let mut n = 0;
        while !bytes.is_empty() {
            if self.left > 0 {
                let k = (self.left as usize).min(bytes.len());
                self.left -= k as u32;
                bytes = &bytes[k..];
                if self.left == 0 {
                    n += 1;
                }
                continue;
            }
            let k = (PREFIX - self.have as usize).min(bytes.len());
            self.head[self.have as usize..self.have as usize + k].copy_from_slice(&bytes[..k]);
            self.have += k as u8;
            bytes = &bytes[k..];
            if self.have as usize == PREFIX {
                self.have = 0;
                match self.head[0] {
                    0 => {}
                    1 if gzip => {}
                    1 => return Err(MsgError::Compressed),
                    b => return Err(MsgError::BadFlag(b)),
                }
                let h = self.head;
                self.left = u32::from_be_bytes([h[1], h[2], h[3], h[4]]);
                if self.left == 0 {
                    n += 1;
                }
            }
        }
        Ok(n)
    }

    /// Between messages: the stream may end here.
    pub fn idle(&self) -> bool {
        self.have == 0 && self.left == 0
    }
}

/// A `grpc-status` value: 1 to 10 ASCII digits.
pub fn status_of(v: &[u8]) -> Option<u32> {
    if v.is_empty() || v.len() > 10 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// `grpc-timeout` for a deadline: at most 8 digits and a unit, the finest that fits.
pub fn timeout_value(d: std::time::Duration) -> String {
    const MAX: u128 = 99_999_999;
    let ns = d.as_nanos();
    for (div, unit) in [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ] {
        // Rounded up: a deadline never earlier than asked.
        let v = ns.div_ceil(div);
        if v <= MAX {
            return format!("{v}{unit}");
        }
    }
    format!("{MAX}H")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--compression gzip`: a message becomes a gzip member that decodes to it, its flag
    /// set and its length the member's; the thread's state is reused from one to the next.
    #[test]
    fn gzip_in_place_frames_a_gzip_member_of_the_message() {
        use std::io::Read;
        for body in [
            &b""[..],
            b"x",
            &[b'a'; 5000][..],
            &(0..=255u8).cycle().take(70_000).collect::<Vec<_>>(),
        ] {
            let mut out = vec![9, 9];
            put_prefix(&mut out, body.len());
            out.extend_from_slice(body);
            gzip_in_place(&mut out, 2);
            assert_eq!(&out[..3], &[9, 9, 1]);
            let len = u32::from_be_bytes([out[3], out[4], out[5], out[6]]) as usize;
            assert_eq!(out.len(), 2 + PREFIX + len);
            let mut back = Vec::new();
            flate2::read::GzDecoder::new(&out[2 + PREFIX..])
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, body);
        }
    }

    fn fill(seq: u64) -> Fill {
        Fill {
            conn: 7,
            seq,
            ts_us: 0,
        }
    }

    #[test]
    fn varints_match_protobufs() {
        for (v, b) in [
            (0u64, &[0u8][..]),
            (1, &[1]),
            (127, &[127]),
            (128, &[0x80, 1]),
            (300, &[0xac, 2]),
            (
                u64::MAX,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1],
            ),
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out, b, "{v}");
            assert_eq!(varint_len(v), b.len(), "{v}");
        }
    }

    #[test]
    fn holes_render_with_their_lengths_and_the_enclosing_messages() {
        // message Outer { Inner inner = 1; int32 n = 2; }  message Inner { string s = 1; }
        // inner.s = "id-{seq}", n = 150
        let inner = PbTemplate::new(vec![Part::Text {
            tag: len_tag(1),
            value: Template::new(b"id-{seq}".to_vec()),
        }]);
        let t = PbTemplate::new(vec![
            Part::Msg {
                tag: len_tag(1),
                inner,
            },
            Part::Lit(vec![0x10, 0x96, 0x01].into_boxed_slice()),
        ]);
        assert!(!t.is_static());
        for (seq, s) in [(5u64, "id-5"), (123_456, "id-123456")] {
            let mut out = Vec::new();
            t.write(fill(seq), &mut out);
            let mut want = vec![0x0a, (s.len() + 2) as u8, 0x0a, s.len() as u8];
            want.extend_from_slice(s.as_bytes());
            want.extend_from_slice(&[0x10, 0x96, 0x01]);
            assert_eq!(out, want);
            assert_eq!(t.len(fill(seq)), out.len());
        }
        let mut framed = Vec::new();
        t.write_framed(fill(5), &mut framed);
        assert_eq!(&framed[..5], &[0, 0, 0, 0, 11]);
    }

    /// A scenario step's message: compiled from its parts with the user's variables, each
    /// rendered with the nested lengths it gives (a 200-byte value needs a 2-byte varint);
    /// the reply's messages are found back by `messages`.
    #[test]
    fn a_steps_message_renders_the_users_variables() {
        let src = vec![
            PartSrc::Lit(vec![0x10, 0x07]),
            PartSrc::Msg {
                field: 6,
                parts: vec![PartSrc::Text {
                    field: 1,
                    raw: b"{who}-{seq}".to_vec(),
                }],
            },
        ];
        let resolve = |n: &str| (n == "who").then_some(0);
        let t = PbTemplate::compile(&src, &mut |raw| Template::with_vars(raw, resolve)).unwrap();
        assert!(PbTemplate::compile(&src, &mut |raw| Template::with_vars(raw, |_| None)).is_err());
        let mut vars = Vars::new(1);
        for who in ["ann".to_string(), "x".repeat(200)] {
            vars.set(0, who.as_bytes());
            let text = format!("{who}-5");
            let mut out = Vec::new();
            t.write_framed_vars(fill(5), &vars, &mut out);
            let mut inner = vec![0x0a];
            put_varint(&mut inner, text.len() as u64);
            inner.extend_from_slice(text.as_bytes());
            let mut want = vec![0x10, 0x07, 0x32];
            put_varint(&mut want, inner.len() as u64);
            want.extend_from_slice(&inner);
            assert_eq!(messages(&out).unwrap(), (vec![&want[..]], false));
            assert_eq!(t.len_vars(fill(5), &vars), want.len());
        }
        assert!(messages(&[0, 0, 0, 0, 9, 1]).is_err());
        assert!(messages(&[1, 0, 0, 0, 0]).is_err());
        assert_eq!(messages(&[]).unwrap(), (vec![], false));
        // A reply cut where a step stops keeping it: its whole messages, and "more".
        let mut big = vec![0, 0, 0, 0, 1, 7];
        put_prefix(&mut big, crate::capture::MAX_REPLY);
        big.resize(crate::capture::MAX_REPLY, 0);
        assert_eq!(messages(&big).unwrap(), (vec![&[7u8][..]], true));
    }

    #[test]
    fn a_template_without_holes_is_one_literal() {
        let inner = PbTemplate::new(vec![Part::Text {
            tag: len_tag(1),
            value: Template::new(b"world".to_vec()),
        }]);
        let t = PbTemplate::new(vec![
            Part::Lit(vec![0x08, 0x01].into_boxed_slice()),
            Part::Msg {
                tag: len_tag(2),
                inner,
            },
        ]);
        assert!(t.is_static());
        assert_eq!(t.parts.len(), 1);
        assert_eq!(
            t.static_bytes(),
            [0x08, 0x01, 0x12, 0x07, 0x0a, 0x05, b'w', b'o', b'r', b'l', b'd']
        );
    }

    #[test]
    fn messages_are_found_at_every_split() {
        let mut wire = Vec::new();
        for len in [3usize, 0, 70_000, 1] {
            put_prefix(&mut wire, len);
            wire.extend(std::iter::repeat_n(0xab, len));
        }
        for split in [1, 2, 4, 5, 6, 7, 100, 65_536, wire.len()] {
            let mut r = MsgReader::default();
            let mut total = 0;
            for chunk in wire.chunks(split) {
                total += r.feed(chunk, false).unwrap();
            }
            assert_eq!(total, 4, "split {split}");
            assert!(r.idle());
        }
        let mut r = MsgReader::default();
        r.feed(&wire[..7], false).unwrap();
        assert!(!r.idle(), "a message cut short is not idle");
        assert_eq!(
            MsgReader::default().feed(&[1, 0, 0, 0, 0], false),
            Err(MsgError::Compressed)
        );
        assert_eq!(
            MsgReader::default().feed(&[9, 0, 0, 0, 0], false),
            Err(MsgError::BadFlag(9))
        );
    }

    #[test]
    fn timeouts_take_the_finest_unit_that_fits_and_never_shorten() {
        use std::time::Duration;
        assert_eq!(timeout_value(Duration::from_secs(5)), "5000000u");
        assert_eq!(timeout_value(Duration::from_millis(250)), "250000u");
        assert_eq!(timeout_value(Duration::from_secs(100)), "100000m");
        assert_eq!(timeout_value(Duration::from_nanos(1_500)), "1500n");
        assert_eq!(timeout_value(Duration::from_secs(200_000)), "200000S");
        assert_eq!(status_of(b"14"), Some(14));
        assert_eq!(status_of(b""), None);
        assert_eq!(status_of(b"1x"), None);
    }
}
