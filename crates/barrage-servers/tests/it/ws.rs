//! The WebSocket server through its public API with a std blocking client: the handshake,
//! echoes of every length form, fragmentation, control frames, protocol errors, exact
//! counters and the delay knob.

use crate::common::ws_client::{
    expect_eof, frame, masked, read_close, read_frame, read_head, upgrade, upgrade_with, Frame,
    BINARY, CLOSE, CONTINUATION, PING, PONG, RFC_ACCEPT, TEXT,
};
use crate::common::{connect, pattern, wait_for};
use barrage_servers::ws::{self, WsConfig};
use barrage_servers::{ServerHandle, WsStats};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

fn config(threads: usize) -> WsConfig {
    WsConfig {
        listen: "127.0.0.1:0".parse().expect("valid address"),
        threads,
        ..WsConfig::default()
    }
}

fn start(cfg: WsConfig) -> ServerHandle {
    ws::start(cfg).expect("ws server starts")
}

fn ws_stats(server: &ServerHandle) -> WsStats {
    server.stats().ws.expect("the ws server has ws stats")
}

fn open(server: &ServerHandle) -> TcpStream {
    let mut stream = connect(server.local_addr());
    upgrade(&mut stream);
    stream
}

/// Sends `data` and reads a frame back, writing from a second thread so that messages larger
/// than the socket buffers cannot deadlock the test.
fn round_trip(stream: &mut TcpStream, data: &[u8]) -> Frame {
    let mut writer = stream.try_clone().expect("clone");
    thread::scope(|scope| {
        let sending = scope.spawn(move || writer.write_all(data));
        let frame = read_frame(stream);
        sending.join().expect("writer").expect("send");
        frame
    })
}

/// ASCII text of `len` bytes.
fn text(len: usize) -> Vec<u8> {
    (0..len).map(|i| b'a' + (i % 26) as u8).collect()
}

#[test]
fn handshake_answers_101_with_the_accept_value_and_first_protocol() {
    let server = start(config(1));
    let mut stream = connect(server.local_addr());
    let head = upgrade_with(&mut stream, "Sec-WebSocket-Protocol: chat, superchat\r\n");
    assert!(
        head.starts_with("HTTP/1.1 101 Switching Protocols\r\n"),
        "{head}"
    );
    let lower = head.to_ascii_lowercase();
    assert!(lower.contains("\r\nupgrade: websocket\r\n"), "{head}");
    assert!(lower.contains("\r\nconnection: upgrade\r\n"), "{head}");
    assert!(
        head.contains(&format!("\r\nSec-WebSocket-Accept: {RFC_ACCEPT}\r\n")),
        "{head}"
    );
    assert!(
        head.contains("\r\nSec-WebSocket-Protocol: chat\r\n"),
        "{head}"
    );
    let stats = ws_stats(&server);
    assert_eq!((stats.handshakes, stats.handshakes_rejected), (1, 0));
}

#[test]
fn requests_that_are_not_upgrades_are_refused() {
    let server = start(config(1));
    let mut stream = connect(server.local_addr());
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("send");
    let head = read_head(&mut stream);
    assert!(head.starts_with("HTTP/1.1 426 "), "{head}");
    let mut stream = connect(server.local_addr());
    let head = upgrade_with(&mut stream, "").replace('\n', " ");
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let mut stream = connect(server.local_addr());
    stream
        .write_all(
            b"GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
              Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n",
        )
        .expect("send");
    let head = read_head(&mut stream);
    assert!(head.starts_with("HTTP/1.1 426 "), "{head}");
    assert!(head.contains("Sec-WebSocket-Version: 13\r\n"), "{head}");
    let stats = ws_stats(&server);
    assert_eq!((stats.handshakes, stats.handshakes_rejected), (1, 2));
}

#[test]
fn text_and_binary_echo_in_every_length_form() {
    let server = start(config(2));
    let mut stream = open(&server);
    let sizes = [0, 1, 125, 126, 1000, 65_535, 65_536, 100_000, 1 << 20];
    for &size in &sizes {
        let message = text(size);
        let back = round_trip(&mut stream, &masked(TEXT, &message));
        assert!(
            back.fin && back.opcode == TEXT,
            "text {size}: {}",
            back.opcode
        );
        assert!(back.payload == message, "text echo of {size} differs");
        let data = pattern(size, size as u8);
        let back = round_trip(&mut stream, &masked(BINARY, &data));
        assert!(back.fin && back.opcode == BINARY, "binary {size}");
        assert!(back.payload == data, "binary echo of {size} differs");
    }
    let stats = ws_stats(&server);
    let n = 2 * sizes.len() as u64;
    assert_eq!((stats.messages_in, stats.messages_out), (n, n));
}

#[test]
fn frames_split_across_writes_are_reassembled() {
    let server = start(config(1));
    let mut stream = open(&server);
    let message = text(70_000);
    let raw = masked(TEXT, &message);
    // Byte by byte for the head, then in uneven pieces.
    for piece in raw[..20].chunks(1).chain(raw[20..].chunks(9_999)) {
        stream.write_all(piece).expect("send a piece");
        thread::sleep(Duration::from_micros(200));
    }
    let back = read_frame(&mut stream);
    assert!(back.payload == message);
    // A ping split in two.
    let ping = masked(PING, b"split");
    stream.write_all(&ping[..3]).expect("send");
    thread::sleep(Duration::from_millis(20));
    stream.write_all(&ping[3..]).expect("send");
    assert_eq!(read_frame(&mut stream).payload, b"split");
}

#[test]
fn fragmented_message_is_echoed_once_with_pings_answered_between() {
    let server = start(config(1));
    let mut stream = open(&server);
    let mask = Some([1, 2, 3, 4]);
    let mut raw = frame(false, TEXT, b"Hello, ", mask);
    raw.extend(frame(true, PING, b"mid", mask));
    raw.extend(frame(false, CONTINUATION, "wörld".as_bytes(), mask));
    raw.extend(frame(false, CONTINUATION, &[], mask));
    raw.extend(frame(true, CONTINUATION, &text(200_000), mask));
    let mut writer = stream.try_clone().expect("clone");
    let sending = thread::spawn(move || writer.write_all(&raw));
    let pong = read_frame(&mut stream);
    assert_eq!((pong.opcode, &pong.payload[..]), (PONG, &b"mid"[..]));
    let echo = read_frame(&mut stream);
    sending.join().expect("writer").expect("send");
    assert!(echo.fin && echo.opcode == TEXT);
    let mut want = "Hello, wörld".as_bytes().to_vec();
    want.extend(text(200_000));
    assert!(echo.payload == want, "reassembled message differs");
    let stats = ws_stats(&server);
    assert_eq!(
        (stats.messages_in, stats.messages_out, stats.pings),
        (1, 1, 1)
    );
}

#[test]
fn ping_gets_a_pong_with_the_same_payload() {
    let server = start(config(1));
    let mut stream = open(&server);
    for payload in [&b""[..], b"p", &[7; 125]] {
        let pong = round_trip(&mut stream, &masked(PING, payload));
        assert_eq!(
            (pong.fin, pong.opcode, &pong.payload[..]),
            (true, PONG, payload)
        );
    }
    // An unsolicited pong is ignored: the next answer is the echo.
    stream.write_all(&masked(PONG, b"x")).expect("send");
    assert_eq!(
        round_trip(&mut stream, &masked(TEXT, b"after")).payload,
        b"after"
    );
}

#[test]
fn close_handshake_echoes_the_code_and_closes_the_connection() {
    let server = start(config(1));
    for (payload, code) in [
        (&[0x03, 0xE8, b'b', b'y', b'e'][..], Some(1000)),
        (&[][..], None),
    ] {
        let mut stream = open(&server);
        assert_eq!(round_trip(&mut stream, &masked(TEXT, b"hi")).payload, b"hi");
        stream
            .write_all(&masked(CLOSE, payload))
            .expect("send close");
        assert_eq!(read_close(&mut stream), code);
        expect_eof(&mut stream);
    }
    let stats = wait_for(&server, |s| s.connections_open == 0);
    let ws = stats.ws.expect("ws stats");
    assert_eq!(
        (ws.closes_received, ws.closes_sent, ws.protocol_errors),
        (2, 2, 0)
    );
}

/// Sends `raw` after the handshake and expects a close with `code`, then EOF.
fn expect_close_after(server: &ServerHandle, raw: &[u8], code: u16) {
    let mut stream = open(server);
    stream.write_all(raw).expect("send");
    assert_eq!(
        read_close(&mut stream),
        Some(code),
        "after {:?}",
        &raw[..raw.len().min(16)]
    );
    expect_eof(&mut stream);
}

#[test]
fn unmasked_client_frame_is_closed_with_1002() {
    let server = start(config(1));
    expect_close_after(&server, &frame(true, TEXT, b"no mask", None), 1002);
    // Other protocol errors get the same answer.
    expect_close_after(&server, &masked(CONTINUATION, b"orphan"), 1002);
    let mut two_starts = frame(false, TEXT, b"a", Some([0; 4]));
    two_starts.extend(masked(TEXT, b"b"));
    expect_close_after(&server, &two_starts, 1002);
    expect_close_after(&server, &masked(CLOSE, &[0x03, 0xED]), 1002); // 1005 is not for the wire
    let stats = wait_for(&server, |s| s.connections_open == 0);
    let ws = stats.ws.expect("ws stats");
    assert_eq!(
        (ws.protocol_errors, ws.closes_sent, ws.messages_out),
        (4, 4, 0)
    );
}

#[test]
fn invalid_utf8_text_is_closed_with_1007() {
    let server = start(config(1));
    expect_close_after(&server, &masked(TEXT, &[b'o', b'k', 0xC3]), 1007);
    // Split inside a character is fine; the whole message is what counts.
    let mut stream = open(&server);
    let mut raw = frame(false, TEXT, &[0xC3], Some([5; 4]));
    raw.extend(frame(true, CONTINUATION, &[0xB6], Some([6; 4])));
    stream.write_all(&raw).expect("send");
    assert_eq!(read_frame(&mut stream).payload, "ö".as_bytes());
    // Binary messages are not text.
    assert_eq!(
        round_trip(&mut stream, &masked(BINARY, &[0xFF])).payload,
        [0xFF]
    );
    let mut close = vec![0x03, 0xE8];
    close.push(0xFF);
    expect_close_after(&server, &masked(CLOSE, &close), 1007);
}

#[test]
fn oversized_message_is_closed_with_1009() {
    let server = start(config(1));
    // The head alone announces too much: no need to send the payload.
    let mut head = vec![0x82, 0x80 | 127];
    head.extend_from_slice(&(ws::MAX_MESSAGE + 1).to_be_bytes());
    head.extend_from_slice(&[0; 4]);
    expect_close_after(&server, &head, 1009);
}

#[test]
fn counters_reconcile_exactly() {
    const CLIENTS: usize = 6;
    const MESSAGES: usize = 40;
    let server = start(config(3));
    let addr = server.local_addr();
    let (sent, received): (u64, u64) = thread::scope(|scope| {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                scope.spawn(move || {
                    let mut stream = connect(addr);
                    let mut sent = 0u64;
                    let mut received = 0u64;
                    let request = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\
                                   Connection: Upgrade\r\nSec-WebSocket-Key: \
                                   dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
                    stream.write_all(request.as_bytes()).expect("send");
                    sent += request.len() as u64;
                    received += read_head(&mut stream).len() as u64;
                    for m in 0..MESSAGES {
                        let size = (c * 7919 + m * 104_729) % 70_000;
                        let raw = masked(if m % 2 == 0 { TEXT } else { BINARY }, &text(size));
                        let back = round_trip(&mut stream, &raw);
                        assert_eq!(back.payload.len(), size);
                        sent += raw.len() as u64;
                        received += (back.payload.len() + head_len(size)) as u64;
                    }
                    let close = masked(CLOSE, &1000u16.to_be_bytes());
                    stream.write_all(&close).expect("close");
                    sent += close.len() as u64;
                    assert_eq!(read_close(&mut stream), Some(1000));
                    received += 4;
                    let mut rest = Vec::new();
                    stream.read_to_end(&mut rest).expect("EOF");
                    (sent, received)
                })
            })
            .collect();
        clients
            .into_iter()
            .map(|client| client.join().expect("client"))
            .fold((0, 0), |(s, r), (cs, cr)| (s + cs, r + cr))
    });
    let stats = wait_for(&server, |s| s.connections_open == 0);
    let ws = stats.ws.expect("ws stats");
    let n = (CLIENTS * MESSAGES) as u64;
    assert_eq!((ws.messages_in, ws.messages_out), (n, n));
    assert_eq!(ws.handshakes, CLIENTS as u64);
    assert_eq!(
        (ws.closes_received, ws.closes_sent),
        (CLIENTS as u64, CLIENTS as u64)
    );
    assert_eq!(stats.connections_accepted, CLIENTS as u64);
    assert_eq!(stats.bytes_read, sent);
    assert_eq!(stats.bytes_written, received);
}

/// Bytes of an unmasked server frame head for `len` payload bytes.
fn head_len(len: usize) -> usize {
    match len {
        0..=125 => 2,
        126..=65_535 => 4,
        _ => 10,
    }
}

#[test]
fn delay_knob_holds_every_echo() {
    let delay = Duration::from_millis(80);
    let server = start(WsConfig {
        delay: Some(delay),
        ..config(1)
    });
    let mut stream = open(&server);
    for size in [5, 100_000] {
        let sent = Instant::now();
        let back = round_trip(&mut stream, &masked(BINARY, &pattern(size, 1)));
        let rtt = sent.elapsed();
        assert_eq!(back.payload.len(), size);
        assert!(rtt >= delay, "echo after {rtt:?}");
        assert!(
            rtt < delay + Duration::from_millis(400),
            "echo after {rtt:?}"
        );
    }
    // The close waits its turn behind a held echo.
    let mut raw = masked(TEXT, b"last");
    raw.extend(masked(CLOSE, &1001u16.to_be_bytes()));
    stream.write_all(&raw).expect("send");
    assert_eq!(read_frame(&mut stream).payload, b"last");
    assert_eq!(read_close(&mut stream), Some(1001));
    expect_eof(&mut stream);
}
