//! HPACK's Huffman code (RFC 7541, Appendix B): decoding only (barrage sends its own strings
//! raw). The code is canonical, so the table is the code length of each symbol (256 is EOS);
//! the codes follow from the lengths, and decoding needs only where each length starts.

/// Code length in bits of each symbol, 0-255 and EOS (RFC 7541, Appendix B).
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

const EOS: u16 = 256;

/// The canonical code, arranged for decoding: symbols in code order, and per length the first
/// code of that length and where its symbols start in `syms`.
struct Canonical {
    syms: [u16; 257],
    first: [u32; 31],
    start: [u16; 31],
    count: [u16; 31],
    /// The first 8 bits of input: (symbol, length) when a code of at most 8 bits starts there.
    fast: [(u16, u8); 256],
}

const fn canonical() -> Canonical {
    let mut c = Canonical {
        syms: [0; 257],
        first: [0; 31],
        start: [0; 31],
        count: [0; 31],
        fast: [(0, 0); 256],
    };
    // Symbols sorted by (length, symbol): the canonical order.
    let mut n = 0;
    let mut len = 1;
    while len <= 30 {
        c.start[len] = n as u16;
        let mut s = 0;
        while s < 257 {
            if LENGTHS[s] as usize == len {
                c.syms[n] = s as u16;
                n += 1;
                c.count[len] += 1;
            }
            s += 1;
        }
        len += 1;
    }
    // First code of each length: (first + count of the previous length) << 1.
    let mut code: u32 = 0;
    let mut len = 1;
    while len <= 30 {
        c.first[len] = code;
        code = (code + c.count[len] as u32) << 1;
        len += 1;
    }
    // Codes of up to 8 bits, for every 8-bit prefix that starts with one.
    let mut len = 1;
    while len <= 8 {
        let mut i = 0;
        while i < c.count[len] as u32 {
            let code = c.first[len] + i;
            let sym = c.syms[c.start[len] as usize + i as usize];
            let shift = 8 - len;
            let mut tail = 0;
            while tail < (1 << shift) {
                c.fast[((code << shift) | tail) as usize] = (sym, len as u8);
                tail += 1;
            }
            i += 1;
        }
        len += 1;
    }
    c
}

static CODE: Canonical = canonical();

/// A Huffman-coded string that does not decode: a code that is no symbol's, EOS inside the
/// string, or padding that is longer than 7 bits or not the EOS prefix (all ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadHuffman;

/// Decode `src` and append the bytes to `out`.
pub fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), BadHuffman> {
    let mut acc: u64 = 0; // bits not yet used, right-aligned
    let mut bits: u32 = 0;
    let mut it = src.iter();
    loop {
        while bits <= 56 {
            match it.next() {
                Some(&b) => {
                    acc = (acc << 8) | u64::from(b);
                    bits += 8;
                }
                None => break,
            }
        }
        if bits == 0 {
            return Ok(());
        }
        // The fast path: a code of at most 8 bits among the next 8 (padded with ones, which
        // is what a valid end pads with).
        let peek = if bits >= 8 {
            (acc >> (bits - 8)) as usize & 0xff
        } else {
            ((acc << (8 - bits)) as usize | ((1 << (8 - bits)) - 1)) & 0xff
        };
        let (sym, len) = CODE.fast[peek];
        if len != 0 && u32::from(len) <= bits {
            out.push(sym as u8);
            bits -= u32::from(len);
            acc &= (1u64 << bits) - 1;
            continue;
        }
        // The end: at most 7 bits of ones.
        if bits < 8 {
            let pad = acc & ((1 << bits) - 1);
            return if pad == (1 << bits) - 1 {
                Ok(())
            } else {
                Err(BadHuffman)
            };
        }
        // A longer code: bit by bit from length 9.
        let mut len = 9;
        loop {
            if len > 30 || len > bits {
                return Err(BadHuffman);
            }
            let code = (acc >> (bits - len)) as u32 & ((1 << len) - 1);
            let l = len as usize;
            let off = code.wrapping_sub(CODE.first[l]);
            if off < u32::from(CODE.count[l]) {
                let sym = CODE.syms[CODE.start[l] as usize + off as usize];
                if sym == EOS {
                    return Err(BadHuffman);
                }
                out.push(sym as u8);
                bits -= len;
                acc &= (1u64 << bits) - 1;
                break;
            }
            len += 1;
        }
    }
}

/// Encode `src` (tests, and the fuzz target's round trip).
pub fn encode(src: &[u8], out: &mut Vec<u8>) {
    let mut acc: u64 = 0;
    let mut bits = 0u32;
    for &b in src {
        let (code, len) = code_of(b as usize);
        acc = (acc << len) | u64::from(code);
        bits += len;
        while bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
        acc &= (1u64 << bits) - 1;
    }
    if bits > 0 {
        out.push(((acc << (8 - bits)) | ((1 << (8 - bits)) - 1)) as u8);
    }
}

fn code_of(sym: usize) -> (u32, u32) {
    let len = LENGTHS[sym] as usize;
    let start = CODE.start[len] as usize;
    let n = CODE.count[len] as usize;
    let i = CODE.syms[start..start + n]
        .iter()
        .position(|&s| s as usize == sym)
        .expect("every symbol has a code");
    (CODE.first[len] + i as u32, len as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_is_complete_and_prefix_free() {
        // Kraft's sum of a complete prefix code is exactly 1.
        let sum: f64 = LENGTHS.iter().map(|&l| 0.5f64.powi(i32::from(l))).sum();
        assert!((sum - 1.0).abs() < 1e-12, "{sum}");
        // RFC 7541 Appendix B: '0' is 00000 (5 bits), 'a' 00011, EOS 30 ones.
        assert_eq!(code_of(b'0' as usize), (0, 5));
        assert_eq!(code_of(b'a' as usize), (3, 5));
        assert_eq!(code_of(256), ((1 << 30) - 1, 30));
    }

    #[test]
    fn rfc_7541_examples_decode() {
        // Appendix C.4.1: "www.example.com".
        let www = [
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ];
        let mut out = Vec::new();
        decode(&www, &mut out).unwrap();
        assert_eq!(out, b"www.example.com");
        // C.4.2: "no-cache".
        out.clear();
        decode(&[0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf], &mut out).unwrap();
        assert_eq!(out, b"no-cache");
        let mut enc = Vec::new();
        encode(b"www.example.com", &mut enc);
        assert_eq!(enc, www);
    }

    #[test]
    fn every_byte_round_trips_and_bad_padding_is_refused() {
        let all: Vec<u8> = (0..=255).collect();
        for s in [&all[..], b"", b"200", b"application/grpc", &[0xff, 0, 0x80]] {
            let mut enc = Vec::new();
            encode(s, &mut enc);
            let mut out = Vec::new();
            decode(&enc, &mut out).unwrap();
            assert_eq!(out, s);
        }
        // '0' (00000) then 3 zero bits of padding: not the EOS prefix.
        assert_eq!(decode(&[0b0000_0000], &mut Vec::new()), Err(BadHuffman));
        // A whole byte of ones after a symbol: padding longer than 7 bits.
        assert_eq!(
            decode(&[0b0000_0111, 0xff], &mut Vec::new()),
            Err(BadHuffman)
        );
        // EOS itself (30 ones) inside the string.
        assert_eq!(
            decode(&[0xff, 0xff, 0xff, 0xff], &mut Vec::new()),
            Err(BadHuffman)
        );
    }
}
