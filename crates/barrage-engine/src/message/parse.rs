//! Parsing a message: escapes (`\r \n \xHH`, [`unescape`], and back, [`escape`]), the
//! `{secret:NAME}` fill done at plan time ([`fill_secrets`]), and a message's text turned
//! into a [`Template`]: its placeholders (`{conn}`, `{seq}`, `{ts_us}`, `{seq%N}`,
//! `{rand%N}`, `{conn%N}`, `{name}`, binary fields) located once, with the errors that name
//! a malformed one.

use super::binary::NumSrc;
use super::render::{least_len, put_piece};
use super::template::Piece;
use super::{Fill, Template};

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

pub(super) const SECRET_OPEN: &[u8] = b"{secret:";

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
pub(super) fn var_name(b: &[u8]) -> Option<&str> {
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
pub(super) type Resolve<'a> = &'a dyn Fn(&str) -> Option<usize>;

/// Looks up the value of `{secret:NAME}` (the environment variable NAME).
pub type SecretLookup<'a> = &'a dyn Fn(&str) -> Option<Vec<u8>>;

/// `{secret:NAME}` at the start of `b`: its length and NAME; `None` when `b` does not start
/// with `{secret:`, an error when what follows is not a name and `}`.
pub(super) fn secret_tag(b: &[u8]) -> Option<Result<(usize, &str), SecretError>> {
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

/// `{seq%` or `{rand%` at the start of `b`: the placeholder's length and piece, or an error
/// naming the text when it is malformed; `None` when `b` starts with neither.
pub(super) fn modulo_tag(b: &[u8]) -> Option<Result<(usize, Piece), TemplateError>> {
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
    /// `{row.NAME}`, each resolved once by `resolve` to a slot of the user's [`Vars`](crate::capture::Vars). A
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
    pub(super) fn build(
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

    /// A template of binary fields ([`binary::compile`](super::binary::compile)): one literal when nothing in it
    /// changes per message.
    pub(super) fn of_pieces(pieces: Vec<Piece>) -> Template {
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

    pub(super) fn with_bound(mut self) -> Template {
        self.bound = Some(self.raw.len());
        self
    }
}
