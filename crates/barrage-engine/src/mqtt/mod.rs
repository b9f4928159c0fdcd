//! MQTT 3.1.1 and 5.0 over byte slices: the packets a client writes ([`connect`],
//! [`subscribe`], [`publish`], the acknowledgements, [`PINGREQ`], [`DISCONNECT`]) and a
//! decoder of what a broker sends ([`decode::Decoder`], payloads streamed, never buffered).
//!
//! Key design decision: the encoder writes a packet's remaining length after its body, as
//! four bytes first, then closes the gap up to the varint's real width (one `copy_within` of
//! the packet's own bytes), so a PUBLISH renders its topic and payload templates straight into
//! the connection's write buffer in one pass, allocating nothing.

pub mod decode;
pub mod spec;

pub use decode::{Decoder, MqttError, Sink};

/// Packet types (the high nibble of the first byte).
pub const CONNECT: u8 = 1;
pub const CONNACK: u8 = 2;
pub const PUBLISH: u8 = 3;
pub const PUBACK: u8 = 4;
pub const PUBREC: u8 = 5;
pub const PUBREL: u8 = 6;
pub const PUBCOMP: u8 = 7;
pub const SUBSCRIBE: u8 = 8;
pub const SUBACK: u8 = 9;
pub const UNSUBSCRIBE: u8 = 10;
pub const UNSUBACK: u8 = 11;
pub const PINGREQ_TYPE: u8 = 12;
pub const PINGRESP: u8 = 13;
pub const DISCONNECT_TYPE: u8 = 14;
pub const AUTH: u8 = 15;

/// PINGREQ, whole.
pub const PINGREQ: [u8; 2] = [0xC0, 0x00];
/// DISCONNECT with no reason (3.1.1; in 5.0 the same two bytes mean "normal disconnection").
pub const DISCONNECT: [u8; 2] = [0xE0, 0x00];

/// The protocol level byte of CONNECT: 4 is MQTT 3.1.1, 5 is MQTT 5.0.
pub const V311: u8 = 4;
pub const V5: u8 = 5;

/// The largest remaining length MQTT can say (four varint bytes).
pub const MAX_REMAINING: u32 = 268_435_455;

/// A packet's name, for messages.
pub fn packet_name(kind: u8) -> &'static str {
    const NAMES: [&str; 16] = [
        "reserved(0)",
        "CONNECT",
        "CONNACK",
        "PUBLISH",
        "PUBACK",
        "PUBREC",
        "PUBREL",
        "PUBCOMP",
        "SUBSCRIBE",
        "SUBACK",
        "UNSUBSCRIBE",
        "UNSUBACK",
        "PINGREQ",
        "PINGRESP",
        "DISCONNECT",
        "AUTH",
    ];
    NAMES[(kind & 15) as usize]
}

/// What CONNECT says.
#[derive(Clone, Copy, Debug)]
pub struct ConnectSpec<'a> {
    pub version: u8,
    pub client_id: &'a [u8],
    pub username: Option<&'a [u8]>,
    pub password: Option<&'a [u8]>,
    pub keepalive_s: u16,
    /// 3.1.1's clean session, 5.0's clean start.
    pub clean: bool,
}

/// Appends `n` as MQTT's variable byte integer (1 to 4 bytes; `n` ≤ [`MAX_REMAINING`]).
pub fn put_varint(out: &mut Vec<u8>, mut n: u32) {
    debug_assert!(n <= MAX_REMAINING);
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// The bytes [`put_varint`] writes for `n`.
pub fn varint_len(n: u32) -> usize {
    match n {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        _ => 4,
    }
}

/// Appends a UTF-8 string or binary field: a big-endian u16 length, then the bytes.
/// Longer than 65,535 bytes cannot be said; the caller checks (templates are bounded at
/// plan time).
fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len().min(65_535) as u16).to_be_bytes());
    out.extend_from_slice(&s[..s.len().min(65_535)]);
}

/// A packet under way: its first byte and four bytes kept for the remaining length.
struct Open {
    start: usize,
}

fn open(out: &mut Vec<u8>, first: u8) -> Open {
    let start = out.len();
    out.extend_from_slice(&[first, 0, 0, 0, 0]);
    Open { start }
}

impl Open {
    /// Writes the remaining length and closes the gap the four kept bytes leave. Returns the
    /// packet's whole length.
    fn close(self, out: &mut Vec<u8>) -> usize {
        let body = out.len() - self.start - 5;
        let rem = body.min(MAX_REMAINING as usize) as u32;
        let w = varint_len(rem);
        let mut tmp = [0u8; 4];
        let mut n = rem;
        for (i, t) in tmp.iter_mut().enumerate().take(w) {
            *t = (n & 0x7f) as u8 | if i + 1 < w { 0x80 } else { 0 };
            n >>= 7;
        }
        let at = self.start + 1;
        out[at..at + w].copy_from_slice(&tmp[..w]);
        if w < 4 {
            out.copy_within(self.start + 5.., at + w);
            out.truncate(out.len() - (4 - w));
        }
        out.len() - self.start
    }
}

/// Appends CONNECT.
pub fn connect(out: &mut Vec<u8>, s: &ConnectSpec) {
    let p = open(out, CONNECT << 4);
    put_str(out, b"MQTT");
    out.push(s.version);
    let mut flags = 0u8;
    if s.username.is_some() {
        flags |= 0x80;
    }
    if s.password.is_some() {
        flags |= 0x40;
    }
    if s.clean {
        flags |= 0x02;
    }
    out.push(flags);
    out.extend_from_slice(&s.keepalive_s.to_be_bytes());
    if s.version >= V5 {
        out.push(0); // no properties
    }
    put_str(out, s.client_id);
    if let Some(u) = s.username {
        put_str(out, u);
    }
    if let Some(pw) = s.password {
        put_str(out, pw);
    }
    p.close(out);
}

/// Appends SUBSCRIBE of one topic filter at `qos`, written by `filter` (its length prefix is
/// filled in after).
pub fn subscribe(
    out: &mut Vec<u8>,
    version: u8,
    pid: u16,
    qos: u8,
    filter: impl FnOnce(&mut Vec<u8>),
) {
    let p = open(out, SUBSCRIBE << 4 | 0x02);
    out.extend_from_slice(&pid.to_be_bytes());
    if version >= V5 {
        out.push(0);
    }
    put_with_len(out, filter);
    out.push(qos & 3);
    p.close(out);
}

/// Appends UNSUBSCRIBE of one topic filter.
pub fn unsubscribe(out: &mut Vec<u8>, version: u8, pid: u16, filter: impl FnOnce(&mut Vec<u8>)) {
    let p = open(out, UNSUBSCRIBE << 4 | 0x02);
    out.extend_from_slice(&pid.to_be_bytes());
    if version >= V5 {
        out.push(0);
    }
    put_with_len(out, filter);
    p.close(out);
}

/// Writes what `f` appends behind a u16 length prefix (cut at 65,535 bytes).
fn put_with_len(out: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0, 0]);
    f(out);
    let mut n = out.len() - at - 2;
    if n > 65_535 {
        out.truncate(at + 2 + 65_535);
        n = 65_535;
    }
    out[at..at + 2].copy_from_slice(&(n as u16).to_be_bytes());
}

/// What a PUBLISH carries besides its topic and payload.
#[derive(Clone, Copy, Debug)]
pub struct PublishHead {
    pub version: u8,
    pub qos: u8,
    pub retain: bool,
    /// Its packet identifier (QoS 1 and 2 only).
    pub pid: u16,
}

/// Appends PUBLISH: the topic written by `topic`, the payload by `payload`. Returns the
/// payload's length.
pub fn publish(
    out: &mut Vec<u8>,
    h: PublishHead,
    topic: impl FnOnce(&mut Vec<u8>),
    payload: impl FnOnce(&mut Vec<u8>),
) -> usize {
    let p = open(out, PUBLISH << 4 | (h.qos & 3) << 1 | u8::from(h.retain));
    put_with_len(out, topic);
    if h.qos > 0 {
        out.extend_from_slice(&h.pid.to_be_bytes());
    }
    if h.version >= V5 {
        out.push(0);
    }
    let at = out.len();
    payload(out);
    let len = out.len() - at;
    p.close(out);
    len
}

/// Appends an acknowledgement (PUBACK, PUBREC, PUBREL, PUBCOMP) of packet `pid`: four bytes,
/// success (5.0 omits the reason code when it is 0).
pub fn ack(out: &mut Vec<u8>, kind: u8, pid: u16) {
    let first = kind << 4 | if kind == PUBREL { 0x02 } else { 0 };
    let [a, b] = pid.to_be_bytes();
    out.extend_from_slice(&[first, 2, a, b]);
}

/// The most bytes an MQTT string holds (a topic, a filter, the client id, a user name, a
/// password): its length is a u16. (3.1.1 says a server must take client ids of 1 to 23
/// characters and may take longer ones: 23 is advice, not a limit barrage enforces.)
pub const MAX_STRING: usize = 65_535;

/// What is wrong with template `t` as an MQTT string (`what`: "the topic", "the client id"),
/// when it is known before any message: it renders to more than [`MAX_STRING`] bytes (with
/// the most its numbers take; a `{name}` counted empty: such a template is checked per
/// message, [`string_fault`]). The value is never in the text.
pub fn too_long(t: &crate::Template, what: &str) -> Option<String> {
    let (n, is) = match t.bound() {
        Some(n) if t.is_static() => (n, "is"),
        Some(n) => (n, "can be up to"),
        None => (t.least(), "is at least"),
    };
    (n > MAX_STRING).then(|| {
        format!(
            "{what} {is} {n} bytes long; MQTT's strings hold 65,535 bytes at most (a 2-byte \
             length): shorten it"
        )
    })
}

/// [`too_long`] for one message of a scenario user: a template whose `{name}`s have no
/// bound, rendered with `vars`; `None` for a bounded one (checked at plan time).
pub fn string_fault(
    t: &crate::Template,
    what: &str,
    fill: crate::message::Fill,
    vars: &crate::capture::Vars,
) -> Option<String> {
    if t.bound().is_some() {
        return None;
    }
    let n = t.rendered_len_vars(fill, vars);
    (n > MAX_STRING).then(|| {
        format!(
            "{what} came to {n} bytes (its {{name}} values made it so); MQTT's strings hold \
             65,535 bytes at most"
        )
    })
}

/// A topic filter's wildcards (`+`, `#`) cannot be published to: the first one, if any.
pub fn wildcard(topic: &[u8]) -> Option<char> {
    topic
        .iter()
        .find(|&&b| b == b'+' || b == b'#')
        .map(|&b| b as char)
}

/// What a `{secret:NAME}` did to publish topic `topic`, if anything wrong: left it empty or put
/// a wildcard into it (its own text is checked where it is written; the other placeholders are
/// numbers, and captures and data cells, rendered empty here, are the run's). `wildcards_are`
/// names where wildcards belong, for the line. The value is never in the text.
pub fn secret_topic_fault(topic: &crate::Template, wildcards_are: &str) -> Option<String> {
    let mut lit = Vec::new();
    let slots = topic.var_slots().max().map_or(0, |m| m + 1);
    let nothing = crate::message::Fill {
        conn: 0,
        seq: 0,
        ts_us: 0,
    };
    topic.render_vars_into(nothing, &crate::capture::Vars::new(slots), &mut lit);
    // A topic of `{name}`s alone is the run's values' (empty here, not in the run).
    if lit.is_empty() && slots == 0 {
        return Some(
            "a {secret:NAME} leaves the topic empty; a topic has at least one character".into(),
        );
    }
    wildcard(&lit).map(|w| {
        format!(
            "a {{secret:NAME}} puts the wildcard '{w}' into the topic; a PUBLISH names one topic \
             (wildcards are for {wildcards_are})"
        )
    })
}

/// What is wrong with a topic filter's wildcards, if anything: `+` must be a whole level,
/// `#` a whole level and the last (`sport/+/player`, `sport/#`; not `sport+`, `a/#/b`).
pub fn filter_fault(filter: &[u8]) -> Option<&'static str> {
    let levels: Vec<&[u8]> = filter.split(|&b| b == b'/').collect();
    for (i, l) in levels.iter().enumerate() {
        if l.contains(&b'+') && *l != b"+" {
            return Some("'+' stands for a whole level (a/+/b)");
        }
        if l.contains(&b'#') && (*l != b"#" || i + 1 != levels.len()) {
            return Some("'#' is a whole level and the last (a/b/#)");
        }
    }
    None
}

/// A packet identifier for the exchange of load key `key` (`seq << 1 | 1`): 1 to 65,535 in
/// turn. [`key_of_pid`] goes back, given the oldest key in flight.
#[inline]
pub fn pid_of_key(key: u64) -> u16 {
    ((key >> 1) % 65_535) as u16 + 1
}

/// The load key whose packet identifier is `pid`: the first at or after `oldest` (fewer than
/// 65,535 exchanges are in flight, so it is the one).
#[inline]
pub fn key_of_pid(pid: u16, oldest: u64) -> u64 {
    let s0 = oldest >> 1;
    let want = u64::from(pid.max(1) - 1);
    let s = s0 + (want + 65_535 - s0 % 65_535) % 65_535;
    s << 1 | 1
}

#[cfg(test)]
mod tests;
