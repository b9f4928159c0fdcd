//! Tests of the HTTP/2 session: handshake, streams and windows, GOAWAY and resets, malformed
//! frames and responses, and gRPC calls.

use super::*;
use crate::h2::frame::{flag, kind, put_head};
use crate::h2::frame::{put_goaway, put_ping, put_rst, put_settings, put_window_update};
use crate::h2::hpack::put_str;
use crate::h2::{H2Request, H2RequestSpec};
use crate::pacer::Rng;
use crate::plan::{GrpcMode, StatusSet};
use crate::session::tests::Conn;

fn cfg(streams: u32) -> Cfg {
    cfg_grpc(streams, None)
}

fn cfg_grpc(streams: u32, grpc: Option<GrpcMode>) -> Cfg {
    let grpc_request = |r: H2Request| match grpc {
        Some(_) => r.with_grpc_messages(
            vec![crate::grpc::PbTemplate::new(vec![
                crate::grpc::Part::Text {
                    tag: crate::grpc::len_tag(1),
                    value: crate::message::Template::new(b"n{seq}".to_vec()),
                },
            ])],
            false,
        ),
        None => r,
    };
    Cfg {
        request: H2Request::new(&H2RequestSpec {
            method: if grpc.is_some() { "POST" } else { "GET" },
            scheme: "http",
            path: "/",
            authority: "127.0.0.1",
            headers: &[],
            body: None,
            content_type: grpc.map(|_| "application/grpc"),
            te_trailers: grpc.is_some(),
        })
        .map(grpc_request)
        .unwrap(),
        expect: StatusSet::default(),
        streams,
        grpc,
        settings: crate::h2::H2Settings::default(),
    }
}

fn server_settings(max_streams: u32) -> Vec<u8> {
    let mut b = Vec::new();
    put_settings(
        &mut b,
        &[(frame::setting::MAX_CONCURRENT_STREAMS, max_streams)],
    );
    b
}

/// A session past its handshake with `n` requests rendered (keys 1, 3, ...), and the
/// connection state that holds their exchanges.
fn ready(cfg: &Cfg, n: usize, max_streams: u32) -> (H2, Conn) {
    let mut s = H2::new(cfg);
    let mut rng = Rng::new(1);
    let mut buf = Vec::new();
    let mut out = Out {
        conn: 0,
        buf: &mut buf,
        key: 0,
        rng: &mut rng,
        keep: None,
        streaming: false,
    };
    assert!(s.open(cfg, &mut out).unwrap());
    assert!(buf.starts_with(frame::PREFACE));
    let mut c = Conn::new(&[(1_000, n, 0)]);
    // The server's SETTINGS and then more: the handshake takes the SETTINGS alone.
    let mut input = server_settings(max_streams);
    let settings_len = input.len();
    input.extend_from_slice(&[0; 3]);
    let (_, useful, _) = c.input(|r| {
        s.input(cfg, &input, r).unwrap();
        assert_eq!(r.handshake, Some(settings_len));
        // The SETTINGS acknowledged.
        assert_eq!(r.ctl[..], [0, 0, 0, kind::SETTINGS, flag::ACK, 0, 0, 0, 0]);
        r.ctl.clear();
    });
    assert!(!useful, "a handshake alone does not end the backoff");
    assert_eq!(s.room(), u64::from(max_streams.min(cfg.streams)));
    for k in 0..n {
        let mut buf = Vec::new();
        let mut out = Out {
            conn: 0,
            buf: &mut buf,
            key: 1 + 2 * k as u64,
            rng: &mut rng,
            keep: None,
            streaming: false,
        };
        s.render(
            cfg,
            Msg::Load,
            Fill {
                conn: 0,
                seq: k as u64,
                ts_us: 0,
            },
            &mut out,
        );
        assert_eq!(buf[3], kind::HEADERS);
        assert_eq!(
            u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]),
            1 + 2 * k as u32
        );
    }
    (s, c)
}

fn headers(out: &mut Vec<u8>, stream: u32, flags: u8, block: &[u8]) {
    put_head(
        out,
        block.len(),
        kind::HEADERS,
        flags | flag::END_HEADERS,
        stream,
    );
    out.extend_from_slice(block);
}

/// A gRPC reply on `stream`: its head, `msgs` messages of `len` bytes in DATA frames of
/// at most 7 bytes, then trailers with `status` (none: no trailers' status).
fn grpc_reply(stream: u32, msgs: usize, len: usize, status: Option<&str>) -> Vec<u8> {
    let mut input = Vec::new();
    let mut head = vec![0x88]; // :status 200
    head.push(0x00);
    put_str(&mut head, b"content-type");
    put_str(&mut head, b"application/grpc");
    headers(&mut input, stream, 0, &head);
    let mut body = Vec::new();
    for _ in 0..msgs {
        crate::grpc::put_prefix(&mut body, len);
        body.extend(std::iter::repeat_n(b'm', len));
    }
    for c in body.chunks(7) {
        put_head(&mut input, c.len(), kind::DATA, 0, stream);
        input.extend_from_slice(c);
    }
    let mut trailers = vec![0x00];
    put_str(&mut trailers, b"grpc-status");
    put_str(&mut trailers, status.unwrap_or("").as_bytes());
    if status.is_none() {
        trailers.clear();
        trailers.push(0x00);
        put_str(&mut trailers, b"grpc-message");
        put_str(&mut trailers, b"none");
    }
    headers(&mut input, stream, flag::END_STREAM, &trailers);
    input
}

fn run_grpc(cfg: &Cfg, n: usize, input: &[u8]) -> barrage_metrics::Delta {
    let (mut s, mut c) = ready(cfg, n, 100);
    for split in [input.len() / 3, input.len()] {
        let at = input.len() / 3;
        let part = if split == at {
            &input[..at]
        } else {
            &input[at..]
        };
        c.input(|r| s.input(cfg, part, r).unwrap());
    }
    assert_eq!(c.rec.in_flight, 0);
    c.rec.take(0, 0, 0, 1)
}

#[test]
fn a_grpc_call_is_sent_as_a_prefixed_message_with_te_trailers() {
    let cfg = cfg_grpc(
        4,
        Some(GrpcMode {
            streaming: false,
            gzip: false,
        }),
    );
    let mut s = H2::new(&cfg);
    let (mut rng, mut buf) = (Rng::new(1), Vec::new());
    let mut out = Out {
        conn: 0,
        buf: &mut buf,
        key: 1,
        rng: &mut rng,
        keep: None,
        streaming: false,
    };
    let fill = Fill {
        conn: 0,
        seq: 42,
        ts_us: 0,
    };
    s.render(&cfg, Msg::Load, fill, &mut out);
    let hlen = u32::from_be_bytes([0, buf[0], buf[1], buf[2]]) as usize;
    let block = &buf[frame::HEAD..frame::HEAD + hlen];
    let mut d = Decoder::new(4096);
    let mut fields = Vec::new();
    d.decode(block, 1 << 16, |n, v| {
        fields.push((n.to_vec(), v.to_vec()));
    })
    .unwrap();
    let has = |n: &[u8], v: &[u8]| fields.iter().any(|(a, b)| a == n && b == v);
    assert!(has(b":method", b"POST") && has(b"te", b"trailers"));
    assert!(has(b"content-type", b"application/grpc"));
    let data = &buf[frame::HEAD + hlen..];
    assert_eq!(data[3], kind::DATA);
    assert_eq!(data[4], flag::END_STREAM);
    // The message: field 1 = "n42", after its prefix.
    assert_eq!(
        &data[frame::HEAD..],
        &[0, 0, 0, 0, 5, 0x0a, 3, b'n', b'4', b'2']
    );
}

#[test]
fn grpc_calls_are_judged_by_their_status_and_messages() {
    let unary = cfg_grpc(
        10,
        Some(GrpcMode {
            streaming: false,
            gzip: false,
        }),
    );
    // OK, one message split over frames.
    let d = run_grpc(&unary, 1, &grpc_reply(1, 1, 20, Some("0")));
    assert_eq!(d.counters.completed, 1);
    assert_eq!(d.counters.grpc.status.get(0), 1);
    assert_eq!(d.counters.grpc.messages_received, 1);
    // UNAVAILABLE in a trailers-only reply, and RESOURCE_EXHAUSTED after a message.
    let mut input = Vec::new();
    let mut only = vec![0x88];
    only.extend(lit_field(b"content-type", b"application/grpc"));
    only.push(0x00);
    put_str(&mut only, b"grpc-status");
    put_str(&mut only, b"14");
    headers(&mut input, 1, flag::END_STREAM, &only);
    input.extend(grpc_reply(3, 1, 3, Some("8")));
    let d = run_grpc(&unary, 2, &input);
    let f = &d.counters.failed_by;
    assert_eq!(f.get(ErrorClass::GrpcUnavailable), 1);
    assert_eq!(f.get(ErrorClass::GrpcResourceExhausted), 1);
    assert_eq!(d.counters.completed, 0);
    assert_eq!(
        (
            d.counters.grpc.status.get(14),
            d.counters.grpc.status.get(8)
        ),
        (1, 1)
    );
    // No grpc-status; and an OK unary call with two messages: protocol errors.
    let mut input = grpc_reply(1, 1, 3, None);
    input.extend(grpc_reply(3, 2, 3, Some("0")));
    let d = run_grpc(&unary, 2, &input);
    assert_eq!(d.counters.failed_by.get(ErrorClass::Protocol), 2);
    assert_eq!(d.counters.grpc.no_status, 1);
    // Streaming: every message timed, the call completes.
    let streaming = cfg_grpc(
        10,
        Some(GrpcMode {
            streaming: true,
            gzip: false,
        }),
    );
    let d = run_grpc(&streaming, 1, &grpc_reply(1, 5, 10, Some("0")));
    assert_eq!(d.counters.completed, 1);
    assert_eq!(d.counters.grpc.messages_received, 5);
    assert_eq!(d.stream_msg.stats().map(|s| s.count), Some(5));
}

/// A plain HTTP/2 run ignores `grpc-status` (a gateway may send one), even one that is
/// not a number; a gRPC run fails the connection on that.
#[test]
fn grpc_status_is_read_only_in_grpc_mode() {
    let mut input = Vec::new();
    let mut block = vec![0x88];
    block.extend(lit_field(b"grpc-status", b"OK"));
    headers(&mut input, 1, flag::END_STREAM, &block);
    let plain = cfg(4);
    let (mut s, mut c) = ready(&plain, 1, 100);
    c.input(|r| s.input(&plain, &input, r).unwrap());
    assert_eq!(c.rec.take(0, 0, 0, 1).counters.completed, 1);
    let grpc = cfg_grpc(
        4,
        Some(GrpcMode {
            streaming: false,
            gzip: false,
        }),
    );
    let (mut s, mut c) = ready(&grpc, 1, 100);
    c.input(|r| assert!(s.input(&grpc, &input, r).is_err()));
}

fn lit_field(name: &[u8], value: &[u8]) -> Vec<u8> {
    let mut b = vec![0x00];
    put_str(&mut b, name);
    put_str(&mut b, value);
    b
}

/// Two responses, interleaved and cut at every point: a 200 with a body in two DATA
/// frames, and a 404 in one HEADERS frame with Server-Timing (indexed by the server, then
/// used by index), a PING and a WINDOW_UPDATE between them.
#[test]
fn interleaved_responses_complete_their_own_exchanges_at_every_split() {
    let cfg = cfg(10);
    let mut input = Vec::new();
    headers(&mut input, 1, 0, &[0x88]); // :status 200
    put_head(&mut input, 3, kind::DATA, 0, 1);
    input.extend_from_slice(b"hel");
    let mut b404 = vec![0x8d, 0x40]; // :status 404, a literal with indexing
    put_str(&mut b404, b"server-timing");
    put_str(&mut b404, b"app;dur=3");
    headers(&mut input, 3, flag::END_STREAM, &b404);
    put_ping(&mut input, false, b"pingpong");
    put_window_update(&mut input, 0, 1000);
    put_head(&mut input, 2, kind::DATA, flag::END_STREAM, 1);
    input.extend_from_slice(b"lo");
    for split in 0..=input.len() {
        let (mut s, mut c) = ready(&cfg, 2, 100);
        let mut ctl = Vec::new();
        for part in [&input[..split], &input[split..]] {
            c.input(|r| {
                s.input(&cfg, part, r).unwrap();
                ctl.extend_from_slice(r.ctl);
                r.ctl.clear();
            });
        }
        let d = c.rec.take(0, 0, 0, 1);
        assert_eq!(d.counters.completed, 1, "split {split}");
        assert_eq!(d.counters.failed_by.get(ErrorClass::UnexpectedStatus), 1);
        assert_eq!(
            (d.counters.status.get(200), d.counters.status.get(404)),
            (1, 1)
        );
        assert_eq!(c.rec.in_flight, 0);
        assert!(s.st.streams.is_empty());
        // The PING is answered.
        assert!(ctl.windows(8).any(|w| w == b"pingpong"), "split {split}");
        // Six, and the handshake's SETTINGS.
        assert_eq!(d.counters.h2.frames_read, 7);
    }
    // The server's table entry is used by index on a later response.
    let (mut s, mut c) = ready(&cfg, 2, 100);
    let mut first = Vec::new();
    headers(&mut first, 1, flag::END_STREAM, &b404);
    let mut again = Vec::new();
    headers(&mut again, 3, flag::END_STREAM, &[0x88, 0xbe]);
    c.input(|r| s.input(&cfg, &first, r).unwrap());
    c.input(|r| s.input(&cfg, &again, r).unwrap());
    let d = c.rec.take(0, 0, 0, 1);
    assert_eq!(
        d.server.get().map(|h| h.count()),
        Some(1),
        "the 200's server time"
    );
}

/// GOAWAY: the streams above its last id fail as `goaway` at once; those below finish,
/// then the connection ends gracefully.
#[test]
fn goaway_fails_the_unprocessed_streams_and_lets_the_rest_finish() {
    let cfg = cfg(10);
    let (mut s, mut c) = ready(&cfg, 3, 100);
    let mut input = Vec::new();
    put_goaway(&mut input, 3, code::NO_ERROR);
    c.input(|r| {
        s.input(&cfg, &input, r).unwrap();
        assert!(r.close.is_none());
    });
    assert_eq!(s.room(), 0, "no new stream after GOAWAY");
    let mut input = Vec::new();
    headers(&mut input, 1, flag::END_STREAM, &[0x88]);
    headers(&mut input, 3, flag::END_STREAM, &[0x88]);
    c.input(|r| {
        s.input(&cfg, &input, r).unwrap();
        assert_eq!(r.close, Some(Close::Graceful));
    });
    let d = c.rec.take(0, 0, 0, 1);
    assert_eq!(d.counters.completed, 2);
    assert_eq!(d.counters.failed_by.get(ErrorClass::Goaway), 1);
    assert_eq!(d.counters.h2.goaways.get(0), 1);
}

/// REFUSED_STREAM: the request goes out again once, on a new stream, as the same
/// exchange; a second refusal fails it as `stream_reset`, as any other code does.
#[test]
fn a_refused_stream_is_sent_again_once() {
    let cfg = cfg(10);
    let (mut s, mut c) = ready(&cfg, 2, 100);
    let mut input = Vec::new();
    put_rst(&mut input, 1, code::REFUSED_STREAM);
    put_rst(&mut input, 3, code::INTERNAL_ERROR);
    c.input(|r| {
        s.input(&cfg, &input, r).unwrap();
        // The request again, as stream 5.
        assert_eq!(r.ctl[3], kind::HEADERS);
        assert_eq!(r.ctl[8], 5);
        r.ctl.clear();
    });
    let mut input = Vec::new();
    put_rst(&mut input, 5, code::REFUSED_STREAM);
    c.input(|r| s.input(&cfg, &input, r).unwrap());
    let d = c.rec.take(0, 0, 0, 1);
    assert_eq!(d.counters.failed_by.get(ErrorClass::StreamReset), 2);
    assert_eq!(d.counters.h2.refused_retried, 1);
    assert_eq!(d.counters.h2.resets.get(7), 2);
    assert_eq!(d.counters.h2.resets.get(2), 1);
    assert_eq!(c.rec.in_flight, 0);
}

/// Stream ids run out after about a billion requests: no new stream, and once the last
/// one ends the connection closes gracefully (and is opened again).
#[test]
fn a_connection_whose_stream_ids_ran_out_starts_over() {
    let cfg = cfg(10);
    let (mut s, mut c) = ready(&cfg, 1, 100);
    s.st.next_id = LAST_ID + 2;
    assert_eq!(s.room(), 0);
    let mut input = Vec::new();
    headers(&mut input, 1, flag::END_STREAM, &[0x88]);
    c.input(|r| {
        s.input(&cfg, &input, r).unwrap();
        assert_eq!(r.close, Some(Close::Graceful));
    });
}

/// The server's SETTINGS_MAX_CONCURRENT_STREAMS caps the streams in flight.
#[test]
fn room_is_the_servers_stream_limit_less_what_is_in_flight() {
    let cfg = cfg(10);
    let (s, _) = ready(&cfg, 2, 3);
    assert_eq!(s.room(), 1);
    let (s, _) = ready(&cfg, 0, 1000);
    assert_eq!(s.room(), 10, "--streams caps it too");
}

/// What breaks the protocol is a protocol error naming the frame, never a panic.
#[test]
fn malformed_frames_are_named_protocol_errors() {
    let cfg = cfg(10);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        ({ let mut b = Vec::new(); put_head(&mut b, 3, kind::PING, 0, 0); b.extend([0; 3]); b }, "PING frame: length 3 instead of 8"),
        ({ let mut b = Vec::new(); headers(&mut b, 1, 0, &[0x80]); b }, "HEADERS frame on stream 1: HPACK: index 0"),
        ({ let mut b = Vec::new(); headers(&mut b, 2, 0, &[0x88]); b }, "HEADERS frame on stream 2: a stream this client did not open"),
        ({ let mut b = Vec::new(); put_head(&mut b, 2, kind::DATA, 0, 1); b.extend([0; 2]); b }, "DATA frame on stream 1: DATA before the response's HEADERS"),
        ({ let mut b = Vec::new(); put_head(&mut b, 1, kind::HEADERS, 0, 1); b.push(0x88); put_head(&mut b, 0, kind::DATA, 0, 1); b }, "DATA frame on stream 1: expected CONTINUATION of stream 1's headers"),
        ({ let mut b = Vec::new(); headers(&mut b, 1, 0, &[0x40, 1, b'x', 1, b'y']); b }, "HEADERS frame on stream 1: a response without :status"),
        ({ let mut b = Vec::new(); put_head(&mut b, 4, kind::PUSH_PROMISE, flag::END_HEADERS, 1); b.extend([0, 0, 0, 2]); b }, "PUSH_PROMISE frame on stream 1: server push, which this client disabled (SETTINGS_ENABLE_PUSH 0)"),
        ({ let mut b = Vec::new(); put_window_update(&mut b, 0, 0); b }, "WINDOW_UPDATE frame: an increment of 0"),
        ({ let mut b = Vec::new(); put_window_update(&mut b, 0, i32::MAX as u32); b }, "WINDOW_UPDATE frame: the connection's send window past 2^31-1"),
    ];
    for (input, want) in cases {
        let (mut s, mut c) = ready(&cfg, 1, 100);
        let mut got = None;
        c.input(|r| got = s.input(&cfg, &input, r).err());
        assert_eq!(got.map(|e| e.why).as_deref(), Some(want));
    }
    // Not an HTTP/2 server at all.
    let mut s = H2::new(&cfg);
    let mut c = Conn::new(&[]);
    let mut got = None;
    c.input(|r| got = s.input(&cfg, b"HTTP/1.1 400 Bad Request\r\n\r\n", r).err());
    assert!(got.unwrap().why.contains("does not speak HTTP/2"));
}

/// A body larger than the server's windows goes out as the windows open.
#[test]
fn a_body_waits_for_window_and_goes_on_after_window_update() {
    let body = vec![b'x'; 100_000];
    let cfg = Cfg {
        request: H2Request::new(&H2RequestSpec {
            method: "POST",
            scheme: "http",
            path: "/",
            authority: "h",
            headers: &[],
            body: Some(&body),
            content_type: None,
            te_trailers: false,
        })
        .unwrap(),
        expect: StatusSet::default(),
        streams: 1,
        grpc: None,
        settings: crate::h2::H2Settings::default(),
    };
    let (mut s, mut c) = ready(&cfg, 0, 100);
    let mut rng = Rng::new(1);
    let mut buf = Vec::new();
    let mut out = Out {
        conn: 0,
        buf: &mut buf,
        key: 1,
        rng: &mut rng,
        keep: None,
        streaming: false,
    };
    s.render(
        &cfg,
        Msg::Load,
        Fill {
            conn: 0,
            seq: 0,
            ts_us: 0,
        },
        &mut out,
    );
    let data = |b: &[u8]| -> usize {
        // Sum of DATA payloads in `b`.
        let (mut at, mut n) = (0, 0);
        while at + 9 <= b.len() {
            let len = u32::from_be_bytes([0, b[at], b[at + 1], b[at + 2]]) as usize;
            if b[at + 3] == kind::DATA {
                n += len;
            }
            at += 9 + len;
        }
        n
    };
    assert_eq!(data(&buf), 65_535, "the default windows");
    let mut input = Vec::new();
    put_window_update(&mut input, 0, 50_000);
    put_window_update(&mut input, 1, 50_000);
    let mut more = Vec::new();
    c.input(|r| {
        s.input(&cfg, &input, r).unwrap();
        more.extend_from_slice(r.ctl);
    });
    assert_eq!(data(&more), 100_000 - 65_535);
    assert!(s.st.pending.is_empty());
}

fn post_cfg(body: &[u8]) -> Cfg {
    Cfg {
        request: H2Request::new(&H2RequestSpec {
            method: "POST",
            scheme: "http",
            path: "/",
            authority: "h",
            headers: &[],
            body: Some(body),
            content_type: None,
            te_trailers: false,
        })
        .unwrap(),
        expect: StatusSet::default(),
        streams: 4,
        grpc: None,
        settings: crate::h2::H2Settings::default(),
    }
}

/// Issue 42: DATA that a WINDOW_UPDATE lets out waits with the control answers while the
/// socket is full, but it is what the server asked for: it does not count against the
/// cap on answers owed (1 MiB), which once failed 2 MiB uploads as `protocol` blaming the
/// server. Answers alone past the cap still fail the connection, saying what waits.
#[test]
fn body_bytes_released_by_window_update_do_not_count_as_owed_answers() {
    let body = vec![b'u'; 2 << 20];
    let cfg = post_cfg(&body);
    let (mut s, mut c) = ready(&cfg, 0, 100);
    let (mut rng, mut buf) = (Rng::new(1), Vec::new());
    let mut out = Out {
        conn: 0,
        buf: &mut buf,
        key: 1,
        rng: &mut rng,
        keep: None,
        streaming: false,
    };
    let fill = Fill {
        conn: 0,
        seq: 0,
        ts_us: 0,
    };
    s.render(&cfg, Msg::Load, fill, &mut out);
    let mut input = Vec::new();
    put_window_update(&mut input, 0, 4 << 20);
    put_window_update(&mut input, 1, 4 << 20);
    put_ping(&mut input, false, b"pingpong");
    c.input(|r| {
        s.input(&cfg, &input, r).unwrap();
        assert!(r.ctl.len() > (2 << 20) - 65_535, "the rest of the body");
        // The socket is full: all of it waits (as the worker does).
        s.owe(r.ctl);
        r.ctl.clear();
    });
    assert!(s.st.owed.len() > MAX_OWED);
    let mut ping = Vec::new();
    put_ping(&mut ping, false, b"pingpong");
    c.input(|r| s.input(&cfg, &ping, r).expect("DATA owed is not a flood"));
    // Drained: nothing owed. Then answers alone past the cap.
    let mut all = Vec::new();
    s.drain(&mut all);
    assert!(all.len() > MAX_OWED);
    s.owe(&vec![0; MAX_OWED + 1]);
    let mut got = None;
    c.input(|r| got = s.input(&cfg, &ping, r).err());
    let why = got.expect("a flood of answers").why;
    assert!(
        why.contains("does not read what this client owes it"),
        "{why}"
    );
}

/// RFC 9113 5.1: DATA or HEADERS on a stream that ended by END_STREAM is a connection
/// error (STREAM_CLOSED); on a stream this side reset (it timed out) it is late, dropped.
#[test]
fn frames_on_closed_streams_are_refused_unless_this_side_reset_them() {
    let cfg = cfg(10);
    let (mut s, mut c) = ready(&cfg, 2, 100);
    let mut done = Vec::new();
    headers(&mut done, 1, flag::END_STREAM, &[0x88]);
    c.input(|r| s.input(&cfg, &done, r).unwrap());
    // Stream 3 given up on (timed out): RST_STREAM CANCEL.
    let mut ctl = Vec::new();
    assert!(!s.cancel(3, &mut ctl));
    assert_eq!(ctl[3], kind::RST_STREAM);
    let mut late = Vec::new();
    headers(&mut late, 3, 0, &[0x88]);
    put_head(&mut late, 2, kind::DATA, flag::END_STREAM, 3);
    late.extend_from_slice(b"ok");
    c.input(|r| s.input(&cfg, &late, r).expect("late frames are dropped"));
    for kind_ in [kind::DATA, kind::HEADERS] {
        let mut again = Vec::new();
        if kind_ == kind::DATA {
            put_head(&mut again, 2, kind::DATA, 0, 1);
            again.extend_from_slice(b"no");
        } else {
            headers(&mut again, 1, flag::END_STREAM, &[0x88]);
        }
        let mut got = None;
        c.input(|r| got = s.input(&cfg, &again, r).err());
        let why = got.expect("STREAM_CLOSED").why;
        assert!(
            why.contains("already closed by END_STREAM (STREAM_CLOSED)"),
            "{why}"
        );
    }
    let d = c.rec.take(0, 0, 0, 1);
    assert_eq!(d.counters.completed, 1);
}

/// Malformed responses (RFC 9113 8.1.1, 8.2) fail their own exchange as `protocol`: the
/// stream is reset with PROTOCOL_ERROR, the connection carries on. A body shorter or
/// longer than its content-length too (HTTP/1.1 says `protocol` for it as well).
#[test]
fn malformed_responses_fail_their_stream_as_protocol() {
    let cfg = cfg(10);
    let cl = |n: &str| {
        let mut b = vec![0x88];
        b.extend(lit_field(b"content-length", n.as_bytes()));
        b
    };
    let cases: Vec<(Vec<u8>, &str, bool)> = vec![
        (
            {
                let mut b = Vec::new();
                headers(
                    &mut b,
                    1,
                    flag::END_STREAM,
                    &[&[0x88][..], &lit_field(b"Server", b"x")].concat(),
                );
                b
            },
            "an upper-case header name (Server)",
            true,
        ),
        (
            {
                let mut b = Vec::new();
                headers(
                    &mut b,
                    1,
                    flag::END_STREAM,
                    &[&[0x88][..], &lit_field(b"connection", b"close")].concat(),
                );
                b
            },
            "a connection-specific header field (connection)",
            true,
        ),
        (
            {
                let mut b = Vec::new();
                headers(
                    &mut b,
                    1,
                    flag::END_STREAM,
                    &[&[0x88][..], &lit_field(b":path", b"/")].concat(),
                );
                b
            },
            "a pseudo-header a response has none of (:path)",
            true,
        ),
        (
            {
                let mut b = Vec::new();
                headers(
                    &mut b,
                    1,
                    flag::END_STREAM,
                    &[&lit_field(b"x", b"y")[..], &[0x88]].concat(),
                );
                b
            },
            ":status after a regular field",
            true,
        ),
        (
            {
                let mut b = Vec::new();
                headers(&mut b, 1, 0, &[0x88]);
                headers(&mut b, 1, flag::END_STREAM, &[0x88]);
                b
            },
            "a pseudo-header in trailers",
            true,
        ),
        (
            {
                let mut b = Vec::new();
                headers(&mut b, 1, 0, &cl("10"));
                put_head(&mut b, 3, kind::DATA, flag::END_STREAM, 1);
                b.extend_from_slice(b"abc");
                b
            },
            "a body of 3 bytes where content-length said 10",
            false,
        ),
        (
            {
                let mut b = Vec::new();
                headers(&mut b, 1, 0, &cl("2"));
                put_head(&mut b, 3, kind::DATA, flag::END_STREAM, 1);
                b.extend_from_slice(b"abc");
                b
            },
            "a body longer than its content-length (2)",
            true,
        ),
    ];
    for (input, want, reset) in cases {
        let (mut s, mut c) = ready(&cfg, 2, 100);
        let mut ctl = Vec::new();
        c.input(|r| {
            s.input(&cfg, &input, r).unwrap();
            ctl.extend_from_slice(r.ctl);
        });
        // The connection goes on: stream 3 completes.
        let mut ok = Vec::new();
        headers(&mut ok, 3, flag::END_STREAM, &cl("0"));
        c.input(|r| s.input(&cfg, &ok, r).unwrap());
        let d = c.rec.take(0, 0, 0, 1);
        assert_eq!(d.counters.failed_by.get(ErrorClass::Protocol), 1, "{want}");
        assert_eq!(d.counters.completed, 1, "{want}");
        let reason = d
            .counters
            .reasons
            .of(ErrorClass::Protocol)
            .next()
            .map(|r| r.reason.clone());
        assert!(
            reason.as_deref().is_some_and(|r| r.ends_with(want)),
            "{want}: {reason:?}"
        );
        let rst = ctl.windows(4).any(|w| w == [kind::RST_STREAM, 0, 0, 0]);
        assert_eq!(
            rst && ctl.ends_with(&code::PROTOCOL_ERROR.to_be_bytes()),
            reset,
            "{want}"
        );
    }
}

/// The fuzz target's harness: uploads go out as the server's windows open, whole or cut
/// anywhere, the same bytes; kept as owed (a full socket) they are no flood.
#[test]
fn the_fuzz_harness_sends_upload_bodies_as_windows_open() {
    let mut input = Vec::new();
    put_window_update(&mut input, 0, 200_000);
    put_window_update(&mut input, 1, 20_000);
    put_settings(
        &mut input,
        &[(frame::setting::INITIAL_WINDOW_SIZE, 100_000)],
    );
    headers(&mut input, 1, flag::END_STREAM, &[0x88]);
    for owe in [false, true] {
        let case = FuzzCase {
            n: 2,
            grpc: None,
            upload: 100_000,
            owe,
        };
        let whole = fuzz_feed(&[&input], case).unwrap();
        // 65,535 of stream 1 at first; the connection's window opens (stream 3's first
        // 65,535), stream 1's (20,000 more), then SETTINGS lifts both streams' windows
        // by 34,465: both bodies whole (100,000 each). Stream 1 completed.
        assert_eq!(whole, (1, 0, 1, 200_000), "{owe}");
        for cut in 0..=input.len() {
            let split = fuzz_feed(&[&input[..cut], &input[cut..]], case).unwrap();
            assert_eq!(split, whole, "cut at {cut}");
        }
    }
}

/// A response that ends its stream while the request body still waits for window: the
/// exchange completes, the rest of the body is not sent, and the stream is reset (CANCEL)
/// rather than left half-open at the server.
#[test]
fn an_early_response_resets_the_stream_whose_body_still_waits() {
    let body = vec![b'x'; 100_000];
    let cfg = post_cfg(&body);
    // One request in flight (its exchange held by the connection), 65,535 bytes sent.
    let (mut s, mut c) = ready(&cfg, 1, 100);
    assert_eq!(s.st.pending.len(), 1);
    let mut input = Vec::new();
    headers(&mut input, 1, flag::END_STREAM, &[0x88]);
    put_window_update(&mut input, 0, 100_000);
    put_window_update(&mut input, 1, 100_000);
    let mut ctl = Vec::new();
    c.input(|r| {
        s.input(&cfg, &input, r).unwrap();
        ctl.extend_from_slice(r.ctl);
    });
    let mut rst = Vec::new();
    put_rst(&mut rst, 1, code::CANCEL);
    assert_eq!(ctl, rst, "the reset alone, no more DATA");
    assert!(s.st.pending.is_empty());
    assert_eq!(c.rec.take(0, 0, 0, 1).counters.completed, 1);
}

/// `--h2-window`, `--h2-conn-window`, `--h2-header-table`: what a connection advertises, and
/// a WINDOW_UPDATE for every half of a window consumed.
#[test]
fn the_settings_asked_for_are_advertised_and_small_windows_refilled_by_half() {
    let mut cfg = cfg(4);
    cfg.settings = crate::h2::H2Settings {
        stream_window: 16_384,
        conn_window: 65_535,
        header_table: 0,
    };
    let mut s = H2::new(&cfg);
    let (mut rng, mut buf) = (Rng::new(1), Vec::new());
    let mut out = Out {
        conn: 0,
        buf: &mut buf,
        key: 0,
        rng: &mut rng,
        keep: None,
        streaming: false,
    };
    s.open(&cfg, &mut out).unwrap();
    let rest = &buf[frame::PREFACE.len()..];
    assert_eq!(rest[3], kind::SETTINGS);
    let len = u32::from_be_bytes([0, rest[0], rest[1], rest[2]]) as usize;
    let settings: Vec<(u16, u32)> = rest[9..9 + len]
        .chunks(6)
        .map(|e| {
            let id = u16::from_be_bytes([e[0], e[1]]);
            (id, u32::from_be_bytes([e[2], e[3], e[4], e[5]]))
        })
        .collect();
    assert!(settings.contains(&(frame::setting::INITIAL_WINDOW_SIZE, 16_384)));
    assert!(settings.contains(&(frame::setting::HEADER_TABLE_SIZE, 0)));
    // The connection's window stays at its initial 65,535: no WINDOW_UPDATE after the preface.
    assert_eq!(rest.len(), 9 + len, "nothing after the SETTINGS");
    // 10,000 bytes of a body on a 16 KiB stream window (the stream goes on): more than half
    // of it, so the stream's window is refilled; the connection's 65,535 is not half used.
    let (mut s, mut c) = ready(&cfg, 1, 100);
    let mut input = Vec::new();
    headers(&mut input, 1, 0, &[0x88]);
    put_head(&mut input, 10_000, kind::DATA, 0, 1);
    input.extend_from_slice(&[b'x'; 10_000]);
    let mut ctl = Vec::new();
    c.input(|r| {
        s.input(&cfg, &input, r).unwrap();
        ctl = std::mem::take(r.ctl);
    });
    let mut updates = Vec::new();
    let mut at = 0;
    while at + 9 <= ctl.len() {
        let len = u32::from_be_bytes([0, ctl[at], ctl[at + 1], ctl[at + 2]]) as usize;
        if ctl[at + 3] == kind::WINDOW_UPDATE {
            let stream = u32::from_be_bytes([ctl[at + 5], ctl[at + 6], ctl[at + 7], ctl[at + 8]]);
            let b = &ctl[at + 9..at + 13];
            updates.push((stream, u32::from_be_bytes([b[0], b[1], b[2], b[3]])));
        }
        at += 9 + len;
    }
    assert_eq!(updates, [(1, 10_000)]);
}
