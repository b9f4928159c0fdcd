//! Rendering a [`Template`]: its length (bounded, least, or for given values), the bytes for
//! a [`Fill`] (and a user's [`Vars`]) written into a growing buffer or a reserved room, with
//! `{seq}` fields marked for patching in place, binary numbers encoded, and length fields
//! patched in one pass ([`Lengths`]); `{rand%N}` is a stateless hash ([`rand_mod`]).

use super::int::{self, IntKind, NumSrc};
use super::template::Piece;
use super::{digits, push_u64, Fill, Reserved, SeqMarks, Template};
use crate::capture::Vars;

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

impl Template {
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

    pub(super) fn len_with(&self, fill: Fill, vars: Option<&Vars>) -> usize {
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

    pub(super) fn render_with(&self, fill: Fill, vars: Option<&Vars>, out: &mut Vec<u8>) -> usize {
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
pub(super) trait Writes {
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
/// (nesting is at most `int::MAX_DEPTH`, so that walk is bounded).
pub(super) const LENGTHS_OPEN: usize = 4;

pub(super) struct Lengths {
    open: [Open; LENGTHS_OPEN],
    n: usize,
}

/// A length field being written: where its bytes are, where what it covers starts, and the
/// piece it ends after.
#[derive(Clone, Copy)]
pub(super) struct Open {
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
pub(super) fn least_len(pieces: &[Piece]) -> u64 {
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
pub(super) fn put_piece(
    pieces: &[Piece],
    i: usize,
    fill: Fill,
    vars: Option<&Vars>,
    out: &mut Vec<u8>,
) {
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
pub(super) fn piece_len(pieces: &[Piece], i: usize, fill: Fill, vars: Option<&Vars>) -> usize {
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
pub(super) fn len_value(pieces: &[Piece], i: usize, fill: Fill, vars: Option<&Vars>) -> u64 {
    let Piece::Len { adjust, span, .. } = pieces[i] else {
        return 0;
    };
    let end = (i + 1 + span as usize).min(pieces.len());
    let n: usize = (i + 1..end).map(|k| piece_len(pieces, k, fill, vars)).sum();
    (n as i64).saturating_add(adjust).max(0) as u64
}

/// A binary piece's value.
pub(super) fn num_of(src: NumSrc, fill: Fill, vars: Option<&Vars>) -> u64 {
    match src {
        NumSrc::Lit(v) => v,
        NumSrc::Conn => fill.conn,
        NumSrc::Seq => fill.seq,
        NumSrc::TsUs => fill.ts_us,
        NumSrc::SeqMod(n) => fill.seq % n,
        NumSrc::ConnMod(n) => fill.conn % n,
        NumSrc::RandMod(n) => rand_mod(fill.conn, fill.seq, n),
        NumSrc::Var(slot) => int::parse_num(var(vars, slot)),
    }
}

/// Binary piece `i` encoded into `out`; returns its length.
#[inline]
pub(super) fn encode_at(
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

pub(super) fn var(vars: Option<&Vars>, slot: u32) -> &[u8] {
    vars.and_then(|v| v.get(slot as usize)).unwrap_or_default()
}
