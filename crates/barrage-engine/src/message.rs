//! Messages: escape parsing, placeholders and rendering.
//!
//! A message is parsed once into a template. Without placeholders it is one pre-built byte
//! string reused for every send (no work per message); with `{conn}`, `{seq}` or `{ts_us}` it
//! is rendered into the worker's scratch buffer, which is reused, so no send allocates.
//! `--command` templates ([`Template::try_new`]) also take the key ranges `{seq%N}` and
//! `{rand%N}`; `{rand%N}` is a stateless hash of (conn, seq), not an RNG: the same run renders
//! the same bytes, and no connection carries generator state.
//!
//! `{secret:NAME}` is different: it is filled once, at plan time, from the environment
//! variable NAME ([`fill_secrets`]), before the template is built, so the secret is plain
//! literal bytes in the template and costs nothing per send; the caller keeps the unfilled text
//! for everything it shows.
//!
//! Scenario templates ([`Template::with_vars`]) also take `{name}` and `{row.NAME}`: the
//! caller resolves each name to a slot of the user's [`Vars`] when the scenario is compiled,
//! so rendering ([`Template::render_vars_into`]) indexes a slot and never looks a name up.

use std::fmt;

use crate::capture::Vars;

pub mod binary;
use binary::{IntKind, NumSrc};

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
    buf: &'a mut Vec<u8>,
    start: usize,
    at: usize,
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
    fn push(&mut self, end: usize) {
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

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EscapeError {
    #[error("dangling backslash at the end; write \\\\ for a backslash")]
    Dangling,
    #[error("unknown escape \\{0}; known: \\r \\n \\t \\\\ \\0 \\xHH")]
    Unknown(char),
    #[error("\\x must be followed by two hex digits, e.g. \\x0a")]
    BadHex,
}

/// Turn `\r \n \t \\ \0 \xHH` into bytes; everything else is taken literally (as UTF-8).
pub fn unescape(s: &str) -> Result<Vec<u8>, EscapeError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = *b.get(i + 1).ok_or(EscapeError::Dangling)?;
        i += 2;
        out.push(match c {
            b'r' => b'\r',
            b'n' => b'\n',
            b't' => b'\t',
            b'\\' => b'\\',
            b'0' => 0,
            b'x' => {
                let hex = b.get(i..i + 2).ok_or(EscapeError::BadHex)?;
                let hex = std::str::from_utf8(hex).map_err(|_| EscapeError::BadHex)?;
                i += 2;
                u8::from_str_radix(hex, 16).map_err(|_| EscapeError::BadHex)?
            }
            _ => {
                let ch = s[i - 1..].chars().next().unwrap_or('?');
                return Err(EscapeError::Unknown(ch));
            }
        });
    }
    Ok(out)
}

/// Printable form of bytes with the same escapes `unescape` reads (for reports).
pub fn escape(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len());
    for &c in b {
        match c {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s
}

/// A `{secret:NAME}` placeholder that cannot be filled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("{{secret:{0}}} needs the environment variable {0}, which is not set; export it")]
    Missing(String),
    #[error(
        "'{{secret:{0}': write {{secret:NAME}} with NAME an environment variable name \
         (letters, digits, _)"
    )]
    BadName(String),
}

const SECRET_OPEN: &[u8] = b"{secret:";

/// Replaces every `{secret:NAME}` in `raw` with `lookup(NAME)` (the value of environment
/// variable NAME). Bytes without the placeholder are returned unchanged.
pub fn fill_secrets(
    raw: &[u8],
    lookup: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
) -> Result<Vec<u8>, SecretError> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let Some(tag) = secret_tag(&raw[i..]) else {
            out.push(raw[i]);
            i += 1;
            continue;
        };
        let (len, name) = tag?;
        let value = lookup(name).ok_or_else(|| SecretError::Missing(name.to_string()))?;
        out.extend_from_slice(&value);
        i += len;
    }
    Ok(out)
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
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
    /// `{name}`: the value in this slot of the user's [`Vars`].
    Var(u32),
    /// A binary number ([`binary`]).
    Int(IntKind, NumSrc),
    /// The byte length of the next `span` pieces plus `adjust`, as a binary number.
    Len {
        kind: IntKind,
        adjust: i64,
        span: u32,
    },
}

/// A malformed `{seq%N}` or `{rand%N}` placeholder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}': write {{seq%N}}, {{rand%N}}, {{conn%N}} or {{user%N}} with N a whole number from 1 to 2^64-1")]
pub struct TemplateError(pub String);

/// A scenario template ([`Template::with_vars`]) that cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VarTemplateError {
    #[error(transparent)]
    Range(#[from] TemplateError),
    #[error(
        "{{{0}}} is not defined: capture it in an earlier step, name a data column as \
         {{row.NAME}}, or use a built-in ({{conn}}, {{seq}}, {{ts_us}})"
    )]
    Unknown(String),
    #[error(transparent)]
    Secret(#[from] SecretError),
}

/// `{name}` at the start of `b` (a letter or `_`, then letters, digits, `_`, `-`, `.`): the
/// name; `None` when `b` does not start with one (then the `{` is literal text).
fn var_name(b: &[u8]) -> Option<&str> {
    let rest = b.strip_prefix(b"{")?;
    let len = rest
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
        .count();
    let first = *rest.first()?;
    if len == 0 || !(first.is_ascii_alphabetic() || first == b'_') || rest.get(len) != Some(&b'}') {
        return None;
    }
    std::str::from_utf8(&rest[..len]).ok()
}

/// Resolves a variable name to its slot.
type Resolve<'a> = &'a dyn Fn(&str) -> Option<usize>;

/// Looks up the value of `{secret:NAME}` (the environment variable NAME).
pub type SecretLookup<'a> = &'a dyn Fn(&str) -> Option<Vec<u8>>;

/// `{secret:NAME}` at the start of `b`: its length and NAME; `None` when `b` does not start
/// with `{secret:`, an error when what follows is not a name and `}`.
fn secret_tag(b: &[u8]) -> Option<Result<(usize, &str), SecretError>> {
    let rest = b.strip_prefix(SECRET_OPEN)?;
    let len = rest
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    // `len` bytes are ASCII: the conversion cannot fail.
    let name = std::str::from_utf8(&rest[..len]).unwrap_or_default();
    if len == 0 || rest.get(len) != Some(&b'}') || rest[0].is_ascii_digit() {
        return Some(Err(SecretError::BadName(name.to_string())));
    }
    Some(Ok((SECRET_OPEN.len() + len + 1, name)))
}

/// splitmix64's finalizer: a bijective mix of 64 bits.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `{rand%n}` for (conn, seq): a value in 0..n, the same for the same inputs (n > 0).
// Never inlined: inlined, the compiler computed the hash for every placeholder of every
// message (to pick a value without a branch), which tripled the cost of rendering one.
#[inline(never)]
pub fn rand_mod(conn: u64, seq: u64, n: u64) -> u64 {
    let h = splitmix64(splitmix64(conn) ^ seq);
    // Multiply-high instead of `%`: no modulo bias worth the name, no division.
    ((u128::from(h) * u128::from(n)) >> 64) as u64
}

/// `{seq%` or `{rand%` at the start of `b`: the placeholder's length and piece, or an error
/// naming the text when it is malformed; `None` when `b` starts with neither.
fn modulo_tag(b: &[u8]) -> Option<Result<(usize, Piece), TemplateError>> {
    let (open, kind) = if b.starts_with(b"{seq%") {
        (5, 0)
    } else if b.starts_with(b"{rand%") {
        (6, 1)
    } else if b.starts_with(b"{conn%") {
        (6, 2)
    } else if b.starts_with(b"{user%") {
        // A scenario user's number is its connection's.
        (6, 2)
    } else {
        return None;
    };
    let digits = b[open..].iter().take_while(|c| c.is_ascii_digit()).count();
    let end = open + digits;
    let n = std::str::from_utf8(&b[open..end])
        .ok()
        .and_then(|d| d.parse::<u64>().ok())
        .filter(|n| *n > 0);
    Some(match (n, b.get(end)) {
        (Some(n), Some(b'}')) => Ok((
            end + 1,
            match kind {
                0 => Piece::SeqMod(n),
                1 => Piece::RandMod(n),
                _ => Piece::ConnMod(n),
            },
        )),
        _ => {
            // The placeholder as written: up to its closing brace when there is one nearby.
            let close = b.iter().take(64).position(|&c| c == b'}');
            let shown = &b[..close.map_or((end + 1).min(b.len()), |i| i + 1)];
            Err(TemplateError(String::from_utf8_lossy(shown).into_owned()))
        }
    })
}

/// A message with its placeholders located.
#[derive(Clone, PartialEq, Eq)]
pub struct Template {
    raw: Box<[u8]>,
    /// `None` when the message has no placeholder: then `raw` is sent as is.
    pieces: Option<Box<[Piece]>>,
    /// The most bytes it renders to (its literals and 20 digits per number), or `None` when
    /// it has `{name}` variables, whose values have no bound.
    bound: Option<usize>,
    /// A length field (`len:TYPE-N(...)`) covers `{name}` variables short enough to take it
    /// below zero: each message is checked ([`Template::len_fault`]) before it is sent.
    underflow: bool,
}

impl fmt::Debug for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Template({:?})", escape(&self.raw))
    }
}

/// Values for the placeholders of one message.
#[derive(Clone, Copy, Debug)]
pub struct Fill {
    pub conn: u64,
    pub seq: u64,
    pub ts_us: u64,
}

impl Template {
    /// Locate `{conn}`, `{seq}`, `{ts_us}` and the key-range placeholders `{seq%N}` and
    /// `{rand%N}` in already unescaped bytes (for `--command`); a malformed `{seq%...}` or
    /// `{rand%...}` is an error.
    pub fn try_new(raw: Vec<u8>) -> Result<Self, TemplateError> {
        Self::build(raw, true, None, None).map_err(|e| match e {
            VarTemplateError::Range(e) => e,
            // Unreachable: without a resolver no name is looked up, nor without a secret
            // lookup a secret.
            VarTemplateError::Unknown(n) => TemplateError(n),
            VarTemplateError::Secret(e) => TemplateError(e.to_string()),
        })
    }

    /// A scenario template: what [`Template::try_new`] takes, plus `{name}` and
    /// `{row.NAME}`, each resolved once by `resolve` to a slot of the user's [`Vars`]. A
    /// well-formed `{name}` that `resolve` does not know is an error; a `{` that does not
    /// start one (a JSON body's) is literal. Render with [`Template::render_vars_into`].
    pub fn with_vars(
        raw: Vec<u8>,
        resolve: impl Fn(&str) -> Option<usize>,
    ) -> Result<Self, VarTemplateError> {
        Self::build(raw, true, Some(&resolve), None)
    }

    /// [`Template::with_vars`] with each `{secret:NAME}` filled by `secret` into literal
    /// bytes (a scenario's templates). The value is never read as placeholders: a secret
    /// holding `{seq}` is sent as written.
    pub fn with_vars_and_secrets(
        raw: Vec<u8>,
        resolve: impl Fn(&str) -> Option<usize>,
        secret: SecretLookup,
    ) -> Result<Self, VarTemplateError> {
        Self::build(raw, true, Some(&resolve), Some(secret))
    }

    /// [`Template::try_new`] with each `{secret:NAME}` filled by `secret` into literal bytes
    /// (never read as placeholders).
    pub fn with_secrets(raw: Vec<u8>, secret: SecretLookup) -> Result<Self, VarTemplateError> {
        Self::build(raw, true, None, Some(secret))
    }

    /// The variable slots the template renders, in order of appearance (repeats included).
    pub fn var_slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.pieces.iter().flatten().filter_map(|p| match p {
            Piece::Var(slot) | Piece::Int(_, NumSrc::Var(slot)) => Some(*slot as usize),
            _ => None,
        })
    }

    /// Locate `{conn}`, `{seq}` and `{ts_us}` in already unescaped bytes; anything else,
    /// `{seq%N}` included, is literal text.
    pub fn new(raw: Vec<u8>) -> Self {
        match Self::build(raw, false, None, None) {
            Ok(t) => t,
            // Unreachable: only the key-range placeholders can fail, and they are off here.
            Err(_) => Self {
                raw: Box::default(),
                pieces: None,
                bound: Some(0),
                underflow: false,
            },
        }
    }

    /// `ranges`: also take `{seq%N}` and `{rand%N}` (strictly); `vars`: also `{name}`;
    /// `secrets`: fill `{secret:NAME}` into the literal text.
    fn build(
        raw: Vec<u8>,
        ranges: bool,
        vars: Option<Resolve>,
        secrets: Option<SecretLookup>,
    ) -> Result<Self, VarTemplateError> {
        const TAGS: [(&[u8], Piece); 3] = [
            (b"{conn}", Piece::Conn),
            (b"{seq}", Piece::Seq),
            (b"{ts_us}", Piece::TsUs),
        ];
        let mut pieces = Vec::new();
        // The message with its secrets filled, and the literal text since the last piece.
        let (mut filled, mut lit) = (Vec::with_capacity(raw.len()), Vec::new());
        let mut i = 0;
        while i < raw.len() {
            if let Some(lookup) = secrets {
                if let Some(tag) = secret_tag(&raw[i..]) {
                    let (len, name) = tag?;
                    let value =
                        lookup(name).ok_or_else(|| SecretError::Missing(name.to_string()))?;
                    filled.extend_from_slice(&value);
                    lit.extend_from_slice(&value);
                    i += len;
                    continue;
                }
            }
            let ranged = if ranges { modulo_tag(&raw[i..]) } else { None };
            let hit = match ranged {
                Some(Ok(found)) => Some(found),
                Some(Err(e)) => return Err(e.into()),
                None => TAGS
                    .iter()
                    .find(|(tag, _)| raw[i..].starts_with(tag))
                    .map(|(tag, piece)| (tag.len(), piece.clone())),
            };
            let hit = match (hit, vars) {
                (None, Some(resolve)) => match var_name(&raw[i..]) {
                    // `{user}`: the user's number, which is its connection's.
                    Some("user") => Some((6, Piece::Conn)),
                    Some(name) => {
                        let slot = resolve(name)
                            .and_then(|s| u32::try_from(s).ok())
                            .ok_or_else(|| VarTemplateError::Unknown(name.to_string()))?;
                        Some((name.len() + 2, Piece::Var(slot)))
                    }
                    None => None,
                },
                (hit, _) => hit,
            };
            match hit {
                Some((len, piece)) => {
                    if !lit.is_empty() {
                        pieces.push(Piece::Lit(std::mem::take(&mut lit).into()));
                    }
                    pieces.push(piece);
                    filled.extend_from_slice(&raw[i..i + len]);
                    i += len;
                }
                None => {
                    filled.push(raw[i]);
                    lit.push(raw[i]);
                    i += 1;
                }
            }
        }
        let dynamic = pieces.iter().any(|p| !matches!(p, Piece::Lit(_)));
        if dynamic && !lit.is_empty() {
            pieces.push(Piece::Lit(lit.into()));
        }
        let bound = if dynamic {
            pieces.iter().try_fold(0, |sum, p| match p {
                Piece::Lit(b) => Some(sum + b.len()),
                Piece::Var(_) => None,
                _ => Some(sum + 20),
            })
        } else {
            Some(filled.len())
        };
        Ok(Self {
            pieces: dynamic.then(|| pieces.into()),
            raw: filled.into(),
            bound,
            underflow: false,
        })
    }

    pub fn is_static(&self) -> bool {
        self.pieces.is_none()
    }

    /// A template of binary fields ([`binary::compile`]): one literal when nothing in it
    /// changes per message.
    fn of_pieces(pieces: Vec<Piece>) -> Template {
        let dynamic = pieces.iter().any(|p| {
            !matches!(
                p,
                Piece::Lit(_) | Piece::Len { .. } | Piece::Int(_, NumSrc::Lit(_))
            )
        });
        let fill = Fill {
            conn: 0,
            seq: 0,
            ts_us: 0,
        };
        if !dynamic {
            let mut raw = Vec::new();
            for i in 0..pieces.len() {
                put_piece(&pieces, i, fill, None, &mut raw);
            }
            return Template {
                raw: raw.into(),
                pieces: None,
                bound: None,
                underflow: false,
            }
            .with_bound();
        }
        let bound = pieces.iter().try_fold(0, |sum, p| match p {
            Piece::Lit(b) => Some(sum + b.len()),
            Piece::Var(_) | Piece::Int(_, NumSrc::Var(_)) => None,
            Piece::Int(k, _) | Piece::Len { kind: k, .. } => Some(sum + k.max_len()),
            _ => Some(sum + 20),
        });
        let underflow = (0..pieces.len()).any(|i| match pieces[i] {
            Piece::Len { adjust, span, .. } if adjust < 0 => {
                let end = (i + 1 + span as usize).min(pieces.len());
                (least_len(&pieces[i + 1..end]) as i128) + i128::from(adjust) < 0
            }
            _ => false,
        });
        Template {
            raw: Box::default(),
            pieces: Some(pieces.into()),
            bound,
            underflow,
        }
    }

    /// The fewest bytes the template renders to: its literals, a digit per number, nothing
    /// for a `{name}` (an empty value).
    pub fn least(&self) -> usize {
        match &self.pieces {
            None => self.raw.len(),
            Some(p) => least_len(p) as usize,
        }
    }

    /// A length field of this message that `vars` take below zero (`len:u8-4(str "{name}")`
    /// with a 3-byte name), said in a line; `None` when every length holds (always, unless
    /// one can: see [`Template::underflow`]). The message is not to be sent: a length below
    /// zero cannot be written.
    pub fn len_fault(&self, fill: Fill, vars: &Vars) -> Option<String> {
        if !self.underflow {
            return None;
        }
        let pieces = self.pieces.as_deref()?;
        pieces.iter().enumerate().find_map(|(i, p)| match *p {
            Piece::Len { kind, adjust, span } if adjust < 0 => {
                let end = (i + 1 + span as usize).min(pieces.len());
                let n: usize = (i + 1..end)
                    .map(|k| piece_len(pieces, k, fill, Some(vars)))
                    .sum();
                let v = n as i128 + i128::from(adjust);
                (v < 0).then(|| {
                    format!(
                        "len:{}{adjust}(...) covers {n} bytes here (its {{name}} values are \
                         short): the length would be {v}, below zero",
                        kind.name()
                    )
                })
            }
            _ => None,
        })
    }

    /// Whether a length field can go below zero for some values of its `{name}`s (then each
    /// message is checked with [`Template::len_fault`]).
    pub fn underflow(&self) -> bool {
        self.underflow
    }

    fn with_bound(mut self) -> Template {
        self.bound = Some(self.raw.len());
        self
    }

    /// The message bytes as written by the user (placeholders unexpanded, secrets filled).
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// Append the message for `fill` to `out`; returns its length.
    /// The length [`Template::render_into`] will write for `fill`, without writing it (a
    /// length prefix can then go first, with no copy).
    pub fn rendered_len(&self, fill: Fill) -> usize {
        self.len_with(fill, None)
    }

    /// [`Template::rendered_len`] for [`Template::render_vars_into`].
    pub fn rendered_len_vars(&self, fill: Fill, vars: &Vars) -> usize {
        self.len_with(fill, Some(vars))
    }

    fn len_with(&self, fill: Fill, vars: Option<&Vars>) -> usize {
        match &self.pieces {
            None => self.raw.len(),
            Some(pieces) => (0..pieces.len())
                .map(|i| piece_len(pieces, i, fill, vars))
                .sum(),
        }
    }

    /// A variable renders as nothing here: scenario templates use
    /// [`Template::render_vars_into`].
    pub fn render_into(&self, fill: Fill, out: &mut Vec<u8>) -> usize {
        self.render_with(fill, None, out)
    }

    /// Appends the message for `fill`, with `{name}` pieces taken from `vars` by slot (an
    /// unset variable renders as nothing); returns its length.
    pub fn render_vars_into(&self, fill: Fill, vars: &Vars, out: &mut Vec<u8>) -> usize {
        self.render_with(fill, Some(vars), out)
    }

    /// The most bytes [`Template::write`] writes, or `None` with `{name}` variables.
    pub fn bound(&self) -> Option<usize> {
        self.bound
    }

    /// Writes the message for `fill` into `room`, which has space for [`Template::bound`]
    /// bytes (a variable writes nothing: templates with variables use
    /// [`Template::render_vars_into`]).
    #[inline]
    pub fn write(&self, fill: Fill, room: &mut Reserved) {
        self.write_marked(fill, room, None);
    }

    /// How many `{seq}` fields the message has when `{seq}` and `{conn}` are its only
    /// placeholders (then the message for seq + 1 differs from the one for seq only in the
    /// digits of those fields, the connection being the same); `None` otherwise.
    pub fn seq_fields(&self) -> Option<usize> {
        let Some(pieces) = &self.pieces else {
            return Some(0);
        };
        pieces.iter().try_fold(0, |n, p| match p {
            Piece::Lit(_) | Piece::Conn => Some(n),
            Piece::Seq => Some(n + 1),
            // Binary fields: another seq is not the same bytes with other digits.
            _ => None,
        })
    }

    /// [`Template::write`], telling `marks` where each `{seq}` field ends.
    #[inline]
    pub fn write_marked(&self, fill: Fill, room: &mut Reserved, mut marks: Option<&mut SeqMarks>) {
        match &self.pieces {
            None => room.put(&self.raw),
            Some(pieces) => {
                let mut open = Lengths::default();
                for (i, p) in pieces.iter().enumerate() {
                    match p {
                        Piece::Lit(b) => room.put(b),
                        Piece::Conn => room.num(fill.conn),
                        Piece::Seq => {
                            room.num(fill.seq);
                            if let Some(m) = marks.as_deref_mut() {
                                m.push(room.at());
                            }
                        }
                        Piece::TsUs => room.num(fill.ts_us),
                        Piece::SeqMod(n) => room.num(fill.seq % n),
                        Piece::ConnMod(n) => room.num(fill.conn % n),
                        Piece::RandMod(n) => room.num(rand_mod(fill.conn, fill.seq, *n)),
                        Piece::Var(_) => {}
                        Piece::Int(kind, src) => {
                            let mut b = [0u8; 10];
                            let n = kind.encode(num_of(*src, fill, None), &mut b);
                            room.put(&b[..n]);
                        }
                        Piece::Len { .. } => open.start(pieces, i, fill, None, room),
                    }
                    open.close(i, room);
                }
            }
        }
    }

    fn render_with(&self, fill: Fill, vars: Option<&Vars>, out: &mut Vec<u8>) -> usize {
        if let (None, Some(bound)) = (vars, self.bound) {
            let mut room = Reserved::open(out, bound);
            self.write(fill, &mut room);
            return room.close();
        }
        let before = out.len();
        match &self.pieces {
            None => out.extend_from_slice(&self.raw),
            Some(pieces) => {
                let mut open = Lengths::default();
                for (i, p) in pieces.iter().enumerate() {
                    if let Piece::Len { .. } = p {
                        open.start(pieces, i, fill, vars, out);
                    } else {
                        put_piece(pieces, i, fill, vars, out);
                    }
                    open.close(i, out);
                }
            }
        }
        out.len() - before
    }
}

/// Where a message is written: a reserved room, or a growing buffer.
trait Writes {
    fn pos(&self) -> usize;
    fn put_bytes(&mut self, b: &[u8]);
    /// Overwrite bytes written earlier at absolute index `at`.
    fn patch(&mut self, at: usize, b: &[u8]);
    /// Drop the bytes `from..to`, moving what follows them back.
    fn close_gap(&mut self, from: usize, to: usize);
}

impl Writes for Reserved<'_> {
    #[inline]
    fn pos(&self) -> usize {
        self.at
    }
    #[inline]
    fn put_bytes(&mut self, b: &[u8]) {
        self.put(b);
    }
    #[inline]
    fn patch(&mut self, at: usize, b: &[u8]) {
        for (d, s) in self.buf[at..at + b.len()].iter_mut().zip(b) {
            *d = *s;
        }
    }
    fn close_gap(&mut self, from: usize, to: usize) {
        self.shift(to, from as isize - to as isize);
    }
}

impl Writes for Vec<u8> {
    #[inline]
    fn pos(&self) -> usize {
        self.len()
    }
    #[inline]
    fn put_bytes(&mut self, b: &[u8]) {
        self.extend_from_slice(b);
    }
    #[inline]
    fn patch(&mut self, at: usize, b: &[u8]) {
        for (d, s) in self[at..at + b.len()].iter_mut().zip(b) {
            *d = *s;
        }
    }
    fn close_gap(&mut self, from: usize, to: usize) {
        self.drain(from..to);
    }
}

/// Length fields whose fields are being written: each is written as zeros (as wide as its
/// widest value) and patched once the last piece it covers is written (no second pass over
/// the pieces); a variable-width one (varint) then moves what it covers back over the bytes
/// its value did not need.
/// Lengths patched in one pass, nested this deep; a deeper one is computed before it is written
/// (nesting is at most `binary::MAX_DEPTH`, so that walk is bounded).
const LENGTHS_OPEN: usize = 4;

struct Lengths {
    open: [Open; LENGTHS_OPEN],
    n: usize,
}

/// A length field being written: where its bytes are, where what it covers starts, and the
/// piece it ends after.
#[derive(Clone, Copy)]
struct Open {
    at: u32,
    start: u32,
    end: u32,
    kind: IntKind,
    adjust: i32,
}

impl Default for Lengths {
    #[inline]
    fn default() -> Self {
        const NONE: Open = Open {
            at: 0,
            start: 0,
            end: u32::MAX,
            kind: IntKind::Varint,
            adjust: 0,
        };
        Lengths {
            open: [NONE; LENGTHS_OPEN],
            n: 0,
        }
    }
}

impl Lengths {
    #[inline(always)]
    fn start(
        &mut self,
        pieces: &[Piece],
        i: usize,
        fill: Fill,
        vars: Option<&Vars>,
        out: &mut impl Writes,
    ) {
        let Piece::Len { kind, adjust, span } = pieces[i] else {
            return;
        };
        let small = i32::try_from(adjust).is_ok() && u32::try_from(out.pos() + 10).is_ok();
        if !small || self.n == self.open.len() || span == 0 {
            let mut b = [0u8; 10];
            let n = encode_at(pieces, i, fill, vars, &mut b);
            out.put_bytes(&b[..n]);
            return;
        }
        // Room for the widest value; a variable-width one shifts what it covers back once
        // its value is known.
        let at = out.pos() as u32;
        out.put_bytes(&[0u8; 10][..kind.max_len()]);
        self.open[self.n] = Open {
            at,
            start: out.pos() as u32,
            end: (i + span as usize) as u32,
            kind,
            adjust: adjust as i32,
        };
        self.n += 1;
    }

    /// Piece `i` was written: patch the lengths that end with it.
    #[inline(always)]
    fn close(&mut self, i: usize, out: &mut impl Writes) {
        if self.n > 0 && self.open[self.n - 1].end as usize == i {
            self.patch(i, out);
        }
    }

    #[inline(never)]
    fn patch(&mut self, i: usize, out: &mut impl Writes) {
        while self.n > 0 && self.open[self.n - 1].end as usize == i {
            self.n -= 1;
            let o = self.open[self.n];
            let v = ((out.pos() - o.start as usize) as i64 + i64::from(o.adjust)).max(0) as u64;
            let mut b = [0u8; 10];
            let n = o.kind.encode(v, &mut b);
            out.patch(o.at as usize, &b[..n]);
            let room = o.start - o.at;
            if n < room as usize {
                out.close_gap(o.at as usize + n, o.start as usize);
            }
        }
    }
}

impl Template {
    /// [`Template::render_vars_into`] for a request head: a variable's CR and LF are written
    /// as spaces, so that a captured value cannot end a header line (or add one).
    pub fn render_head_into(&self, fill: Fill, vars: &Vars, out: &mut Vec<u8>) {
        let Some(pieces) = &self.pieces else {
            out.extend_from_slice(&self.raw);
            return;
        };
        for (i, p) in pieces.iter().enumerate() {
            if let Piece::Var(slot) = p {
                out.extend(var(Some(vars), *slot).iter().map(|&b| match b {
                    b'\r' | b'\n' => b' ',
                    b => b,
                }));
            } else {
                put_piece(pieces, i, fill, Some(vars), out);
            }
        }
    }
}

/// The fewest bytes `pieces` render to (a length field's own bytes, not what it covers:
/// those are among the pieces).
fn least_len(pieces: &[Piece]) -> u64 {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Lit(b) => b.len() as u64,
            Piece::Var(_) => 0,
            Piece::Int(k, _) | Piece::Len { kind: k, .. } => k.min_len() as u64,
            _ => 1,
        })
        .sum()
}

#[inline]
fn put_piece(pieces: &[Piece], i: usize, fill: Fill, vars: Option<&Vars>, out: &mut Vec<u8>) {
    match &pieces[i] {
        Piece::Lit(b) => out.extend_from_slice(b),
        Piece::Conn => push_u64(out, fill.conn),
        Piece::Seq => push_u64(out, fill.seq),
        Piece::TsUs => push_u64(out, fill.ts_us),
        Piece::SeqMod(n) => push_u64(out, fill.seq % n),
        Piece::ConnMod(n) => push_u64(out, fill.conn % n),
        Piece::RandMod(n) => push_u64(out, rand_mod(fill.conn, fill.seq, *n)),
        Piece::Var(slot) => out.extend_from_slice(var(vars, *slot)),
        Piece::Int(..) | Piece::Len { .. } => {
            let mut b = [0u8; 10];
            let n = encode_at(pieces, i, fill, vars, &mut b);
            out.extend_from_slice(&b[..n]);
        }
    }
}

/// The bytes piece `i` renders to.
fn piece_len(pieces: &[Piece], i: usize, fill: Fill, vars: Option<&Vars>) -> usize {
    match &pieces[i] {
        Piece::Lit(b) => b.len(),
        Piece::Conn => digits(fill.conn),
        Piece::Seq => digits(fill.seq),
        Piece::TsUs => digits(fill.ts_us),
        Piece::SeqMod(n) => digits(fill.seq % n),
        Piece::ConnMod(n) => digits(fill.conn % n),
        Piece::RandMod(n) => digits(rand_mod(fill.conn, fill.seq, *n)),
        Piece::Var(slot) => var(vars, *slot).len(),
        Piece::Int(kind, src) => kind.len(num_of(*src, fill, vars)),
        // A fixed width needs no value (no walk of what it covers).
        Piece::Len {
            kind: k @ IntKind::Fixed { .. },
            ..
        } => k.max_len(),
        Piece::Len { kind, .. } => kind.len(len_value(pieces, i, fill, vars)),
    }
}

/// The value of length field `i`: the bytes of the pieces it covers, adjusted (at least 0).
fn len_value(pieces: &[Piece], i: usize, fill: Fill, vars: Option<&Vars>) -> u64 {
    let Piece::Len { adjust, span, .. } = pieces[i] else {
        return 0;
    };
    let end = (i + 1 + span as usize).min(pieces.len());
    let n: usize = (i + 1..end).map(|k| piece_len(pieces, k, fill, vars)).sum();
    (n as i64).saturating_add(adjust).max(0) as u64
}

/// A binary piece's value.
fn num_of(src: NumSrc, fill: Fill, vars: Option<&Vars>) -> u64 {
    match src {
        NumSrc::Lit(v) => v,
        NumSrc::Conn => fill.conn,
        NumSrc::Seq => fill.seq,
        NumSrc::TsUs => fill.ts_us,
        NumSrc::SeqMod(n) => fill.seq % n,
        NumSrc::ConnMod(n) => fill.conn % n,
        NumSrc::RandMod(n) => rand_mod(fill.conn, fill.seq, n),
        NumSrc::Var(slot) => binary::parse_num(var(vars, slot)),
    }
}

/// Binary piece `i` encoded into `out`; returns its length.
#[inline]
fn encode_at(
    pieces: &[Piece],
    i: usize,
    fill: Fill,
    vars: Option<&Vars>,
    out: &mut [u8; 10],
) -> usize {
    match pieces[i] {
        Piece::Int(kind, src) => kind.encode(num_of(src, fill, vars), out),
        Piece::Len { kind, .. } => kind.encode(len_value(pieces, i, fill, vars), out),
        _ => 0,
    }
}

fn var(vars: Option<&Vars>, slot: u32) -> &[u8] {
    vars.and_then(|v| v.get(slot as usize)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_writes_every_length_and_number_exactly() {
        let src: Vec<u8> = (0..64u8).map(|i| b'a' + i % 26).collect();
        for n in 0..=src.len() {
            let mut out = b"head".to_vec();
            let mut room = Reserved::open(&mut out, n + 40);
            room.put(&src[..n]);
            room.num(0);
            room.put(b"|");
            room.num(u64::MAX);
            assert_eq!(room.close(), n + 1 + 1 + 20);
            let want = [&b"head"[..], &src[..n], b"0|18446744073709551615"].concat();
            assert_eq!(out, want, "length {n}");
        }
        for n in [
            0,
            9,
            10,
            99,
            100,
            101,
            12_345,
            999_999_999,
            1 << 40,
            u64::MAX,
        ] {
            let mut a = b"x".to_vec();
            push_u64(&mut a, n);
            assert_eq!(a, format!("x{n}").as_bytes());
            assert_eq!(digits(n), n.to_string().len());
        }
        // A field guessed 1 digit wide, then widened to 3 and narrowed back.
        let mut out = Vec::new();
        let mut room = Reserved::open(&mut out, 32);
        room.put(b"0:");
        room.put(b"value");
        room.shift(1, 2);
        room.num_at(0, 123);
        room.shift(3, -1);
        room.num_at(0, 45);
        room.close();
        assert_eq!(out, b"45:value");
    }

    #[test]
    fn rendered_len_is_what_render_writes() {
        let texts: [&[u8]; 4] = [
            b"static",
            b"k:{seq}-{conn}",
            b"{ts_us}",
            b"{seq%1000}{rand%7}x",
        ];
        for text in texts {
            let t = Template::try_new(text.to_vec()).unwrap();
            for (conn, seq, ts_us) in [(0, 0, 0), (9, 10, 99), (123, 999_999, u64::MAX)] {
                let fill = Fill { conn, seq, ts_us };
                let mut out = Vec::new();
                assert_eq!(t.render_into(fill, &mut out), t.rendered_len(fill));
                assert_eq!(out.len(), t.rendered_len(fill));
            }
        }
    }

    #[test]
    fn escapes_table() {
        let ok: [(&str, &[u8]); 7] = [
            ("PING\\r\\n", b"PING\r\n"),
            ("a\\tb", b"a\tb"),
            ("\\\\", b"\\"),
            ("\\0", b"\0"),
            ("\\x41\\xff", b"A\xff"),
            ("plain", b"plain"),
            ("é", "é".as_bytes()),
        ];
        for (input, want) in ok {
            assert_eq!(unescape(input).unwrap(), want, "{input}");
        }
        assert_eq!(unescape("x\\"), Err(EscapeError::Dangling));
        assert_eq!(unescape("\\q"), Err(EscapeError::Unknown('q')));
        assert_eq!(unescape("\\x4"), Err(EscapeError::BadHex));
        assert_eq!(unescape("\\xzz"), Err(EscapeError::BadHex));
        assert_eq!(escape(b"A\r\n\x01\\"), "A\\r\\n\\x01\\\\");
        assert_eq!(unescape(&escape(b"\x00\xfe\t")).unwrap(), b"\x00\xfe\t");
    }

    #[test]
    fn placeholders_are_filled_per_message() {
        let t = Template::new(b"c={conn} s={seq} t={ts_us}!".to_vec());
        assert!(!t.is_static());
        let mut out = Vec::new();
        let n = t.render_into(
            Fill {
                conn: 7,
                seq: 42,
                ts_us: 1000,
            },
            &mut out,
        );
        assert_eq!(out, b"c=7 s=42 t=1000!");
        assert_eq!(n, out.len());
    }

    #[test]
    fn scenario_templates_fill_secrets_as_literal_text_never_as_placeholders() {
        let lookup = |n: &str| (n == "TOKEN").then(|| b"t{seq}{name}".to_vec());
        let resolve = |n: &str| (n == "name").then_some(0);
        let t = Template::with_vars_and_secrets(
            b"A {secret:TOKEN} {seq} {name}".to_vec(),
            resolve,
            &lookup,
        )
        .unwrap();
        assert_eq!(t.var_slots().count(), 1, "only the template's own {{name}}");
        let mut vars = Vars::new(1);
        vars.set(0, b"v");
        let mut out = Vec::new();
        let fill = Fill {
            conn: 1,
            seq: 7,
            ts_us: 0,
        };
        t.render_vars_into(fill, &vars, &mut out);
        assert_eq!(out, b"A t{seq}{name} 7 v");
        let st = Template::with_vars_and_secrets(b"K {secret:TOKEN}".to_vec(), resolve, &lookup)
            .unwrap();
        assert!(st.is_static());
        assert_eq!(st.raw(), b"K t{seq}{name}");
        assert_eq!(
            Template::with_vars_and_secrets(b"{secret:NOPE}".to_vec(), resolve, &lookup),
            Err(VarTemplateError::Secret(SecretError::Missing(
                "NOPE".into()
            )))
        );
    }

    #[test]
    fn secret_placeholders_are_filled_once_into_literal_bytes() {
        let mut env = |name: &str| (name == "TOKEN").then(|| b"s3cret".to_vec());
        let filled = fill_secrets(b"LOGIN {secret:TOKEN} {seq}\n", &mut env).unwrap();
        assert_eq!(filled, b"LOGIN s3cret {seq}\n");
        // The filled secret is literal: only {seq} stays dynamic.
        let t = Template::new(filled);
        let mut out = Vec::new();
        let fill = Fill {
            conn: 1,
            seq: 9,
            ts_us: 1,
        };
        t.render_into(fill, &mut out);
        assert_eq!(out, b"LOGIN s3cret 9\n");
        assert_eq!(fill_secrets(b"plain {x}", &mut env).unwrap(), b"plain {x}");
        assert_eq!(
            fill_secrets(b"{secret:NOPE}", &mut env),
            Err(SecretError::Missing("NOPE".into()))
        );
        for bad in [
            &b"{secret:}"[..],
            b"{secret:A-B}",
            b"{secret:TOKEN",
            b"{secret:1X}",
        ] {
            assert!(
                matches!(fill_secrets(bad, &mut env), Err(SecretError::BadName(_))),
                "{}",
                escape(bad)
            );
        }
    }

    #[test]
    fn numbers_are_written_in_decimal() {
        for n in [0, 7, 10, 99, 1000, 123_456_789, u64::MAX] {
            let mut out = b">".to_vec();
            push_u64(&mut out, n);
            assert_eq!(out, format!(">{n}").as_bytes());
        }
    }

    #[test]
    fn connection_modulo_names_a_room_of_n() {
        let t = Template::try_new(b"room/{conn%10}/{user%3}".to_vec()).unwrap();
        let mut out = Vec::new();
        let fill = Fill {
            conn: 1234,
            seq: 9,
            ts_us: 0,
        };
        let n = t.rendered_len(fill);
        assert_eq!(t.render_into(fill, &mut out), n);
        assert_eq!(out, b"room/4/1");
        assert!(Template::try_new(b"{conn%0}".to_vec()).is_err());
    }

    #[test]
    fn modulo_placeholders_wrap_and_hash_without_state() {
        let t = Template::try_new(b"k:{seq%10} r:{rand%1000}".to_vec()).unwrap();
        assert!(!t.is_static());
        let render = |conn, seq| {
            let mut out = Vec::new();
            t.render_into(
                Fill {
                    conn,
                    seq,
                    ts_us: 0,
                },
                &mut out,
            );
            String::from_utf8(out).unwrap()
        };
        assert!(render(1, 123).starts_with("k:3 r:"));
        // Deterministic: the same (conn, seq) renders the same bytes, twice.
        assert_eq!(render(4, 77), render(4, 77));
        // Uniform enough: 10 000 draws over 10 buckets, each within 20 % of 1000.
        let mut buckets = [0u32; 10];
        for seq in 0..10_000 {
            buckets[rand_mod(3, seq, 10) as usize] += 1;
        }
        assert!(
            buckets.iter().all(|b| (800..1200).contains(b)),
            "{buckets:?}"
        );
        assert!((0..1000).all(|s| rand_mod(s, s, 7) < 7));
        assert_eq!(rand_mod(9, 9, 1), 0);
    }

    #[test]
    fn malformed_modulo_placeholders_are_errors_when_strict() {
        for bad in [
            "{seq%}",
            "{seq%0}",
            "{rand%x}",
            "{rand%12",
            "{seq%99999999999999999999}",
        ] {
            let err = Template::try_new(bad.as_bytes().to_vec()).unwrap_err();
            assert!(err.to_string().contains("{seq%N}"), "{bad}: {err}");
            assert!(
                err.to_string().starts_with(&format!("'{bad}'")),
                "{bad}: {err}"
            );
        }
        // The placeholder is quoted whole, not cut where its number stopped.
        let err = Template::try_new(b"GET key:{rand%abc} x".to_vec()).unwrap_err();
        assert!(err.to_string().starts_with("'{rand%abc}'"), "{err}");
    }

    #[test]
    fn plain_templates_keep_key_range_placeholders_literal() {
        // `Template::new` (messages, HTTP) knows only the three classic tags: the HTTP body
        // template's precomputed Content-Length counts exactly those.
        let t = Template::new(b"{seq%10}{rand%5}".to_vec());
        assert!(t.is_static());
        let t = Template::new(b"a{seq%10}{seq}".to_vec());
        let mut out = Vec::new();
        t.render_into(
            Fill {
                conn: 0,
                seq: 42,
                ts_us: 0,
            },
            &mut out,
        );
        assert_eq!(out, b"a{seq%10}42");
    }

    #[test]
    fn messages_without_placeholders_are_static() {
        let t = Template::new(b"hello {world}".to_vec());
        assert!(t.is_static());
        let mut out = vec![b'>'];
        t.render_into(
            Fill {
                conn: 1,
                seq: 1,
                ts_us: 1,
            },
            &mut out,
        );
        assert_eq!(out, b">hello {world}");
    }

    fn fill() -> Fill {
        Fill {
            conn: 3,
            seq: 5,
            ts_us: 9,
        }
    }

    fn slots(name: &str) -> Option<usize> {
        ["token", "row.name", "room_id"]
            .iter()
            .position(|n| *n == name)
    }

    #[test]
    fn variables_render_from_their_slot() {
        let raw = br#"{"auth":"{token}","user":"{row.name}","c":{conn},"k":"{seq%2}"} {room_id}"#;
        let t = Template::with_vars(raw.to_vec(), slots).unwrap();
        assert!(!t.is_static());
        assert_eq!(t.var_slots().collect::<Vec<_>>(), [0, 1, 2]);
        let mut vars = Vars::new(3);
        vars.set(0, b"T0K");
        vars.set(1, "zoë".as_bytes());
        let mut out = b">".to_vec();
        let n = t.render_vars_into(fill(), &vars, &mut out);
        let want = r#">{"auth":"T0K","user":"zoë","c":3,"k":"1"} "#;
        assert_eq!(
            String::from_utf8(out).unwrap(),
            want,
            "unset slot 2 renders empty"
        );
        assert_eq!(n, want.len() - 1);
        assert_eq!(t.rendered_len_vars(fill(), &vars), n);
        vars.set(2, b"lobby");
        let mut out = Vec::new();
        let n = t.render_vars_into(fill(), &vars, &mut out);
        assert!(out.ends_with(b"} lobby"));
        assert_eq!(t.rendered_len_vars(fill(), &vars), n);
        // Without vars (render_into) a variable renders as nothing.
        let mut plain = Vec::new();
        assert_eq!(t.render_into(fill(), &mut plain), t.rendered_len(fill()));
        assert!(plain.ends_with(b"\"} "));
    }

    #[test]
    fn unknown_variable_is_an_error_naming_it() {
        let e = Template::with_vars(b"JOIN {room}\n".to_vec(), slots).unwrap_err();
        assert_eq!(e, VarTemplateError::Unknown("room".into()));
        assert!(e.to_string().starts_with("{room} is not defined"), "{e}");
        let e = Template::with_vars(b"{seq%0}".to_vec(), slots).unwrap_err();
        assert!(matches!(e, VarTemplateError::Range(_)), "{e}");
    }

    #[test]
    fn braces_that_are_not_variables_stay_literal() {
        for raw in [
            &br#"{"a":{"b":[1]}}"#[..],
            b"{}",
            b"{ token }",
            b"{1x}",
            b"{token",
            b"{secret:X}",
            b"{a b}",
        ] {
            let t = Template::with_vars(raw.to_vec(), |_| None).unwrap();
            assert!(t.is_static(), "{}", escape(raw));
            assert_eq!(t.raw(), raw);
        }
    }

    #[test]
    fn classic_templates_ignore_variables() {
        // Template::new / try_new keep their behaviour: `{token}` is literal text there.
        let t = Template::try_new(b"x{token}{seq}".to_vec()).unwrap();
        let mut out = Vec::new();
        t.render_into(fill(), &mut out);
        assert_eq!(out, b"x{token}5");
        assert_eq!(t.var_slots().count(), 0);
    }
}
