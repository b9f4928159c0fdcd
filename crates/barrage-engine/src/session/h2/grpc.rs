//! gRPC on HTTP/2: a call's reply messages read from its DATA (length-prefixed, counted,
//! and timed one by one when the call is server-streaming), and a call judged when its
//! stream ends, by HTTP status, content-type, `grpc-status` in the trailers, and whether its
//! messages were whole.

use super::read::{bad, code_u16, end_exchange, Sink};
use crate::h2::frame::Head;
use crate::session::ProtoError;
use barrage_metrics::ErrorClass;

impl Sink<'_, '_, '_, '_> {
    /// A gRPC stream's DATA: its messages counted (and, streaming, each timed from the
    /// call's start).
    pub(super) fn grpc_data(&mut self, h: &Head, bytes: &[u8]) -> Result<(), ProtoError> {
        let Some(i) = self.st.streams.iter().position(|s| s.id == h.stream) else {
            return Ok(()); // given up on; data_end judges the stream id
        };
        let gzip = self.cfg.grpc.is_some_and(|g| g.gzip);
        let s = &mut self.st.streams[i];
        let n = s.msgs.feed(bytes, gzip).map_err(|e| bad(h, e))?;
        s.n_msgs = s.n_msgs.saturating_add(n);
        let r = &mut *self.r;
        r.rec.counters.grpc.messages_received += u64::from(n);
        if s.streaming && n > 0 {
            // Each message ended in this chunk, timed from the call's start.
            if let Some(e) = r.ex.get(s.key) {
                let t = r.now.saturating_sub(e.start);
                for _ in 0..n {
                    r.rec.stream_msg.record_ns(t);
                }
            }
        }
        Ok(())
    }

    /// A gRPC call's stream ended: judged by its HTTP status, then its `grpc-status` (each
    /// non-OK code its own class), then whether its messages were whole (and, unary, one).
    pub(super) fn finish_call(&mut self, i: usize) {
        let s = self.st.streams.swap_remove(i);
        let c = &mut self.r.rec.counters;
        c.status.add(s.status, 1);
        let bad = if s.status != 200 {
            Some(ErrorClass::UnexpectedStatus)
        } else if !s.grpc_type {
            // Not a gRPC reply (its content-type is not application/grpc...): the spec's
            // client fails such a call, whatever its trailers say.
            c.grpc.no_status += u64::from(s.grpc_status.is_none());
            self.r.rec.reason(
                ErrorClass::Protocol,
                self.r.now,
                &"a reply to a gRPC call without content-type application/grpc",
            );
            Some(ErrorClass::Protocol)
        } else if let Some(code) = s.grpc_status {
            c.grpc.status.add(code_u16(code), 1);
            match ErrorClass::grpc(code) {
                Some(e) => Some(e),
                // OK with a message cut short, or a unary call's reply not one message.
                None if !s.msgs.idle() || (!s.streaming && s.n_msgs != 1) => {
                    Some(ErrorClass::Protocol)
                }
                None => None,
            }
        } else {
            c.grpc.no_status += 1;
            Some(ErrorClass::Protocol)
        };
        self.r.server_ns = s.server_ns;
        end_exchange(self.r, s.key, bad);
    }
}
