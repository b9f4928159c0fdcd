//! Messages: escape parsing, placeholders and rendering.
//!
//! A message is parsed once into a template. Without placeholders it is one pre-built byte
//! string reused for every send (no work per message); with `{conn}`, `{seq}`, `{ts_us}`,
//! `{seq%N}` or `{rand%N}` it is rendered into the worker's scratch buffer, which is reused,
//! so no send allocates. `{rand%N}` is a stateless hash of (conn, seq), not an RNG: the same
//! run renders the same bytes, and no connection carries generator state.
//!
//! `{secret:NAME}` is different: it is filled once, at plan time, from the environment
//! variable NAME ([`fill_secrets`]), before the template is built, so the secret is plain
//! literal bytes in the template and costs nothing per send; the caller keeps the unfilled text
//! for everything it shows.

use std::fmt;
use std::io::Write as _;

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
        if !raw[i..].starts_with(SECRET_OPEN) {
            out.push(raw[i]);
            i += 1;
            continue;
        }
        let rest = &raw[i + SECRET_OPEN.len()..];
        let len = rest
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
        // `len` bytes are ASCII: the conversion cannot fail.
        let name = std::str::from_utf8(&rest[..len]).unwrap_or_default();
        if len == 0 || rest.get(len) != Some(&b'}') || rest[0].is_ascii_digit() {
            return Err(SecretError::BadName(name.to_string()));
        }
        let value = lookup(name).ok_or_else(|| SecretError::Missing(name.to_string()))?;
        out.extend_from_slice(&value);
        i += SECRET_OPEN.len() + len + 1;
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
}

/// A malformed `{seq%N}` or `{rand%N}` placeholder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}': write {{seq%N}} or {{rand%N}} with N a whole number from 1 to 2^64-1")]
pub struct TemplateError(pub String);

/// splitmix64's finalizer: a bijective mix of 64 bits.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `{rand%n}` for (conn, seq): a value in 0..n, the same for the same inputs (n > 0).
pub fn rand_mod(conn: u64, seq: u64, n: u64) -> u64 {
    let h = splitmix64(splitmix64(conn) ^ seq);
    // Multiply-high instead of `%`: no modulo bias worth the name, no division.
    ((u128::from(h) * u128::from(n)) >> 64) as u64
}

/// `{seq%` or `{rand%` at the start of `b`: the placeholder's length and piece, or an error
/// naming the text when it is malformed; `None` when `b` starts with neither.
fn modulo_tag(b: &[u8]) -> Option<Result<(usize, Piece), TemplateError>> {
    let (open, rand) = if b.starts_with(b"{seq%") {
        (5, false)
    } else if b.starts_with(b"{rand%") {
        (6, true)
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
            if rand {
                Piece::RandMod(n)
            } else {
                Piece::SeqMod(n)
            },
        )),
        _ => {
            let shown = &b[..(end + 1).min(b.len())];
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
    /// Locate the placeholders in already unescaped bytes; a malformed `{seq%N}` or
    /// `{rand%N}` is an error.
    pub fn try_new(raw: Vec<u8>) -> Result<Self, TemplateError> {
        Self::build(raw, true)
    }

    /// Locate `{conn}`, `{seq}`, `{ts_us}`, `{seq%N}` and `{rand%N}` in already unescaped
    /// bytes; a malformed `{seq%...}` or `{rand%...}` stays literal text.
    pub fn new(raw: Vec<u8>) -> Self {
        match Self::build(raw, false) {
            Ok(t) => t,
            // Unreachable: `build` only fails when asked to be strict.
            Err(_) => Self {
                raw: Box::default(),
                pieces: None,
            },
        }
    }

    fn build(raw: Vec<u8>, strict: bool) -> Result<Self, TemplateError> {
        const TAGS: [(&[u8], Piece); 3] = [
            (b"{conn}", Piece::Conn),
            (b"{seq}", Piece::Seq),
            (b"{ts_us}", Piece::TsUs),
        ];
        let mut pieces = Vec::new();
        let (mut lit_start, mut i) = (0, 0);
        while i < raw.len() {
            let hit = match modulo_tag(&raw[i..]) {
                Some(Ok(found)) => Some(found),
                Some(Err(e)) if strict => return Err(e),
                Some(Err(_)) => None,
                None => TAGS
                    .iter()
                    .find(|(tag, _)| raw[i..].starts_with(tag))
                    .map(|(tag, piece)| (tag.len(), piece.clone())),
            };
            match hit {
                Some((len, piece)) => {
                    if lit_start < i {
                        pieces.push(Piece::Lit(raw[lit_start..i].into()));
                    }
                    pieces.push(piece);
                    i += len;
                    lit_start = i;
                }
                None => i += 1,
            }
        }
        let dynamic = pieces.iter().any(|p| !matches!(p, Piece::Lit(_)));
        if dynamic && lit_start < raw.len() {
            pieces.push(Piece::Lit(raw[lit_start..].into()));
        }
        Ok(Self {
            pieces: dynamic.then(|| pieces.into()),
            raw: raw.into(),
        })
    }

    pub fn is_static(&self) -> bool {
        self.pieces.is_none()
    }

    /// The message bytes as written by the user (placeholders unexpanded).
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// Append the message for `fill` to `out`; returns its length.
    pub fn render_into(&self, fill: Fill, out: &mut Vec<u8>) -> usize {
        let before = out.len();
        match &self.pieces {
            None => out.extend_from_slice(&self.raw),
            Some(pieces) => {
                for p in pieces.iter() {
                    // Writing a number into a Vec cannot fail.
                    let _ = match p {
                        Piece::Lit(b) => {
                            out.extend_from_slice(b);
                            Ok(())
                        }
                        Piece::Conn => write!(out, "{}", fill.conn),
                        Piece::Seq => write!(out, "{}", fill.seq),
                        Piece::TsUs => write!(out, "{}", fill.ts_us),
                        Piece::SeqMod(n) => write!(out, "{}", fill.seq % n),
                        Piece::RandMod(n) => write!(out, "{}", rand_mod(fill.conn, fill.seq, *n)),
                    };
                }
            }
        }
        out.len() - before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            // The lenient constructor keeps them as literal text.
            assert!(Template::new(bad.as_bytes().to_vec()).is_static(), "{bad}");
        }
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
}
