//! One response head (status line + header fields) that may arrive over several reads.
//!
//! The common case, a head inside one read, is parsed in place with no copy. Only when a head
//! spans reads are its bytes (and never more: the copy stops at the blank line) appended to a
//! buffer that is allocated on first need, kept at its high-water mark and capped by
//! [`Limits::max_header_bytes`]. Re-parsing a partial head happens only when a new line ended
//! (or in the first few bytes, to reject garbage and TLS early), so the work per head stays
//! bounded by the line limit.

use std::mem::MaybeUninit;

use super::{HttpError, Limits, MAX_HEADER_LINES};

/// A parsed head, borrowed from the read buffer or the decoder's own buffer.
pub(crate) struct Head<'a> {
    pub status: u16,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor_version: u8,
    pub headers: &'a [httparse::Header<'a>],
}

pub(crate) enum Progress<T> {
    /// More bytes are needed; all given bytes were taken.
    Partial,
    /// The head ended after `consumed` of the given bytes.
    Done { consumed: usize, value: T },
}

/// Below this many buffered bytes a partial head is re-parsed on every read, so a first read
/// of garbage or a TLS record is reported at once.
const EARLY: usize = 32;

#[derive(Clone, Debug, Default)]
pub(crate) struct HeadReader {
    /// Bytes of a head that spans reads; empty between heads (capacity kept).
    buf: Vec<u8>,
}

impl HeadReader {
    /// Bytes of an unfinished head are held (blank lines before a status line do not count:
    /// some servers send a stray CRLF after a body).
    pub fn started(&self) -> bool {
        self.buf.iter().any(|&b| b != b'\r' && b != b'\n')
    }

    pub fn clear(&mut self) {
        self.buf.clear();
    }

    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Take bytes of a head; `on_head` sees the head once it is complete.
    pub fn feed<T>(
        &mut self,
        data: &[u8],
        limits: Limits,
        mut on_head: impl FnMut(&Head<'_>) -> T,
    ) -> Result<Progress<T>, HttpError> {
        if self.buf.is_empty() {
            return match parse(data, limits, &mut on_head)? {
                Some((consumed, value)) => Ok(Progress::Done { consumed, value }),
                None if data.len() > limits.max_header_bytes => Err(HttpError::HeadersTooLarge),
                None => {
                    self.buf.extend_from_slice(data);
                    Ok(Progress::Partial)
                }
            };
        }
        let mut from = 0;
        loop {
            let end = find_end(&self.buf, data, from);
            let upto = end.unwrap_or(data.len());
            let chunk = &data[from..upto];
            if self.buf.len() + chunk.len() > limits.max_header_bytes {
                return Err(HttpError::HeadersTooLarge);
            }
            let before = self.buf.len();
            self.buf.extend_from_slice(chunk);
            let worth = end.is_some() || before < EARLY || memchr::memchr(b'\n', chunk).is_some();
            if worth {
                if let Some((n, value)) = parse(&self.buf, limits, &mut on_head)? {
                    // Bytes of `buf` that came before `data`; the head cannot end among them,
                    // or an earlier read would have completed it.
                    let earlier = self.buf.len() - upto;
                    let consumed = n.checked_sub(earlier).ok_or(HttpError::BadHeader)?;
                    self.buf.clear();
                    return Ok(Progress::Done { consumed, value });
                }
            }
            match end {
                Some(e) => from = e,
                None => return Ok(Progress::Partial),
            }
        }
    }
}

/// Index in `data` just past the first blank line (`\n\n` or `\n\r\n`) at or after `from`,
/// looking back into `buf` (which holds the stream bytes before `data[from]`).
fn find_end(buf: &[u8], data: &[u8], from: usize) -> Option<usize> {
    let before = |i: usize, k: usize| -> Option<u8> {
        let back = i - from;
        if back >= k {
            Some(data[i - k])
        } else {
            buf.len()
                .checked_sub(k - back)
                .and_then(|j| buf.get(j).copied())
        }
    };
    memchr::memchr_iter(b'\n', &data[from..])
        .map(|i| i + from)
        .find(|&i| match before(i, 1) {
            Some(b'\n') => true,
            Some(b'\r') => before(i, 2) == Some(b'\n'),
            _ => false,
        })
        .map(|i| i + 1)
}

fn config() -> httparse::ParserConfig {
    let mut c = httparse::ParserConfig::default();
    // RFC 9112 §5.2: a user agent replaces obs-fold in a response by SP rather than failing.
    c.allow_obsolete_multiline_headers_in_responses(true);
    c
}

/// `Some((head length, on_head's value))`, `None` while incomplete.
fn parse<T>(
    bytes: &[u8],
    limits: Limits,
    on_head: &mut impl FnMut(&Head<'_>) -> T,
) -> Result<Option<(usize, T)>, HttpError> {
    let mut slots = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADER_LINES];
    let slots = &mut slots[..limits.max_header_lines.min(MAX_HEADER_LINES)];
    let mut resp = httparse::Response::new(&mut []);
    match config().parse_response_with_uninit_headers(&mut resp, bytes, slots) {
        Ok(httparse::Status::Complete(n)) => {
            if n > limits.max_header_bytes {
                return Err(HttpError::HeadersTooLarge);
            }
            let (Some(status @ 100..), Some(minor_version)) = (resp.code, resp.version) else {
                return Err(HttpError::BadStatusLine);
            };
            let head = Head {
                status,
                minor_version,
                headers: resp.headers,
            };
            Ok(Some((n, on_head(&head))))
        }
        Ok(httparse::Status::Partial) => Ok(None),
        Err(e) => match tls_record(bytes) {
            Some(true) => Err(HttpError::TlsOnPlainPort),
            Some(false) => Ok(None),
            None => Err(match e {
                httparse::Error::TooManyHeaders => HttpError::TooManyHeaders,
                httparse::Error::Version | httparse::Error::Status | httparse::Error::Token => {
                    HttpError::BadStatusLine
                }
                _ => HttpError::BadHeader,
            }),
        },
    }
}

/// Whether `bytes` start like a TLS handshake or alert record (content type 0x16 or 0x15,
/// version 3.x): `Some(true)` yes, `Some(false)` too few bytes to tell, `None` no.
fn tls_record(bytes: &[u8]) -> Option<bool> {
    match bytes {
        [0x15 | 0x16, 0x03, 0..=4, ..] => Some(true),
        [0x15 | 0x16] | [0x15 | 0x16, 0x03] => Some(false),
        _ => None,
    }
}

/// Values of every header named `name` (case-insensitive).
pub(crate) fn header_values<'a>(
    headers: &'a [httparse::Header<'a>],
    name: &'a str,
) -> impl Iterator<Item = &'a [u8]> + 'a {
    headers
        .iter()
        .filter(move |h| h.name.eq_ignore_ascii_case(name))
        .map(|h| h.value)
}

/// Comma-separated list elements of every header named `name`, trimmed, empty ones skipped.
pub(crate) fn list_items<'a>(
    headers: &'a [httparse::Header<'a>],
    name: &'a str,
) -> impl Iterator<Item = &'a [u8]> + 'a {
    header_values(headers, name)
        .flat_map(|v| v.split(|&b| b == b','))
        .map(|item| item.trim_ascii())
        .filter(|item| !item.is_empty())
}

/// A list header named `name` contains `token` (case-insensitive).
pub(crate) fn has_token(headers: &[httparse::Header<'_>], name: &str, token: &str) -> bool {
    list_items(headers, name).any(|t| t.eq_ignore_ascii_case(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_of(reader: &mut HeadReader, data: &[u8]) -> Result<Option<(usize, u16)>, HttpError> {
        match reader.feed(data, Limits::default(), |h| h.status)? {
            Progress::Partial => Ok(None),
            Progress::Done { consumed, value } => Ok(Some((consumed, value))),
        }
    }

    #[test]
    fn a_head_spanning_reads_copies_only_head_bytes() {
        let mut r = HeadReader::default();
        assert_eq!(status_of(&mut r, b"HTTP/1.1 200 OK\r\nA: b\r"), Ok(None));
        assert!(r.started());
        assert_eq!(status_of(&mut r, b"\n\r\nBODY"), Ok(Some((3, 200))));
        assert!(!r.started());
        assert!(r.buf.capacity() > 0, "the buffer is kept for the next head");
    }

    #[test]
    fn leading_blank_lines_are_not_the_end_of_a_head() {
        let mut r = HeadReader::default();
        assert_eq!(status_of(&mut r, b"\r\n"), Ok(None));
        assert_eq!(status_of(&mut r, b"\r\nHTTP/1.1 204 No\r\n"), Ok(None));
        assert_eq!(status_of(&mut r, b"\r\nX"), Ok(Some((2, 204))));
    }

    #[test]
    fn blank_line_detection_looks_back_across_reads() {
        for (buf, data, from, want) in [
            (&b"a\n"[..], &b"\nx"[..], 0, Some(1)),
            (b"a\n\r", b"\nx", 0, Some(1)),
            (b"a\n", b"\r\nx", 0, Some(2)),
            (b"a\r", b"\nx", 0, None),
            (b"", b"a\n\nb\n\n", 3, Some(6)),
        ] {
            assert_eq!(find_end(buf, data, from), want, "{buf:?} {data:?}");
        }
    }

    #[test]
    fn tls_records_are_told_apart_only_with_enough_bytes() {
        assert_eq!(tls_record(&[0x16]), Some(false));
        assert_eq!(tls_record(&[0x16, 3, 1, 0]), Some(true));
        assert_eq!(tls_record(&[0x15, 3, 3]), Some(true));
        assert_eq!(tls_record(&[0x16, 4]), None);
        assert_eq!(tls_record(b"HTTP"), None);
    }
}
