//! HPACK (RFC 7541): the header compression of HTTP/2, sans-IO over byte slices.
//!
//! Decoding is complete: indexed fields, literals with and without indexing (and never
//! indexed), Huffman strings, the dynamic table with its size updates. The table keeps its
//! entries in one byte buffer (allocated at the first insertion and bounded by the size this
//! side advertised), so a connection whose server never indexes anything holds no table.
//!
//! Encoding is what barrage's requests need, no more: a request's header list is the same on
//! every request of a run but for its placeholders, so each connection's first request adds
//! its fixed fields to the server's table ([`Block`] with incremental indexing) and every later
//! one names them by index, a byte each. Strings are sent raw (no Huffman): after the first
//! request there are none left but the values with placeholders.

use super::huffman;
use std::collections::VecDeque;

/// The static table (RFC 7541, Appendix A): index 1 is the first entry.
pub const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// Bytes an entry costs in the table beyond its name and value (RFC 7541, 4.1).
pub const ENTRY_OVERHEAD: usize = 32;

/// Why a header block does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HpackError {
    #[error("a header block ends inside a field")]
    Truncated,
    #[error("an integer longer than 32 bits")]
    Overflow,
    #[error("index {0} is in neither table (the dynamic table has {1} entries)")]
    BadIndex(u64, usize),
    #[error("index 0")]
    ZeroIndex,
    #[error("a Huffman string does not decode")]
    Huffman,
    #[error("a table size update to {0} above the {1} this client allows")]
    SizeTooBig(u64, usize),
    #[error("a table size update after the block's first field")]
    LateSizeUpdate,
    #[error("a header list larger than {0} bytes")]
    ListTooLarge(usize),
}

/// Decode an integer with an `n`-bit prefix from `src[*at..]` (RFC 7541, 5.1).
pub fn int(src: &[u8], at: &mut usize, n: u32) -> Result<u64, HpackError> {
    let mask = (1u64 << n) - 1;
    let first = *src.get(*at).ok_or(HpackError::Truncated)?;
    *at += 1;
    let mut v = u64::from(first) & mask;
    if v < mask {
        return Ok(v);
    }
    let mut shift = 0;
    loop {
        let b = *src.get(*at).ok_or(HpackError::Truncated)?;
        *at += 1;
        v += u64::from(b & 0x7f) << shift;
        if v > u64::from(u32::MAX) {
            return Err(HpackError::Overflow);
        }
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
    }
}

/// Append an integer with an `n`-bit prefix; `flags` are the first byte's high bits.
pub fn put_int(out: &mut Vec<u8>, flags: u8, n: u32, v: u64) {
    let mask = (1u64 << n) - 1;
    if v < mask {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | mask as u8);
    let mut v = v - mask;
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Append a raw (not Huffman-coded) string literal.
pub fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 0, 7, s.len() as u64);
    out.extend_from_slice(s);
}

/// One entry of the dynamic table: its bytes at `at` (name, then value).
#[derive(Clone, Copy, Debug)]
struct Entry {
    at: usize,
    name: u32,
    value: u32,
}

/// The dynamic table: newest entry last; bytes in one buffer, compacted as entries leave.
#[derive(Debug, Default)]
struct Table {
    bytes: Vec<u8>,
    entries: VecDeque<Entry>,
    /// RFC size: names, values and 32 per entry.
    size: usize,
    /// The size the encoder set (at most `limit`).
    max: usize,
}

impl Table {
    fn get(&self, dynamic: usize) -> Option<(&[u8], &[u8])> {
        let e = self.entries.get(self.entries.len().checked_sub(1 + dynamic)?)?;
        let n = e.at + e.name as usize;
        Some((&self.bytes[e.at..n], &self.bytes[n..n + e.value as usize]))
    }

    fn evict_to(&mut self, max: usize) {
        while self.size > max {
            let e = self.entries.pop_front().expect("a table with a size has entries");
            self.size -= e.name as usize + e.value as usize + ENTRY_OVERHEAD;
        }
        if self.entries.is_empty() {
            self.bytes.clear();
        }
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let cost = name.len() + value.len() + ENTRY_OVERHEAD;
        if cost > self.max {
            // Larger than the table: it empties it and is not added (RFC 7541, 4.4).
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max - cost);
        // Compact when the bytes of evicted entries are most of the buffer.
        if let Some(first) = self.entries.front().map(|e| e.at) {
            if first > self.max {
                self.bytes.drain(..first);
                for e in self.entries.iter_mut() {
                    e.at -= first;
                }
            }
        }
        let at = self.bytes.len();
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        self.entries.push_back(Entry {
            at,
            name: name.len() as u32,
            value: value.len() as u32,
        });
        self.size += cost;
    }
}

/// A connection's HPACK decoder.
#[derive(Debug)]
pub struct Decoder {
    table: Table,
    /// The table size this side allows (its SETTINGS_HEADER_TABLE_SIZE).
    limit: usize,
    /// Huffman-decoded strings of the field being decoded.
    scratch: Vec<u8>,
}

/// Where a decoded string is: in the block, or decoded into scratch.
#[derive(Clone, Copy)]
enum Str {
    Block(usize, usize),
    Scratch(usize, usize),
}

impl Decoder {
    /// A decoder allowing a table of `limit` bytes (what this side advertises).
    pub fn new(limit: usize) -> Self {
        Self {
            table: Table {
                max: limit,
                ..Table::default()
            },
            limit,
            scratch: Vec::new(),
        }
    }

    /// Forget the table (a new connection).
    pub fn reset(&mut self) {
        self.table.evict_to(0);
        self.table.max = self.limit;
        self.scratch.clear();
    }

    /// Entries in the dynamic table, and its RFC size.
    pub fn table_len(&self) -> (usize, usize) {
        (self.table.entries.len(), self.table.size)
    }

    /// Heap bytes this decoder holds.
    pub fn heap_bytes(&self) -> usize {
        self.table.bytes.capacity()
            + self.table.entries.capacity() * std::mem::size_of::<Entry>()
            + self.scratch.capacity()
    }

    fn string(&mut self, src: &[u8], at: &mut usize) -> Result<Str, HpackError> {
        let huff = src.get(*at).ok_or(HpackError::Truncated)? & 0x80 != 0;
        let len = int(src, at, 7)? as usize;
        let start = *at;
        let end = start.checked_add(len).filter(|&e| e <= src.len());
        let end = end.ok_or(HpackError::Truncated)?;
        *at = end;
        if !huff {
            return Ok(Str::Block(start, end));
        }
        let s = self.scratch.len();
        huffman::decode(&src[start..end], &mut self.scratch).map_err(|_| HpackError::Huffman)?;
        Ok(Str::Scratch(s, self.scratch.len()))
    }

    /// Decode one header block, calling `field(name, value)` for each field in order.
    /// `max_list` bounds the decoded list (names, values and 32 per field, as
    /// SETTINGS_MAX_HEADER_LIST_SIZE counts): a larger one is an error.
    pub fn decode(
        &mut self,
        src: &[u8],
        max_list: usize,
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        let mut at = 0;
        let mut list = 0usize;
        let mut first = true;
        while at < src.len() {
            let b = src[at];
            if b & 0xe0 == 0x20 {
                // Dynamic table size update: only at the start of a block.
                if !first {
                    return Err(HpackError::LateSizeUpdate);
                }
                let size = int(src, &mut at, 5)?;
                if size > self.limit as u64 {
                    return Err(HpackError::SizeTooBig(size, self.limit));
                }
                self.table.max = size as usize;
                self.table.evict_to(size as usize);
                continue;
            }
            first = false;
            self.scratch.clear();
            let len = if b & 0x80 != 0 {
                // Indexed field.
                let i = int(src, &mut at, 7)?;
                let (n, v) = lookup(&self.table, i)?;
                field(n, v);
                n.len() + v.len()
            } else {
                // A literal: with incremental indexing (01), without (0000) or never (0001).
                let (prefix, indexing) = if b & 0x40 != 0 { (6, true) } else { (4, false) };
                let i = int(src, &mut at, prefix)?;
                let name = if i == 0 {
                    self.string(src, &mut at)?
                } else {
                    // An indexed name is copied: the insertion below may move the table.
                    let (n, _) = lookup(&self.table, i)?;
                    self.scratch.extend_from_slice(n);
                    Str::Scratch(0, self.scratch.len())
                };
                let value = self.string(src, &mut at)?;
                let scratch = &self.scratch;
                let pick = |s: Str| -> &[u8] {
                    match s {
                        Str::Block(a, b) => &src[a..b],
                        Str::Scratch(a, b) => &scratch[a..b],
                    }
                };
                let (n, v) = (pick(name), pick(value));
                field(n, v);
                if indexing {
                    self.table.insert(n, v);
                }
                n.len() + v.len()
            };
            list += len + ENTRY_OVERHEAD;
            if list > max_list {
                return Err(HpackError::ListTooLarge(max_list));
            }
        }
        Ok(())
    }
}

/// Field `i` of the static table then the dynamic one.
fn lookup(table: &Table, i: u64) -> Result<(&[u8], &[u8]), HpackError> {
    match i {
        0 => Err(HpackError::ZeroIndex),
        1..=61 => {
            let (n, v) = STATIC[i as usize - 1];
            Ok((n.as_bytes(), v.as_bytes()))
        }
        _ => table
            .get(i as usize - 62)
            .ok_or(HpackError::BadIndex(i, table.entries.len())),
    }
}
