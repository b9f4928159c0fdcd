//! Rendering and streaming of responses, checked byte for byte.

use super::*;

/// Sends everything through `fill`/`advance` in writes of at most `step` bytes.
fn drain(output: &mut Output, step: usize) -> Vec<u8> {
    let mut sent = Vec::new();
    while !output.is_empty() {
        let mut iov = [IoSlice::new(&[]); MAX_IOV];
        let k = output.fill(&mut iov);
        let mut n = 0;
        for slice in &iov[..k] {
            let take = slice.len().min(step - n);
            sent.extend_from_slice(&slice[..take]);
            n += take;
        }
        output.advance(n);
    }
    sent
}

fn expected_body(n: usize) -> Vec<u8> {
    (0..n).map(|i| BODY_PATTERN[i % 64]).collect()
}

/// Splits a response into head and body.
fn split(raw: &[u8]) -> (String, &[u8]) {
    let at = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("head end")
        + 4;
    (String::from_utf8_lossy(&raw[..at]).into_owned(), &raw[at..])
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut data = Vec::new();
    loop {
        let line = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("size line");
        let size = usize::from_str_radix(std::str::from_utf8(&body[..line]).expect("ascii"), 16)
            .expect("hex");
        body = &body[line + 2..];
        if size == 0 {
            assert_eq!(body, b"\r\n");
            return data;
        }
        assert!(size <= CHUNK);
        data.extend_from_slice(&body[..size]);
        assert_eq!(&body[size..size + 2], b"\r\n");
        body = &body[size + 2..];
    }
}

#[test]
fn routes_from_paths() {
    let cases = [
        ("/", Route::Hello),
        ("/?x=1", Route::Hello),
        ("/delay/250", Route::Delay(Duration::from_millis(250))),
        ("/bytes/0", Route::Bytes(0)),
        ("/bytes/67108864", Route::Bytes(MAX_BODY)),
        ("/bytes/67108865", Route::BadParam),
        ("/bytes/+5", Route::BadParam),
        ("/bytes/", Route::BadParam),
        ("/status/204", Route::Status(204)),
        ("/status/599", Route::Status(599)),
        ("/status/199", Route::BadParam),
        ("/status/600", Route::BadParam),
        ("/chunked/10000", Route::Chunked(10_000)),
        ("/delay/3600001", Route::BadParam),
        ("/nope", Route::NotFound),
        ("/nope/1", Route::NotFound),
        ("/bytes", Route::NotFound),
        ("/bytes/1/2", Route::BadParam),
    ];
    for (path, route) in cases {
        assert_eq!(Route::from_path(path), route, "{path}");
    }
}

#[test]
fn hello_head_and_body() {
    let mut output = Output::default();
    assert_eq!(
        output.render(Reply::Hello, false, ConnHeader::Close, None),
        200
    );
    let raw = drain(&mut output, usize::MAX);
    let (head, body) = split(&raw);
    assert_eq!(
        head,
        "HTTP/1.1 200 OK\r\nServer: barrage\r\nContent-Type: text/plain\r\n\
         Content-Length: 19\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(body, HELLO);
}

#[test]
fn bytes_bodies_of_every_size_follow_the_pattern() {
    for n in [0, 1, 16_384, 16_385, 65_536, 65_537, 1 << 20, 1_000_003] {
        for step in [usize::MAX, 1000, 65_537] {
            let mut output = Output::default();
            output.render(Reply::Bytes(n as u64), false, ConnHeader::Default, None);
            let raw = drain(&mut output, step);
            let (head, body) = split(&raw);
            assert!(head.contains(&format!("Content-Length: {n}\r\n")), "{head}");
            assert!(
                body == expected_body(n),
                "body of {n} differs (step {step})"
            );
        }
    }
}

#[test]
fn chunked_bodies_decode_to_the_pattern() {
    for n in [
        0,
        1,
        4095,
        4096,
        4097,
        10_000,
        16 * 4096,
        16 * 4096 + 5,
        300_000,
    ] {
        for step in [usize::MAX, 777] {
            let mut output = Output::default();
            output.render(Reply::Chunked(n as u64), false, ConnHeader::Default, None);
            let raw = drain(&mut output, step);
            let (head, body) = split(&raw);
            assert!(head.contains("Transfer-Encoding: chunked\r\n"), "{head}");
            assert!(!head.contains("Content-Length"), "{head}");
            assert!(
                dechunk(body) == expected_body(n),
                "chunked {n} (step {step})"
            );
        }
    }
}

#[test]
fn pipelined_responses_stay_in_order_around_a_stream() {
    let mut output = Output::default();
    output.render(Reply::Status(204), false, ConnHeader::Default, None);
    assert!(output.has_room());
    output.render(Reply::Bytes(100_000), false, ConnHeader::Default, None);
    assert!(
        !output.has_room(),
        "a streaming body blocks further rendering"
    );
    let mut raw = drain(&mut output, 10_000);
    output.render(Reply::Status(500), true, ConnHeader::KeepAlive, None);
    raw.extend(drain(&mut output, 10_000));
    assert_eq!(
        raw.len(),
        44 + 100 + 100_000 + 125,
        "{}",
        String::from_utf8_lossy(&raw)
    );
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 204 No Content\r\nServer: barrage\r\n\r\nHTTP/1.1 200"));
    assert!(text.ends_with(
        "HTTP/1.1 500 Internal Server Error\r\nServer: barrage\r\nContent-Type: \
         text/plain\r\nContent-Length: 26\r\nConnection: keep-alive\r\n\r\n"
    ));
}

#[test]
fn status_bodies_match_their_length() {
    for code in [200, 302, 404, 405, 431, 500, 599] {
        let mut output = Output::default();
        assert_eq!(
            output.render(Reply::Status(code), false, ConnHeader::Default, None),
            code
        );
        let raw = drain(&mut output, usize::MAX);
        let (head, body) = split(&raw);
        assert!(
            head.contains(&format!("Content-Length: {}\r\n", body.len())),
            "{head}"
        );
        assert!(body.starts_with(code.to_string().as_bytes()));
        assert_eq!(head.contains("Allow: "), code == 405);
    }
    let mut output = Output::default();
    output.render(Reply::Status(304), false, ConnHeader::Default, None);
    let raw = drain(&mut output, usize::MAX);
    assert_eq!(raw, b"HTTP/1.1 304 Not Modified\r\nServer: barrage\r\n\r\n");
}
