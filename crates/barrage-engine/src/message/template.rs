//! A message with its placeholders located ([`Template`], its [`Piece`]s) and the values one
//! is rendered with ([`Fill`]); numbers written as digits ([`digits`], [`push_u64`],
//! [`SeqMarks`], [`Reserved`]). Compiled by `parse.rs` and `binary.rs`, rendered by `render.rs`.

use super::int::{IntKind, NumSrc};

/// Two ASCII digits for each of 0..100.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// How many decimal digits `n` has.
#[inline]
pub fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Appends `n` in decimal: the digits are formed in a stack array, without `fmt` (which costs
/// more than the rest of a rendered message).
#[inline]
pub fn push_u64(out: &mut Vec<u8>, n: u64) {
    let mut buf = [0u8; 20];
    let digits = &mut buf[..digits(n)];
    write_digits(digits, n);
    out.extend_from_slice(digits);
}

/// Writes a message into room made for it at the end of a buffer ([`Reserved::open`] grows the
/// buffer by an upper bound of the message, [`Reserved::close`] cuts it to what was written):
/// with the room known, short copies and numbers are written in place, with no `memcpy`
/// call and no capacity check per piece (this halved the cost of rendering a redis
/// `SET key:{seq} {conn}`, ~120 to ~60 ns).
pub struct Reserved<'a> {
    pub(super) buf: &'a mut Vec<u8>,
    pub(super) start: usize,
    pub(super) at: usize,
}

impl<'a> Reserved<'a> {
    /// Reserved for at most `bound` bytes after what `buf` holds.
    #[inline]
    pub fn open(buf: &'a mut Vec<u8>, bound: usize) -> Self {
        let start = buf.len();
        buf.resize(start + bound, 0);
        Self {
            buf,
            start,
            at: start,
        }
    }

    /// Cut the buffer to what was written; returns the bytes written.
    #[inline]
    pub fn close(self) -> usize {
        self.buf.truncate(self.at);
        self.at - self.start
    }

    /// Where the next byte goes (an absolute index into the buffer).
    #[inline]
    pub fn at(&self) -> usize {
        self.at
    }

    #[inline]
    pub fn put(&mut self, b: &[u8]) {
        let n = b.len();
        let d = &mut self.buf[self.at..self.at + n];
        // Two overlapping fixed-size copies cover 4..=16 bytes without a call.
        match n {
            0 => {}
            1..=3 => {
                d[0] = b[0];
                d[n / 2] = b[n / 2];
                d[n - 1] = b[n - 1];
            }
            4..=7 => {
                d[..4].copy_from_slice(&b[..4]);
                d[n - 4..].copy_from_slice(&b[n - 4..]);
            }
            8..=16 => {
                d[..8].copy_from_slice(&b[..8]);
                d[n - 8..].copy_from_slice(&b[n - 8..]);
            }
            _ => d.copy_from_slice(b),
        }
        self.at += n;
    }

    /// `n` in decimal, written in place.
    #[inline]
    pub fn num(&mut self, n: u64) {
        let w = digits(n);
        write_digits(&mut self.buf[self.at..self.at + w], n);
        self.at += w;
    }

    /// `n` in decimal at `at` (a field made earlier, exactly as wide as `n`'s digits).
    #[inline]
    pub fn num_at(&mut self, at: usize, n: u64) {
        write_digits(&mut self.buf[at..at + digits(n)], n);
    }

    /// Move what was written from `from` on by `by` bytes (a field that turned out wider or
    /// narrower than guessed); the room must have space for it.
    pub fn shift(&mut self, from: usize, by: isize) {
        let to = from.checked_add_signed(by).expect("shift before the start");
        self.buf.copy_within(from..self.at, to);
        self.at = self
            .at
            .checked_add_signed(by)
            .expect("shift before the start");
    }
}

/// Where the `{seq}` fields of a written message end (absolute indexes into the buffer it was
/// written to), at most [`SeqMarks::MAX`] of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeqMarks {
    ends: [u32; SeqMarks::MAX],
    n: u8,
}

impl SeqMarks {
    /// The most fields marked; a message with more is rendered whole every time.
    pub const MAX: usize = 8;

    #[inline]
    pub(super) fn push(&mut self, end: usize) {
        if let Some(e) = self.ends.get_mut(self.n as usize) {
            *e = end as u32;
            self.n += 1;
        }
    }

    /// The ends marked.
    #[inline]
    pub fn ends(&self) -> &[u32] {
        &self.ends[..self.n as usize]
    }

    /// How many ends are marked.
    #[inline]
    pub fn len(&self) -> usize {
        self.n as usize
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The bytes from mark `from` on moved by `by` (a value moved behind its length field).
    pub fn shift(&mut self, from: usize, by: isize) {
        for e in &mut self.ends[from..self.n as usize] {
            *e = (*e as isize + by) as u32;
        }
    }

    pub fn clear(&mut self) {
        self.n = 0;
    }
}

/// Counts the decimal field that ends at `end` in `bytes` up by one, in place; the caller
/// knows that the next number has as many digits (no carry leaves the field).
#[inline]
pub fn bump_digits(bytes: &mut [u8], end: usize) {
    let mut at = end;
    while at > 0 {
        at -= 1;
        if bytes[at] == b'9' {
            bytes[at] = b'0';
        } else {
            bytes[at] += 1;
            return;
        }
    }
}

/// `n` in decimal filling `out` exactly (`out.len()` = its digits), two digits per step from
/// a table (a division by 100 instead of two by 10).
#[inline]
fn write_digits(out: &mut [u8], mut n: u64) {
    let mut at = out.len();
    while n >= 100 {
        let d = (n % 100) as usize * 2;
        n /= 100;
        at -= 2;
        out[at..at + 2].copy_from_slice(&PAIRS[d..d + 2]);
    }
    if n >= 10 {
        let d = n as usize * 2;
        out[at - 2..at].copy_from_slice(&PAIRS[d..d + 2]);
    } else {
        out[at - 1] = b'0' + n as u8;
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Piece {
    Lit(Box<[u8]>),
    Conn,
    Seq,
    TsUs,
    /// `{seq%N}`: seq modulo N (N > 0).
    SeqMod(u64),
    /// `{rand%N}`: uniform in 0..N from a hash of (conn, seq).
    RandMod(u64),
    /// `{conn%N}`: the connection's number modulo N (a room or topic of N).
    ConnMod(u64),
    /// `{name}`: the value in this slot of the user's [`Vars`](crate::capture::Vars).
    Var(u32),
    /// A binary number ([`binary`](super::binary)).
    Int(IntKind, NumSrc),
    /// The byte length of the next `span` pieces plus `adjust`, as a binary number.
    Len {
        kind: IntKind,
        adjust: i64,
        span: u32,
    },
}

/// A message with its placeholders located.
#[derive(Clone, PartialEq, Eq)]
pub struct Template {
    pub(super) raw: Box<[u8]>,
    /// `None` when the message has no placeholder: then `raw` is sent as is.
    pub(super) pieces: Option<Box<[Piece]>>,
    /// The most bytes it renders to (its literals and 20 digits per number), or `None` when
    /// it has `{name}` variables, whose values have no bound.
    pub(super) bound: Option<usize>,
    /// A length field (`len:TYPE-N(...)`) covers `{name}` variables short enough to take it
    /// below zero: each message is checked ([`Template::len_fault`]) before it is sent.
    pub(super) underflow: bool,
}

/// Values for the placeholders of one message.
#[derive(Clone, Copy, Debug)]
pub struct Fill {
    pub conn: u64,
    pub seq: u64,
    pub ts_us: u64,
}
