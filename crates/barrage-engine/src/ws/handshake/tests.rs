use super::*;

const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
/// RFC 6455 §1.3 (the brief quoted it truncated as "s3pPLMBiTxaQ9kYGzzo=").
const ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

#[test]
fn rfc_6455_example_key_and_accept() {
    assert_eq!(accept_for(KEY), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    assert_eq!(new_key(*b"the sample nonce"), KEY);
    assert_eq!(new_key([0; 16]).len(), 24);
}

fn spec<'a>(headers: &'a [(String, String)], subprotocol: Option<&'a str>) -> HandshakeSpec<'a> {
    HandshakeSpec {
        host_header: "server.example.com",
        path: "/chat?room=1",
        headers,
        subprotocol,
    }
}

fn hdrs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn the_upgrade_request_has_every_required_header() {
    let h = hdrs(&[("Origin", "http://example.com"), ("host", "other:81")]);
    let mut out = b">".to_vec();
    handshake_request(&spec(&h, Some("chat, superchat")), KEY, &mut out).unwrap();
    let want = format!(
        ">GET /chat?room=1 HTTP/1.1\r\nHost: other:81\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Protocol: chat, superchat\r\nUser-Agent: {USER_AGENT}\r\n\
         Origin: http://example.com\r\n\r\n"
    );
    assert_eq!(String::from_utf8(out).unwrap(), want);
}

#[test]
fn invalid_or_conflicting_handshake_requests_are_refused() {
    use RequestError as E;
    let cases = [
        (
            hdrs(&[("X-A", "1\r\nX: 2")]),
            None,
            E::Injection(Field::Header, "the value of header X-A".into()),
        ),
        (
            hdrs(&[("sec-websocket-key", "x")]),
            None,
            E::HandshakeHeader("Sec-WebSocket-Key".into()),
        ),
        (
            hdrs(&[("Upgrade", "h2c")]),
            None,
            E::HandshakeHeader("Upgrade".into()),
        ),
        (
            hdrs(&[("Sec-WebSocket-Extensions", "permessage-deflate")]),
            None,
            E::HandshakeHeader("Sec-WebSocket-Extensions".into()),
        ),
        (
            hdrs(&[("Sec-WebSocket-Protocol", "chat")]),
            None,
            E::HandshakeHeader("Sec-WebSocket-Protocol".into()),
        ),
        (vec![], Some("a b"), E::InvalidSubprotocol("a b".into())),
        (vec![], Some(""), E::InvalidSubprotocol("".into())),
    ];
    for (h, sub, want) in cases {
        let mut out = Vec::new();
        assert_eq!(handshake_request(&spec(&h, sub), KEY, &mut out), Err(want));
        assert!(out.is_empty(), "nothing written on error");
    }
    let bad_path = HandshakeSpec {
        path: "chat",
        ..spec(&[], None)
    };
    assert_eq!(
        handshake_request(&bad_path, KEY, &mut Vec::new()),
        Err(E::PathNotAbsolute("chat".into()))
    );
}

fn response(extra: &str) -> String {
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {ACCEPT}\r\n{extra}\r\n"
    )
}

fn decode(sub: Option<&str>, input: &[u8]) -> Result<Handshake, WsError> {
    HandshakeDecoder::new(KEY, sub, Limits::default()).feed(input)
}

#[test]
fn a_valid_101_is_done_at_every_split_and_frames_after_it_are_left() {
    let head = response("");
    let mut input = head.clone().into_bytes();
    input.extend_from_slice(&[0x81, 0x02, b'h', b'i']);
    for split in 0..=input.len() {
        let mut d = HandshakeDecoder::new(KEY, None, Limits::default());
        let first = d.feed(&input[..split]).unwrap();
        let (offset, done) = match first {
            Handshake::Done { consumed } => (0, consumed),
            Handshake::Incomplete => match d.feed(&input[split..]).unwrap() {
                Handshake::Done { consumed } => (split, consumed),
                Handshake::Incomplete => panic!("incomplete at split {split}"),
            },
        };
        assert_eq!(offset + done, head.len(), "split {split}");
    }
    let mut d = HandshakeDecoder::new(KEY, None, Limits::default());
    assert_eq!(
        d.feed(&input),
        Ok(Handshake::Done {
            consumed: head.len()
        })
    );
    assert_eq!(d.feed(b"more"), Ok(Handshake::Done { consumed: 0 }));
}

#[test]
fn header_tokens_are_case_insensitive() {
    let r = format!(
        "HTTP/1.1 101 OK\r\nupgrade: WebSocket\r\nconnection: keep-alive, UPGRADE\r\n\
         sec-websocket-accept:  {ACCEPT} \r\n\r\n"
    );
    assert!(matches!(
        decode(None, r.as_bytes()),
        Ok(Handshake::Done { .. })
    ));
}

#[test]
fn handshake_failures() {
    let wrong_accept = response("").replace(ACCEPT, "AAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    let no_accept = "HTTP/1.1 101 x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
    let no_upgrade = response("").replace("Upgrade: websocket\r\n", "");
    let bad_conn = response("").replace("Connection: Upgrade", "Connection: close");
    let ext = response("Sec-WebSocket-Extensions: permessage-deflate\r\n");
    let cases: [(&str, Option<&str>, WsError); 10] = [
        (
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
            None,
            WsError::HandshakeStatus(200),
        ),
        (
            "HTTP/1.1 403 Forbidden\r\n\r\n",
            None,
            WsError::HandshakeStatus(403),
        ),
        (&wrong_accept, None, WsError::BadAccept),
        (
            no_accept,
            None,
            WsError::HandshakeHeader("Sec-WebSocket-Accept"),
        ),
        (&no_upgrade, None, WsError::HandshakeHeader("Upgrade")),
        (&bad_conn, None, WsError::HandshakeHeader("Connection")),
        (
            &ext,
            None,
            WsError::HandshakeHeader("Sec-WebSocket-Extensions"),
        ),
        (
            "garbage\r\n\r\n",
            None,
            WsError::BadHandshake(HttpError::BadStatusLine),
        ),
        (
            "\x16\x03\x01\x00",
            None,
            WsError::BadHandshake(HttpError::TlsOnPlainPort),
        ),
        (
            "HTTP/1.1 101 x\r\nX: \x01\r\n\r\n",
            None,
            WsError::BadHandshake(HttpError::BadHeader),
        ),
    ];
    for (input, sub, want) in cases {
        assert_eq!(
            decode(sub, input.as_bytes()),
            Err(want.clone()),
            "{input:?}"
        );
    }
    let mut d = HandshakeDecoder::new(KEY, None, Limits::default());
    assert!(d.feed(b"HTTP/1.1 500 x\r\n\r\n").is_err());
    assert_eq!(
        d.feed(response("").as_bytes()),
        Err(WsError::HandshakeStatus(500)),
        "latched"
    );
}

#[test]
fn subprotocol_must_be_one_that_was_offered() {
    let chat = response("Sec-WebSocket-Protocol: chat\r\n");
    assert!(decode(Some("chat"), chat.as_bytes()).is_ok());
    assert!(decode(Some("superchat, chat"), chat.as_bytes()).is_ok());
    for (offered, input) in [
        (Some("chat"), response("")),
        (Some("v2"), chat.clone()),
        (None, chat.clone()),
        (
            Some("chat"),
            response("Sec-WebSocket-Protocol: chat, v2\r\n"),
        ),
    ] {
        assert_eq!(
            decode(offered, input.as_bytes()),
            Err(WsError::Subprotocol),
            "{offered:?} {input:?}"
        );
    }
}

#[test]
fn oversized_handshake_heads_are_refused() {
    let mut big = "HTTP/1.1 101 Switching Protocols\r\n".to_string();
    for i in 0..100 {
        big.push_str(&format!("X-{i}: {}\r\n", "v".repeat(700)));
    }
    let mut d = HandshakeDecoder::new(KEY, None, Limits::default());
    let res = big
        .as_bytes()
        .chunks(1000)
        .map(|c| d.feed(c))
        .find(|r| r.is_err());
    assert_eq!(res, Some(Err(WsError::HeadersTooLarge)));
    let mut many = "HTTP/1.1 101 Switching Protocols\r\n".to_string();
    for i in 0..101 {
        many.push_str(&format!("X-{i}: v\r\n"));
    }
    many.push_str("\r\n");
    assert_eq!(decode(None, many.as_bytes()), Err(WsError::HeadersTooLarge));
}
