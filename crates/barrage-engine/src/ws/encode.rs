//! Client frames: FIN set, masked (RFC 6455 §5.3), appended to the caller's send buffer.

use super::OpCode;

/// Frame header (FIN + opcode, MASK + length, extended length, masking key) into `hdr`;
/// returns its length (6, 8 or 14).
fn header(op: OpCode, len: u64, mask: [u8; 4], hdr: &mut [u8; 14]) -> usize {
    hdr[0] = 0x80 | op.code();
    let at = if len < 126 {
        hdr[1] = 0x80 | len as u8;
        2
    } else if len <= u16::MAX as u64 {
        hdr[1] = 0x80 | 126;
        hdr[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        4
    } else {
        hdr[1] = 0x80 | 127;
        hdr[2..10].copy_from_slice(&len.to_be_bytes());
        10
    };
    hdr[at..at + 4].copy_from_slice(&mask);
    at + 4
}

/// XOR `buf` with the repeating 4-byte `mask`, the first byte with `mask[0]` (masks and
/// unmasks alike). Works a u64 at a time.
pub fn apply_mask(buf: &mut [u8], mask: [u8; 4]) {
    let wide = u64::from_ne_bytes([
        mask[0], mask[1], mask[2], mask[3], mask[0], mask[1], mask[2], mask[3],
    ]);
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        c.copy_from_slice(&(u64::from_ne_bytes(w) ^ wide).to_ne_bytes());
    }
    // 8 is a multiple of 4, so the tail starts at mask[0] again.
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= mask[i & 3];
    }
}

/// Append one client frame (FIN set, masked with `mask`) carrying `payload` to `out`;
/// returns the bytes appended. Control frames must carry at most 125 bytes.
pub fn encode_frame(op: OpCode, payload: &[u8], mask: [u8; 4], out: &mut Vec<u8>) -> usize {
    debug_assert!(!op.is_control() || payload.len() <= 125);
    let mut hdr = [0u8; 14];
    let h = header(op, payload.len() as u64, mask, &mut hdr);
    out.reserve(h + payload.len());
    out.extend_from_slice(&hdr[..h]);
    let start = out.len();
    out.extend_from_slice(payload);
    apply_mask(&mut out[start..], mask);
    h + payload.len()
}

/// Frame the payload the caller already rendered in `out[start..]`: the header is inserted
/// before it (a memmove within `out`, no allocation once `out` has grown) and the payload is
/// masked in place. Returns the frame's length.
pub fn frame_in_place(op: OpCode, out: &mut Vec<u8>, start: usize, mask: [u8; 4]) -> usize {
    let start = start.min(out.len());
    let len = out.len() - start;
    debug_assert!(!op.is_control() || len <= 125);
    let mut hdr = [0u8; 14];
    let h = header(op, len as u64, mask, &mut hdr);
    out.resize(out.len() + h, 0);
    out.copy_within(start..start + len, start + h);
    out[start..start + h].copy_from_slice(&hdr[..h]);
    apply_mask(&mut out[start + h..], mask);
    h + len
}

/// Append a close frame carrying `code` (no reason).
pub fn close_frame(code: u16, mask: [u8; 4], out: &mut Vec<u8>) {
    encode_frame(OpCode::Close, &code.to_be_bytes(), mask, out);
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Undo the masking of a client frame: (opcode, fin, payload).
    pub(crate) fn unmask(frame: &[u8]) -> (u8, bool, Vec<u8>) {
        assert!(frame[1] & 0x80 != 0, "client frames are masked");
        let (len, at) = match frame[1] & 0x7f {
            126 => (u16::from_be_bytes([frame[2], frame[3]]) as usize, 4),
            127 => (
                u64::from_be_bytes(frame[2..10].try_into().unwrap()) as usize,
                10,
            ),
            n => (n as usize, 2),
        };
        let mask: [u8; 4] = frame[at..at + 4].try_into().unwrap();
        let mut payload = frame[at + 4..].to_vec();
        assert_eq!(payload.len(), len);
        apply_mask(&mut payload, mask);
        (frame[0] & 0x0f, frame[0] & 0x80 != 0, payload)
    }

    #[test]
    fn masking_matches_the_bytewise_definition() {
        let mask = [0x37, 0xfa, 0x21, 0x3d];
        for n in 0..40 {
            let data: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(31)).collect();
            let mut fast = data.clone();
            apply_mask(&mut fast, mask);
            let slow: Vec<u8> = data
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ mask[i % 4])
                .collect();
            assert_eq!(fast, slow, "{n}");
        }
    }

    #[test]
    fn rfc_example_masked_hello() {
        // RFC 6455 §5.7: a single-frame masked text message "Hello".
        let mut out = Vec::new();
        let n = encode_frame(OpCode::Text, b"Hello", [0x37, 0xfa, 0x21, 0x3d], &mut out);
        assert_eq!(
            out,
            [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
        );
        assert_eq!(n, out.len());
    }

    #[test]
    fn every_length_class_round_trips() {
        let mask = [1, 2, 3, 4];
        for len in [0, 1, 125, 126, 127, 65535, 65536, 70000] {
            let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut out = vec![0xee];
            let n = encode_frame(OpCode::Binary, &payload, mask, &mut out);
            assert_eq!(n, out.len() - 1);
            let (op, fin, got) = unmask(&out[1..]);
            assert_eq!((op, fin), (2, true));
            assert_eq!(got, payload, "{len}");

            let mut inplace = vec![0xee, 0xdd];
            inplace.extend_from_slice(&payload);
            let m = frame_in_place(OpCode::Binary, &mut inplace, 2, mask);
            assert_eq!(m, n);
            assert_eq!(&inplace[..2], [0xee, 0xdd]);
            assert_eq!(inplace[2..], out[1..], "{len}");
        }
    }

    #[test]
    fn close_frames_carry_the_code() {
        let mut out = Vec::new();
        close_frame(1001, [9, 8, 7, 6], &mut out);
        assert_eq!(unmask(&out), (8, true, 1001u16.to_be_bytes().to_vec()));
    }
}
