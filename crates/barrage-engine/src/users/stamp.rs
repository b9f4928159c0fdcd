//! Stamps: a fixed-width token a broadcast step puts in its message, found again in whatever
//! any user receives, so one-to-many delivery is measured without shared state.
//!
//! Text form: `~b` + shard (2 hex) + user (8 hex) + sequence (8 hex) + send time (14 hex, µs of
//! the wall clock) + `~`: 35 bytes of `~`, `b` and lower-case hex, safe inside JSON strings,
//! lines and most text protocols, and relayed unchanged by a server that relays text.
//!
//! Binary form, for binary-safe protocols (length-prefixed frames, RESP bulk strings,
//! WebSocket binary messages): the magic `B5 7E 42 01`, then shard (1 byte), user (4), sequence
//! (4) and send time (7, µs), big-endian: 20 bytes.
//!
//! The sequence counts the user's stamped sends (1, 2, ...), so a receiver sees a gap, a
//! duplicate or a late copy per sender.

/// The length of a stamp (text form).
pub const LEN: usize = 35;
/// The length of a binary stamp.
pub const BIN_LEN: usize = 20;
const MAGIC: [u8; 4] = [0xB5, 0x7E, 0x42, 0x01];

/// Which form a scenario's stamps take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Form {
    #[default]
    Text,
    Binary,
}
const OPEN: &[u8; 2] = b"~b";
const HEX: &[u8; 16] = b"0123456789abcdef";

/// What a stamp says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub shard: u8,
    pub user: u32,
    pub seq: u32,
    /// Send time, µs of the wall clock (its low 56 bits).
    pub ts_us: u64,
}

fn put_hex(out: &mut [u8], v: u64) {
    let n = out.len();
    for (i, b) in out.iter_mut().enumerate() {
        *b = HEX[((v >> (4 * (n - 1 - i))) & 0xf) as usize];
    }
}

fn hex(b: &[u8]) -> Option<u64> {
    b.iter().try_fold(0u64, |acc, &c| {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        Some((acc << 4) | d as u64)
    })
}

impl Stamp {
    pub fn encode(&self) -> [u8; LEN] {
        let mut out = [0u8; LEN];
        out[..2].copy_from_slice(OPEN);
        put_hex(&mut out[2..4], self.shard as u64);
        put_hex(&mut out[4..12], self.user as u64);
        put_hex(&mut out[12..20], self.seq as u64);
        put_hex(&mut out[20..34], self.ts_us & ((1 << 56) - 1));
        out[34] = b'~';
        out
    }

    pub fn encode_binary(&self) -> [u8; BIN_LEN] {
        let mut out = [0u8; BIN_LEN];
        out[..4].copy_from_slice(&MAGIC);
        out[4] = self.shard;
        out[5..9].copy_from_slice(&self.user.to_be_bytes());
        out[9..13].copy_from_slice(&self.seq.to_be_bytes());
        out[13..20].copy_from_slice(&self.ts_us.to_be_bytes()[1..]);
        out
    }

    fn decode_binary(b: &[u8]) -> Option<Stamp> {
        let b: &[u8; BIN_LEN] = b.get(..BIN_LEN)?.try_into().ok()?;
        if b[..4] != MAGIC {
            return None;
        }
        let mut ts = [0u8; 8];
        ts[1..].copy_from_slice(&b[13..20]);
        Some(Stamp {
            shard: b[4],
            user: u32::from_be_bytes([b[5], b[6], b[7], b[8]]),
            seq: u32::from_be_bytes([b[9], b[10], b[11], b[12]]),
            ts_us: u64::from_be_bytes(ts),
        })
    }

    fn decode(b: &[u8]) -> Option<Stamp> {
        if b.len() < LEN || &b[..2] != OPEN || b[34] != b'~' {
            return None;
        }
        Some(Stamp {
            shard: hex(&b[2..4])? as u8,
            user: hex(&b[4..12])? as u32,
            seq: hex(&b[12..20])? as u32,
            ts_us: hex(&b[20..34])?,
        })
    }
}

/// Every stamp of `form` in `msg`, in order (anything that only looks like the start of one is
/// skipped).
pub fn scan_form(form: Form, msg: &[u8], f: impl FnMut(Stamp)) {
    match form {
        Form::Text => scan(msg, f),
        Form::Binary => scan_binary(msg, f),
    }
}

/// Every binary stamp in `msg`, in order.
pub fn scan_binary(msg: &[u8], mut f: impl FnMut(Stamp)) {
    let mut at = 0;
    while let Some(i) = memchr::memchr(MAGIC[0], &msg[at..]) {
        let start = at + i;
        match Stamp::decode_binary(&msg[start..]) {
            Some(s) => {
                f(s);
                at = start + BIN_LEN;
            }
            None => at = start + 1,
        }
    }
}

/// Every text stamp in `msg`, in order (anything that only looks like the start of one is
/// skipped).
pub fn scan(msg: &[u8], mut f: impl FnMut(Stamp)) {
    let mut at = 0;
    // `~` is rare in text: find it, then look at what follows.
    while let Some(i) = memchr::memchr(b'~', &msg[at..]) {
        let start = at + i;
        if msg.get(start + 1) != Some(&b'b') {
            at = start + 1;
            continue;
        }
        match Stamp::decode(&msg[start..]) {
            Some(s) => {
                f(s);
                at = start + LEN;
            }
            None => at = start + 1,
        }
    }
}

/// What one receiver knows of one sender's sequence: the first and highest seen and which of
/// the 64 up to the highest arrived (an anti-replay window). 24 bytes per peer.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub sender: u32,
    /// The first heard, which started the window.
    pub start: u32,
    pub hi: u32,
    pub bits: u64,
}

/// What a stamp's arrival was for its receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// The first heard from this sender: it starts the sender's window (and puts the two in
    /// one group).
    First,
    /// The next or a later one; `gap` sequence numbers were skipped (missing for now).
    InOrder { gap: u32 },
    /// Fills an earlier gap: late (reordered).
    Late,
    /// Older than the first heard from this sender, and not seen before: late (reordered
    /// behind the one that started the window), filling a gap that was never counted.
    BeforeStart,
    /// Seen before.
    Duplicate,
    /// Older than the window: late, and whether it is a duplicate cannot be told.
    TooOld,
}

/// The per-sender windows of one receiver (a few peers: its room), in a small vector.
#[derive(Debug, Default)]
pub struct Windows(Vec<Window>);

impl Windows {
    /// Account for stamp `seq` from `sender`. The first stamp heard from a sender starts its
    /// window (what came before the receiver joined was never its to get).
    pub fn arrive(&mut self, sender: u32, seq: u32) -> Arrival {
        let Some(w) = self.0.iter_mut().find(|w| w.sender == sender) else {
            self.0.push(Window {
                sender,
                start: seq,
                hi: seq,
                bits: 1,
            });
            return Arrival::First;
        };
        if seq > w.hi {
            let d = seq - w.hi;
            w.bits = if d >= 64 { 0 } else { w.bits << d };
            w.bits |= 1;
            w.hi = seq;
            return Arrival::InOrder { gap: d - 1 };
        }
        let back = w.hi - seq;
        if back >= 64 {
            return Arrival::TooOld;
        }
        let bit = 1u64 << back;
        if w.bits & bit != 0 {
            Arrival::Duplicate
        } else {
            w.bits |= bit;
            if seq < w.start {
                Arrival::BeforeStart
            } else {
                Arrival::Late
            }
        }
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_round_trip_and_are_found_in_any_text() {
        let s = Stamp {
            shard: 3,
            user: 4_000_000_000,
            seq: 77,
            ts_us: 1_763_870_000_123_456,
        };
        let e = s.encode();
        assert_eq!(e.len(), LEN);
        assert!(e.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'~'));
        let mut text = b"{\"op\":\"msg\",\"text\":\"~b~bx ".to_vec();
        text.extend_from_slice(&e);
        text.extend_from_slice(b" and ");
        let t = Stamp { seq: 78, ..s };
        text.extend_from_slice(&t.encode());
        text.extend_from_slice(b"\"}");
        let mut found = Vec::new();
        scan(&text, |x| found.push(x));
        assert_eq!(found, [s, t]);
        let mut none = 0;
        scan(&e[..LEN - 1], |_| none += 1);
        assert_eq!(none, 0, "a cut stamp is not one");
    }

    #[test]
    fn binary_stamps_round_trip_among_any_bytes() {
        let s = Stamp {
            shard: 200,
            user: 0x0a0d_0a0d,
            seq: 0xB5,
            ts_us: (1 << 56) - 1,
        };
        let e = s.encode_binary();
        assert_eq!(e.len(), BIN_LEN);
        let mut msg = vec![0xB5, 0x7E, 0xB5, 0, b'\r', b'\n'];
        msg.extend_from_slice(&e);
        let t = Stamp { seq: 1, ..s };
        msg.extend_from_slice(&t.encode_binary());
        msg.push(0xB5);
        let mut found = Vec::new();
        scan_form(Form::Binary, &msg, |x| found.push(x));
        assert_eq!(found, [s, t]);
        let mut none = 0;
        scan_binary(&e[..BIN_LEN - 1], |_| none += 1);
        scan(&e, |_| none += 1);
        assert_eq!(none, 0, "a cut stamp is not one, nor is a binary one text");
    }

    #[test]
    fn windows_tell_gaps_late_copies_and_duplicates() {
        let mut w = Windows::default();
        assert_eq!(w.arrive(9, 5), Arrival::First, "first heard");
        assert_eq!(w.arrive(9, 6), Arrival::InOrder { gap: 0 });
        assert_eq!(w.arrive(9, 9), Arrival::InOrder { gap: 2 });
        assert_eq!(w.arrive(9, 7), Arrival::Late);
        assert_eq!(w.arrive(9, 7), Arrival::Duplicate);
        assert_eq!(w.arrive(9, 9), Arrival::Duplicate);
        assert_eq!(w.arrive(2, 1), Arrival::First, "another sender");
        assert_eq!(w.arrive(9, 200), Arrival::InOrder { gap: 190 });
        assert_eq!(w.arrive(9, 8), Arrival::TooOld);
        // The first heard was held back behind the next: late, with no gap seen opening.
        assert_eq!(w.arrive(4, 11), Arrival::First);
        assert_eq!(w.arrive(4, 10), Arrival::BeforeStart);
        assert_eq!(w.arrive(4, 10), Arrival::Duplicate);
        assert_eq!(w.arrive(4, 12), Arrival::InOrder { gap: 0 });
    }
}
