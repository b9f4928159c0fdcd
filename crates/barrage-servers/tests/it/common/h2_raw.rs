//! A raw HTTP/2 client over a blocking socket, for the hostile-client tests of `serve h2` and
//! `serve grpc`: frames and HPACK bytes are written by hand (no HPACK encoder, no h2 crate), so
//! a test can send exactly what a well-behaved client never would.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const RST_STREAM: u8 = 3;
pub const SETTINGS: u8 = 4;
pub const PING: u8 = 6;
pub const GOAWAY: u8 = 7;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;

/// Error codes (RFC 9113, 7).
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// SETTINGS_MAX_HEADER_LIST_SIZE's identifier.
pub const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;

/// One frame as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

impl Frame {
    /// A SETTINGS frame's value of `id`.
    pub fn setting(&self, id: u16) -> Option<u32> {
        assert_eq!(self.kind, SETTINGS);
        self.payload.chunks_exact(6).find_map(|c| {
            (u16::from_be_bytes([c[0], c[1]]) == id)
                .then(|| u32::from_be_bytes([c[2], c[3], c[4], c[5]]))
        })
    }

    /// A GOAWAY's last stream.
    pub fn last_stream(&self) -> u32 {
        assert_eq!(self.kind, GOAWAY);
        let p = &self.payload;
        u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff
    }

    /// A GOAWAY's or RST_STREAM's error code.
    pub fn error_code(&self) -> u32 {
        let at = match self.kind {
            GOAWAY => 4,
            RST_STREAM => 0,
            k => panic!("frame type {k} has no error code"),
        };
        let p = &self.payload[at..at + 4];
        u32::from_be_bytes([p[0], p[1], p[2], p[3]])
    }
}

/// A frame's bytes.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = Vec::with_capacity(9 + payload.len());
    f.extend_from_slice(&len.to_be_bytes()[1..]);
    f.extend_from_slice(&[kind, flags]);
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An HPACK integer with an `n`-bit prefix, its first byte or-ed with `mask`.
pub fn hpack_int(out: &mut Vec<u8>, mask: u8, n: u32, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(mask | v as u8);
        return;
    }
    out.push(mask | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

/// An HPACK string literal, without Huffman coding.
pub fn hpack_str(out: &mut Vec<u8>, s: &[u8]) {
    hpack_int(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// `GET /` on `http`, the authority as a literal not indexed: the request's pseudo-headers,
/// adding nothing to the server's dynamic table.
pub fn get_root() -> Vec<u8> {
    let mut b = vec![0x82, 0x86, 0x84]; // :method GET, :scheme http, :path /
    hpack_int(&mut b, 0x00, 4, 1); // :authority, literal without indexing
    hpack_str(&mut b, b"localhost");
    b
}

/// A header literal with incremental indexing and a new name: it enters the dynamic table.
pub fn indexed_literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0x40);
    hpack_str(out, name);
    hpack_str(out, value);
}

/// A connection that has sent its preface and an empty SETTINGS.
pub struct Raw {
    pub s: TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    /// A connection that has sent nothing yet.
    pub fn silent(addr: SocketAddr) -> Raw {
        Raw {
            s: super::connect(addr),
            buf: Vec::new(),
        }
    }

    pub fn connect(addr: SocketAddr) -> Raw {
        let mut raw = Raw::silent(addr);
        raw.send_raw(PREFACE);
        raw.send(SETTINGS, 0, 0, &[]);
        raw
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).expect("write to the server");
    }

    pub fn send(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        self.send_raw(&frame(kind, flags, stream, payload));
    }

    /// A request's header block, whole, ending the stream.
    pub fn request(&mut self, stream: u32, block: &[u8]) {
        self.send(HEADERS, END_HEADERS | END_STREAM, stream, block);
    }

    /// The next frame, or `None` at the end of the stream (or a reset of it).
    pub fn read(&mut self) -> Option<Frame> {
        self.read_or_reset().ok().flatten()
    }

    /// The next frame, `None` at a clean end of the stream, the error of a reset (or of a
    /// frame cut short by the end).
    pub fn read_or_reset(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            if self.buf.len() >= 9 {
                let len = u32::from_be_bytes([0, self.buf[0], self.buf[1], self.buf[2]]) as usize;
                if self.buf.len() >= 9 + len {
                    let f = Frame {
                        kind: self.buf[3],
                        flags: self.buf[4],
                        stream: u32::from_be_bytes([
                            self.buf[5],
                            self.buf[6],
                            self.buf[7],
                            self.buf[8],
                        ]) & 0x7fff_ffff,
                        payload: self.buf[9..9 + len].to_vec(),
                    };
                    self.buf.drain(..9 + len);
                    return Ok(Some(f));
                }
            }
            let mut chunk = [0u8; 16384];
            match self.s.read(&mut chunk)? {
                0 if self.buf.is_empty() => return Ok(None),
                0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                n => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Reads up to the server's SETTINGS (acknowledging it) and returns it.
    pub fn server_settings(&mut self) -> Frame {
        loop {
            let f = self.read().expect("the server's SETTINGS");
            if f.kind == SETTINGS && f.flags & ACK == 0 {
                self.send(SETTINGS, ACK, 0, &[]);
                return f;
            }
        }
    }

    /// Reads the answer to `stream` (other streams' frames and control frames skipped, PINGs
    /// answered): the first byte of its response header block and the body's length.
    pub fn response(&mut self, stream: u32) -> (u8, usize) {
        let mut first = None;
        let mut body = 0;
        loop {
            let f = self.read().expect("a response before the connection ends");
            if f.kind == PING && f.flags & ACK == 0 {
                self.send(PING, ACK, 0, &f.payload);
            }
            if f.stream != stream {
                continue;
            }
            match f.kind {
                HEADERS => first = first.or(f.payload.first().copied()),
                DATA => body += f.payload.len(),
                RST_STREAM => panic!("stream {stream} reset: {:#x}", f.error_code()),
                _ => {}
            }
            if f.flags & END_STREAM != 0 && matches!(f.kind, HEADERS | DATA) {
                return (first.expect("a response header block"), body);
            }
        }
    }
}
