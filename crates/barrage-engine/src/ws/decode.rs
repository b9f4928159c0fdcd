//! Server frames -> messages, pings, pongs and closes, checked against RFC 6455 §5 and §7.
//!
//! Each frame header is validated as soon as its first two bytes are in (so a frame announcing
//! 2^63 bytes fails before any payload arrives). Data payloads go to the sink as slices of the
//! caller's buffer; text is validated as it streams, keeping at most 3 bytes of a split UTF-8
//! sequence. Control payloads (at most 125 bytes) are gathered in an inline array.

use super::{OpCode, WsError};

/// Receives what the decoder finds, in stream order.
pub trait FrameSink {
    /// Payload bytes of the current data message (text or binary), in order.
    fn data(&mut self, _bytes: &[u8]) {}
    /// A complete data message (after its FIN fragment): its first frame's opcode and total
    /// payload length.
    fn message(&mut self, op: OpCode, len: u64);
    /// A ping; answer with a pong carrying the same payload (at most 125 bytes).
    fn ping(&mut self, payload: &[u8]);
    fn pong(&mut self) {}
    /// A close frame from the server; `code` is `None` when the frame had no body.
    fn close(&mut self, code: Option<u16>, reason: &[u8]);
}

/// Per-connection frame decoder: fixed-size state, no heap.
#[derive(Clone, Debug)]
pub struct FrameDecoder {
    max_message: u64,
    /// Header bytes of the current frame so far (2 to 10: server frames carry no mask key).
    hdr: [u8; 10],
    hdr_len: u8,
    /// The header is complete; `remaining` payload bytes are due.
    in_payload: bool,
    remaining: u64,
    /// Of the current frame.
    op: OpCode,
    fin: bool,
    /// The data message being received (possibly fragmented) and its length so far.
    message: Option<OpCode>,
    message_len: u64,
    utf8: Utf8Stream,
    /// A control frame's payload (at most 125 bytes), allocated at the first control frame
    /// that has one: an idle connection does not carry it.
    ctrl: Option<Box<[u8; 125]>>,
    ctrl_len: u8,
    failed: Option<WsError>,
}

impl FrameDecoder {
    /// `max_message`: the largest data message accepted, summed over its fragments.
    pub fn new(max_message: u64) -> Self {
        Self {
            max_message,
            hdr: [0; 10],
            hdr_len: 0,
            in_payload: false,
            remaining: 0,
            op: OpCode::Binary,
            fin: true,
            message: None,
            message_len: 0,
            utf8: Utf8Stream::default(),
            ctrl: None,
            ctrl_len: 0,
            failed: None,
        }
    }

    pub fn reset(&mut self) {
        *self = Self::new(self.max_message);
    }

    /// Feed the bytes of one read. After an error every call returns it again until `reset`.
    pub fn feed(&mut self, data: &[u8], sink: &mut impl FrameSink) -> Result<(), WsError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.feed_inner(data, sink)
            .inspect_err(|e| self.failed = Some(e.clone()))
    }

    fn feed_inner(&mut self, mut data: &[u8], sink: &mut impl FrameSink) -> Result<(), WsError> {
        while !data.is_empty() {
            if !self.in_payload {
                let used = self.read_header(data)?;
                data = &data[used..];
                if self.in_payload && self.remaining == 0 {
                    self.end_frame(sink)?;
                }
                continue;
            }
            let take = self.remaining.min(data.len() as u64) as usize;
            let (chunk, rest) = data.split_at(take);
            if self.op.is_control() {
                let at = self.ctrl_len as usize;
                let ctrl = self.ctrl.get_or_insert_with(|| Box::new([0; 125]));
                ctrl[at..at + take].copy_from_slice(chunk);
                self.ctrl_len += take as u8;
            } else {
                if self.message == Some(OpCode::Text) {
                    self.utf8.feed(chunk)?;
                }
                sink.data(chunk);
            }
            self.remaining -= take as u64;
            data = rest;
            if self.remaining == 0 {
                self.end_frame(sink)?;
            }
        }
        Ok(())
    }

    /// Take header bytes; on the last one, set up the payload. Returns the bytes used.
    fn read_header(&mut self, data: &[u8]) -> Result<usize, WsError> {
        let mut used = 0;
        while !self.in_payload && used < data.len() {
            let need = match self.hdr_len {
                0 | 1 => 2,
                _ => match self.hdr[1] & 0x7f {
                    126 => 4,
                    127 => 10,
                    _ => 2,
                },
            };
            let have = self.hdr_len as usize;
            let take = (need - have).min(data.len() - used);
            self.hdr[have..have + take].copy_from_slice(&data[used..used + take]);
            self.hdr_len += take as u8;
            used += take;
            if (self.hdr_len as usize) < need {
                break;
            }
            if need == 2 && self.hdr_len == 2 {
                self.check_first_two()?;
                if self.hdr[1] & 0x7f >= 126 {
                    continue;
                }
            }
            self.start_payload()?;
        }
        Ok(used)
    }

    /// Everything the first two header bytes tell, checked before any more bytes are read.
    fn check_first_two(&mut self) -> Result<(), WsError> {
        let [b0, b1] = [self.hdr[0], self.hdr[1]];
        if b0 & 0x70 != 0 {
            return Err(WsError::ReservedBits);
        }
        let op = OpCode::from_code(b0 & 0x0f).ok_or(WsError::UnknownOpcode(b0 & 0x0f))?;
        if b1 & 0x80 != 0 {
            return Err(WsError::MaskedServerFrame);
        }
        let fin = b0 & 0x80 != 0;
        if op.is_control() {
            if !fin {
                return Err(WsError::FragmentedControl);
            }
            if b1 & 0x7f > 125 {
                return Err(WsError::ControlTooLong);
            }
        } else if op == OpCode::Continuation && self.message.is_none() {
            return Err(WsError::UnexpectedContinuation);
        } else if op != OpCode::Continuation && self.message.is_some() {
            return Err(WsError::ExpectedContinuation);
        }
        (self.op, self.fin) = (op, fin);
        Ok(())
    }

    fn start_payload(&mut self) -> Result<(), WsError> {
        let len = match self.hdr[1] & 0x7f {
            126 => u16::from_be_bytes([self.hdr[2], self.hdr[3]]) as u64,
            127 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&self.hdr[2..10]);
                u64::from_be_bytes(b)
            }
            n => n as u64,
        };
        if !self.op.is_control() {
            let total = self.message_len.saturating_add(len);
            if len >> 63 != 0 || total > self.max_message {
                return Err(WsError::MessageTooLarge(total));
            }
            if self.op != OpCode::Continuation {
                self.message = Some(self.op);
                self.utf8 = Utf8Stream::default();
            }
            self.message_len = total;
        }
        self.remaining = len;
        self.in_payload = true;
        Ok(())
    }

    fn end_frame(&mut self, sink: &mut impl FrameSink) -> Result<(), WsError> {
        self.in_payload = false;
        self.hdr_len = 0;
        if self.op.is_control() {
            let payload = match &self.ctrl {
                Some(c) => &c[..self.ctrl_len as usize],
                None => &[][..],
            };
            self.ctrl_len = 0;
            return match self.op {
                OpCode::Ping => {
                    sink.ping(payload);
                    Ok(())
                }
                OpCode::Pong => {
                    sink.pong();
                    Ok(())
                }
                _ => close(payload, sink),
            };
        }
        if self.fin {
            let op = self.message.take().unwrap_or(OpCode::Binary);
            if op == OpCode::Text {
                self.utf8.finish()?;
            }
            sink.message(op, self.message_len);
            self.message_len = 0;
        }
        Ok(())
    }
}

fn close(payload: &[u8], sink: &mut impl FrameSink) -> Result<(), WsError> {
    match payload {
        [] => sink.close(None, &[]),
        [_] => return Err(WsError::CloseTooShort),
        [hi, lo, reason @ ..] => {
            let code = u16::from_be_bytes([*hi, *lo]);
            if !valid_close_code(code) {
                return Err(WsError::InvalidCloseCode(code));
            }
            std::str::from_utf8(reason).map_err(|_| WsError::InvalidUtf8)?;
            sink.close(Some(code), reason);
        }
    }
    Ok(())
}

/// Codes a peer may send (RFC 6455 §7.4, IANA registry, as Autobahn checks them): 1004-1006
/// and 1015 are reserved for local use, 1016-2999 unassigned.
fn valid_close_code(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

/// Streaming UTF-8 check: the bytes of a sequence split across reads or frames wait here.
#[derive(Clone, Copy, Debug, Default)]
struct Utf8Stream {
    pending: [u8; 4],
    len: u8,
}

impl Utf8Stream {
    fn feed(&mut self, mut data: &[u8]) -> Result<(), WsError> {
        if self.len > 0 {
            let have = self.len as usize;
            let need: usize = match self.pending[0] {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            let take = need.saturating_sub(have).min(data.len());
            self.pending[have..have + take].copy_from_slice(&data[..take]);
            self.len += take as u8;
            data = &data[take..];
            match std::str::from_utf8(&self.pending[..self.len as usize]) {
                Ok(_) => self.len = 0,
                Err(e) if e.error_len().is_none() && data.is_empty() => return Ok(()),
                Err(_) => return Err(WsError::InvalidUtf8),
            }
        }
        match std::str::from_utf8(data) {
            Ok(_) => Ok(()),
            Err(e) if e.error_len().is_none() => {
                let rest = &data[e.valid_up_to()..];
                self.pending[..rest.len()].copy_from_slice(rest);
                self.len = rest.len() as u8;
                Ok(())
            }
            Err(_) => Err(WsError::InvalidUtf8),
        }
    }

    /// The message ended: no sequence may be left open.
    fn finish(&mut self) -> Result<(), WsError> {
        if std::mem::take(&mut self.len) > 0 {
            return Err(WsError::InvalidUtf8);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
