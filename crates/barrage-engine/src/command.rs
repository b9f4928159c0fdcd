//! `--command` strings -> pre-encoded requests, and the weighted choice of which command a
//! message is: what redis and memcached share. Each protocol's grammar lives with its codec
//! (`Commands::redis` in [`crate::redis`], `Commands::memcache` in [`crate::memcache`]) and
//! turns a command's words into parts.
//!
//! Each command is compiled once into a list of parts: literal bytes (static words already
//! RESP-encoded, merged) and templates whose length prefix is computed after their placeholders
//! are filled. A command without placeholders is one static byte string. The weighted mix is a
//! smooth weighted round robin laid out once as a table indexed by `seq % total`, so picking is
//! a lookup, needs no state and spreads each command evenly over every window of `total` seqs.

use crate::message::{
    bump_digits, digits, unescape, EscapeError, Fill, Reserved, SeqMarks, Template, TemplateError,
};
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// The largest sum of weights (the length of the pick table).
pub const MAX_TOTAL_WEIGHT: u64 = 10_000;

/// A `--command` that cannot be compiled; Display fits on one line after "--command: ".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("no command given; write e.g. --command 'GET key:{{seq}}'")]
    None,
    #[error("'{0}' is empty; write a command such as 'GET key:{{seq}}'")]
    Empty(String),
    #[error("'{0}': the weight before '*' must be a whole number from 1 to {MAX_TOTAL_WEIGHT}")]
    BadWeight(String),
    #[error("the weights add up to {0}; keep their sum at most {MAX_TOTAL_WEIGHT}")]
    TotalWeight(u64),
    #[error("'{0}': a double quote is not closed")]
    Unclosed(String),
    #[error("'{0}': {1}")]
    Escape(String, EscapeError),
    #[error("{1} (in '{0}')")]
    Placeholder(String, TemplateError),
    /// A command memcached's grammar refuses ([`crate::memcache`]).
    #[error(transparent)]
    Memcache(#[from] McCommandError),
}

#[derive(Clone, Debug)]
pub(crate) enum Part {
    /// Sent as is.
    Lit(Box<[u8]>),
    /// Rendered as is.
    Fill(Template),
    /// Redis: `$<len>\r\n<value>\r\n`, the length of the filled value.
    Bulk(Sized),
    /// memcached data block: `<len>\r\n<value>\r\n`.
    Block(Sized),
}

impl Part {
    /// The number of `{seq}` fields, when `{seq}` and `{conn}` are the part's only
    /// placeholders ([`Template::seq_fields`]).
    fn seq_fields(&self) -> Option<usize> {
        match self {
            Part::Lit(_) => Some(0),
            Part::Fill(t) => t.seq_fields(),
            Part::Bulk(s) | Part::Block(s) => s.t.seq_fields(),
        }
    }

    /// The most bytes the part writes (a sized value: prefix, a 20-digit length, the value,
    /// two CRLFs).
    fn bound(&self) -> usize {
        match self {
            Part::Lit(b) => b.len(),
            Part::Fill(t) => t.bound().unwrap_or(0),
            Part::Bulk(s) | Part::Block(s) => s.bound(),
        }
    }
}

/// A value sent after its length. The value is rendered once, in place, after a length field
/// as wide as last time (a filled value's length rarely changes its number of digits); when
/// the width was wrong the value is moved by the difference.
#[derive(Debug)]
pub(crate) struct Sized {
    t: Template,
    /// Digits of the length written last: the guess for the next one. Each worker renders
    /// from its own clone of the commands (its session config), so no thread writes another's
    /// guess; atomic only so that `Commands` stays `Sync` (relaxed: plain moves on x86).
    width: AtomicU8,
}

impl Sized {
    pub(crate) fn new(t: Template) -> Self {
        let least = t.rendered_len(Fill {
            conn: 0,
            seq: 0,
            ts_us: 0,
        });
        Self {
            width: AtomicU8::new(digits(least as u64) as u8),
            t,
        }
    }

    /// The most bytes [`sized`] writes: a prefix, a 20-digit length, two CRLFs and the value.
    fn bound(&self) -> usize {
        1 + 20 + 2 + self.t.bound().unwrap_or(0) + 2
    }
}

impl Clone for Sized {
    fn clone(&self) -> Self {
        Self {
            t: self.t.clone(),
            width: AtomicU8::new(self.width.load(Relaxed)),
        }
    }
}

#[derive(Clone, Debug)]
struct Command {
    spec: String,
    name: String,
    parts: Box<[Part]>,
    /// The whole request when no part has a placeholder.
    fixed: Option<Box<[u8]>>,
    /// The most bytes a request renders to.
    bound: usize,
    /// Its request for seq + 1 is its request for seq with the `{seq}` digits counted up,
    /// when the connection is the same and the digits do not carry into a new one
    /// ([`Last`]).
    steps: bool,
}

/// The compiled `--command` list of one run and its weighted mix.
#[derive(Clone, Debug)]
pub struct Commands {
    cmds: Box<[Command]>,
    /// Command index for each `seq % table.len()`; empty with a single command.
    table: Box<[u16]>,
}

impl Commands {
    /// Compiles every spec (its weight split off, its words split) with `compile`, the
    /// protocol's grammar: a name and the request's parts.
    pub(crate) fn build(
        specs: &[String],
        compile: impl Fn(&str, Vec<Template>) -> Result<(String, Vec<Part>), CommandError>,
    ) -> Result<Commands, CommandError> {
        if specs.is_empty() {
            return Err(CommandError::None);
        }
        let mut cmds = Vec::with_capacity(specs.len());
        let mut weights = Vec::with_capacity(specs.len());
        let mut total = 0u64;
        for spec in specs {
            let (weight, rest) = split_weight(spec)?;
            total += weight;
            if total > MAX_TOTAL_WEIGHT {
                return Err(CommandError::TotalWeight(
                    specs
                        .iter()
                        .map(|s| split_weight(s).map_or(1, |w| w.0))
                        .sum(),
                ));
            }
            let words = split_words(spec, rest)?;
            if words.is_empty() {
                return Err(CommandError::Empty(spec.clone()));
            }
            let (name, parts) = compile(spec, words)?;
            let parts = merge_literals(parts);
            let fixed = match &parts[..] {
                [Part::Lit(b)] => Some(b.clone()),
                _ => None,
            };
            let bound = parts.iter().map(Part::bound).sum();
            let steps = parts
                .iter()
                .try_fold(0, |n, p| Some(n + p.seq_fields()?))
                .is_some_and(|n| n <= SeqMarks::MAX);
            cmds.push(Command {
                spec: spec.clone(),
                name,
                parts: parts.into(),
                fixed,
                bound,
                steps,
            });
            weights.push(weight);
        }
        let table = if cmds.len() == 1 {
            Box::default()
        } else {
            smooth_round_robin(&weights)
        };
        Ok(Commands {
            cmds: cmds.into(),
            table,
        })
    }

    pub fn len(&self) -> usize {
        self.cmds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }

    /// The sum of the weights: every window of this many consecutive seqs holds each command
    /// exactly its weight times.
    pub fn total_weight(&self) -> u64 {
        self.table.len().max(1) as u64
    }

    /// Which command message `seq` is.
    #[inline]
    pub fn pick(&self, seq: u64) -> usize {
        if self.table.is_empty() {
            return 0;
        }
        self.table[(seq % self.table.len() as u64) as usize] as usize
    }

    /// Appends command `i` for `fill` to `out`; returns the bytes written.
    pub fn render_into(&self, i: usize, fill: Fill, out: &mut Vec<u8>) -> usize {
        self.write(i, fill, out, None)
    }

    /// [`Commands::render_into`], telling `marks` where the `{seq}` fields end.
    #[inline]
    fn write(
        &self,
        i: usize,
        fill: Fill,
        out: &mut Vec<u8>,
        mut marks: Option<&mut SeqMarks>,
    ) -> usize {
        let cmd = &self.cmds[i];
        let mut room = Reserved::open(out, cmd.bound);
        for part in cmd.parts.iter() {
            match part {
                Part::Lit(b) => room.put(b),
                Part::Fill(t) => t.write_marked(fill, &mut room, marks.as_deref_mut()),
                Part::Bulk(s) => sized(&mut room, b"$", s, fill, marks.as_deref_mut()),
                Part::Block(s) => sized(&mut room, b"", s, fill, marks.as_deref_mut()),
            }
        }
        room.close()
    }

    /// [`Commands::render`] for a connection that keeps its last request in `last`: when
    /// this one is the same command on the same connection for the next seq (its only
    /// placeholders `{seq}` and `{conn}`, at most [`SeqMarks::MAX`] `{seq}` fields, as many
    /// digits as last time), it is `last` copied, its `{seq}` digits then counted up in the
    /// copy and in `last` (a `SET key:{seq} {conn}` then costs a copy and two digits instead
    /// of a render: ~19 ns instead of ~70); else it is rendered, and kept when the next seq
    /// is the same command again.
    #[inline]
    pub fn render_next(&self, fill: Fill, out: &mut Vec<u8>, last: &mut Last) -> (usize, usize) {
        let i = self.pick(fill.seq);
        if !self.cmds[i].steps {
            return (self.render_into(i, fill, out), i);
        }
        let next = last.cmd == i
            && last.conn == fill.conn
            && last.seq.wrapping_add(1) == fill.seq
            && (last.marks.is_empty() || digits(fill.seq) == digits(last.seq));
        if next {
            // Copied first, then counted up in both copies: a copy that reads bytes just
            // counted up would wait for those single-byte stores (no store forwarding into a
            // wider load), which costs more than counting up twice.
            let at = out.len();
            out.extend_from_slice(&last.bytes);
            let copy = &mut out[at..];
            for &end in last.marks.ends() {
                bump_digits(copy, end as usize);
                bump_digits(&mut last.bytes, end as usize);
            }
            last.seq = fill.seq;
            return (last.bytes.len(), i);
        } else if self.table.is_empty() || self.pick(fill.seq.wrapping_add(1)) == i {
            last.bytes.clear();
            last.marks.clear();
            self.write(i, fill, &mut last.bytes, Some(&mut last.marks));
            last.cmd = i;
            last.conn = fill.conn;
        } else {
            // Nothing to count up from, and nothing to keep for (the mix's next message is
            // another command): rendered straight into `out`, with no copy.
            return (self.render_into(i, fill, out), i);
        }
        last.seq = fill.seq;
        out.extend_from_slice(&last.bytes);
        (last.bytes.len(), i)
    }

    /// The request of message `fill.seq` (its command picked by the weighted mix), appended
    /// to `out`: its length and the command's index.
    #[inline]
    pub fn render(&self, fill: Fill, out: &mut Vec<u8>) -> (usize, usize) {
        let i = self.pick(fill.seq);
        (self.render_into(i, fill, out), i)
    }

    /// The request of message `seq` when its command has no placeholder, and the command's
    /// index.
    #[inline]
    pub fn fixed(&self, seq: u64) -> Option<(&[u8], usize)> {
        let i = self.pick(seq);
        Some((self.static_bytes(i)?, i))
    }

    /// The whole request of command `i` when it has no placeholder.
    pub fn static_bytes(&self, i: usize) -> Option<&[u8]> {
        self.cmds[i].fixed.as_deref()
    }

    /// The command's name as the server's statistics name it: `SET` (redis), `set` (memcached).
    pub fn name(&self, i: usize) -> &str {
        &self.cmds[i].name
    }

    /// The command as the user wrote it.
    pub fn describe(&self, i: usize) -> &str {
        &self.cmds[i].spec
    }
}

/// `<prefix><len>\r\n<value>\r\n`, in one pass: the value is written after a length field
/// of the guessed width, then its length in front of it (the room has space for a field of
/// 20 digits, so a wider one only moves the value).
#[inline]
fn sized(
    room: &mut Reserved,
    prefix: &[u8],
    s: &Sized,
    fill: Fill,
    mut marks: Option<&mut SeqMarks>,
) {
    room.put(prefix);
    let head = room.at();
    let guess = s.width.load(Relaxed) as usize;
    room.put(&b"00000000000000000000\r\n"[20 - guess..]);
    let value = room.at();
    let marked = marks.as_deref().map_or(0, SeqMarks::len);
    s.t.write_marked(fill, room, marks.as_deref_mut());
    let len = (room.at() - value) as u64;
    let width = digits(len);
    if width != guess {
        let by = width as isize - guess as isize;
        room.shift(head + guess, by);
        if let Some(m) = marks {
            m.shift(marked, by);
        }
        s.width.store(width as u8, Relaxed);
    }
    room.num_at(head, len);
    room.put(b"\r\n");
}

/// A connection's last request, for [`Commands::render_next`]: its bytes, which command for
/// which connection and seq, and where its `{seq}` fields end. Its bytes are allocated at the
/// first request and reused: nothing per request.
#[derive(Debug)]
pub struct Last {
    bytes: Vec<u8>,
    cmd: usize,
    conn: u64,
    seq: u64,
    marks: SeqMarks,
}

impl Default for Last {
    fn default() -> Self {
        Self {
            bytes: Vec::new(),
            cmd: usize::MAX,
            conn: 0,
            seq: 0,
            marks: SeqMarks::default(),
        }
    }
}

impl Last {
    /// Forget the last request (a new connection renders its first one whole).
    pub fn clear(&mut self) {
        self.cmd = usize::MAX;
    }
}

/// `N*rest` -> (N, rest); no prefix -> (1, spec).
fn split_weight(spec: &str) -> Result<(u64, &str), CommandError> {
    let digits = spec.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || spec.as_bytes().get(digits) != Some(&b'*') {
        return Ok((1, spec));
    }
    match spec[..digits].parse::<u64>() {
        Ok(w) if (1..=MAX_TOTAL_WEIGHT).contains(&w) => Ok((w, &spec[digits + 1..])),
        _ => Err(CommandError::BadWeight(spec.to_string())),
    }
}

/// Words split on spaces; `"..."` keeps spaces (with `\"` for a quote); escapes are those of
/// [`unescape`]; each word becomes a template.
fn split_words(spec: &str, text: &str) -> Result<Vec<Template>, CommandError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let (mut quoted, mut in_word) = (false, false);
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('"') => word.push('"'),
                    Some(n) => {
                        word.push('\\');
                        word.push(n);
                    }
                    None => word.push('\\'),
                }
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if quoted {
        return Err(CommandError::Unclosed(spec.to_string()));
    }
    if in_word {
        words.push(word);
    }
    words
        .into_iter()
        .map(|w| {
            let raw = unescape(&w).map_err(|e| CommandError::Escape(spec.to_string(), e))?;
            Template::try_new(raw).map_err(|e| CommandError::Placeholder(spec.to_string(), e))
        })
        .collect()
}

/// Adjacent literals become one; a part without placeholder is a literal.
fn merge_literals(parts: Vec<Part>) -> Vec<Part> {
    let mut out: Vec<Part> = Vec::with_capacity(parts.len());
    let nothing = Fill {
        conn: 0,
        seq: 0,
        ts_us: 0,
    };
    for p in parts {
        let p = match p {
            Part::Fill(t) if t.is_static() => Part::Lit(t.raw().into()),
            Part::Bulk(ref t) | Part::Block(ref t) if t.t.is_static() => {
                let mut b = Vec::new();
                let prefix: &[u8] = if matches!(p, Part::Bulk(_)) {
                    b"$"
                } else {
                    b""
                };
                let mut room = Reserved::open(&mut b, t.bound());
                sized(&mut room, prefix, t, nothing, None);
                room.close();
                Part::Lit(b.into())
            }
            p => p,
        };
        match (out.last_mut(), p) {
            (Some(Part::Lit(a)), Part::Lit(b)) => {
                let mut v = a.to_vec();
                v.extend_from_slice(&b);
                *a = v.into();
            }
            (_, p) => out.push(p),
        }
    }
    out
}

/// nginx's smooth weighted round robin, laid out once over `sum(weights)` slots: each slot
/// takes the command with the highest running credit, so a command of weight w appears exactly
/// w times per cycle, spread out rather than in a block.
fn smooth_round_robin(weights: &[u64]) -> Box<[u16]> {
    let total: u64 = weights.iter().sum();
    let mut credit = vec![0i64; weights.len()];
    let mut table = Vec::with_capacity(total as usize);
    for _ in 0..total {
        for (c, w) in credit.iter_mut().zip(weights) {
            *c += *w as i64;
        }
        let best = (0..weights.len())
            .max_by_key(|i| (credit[*i], std::cmp::Reverse(*i)))
            .unwrap_or(0);
        credit[best] -= total as i64;
        table.push(best as u16);
    }
    table.into()
}

/// A command memcached's grammar refuses; Display fits on one line after "--command: ".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McCommandError {
    #[error("'{spec}': memcached '{name}' expects {expects}")]
    Args {
        spec: String,
        name: String,
        expects: &'static str,
    },
    #[error(
        "'{spec}': '{name}' is not a memcached text command barrage sends; use get, gets, set, \
         add, replace, append, prepend, delete, incr, decr or touch"
    )]
    Unknown { spec: String, name: String },
    #[error("'{0}': a memcached key has at most 250 bytes and no spaces or control characters")]
    Key(String),
    #[error("'{0}': the {1} must be a whole number or a placeholder such as {{seq%100}}")]
    Number(String, &'static str),
}

#[cfg(test)]
pub(crate) mod tests;
