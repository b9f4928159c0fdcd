//! A small blocking WebSocket client for the ws server's tests, written apart from both the
//! server and the client engine so that neither can hide the other's framing bug.

use std::io::{Read, Write};
use std::net::TcpStream;

/// The key of RFC 6455 1.3, whose accept value is known.
pub const RFC_KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
pub const RFC_ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

pub const CONTINUATION: u8 = 0;
pub const TEXT: u8 = 1;
pub const BINARY: u8 = 2;
pub const CLOSE: u8 = 8;
pub const PING: u8 = 9;
pub const PONG: u8 = 10;

/// Reads a response head byte by byte (so no frame byte after it is swallowed).
pub fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).expect("response head");
        head.push(byte[0]);
    }
    String::from_utf8(head).expect("ASCII head")
}

/// Sends an upgrade request with `extra` header lines; returns the response head.
pub fn upgrade_with(stream: &mut TcpStream, extra: &str) -> String {
    let request = format!(
        "GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {RFC_KEY}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
    );
    stream.write_all(request.as_bytes()).expect("send upgrade");
    read_head(stream)
}

/// Upgrades and checks the 101.
pub fn upgrade(stream: &mut TcpStream) {
    let head = upgrade_with(stream, "");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
}

/// A client frame; masked with `mask` unless it is `None`.
pub fn frame(fin: bool, opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut out = vec![if fin { 0x80 } else { 0 } | opcode];
    let bit = if mask.is_some() { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(bit | n as u8),
        n if n <= 0xFFFF => {
            out.push(bit | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(bit | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    match mask {
        Some(mask) => {
            out.extend_from_slice(&mask);
            out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        }
        None => out.extend_from_slice(payload),
    }
    out
}

/// A masked, final client frame.
pub fn masked(opcode: u8, payload: &[u8]) -> Vec<u8> {
    frame(true, opcode, payload, Some([0x37, 0xFA, 0x21, 0x3D]))
}

#[derive(Debug, PartialEq, Eq)]
pub struct Frame {
    pub fin: bool,
    pub opcode: u8,
    pub payload: Vec<u8>,
}

/// Reads one server frame and checks it is unmasked with clear reserved bits.
pub fn read_frame(stream: &mut impl Read) -> Frame {
    let mut head = [0; 2];
    stream.read_exact(&mut head).expect("frame head");
    assert_eq!(head[0] & 0x70, 0, "reserved bits set");
    assert_eq!(head[1] & 0x80, 0, "server frames must not be masked");
    let len = match head[1] & 0x7F {
        126 => {
            let mut ext = [0; 2];
            stream.read_exact(&mut ext).expect("length");
            let len = u16::from_be_bytes(ext) as usize;
            assert!(len >= 126, "length not minimal");
            len
        }
        127 => {
            let mut ext = [0; 8];
            stream.read_exact(&mut ext).expect("length");
            let len = u64::from_be_bytes(ext) as usize;
            assert!(len > 0xFFFF, "length not minimal");
            len
        }
        n => n as usize,
    };
    let mut payload = vec![0; len];
    stream.read_exact(&mut payload).expect("payload");
    Frame {
        fin: head[0] & 0x80 != 0,
        opcode: head[0] & 0x0F,
        payload,
    }
}

/// Reads a close frame and returns its code.
pub fn read_close(stream: &mut impl Read) -> Option<u16> {
    let frame = read_frame(stream);
    assert_eq!(frame.opcode, CLOSE, "{frame:?}");
    (frame.payload.len() >= 2).then(|| u16::from_be_bytes([frame.payload[0], frame.payload[1]]))
}

/// After the server's close frame, the server closes the connection.
pub fn expect_eof(stream: &mut TcpStream) {
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).expect("EOF after the close");
    assert!(rest.is_empty(), "bytes after the close frame: {rest:?}");
}
