//! The opening handshake (RFC 6455 §4.1): the upgrade request and the check of the server's
//! 101 response. The response head is read like any HTTP head (same limits, no copy when it
//! arrives in one read); the bytes after it are already frames.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

use super::WsError;
use crate::http::{
    has_token, header_values, validate_header, validate_path, validate_value, Field, HeadReader,
    HttpError, Limits, Progress, RequestError, USER_AGENT,
};

const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The `Sec-WebSocket-Key` for 16 random bytes.
pub fn new_key(rng_bytes: [u8; 16]) -> String {
    BASE64.encode(rng_bytes)
}

/// The `Sec-WebSocket-Accept` a server must answer to `key`: base64(SHA-1(key + GUID)).
pub fn accept_for(key: &str) -> String {
    let mut h = sha1_smol::Sha1::new();
    h.update(key.as_bytes());
    h.update(GUID.as_bytes());
    BASE64.encode(h.digest().bytes())
}

/// What the user asked for; validated by [`handshake_request`].
#[derive(Clone, Copy, Debug)]
pub struct HandshakeSpec<'a> {
    /// `host:port` or `host`.
    pub host_header: &'a str,
    pub path: &'a str,
    pub headers: &'a [(String, String)],
    /// Offered as `Sec-WebSocket-Protocol` (one token or a comma-separated list).
    pub subprotocol: Option<&'a str>,
}

/// Headers the handshake sets itself (or that would negotiate what barrage does not do).
const RESERVED: [&str; 8] = [
    "Upgrade",
    "Connection",
    "Sec-WebSocket-Key",
    "Sec-WebSocket-Version",
    "Sec-WebSocket-Protocol",
    "Sec-WebSocket-Extensions",
    "Content-Length",
    "Transfer-Encoding",
];

/// Append the upgrade request to `out` (untouched on error).
pub fn handshake_request(
    spec: &HandshakeSpec,
    key: &str,
    out: &mut Vec<u8>,
) -> Result<(), RequestError> {
    validate_path("GET", spec.path)?;
    validate_value(Field::Target, "Host", spec.host_header)?;
    validate_value(Field::Header, "Sec-WebSocket-Key", key)?;
    if let Some(p) = spec.subprotocol {
        if !p.split(',').all(|t| crate::http::is_token(t.trim())) {
            return Err(RequestError::InvalidSubprotocol(p.into()));
        }
    }
    let mut host = spec.host_header;
    let (mut host_given, mut ua_given) = (false, false);
    for (name, value) in spec.headers {
        validate_header(name, value)?;
        if let Some(r) = RESERVED.iter().find(|r| r.eq_ignore_ascii_case(name)) {
            return Err(RequestError::HandshakeHeader((*r).into()));
        }
        if name.eq_ignore_ascii_case("host") {
            if host_given {
                return Err(RequestError::DuplicateHeader("Host".into()));
            }
            (host, host_given) = (value, true);
        }
        ua_given |= name.eq_ignore_ascii_case("user-agent");
    }
    out.extend_from_slice(b"GET ");
    out.extend_from_slice(spec.path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut line = |name: &str, value: &str| {
        for part in [name, ": ", value, "\r\n"] {
            out.extend_from_slice(part.as_bytes());
        }
    };
    line("Host", host);
    line("Upgrade", "websocket");
    line("Connection", "Upgrade");
    line("Sec-WebSocket-Key", key);
    line("Sec-WebSocket-Version", "13");
    if let Some(p) = spec.subprotocol {
        line("Sec-WebSocket-Protocol", p);
    }
    if !ua_given {
        line("User-Agent", USER_AGENT);
    }
    for (name, value) in spec.headers {
        if !name.eq_ignore_ascii_case("host") {
            line(name, value);
        }
    }
    out.extend_from_slice(b"\r\n");
    Ok(())
}

/// Progress of the handshake response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handshake {
    Incomplete,
    /// The 101 response ended after `consumed` bytes of this feed; the rest are frames.
    Done {
        consumed: usize,
    },
}

/// Reads and checks the server's handshake response.
#[derive(Clone, Debug)]
pub struct HandshakeDecoder {
    head: HeadReader,
    /// The `Sec-WebSocket-Accept` the server must send.
    accept: [u8; 28],
    /// The offered subprotocol list, if any.
    subprotocol: Option<Box<str>>,
    limits: Limits,
    state: State,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Reading,
    Done,
    Failed(WsError),
}

impl HandshakeDecoder {
    pub fn new(key: &str, subprotocol: Option<&str>, limits: Limits) -> Self {
        let mut accept = [0u8; 28];
        for (a, b) in accept.iter_mut().zip(accept_for(key).bytes()) {
            *a = b;
        }
        Self {
            head: HeadReader::default(),
            accept,
            subprotocol: subprotocol.map(Into::into),
            limits,
            state: State::Reading,
        }
    }

    /// Feed the bytes of one read. After `Done`, further calls return `Done { consumed: 0 }`.
    pub fn feed(&mut self, data: &[u8]) -> Result<Handshake, WsError> {
        match &self.state {
            State::Reading => {}
            State::Done => return Ok(Handshake::Done { consumed: 0 }),
            State::Failed(e) => return Err(e.clone()),
        }
        let (accept, offered) = (&self.accept, self.subprotocol.as_deref());
        let progress = self
            .head
            .feed(data, self.limits, |h| check(h, accept, offered))
            .map_err(|e| match e {
                HttpError::HeadersTooLarge | HttpError::TooManyHeaders => WsError::HeadersTooLarge,
                e => WsError::BadHandshake(e),
            });
        let result = match progress {
            Ok(Progress::Partial) => return Ok(Handshake::Incomplete),
            Ok(Progress::Done { consumed, value }) => value.map(|()| consumed),
            Err(e) => Err(e),
        };
        match result {
            Ok(consumed) => {
                self.state = State::Done;
                Ok(Handshake::Done { consumed })
            }
            Err(e) => {
                self.state = State::Failed(e.clone());
                self.head.clear();
                Err(e)
            }
        }
    }
}

fn check(h: &crate::http::Head<'_>, accept: &[u8], offered: Option<&str>) -> Result<(), WsError> {
    if h.status != 101 {
        return Err(WsError::HandshakeStatus(h.status));
    }
    if !has_token(h.headers, "upgrade", "websocket") {
        return Err(WsError::HandshakeHeader("Upgrade"));
    }
    if !has_token(h.headers, "connection", "upgrade") {
        return Err(WsError::HandshakeHeader("Connection"));
    }
    match header_values(h.headers, "sec-websocket-accept").next() {
        None => return Err(WsError::HandshakeHeader("Sec-WebSocket-Accept")),
        Some(v) if v.trim_ascii() != accept => return Err(WsError::BadAccept),
        Some(_) => {}
    }
    if crate::http::list_items(h.headers, "sec-websocket-extensions")
        .next()
        .is_some()
    {
        return Err(WsError::HandshakeHeader("Sec-WebSocket-Extensions"));
    }
    let mut chosen = crate::http::list_items(h.headers, "sec-websocket-protocol");
    match (offered, chosen.next(), chosen.next()) {
        (None, None, _) => Ok(()),
        (Some(list), Some(p), None) if list.split(',').any(|o| o.trim().as_bytes() == p) => Ok(()),
        _ => Err(WsError::Subprotocol),
    }
}

#[cfg(test)]
mod tests;
