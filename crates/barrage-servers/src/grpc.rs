//! The reference gRPC server: the service `barrage.Echo` ([`PROTO`]) on the HTTP/2 server
//! (the `h2` crate), with knobs for what a client must count: a delay, a status other than
//! OK every so many calls, server streams of so many messages at an interval.
//!
//! - `Echo` (unary) answers the request's message as it came.
//! - `Stream` (server streaming) answers it `stream_messages` times, `stream_interval` apart.
//! - `Collect` (client streaming) answers the stream's last message once it is half-closed.
//! - `Chat` (bidirectional) answers each message of the stream, in order.
//! - Server reflection (`grpc.reflection.v1` and `v1alpha`): each request answered as it comes
//!   (`file_containing_symbol`, `file_by_filename`, `list_services`) with [`DESCRIPTOR`].
//! - Any other method: `UNIMPLEMENTED` (12), in a trailers-only reply.
//!
//! The messages are not decoded (a reply is the request's bytes), so the server needs no
//! protobuf library; the gRPC framing (5-byte prefix, trailers) is written here, apart from
//! the client's.

use crate::stats::{CounterWriter, Grpc};
use bytes::{Bytes, BytesMut};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// The service, for `--proto` (`barrage serve grpc --proto` prints it).
pub const PROTO: &str = r#"syntax = "proto3";

package barrage;

// barrage serve grpc: Echo answers the request; Stream answers it --stream-messages times.
service Echo {
  rpc Echo(Message) returns (Message);
  rpc Stream(Message) returns (stream Message);
  rpc Collect(stream Message) returns (Message);
  rpc Chat(stream Message) returns (stream Message);
}

message Message {
  string text = 1;
  int64 number = 2;
  bytes payload = 3;
  map<string, string> labels = 4;
  repeated string tags = 5;
  Message inner = 6;
}
"#;

/// [`PROTO`]'s FileDescriptorProto (file `barrage_echo.proto`), serialized, for server
/// reflection: compiled by protox in the binary's tests, which check it is current.
pub const DESCRIPTOR: &[u8] = include_bytes!("grpc_echo.pb");

/// The gRPC server's knobs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrpcKnobs {
    /// Every `n`th call on a thread ends with status `code` instead (`(n, code)`).
    pub fail_every: Option<(u64, u32)>,
    /// Messages a `Stream` call answers.
    pub stream_messages: u32,
    /// The pause before each streamed message after the first.
    pub stream_interval: Option<Duration>,
}

/// A thread's count of calls, for `fail_every`.
#[derive(Default)]
pub(crate) struct Calls(Cell<u64>);

/// The request's messages: whole, as they came (each with its prefix), or why not.
fn messages(body: &[u8]) -> Result<Vec<Bytes>, &'static str> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        if rest.len() < 5 {
            return Err("a message cut short in its prefix");
        }
        if rest[0] != 0 {
            return Err("a compressed message (this server accepts none)");
        }
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        if rest.len() - 5 < len {
            return Err("a message shorter than its prefix says");
        }
        out.push(Bytes::copy_from_slice(&rest[..5 + len]));
        rest = &rest[5 + len..];
    }
    Ok(out)
}

fn head(status_ok_only: Option<(u32, &str)>) -> http::response::Builder {
    let mut b = http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .header("server", "barrage");
    if let Some((code, msg)) = status_ok_only {
        b = b
            .header("grpc-status", code.to_string())
            .header("grpc-message", msg);
    }
    b
}

fn trailers(code: u32) -> http::HeaderMap {
    let mut t = http::HeaderMap::new();
    t.insert("grpc-status", http::HeaderValue::from(code));
    t
}

fn counted(c: &CounterWriter, code: u32) {
    c.grpc(Grpc::Calls, 1);
    c.grpc(
        if code == 0 {
            Grpc::StatusOk
        } else {
            Grpc::StatusError
        },
        1,
    );
}

/// Answer one call: `path` with request `body` (all of it, read), after `delay`.
pub(crate) async fn answer(
    path: &str,
    body: BytesMut,
    mut respond: h2::server::SendResponse<Bytes>,
    knobs: &GrpcKnobs,
    delay: Option<Duration>,
    calls: &Calls,
    c: &Rc<CounterWriter>,
) {
    // (one request message, a client stream)
    let (one_in, kind) = match path {
        "/barrage.Echo/Echo" => (true, Reply::One),
        "/barrage.Echo/Stream" => (true, Reply::Copies),
        "/barrage.Echo/Collect" => (false, Reply::Last),
        "/barrage.Echo/Chat" => (false, Reply::Each),
        _ => return status_only(respond, 12, "unknown method", c),
    };
    let msgs = match messages(&body) {
        Ok(m) => m,
        Err(why) => return status_only(respond, 13, why, c),
    };
    c.grpc(Grpc::MessagesIn, msgs.len() as u64);
    if one_in && msgs.len() != 1 {
        return status_only(respond, 13, "not one request message", c);
    }
    if let Some(d) = delay {
        tokio::time::sleep(d).await;
    }
    let n = calls.0.get() + 1;
    calls.0.set(n);
    if let Some((every, code)) = knobs.fail_every {
        if n.is_multiple_of(every) {
            return status_only(respond, code, "barrage serve grpc --fail-every", c);
        }
    }
    let Ok(res) = head(None).body(()) else { return };
    let Ok(mut send) = respond.send_response(res, false) else {
        return;
    };
    let replies: Vec<&Bytes> = match kind {
        Reply::One => vec![&msgs[0]],
        Reply::Copies => std::iter::repeat_n(&msgs[0], knobs.stream_messages as usize).collect(),
        Reply::Last => msgs.last().into_iter().collect(),
        Reply::Each => msgs.iter().collect(),
    };
    for (i, msg) in replies.into_iter().enumerate() {
        if i > 0 {
            if let Some(d) = knobs.stream_interval {
                tokio::time::sleep(d).await;
            }
        }
        if send.send_data(msg.clone(), false).is_err() {
            return;
        }
        c.grpc(Grpc::MessagesOut, 1);
    }
    counted(c, 0);
    let _ = send.send_trailers(trailers(0));
}

/// What a method answers.
#[derive(Clone, Copy)]
enum Reply {
    /// The request's message.
    One,
    /// The request's message, `stream_messages` times.
    Copies,
    /// The stream's last message (none for an empty stream).
    Last,
    /// Every message of the stream.
    Each,
}

/// A reply of headers alone that carry the status (gRPC's "trailers-only").
fn status_only(
    mut respond: h2::server::SendResponse<Bytes>,
    code: u32,
    why: &str,
    c: &Rc<CounterWriter>,
) {
    let Ok(res) = head(Some((code, why))).body(()) else {
        return;
    };
    counted(c, code);
    let _ = respond.send_response(res, true);
}

/// The reflection services' method (both versions speak the same messages).
pub(crate) const REFLECTION: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// The fields of a protobuf message, length-delimited ones only (the reflection requests'),
/// or `None` when it does not parse.
fn len_fields(mut m: &[u8]) -> Option<Vec<(u64, &[u8])>> {
    fn varint(m: &mut &[u8]) -> Option<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let (&b, rest) = m.split_first()?;
            *m = rest;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }
    let mut out = Vec::new();
    while !m.is_empty() {
        let tag = varint(&mut m)?;
        match tag & 7 {
            0 => {
                varint(&mut m)?;
            }
            2 => {
                let n = usize::try_from(varint(&mut m)?).ok()?;
                out.push((tag >> 3, m.get(..n)?));
                m = &m[n..];
            }
            _ => return None,
        }
    }
    Some(out)
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_len(out: &mut Vec<u8>, field: u64, v: &[u8]) {
    put_varint(out, (field << 3) | 2);
    put_varint(out, v.len() as u64);
    out.extend_from_slice(v);
}

/// The answer to one ServerReflectionRequest (`req`, without its prefix).
fn reflect_one(req: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_len(&mut out, 2, req); // original_request
    let fields = len_fields(req).unwrap_or_default();
    let mut found = None;
    for (f, v) in &fields {
        let v = String::from_utf8_lossy(v);
        match f {
            // file_by_filename, file_containing_symbol
            3 if v == "barrage_echo.proto" => found = Some(true),
            4 if v == "barrage" || v.starts_with("barrage.") => found = Some(true),
            3 | 4 => found = Some(false),
            7 => {
                // list_services
                let mut list = Vec::new();
                for name in ["barrage.Echo", "grpc.reflection.v1.ServerReflection"] {
                    let mut svc = Vec::new();
                    put_len(&mut svc, 1, name.as_bytes());
                    put_len(&mut list, 1, &svc);
                }
                put_len(&mut out, 6, &list);
                return out;
            }
            _ => {}
        }
    }
    if found == Some(true) {
        let mut files = Vec::new();
        put_len(&mut files, 1, DESCRIPTOR);
        put_len(&mut out, 4, &files);
    } else {
        let mut err = vec![0x08, 5]; // error_code NOT_FOUND
        put_len(&mut err, 2, b"not defined by this server");
        put_len(&mut out, 7, &err);
    }
    out
}

/// A server reflection stream: each request answered as it comes, OK when the client ends
/// its side.
pub(crate) async fn reflection(
    mut body: h2::RecvStream,
    mut respond: h2::server::SendResponse<Bytes>,
    c: &Rc<CounterWriter>,
) {
    let Ok(res) = head(None).body(()) else { return };
    let Ok(mut send) = respond.send_response(res, false) else {
        return;
    };
    let mut buf = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let Ok(chunk) = chunk else { return };
        let _ = body.flow_control().release_capacity(chunk.len());
        buf.extend_from_slice(&chunk);
        while buf.len() >= 5 {
            let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
            if buf.len() < 5 + len {
                break;
            }
            let msg = buf.split_to(5 + len);
            c.grpc(Grpc::MessagesIn, 1);
            let reply = reflect_one(&msg[5..]);
            let mut framed = Vec::with_capacity(5 + reply.len());
            framed.push(0);
            framed.extend_from_slice(&(reply.len() as u32).to_be_bytes());
            framed.extend_from_slice(&reply);
            if send.send_data(Bytes::from(framed), false).is_err() {
                return;
            }
            c.grpc(Grpc::MessagesOut, 1);
        }
    }
    counted(c, 0);
    let _ = send.send_trailers(trailers(0));
}

#[cfg(test)]
mod tests {
    use super::messages;

    #[test]
    fn reflection_answers_by_symbol_file_and_list() {
        use super::{len_fields, put_len, reflect_one, DESCRIPTOR};
        let ask = |field: u64, v: &str| {
            let mut r = Vec::new();
            put_len(&mut r, field, v.as_bytes());
            reflect_one(&r)
        };
        for (field, v) in [(4, "barrage.Echo"), (3, "barrage_echo.proto")] {
            let a = ask(field, v);
            let f = len_fields(&a).unwrap();
            let files = f.iter().find(|(n, _)| *n == 4).expect("a file reply").1;
            assert_eq!(len_fields(files).unwrap(), vec![(1, DESCRIPTOR)]);
        }
        let a = ask(4, "other.Svc");
        assert!(len_fields(&a).unwrap().iter().any(|(n, _)| *n == 7));
        let a = ask(7, "");
        assert!(len_fields(&a).unwrap().iter().any(|(n, _)| *n == 6));
    }

    #[test]
    fn request_messages_are_split_by_their_prefixes() {
        let mut b = vec![0, 0, 0, 0, 2, 7, 7, 0, 0, 0, 0, 0];
        assert_eq!(messages(&b).unwrap().len(), 2);
        b.push(0);
        assert!(messages(&b).is_err());
        assert!(messages(&[0, 0, 0, 0, 3, 1]).is_err());
        assert!(messages(&[1, 0, 0, 0, 0]).is_err());
        assert_eq!(messages(&[]).unwrap().len(), 0);
    }
}
