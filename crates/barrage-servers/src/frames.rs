//! The `frames` wire of the chat server (`barrage serve frames`): a length-prefixed binary
//! game protocol with typed-object payloads, in the spirit of SmartFoxServer 2X's.
//!
//! A frame is a header byte, a length and a payload:
//!
//! | bytes | what |
//! |---|---|
//! | 1 | header: `0x80` (binary); `0x88` when the length is 4 bytes (bit 3, "big size"); any other bit set is refused |
//! | 2 (or 4) | the payload's length, big-endian |
//! | n | the payload: one object |
//!
//! An object is `0x12`, a u16be count of entries, then per entry a key (u16be length and
//! UTF-8 bytes) and a typed value: `0x00` null, `0x01` bool (1 byte), `0x02` byte, `0x03` short
//! (i16be), `0x04` int (i32be), `0x05` long (i64be), `0x06` float (f32be), `0x07` double
//! (f64be), `0x08` string (u16be length, UTF-8), `0x0a` byte array (i32be length, bytes),
//! `0x12` object (nested, at most [`MAX_DEPTH`] deep).
//!
//! A message is an object `{c: byte (0), a: short (the action), p: object (the parameters)}`:
//!
//! | action | client sends `p` | server answers |
//! |---|---|---|
//! | 1 login | `{un: string}` | `a 1, p {un}` |
//! | 4 join | `{}` | `a 4, p {r: int room, n: int size, cap: int}` to the user, `a 1001, p {r, n}` to the room's others |
//! | 7 public message | `{m: byte array}` | `a 7, p {r, n: int 0, u: string sender, m: byte array}` to every member (the bytes relayed as sent) |
//! | 5 leave | `{}` | `a 5, p {}` (the user leaves its room), and `a 1001` to those who stay |
//! | 29 ping | `{}` | `a 29, p {}` |
//! | other | | `a` as sent, `p {ec: short 1, em: string}` |
//!
//! `r` then `n` come first in the parameters of a join's answer, a member count and a
//! message, at the same offsets (their i32 values at bytes 27 and 35 of the frame; the action,
//! an i16, at byte 15): a client can read them by offset. A frame or object that breaks these rules, or a frame over [`MAX_FRAME`], closes the
//! connection (counted as `malformed`).

/// The longest payload a client may send.
pub const MAX_FRAME: usize = 64 * 1024;
/// How deep objects may nest.
pub const MAX_DEPTH: usize = 8;

pub const LOGIN: i16 = 1;
pub const JOIN: i16 = 4;
pub const LEAVE: i16 = 5;
pub const PUBLIC_MESSAGE: i16 = 7;
pub const PING: i16 = 29;
pub const MEMBERS: i16 = 1001;

const OBJECT: u8 = 0x12;

/// A typed value of an object.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Byte(u8),
    Short(i16),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    Str(&'a [u8]),
    Bytes(&'a [u8]),
    Object(Vec<(&'a [u8], Value<'a>)>),
}

/// What the first bytes of `buf` are.
#[derive(Debug, PartialEq)]
pub enum Parsed<'a> {
    /// A whole frame of `len` bytes, and its payload.
    Frame { len: usize, payload: &'a [u8] },
    /// Not all here yet.
    Partial,
    /// Not a frame: the reason.
    Bad(&'static str),
}

/// The frame at the start of `buf`.
pub fn frame(buf: &[u8]) -> Parsed<'_> {
    let Some(&h) = buf.first() else {
        return Parsed::Partial;
    };
    if h & !0x08 != 0x80 {
        return Parsed::Bad("header byte other than 0x80 or 0x88");
    }
    let wide = h & 0x08 != 0;
    let head = if wide { 5 } else { 3 };
    if buf.len() < head {
        return Parsed::Partial;
    }
    let len = if wide {
        u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize
    } else {
        u16::from_be_bytes([buf[1], buf[2]]) as usize
    };
    if len > MAX_FRAME {
        return Parsed::Bad("frame longer than 64 KiB");
    }
    if buf.len() < head + len {
        return Parsed::Partial;
    }
    Parsed::Frame {
        len: head + len,
        payload: &buf[head..head + len],
    }
}

/// The object a payload holds (all of it: bytes after the object are an error).
pub fn object(payload: &[u8]) -> Result<Value<'_>, &'static str> {
    let mut r = Reader { b: payload, at: 0 };
    if r.u8()? != OBJECT {
        return Err("payload is not an object");
    }
    let v = r.object(1)?;
    if r.at != payload.len() {
        return Err("bytes after the object");
    }
    Ok(v)
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        let end = self.at.checked_add(n).ok_or("length overflows")?;
        let s = self.b.get(self.at..end).ok_or("object cut short")?;
        self.at = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, &'static str> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, &'static str> {
        let s = self.take(2)?;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }

    fn arr<const N: usize>(&mut self) -> Result<[u8; N], &'static str> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    fn object(&mut self, depth: usize) -> Result<Value<'a>, &'static str> {
        if depth > MAX_DEPTH {
            return Err("objects nested more than 8 deep");
        }
        let n = self.u16()? as usize;
        // Each entry takes at least 3 bytes: no allocation of what a count claims.
        if n > (self.b.len() - self.at) / 3 {
            return Err("more entries than bytes");
        }
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            let klen = self.u16()? as usize;
            let key = self.take(klen)?;
            if std::str::from_utf8(key).is_err() {
                return Err("key not UTF-8");
            }
            let v = self.value(depth)?;
            entries.push((key, v));
        }
        Ok(Value::Object(entries))
    }

    fn value(&mut self, depth: usize) -> Result<Value<'a>, &'static str> {
        Ok(match self.u8()? {
            0x00 => Value::Null,
            0x01 => match self.u8()? {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                _ => return Err("bool other than 0 or 1"),
            },
            0x02 => Value::Byte(self.u8()?),
            0x03 => Value::Short(i16::from_be_bytes(self.arr()?)),
            0x04 => Value::Int(i32::from_be_bytes(self.arr()?)),
            0x05 => Value::Long(i64::from_be_bytes(self.arr()?)),
            0x06 => Value::Float(f32::from_be_bytes(self.arr()?)),
            0x07 => Value::Double(f64::from_be_bytes(self.arr()?)),
            0x08 => {
                let n = self.u16()? as usize;
                let s = self.take(n)?;
                if std::str::from_utf8(s).is_err() {
                    return Err("string not UTF-8");
                }
                Value::Str(s)
            }
            0x0a => {
                let n = i32::from_be_bytes(self.arr()?);
                let n = usize::try_from(n).map_err(|_| "negative byte array length")?;
                Value::Bytes(self.take(n)?)
            }
            OBJECT => self.object(depth + 1)?,
            _ => return Err("unknown value type"),
        })
    }
}

impl<'a> Value<'a> {
    /// The value of `key` in an object.
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        match self {
            Value::Object(e) => e.iter().find(|(k, _)| *k == key.as_bytes()).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// A message's action and parameters: `{c: byte 0, a: short, p: object}`.
pub fn message<'v, 'a>(o: &'v Value<'a>) -> Result<(i16, &'v Value<'a>), &'static str> {
    match (o.get("c"), o.get("a"), o.get("p")) {
        (Some(Value::Byte(0)), Some(Value::Short(a)), Some(p @ Value::Object(_))) => Ok((*a, p)),
        _ => Err("a message is {c: byte 0, a: short, p: object}"),
    }
}

/// Writes objects into a frame: [`Writer::finish`] fills in the length.
pub struct Writer<'o> {
    out: &'o mut Vec<u8>,
    start: usize,
}

impl<'o> Writer<'o> {
    /// A message frame `{c: 0, a: action, p: {` with `params` entries to follow.
    pub fn message(out: &'o mut Vec<u8>, action: i16, params: u16) -> Writer<'o> {
        let start = out.len();
        out.extend_from_slice(&[0x80, 0, 0, OBJECT, 0, 3]);
        let mut w = Writer { out, start };
        w.key("c");
        w.out.extend_from_slice(&[0x02, 0]);
        w.key("a");
        w.out.push(0x03);
        w.out.extend_from_slice(&action.to_be_bytes());
        w.key("p");
        w.out.push(OBJECT);
        w.out.extend_from_slice(&params.to_be_bytes());
        w
    }

    fn key(&mut self, k: &str) {
        self.out.extend_from_slice(&(k.len() as u16).to_be_bytes());
        self.out.extend_from_slice(k.as_bytes());
    }

    pub fn int(&mut self, k: &str, v: i32) -> &mut Self {
        self.key(k);
        self.out.push(0x04);
        self.out.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn short(&mut self, k: &str, v: i16) -> &mut Self {
        self.key(k);
        self.out.push(0x03);
        self.out.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// A string, cut at 65,535 bytes.
    pub fn str(&mut self, k: &str, v: &[u8]) -> &mut Self {
        let v = &v[..v.len().min(u16::MAX as usize)];
        self.key(k);
        self.out.push(0x08);
        self.out.extend_from_slice(&(v.len() as u16).to_be_bytes());
        self.out.extend_from_slice(v);
        self
    }

    pub fn bytes(&mut self, k: &str, v: &[u8]) -> &mut Self {
        self.key(k);
        self.out.push(0x0a);
        self.out.extend_from_slice(&(v.len() as i32).to_be_bytes());
        self.out.extend_from_slice(v);
        self
    }

    /// The frame's length filled in: a payload over 65,535 bytes takes the 4-byte length.
    pub fn finish(self) {
        let len = self.out.len() - self.start - 3;
        if let Ok(l) = u16::try_from(len) {
            self.out[self.start + 1..self.start + 3].copy_from_slice(&l.to_be_bytes());
        } else {
            self.out[self.start] = 0x88;
            let l = (len as u32).to_be_bytes();
            self.out.splice(self.start + 1..self.start + 3, l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn join_answer(room: i32, size: i32) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = Writer::message(&mut out, JOIN, 3);
        w.int("r", room).int("n", size).int("cap", 8);
        w.finish();
        out
    }

    #[test]
    fn a_written_message_reads_back_at_every_split() {
        let mut out = join_answer(7, 3);
        let mut w = Writer::message(&mut out, PUBLIC_MESSAGE, 4);
        w.int("r", 7)
            .int("n", 0)
            .str("u", b"ann")
            .bytes("m", b"\x00stamp\xff");
        w.finish();
        let first = match frame(&out) {
            Parsed::Frame { len, .. } => len,
            other => panic!("{other:?}"),
        };
        for split in 0..out.len() {
            assert!(matches!(
                frame(&out[..split.min(first - 1)]),
                Parsed::Partial
            ));
        }
        let Parsed::Frame { payload, .. } = frame(&out[first..]) else {
            panic!()
        };
        let o = object(payload).unwrap();
        let (a, p) = message(&o).unwrap();
        assert_eq!(a, PUBLIC_MESSAGE);
        assert_eq!(p.get("u"), Some(&Value::Str(b"ann")));
        assert_eq!(p.get("m"), Some(&Value::Bytes(b"\x00stamp\xff")));
    }

    /// `r` and `n` sit at bytes 27 and 35 (their i32 values) of a join's answer, a member
    /// count and a message, as the module's docs say.
    #[test]
    fn room_and_size_are_at_fixed_offsets() {
        let j = join_answer(0x0102_0304, 5);
        assert_eq!(&j[27..31], &[1, 2, 3, 4]);
        assert_eq!(&j[35..39], &5i32.to_be_bytes());
        assert_eq!(&j[15..17], &JOIN.to_be_bytes());
        let mut m = Vec::new();
        let mut w = Writer::message(&mut m, MEMBERS, 2);
        w.int("r", 9).int("n", 4);
        w.finish();
        assert_eq!(&m[27..31], &9i32.to_be_bytes());
        assert_eq!(&m[35..39], &4i32.to_be_bytes());
        assert_eq!(&m[15..17], &MEMBERS.to_be_bytes());
    }

    #[test]
    fn malformed_frames_and_objects_are_refused() {
        assert_eq!(
            frame(b"\x81\x00\x00"),
            Parsed::Bad("header byte other than 0x80 or 0x88")
        );
        assert_eq!(
            frame(b"\x88\x00\x01\x00\x01"),
            Parsed::Bad("frame longer than 64 KiB")
        );
        assert!(object(b"\x12\xff\xff").is_err());
        assert!(object(b"\x12\x00\x01\x00\x01k\x0a\xff\xff\xff\xff").is_err());
        assert!(object(b"\x12\x00\x01\x00\x01k\x01\x02").is_err());
        assert!(object(b"\x12\x00\x00extra").is_err());
        let mut deep = vec![0x12, 0, 1];
        for _ in 0..10 {
            deep.extend_from_slice(&[0, 1, b'k', 0x12, 0, 1]);
        }
        assert!(object(&deep).is_err());
        let ok = object(b"\x12\x00\x01\x00\x01k\x12\x00\x00").unwrap();
        assert!(message(&ok).is_err());
    }

    #[test]
    fn a_long_payload_takes_the_wide_length() {
        let mut out = Vec::new();
        let mut w = Writer::message(&mut out, PUBLIC_MESSAGE, 1);
        w.bytes("m", &[7; 70_000]);
        w.finish();
        assert_eq!(out[0], 0x88);
        let n = u32::from_be_bytes([out[1], out[2], out[3], out[4]]) as usize;
        assert_eq!(n + 5, out.len());
    }
}
