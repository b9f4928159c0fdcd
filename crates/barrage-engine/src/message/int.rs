//! Binary integers in messages: how one is encoded ([`IntKind`]) and where its value comes
//! from ([`NumSrc`]), for typed fields (`binary.rs`) and reply captures alike.

/// An integer field's encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntKind {
    /// `bytes` wide (1, 2, 4, 8), little-endian or not, signed or not (signed only changes
    /// which literals are allowed).
    Fixed { bytes: u8, le: bool, signed: bool },
    /// LEB128.
    Varint,
    /// MQTT's variable byte integer (1 to 4 bytes).
    Mqtt,
}

/// The largest value MQTT's variable byte integer holds.
pub const MQTT_MAX: u64 = 268_435_455;

/// How deep lengths nest (`len:u8(len:u8(...))`, `str:TYPE` inside a length counts too).
pub const MAX_DEPTH: usize = 8;

impl IntKind {
    /// `u16be`, `i32le`, `varint`, ...
    pub fn parse(name: &str) -> Option<IntKind> {
        match name {
            "varint" => return Some(IntKind::Varint),
            "mqtt_varint" => return Some(IntKind::Mqtt),
            "u8" | "i8" => {
                return Some(IntKind::Fixed {
                    bytes: 1,
                    le: false,
                    signed: name == "i8",
                })
            }
            _ => {}
        }
        let signed = match name.as_bytes().first()? {
            b'u' => false,
            b'i' => true,
            _ => return None,
        };
        let (bits, le) = if let Some(b) = name[1..].strip_suffix("be") {
            (b, false)
        } else {
            (name[1..].strip_suffix("le")?, true)
        };
        let bytes = match bits {
            "16" => 2,
            "32" => 4,
            "64" => 8,
            _ => return None,
        };
        Some(IntKind::Fixed { bytes, le, signed })
    }

    /// Its name in the field language (`u16be`, `varint`, ...).
    pub fn name(self) -> String {
        match self {
            IntKind::Varint => "varint".into(),
            IntKind::Mqtt => "mqtt_varint".into(),
            IntKind::Fixed { bytes, le, signed } => format!(
                "{}{}{}",
                if signed { 'i' } else { 'u' },
                bytes * 8,
                match (bytes, le) {
                    (1, _) => "",
                    (_, true) => "le",
                    _ => "be",
                }
            ),
        }
    }

    /// The most bytes a value takes.
    pub fn max_len(self) -> usize {
        match self {
            IntKind::Fixed { bytes, .. } => bytes as usize,
            IntKind::Varint => 10,
            IntKind::Mqtt => 4,
        }
    }

    /// The fewest bytes a value takes.
    pub fn min_len(self) -> usize {
        match self {
            IntKind::Fixed { bytes, .. } => bytes as usize,
            IntKind::Varint | IntKind::Mqtt => 1,
        }
    }

    /// The bytes `v` takes.
    #[inline]
    pub fn len(self, v: u64) -> usize {
        match self {
            IntKind::Fixed { bytes, .. } => bytes as usize,
            IntKind::Varint => (64 - (v | 1).leading_zeros() as usize).div_ceil(7),
            IntKind::Mqtt => (64 - ((v % (MQTT_MAX + 1)) | 1).leading_zeros() as usize).div_ceil(7),
        }
    }

    /// `v` encoded into `out` (at least [`IntKind::max_len`] bytes); returns its length.
    #[inline]
    pub fn encode(self, v: u64, out: &mut [u8; 10]) -> usize {
        match self {
            // Fixed-size copies: no call per field.
            IntKind::Fixed { bytes, le, .. } => {
                match (bytes, le) {
                    (1, _) => out[0] = v as u8,
                    (2, false) => out[..2].copy_from_slice(&(v as u16).to_be_bytes()),
                    (2, true) => out[..2].copy_from_slice(&(v as u16).to_le_bytes()),
                    (4, false) => out[..4].copy_from_slice(&(v as u32).to_be_bytes()),
                    (4, true) => out[..4].copy_from_slice(&(v as u32).to_le_bytes()),
                    (_, false) => out[..8].copy_from_slice(&v.to_be_bytes()),
                    (_, true) => out[..8].copy_from_slice(&v.to_le_bytes()),
                }
                bytes as usize
            }
            IntKind::Varint | IntKind::Mqtt => {
                let mut v = if self == IntKind::Mqtt {
                    v % (MQTT_MAX + 1)
                } else {
                    v
                };
                let mut i = 0;
                while v >= 0x80 {
                    out[i] = v as u8 | 0x80;
                    v >>= 7;
                    i += 1;
                }
                out[i] = v as u8;
                i + 1
            }
        }
    }

    /// Decode a value at the start of `b`: the value and the bytes it took, or `None` when
    /// `b` does not hold all of it (or, varints, it is malformed).
    pub fn decode(self, b: &[u8]) -> Option<(u64, usize)> {
        match self {
            IntKind::Fixed { bytes, le, signed } => {
                let n = bytes as usize;
                let s = b.get(..n)?;
                let mut all = [0u8; 8];
                let v = if le {
                    all[..n].copy_from_slice(s);
                    u64::from_le_bytes(all)
                } else {
                    all[8 - n..].copy_from_slice(s);
                    u64::from_be_bytes(all)
                };
                // A signed value sign-extended, so that its decimal text is right.
                let v = if signed && n < 8 && v >> (n * 8 - 1) & 1 == 1 {
                    v | (u64::MAX << (n * 8))
                } else {
                    v
                };
                Some((v, n))
            }
            IntKind::Varint | IntKind::Mqtt => {
                let most = if self == IntKind::Mqtt { 4 } else { 10 };
                let mut v = 0u64;
                for (i, &x) in b.iter().take(most).enumerate() {
                    v |= u64::from(x & 0x7f) << (7 * i);
                    if x & 0x80 == 0 {
                        return Some((v, i + 1));
                    }
                }
                None
            }
        }
    }

    /// Whether this type's decimal text of `v` is signed.
    pub fn signed(self) -> bool {
        matches!(self, IntKind::Fixed { signed: true, .. })
    }

    /// Whether literal `v` (negative: `neg`) fits.
    pub(super) fn fits(self, v: u64, neg: bool) -> bool {
        match self {
            IntKind::Fixed { bytes, signed, .. } => {
                let bits = u32::from(bytes) * 8;
                match (signed, neg) {
                    (false, true) => false,
                    (false, false) => bits == 64 || v < 1 << bits,
                    (true, false) => v < 1 << (bits - 1),
                    (true, true) => v <= 1 << (bits - 1),
                }
            }
            IntKind::Varint => !neg,
            IntKind::Mqtt => !neg && v <= MQTT_MAX,
        }
    }
}

/// Where an integer field's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumSrc {
    Lit(u64),
    Conn,
    Seq,
    TsUs,
    SeqMod(u64),
    RandMod(u64),
    ConnMod(u64),
    /// A scenario variable's text, read as a decimal number.
    Var(u32),
}

/// A decimal number in a variable's text (`-5` as two's complement); 0 for anything else.
pub fn parse_num(b: &[u8]) -> u64 {
    let t = std::str::from_utf8(b).unwrap_or("").trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    match t.parse::<u64>() {
        Ok(v) if neg => v.wrapping_neg(),
        Ok(v) => v,
        Err(_) => 0,
    }
}
