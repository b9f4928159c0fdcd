//! The reference gRPC server: the service `barrage.Echo` ([`PROTO`]) on the HTTP/2 server
//! (the `h2` crate), with knobs for what a client must count: a delay, a status other than
//! OK every so many calls, server streams of so many messages at an interval.
//!
//! - `Echo` (unary) answers the request's message as it came.
//! - `Stream` (server streaming) answers it `stream_messages` times, `stream_interval` apart.
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
    let streaming = match path {
        "/barrage.Echo/Echo" => false,
        "/barrage.Echo/Stream" => true,
        _ => return status_only(respond, 12, "unknown method", c),
    };
    let msgs = match messages(&body) {
        Ok(m) => m,
        Err(why) => return status_only(respond, 13, why, c),
    };
    c.grpc(Grpc::MessagesIn, msgs.len() as u64);
    let [msg] = &msgs[..] else {
        return status_only(respond, 13, "not one request message", c);
    };
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
    let count = if streaming { knobs.stream_messages } else { 1 };
    for i in 0..count {
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

#[cfg(test)]
mod tests {
    use super::messages;

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
