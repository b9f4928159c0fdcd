//! Request parsing over byte buffers: a request head (httparse) and how its body is framed, and
//! a decoder that walks a chunked body without keeping it.
//!
//! Key decision: the server never keeps a request body, so the body decoders only count and
//! validate; a request is answered from its head alone. Everything here is sans-IO and tested
//! on byte strings.

use super::response::Route;

/// Longest request head accepted; a longer one is answered with 431.
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// Headers per request; more is answered with 431.
const MAX_HEADERS: usize = 64;
/// Bytes of chunk extensions and trailers tolerated per chunked body.
const MAX_CHUNK_OVERHEAD: usize = 64 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Head,
    /// POST or PUT: accepted on every route, the body is read and thrown away.
    Upload,
    Other,
}

/// How the body that follows a head is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Body {
    Length(u64),
    Chunked,
}

/// A parsed request head: all the server needs to answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub method: Method,
    pub route: Route,
    /// HTTP/1.0 (answers say `Connection: keep-alive` when they keep the connection open).
    pub http10: bool,
    /// The client wants the connection to stay open after this exchange.
    pub keep_alive: bool,
    pub body: Body,
}

/// What the front of a buffer holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Head {
    /// Not a complete head yet (and not too long yet).
    Partial,
    /// A complete head of `len` bytes.
    Complete { len: usize, request: Request },
    /// Answer with this status and close the connection (400, 431, 501).
    Reject(u16),
}

/// Parses the request head at the front of `buf`.
pub(crate) fn parse_head(buf: &[u8]) -> Head {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => return Head::Reject(431),
        Ok(httparse::Status::Partial) => return Head::Partial,
        Err(httparse::Error::TooManyHeaders) => return Head::Reject(431),
        Err(_) => return Head::Reject(400),
    };
    if len > MAX_HEAD {
        return Head::Reject(431);
    }
    let (Some(method), Some(path), Some(version)) = (req.method, req.path, req.version) else {
        return Head::Reject(400);
    };
    let method = match method {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" | "PUT" => Method::Upload,
        _ => Method::Other,
    };
    let http10 = version == 0;
    let mut keep_alive = !http10;
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut coded = false;
    for header in req.headers.iter() {
        let name = header.name;
        let Ok(value) = std::str::from_utf8(header.value) else {
            if name.eq_ignore_ascii_case("content-length")
                || name.eq_ignore_ascii_case("transfer-encoding")
            {
                return Head::Reject(400);
            }
            continue;
        };
        if name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case("keep-alive") && http10 {
                    keep_alive = true;
                }
            }
        } else if name.eq_ignore_ascii_case("content-length") {
            let Some(n) = parse_length(value) else {
                return Head::Reject(400);
            };
            if length.is_some_and(|seen| seen != n) {
                return Head::Reject(400);
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            for coding in value.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                if chunked {
                    return Head::Reject(400); // chunked must be the last coding
                }
                if coding.eq_ignore_ascii_case("chunked") {
                    chunked = true;
                } else {
                    coded = true;
                }
            }
        }
    }
    let body = match (chunked, coded, length) {
        (false, false, length) => Body::Length(length.unwrap_or(0)),
        // Smuggling territory (RFC 9112 6.1): refuse rather than guess.
        (true, _, Some(_)) => return Head::Reject(400),
        (true, false, None) => Body::Chunked,
        // gzip and friends: we would have to decode to find the body's end.
        (_, true, _) => return Head::Reject(501),
    };
    let route = Route::from_path(path);
    Head::Complete {
        len,
        request: Request {
            method,
            route,
            http10,
            keep_alive,
            body,
        },
    }
}

/// A Content-Length value: ASCII digits only (no sign, no spaces inside), fitting a u64.
fn parse_length(value: &str) -> Option<u64> {
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

/// Where a chunked body decoder is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Reading the hex size; `digits` so far.
    Size {
        digits: u8,
    },
    /// Skipping a chunk extension up to the line end.
    Extension,
    /// Saw `\r` after the size line.
    SizeLf,
    Data {
        left: u64,
    },
    DataCr,
    DataLf,
    /// At the start of a trailer line (or of the final empty line).
    TrailerStart,
    TrailerLine,
    FinalLf,
    Done,
}

/// Walks a chunked body (RFC 9112 7.1) without keeping it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunked {
    state: State,
    size: u64,
    /// Extension and trailer bytes seen, bounded by [`MAX_CHUNK_OVERHEAD`].
    overhead: usize,
}

/// A chunked body that cannot be decoded: answer 400 and close.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BadChunk;

impl Chunked {
    pub(crate) fn new() -> Chunked {
        Chunked {
            state: State::Size { digits: 0 },
            size: 0,
            overhead: 0,
        }
    }

    /// Consumes body bytes from the front of `input`; returns how many, and whether the body
    /// is complete (then the rest of `input` is the next request).
    pub(crate) fn feed(&mut self, input: &[u8]) -> Result<(usize, bool), BadChunk> {
        let mut i = 0;
        while i < input.len() {
            if let State::Data { left } = self.state {
                let take = left.min((input.len() - i) as u64);
                i += take as usize;
                self.state = if take == left {
                    State::DataCr
                } else {
                    State::Data { left: left - take }
                };
                continue;
            }
            let byte = input[i];
            i += 1;
            self.state = self.step(byte)?;
            if self.state == State::Done {
                return Ok((i, true));
            }
        }
        Ok((i, false))
    }

    /// The state after one framing byte. Bare `\n` line ends are accepted as well as `\r\n`.
    fn step(&mut self, byte: u8) -> Result<State, BadChunk> {
        Ok(match (self.state, byte) {
            (State::Size { digits }, _) if byte.is_ascii_hexdigit() => {
                if digits == 16 {
                    return Err(BadChunk);
                }
                let digit = (byte as char).to_digit(16).unwrap_or(0);
                self.size = self.size << 4 | u64::from(digit);
                State::Size { digits: digits + 1 }
            }
            (State::Size { digits: 0 }, _) => return Err(BadChunk),
            (State::Size { .. }, b';' | b' ' | b'\t') => State::Extension,
            (State::Size { .. }, b'\r') => State::SizeLf,
            (State::Size { .. } | State::Extension | State::SizeLf, b'\n') => self.size_line_end(),
            (State::Size { .. } | State::SizeLf, _) => return Err(BadChunk),
            (State::Extension, b'\r') => State::SizeLf,
            (State::TrailerLine, b'\n') => State::TrailerStart,
            (State::Extension | State::TrailerLine, _) => {
                self.overhead += 1;
                if self.overhead > MAX_CHUNK_OVERHEAD {
                    return Err(BadChunk);
                }
                self.state
            }
            (State::DataCr, b'\r') => State::DataLf,
            (State::DataCr | State::DataLf, b'\n') => State::Size { digits: 0 },
            (State::DataCr | State::DataLf, _) => return Err(BadChunk),
            (State::TrailerStart, b'\r') => State::FinalLf,
            (State::TrailerStart | State::FinalLf, b'\n') => State::Done,
            (State::TrailerStart, _) => {
                self.overhead += 1;
                State::TrailerLine
            }
            (State::FinalLf, _) => return Err(BadChunk),
            (State::Data { .. } | State::Done, _) => self.state,
        })
    }

    fn size_line_end(&mut self) -> State {
        let size = std::mem::take(&mut self.size);
        if size == 0 {
            State::TrailerStart
        } else {
            State::Data { left: size }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(raw: &[u8]) -> (usize, Request) {
        match parse_head(raw) {
            Head::Complete { len, request } => (len, request),
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(raw)),
        }
    }

    #[test]
    fn http11_defaults_to_keep_alive_and_no_body() {
        let raw = b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET";
        let (len, req) = complete(raw);
        assert_eq!(len, raw.len() - 3);
        assert_eq!(req.method, Method::Get);
        assert_eq!(req.route, Route::Hello);
        assert!(req.keep_alive && !req.http10);
        assert_eq!(req.body, Body::Length(0));
    }

    #[test]
    fn connection_tokens_decide_keep_alive() {
        let (_, req) = complete(b"GET / HTTP/1.1\r\nConnection: Upgrade, close\r\n\r\n");
        assert!(!req.keep_alive);
        let (_, req) = complete(b"GET / HTTP/1.0\r\n\r\n");
        assert!(!req.keep_alive && req.http10);
        let (_, req) = complete(b"HEAD / HTTP/1.0\r\nconnection: Keep-Alive\r\n\r\n");
        assert!(req.keep_alive);
        assert_eq!(req.method, Method::Head);
    }

    #[test]
    fn body_framing() {
        let (_, req) = complete(b"POST /x HTTP/1.1\r\nContent-Length: 12\r\n\r\n");
        assert_eq!((req.method, req.body), (Method::Upload, Body::Length(12)));
        let (_, req) = complete(b"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(req.body, Body::Chunked);
        let (_, req) =
            complete(b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(req.body, Body::Length(5));
        let (_, req) = complete(b"DELETE / HTTP/1.1\r\n\r\n");
        assert_eq!(req.method, Method::Other);
    }

    #[test]
    fn bad_heads_are_rejected_with_their_status() {
        let cases: [(&[u8], u16); 8] = [
            (b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
            (
                b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                400,
            ),
            (
                b"GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                400,
            ),
            (b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
            (
                b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
                400,
            ),
            (b"GARBAGE\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nBad Header\r\n\r\n", 400),
            (b"GET / HTTP/2.0\r\n\r\n", 400),
        ];
        for (raw, status) in cases {
            assert_eq!(
                parse_head(raw),
                Head::Reject(status),
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        }
    }

    #[test]
    fn long_heads_get_431_partial_or_complete() {
        assert_eq!(parse_head(b"GET / HTTP/1.1\r\nA: b"), Head::Partial);
        let mut long = b"GET / HTTP/1.1\r\nX-Big: ".to_vec();
        long.resize(MAX_HEAD + 1, b'a');
        assert_eq!(parse_head(&long), Head::Reject(431));
        long.extend_from_slice(b"\r\n\r\n");
        assert_eq!(parse_head(&long), Head::Reject(431));
        let mut many = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend_from_slice(format!("H{i}: v\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(parse_head(&many), Head::Reject(431));
    }

    /// Feeds `body` in pieces of `step` bytes; returns the bytes consumed up to completion.
    fn walk(body: &[u8], step: usize) -> Result<Option<usize>, BadChunk> {
        let mut chunked = Chunked::new();
        let mut at = 0;
        while at < body.len() {
            let end = (at + step).min(body.len());
            let (used, done) = chunked.feed(&body[at..end])?;
            at += used;
            if done {
                return Ok(Some(at));
            }
        }
        Ok(None)
    }

    #[test]
    fn chunked_bodies_end_exactly_in_any_split() {
        let body =
            b"4\r\nWiki\r\n5;ext=1\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        for step in [1, 2, 3, 7, 100] {
            assert_eq!(walk(body, step), Ok(Some(body.len() - 4)), "step {step}");
        }
        assert_eq!(walk(b"0\r\n\r\n", 1), Ok(Some(5)));
        assert_eq!(walk(b"3\nabc\n0\n\n", 1), Ok(Some(9)));
        assert_eq!(walk(b"10\r\n0123456789", 4), Ok(None));
    }

    #[test]
    fn bad_chunked_bodies_are_errors() {
        for bad in [
            &b"\r\n"[..],
            b"zz\r\n",
            b"3\r\nabcX",
            b"11111111111111111\r\n",
            b"0\r\n\rX",
        ] {
            assert_eq!(
                walk(bad, 1),
                Err(BadChunk),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
