use super::*;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Rec {
    events: Vec<Ev>,
    body: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Head(u16),
    Done(u16, bool),
}

impl ResponseSink for Rec {
    fn head(&mut self, status: u16) {
        self.events.push(Ev::Head(status));
    }
    fn body(&mut self, bytes: &[u8]) {
        self.body.extend_from_slice(bytes);
    }
    fn complete(&mut self, status: u16, keep_alive: bool) {
        self.events.push(Ev::Done(status, keep_alive));
    }
}

type Fed = (Rec, Result<(), HttpError>);

fn decode(parts: &[&[u8]], head_requests: bool) -> Fed {
    let mut d = ResponseDecoder::new(Limits::default(), head_requests);
    let mut r = Rec::default();
    for p in parts {
        if let Err(e) = d.feed(p, &mut r) {
            return (r, Err(e));
        }
    }
    let res = d.eof(&mut r);
    (r, res)
}

/// Decode `input` whole and split at every pair of points; the outcome (events, body bytes,
/// final result) must not depend on how the stream was cut into reads.
fn all_splits(input: &[u8], head_requests: bool) -> Fed {
    let whole = decode(&[input], head_requests);
    for i in 0..=input.len() {
        for j in i..=input.len() {
            let got = decode(&[&input[..i], &input[i..j], &input[j..]], head_requests);
            assert_eq!(
                got,
                whole,
                "{:?} split at {i},{j}",
                String::from_utf8_lossy(input)
            );
        }
    }
    whole
}

fn ok(input: &[u8]) -> Rec {
    let (r, res) = all_splits(input, false);
    assert_eq!(res, Ok(()), "{:?}", String::from_utf8_lossy(input));
    r
}

fn err(input: &[u8]) -> HttpError {
    decode(&[input], false).1.unwrap_err()
}

use Ev::{Done, Head as H};

#[test]
fn fixed_length_responses() {
    let r = ok(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
    assert_eq!(r.events, [H(200), Done(200, true)]);
    assert_eq!(r.body, b"hello");
    let r = ok(b"HTTP/1.1 404 \r\ncontent-length:0\r\nServer: x\r\n\r\n");
    assert_eq!(r.events, [H(404), Done(404, true)]);
    let r = ok(b"HTTP/1.1 200\nContent-Length: 2\n\nok");
    assert_eq!(
        r.events,
        [H(200), Done(200, true)],
        "bare LF and no reason phrase"
    );
    let r = ok(b"HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\nabc");
    assert_eq!(r.body, b"abc", "equal duplicates are one length");
}

#[test]
fn chunked_bodies_with_extensions_and_trailers() {
    let r = ok(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        5\r\nhello\r\n1A;name=\"v\";x\r\nabcdefghijklmnopqrstuvwxyz\r\n00 \r\n\r\n");
    assert_eq!(r.events, [H(200), Done(200, true)]);
    assert_eq!(r.body, b"helloabcdefghijklmnopqrstuvwxyz");
    let r = ok(
        b"HTTP/1.1 201 Created\r\ntransfer-encoding: gzip, Chunked\r\nContent-Length: 99\r\n\r\n\
        3\r\nabc\r\n0\r\nExpires: never\r\nX-Sum: 1\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
    );
    assert_eq!(r.events, [H(201), Done(201, true), H(204), Done(204, true)]);
    assert_eq!(r.body, b"abc", "chunked wins over Content-Length");
    let r = ok(b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n2\nab\n0\n\n");
    assert_eq!(r.body, b"ab", "bare LF line ends are tolerated");
}

#[test]
fn interim_responses_are_skipped() {
    let r = ok(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n\
        HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
    );
    assert_eq!(r.events, [H(200), Done(200, true)]);
    assert_eq!(r.body, b"x");
}

#[test]
fn switching_protocols_is_final_and_ends_http_on_the_connection() {
    let r = ok(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n");
    assert_eq!(r.events, [H(101), Done(101, false)]);
}

#[test]
fn head_204_and_304_responses_have_no_body() {
    let input = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    let (r, res) = all_splits(input, true);
    assert_eq!(res, Ok(()));
    assert_eq!(r.events, [H(200), Done(200, true), H(200), Done(200, true)]);
    let r = ok(b"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n\
        HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(r.events, [H(204), Done(204, true), H(304), Done(304, true)]);
}

#[test]
fn http_1_0_keeps_alive_only_when_asked() {
    let r = ok(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nab");
    assert_eq!(r.events, [H(200), Done(200, true)]);
    let r = ok(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nab");
    assert_eq!(r.events, [H(200), Done(200, false)]);
    let r = ok(b"HTTP/1.0 200 OK\r\n\r\nuntil the end");
    assert_eq!(r.events, [H(200), Done(200, false)]);
    assert_eq!(r.body, b"until the end");
}

#[test]
fn connection_close_is_a_token_in_a_list() {
    let r = ok(b"HTTP/1.1 200 OK\r\nConnection: TE, CLOSE\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(r.events, [H(200), Done(200, false)]);
    let r = ok(b"HTTP/1.1 200 OK\r\nConnection: closed\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(r.events, [H(200), Done(200, true)]);
}

#[test]
fn a_body_without_length_is_read_until_close() {
    let r = ok(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it\r\n\r\nHTTP/1.1 200");
    assert_eq!(r.events, [H(200), Done(200, false)]);
    assert_eq!(r.body, b"all of it\r\n\r\nHTTP/1.1 200");
    let r = ok(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz");
    assert_eq!(
        r.events,
        [H(200), Done(200, false)],
        "not chunked last: until close"
    );
}

#[test]
fn pipelined_responses_in_one_read() {
    let one = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let chunked = b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n!\r\n0\r\n\r\n";
    let mut input = Vec::new();
    for _ in 0..3 {
        input.extend_from_slice(one);
        input.extend_from_slice(chunked);
    }
    let r = ok(&input);
    let want: Vec<Ev> = (0..3)
        .flat_map(|_| [H(200), Done(200, true), H(500), Done(500, true)])
        .collect();
    assert_eq!(r.events, want);
    assert_eq!(r.body, b"ok!ok!ok!");
}

#[test]
fn bad_status_lines_and_garbage() {
    for input in [
        &b"HTTP/1.1 2000 OK\r\n\r\n"[..],
        b"HTTP/1.1 20 OK\r\n\r\n",
        b"HTTP/1.1 099 Low\r\n\r\n",
        b"HTTP/2 200 OK\r\n\r\n",
        b"HTTP/1.1 abc OK\r\n\r\n",
        b"HTTP/1.1  200 OK\r\n\r\n",
        b"hello world\r\n\r\n",
        b"SSH-2.0-OpenSSH_9.6\r\n",
        b"\x00\x01\x02\x03",
        b"HTTP/1.1 200 OK\rX\r\n\r\n",
    ] {
        assert_eq!(err(input), HttpError::BadStatusLine, "{input:?}");
    }
    for input in [
        &b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n"[..],
        b"HTTP/1.1 200 OK\r\n: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\r\r\n\r\n",
    ] {
        assert_eq!(err(input), HttpError::BadHeader, "{input:?}");
    }
}

#[test]
fn a_tls_record_on_a_plain_port_is_named() {
    let hello = [
        0x16, 0x03, 0x03, 0x00, 0x7a, 0x02, 0x00, 0x00, 0x76, 0x03, 0x03,
    ];
    let (_, res) = all_splits(&hello, false);
    assert_eq!(res, Err(HttpError::TlsOnPlainPort));
    let alert = [0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x46];
    assert_eq!(all_splits(&alert, false).1, Err(HttpError::TlsOnPlainPort));
    assert_eq!(err(&[0x16, 0x07, 0x00]), HttpError::BadStatusLine);
    assert!(HttpError::TlsOnPlainPort.to_string().contains("https://"));
}

#[test]
fn content_length_errors() {
    for cl in [
        "-1",
        "abc",
        "",
        "5, 6",
        "+5",
        "0x10",
        "1 2",
        "4611686018427387905",
        "99999999999999999999999",
    ] {
        let input = format!("HTTP/1.1 200 OK\r\nContent-Length: {cl}\r\n\r\n");
        assert_eq!(err(input.as_bytes()), HttpError::BadContentLength, "{cl:?}");
    }
    let dup = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!";
    assert_eq!(err(dup), HttpError::BadContentLength);
    let max = b"HTTP/1.1 200 OK\r\nContent-Length: 4611686018427387904\r\n\r\n";
    let (r, res) = decode(&[max], false);
    assert_eq!(
        (r.events, res),
        (vec![H(200)], Err(HttpError::Truncated)),
        "2^62 itself is fine"
    );
}

#[test]
fn chunk_errors() {
    for body in [
        &b"g\r\n"[..],
        b"\r\n",
        b";ext\r\n",
        b" 5\r\n",
        b"-1\r\n",
        b"5\rx",
        b"1\r\nab\r\n",
        b"1\r\na\rx",
        b"4000000000000001\r\n",
        b"fffffffffffffffffffff\r\n",
        b"0\r\n\rx",
    ] {
        let mut input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        input.extend_from_slice(body);
        assert_eq!(err(&input), HttpError::BadChunk, "{body:?}");
    }
    let mut ok_max = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    ok_max.extend_from_slice(b"0004000000000000000\r\n");
    assert_eq!(
        decode(&[&ok_max], false).1,
        Err(HttpError::Truncated),
        "2^62 with leading zeros"
    );
}

#[test]
fn eof_in_the_middle_of_a_response_is_truncation() {
    for input in [
        &b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"[..],
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Le",
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"H",
    ] {
        let (_, res) = all_splits(input, false);
        assert_eq!(
            res,
            Err(HttpError::Truncated),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
    let mut d = ResponseDecoder::new(Limits::default(), false);
    assert_eq!(d.eof(&mut Rec::default()), Ok(()), "idle connection");
}

#[test]
fn in_response_tracks_unfinished_responses() {
    let mut d = ResponseDecoder::new(Limits::default(), false);
    let mut r = Rec::default();
    assert!(!d.in_response());
    d.feed(b"HT", &mut r).unwrap();
    assert!(d.in_response());
    d.feed(b"TP/1.1 100 Continue\r\n\r\n", &mut r).unwrap();
    assert!(d.in_response(), "a final response is still due");
    d.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n", &mut r)
        .unwrap();
    assert!(d.in_response());
    d.feed(b"x", &mut r).unwrap();
    assert!(!d.in_response());
    d.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n", &mut r)
        .unwrap();
    d.reset();
    assert!(!d.in_response());
    assert_eq!(d.eof(&mut r), Ok(()));
}

#[test]
fn errors_are_latched_until_reset() {
    let mut d = ResponseDecoder::new(Limits::default(), false);
    let mut r = Rec::default();
    assert_eq!(d.feed(b"nope\r\n", &mut r), Err(HttpError::BadStatusLine));
    let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(d.feed(ok, &mut r), Err(HttpError::BadStatusLine));
    assert_eq!(d.eof(&mut r), Err(HttpError::BadStatusLine));
    d.reset();
    assert_eq!(d.feed(ok, &mut r), Ok(()));
    assert_eq!(r.events, [H(200), Done(200, true)]);
}

fn big_head(lines: usize, value_len: usize) -> Vec<u8> {
    let mut h = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..lines {
        h.extend_from_slice(format!("X-{i}: {}\r\n", "v".repeat(value_len)).as_bytes());
    }
    h.extend_from_slice(b"Content-Length: 0\r\n\r\n");
    h
}

#[test]
fn headers_over_64_kib_are_refused_without_growing_past_the_limit() {
    let huge = big_head(20, 4000);
    assert!(huge.len() > 64 * 1024);
    assert_eq!(err(&huge), HttpError::HeadersTooLarge);
    for step in [1000, 4096, 60_000] {
        let mut d = ResponseDecoder::new(Limits::default(), false);
        let mut r = Rec::default();
        let res = huge.chunks(step).try_for_each(|c| d.feed(c, &mut r));
        assert_eq!(res, Err(HttpError::HeadersTooLarge), "reads of {step}");
    }
    // A server that never ends its head: the buffer stays within the limit.
    let mut d = ResponseDecoder::new(Limits::default(), false);
    let mut r = Rec::default();
    d.feed(b"HTTP/1.1 200 OK\r\nX: ", &mut r).unwrap();
    let junk = [b'a'; 1000];
    let mut res = Ok(());
    for _ in 0..200 {
        res = d.feed(&junk, &mut r);
        assert!(d.head.capacity() <= 128 * 1024);
        if res.is_err() {
            break;
        }
    }
    assert_eq!(res, Err(HttpError::HeadersTooLarge));
    let fits = big_head(20, 3000);
    assert!(fits.len() < 64 * 1024);
    assert_eq!(decode(&fits.chunks(7).collect::<Vec<_>>(), false).1, Ok(()));
}

#[test]
fn more_than_100_header_lines_are_refused() {
    assert_eq!(
        decode(&[&big_head(99, 1)], false).1,
        Ok(()),
        "99 + Content-Length"
    );
    let many = big_head(100, 1);
    assert_eq!(err(&many), HttpError::TooManyHeaders);
    let parts: Vec<&[u8]> = many.chunks(5).collect();
    assert_eq!(decode(&parts, false).1, Err(HttpError::TooManyHeaders));
    let limits = Limits {
        max_header_bytes: 64 * 1024,
        max_header_lines: 200,
    };
    let mut d = ResponseDecoder::new(limits, false);
    assert_eq!(d.feed(&big_head(150, 1), &mut Rec::default()), Ok(()));
}

#[test]
fn a_head_in_one_read_allocates_nothing() {
    let mut d = ResponseDecoder::new(Limits::default(), false);
    let mut r = Rec::default();
    let one = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
    for _ in 0..10 {
        d.feed(one, &mut r).unwrap();
    }
    assert_eq!(d.head.capacity(), 0);
    d.feed(&one[..20], &mut r).unwrap();
    d.feed(&one[20..], &mut r).unwrap();
    let cap = d.head.capacity();
    assert!(cap > 0);
    for _ in 0..10 {
        d.feed(&one[..20], &mut r).unwrap();
        d.feed(&one[20..], &mut r).unwrap();
    }
    assert_eq!(d.head.capacity(), cap, "the head buffer is reused");
    assert_eq!(r.events.len(), 42);
}

#[test]
fn trailers_are_held_to_the_header_limit() {
    let mut input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n".to_vec();
    for _ in 0..2000 {
        input.extend_from_slice(b"X-Trailer: 0123456789012345678901234567890123456789\r\n");
    }
    assert_eq!(err(&input), HttpError::HeadersTooLarge);
}

#[test]
fn server_timing_takes_total_else_the_first_duration() {
    let h = |v: &'static str| httparse::Header {
        name: "Server-Timing",
        value: v.as_bytes(),
    };
    let ns = |hs: &[httparse::Header]| super::server_timing_ns(hs);
    assert_eq!(ns(&[h("app;dur=1.5")]), Some(1_500_000));
    assert_eq!(
        ns(&[h("db;dur=4, total;dur=12.25;desc=\"all\"")]),
        Some(12_250_000)
    );
    assert_eq!(
        ns(&[h("cache;desc=hit"), h("app;dur=\"0.250\"")]),
        Some(250_000)
    );
    assert_eq!(ns(&[h("miss"), h("app;dur=-1"), h("x;dur=abc")]), None);
    assert_eq!(ns(&[]), None);
}
