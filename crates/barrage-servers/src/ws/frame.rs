//! RFC 6455 framing as the server sees it: client frame heads (which must be masked),
//! unmasking, server frame heads (never masked), close codes.
//!
//! Key decision: only the head is parsed here; payloads are unmasked in place wherever they
//! lie (the thread's read buffer in the common case), so a frame is never copied to be
//! decoded. Sans-IO, tested on byte strings.

/// Opcodes.
pub(crate) const CONTINUATION: u8 = 0x0;
pub(crate) const TEXT: u8 = 0x1;
pub(crate) const BINARY: u8 = 0x2;
pub(crate) const CLOSE: u8 = 0x8;
pub(crate) const PING: u8 = 0x9;
pub(crate) const PONG: u8 = 0xA;

/// Close codes the server sends.
pub(crate) const PROTOCOL_ERROR: u16 = 1002;
pub(crate) const INVALID_DATA: u16 = 1007;
pub(crate) const TOO_BIG: u16 = 1009;

/// Longest control frame: 2 to 14 head bytes (a client's always carry a 4-byte mask) and at
/// most 125 payload bytes.
pub(crate) const MAX_CONTROL_FRAME: usize = 14 + 125;

/// A client frame head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FrameHead {
    pub fin: bool,
    pub opcode: u8,
    pub mask: [u8; 4],
    /// Payload length.
    pub len: u64,
    /// Bytes of the head itself.
    pub head_len: usize,
}

impl FrameHead {
    pub(crate) fn is_control(&self) -> bool {
        self.opcode & 0x8 != 0
    }
}

/// What the front of a buffer holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    Partial,
    Head(FrameHead),
    /// The client broke the protocol: close with this code.
    Fail(u16),
}

/// Parses and checks the frame head at the front of `buf`: reserved bits clear, a known
/// opcode, control frames final and short, a mask present.
pub(crate) fn parse_head(buf: &[u8]) -> Parsed {
    let [b0, b1, ..] = *buf else {
        return Parsed::Partial;
    };
    let fin = b0 & 0x80 != 0;
    let opcode = b0 & 0x0F;
    if b0 & 0x70 != 0 || !matches!(opcode, CONTINUATION | TEXT | BINARY | CLOSE | PING | PONG) {
        return Parsed::Fail(PROTOCOL_ERROR);
    }
    if b1 & 0x80 == 0 {
        return Parsed::Fail(PROTOCOL_ERROR); // client frames must be masked
    }
    let (len, at) = match b1 & 0x7F {
        126 => match buf.get(2..4) {
            Some(ext) => (u64::from(u16::from_be_bytes([ext[0], ext[1]])), 4),
            None => return Parsed::Partial,
        },
        127 => match buf.get(2..10) {
            Some(ext) => {
                let mut bytes = [0; 8];
                bytes.copy_from_slice(ext);
                (u64::from_be_bytes(bytes), 10)
            }
            None => return Parsed::Partial,
        },
        short => (u64::from(short), 2),
    };
    if len >> 63 != 0 {
        return Parsed::Fail(PROTOCOL_ERROR);
    }
    let head = FrameHead {
        fin,
        opcode,
        mask: [0; 4],
        len,
        head_len: at + 4,
    };
    if head.is_control() && (!fin || len > 125) {
        return Parsed::Fail(PROTOCOL_ERROR);
    }
    let Some(mask) = buf.get(at..at + 4) else {
        return Parsed::Partial;
    };
    Parsed::Head(FrameHead {
        mask: [mask[0], mask[1], mask[2], mask[3]],
        ..head
    })
}

/// Unmasks `data` in place; `offset` is the position of `data[0]` within the frame's payload.
pub(crate) fn unmask(data: &mut [u8], mask: [u8; 4], offset: u64) {
    let shift = (offset % 4) as usize;
    let key: [u8; 4] = std::array::from_fn(|i| mask[(i + shift) % 4]);
    let wide = u64::from_ne_bytes([
        key[0], key[1], key[2], key[3], key[0], key[1], key[2], key[3],
    ]);
    let mut words = data.chunks_exact_mut(8);
    for word in &mut words {
        let mut bytes = [0; 8];
        bytes.copy_from_slice(word);
        word.copy_from_slice(&(u64::from_ne_bytes(bytes) ^ wide).to_ne_bytes());
    }
    // Whole words keep the key's phase (8 is a multiple of 4).
    for (i, byte) in words.into_remainder().iter_mut().enumerate() {
        *byte ^= key[i % 4];
    }
}

/// Appends an unmasked, final server frame head for a payload of `len` bytes.
pub(crate) fn write_head(out: &mut Vec<u8>, opcode: u8, len: usize) {
    out.push(0x80 | opcode);
    if len < 126 {
        out.push(len as u8);
    } else if let Ok(short) = u16::try_from(len) {
        out.push(126);
        out.extend_from_slice(&short.to_be_bytes());
    } else {
        out.push(127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
}

/// A close code a client may send (RFC 6455 7.4, IANA registry; 1004-1006 and 1015 are
/// reserved for local use and never on the wire).
pub(crate) fn valid_close_code(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A masked client frame, as a client would send it.
    fn client_frame(fin: bool, opcode: u8, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
        let mut frame = Vec::new();
        write_head(&mut frame, opcode, payload.len());
        if !fin {
            frame[0] &= 0x7F;
        }
        frame[1] |= 0x80;
        frame.extend_from_slice(&mask);
        let at = frame.len();
        frame.extend_from_slice(payload);
        unmask(&mut frame[at..], mask, 0);
        frame
    }

    #[test]
    fn heads_of_all_three_length_forms() {
        for len in [0, 1, 125, 126, 65_535, 65_536, 1 << 20] {
            let payload = vec![7; len];
            let frame = client_frame(true, BINARY, &payload, [1, 2, 3, 4]);
            let Parsed::Head(head) = parse_head(&frame) else {
                panic!("len {len}");
            };
            assert_eq!(
                (head.fin, head.opcode, head.len),
                (true, BINARY, len as u64)
            );
            assert_eq!(head.head_len + len, frame.len());
            assert_eq!(head.mask, [1, 2, 3, 4]);
            for cut in 0..head.head_len {
                assert_eq!(
                    parse_head(&frame[..cut]),
                    Parsed::Partial,
                    "len {len} cut {cut}"
                );
            }
        }
    }

    #[test]
    fn protocol_violations_fail_with_1002() {
        let unmasked = [0x81, 0x00];
        let reserved = [0xC1, 0x80, 0, 0, 0, 0];
        let bad_opcode = [0x83, 0x80, 0, 0, 0, 0];
        let long_ping = [0x89, 0xFE, 0, 126, 0, 0, 0, 0];
        let fragmented_ping = [0x09, 0x80, 0, 0, 0, 0];
        let huge = [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0];
        for frame in [
            &unmasked[..],
            &reserved,
            &bad_opcode,
            &long_ping,
            &fragmented_ping,
            &huge,
        ] {
            assert_eq!(parse_head(frame), Parsed::Fail(PROTOCOL_ERROR), "{frame:?}");
        }
    }

    #[test]
    fn unmask_at_any_offset_and_length_matches_bytewise() {
        let mask = [0xA1, 0xB2, 0xC3, 0xD4];
        let data: Vec<u8> = (0..100u8).collect();
        for offset in 0..8u64 {
            for len in [0, 1, 3, 8, 9, 17, 100] {
                let mut fast = data[..len].to_vec();
                unmask(&mut fast, mask, offset);
                let slow: Vec<u8> = (0..len)
                    .map(|i| data[i] ^ mask[(i + offset as usize) % 4])
                    .collect();
                assert_eq!(fast, slow, "offset {offset} len {len}");
            }
        }
    }

    #[test]
    fn unmasking_in_pieces_equals_unmasking_at_once() {
        let mask = [9, 8, 7, 6];
        let mut whole: Vec<u8> = (0..50u8).collect();
        let mut pieces = whole.clone();
        unmask(&mut whole, mask, 0);
        let (a, b) = pieces.split_at_mut(13);
        unmask(a, mask, 0);
        unmask(b, mask, 13);
        assert_eq!(whole, pieces);
    }

    #[test]
    fn server_heads_are_unmasked_and_minimal() {
        let cases: [(usize, &[u8]); 4] = [
            (5, &[0x81, 5]),
            (125, &[0x81, 125]),
            (126, &[0x81, 126, 0, 126]),
            (70_000, &[0x81, 127, 0, 0, 0, 0, 0, 1, 0x11, 0x70]),
        ];
        for (len, want) in cases {
            let mut out = Vec::new();
            write_head(&mut out, TEXT, len);
            assert_eq!(out, want, "len {len}");
        }
    }

    #[test]
    fn close_codes() {
        for ok in [1000, 1001, 1003, 1007, 1011, 3000, 4999] {
            assert!(valid_close_code(ok), "{ok}");
        }
        for bad in [0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000] {
            assert!(!valid_close_code(bad), "{bad}");
        }
    }
}
