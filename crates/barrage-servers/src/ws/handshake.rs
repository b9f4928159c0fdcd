//! The opening handshake (RFC 6455 4.2): checks an upgrade request and writes the 101 answer,
//! or the error answer that refuses it.
//!
//! Sans-IO: a request head in, response bytes appended to the connection's output.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use std::io::Write;

/// Longest request head accepted; a longer one is answered with 431.
pub(crate) const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;
/// Appended to the client's key before hashing (RFC 6455 1.3).
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// What the front of a buffer holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Upgrade {
    /// Not a complete head yet.
    Partial,
    /// Upgraded: the 101 answer is in the output; frames start after `len` bytes.
    Upgraded { len: usize },
    /// Refused with this status (the answer is in the output); close after it.
    Refused(u16),
}

/// Parses the head at the front of `buf` and appends the answer to `out`.
pub(crate) fn answer(buf: &[u8], out: &mut Vec<u8>) -> Upgrade {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) if len <= MAX_HEAD => len,
        Ok(httparse::Status::Partial) if buf.len() <= MAX_HEAD => return Upgrade::Partial,
        Ok(_) | Err(httparse::Error::TooManyHeaders) => return refuse(out, 431, ""),
        Err(_) => return refuse(out, 400, ""),
    };
    if req.method != Some("GET") || req.version != Some(1) {
        return refuse(out, 400, "");
    }
    let mut upgrade = None;
    let mut connection_upgrade = false;
    let mut version = None;
    let mut key = None;
    let mut protocol = None;
    for header in req.headers.iter() {
        let Ok(value) = std::str::from_utf8(header.value) else {
            continue;
        };
        let name = header.name;
        if name.eq_ignore_ascii_case("upgrade") {
            upgrade = Some(has_token(value, "websocket"));
        } else if name.eq_ignore_ascii_case("connection") {
            connection_upgrade |= has_token(value, "upgrade");
        } else if name.eq_ignore_ascii_case("sec-websocket-version") {
            version = Some(value.trim());
        } else if name.eq_ignore_ascii_case("sec-websocket-key") {
            key = Some(value.trim());
        } else if name.eq_ignore_ascii_case("sec-websocket-protocol") && protocol.is_none() {
            protocol = value.split(',').map(str::trim).find(|p| !p.is_empty());
        }
    }
    match upgrade {
        // Not a WebSocket request at all: say what this server speaks.
        None => return refuse(out, 426, "Upgrade: websocket\r\nConnection: Upgrade\r\n"),
        Some(false) => return refuse(out, 400, ""),
        Some(true) => {}
    }
    if !connection_upgrade {
        return refuse(out, 400, "");
    }
    if version != Some("13") {
        return refuse(out, 426, "Sec-WebSocket-Version: 13\r\n");
    }
    let Some(key) = key.filter(|key| valid_key(key)) else {
        return refuse(out, 400, "");
    };
    out.extend_from_slice(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
          Sec-WebSocket-Accept: ",
    );
    out.extend_from_slice(&accept_key(key));
    out.extend_from_slice(b"\r\n");
    if let Some(protocol) = protocol {
        let _ = write!(out, "Sec-WebSocket-Protocol: {protocol}\r\n");
    }
    out.extend_from_slice(b"Server: barrage\r\n\r\n");
    Upgrade::Upgraded { len }
}

/// `Sec-WebSocket-Accept` for a client key: base64(SHA-1(key + GUID)).
pub(crate) fn accept_key(key: &str) -> [u8; 28] {
    let mut sha = sha1_smol::Sha1::new();
    sha.update(key.as_bytes());
    sha.update(GUID.as_bytes());
    let mut accept = [0; 28];
    let written = STANDARD
        .encode_slice(sha.digest().bytes(), &mut accept)
        .unwrap_or(0);
    debug_assert_eq!(written, 28);
    accept
}

/// A key is 16 random bytes in base64 (RFC 6455 4.1).
fn valid_key(key: &str) -> bool {
    let mut raw = [0; 18];
    key.len() == 24 && STANDARD.decode_slice(key, &mut raw) == Ok(16)
}

/// A comma-separated header value contains `token` (case-insensitive).
fn has_token(value: &str, token: &str) -> bool {
    value
        .split(',')
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

fn refuse(out: &mut Vec<u8>, status: u16, extra: &str) -> Upgrade {
    let reason = match status {
        400 => "Bad Request",
        426 => "Upgrade Required",
        _ => "Request Header Fields Too Large",
    };
    let _ = write!(
        out,
        "HTTP/1.1 {status} {reason}\r\nServer: barrage\r\n{extra}Content-Type: text/plain\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{status} {reason}\n",
        3 + 1 + reason.len() + 1
    );
    Upgrade::Refused(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RFC_KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

    fn request(extra: &str) -> String {
        format!(
            "GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: keep-alive, \
             Upgrade\r\nSec-WebSocket-Key: {RFC_KEY}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
        )
    }

    #[test]
    fn rfc_example_accept_key() {
        assert_eq!(&accept_key(RFC_KEY), b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }

    #[test]
    fn upgrade_answers_101_and_echoes_the_first_protocol() {
        let raw = request("Sec-WebSocket-Protocol: chat, superchat\r\n") + "\x01";
        let mut out = Vec::new();
        assert_eq!(
            answer(raw.as_bytes(), &mut out),
            Upgrade::Upgraded { len: raw.len() - 1 }
        );
        let text = String::from_utf8(out).expect("ascii");
        assert!(
            text.starts_with("HTTP/1.1 101 Switching Protocols\r\n"),
            "{text}"
        );
        assert!(text.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
        assert!(text.contains("Sec-WebSocket-Protocol: chat\r\n"), "{text}");
        let mut out = Vec::new();
        answer(request("").as_bytes(), &mut out);
        assert!(!String::from_utf8_lossy(&out).contains("Sec-WebSocket-Protocol"));
    }

    #[test]
    fn bad_upgrades_are_refused() {
        let cases = [
            (request("").replace("GET", "POST"), 400),
            (request("").replace("Upgrade: websocket\r\n", ""), 426),
            (
                request("").replace("Upgrade: websocket", "Upgrade: h2c"),
                400,
            ),
            (
                request("").replace("keep-alive, Upgrade", "keep-alive"),
                400,
            ),
            (request("").replace("Version: 13", "Version: 8"), 426),
            (request("").replace(RFC_KEY, "short"), 400),
            (request("").replace("HTTP/1.1", "HTTP/1.0"), 400),
            ("GET / HTTP/1.1\r\nBad Header\r\n\r\n".to_owned(), 400),
        ];
        for (raw, status) in cases {
            let mut out = Vec::new();
            assert_eq!(
                answer(raw.as_bytes(), &mut out),
                Upgrade::Refused(status),
                "{raw}"
            );
            let text = String::from_utf8(out).expect("ascii");
            assert!(text.starts_with(&format!("HTTP/1.1 {status} ")), "{text}");
            let (head, body) = text.split_once("\r\n\r\n").expect("head");
            assert!(
                head.contains(&format!("Content-Length: {}", body.len())),
                "{text}"
            );
        }
    }

    #[test]
    fn partial_and_oversized_heads() {
        let mut out = Vec::new();
        assert_eq!(
            answer(b"GET / HTTP/1.1\r\nHost", &mut out),
            Upgrade::Partial
        );
        assert!(out.is_empty());
        let mut long = b"GET / HTTP/1.1\r\nX: ".to_vec();
        long.resize(MAX_HEAD + 1, b'a');
        assert_eq!(answer(&long, &mut out), Upgrade::Refused(431));
    }
}
