//! The protocol sinks: how decoded TCP frames, HTTP responses and WebSocket messages become
//! completed (or failed) exchanges. Each wraps the shared `Replies` logic; what differs is
//! only the protocol's notion of "a reply" and its extra accounting.

use crate::conn::Replies;
use crate::plan::StatusSet;
use barrage_metrics::ErrorClass;

impl crate::framing::Sink for Replies<'_> {
    fn expect_len(&mut self) -> Option<u64> {
        self.conn.inflight.front().map(|f| f.len as u64)
    }

    fn body(&mut self, bytes: &[u8]) {
        self.verify_body(bytes);
    }

    fn frame(&mut self) {
        self.complete(None);
    }

    fn unexpected(&mut self, _bytes: &[u8]) {
        self.rec.c.unexpected += 1;
    }
}

/// HTTP: one response completes the exchange at the front; its status decides success.
pub struct HttpReplies<'a, 'b> {
    pub r: Replies<'a>,
    pub expect: &'b StatusSet,
}

impl crate::http::ResponseSink for HttpReplies<'_, '_> {
    fn head(&mut self, _status: u16) {
        if let Some(f) = self.r.conn.inflight.front() {
            let t = self.r.now.saturating_sub(f.start);
            self.r.rec.ttfb.record_ns(t);
        }
    }

    fn complete(&mut self, status: u16, keep_alive: bool) {
        self.r.rec.c.status.add(status, 1);
        let bad = (!self.expect.contains(status)).then_some(ErrorClass::UnexpectedStatus);
        self.r.complete(bad);
        if !keep_alive {
            self.r.conn.server_closes = true;
        }
    }
}

/// WebSocket: one data message completes the exchange at the front (an echo, under
/// `--expect echo`); pings are answered, close frames recorded.
pub struct WsReplies<'a> {
    pub r: Replies<'a>,
}

impl crate::ws::FrameSink for WsReplies<'_> {
    fn data(&mut self, bytes: &[u8]) {
        if !self.r.conn.inflight.is_empty() {
            self.r.verify_body(bytes);
        }
    }

    fn message(&mut self, _op: crate::ws::OpCode, len: u64) {
        let c = &mut *self.r.conn;
        if let Some(f) = c.inflight.front() {
            if (self.r.verify_dynamic || !self.r.verify_static.is_empty()) && f.len as u64 != len {
                c.vbad = true;
            }
        }
        self.r.complete(None);
    }

    fn ping(&mut self, payload: &[u8]) {
        let pong = self.r.conn.pong.get_or_insert_with(Vec::new);
        pong.clear();
        pong.extend_from_slice(payload);
    }

    fn close(&mut self, code: Option<u16>, _reason: &[u8]) {
        self.r.conn.peer_close = Some(code);
    }
}
