//! RESP2/RESP3 replies -> one event per top-level value, as a streaming sans-IO decoder.
//!
//! The decoder keeps a few bytes of state and a fixed stack of element counts for nested
//! aggregates (no heap): a line header is parsed byte by byte as it arrives (input may be cut
//! anywhere), bulk payloads are skipped by count, never copied. Only top-level values are
//! reported: an error nested in an array is part of a value, an attribute (`|`) decorates the
//! next value and is not a reply, a push (`>`) is out-of-band and reported apart.

/// The deepest nesting accepted: one `u32` element count per open aggregate.
pub const STACK: usize = 32;
/// The largest bulk payload accepted (redis' own `proto-max-bulk-len` default).
pub const MAX_BULK: u64 = 512 * 1024 * 1024;
/// The largest aggregate accepted, in elements (map entries count twice).
pub const MAX_AGGREGATE: u64 = (1 << 31) - 1;

/// What a complete top-level value was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RespReply {
    /// Any value that is neither null nor an error (nested errors included).
    Value,
    /// `$-1`, `*-1` or RESP3 `_`.
    Null,
    /// A simple error (`-ERR ...`) or a bulk error (`!`).
    Error,
}

/// Receives the decoder's events in stream order.
pub trait RespSink {
    /// A complete top-level reply (the answer to the oldest request in flight).
    fn reply(&mut self, reply: RespReply);
    /// A complete top-level RESP3 push (`>`): out-of-band, not the answer to a request.
    fn push(&mut self) {}
}

/// The server broke RESP; the connection's stream cannot be followed any further.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RespError {
    #[error("unknown RESP type byte {0:#04x} at the start of a value")]
    BadType(u8),
    #[error("malformed length in a RESP '{}' header", *.0 as char)]
    BadLength(u8),
    #[error("a RESP bulk of more than {MAX_BULK} bytes (512 MB limit)")]
    BulkTooLong,
    #[error("a RESP aggregate of more than {MAX_AGGREGATE} elements")]
    AggregateTooLong,
    #[error("malformed RESP '{}' value", *.0 as char)]
    BadValue(u8),
    #[error("a RESP line or bulk payload is not terminated by CRLF")]
    MissingCrlf,
    #[error("RESP aggregates nested deeper than {0} levels")]
    TooDeep(u8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RespState {
    /// Expecting the type byte of a value.
    Type,
    /// In the header line of a value of type `kind`.
    Line,
    /// The header line's CR was seen.
    LineLf,
    /// `num` payload bytes of a bulk are left to skip.
    Payload,
    PayloadCr,
    PayloadLf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Top {
    Value,
    Error,
    Push,
}

/// Per-connection RESP reply decoder: fixed-size state, no heap.
// size_of::<RespDecoder>() = 152 on x86_64: 128 bytes of stack + 24 of state (test `state_is_small`).
#[derive(Clone, Debug)]
pub struct RespDecoder {
    /// Elements left in each open aggregate, outermost first.
    stack: [u32; STACK],
    /// Line: the length read so far; Payload: bytes left to skip.
    num: u64,
    failed: Option<RespError>,
    /// Bit d: the aggregate at stack index d is an attribute (not a value of its parent).
    attrs: u32,
    depth: u8,
    max_depth: u8,
    phase: RespState,
    /// Type byte of the value whose header is being read.
    kind: u8,
    /// Bytes of the header line so far (saturating).
    line_len: u8,
    /// The line started with '-' (lengths) or a sign (integers).
    neg: bool,
    /// Digits seen in the line.
    digits: bool,
    top: Top,
}

impl Default for RespDecoder {
    fn default() -> Self {
        Self::new(STACK)
    }
}

impl RespDecoder {
    /// `max_depth`: the deepest nesting of aggregates accepted (at most [`STACK`]).
    pub fn new(max_depth: usize) -> Self {
        Self {
            stack: [0; STACK],
            num: 0,
            failed: None,
            attrs: 0,
            depth: 0,
            max_depth: max_depth.clamp(1, STACK) as u8,
            phase: RespState::Type,
            kind: 0,
            line_len: 0,
            neg: false,
            digits: false,
            top: Top::Value,
        }
    }

    /// Forget everything (a new connection).
    pub fn reset(&mut self) {
        *self = Self::new(self.max_depth as usize);
    }

    /// True between values: no reply is partially received.
    pub fn is_idle(&self) -> bool {
        self.phase == RespState::Type && self.depth == 0 && self.failed.is_none()
    }

    /// Feed the bytes of one read. After an error every call returns it again until `reset`.
    pub fn feed(&mut self, data: &[u8], sink: &mut impl RespSink) -> Result<(), RespError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.feed_inner(data, sink)
            .inspect_err(|e| self.failed = Some(e.clone()))
    }

    fn feed_inner(&mut self, data: &[u8], sink: &mut impl RespSink) -> Result<(), RespError> {
        let mut i = 0;
        while i < data.len() {
            match self.phase {
                RespState::Type => {
                    if let Some(used) = self.whole_line(&data[i..], sink)? {
                        i += used;
                        continue;
                    }
                    self.start(data[i])?;
                    i += 1;
                }
                RespState::Line => {
                    if matches!(self.kind, b'+' | b'-' | b',') {
                        // Free text: jump to the CR.
                        match memchr::memchr2(b'\r', b'\n', &data[i..]) {
                            Some(at) => i += at,
                            None => {
                                i = data.len();
                                continue;
                            }
                        }
                    }
                    self.line_byte(data[i])?;
                    i += 1;
                }
                RespState::LineLf => {
                    if data[i] != b'\n' {
                        return Err(RespError::MissingCrlf);
                    }
                    i += 1;
                    self.end_line(sink)?;
                }
                RespState::Payload => {
                    let take = self.num.min((data.len() - i) as u64);
                    self.num -= take;
                    i += take as usize;
                    if self.num == 0 {
                        self.phase = RespState::PayloadCr;
                    }
                }
                RespState::PayloadCr | RespState::PayloadLf => {
                    let want = if self.phase == RespState::PayloadCr {
                        b'\r'
                    } else {
                        b'\n'
                    };
                    if data[i] != want {
                        return Err(RespError::MissingCrlf);
                    }
                    i += 1;
                    if self.phase == RespState::PayloadCr {
                        self.phase = RespState::PayloadLf;
                    } else {
                        self.phase = RespState::Type;
                        self.value_done(false, sink);
                    }
                }
            }
        }
        Ok(())
    }

    /// Fast path: a well-formed header line that is whole in `rest` is taken in one step
    /// (the bytes used). Anything else (a line cut by the read, a malformed one) gives `None`
    /// and goes byte by byte, which is also what finds and names errors; so both paths accept
    /// exactly the same input (the split tests and the fuzz target check it).
    #[inline]
    fn whole_line(
        &mut self,
        rest: &[u8],
        sink: &mut impl RespSink,
    ) -> Result<Option<usize>, RespError> {
        if self.depth == 0 && rest.starts_with(b"+OK\r\n") {
            // The most common reply of all, whole: a value.
            self.top = Top::Value;
            sink.reply(RespReply::Value);
            return Ok(Some(5));
        }
        if self.depth == 0 {
            // A miss, whole: RESP2's null bulk or null array, RESP3's null.
            let null = if rest.starts_with(b"$-1\r\n") || rest.starts_with(b"*-1\r\n") {
                5
            } else if rest.starts_with(b"_\r\n") {
                3
            } else {
                0
            };
            if null > 0 {
                self.top = Top::Value;
                sink.reply(RespReply::Null);
                return Ok(Some(null));
            }
        }
        let Some(cr) = memchr::memchr(b'\r', rest) else {
            return Ok(None);
        };
        if rest.get(cr + 1) != Some(&b'\n') || cr == 0 {
            return Ok(None);
        }
        let (kind, body) = (rest[0], &rest[1..cr]);
        let (mut num, mut neg, mut digits) = (0u64, false, false);
        match kind {
            b'+' | b'-' | b',' => {
                if memchr::memchr(b'\n', body).is_some() {
                    return Ok(None);
                }
            }
            b'#' if body == b"t" || body == b"f" => {}
            b'_' if body.is_empty() => {}
            b':' | b'(' | b'$' | b'=' | b'!' | b'*' | b'%' | b'~' | b'>' | b'|' => {
                let length = !matches!(kind, b':' | b'(');
                let limit = match kind {
                    b'$' | b'=' | b'!' => MAX_BULK,
                    _ => MAX_AGGREGATE,
                };
                let mut d = body;
                if let [first, tail @ ..] = d {
                    if *first == b'-' || (*first == b'+' && !length) {
                        neg = true;
                        d = tail;
                    }
                }
                if d.is_empty() || d.len() > 20 {
                    return Ok(None);
                }
                for &b in d {
                    if !b.is_ascii_digit() {
                        return Ok(None);
                    }
                    if length {
                        num = num * 10 + u64::from(b - b'0');
                        if num > limit {
                            return Ok(None);
                        }
                    }
                }
                digits = true;
            }
            _ => return Ok(None),
        }
        if kind == b'$' && !neg && self.depth == 0 {
            // A whole top-level bulk (a GET's answer): header, payload and CRLF in one step.
            let end = cr + 2 + num as usize;
            if rest.get(end..end + 2) == Some(&b"\r\n"[..]) {
                self.top = Top::Value;
                sink.reply(RespReply::Value);
                return Ok(Some(end + 2));
            }
        }
        self.start(kind)?;
        self.num = num;
        self.neg = neg;
        self.digits = digits;
        self.line_len = (body.len() + 1).min(u8::MAX as usize) as u8;
        self.end_line(sink)?;
        Ok(Some(cr + 2))
    }

    fn start(&mut self, b: u8) -> Result<(), RespError> {
        if !matches!(
            b,
            b'+' | b'-'
                | b':'
                | b'$'
                | b'*'
                | b'_'
                | b'#'
                | b','
                | b'('
                | b'!'
                | b'='
                | b'%'
                | b'~'
                | b'|'
                | b'>'
        ) {
            return Err(RespError::BadType(b));
        }
        if self.depth == 0 {
            self.top = match b {
                b'-' | b'!' => Top::Error,
                b'>' => Top::Push,
                _ => Top::Value,
            };
        }
        self.kind = b;
        self.num = 0;
        self.line_len = 0;
        self.neg = false;
        self.digits = false;
        self.phase = RespState::Line;
        Ok(())
    }

    fn line_byte(&mut self, b: u8) -> Result<(), RespError> {
        let first = self.line_len == 0;
        self.line_len = self.line_len.saturating_add(1);
        match b {
            b'\r' => {
                self.phase = RespState::LineLf;
                return Ok(());
            }
            b'\n' => return Err(RespError::MissingCrlf),
            _ => {}
        }
        match self.kind {
            b'+' | b'-' | b',' => Ok(()),
            b':' | b'(' => match b {
                b'-' | b'+' if first => {
                    self.neg = true;
                    Ok(())
                }
                b'0'..=b'9' => {
                    self.digits = true;
                    Ok(())
                }
                _ => Err(RespError::BadValue(self.kind)),
            },
            b'#' if first && (b == b't' || b == b'f') => Ok(()),
            b'#' | b'_' => Err(RespError::BadValue(self.kind)),
            // A length: `$ = ! * % ~ | >`.
            _ => match b {
                b'-' if first => {
                    self.neg = true;
                    Ok(())
                }
                b'0'..=b'9' => {
                    self.digits = true;
                    self.num = self.num * 10 + u64::from(b - b'0');
                    let (limit, err) = match self.kind {
                        b'$' | b'=' | b'!' => (MAX_BULK, RespError::BulkTooLong),
                        _ => (MAX_AGGREGATE, RespError::AggregateTooLong),
                    };
                    if self.num > limit {
                        return Err(if self.neg {
                            RespError::BadLength(self.kind)
                        } else {
                            err
                        });
                    }
                    Ok(())
                }
                _ => Err(RespError::BadLength(self.kind)),
            },
        }
    }

    /// The header line of `kind` is complete.
    fn end_line(&mut self, sink: &mut impl RespSink) -> Result<(), RespError> {
        self.phase = RespState::Type;
        let kind = self.kind;
        match kind {
            b'+' | b'-' | b',' => self.value_done(false, sink),
            b':' | b'(' if self.digits => self.value_done(false, sink),
            b'#' if self.line_len == 2 => self.value_done(false, sink),
            b'_' if self.line_len == 1 => self.value_done(true, sink),
            b':' | b'(' | b'#' | b'_' => return Err(RespError::BadValue(kind)),
            _ if !self.digits => return Err(RespError::BadLength(kind)),
            _ if self.neg => {
                if self.num != 1 || !matches!(kind, b'$' | b'*') {
                    return Err(RespError::BadLength(kind));
                }
                self.value_done(true, sink);
            }
            b'$' | b'=' | b'!' => {
                self.phase = if self.num == 0 {
                    RespState::PayloadCr
                } else {
                    RespState::Payload
                };
            }
            _ => self.open(sink)?,
        }
        Ok(())
    }

    /// An aggregate header of `num` entries.
    fn open(&mut self, sink: &mut impl RespSink) -> Result<(), RespError> {
        let attr = self.kind == b'|';
        let n = if matches!(self.kind, b'%' | b'|') {
            self.num * 2
        } else {
            self.num
        };
        if n == 0 {
            // An empty attribute decorates nothing; an empty aggregate is a value.
            if !attr {
                self.value_done(false, sink);
            }
            return Ok(());
        }
        if self.depth >= self.max_depth {
            return Err(RespError::TooDeep(self.max_depth));
        }
        let d = self.depth as usize;
        self.stack[d] = n as u32;
        if attr {
            self.attrs |= 1 << d;
        }
        self.depth += 1;
        Ok(())
    }

    /// A value is complete: count it in its parent, closing every aggregate it completes.
    fn value_done(&mut self, mut null: bool, sink: &mut impl RespSink) {
        loop {
            if self.depth == 0 {
                match self.top {
                    Top::Push => sink.push(),
                    Top::Error => sink.reply(RespReply::Error),
                    Top::Value if null => sink.reply(RespReply::Null),
                    Top::Value => sink.reply(RespReply::Value),
                }
                return;
            }
            let d = (self.depth - 1) as usize;
            self.stack[d] -= 1;
            if self.stack[d] > 0 {
                return;
            }
            self.depth -= 1;
            // The closed aggregate is the value now, and it is not null.
            null = false;
            if self.attrs & (1 << d) != 0 {
                // An attribute is complete: it is not a value of its parent.
                self.attrs &= !(1 << d);
                return;
            }
        }
    }
}
