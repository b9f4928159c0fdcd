//! Binary messages: a list of typed fields compiled into a [`Template`] whose pieces include
//! binary numbers and computed lengths, so a message with a length prefix and numbers in
//! binary renders per send like any other template, into reused buffers, with no allocation.
//!
//! The field language (`--fields`, a scenario step's `fields`), fields separated by commas:
//!
//! ```text
//! u8 1, len:u16be(u32be {seq}, str:u8 "room-{room}", u64be {ts_us}), bytes 0a0b
//! ```
//!
//! - integers `u8 u16be u16le u32be u32le u64be u64le`, `i8 ... i64le` the same, `varint`
//!   (LEB128, as protobuf) and `mqtt_varint` (MQTT's remaining length, at most 268,435,455):
//!   each takes a number (decimal, `0x` hex, negative for `i*`) or a placeholder (`{seq}`,
//!   `{conn}`, `{ts_us}`, `{seq%N}`, `{rand%N}`, a scenario's `{name}`, whose text is read as a
//!   decimal number: anything else is 0). A placeholder's value is taken modulo the width.
//! - `bytes 0a0bff` (hex) or `bytes "text\x00"` (escapes `\r \n \t \\ \" \0 \xHH`).
//! - `str "text {seq}"`: the text, its placeholders rendered as text; `str:u16be "..."` puts
//!   its length first, in that integer type.
//! - `len:TYPE( ... )`: the byte length of the fields inside, as TYPE, then those fields;
//!   `len:u32be+4( ... )` or `len:u16le-2( ... )` adds to (subtracts from) the length.

pub use super::int::{parse_num, IntKind, NumSrc, MAX_DEPTH, MQTT_MAX};
use super::parse::Resolve;
use super::template::Piece;
use super::{SecretLookup, Template, VarTemplateError};

/// A field list that is not right: where (a byte offset into the text) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at {at}: {why}")]
pub struct FieldsError {
    pub at: usize,
    pub why: String,
}

/// Compile field list `text`; `vars` resolves a scenario's `{name}`s, `secrets` fills
/// `{secret:NAME}` in `str` and `bytes` fields (literally).
pub fn compile(
    text: &str,
    vars: Option<Resolve>,
    secrets: Option<SecretLookup>,
) -> Result<Template, FieldsError> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        vars,
        secrets,
        pieces: Vec::new(),
        depth: 0,
    };
    p.list(None)?;
    p.ws();
    if p.i < p.s.len() {
        return Err(p.err("expected a comma between fields"));
    }
    if p.pieces.is_empty() {
        return Err(p.err("no fields: give at least one, e.g. u8 1"));
    }
    Ok(Template::of_pieces(p.pieces))
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    vars: Option<Resolve<'a>>,
    secrets: Option<SecretLookup<'a>>,
    pieces: Vec<Piece>,
    /// Lengths open around the field being read.
    depth: usize,
}

impl Parser<'_> {
    fn err(&self, why: impl Into<String>) -> FieldsError {
        FieldsError {
            at: self.i,
            why: why.into(),
        }
    }

    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// Fields up to `close` (or the end).
    fn list(&mut self, close: Option<u8>) -> Result<(), FieldsError> {
        loop {
            self.ws();
            match self.peek() {
                None if close.is_none() => return Ok(()),
                None => return Err(self.err("expected ) to close len:(...)")),
                Some(c) if Some(c) == close => return Ok(()),
                _ => {}
            }
            self.field()?;
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                _ => return Ok(()),
            }
        }
    }

    fn word(&mut self) -> &str {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i]).unwrap_or("")
    }

    fn field(&mut self) -> Result<(), FieldsError> {
        let at = self.i;
        let name = self.word().to_string();
        let kind_after_colon = |p: &mut Self| -> Result<IntKind, FieldsError> {
            if p.peek() != Some(b':') {
                return Err(p.err(format!(
                    "{name} needs a type: {name}:u16be, {name}:varint, ..."
                )));
            }
            p.i += 1;
            let t = p.word().to_string();
            IntKind::parse(&t)
                .ok_or_else(|| p.err(format!("'{t}' is not an integer type: {TYPES}")))
        };
        match name.as_str() {
            "" => Err(self.err(format!("expected a field: {TYPES}, bytes, str, len"))),
            "bytes" => {
                self.ws();
                let b = if self.peek() == Some(b'"') {
                    self.quoted()?
                } else {
                    self.hex()?
                };
                self.push_text(b, false)
            }
            "str" => {
                let prefix = if self.peek() == Some(b':') {
                    Some(kind_after_colon(self)?)
                } else {
                    None
                };
                self.ws();
                if self.peek() != Some(b'"') {
                    return Err(self.err("str takes a quoted text: str \"hello {seq}\""));
                }
                let text = self.quoted()?;
                match prefix {
                    None => self.push_text(text, true),
                    Some(kind) => {
                        if self.depth == MAX_DEPTH {
                            return Err(self.err(format!("more than {MAX_DEPTH} lengths nested")));
                        }
                        let at = self.pieces.len();
                        self.pieces.push(Piece::Len {
                            kind,
                            adjust: 0,
                            span: 0,
                        });
                        self.push_text(text, true)?;
                        self.close_len(at)
                    }
                }
            }
            "len" => {
                let kind = kind_after_colon(self)?;
                let adjust = match self.peek() {
                    Some(c @ (b'+' | b'-')) => {
                        self.i += 1;
                        let (v, _) = self.number()?;
                        let v = i64::try_from(v)
                            .map_err(|_| self.err("the adjustment is too large"))?;
                        if c == b'-' {
                            -v
                        } else {
                            v
                        }
                    }
                    _ => 0,
                };
                self.ws();
                if self.peek() != Some(b'(') {
                    return Err(self.err(
                        "len:TYPE takes its fields in parentheses: len:u16be(u8 1, str \"x\")",
                    ));
                }
                if self.depth == MAX_DEPTH {
                    return Err(self.err(format!("more than {MAX_DEPTH} lengths nested")));
                }
                self.i += 1;
                self.depth += 1;
                let at = self.pieces.len();
                self.pieces.push(Piece::Len {
                    kind,
                    adjust,
                    span: 0,
                });
                self.list(Some(b')'))?;
                self.ws();
                if self.peek() != Some(b')') {
                    return Err(self.err("expected ) to close len:(...)"));
                }
                self.i += 1;
                self.depth -= 1;
                self.close_len(at)
            }
            t => {
                let Some(kind) = IntKind::parse(t) else {
                    self.i = at;
                    let hint = match t {
                        "u16" | "u32" | "u64" | "i16" | "i32" | "i64" => {
                            format!("'{t}' needs its byte order: {t}be or {t}le")
                        }
                        _ => format!("'{t}' is not a field: {TYPES}, bytes, str, len"),
                    };
                    return Err(self.err(hint));
                };
                self.ws();
                let src = if self.peek() == Some(b'{') {
                    self.placeholder()?
                } else {
                    let neg = self.peek() == Some(b'-');
                    if neg {
                        self.i += 1;
                    }
                    let (v, _) = self.number()?;
                    if !kind.fits(v, neg) {
                        return Err(self.err(format!(
                            "{}{v} does not fit {t}",
                            if neg { "-" } else { "" }
                        )));
                    }
                    NumSrc::Lit(if neg { v.wrapping_neg() } else { v })
                };
                self.pieces.push(Piece::Int(kind, src));
                Ok(())
            }
        }
    }

    /// The length field at `at` covers the pieces after it; one whose type cannot hold the
    /// most they can render to is refused (a text variable has no bound: its length is
    /// written modulo the type).
    fn close_len(&mut self, at: usize) -> Result<(), FieldsError> {
        let span = (self.pieces.len() - at - 1) as u32;
        let Piece::Len {
            kind,
            adjust,
            span: s,
        } = &mut self.pieces[at]
        else {
            return Ok(());
        };
        *s = span;
        let (kind, adjust) = (*kind, *adjust);
        let most = self.pieces[at + 1..].iter().try_fold(0u64, |sum, p| {
            Some(
                sum + match p {
                    Piece::Lit(b) => b.len() as u64,
                    Piece::Var(_) => return None,
                    Piece::Int(k, _) | Piece::Len { kind: k, .. } => k.max_len() as u64,
                    _ => 20,
                },
            )
        });
        // Below zero a length cannot be written: refused when it is known here (no `{name}`
        // inside), checked per message otherwise (`Template::len_fault`).
        let least = super::render::least_len(&self.pieces[at + 1..]);
        if most.is_some() && i128::from(least) + i128::from(adjust) < 0 {
            return Err(self.err(format!(
                "len:{}{adjust}(...) covers as few as {least} bytes: the length would go below \
                 zero; subtract at most {least}",
                kind.name()
            )));
        }
        if let Some(most) = most {
            let most = (i128::from(most) + i128::from(adjust)).max(0) as u128;
            let limit: u128 = match kind {
                IntKind::Fixed { bytes: 8, .. } | IntKind::Varint => u128::from(u64::MAX),
                IntKind::Fixed { bytes, signed, .. } => {
                    (1u128 << (u32::from(bytes) * 8 - u32::from(signed))) - 1
                }
                IntKind::Mqtt => u128::from(MQTT_MAX),
            };
            if most > limit {
                return Err(self.err(format!(
                    "a length of up to {most} bytes does not fit {}",
                    kind.name()
                )));
            }
        }
        Ok(())
    }

    /// Text (with placeholders when `template`) as pieces.
    fn push_text(&mut self, text: Vec<u8>, template: bool) -> Result<(), FieldsError> {
        if !template {
            let filled = match self.secrets {
                Some(s) => super::fill_secrets(&text, &mut |n| s(n))
                    .map_err(|e| self.err(e.to_string()))?,
                None => text,
            };
            self.pieces.push(Piece::Lit(filled.into()));
            return Ok(());
        }
        let t = Template::build(text, true, self.vars, self.secrets).map_err(|e| {
            self.err(match e {
                VarTemplateError::Range(e) => e.to_string(),
                e => e.to_string(),
            })
        })?;
        match t.pieces {
            Some(p) => self.pieces.extend(p.iter().cloned()),
            None => self.pieces.push(Piece::Lit(t.raw)),
        }
        Ok(())
    }

    /// `"..."` with escapes, as bytes.
    fn quoted(&mut self) -> Result<Vec<u8>, FieldsError> {
        let start = self.i;
        self.i += 1;
        let mut raw = Vec::new();
        loop {
            match self.peek() {
                None => {
                    self.i = start;
                    return Err(self.err("a quoted text without its closing \""));
                }
                Some(b'"') => {
                    self.i += 1;
                    break;
                }
                Some(b'\\') if self.s.get(self.i + 1) == Some(&b'"') => {
                    raw.push(b'"');
                    self.i += 2;
                }
                Some(c) => {
                    raw.push(c);
                    self.i += 1;
                }
            }
        }
        let at = |why: String| FieldsError { at: start, why };
        let text = String::from_utf8(raw).map_err(|_| at("not UTF-8".into()))?;
        super::unescape(&text).map_err(|e| at(e.to_string()))
    }

    /// Hex digits, an even number of them.
    fn hex(&mut self) -> Result<Vec<u8>, FieldsError> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
            self.i += 1;
        }
        let h = &self.s[start..self.i];
        if h.is_empty() || h.len() % 2 == 1 {
            self.i = start;
            return Err(self.err("bytes takes hex digits in pairs (bytes 0a0b) or a quoted text"));
        }
        Ok(h.chunks(2)
            .map(|p| {
                let d = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                d(p[0]) << 4 | d(p[1])
            })
            .collect())
    }

    /// A decimal or `0x` number.
    fn number(&mut self) -> Result<(u64, usize), FieldsError> {
        let start = self.i;
        let hex = self.s[self.i..].starts_with(b"0x");
        if hex {
            self.i += 2;
        }
        let digits_at = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
            self.i += 1;
        }
        let d = std::str::from_utf8(&self.s[digits_at..self.i]).unwrap_or("");
        let v = if hex {
            u64::from_str_radix(d, 16)
        } else {
            d.parse()
        };
        v.map(|v| (v, self.i - start)).map_err(|_| {
            self.i = start;
            self.err("expected a number (decimal, or 0x hex) or a placeholder such as {seq}")
        })
    }

    /// `{seq}`, `{conn}`, `{ts_us}`, `{seq%N}`, `{rand%N}`, `{user}`, a scenario's `{name}`.
    fn placeholder(&mut self) -> Result<NumSrc, FieldsError> {
        let rest = &self.s[self.i..];
        let end = rest
            .iter()
            .position(|&c| c == b'}')
            .ok_or_else(|| self.err("a placeholder without its closing }"))?;
        let text = rest[..=end].to_vec();
        let t = Template::build(text.clone(), true, self.vars, None)
            .map_err(|e| self.err(e.to_string()))?;
        let src =
            match t.pieces.as_deref() {
                Some([Piece::Conn]) => NumSrc::Conn,
                Some([Piece::Seq]) => NumSrc::Seq,
                Some([Piece::TsUs]) => NumSrc::TsUs,
                Some([Piece::SeqMod(n)]) => NumSrc::SeqMod(*n),
                Some([Piece::RandMod(n)]) => NumSrc::RandMod(*n),
                Some([Piece::ConnMod(n)]) => NumSrc::ConnMod(*n),
                Some([Piece::Var(s)]) => NumSrc::Var(*s),
                _ => {
                    return Err(self.err(format!(
                    "'{}' is not a placeholder a number can take: {{seq}}, {{conn}}, {{ts_us}}, \
                     {{seq%N}}, {{rand%N}}, {{conn%N}}{}",
                    String::from_utf8_lossy(&text),
                    if self.vars.is_some() { ", or a captured {name}" } else { "" }
                )))
                }
            };
        self.i += end + 1;
        Ok(src)
    }
}

const TYPES: &str =
    "u8, u16be, u16le, u32be, u32le, u64be, u64le (i8 ... i64le), varint, mqtt_varint";

#[cfg(test)]
mod tests;
