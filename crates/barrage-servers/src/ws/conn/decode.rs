//! Decoding what a connection read: the handshake head, then frames, into echoes, pongs and
//! closes (queued through [`Conn::send`]).

use super::{Conn, ConnState, Payload, Sent, ThreadShare, MAX_MESSAGE, RETAIN};
use crate::stats::Ws;
use crate::ws::frame::{self, FrameHead, Parsed};
use crate::ws::handshake::{self, Upgrade};
use std::time::Instant;

impl Conn {
    /// Handles bytes just read.
    pub(super) fn input(&mut self, data: &mut [u8], now: Instant, cx: &mut ThreadShare<'_>) {
        if self.phase == ConnState::Handshake {
            self.handshake(data, now, cx);
        } else {
            self.frames(data, now, cx);
        }
    }

    fn handshake(&mut self, data: &mut [u8], now: Instant, cx: &mut ThreadShare<'_>) {
        let mut head = std::mem::take(&mut self.inbuf);
        let buffered = !head.is_empty();
        let whole: &mut [u8] = if buffered {
            head.extend_from_slice(data);
            &mut head
        } else {
            data
        };
        match handshake::answer(whole, &mut self.out) {
            Upgrade::Partial if buffered => self.inbuf = head,
            Upgrade::Partial => self.inbuf.extend_from_slice(whole),
            Upgrade::Refused(_) => {
                cx.counters.ws(Ws::HandshakesRejected);
                self.phase = ConnState::Closing;
            }
            Upgrade::Upgraded { len } => {
                cx.counters.ws(Ws::Handshakes);
                self.phase = ConnState::Open;
                self.frames(&mut whole[len..], now, cx);
            }
        }
    }

    /// Decodes frames from `data`, which follows what `inbuf` holds.
    fn frames(&mut self, mut data: &mut [u8], now: Instant, cx: &mut ThreadShare<'_>) {
        while !data.is_empty() && self.phase == ConnState::Open {
            if let Some(payload) = &mut self.payload {
                let take = payload.left.min(data.len() as u64) as usize;
                let (piece, rest) = std::mem::take(&mut data).split_at_mut(take);
                frame::unmask(piece, payload.mask, payload.offset);
                self.msg.extend_from_slice(piece);
                payload.left -= take as u64;
                payload.offset += take as u64;
                data = rest;
                if payload.left == 0 {
                    let fin = payload.fin;
                    self.payload = None;
                    if fin {
                        self.message_done(now, cx);
                    }
                }
                continue;
            }
            if self.inbuf.is_empty() {
                match self.unit(data, now, cx) {
                    Some(used) => data = &mut std::mem::take(&mut data)[used..],
                    None => {
                        self.inbuf.extend_from_slice(data);
                        return;
                    }
                }
                continue;
            }
            // Complete the unit begun in `inbuf`; it is never longer than a control frame.
            let old = self.inbuf.len();
            let take = data.len().min(frame::MAX_CONTROL_FRAME.saturating_sub(old));
            let mut unit = std::mem::take(&mut self.inbuf);
            unit.extend_from_slice(&data[..take]);
            match self.unit(&mut unit, now, cx) {
                Some(used) => {
                    unit.clear();
                    self.inbuf = unit; // at most 139 bytes: kept
                    let from_data = used.saturating_sub(old).min(data.len());
                    data = &mut std::mem::take(&mut data)[from_data..];
                }
                None => {
                    self.inbuf = unit;
                    return;
                }
            }
        }
    }

    /// Decodes one unit at the front of `buf`: a whole control frame, a whole unfragmented
    /// data frame, or the head of a data frame whose payload then streams into `msg`.
    /// Returns the bytes used, `None` if `buf` holds too little.
    fn unit(&mut self, buf: &mut [u8], now: Instant, cx: &mut ThreadShare<'_>) -> Option<usize> {
        let head = match frame::parse_head(buf) {
            Parsed::Partial => return None,
            Parsed::Fail(code) => {
                self.fail(code, now, cx);
                return Some(buf.len());
            }
            Parsed::Head(head) => head,
        };
        let start = head.head_len;
        let end = start.saturating_add(usize::try_from(head.len).unwrap_or(usize::MAX));
        if head.is_control() {
            if buf.len() < end {
                return None;
            }
            let payload = &mut buf[start..end];
            frame::unmask(payload, head.mask, 0);
            self.control(&head, payload, now, cx);
            return Some(end);
        }
        match (head.opcode, self.message) {
            (frame::CONTINUATION, None) | (frame::TEXT | frame::BINARY, Some(_)) => {
                self.fail(frame::PROTOCOL_ERROR, now, cx);
                return Some(buf.len());
            }
            _ => {}
        }
        if self.msg.len() as u64 + head.len > MAX_MESSAGE {
            self.fail(frame::TOO_BIG, now, cx);
            return Some(buf.len());
        }
        if head.fin && head.opcode != frame::CONTINUATION && buf.len() >= end {
            // The common case: a whole message in one frame, in one buffer.
            let payload = &mut buf[start..end];
            frame::unmask(payload, head.mask, 0);
            self.message(head.opcode, payload, now, cx);
            return Some(end);
        }
        if head.opcode != frame::CONTINUATION {
            self.message = Some(head.opcode);
        }
        self.payload = Some(Payload {
            left: head.len,
            mask: head.mask,
            offset: 0,
            fin: head.fin,
        });
        if head.len == 0 {
            self.payload = None;
            if head.fin {
                self.message_done(now, cx);
            }
        }
        Some(start)
    }

    /// The message in `msg` is complete.
    fn message_done(&mut self, now: Instant, cx: &mut ThreadShare<'_>) {
        let opcode = self.message.take().unwrap_or(frame::BINARY);
        let msg = std::mem::take(&mut self.msg);
        self.message(opcode, &msg, now, cx);
        self.msg = msg;
        self.msg.clear();
        if self.msg.capacity() > RETAIN {
            self.msg = Vec::new();
        }
    }

    /// A complete text or binary message: check it and echo it.
    fn message(&mut self, opcode: u8, payload: &[u8], now: Instant, cx: &mut ThreadShare<'_>) {
        if opcode == frame::TEXT && std::str::from_utf8(payload).is_err() {
            self.fail(frame::INVALID_DATA, now, cx);
            return;
        }
        cx.counters.ws(Ws::MessagesIn);
        self.send(Sent::Echo, opcode, payload, now, cx);
    }

    fn control(
        &mut self,
        head: &FrameHead,
        payload: &[u8],
        now: Instant,
        cx: &mut ThreadShare<'_>,
    ) {
        match head.opcode {
            frame::PING => {
                cx.counters.ws(Ws::Pings);
                self.send(Sent::Pong, frame::PONG, payload, now, cx);
            }
            frame::CLOSE => {
                cx.counters.ws(Ws::ClosesReceived);
                let code = match *payload {
                    [] => None,
                    [hi, lo, ref reason @ ..] => {
                        let code = u16::from_be_bytes([hi, lo]);
                        if !frame::valid_close_code(code) {
                            return self.fail(frame::PROTOCOL_ERROR, now, cx);
                        }
                        if std::str::from_utf8(reason).is_err() {
                            return self.fail(frame::INVALID_DATA, now, cx);
                        }
                        Some(code)
                    }
                    [_] => return self.fail(frame::PROTOCOL_ERROR, now, cx),
                };
                let body = code.map(u16::to_be_bytes);
                let body: &[u8] = match &body {
                    Some(code) => code,
                    None => &[],
                };
                self.send(Sent::Close, frame::CLOSE, body, now, cx);
                self.phase = ConnState::Closing;
            }
            _ => {} // an unsolicited pong needs no answer
        }
    }

    /// The client broke the protocol: close with `code`.
    fn fail(&mut self, code: u16, now: Instant, cx: &mut ThreadShare<'_>) {
        cx.counters.ws(Ws::ProtocolErrors);
        self.send(Sent::Close, frame::CLOSE, &code.to_be_bytes(), now, cx);
        self.phase = ConnState::Closing;
        self.payload = None;
        self.message = None;
        self.msg = Vec::new();
    }
}
