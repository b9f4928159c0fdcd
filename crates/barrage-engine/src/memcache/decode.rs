//! memcached text replies -> one event per reply, streaming over byte slices.
//!
//! A reply line may be cut by a read anywhere: a line that is not whole in one read is
//! gathered in a fixed inline buffer of [`MAX_LINE`] bytes (a `VALUE` header with a 250-byte
//! key fits); a whole line is parsed in place. `VALUE` data blocks are skipped by count, never
//! copied, so data containing `END\r\n` cannot confuse the decoder.

/// The longest reply line accepted (a `VALUE` header: 6 + 250-byte key + flags, bytes, cas).
pub const MAX_LINE: usize = 320;
/// The largest `VALUE` data block accepted (memcached's own item size ceiling is 1 GB).
pub const MAX_VALUE: u64 = 1 << 30;

/// One complete reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McReply {
    /// `VALUE ...` blocks (that many) then `END`: a (multi-)get that found something.
    Hits(u32),
    /// `END` alone: a get that found nothing.
    Miss,
    Stored,
    NotStored,
    Exists,
    NotFound,
    Deleted,
    Touched,
    /// A decimal number: the new value after incr/decr.
    Number,
    /// `ERROR`, `CLIENT_ERROR ...` or `SERVER_ERROR ...`.
    Error,
}

impl McReply {
    /// The request found nothing to act on (get miss, delete/incr/touch of a missing key).
    pub fn is_miss(self) -> bool {
        matches!(self, Self::Miss | Self::NotFound)
    }
}

/// Receives one event per complete reply, in stream order.
pub trait McSink {
    fn reply(&mut self, reply: McReply);
}

/// The server sent something that is not a memcached text reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McError {
    #[error("unexpected memcached reply line '{0}'")]
    Unexpected(String),
    #[error("malformed memcached VALUE header '{0}'")]
    BadValue(String),
    #[error("a memcached reply line longer than {MAX_LINE} bytes")]
    LineTooLong,
    #[error("a memcached reply line or data block is not terminated by CRLF")]
    MissingCrlf,
    #[error("a memcached VALUE of {0} bytes exceeds the {MAX_VALUE}-byte limit")]
    ValueTooLarge(u64),
    #[error("'{0}' inside a get reply, where VALUE or END was expected")]
    InsideGet(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReplyState {
    /// Reading a reply line (possibly gathered in `line`).
    Line,
    /// An error line too long for the buffer: skip to its end.
    SkipLine,
    /// `remaining` data bytes of a VALUE block left to skip.
    Data,
    DataCr,
    DataLf,
}

/// Per-connection memcached reply decoder: fixed-size state, no heap.
#[derive(Clone, Debug)]
pub struct McDecoder {
    line: [u8; MAX_LINE],
    line_len: u16,
    phase: ReplyState,
    /// VALUE blocks seen in the get reply in progress.
    hits: u32,
    remaining: u64,
    /// While skipping a long error line: its last byte so far was `\r`.
    skipped_cr: bool,
    failed: Option<McError>,
}

impl Default for McDecoder {
    fn default() -> Self {
        Self {
            line: [0; MAX_LINE],
            line_len: 0,
            phase: ReplyState::Line,
            hits: 0,
            remaining: 0,
            skipped_cr: false,
            failed: None,
        }
    }
}

impl McDecoder {
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// True between replies.
    pub fn is_idle(&self) -> bool {
        self.phase == ReplyState::Line && self.line_len == 0 && self.hits == 0
    }

    /// Feed the bytes of one read. After an error every call returns it again until `reset`.
    pub fn feed(&mut self, data: &[u8], sink: &mut impl McSink) -> Result<(), McError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.feed_inner(data, sink)
            .inspect_err(|e| self.failed = Some(e.clone()))
    }

    fn feed_inner(&mut self, data: &[u8], sink: &mut impl McSink) -> Result<(), McError> {
        let mut i = 0;
        while i < data.len() {
            let rest = &data[i..];
            match self.phase {
                ReplyState::Line => {
                    let Some(nl) = memchr::memchr(b'\n', rest) else {
                        self.gather(rest, sink)?;
                        return Ok(());
                    };
                    i += nl + 1;
                    if self.line_len == 0 {
                        // The whole line is in this read: parse it in place.
                        self.line_done(&rest[..=nl], sink)?;
                    } else if self.gather(&rest[..=nl], sink)? {
                        let (buf, n) = (self.line, self.line_len as usize);
                        self.line_len = 0;
                        self.line_done(&buf[..n], sink)?;
                    }
                }
                ReplyState::SkipLine => match memchr::memchr(b'\n', rest) {
                    // Skipped or parsed in place, a line ends in CRLF.
                    Some(nl) => {
                        let cr = if nl == 0 {
                            self.skipped_cr
                        } else {
                            rest[nl - 1] == b'\r'
                        };
                        if !cr {
                            return Err(McError::MissingCrlf);
                        }
                        i += nl + 1;
                        self.phase = ReplyState::Line;
                        sink.reply(McReply::Error);
                    }
                    None => {
                        self.skipped_cr = rest.last() == Some(&b'\r');
                        return Ok(());
                    }
                },
                ReplyState::Data => {
                    let take = self.remaining.min(rest.len() as u64);
                    self.remaining -= take;
                    i += take as usize;
                    if self.remaining == 0 {
                        self.phase = ReplyState::DataCr;
                    }
                }
                ReplyState::DataCr | ReplyState::DataLf => {
                    let cr = self.phase == ReplyState::DataCr;
                    if rest[0] != if cr { b'\r' } else { b'\n' } {
                        return Err(McError::MissingCrlf);
                    }
                    i += 1;
                    self.phase = if cr {
                        ReplyState::DataLf
                    } else {
                        ReplyState::Line
                    };
                }
            }
        }
        Ok(())
    }

    /// Keep part of a line that a read cut. `Ok(false)`: the line was a long error line,
    /// reported (when whole) or being skipped, not kept.
    fn gather(&mut self, part: &[u8], sink: &mut impl McSink) -> Result<bool, McError> {
        let at = self.line_len as usize;
        if at + part.len() <= MAX_LINE {
            self.line[at..at + part.len()].copy_from_slice(part);
            self.line_len += part.len() as u16;
            return Ok(true);
        }
        // Long error messages are tolerated: their text is not needed.
        let mut head = [0u8; 13];
        let from_line = at.min(head.len());
        head[..from_line].copy_from_slice(&self.line[..from_line]);
        let from_part = (head.len() - from_line).min(part.len());
        head[from_line..from_line + from_part].copy_from_slice(&part[..from_part]);
        // (Inside a get reply an error line is a protocol error, however long.)
        if self.hits > 0 || (&head != b"CLIENT_ERROR " && &head != b"SERVER_ERROR ") {
            return Err(McError::LineTooLong);
        }
        // The byte before `part`'s last (in `part`, or the last one gathered).
        let before_last = match part.len() {
            0 | 1 => at.checked_sub(1).map(|j| self.line[j]),
            n => Some(part[n - 2]),
        };
        self.line_len = 0;
        match part.last() {
            Some(b'\n') if before_last == Some(b'\r') => sink.reply(McReply::Error),
            Some(b'\n') => return Err(McError::MissingCrlf),
            last => {
                self.skipped_cr = last == Some(&b'\r');
                self.phase = ReplyState::SkipLine;
            }
        }
        Ok(false)
    }

    /// A whole line, `\n` included.
    fn line_done(&mut self, line: &[u8], sink: &mut impl McSink) -> Result<(), McError> {
        let line = line.strip_suffix(b"\r\n").ok_or(McError::MissingCrlf)?;
        if let Some(header) = line.strip_prefix(b"VALUE ") {
            let bytes = value_bytes(header).ok_or_else(|| McError::BadValue(shown(line)))?;
            if bytes > MAX_VALUE {
                return Err(McError::ValueTooLarge(bytes));
            }
            self.hits = self.hits.saturating_add(1);
            self.remaining = bytes;
            self.phase = if bytes == 0 {
                ReplyState::DataCr
            } else {
                ReplyState::Data
            };
            return Ok(());
        }
        if line == b"END" {
            let hits = std::mem::take(&mut self.hits);
            sink.reply(if hits == 0 {
                McReply::Miss
            } else {
                McReply::Hits(hits)
            });
            return Ok(());
        }
        if self.hits > 0 {
            return Err(McError::InsideGet(shown(line)));
        }
        let reply = match line {
            b"STORED" => McReply::Stored,
            b"NOT_STORED" => McReply::NotStored,
            b"EXISTS" => McReply::Exists,
            b"NOT_FOUND" => McReply::NotFound,
            b"DELETED" => McReply::Deleted,
            b"TOUCHED" => McReply::Touched,
            b"ERROR" => McReply::Error,
            l if l.starts_with(b"CLIENT_ERROR") || l.starts_with(b"SERVER_ERROR") => McReply::Error,
            l if is_number(l) => McReply::Number,
            l => return Err(McError::Unexpected(shown(l))),
        };
        sink.reply(reply);
        Ok(())
    }
}

/// `<key> <flags> <bytes> [<cas>]` -> bytes.
fn value_bytes(header: &[u8]) -> Option<u64> {
    let mut f = header.split(|c| *c == b' ');
    let key = f.next()?;
    let flags = f.next()?;
    let bytes = f.next()?;
    let cas = f.next();
    if key.is_empty() || f.next().is_some() || !is_digits(flags) || !is_digits(bytes) {
        return None;
    }
    if cas.is_some_and(|c| !is_digits(c)) {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

fn is_digits(b: &[u8]) -> bool {
    !b.is_empty() && b.len() <= 20 && b.iter().all(u8::is_ascii_digit)
}

/// incr/decr's reply: digits (older servers pad with spaces).
fn is_number(l: &[u8]) -> bool {
    let digits = l.iter().take_while(|c| c.is_ascii_digit()).count();
    digits > 0 && l[digits..].iter().all(|c| *c == b' ')
}

/// A reply line for an error message: printable, at most 60 characters.
fn shown(line: &[u8]) -> String {
    let mut s = crate::message::escape(&line[..line.len().min(60)]);
    if line.len() > 60 {
        s.push_str("...");
    }
    s
}
