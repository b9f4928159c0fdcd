//! Routes and responses: what a path asks for, and the bytes of the answer.
//!
//! Key decision: large bodies are never built. `/bytes/<n>` and `/chunked/<n>` are written
//! straight from static buffers (one 64 KiB body period, sixteen ready-framed 4 KiB chunks) by
//! vectored writes; only heads, small bodies and the last short chunk are copied into the
//! connection's output buffer. Several ready responses are rendered into that buffer back to
//! back, so a pipelined batch leaves in one write.

use std::io::{IoSlice, Write};
use std::time::Duration;

/// The body of `/` and `/delay/<ms>`.
pub(crate) const HELLO: &[u8] = b"hello from barrage\n";
/// The bodies of `/bytes/<n>` and `/chunked/<n>` are this pattern repeated and cut at `n`.
pub const BODY_PATTERN: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-\n";
/// Largest `/bytes/<n>` and `/chunked/<n>`; above is 400.
pub const MAX_BODY: u64 = 64 << 20;
/// Longest `/delay/<ms>`; above is 400.
pub const MAX_DELAY_MS: u64 = 3_600_000;
/// Data bytes per chunk of `/chunked/<n>` (the last one may be shorter).
pub const CHUNK: usize = 4096;

/// One period of body bytes; its length is a multiple of the pattern's and of [`CHUNK`].
static BODY: [u8; 64 * 1024] = body();
/// The framing of one full chunk: `1000\r\n`, 4 KiB of body, `\r\n`.
const FRAMED: usize = 6 + CHUNK + 2;
/// Sixteen full chunks, ready to send.
static CHUNKS: [u8; 16 * FRAMED] = chunks();
/// Bodies up to this size are copied next to their head instead of streamed.
const INLINE_BODY: u64 = 16 * 1024;

const fn body() -> [u8; 64 * 1024] {
    let mut body = [0; 64 * 1024];
    let mut i = 0;
    while i < body.len() {
        body[i] = BODY_PATTERN[i % BODY_PATTERN.len()];
        i += 1;
    }
    body
}

const fn chunks() -> [u8; 16 * FRAMED] {
    let mut all = [0; 16 * FRAMED];
    let mut c = 0;
    while c < 16 {
        let at = c * FRAMED;
        let head = b"1000\r\n";
        let mut i = 0;
        while i < head.len() {
            all[at + i] = head[i];
            i += 1;
        }
        let mut j = 0;
        while j < CHUNK {
            all[at + 6 + j] = BODY_PATTERN[j % BODY_PATTERN.len()];
            j += 1;
        }
        all[at + 6 + CHUNK] = b'\r';
        all[at + 7 + CHUNK] = b'\n';
        c += 1;
    }
    all
}

/// What a request path asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    Hello,
    Delay(Duration),
    Bytes(u64),
    Status(u16),
    Chunked(u64),
    NotFound,
    /// A known route with an unusable number: 400.
    BadParam,
}

impl Route {
    pub(crate) fn from_path(path: &str) -> Route {
        let path = path.split_once('?').map_or(path, |(path, _query)| path);
        if path == "/" {
            return Route::Hello;
        }
        let Some((prefix, arg)) = path.strip_prefix('/').and_then(|rest| rest.split_once('/'))
        else {
            return Route::NotFound;
        };
        let number = parse_number(arg);
        let route = match prefix {
            "delay" => number
                .filter(|&ms| ms <= MAX_DELAY_MS)
                .map(|ms| Route::Delay(Duration::from_millis(ms))),
            "bytes" => number.filter(|&n| n <= MAX_BODY).map(Route::Bytes),
            "chunked" => number.filter(|&n| n <= MAX_BODY).map(Route::Chunked),
            "status" => number
                .filter(|code| (200..=599).contains(code))
                .map(|code| Route::Status(code as u16)),
            _ => return Route::NotFound,
        };
        route.unwrap_or(Route::BadParam)
    }
}

/// Decimal digits only: `str::parse` would also take a sign.
fn parse_number(arg: &str) -> Option<u64> {
    if arg.is_empty() || !arg.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    arg.parse().ok()
}

/// The response kinds, as rendered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    Hello,
    Bytes(u64),
    Chunked(u64),
    /// A status with a one-line text body (none for 204 and 304): routes, 404 and errors.
    Status(u16),
}

/// What the `Connection` header of a response says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnHeader {
    /// Nothing: HTTP/1.1 keeping the connection.
    Default,
    /// HTTP/1.0 keeping the connection.
    KeepAlive,
    /// The connection closes after this response.
    Close,
}

/// A body being streamed from a static buffer, after the head already in the output buffer.
#[derive(Debug)]
struct Stream {
    /// Repeats for as long as the body lasts.
    unit: &'static [u8],
    /// Where in `unit` the next byte is.
    offset: usize,
    left: u64,
    /// For a chunked body: the data bytes of the last, short chunk (then the terminator).
    tail: Option<usize>,
}

/// The bytes a connection still has to send: heads and small bodies in `out`, then at most one
/// streamed body.
#[derive(Debug, Default)]
pub(crate) struct Output {
    out: Vec<u8>,
    /// `out[..pos]` is sent.
    pos: usize,
    stream: Option<Stream>,
}

/// Slices handed to one vectored write.
pub(crate) const MAX_IOV: usize = 16;
/// An `out` buffer larger than this is freed once it is flushed.
const RETAIN_OUT: usize = 64 * 1024;

impl Output {
    pub(crate) fn is_empty(&self) -> bool {
        self.pos == self.out.len() && self.stream.is_none()
    }

    /// More responses may be rendered: no body is streaming and the batch is not large yet.
    pub(crate) fn has_room(&self) -> bool {
        self.stream.is_none() && self.out.len() - self.pos < RETAIN_OUT
    }

    /// Fills `iov` with what to send next; returns how many slices were set.
    pub(crate) fn fill<'a>(&'a self, iov: &mut [IoSlice<'a>; MAX_IOV]) -> usize {
        let mut k = 0;
        if self.pos < self.out.len() {
            iov[0] = IoSlice::new(&self.out[self.pos..]);
            k = 1;
        }
        if let Some(stream) = &self.stream {
            let (mut offset, mut left) = (stream.offset, stream.left);
            while k < MAX_IOV && left > 0 {
                let end = stream
                    .unit
                    .len()
                    .min(offset + left.min(usize::MAX as u64) as usize);
                iov[k] = IoSlice::new(&stream.unit[offset..end]);
                left -= (end - offset) as u64;
                offset = 0;
                k += 1;
            }
        }
        k
    }

    /// Marks `n` bytes as sent.
    pub(crate) fn advance(&mut self, mut n: usize) {
        let from_out = n.min(self.out.len() - self.pos);
        self.pos += from_out;
        n -= from_out;
        if self.pos == self.out.len() {
            self.pos = 0;
            self.out.clear();
            if self.out.capacity() > RETAIN_OUT {
                self.out = Vec::new();
            }
        }
        if n == 0 {
            return;
        }
        let Some(stream) = &mut self.stream else {
            debug_assert!(false, "advanced past the output");
            return;
        };
        stream.left -= n as u64;
        stream.offset = (stream.offset + n) % stream.unit.len();
        if stream.left == 0 {
            if let Some(rest) = stream.tail {
                chunk_tail(&mut self.out, rest);
            }
            self.stream = None;
        }
    }

    /// Appends one response; returns its status. `head_only` answers a HEAD request.
    pub(crate) fn render(
        &mut self,
        reply: Reply,
        head_only: bool,
        conn: ConnHeader,
        held: Option<std::time::Duration>,
    ) -> u16 {
        debug_assert!(self.stream.is_none());
        let out = &mut self.out;
        let status = match reply {
            Reply::Hello | Reply::Bytes(_) | Reply::Chunked(_) => 200,
            Reply::Status(code) => code,
        };
        let _ = write!(out, "HTTP/1.1 {status} {}\r\n", reason(status));
        out.extend_from_slice(b"Server: barrage\r\n");
        match reply {
            Reply::Hello => text_head(out, HELLO.len()),
            Reply::Bytes(n) => {
                let _ = write!(
                    out,
                    "Content-Type: application/octet-stream\r\nContent-Length: {n}\r\n"
                );
            }
            Reply::Chunked(_) => out.extend_from_slice(
                b"Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n",
            ),
            Reply::Status(204 | 304) => {}
            Reply::Status(code) => text_head(out, status_body(code).len()),
        }
        if status == 405 {
            out.extend_from_slice(b"Allow: GET, HEAD, POST, PUT\r\n");
        }
        if let Some(d) = held {
            let _ = write!(
                out,
                "Server-Timing: app;dur={:.3}\r\n",
                d.as_secs_f64() * 1e3
            );
        }
        match conn {
            ConnHeader::Default => {}
            ConnHeader::KeepAlive => out.extend_from_slice(b"Connection: keep-alive\r\n"),
            ConnHeader::Close => out.extend_from_slice(b"Connection: close\r\n"),
        }
        out.extend_from_slice(b"\r\n");
        if head_only {
            return status;
        }
        match reply {
            Reply::Hello => out.extend_from_slice(HELLO),
            Reply::Bytes(n) if n <= INLINE_BODY => out.extend_from_slice(&BODY[..n as usize]),
            Reply::Bytes(n) => {
                self.stream = Some(Stream {
                    unit: &BODY,
                    offset: 0,
                    left: n,
                    tail: None,
                });
            }
            Reply::Chunked(n) => {
                let full = n / CHUNK as u64;
                let rest = (n % CHUNK as u64) as usize;
                if full == 0 {
                    chunk_tail(out, rest);
                } else {
                    self.stream = Some(Stream {
                        unit: &CHUNKS,
                        offset: 0,
                        left: full * FRAMED as u64,
                        tail: Some(rest),
                    });
                }
            }
            Reply::Status(204 | 304) => {}
            Reply::Status(code) => status_body(code).write_to(out),
        }
        status
    }
}

fn text_head(out: &mut Vec<u8>, len: usize) {
    let _ = write!(out, "Content-Type: text/plain\r\nContent-Length: {len}\r\n");
}

/// The last, short chunk of `rest` data bytes (if any) and the terminating empty chunk.
fn chunk_tail(out: &mut Vec<u8>, rest: usize) {
    if rest > 0 {
        let _ = write!(out, "{rest:x}\r\n");
        out.extend_from_slice(&BODY[..rest]);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
}

/// `"<code> <reason>\n"`, the body of status and error responses, without allocating.
struct StatusBody {
    code: u16,
    reason: &'static str,
}

impl StatusBody {
    fn len(&self) -> usize {
        3 + 1 + self.reason.len() + 1
    }

    fn write_to(&self, out: &mut Vec<u8>) {
        let _ = writeln!(out, "{} {}", self.code, self.reason);
    }
}

fn status_body(code: u16) -> StatusBody {
    StatusBody {
        code,
        reason: reason(code),
    }
}

/// The reason phrase of a status (any phrase is valid; these are the usual ones).
fn reason(status: u16) -> &'static str {
    let known = match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    };
    match status {
        _ if !known.is_empty() => known,
        ..300 => "Success",
        300..400 => "Redirection",
        400..500 => "Client Error",
        _ => "Server Error",
    }
}

#[cfg(test)]
mod tests;
