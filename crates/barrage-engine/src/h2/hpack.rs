//! HPACK (RFC 7541): the header compression of HTTP/2, sans-IO over byte slices.
//!
//! Decoding is complete: indexed fields, literals with and without indexing (and never
//! indexed), Huffman strings, the dynamic table with its size updates. The table keeps its
//! entries in one byte buffer (allocated at the first insertion and bounded by the size this
//! side advertised), so a connection whose server never indexes anything holds no table.
//!
//! Encoding is what barrage's requests need, no more: a request's header list is the same on
//! every request of a run but for its placeholders, so each connection's first request adds
//! its fixed fields to the server's table with incremental indexing
//! ([`H2Request::render_block`](super::request::H2Request::render_block)) and every later one
//! names them by index, a byte each. Strings are sent raw (no Huffman): after the first
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
        // Zero continuation bytes add nothing but length: bound the length too.
        if shift > 28 {
            return Err(HpackError::Overflow);
        }
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
        let e = self
            .entries
            .get(self.entries.len().checked_sub(1 + dynamic)?)?;
        let n = e.at + e.name as usize;
        Some((&self.bytes[e.at..n], &self.bytes[n..n + e.value as usize]))
    }

    fn evict_to(&mut self, max: usize) {
        while self.size > max {
            let e = self
                .entries
                .pop_front()
                .expect("a table with a size has entries");
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

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn fields(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, HpackError> {
        let mut out = Vec::new();
        d.decode(block, 1 << 20, |n, v| {
            out.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        })?;
        Ok(out)
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn integers_round_trip_at_every_prefix() {
        for n in 1..=8 {
            for v in [
                0u64,
                1,
                9,
                10,
                30,
                31,
                126,
                127,
                128,
                255,
                1337,
                65_535,
                u32::MAX as u64,
            ] {
                let mut b = Vec::new();
                put_int(&mut b, 0, n, v);
                let mut at = 0;
                assert_eq!(int(&b, &mut at, n), Ok(v), "{n} {v}");
                assert_eq!(at, b.len());
            }
        }
        // RFC 7541 C.1.2: 1337 with a 5-bit prefix.
        let mut b = Vec::new();
        put_int(&mut b, 0, 5, 1337);
        assert_eq!(b, [31, 0x9a, 0x0a]);
        let mut at = 0;
        assert_eq!(
            int(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], &mut at, 8),
            Err(HpackError::Overflow)
        );
        let mut at = 0;
        assert_eq!(int(&[0x1f, 0x80], &mut at, 5), Err(HpackError::Truncated));
        // Found by the fuzz target: zero continuation bytes until the shift overflowed.
        let mut at = 0;
        assert_eq!(
            int(
                &[0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0],
                &mut at,
                5
            ),
            Err(HpackError::Overflow)
        );
    }

    /// RFC 7541 Appendix C.3 (requests, raw strings) and C.4 (the same, Huffman): the table
    /// carries from block to block.
    #[test]
    fn rfc_7541_request_examples_decode_with_their_table() {
        for (blocks, size) in [
            (
                [
                    "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                    "8286 84be 5808 6e6f 2d63 6163 6865",
                    "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
                ],
                164,
            ),
            (
                [
                    "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
                    "8286 84be 5886 a8eb 1064 9cbf",
                    "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
                ],
                164,
            ),
        ] {
            let mut d = Decoder::new(4096);
            let base = [(":method", "GET"), (":scheme", "http"), (":path", "/")];
            let mut one = pairs(&base);
            one.push((":authority".into(), "www.example.com".into()));
            assert_eq!(fields(&mut d, &hex(blocks[0])).unwrap(), one);
            assert_eq!(d.table_len(), (1, 57));
            let mut two = one.clone();
            two.push(("cache-control".into(), "no-cache".into()));
            assert_eq!(fields(&mut d, &hex(blocks[1])).unwrap(), two);
            assert_eq!(d.table_len(), (2, 110));
            let three = pairs(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value"),
            ]);
            assert_eq!(fields(&mut d, &hex(blocks[2])).unwrap(), three);
            assert_eq!(d.table_len(), (3, size));
        }
    }

    /// RFC 7541 C.5.1-2: responses with a 256-byte table, an entry evicted by the second.
    #[test]
    fn rfc_7541_response_examples_evict_the_oldest_entry() {
        let mut d = Decoder::new(256);
        let first = hex(
            "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 \
             2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 \
             6c65 2e63 6f6d",
        );
        let mut want = pairs(&[
            (":status", "302"),
            ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
            ("location", "https://www.example.com"),
        ]);
        assert_eq!(fields(&mut d, &first).unwrap(), want);
        assert_eq!(d.table_len(), (4, 222));
        want[0].1 = "307".into();
        assert_eq!(fields(&mut d, &hex("4803 3330 37c1 c0bf")).unwrap(), want);
        assert_eq!(d.table_len(), (4, 222));
    }

    #[test]
    fn malformed_blocks_are_errors_never_panics() {
        let mut d = Decoder::new(4096);
        assert_eq!(fields(&mut d, &[0x80]), Err(HpackError::ZeroIndex));
        assert_eq!(fields(&mut d, &[0xbe]), Err(HpackError::BadIndex(62, 0)));
        assert_eq!(
            fields(&mut d, &[0x40, 0x05, b'a']),
            Err(HpackError::Truncated)
        );
        assert_eq!(
            fields(&mut d, &[0x82, 0x20]),
            Err(HpackError::LateSizeUpdate)
        );
        // 31 + 98 + (31 << 7) = 4097: one past the limit.
        assert_eq!(
            fields(&mut d, &[0x3f, 0xe2, 0x1f]),
            Err(HpackError::SizeTooBig(4097, 4096))
        );
        // A Huffman string that is EOS.
        assert_eq!(
            fields(&mut d, &[0x40, 0x84, 0xff, 0xff, 0xff, 0xff, 0x00]),
            Err(HpackError::Huffman)
        );
        // A header list over the limit.
        let big = [0x82; 10];
        assert_eq!(
            d.decode(&big, 5 * 32, |_, _| {}),
            Err(HpackError::ListTooLarge(160))
        );
    }

    #[test]
    fn an_entry_larger_than_the_table_empties_it() {
        let mut d = Decoder::new(64);
        let mut b = Vec::new();
        b.push(0x40);
        put_str(&mut b, b"a");
        put_str(&mut b, b"b");
        fields(&mut d, &b).unwrap();
        assert_eq!(d.table_len(), (1, 34));
        let mut b = vec![0x40];
        put_str(&mut b, &[b'x'; 20]);
        put_str(&mut b, &[b'y'; 20]);
        fields(&mut d, &b).unwrap();
        assert_eq!(d.table_len(), (0, 0));
        // A size update to 0 then back empties it too.
        fields(&mut d, &{
            let mut b = vec![0x40];
            put_str(&mut b, b"a");
            put_str(&mut b, b"b");
            b
        })
        .unwrap();
        fields(&mut d, &[0x20, 0x3f, 0x21]).unwrap();
        assert_eq!(d.table_len(), (0, 0));
    }

    /// Entries come and go many times over: the buffer is compacted and stays bounded.
    #[test]
    fn the_table_stays_bounded_as_entries_cycle() {
        let mut d = Decoder::new(4096);
        for i in 0..10_000u32 {
            let mut b = vec![0x40];
            put_str(&mut b, b"x-seq");
            put_str(&mut b, i.to_string().as_bytes());
            let f = fields(&mut d, &b).unwrap();
            assert_eq!(f, vec![("x-seq".to_string(), i.to_string())]);
            // The newest entry is index 62.
            assert_eq!(fields(&mut d, &[0xbe]).unwrap(), f);
        }
        assert!(d.table_len().1 <= 4096);
        assert!(d.heap_bytes() < 4 * 4096, "{}", d.heap_bytes());
    }
}
