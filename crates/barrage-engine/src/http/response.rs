//! Response decoder: where each response of a connection ends, without copying bodies.
//!
//! State is a small enum (what is being read and how much of it is left) plus the head reader,
//! whose buffer exists only once a head has spanned reads. Body framing follows RFC 9112 §6.3:
//! no body for HEAD, 1xx, 204 and 304; then Transfer-Encoding (chunked last: chunked; else
//! until EOF), then Content-Length, then until EOF. Every loop step consumes input or changes
//! state towards consuming it, so no input can make the decoder spin; errors are latched.

use super::head::{has_token, header_values, list_items, Head, HeadReader, Progress};
use super::{HttpError, Limits};

/// Receives what the decoder finds, in stream order.
pub trait ResponseSink {
    /// The head (status line and headers) of a final response is complete.
    fn head(&mut self, status: u16);
    /// Body bytes of the current response (for accounting or verification).
    fn body(&mut self, _bytes: &[u8]) {}
    /// The server's own time for the response whose head follows (`Server-Timing`).
    fn server_time(&mut self, _ns: u64) {}
    /// Whether `header` should see the final response's headers.
    fn wants_headers(&self) -> bool {
        false
    }
    /// A header of the final response (before `head`), when `wants_headers`.
    fn header(&mut self, _name: &[u8], _value: &[u8]) {}
    /// A final response ended. `keep_alive` is false when the connection cannot carry another
    /// exchange: `Connection: close`, HTTP/1.0 without keep-alive, a body that ended at EOF,
    /// or `101 Switching Protocols`.
    fn complete(&mut self, status: u16, keep_alive: bool);
}

/// Per-connection response decoder.
#[derive(Clone, Debug)]
pub struct ResponseDecoder {
    state: State,
    head: HeadReader,
    limits: Limits,
    /// Every request on this connection is a HEAD: responses have no body.
    head_requests: bool,
    /// Of the response being read: its status and whether the connection stays usable.
    status: u16,
    keep_alive: bool,
    /// A 1xx interim response was seen; the final one is still due.
    interim: bool,
    /// Trailer bytes of the current chunked body, held to the header limit.
    trailer: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Head,
    /// Content-Length bytes left (> 0).
    Length(u64),
    Chunked(Chunk),
    UntilEof,
    Failed(HttpError),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    /// Hex digits of a chunk-size line; `any` once one digit was read.
    Size {
        size: u64,
        any: bool,
    },
    /// After the size: whitespace and extensions up to the end of the line.
    Ext {
        size: u64,
    },
    /// CR after the size; LF due.
    SizeLf {
        size: u64,
    },
    /// Chunk data bytes left (> 0).
    Data(u64),
    /// The CRLF after chunk data.
    DataCr,
    DataLf,
    /// Trailer section, at the start of a line / after its CR / inside a field line.
    TrailerStart,
    TrailerCr,
    TrailerLine,
}

impl Chunk {
    /// The chunk-size line ended: data, or the trailer section after the last chunk.
    fn after_size(size: u64) -> Self {
        if size == 0 {
            Self::TrailerStart
        } else {
            Self::Data(size)
        }
    }
}

/// Largest body or chunk accepted: 2^62 bytes.
const MAX_LEN: u64 = 1 << 62;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Body {
    None,
    Length(u64),
    Chunked,
    UntilEof,
}

struct HeadInfo {
    status: u16,
    keep_alive: bool,
    body: Body,
    /// The server's own time for this response (`Server-Timing`), in ns.
    server_ns: Option<u64>,
}

impl ResponseDecoder {
    pub fn new(limits: Limits, head_requests: bool) -> Self {
        Self {
            state: State::Head,
            head: HeadReader::default(),
            limits,
            head_requests,
            status: 0,
            keep_alive: true,
            interim: false,
            trailer: 0,
        }
    }

    /// Forget any partial response (keeps the head buffer's capacity).
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.head.clear();
        self.interim = false;
        self.trailer = 0;
    }

    /// Some byte of an unfinished response was seen.
    pub fn in_response(&self) -> bool {
        match self.state {
            State::Head => self.head.started() || self.interim,
            State::Failed(_) => false,
            _ => true,
        }
    }

    /// Feed the bytes of one read.
    pub fn feed(&mut self, data: &[u8], sink: &mut impl ResponseSink) -> Result<(), HttpError> {
        if let State::Failed(e) = &self.state {
            return Err(e.clone());
        }
        self.feed_inner(data, sink).map_err(|e| self.fail(e))
    }

    /// The peer closed the connection.
    pub fn eof(&mut self, sink: &mut impl ResponseSink) -> Result<(), HttpError> {
        match &self.state {
            State::Failed(e) => Err(e.clone()),
            State::Head if !self.in_response() => Ok(()),
            State::UntilEof => {
                self.keep_alive = false;
                self.finish(sink);
                Ok(())
            }
            _ => Err(self.fail(HttpError::Truncated)),
        }
    }

    fn fail(&mut self, e: HttpError) -> HttpError {
        self.state = State::Failed(e.clone());
        self.head.clear();
        e
    }

    fn finish(&mut self, sink: &mut impl ResponseSink) {
        self.state = State::Head;
        self.interim = false;
        sink.complete(self.status, self.keep_alive);
    }

    fn feed_inner(
        &mut self,
        mut data: &[u8],
        sink: &mut impl ResponseSink,
    ) -> Result<(), HttpError> {
        while !data.is_empty() {
            let used = match self.state {
                State::Head => self.read_head(data, sink)?,
                State::Length(left) => {
                    let take = left.min(data.len() as u64) as usize;
                    sink.body(&data[..take]);
                    if take as u64 == left {
                        self.finish(sink);
                    } else {
                        self.state = State::Length(left - take as u64);
                    }
                    take
                }
                State::Chunked(c) => self.read_chunked(c, data, sink)?,
                State::UntilEof => {
                    sink.body(data);
                    data.len()
                }
                State::Failed(ref e) => return Err(e.clone()),
            };
            data = &data[used..];
        }
        Ok(())
    }

    fn read_head(&mut self, data: &[u8], sink: &mut impl ResponseSink) -> Result<usize, HttpError> {
        let head_requests = self.head_requests;
        let headers = sink.wants_headers();
        let (consumed, info) = match self.head.feed(data, self.limits, |h| {
            if headers && !(100..200).contains(&h.status) {
                for x in h.headers.iter() {
                    sink.header(x.name.as_bytes(), x.value);
                }
            }
            summarize(h, head_requests)
        })? {
            Progress::Partial => return Ok(data.len()),
            Progress::Done { consumed, value } => (consumed, value?),
        };
        if (100..200).contains(&info.status) && info.status != 101 {
            self.interim = true;
            return Ok(consumed);
        }
        self.status = info.status;
        self.keep_alive = info.keep_alive;
        if let Some(ns) = info.server_ns {
            sink.server_time(ns);
        }
        sink.head(info.status);
        match info.body {
            Body::None | Body::Length(0) => self.finish(sink),
            Body::Length(n) => self.state = State::Length(n),
            Body::Chunked => {
                self.trailer = 0;
                self.state = State::Chunked(Chunk::Size {
                    size: 0,
                    any: false,
                });
            }
            Body::UntilEof => self.state = State::UntilEof,
        }
        Ok(consumed)
    }

    /// Run the chunked-body machine over `data`; returns the bytes used (up to the end of the
    /// response, if it ends inside `data`).
    fn read_chunked(
        &mut self,
        mut c: Chunk,
        data: &[u8],
        sink: &mut impl ResponseSink,
    ) -> Result<usize, HttpError> {
        let mut i = 0;
        while i < data.len() {
            let b = data[i];
            c = match c {
                Chunk::Size { size, any } => match b {
                    b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                        let digit = (b as char).to_digit(16).unwrap_or(0) as u64;
                        if size > MAX_LEN >> 4 || size * 16 + digit > MAX_LEN {
                            return Err(HttpError::BadChunk);
                        }
                        Chunk::Size {
                            size: size * 16 + digit,
                            any: true,
                        }
                    }
                    _ if !any => return Err(HttpError::BadChunk),
                    b' ' | b'\t' | b';' => Chunk::Ext { size },
                    b'\r' => Chunk::SizeLf { size },
                    b'\n' => Chunk::after_size(size),
                    _ => return Err(HttpError::BadChunk),
                },
                Chunk::Ext { size } => match memchr::memchr(b'\n', &data[i..]) {
                    Some(at) => {
                        i += at;
                        Chunk::after_size(size)
                    }
                    None => {
                        i = data.len();
                        continue;
                    }
                },
                Chunk::SizeLf { size } if b == b'\n' => Chunk::after_size(size),
                Chunk::Data(left) => {
                    let take = left.min((data.len() - i) as u64) as usize;
                    sink.body(&data[i..i + take]);
                    i += take;
                    c = if take as u64 == left {
                        Chunk::DataCr
                    } else {
                        Chunk::Data(left - take as u64)
                    };
                    continue;
                }
                Chunk::DataCr if b == b'\r' => Chunk::DataLf,
                Chunk::DataCr | Chunk::DataLf if b == b'\n' => Chunk::Size {
                    size: 0,
                    any: false,
                },
                Chunk::TrailerStart | Chunk::TrailerCr if b == b'\n' => {
                    self.finish(sink);
                    return Ok(i + 1);
                }
                Chunk::TrailerStart if b == b'\r' => self.trailer_byte(Chunk::TrailerCr)?,
                Chunk::TrailerStart => self.trailer_byte(Chunk::TrailerLine)?,
                Chunk::TrailerLine => {
                    let rest = &data[i..];
                    let (n, next) = match memchr::memchr(b'\n', rest) {
                        Some(at) => (at + 1, Chunk::TrailerStart),
                        None => (rest.len(), Chunk::TrailerLine),
                    };
                    self.trailer += n;
                    if self.trailer > self.limits.max_header_bytes {
                        return Err(HttpError::HeadersTooLarge);
                    }
                    i += n;
                    c = next;
                    continue;
                }
                Chunk::SizeLf { .. } | Chunk::DataCr | Chunk::DataLf | Chunk::TrailerCr => {
                    return Err(HttpError::BadChunk)
                }
            };
            i += 1;
        }
        self.state = State::Chunked(c);
        Ok(data.len())
    }

    fn trailer_byte(&mut self, next: Chunk) -> Result<Chunk, HttpError> {
        self.trailer += 1;
        if self.trailer > self.limits.max_header_bytes {
            return Err(HttpError::HeadersTooLarge);
        }
        Ok(next)
    }
}

/// What a head says about its response: final or interim, keep-alive, body framing.
fn summarize(h: &Head<'_>, head_request: bool) -> Result<HeadInfo, HttpError> {
    let close = has_token(h.headers, "connection", "close");
    let mut keep_alive = if h.minor_version == 0 {
        !close && has_token(h.headers, "connection", "keep-alive")
    } else {
        !close
    };
    let body = match h.status {
        101 => {
            // The connection now speaks another protocol: no further HTTP exchange.
            keep_alive = false;
            Body::None
        }
        100..=199 | 204 | 304 => Body::None,
        _ if head_request => Body::None,
        _ => match list_items(h.headers, "transfer-encoding").last() {
            Some(coding) if coding.eq_ignore_ascii_case(b"chunked") => Body::Chunked,
            Some(_) => Body::UntilEof,
            None => match content_length(h.headers)? {
                Some(n) => Body::Length(n),
                None => Body::UntilEof,
            },
        },
    };
    if body == Body::UntilEof {
        keep_alive = false;
    }
    Ok(HeadInfo {
        status: h.status,
        keep_alive,
        body,
        server_ns: server_timing_ns(h.headers),
    })
}

/// The server's time from `Server-Timing` (RFC: `metric;dur=MS, metric;dur=MS`): the metric
/// named `total` if there is one, else the first with a `dur`; in ns.
pub fn server_timing_ns(headers: &[httparse::Header<'_>]) -> Option<u64> {
    server_timing_of(header_values(headers, "server-timing"))
}

/// [`server_timing_ns`] over the values of the `Server-Timing` fields (HTTP/2 hands them on
/// one by one).
pub fn server_timing_of<'v>(values: impl Iterator<Item = &'v [u8]>) -> Option<u64> {
    let mut first = None;
    for value in values {
        for metric in value.split(|&b| b == b',') {
            let mut parts = metric.split(|&b| b == b';').map(|p| p.trim_ascii());
            let name = parts.next().unwrap_or_default();
            let dur = parts.find_map(|p| {
                let v = p.strip_prefix(b"dur=")?;
                let v = std::str::from_utf8(v).ok()?.trim_matches('"');
                v.parse::<f64>().ok().filter(|d| d.is_finite() && *d >= 0.0)
            });
            if let Some(ms) = dur {
                let ns = (ms * 1e6).round() as u64;
                if name.eq_ignore_ascii_case(b"total") {
                    return Some(ns);
                }
                first = first.or(Some(ns));
            }
        }
    }
    first
}

/// The Content-Length, if any: every value (across repeated headers and comma lists) must be
/// the same decimal number of at most 2^62.
fn content_length(headers: &[httparse::Header<'_>]) -> Result<Option<u64>, HttpError> {
    let mut found = None;
    for value in header_values(headers, "content-length") {
        for item in value.split(|&b| b == b',').map(|i| i.trim_ascii()) {
            let n = parse_decimal(item).ok_or(HttpError::BadContentLength)?;
            if found.is_some_and(|f| f != n) {
                return Err(HttpError::BadContentLength);
            }
            found = Some(n);
        }
    }
    Ok(found)
}

fn parse_decimal(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |acc, &b| {
        let d = (b as char).to_digit(10)? as u64;
        acc.checked_mul(10)?
            .checked_add(d)
            .filter(|&n| n <= MAX_LEN)
    })
}

#[cfg(test)]
mod tests;
