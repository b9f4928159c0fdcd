//! A small blocking HTTP/1.1 response reader for the http server's tests, written apart from
//! both the server and the client engine so that neither can hide the other's framing bug.

use barrage_servers::http::BODY_PATTERN;
use std::io::{BufRead, Read};

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body came chunked; `chunks` counts its non-empty chunks.
    pub chunked: bool,
    pub chunks: usize,
}

impl Response {
    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn line(reader: &mut impl BufRead) -> String {
    let mut line = String::new();
    reader.read_line(&mut line).expect("read a line");
    assert!(line.ends_with("\r\n"), "line without CRLF: {line:?}");
    line.truncate(line.len() - 2);
    line
}

/// Reads one response. `head_request`: it answers a HEAD, so it has no body whatever its
/// headers say.
pub fn read_response(reader: &mut impl BufRead, head_request: bool) -> Response {
    let status_line = line(reader);
    let mut parts = status_line.splitn(3, ' ');
    assert_eq!(parts.next(), Some("HTTP/1.1"), "{status_line}");
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {status_line:?}"));
    let mut headers = Vec::new();
    loop {
        let header = line(reader);
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').expect("a header");
        headers.push((name.to_owned(), value.trim().to_owned()));
    }
    let mut response = Response {
        status,
        headers,
        body: Vec::new(),
        chunked: false,
        chunks: 0,
    };
    if head_request || status == 204 || status == 304 {
        return response;
    }
    if response
        .header("transfer-encoding")
        .is_some_and(|te| te.eq_ignore_ascii_case("chunked"))
    {
        response.chunked = true;
        loop {
            let size_line = line(reader);
            let size = usize::from_str_radix(size_line.split(';').next().unwrap_or(""), 16)
                .unwrap_or_else(|_| panic!("chunk size {size_line:?}"));
            if size == 0 {
                while !line(reader).is_empty() {} // trailers
                break;
            }
            response.chunks += 1;
            let at = response.body.len();
            response.body.resize(at + size, 0);
            reader
                .read_exact(&mut response.body[at..])
                .expect("chunk data");
            assert_eq!(line(reader), "", "chunk data not followed by CRLF");
        }
        return response;
    }
    let length: usize = response
        .header("content-length")
        .unwrap_or_else(|| panic!("no length: {response:?}"))
        .parse()
        .expect("numeric length");
    response.body.resize(length, 0);
    reader.read_exact(&mut response.body).expect("body");
    response
}

/// What `/bytes/<n>` and `/chunked/<n>` send.
pub fn expected_body(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| BODY_PATTERN[i % BODY_PATTERN.len()])
        .collect()
}

/// A reader that counts the bytes it passed on.
pub struct Counting<R> {
    pub inner: R,
    pub count: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}
