//! The packets a broker sends, decoded from byte slices at any split: a few bytes of state,
//! a PUBLISH's payload handed to the sink as it comes (never buffered), properties skipped
//! except CONNACK's Receive Maximum and Server Keep Alive (5.0).
//!
//! A packet a broker never sends (CONNECT, SUBSCRIBE, ...), wrong fixed-header flags, a field
//! that runs past its packet, a remaining length over four bytes or over the limit: an
//! [`MqttError`], and the connection fails as `protocol`.

use super::{
    packet_name, AUTH, CONNACK, DISCONNECT_TYPE, MAX_REMAINING, PINGRESP, PUBACK, PUBCOMP, PUBLISH,
    PUBREC, PUBREL, SUBACK, UNSUBACK, V311, V5,
};

/// A malformed or unexpected packet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("MQTT: {0}")]
pub struct MqttError(pub String);

fn err<T>(s: impl Into<String>) -> Result<T, MqttError> {
    Err(MqttError(s.into()))
}

/// What a decoded packet says. Events come once a packet is whole, except a PUBLISH's
/// payload, which comes between [`Sink::publish`] and [`Sink::publish_end`].
pub trait Sink {
    /// CONNACK: the return (3.1.1) or reason (5.0) code, and what its properties said.
    fn connack(&mut self, session_present: bool, code: u8, props: ConnackProps);
    /// A PUBLISH begins: its QoS, packet id (0 at QoS 0), and its payload's length.
    fn publish(&mut self, qos: u8, pid: u16, len: u32);
    fn payload(&mut self, bytes: &[u8]);
    fn publish_end(&mut self, qos: u8, pid: u16);
    /// PUBACK, PUBREC, PUBREL, PUBCOMP or UNSUBACK (3.1.1) of `pid`, with its reason code
    /// (0 when the packet has none).
    fn ack(&mut self, kind: u8, pid: u16, reason: u8);
    /// SUBACK (or 5.0's UNSUBACK): the codes it carried, `granted` below 0x80, `failed` at
    /// or above, and the first failure's code.
    fn suback(&mut self, kind: u8, pid: u16, granted: u32, failed: u32, first_bad: u8);
    fn pingresp(&mut self);
    /// DISCONNECT from the broker (5.0), with its reason code (0 without one).
    fn disconnect(&mut self, reason: u8);
    /// AUTH (5.0): not spoken here; counted by the caller.
    fn auth(&mut self) {}
}

/// What CONNACK's properties said (5.0), 0 or `None` where they said nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnackProps {
    /// PUBLISHes at QoS 1 and 2 the broker takes in flight at once.
    pub receive_max: u16,
    /// The keep-alive the broker wants instead of the client's.
    pub server_keepalive: Option<u16>,
    /// The highest QoS the broker takes (0 or 1; none said: 2).
    pub max_qos: Option<u8>,
    /// Whether the broker takes retained messages (none said: yes).
    pub retain_available: Option<bool>,
    /// The largest packet the broker takes (0: no limit said).
    pub max_packet: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    /// The first byte of a packet.
    Type,
    /// The remaining length (varint).
    Len,
    /// `n` bytes gathered into `head` (1 or 2).
    Bytes(u8),
    /// A property length (varint), then its properties.
    PropLen,
    /// Bytes to pass over.
    Skip(u32),
    /// CONNACK's properties, read for the two that matter here.
    Props(u32),
    /// A PUBLISH's payload, to the sink.
    Payload(u32),
    /// SUBACK's codes.
    Codes(u32),
}

/// The decoder of one connection.
#[derive(Debug)]
pub struct Decoder {
    want: Want,
    /// Of the packet under way: its type and flags, what is left of it, and the step it is at.
    kind: u8,
    flags: u8,
    left: u32,
    step: u8,
    /// A varint being read: its value so far and its bytes so far.
    var: u32,
    var_n: u8,
    head: [u8; 2],
    have: u8,
    pid: u16,
    reason: u8,
    v5: bool,
    max: u32,
    /// SUBACK's codes so far.
    granted: u32,
    failed: u32,
    first_bad: u8,
    props: ConnackProps,
    /// Stop after each whole packet (`feed` returns what it consumed): a handshake's last
    /// reply ends where the load's input begins.
    pub pause: bool,
    finished: bool,
    /// A CONNACK came: one per connection, a second one is a protocol error.
    connacked: bool,
    /// CONNACK's property bytes being read: the property's id (0: expecting an id), and
    /// its value so far.
    prop: PropReader,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PropReader {
    id: u8,
    need: u8,
    val: u32,
    /// Of a string or binary property: its two length bytes read so far, then the bytes to
    /// skip.
    len_bytes: u8,
    skip: u16,
    /// A string pair's second string is still to come.
    pair: bool,
}

impl Decoder {
    /// A decoder for protocol `version` (4 or 5) that takes packets of `max` bytes at most.
    pub fn new(version: u8, max: u64) -> Self {
        Self {
            want: Want::Type,
            kind: 0,
            flags: 0,
            left: 0,
            step: 0,
            var: 0,
            var_n: 0,
            head: [0; 2],
            have: 0,
            pid: 0,
            reason: 0,
            v5: version >= V5,
            max: max.min(u64::from(MAX_REMAINING)) as u32,
            granted: 0,
            failed: 0,
            first_bad: 0,
            props: ConnackProps::default(),
            pause: false,
            finished: false,
            connacked: false,
            prop: PropReader::default(),
        }
    }

    pub fn reset(&mut self) {
        *self = Self::new(if self.v5 { V5 } else { V311 }, u64::from(self.max));
    }

    /// Whether a packet is partly read.
    pub fn mid_packet(&self) -> bool {
        self.want != Want::Type
    }

    /// Decodes `data`; returns the bytes consumed: all of them, unless [`Decoder::pause`]
    /// stopped it after a whole packet.
    pub fn feed(&mut self, data: &[u8], sink: &mut impl Sink) -> Result<usize, MqttError> {
        let all = data.len();
        let mut data = data;
        while !data.is_empty() {
            if self.finished {
                self.finished = false;
                if self.pause {
                    return Ok(all - data.len());
                }
            }
            match self.want {
                Want::Type => {
                    let b = data[0];
                    data = &data[1..];
                    self.begin(b)?;
                }
                Want::Len => {
                    let b = data[0];
                    data = &data[1..];
                    self.var |= u32::from(b & 0x7f) << (7 * self.var_n);
                    self.var_n += 1;
                    if b & 0x80 != 0 {
                        if self.var_n == 4 {
                            return err("a remaining length longer than four bytes");
                        }
                        continue;
                    }
                    if self.var > self.max {
                        return err(format!(
                            "a {} of {} bytes, over the limit of {} (--max-frame)",
                            packet_name(self.kind),
                            self.var,
                            self.max
                        ));
                    }
                    self.left = self.var;
                    self.step = 0;
                    self.advance(sink)?;
                }
                Want::Bytes(n) => {
                    let take = (usize::from(n - self.have)).min(data.len());
                    let at = usize::from(self.have);
                    self.head[at..at + take].copy_from_slice(&data[..take]);
                    self.have += take as u8;
                    data = &data[take..];
                    if self.have == n {
                        self.have = 0;
                        self.got_bytes(n)?;
                        self.step += 1;
                        self.advance(sink)?;
                    }
                }
                Want::PropLen => {
                    let b = data[0];
                    data = &data[1..];
                    self.left -= 1;
                    self.var |= u32::from(b & 0x7f) << (7 * self.var_n);
                    self.var_n += 1;
                    if b & 0x80 != 0 {
                        if self.var_n == 4 || self.left == 0 {
                            return err(format!(
                                "a {}'s property length runs past it",
                                packet_name(self.kind)
                            ));
                        }
                        continue;
                    }
                    let n = self.var;
                    if n > self.left {
                        return err(format!(
                            "a {}'s properties run past it",
                            packet_name(self.kind)
                        ));
                    }
                    self.step += 1;
                    self.want = if self.kind == CONNACK {
                        self.prop = PropReader::default();
                        Want::Props(n)
                    } else {
                        Want::Skip(n)
                    };
                    self.left -= n;
                    if n == 0 {
                        self.step += 1;
                        self.advance(sink)?;
                    }
                }
                Want::Skip(n) | Want::Payload(n) | Want::Codes(n) | Want::Props(n) => {
                    let take = (n as usize).min(data.len());
                    let (chunk, rest) = data.split_at(take);
                    data = rest;
                    match self.want {
                        Want::Payload(_) => sink.payload(chunk),
                        Want::Codes(_) => {
                            for &c in chunk {
                                if c < 0x80 {
                                    self.granted += 1;
                                } else {
                                    if self.failed == 0 {
                                        self.first_bad = c;
                                    }
                                    self.failed += 1;
                                }
                            }
                        }
                        Want::Props(_) => self.connack_props(chunk)?,
                        _ => {}
                    }
                    let left = n - take as u32;
                    self.want = match self.want {
                        Want::Skip(_) => Want::Skip(left),
                        Want::Payload(_) => Want::Payload(left),
                        Want::Codes(_) => Want::Codes(left),
                        _ => Want::Props(left),
                    };
                    if left == 0 {
                        if matches!(self.want, Want::Props(_)) && self.prop.id != 0 {
                            return err("CONNACK: a property runs past its properties");
                        }
                        self.step += 1;
                        self.advance(sink)?;
                    }
                }
            }
        }
        self.finished = false;
        Ok(all)
    }

    /// A packet's first byte: its type and flags, checked.
    fn begin(&mut self, b: u8) -> Result<(), MqttError> {
        let (kind, flags) = (b >> 4, b & 15);
        let ok = match kind {
            PUBLISH => (flags >> 1) & 3 != 3,
            PUBREL => flags == 2,
            CONNACK | PUBACK | PUBREC | PUBCOMP | SUBACK | UNSUBACK | PINGRESP => flags == 0,
            DISCONNECT_TYPE | AUTH if self.v5 => flags == 0,
            _ => {
                return err(format!(
                    "the broker sent {} (byte 0x{b:02x}), which only a client sends",
                    packet_name(kind)
                ))
            }
        };
        if !ok {
            return err(format!(
                "{} with flags 0x{flags:x} (byte 0x{b:02x})",
                packet_name(kind)
            ));
        }
        self.kind = kind;
        self.flags = flags;
        self.var = 0;
        self.var_n = 0;
        self.pid = 0;
        self.reason = 0;
        self.want = Want::Len;
        Ok(())
    }

    fn qos(&self) -> u8 {
        (self.flags >> 1) & 3
    }

    fn got_bytes(&mut self, n: u8) -> Result<(), MqttError> {
        self.left -= u32::from(n);
        let v = if n == 2 {
            u16::from_be_bytes(self.head)
        } else {
            u16::from(self.head[0])
        };
        match (self.kind, self.step) {
            (CONNACK, 0) => {
                if self.head[0] & 0xfe != 0 {
                    return err(format!("CONNACK with flags 0x{:02x}", self.head[0]));
                }
                self.pid = u16::from(self.head[0] & 1);
                self.reason = self.head[1];
            }
            // PUBLISH: the topic's length, then (QoS 1, 2) the packet id.
            (PUBLISH, 0) => self.pid = v, // the topic length, for the next step
            (PUBLISH, 2) => {
                if v == 0 {
                    return err("a PUBLISH with packet id 0");
                }
                self.pid = v;
            }
            (DISCONNECT_TYPE, 0) => self.reason = self.head[0],
            (_, 0) => self.pid = v,
            (_, 1) => self.reason = v as u8,
            _ => {}
        }
        Ok(())
    }

    /// What comes next in the packet, from its type and step; when it is whole, the sink
    /// hears of it and the next packet begins.
    fn advance(&mut self, sink: &mut impl Sink) -> Result<(), MqttError> {
        loop {
            let next = match self.kind {
                // CONNACK: flags and code, then (5.0) properties.
                CONNACK => match self.step {
                    0 => Some(Want::Bytes(2)),
                    1 if self.v5 && self.left > 0 => Some(self.prop_len()?),
                    _ => None,
                },
                // PUBLISH: topic length and topic, packet id (QoS 1, 2), properties (5.0),
                // then the payload: the rest of the packet.
                PUBLISH => match self.step {
                    0 => Some(Want::Bytes(2)),
                    1 => Some(Want::Skip(self.take(u32::from(self.pid))?)),
                    2 if self.qos() > 0 => Some(Want::Bytes(2)),
                    2 => {
                        self.pid = 0;
                        self.step = 3;
                        continue;
                    }
                    3 if self.v5 => Some(self.prop_len()?),
                    3 | 6 => {
                        let n = self.left;
                        self.left = 0;
                        sink.publish(self.qos(), self.pid, n);
                        self.step = 7;
                        Some(Want::Payload(n))
                    }
                    _ => None,
                },
                // The acknowledgements: a packet id, then (5.0) a reason code and properties.
                PUBACK | PUBREC | PUBREL | PUBCOMP | UNSUBACK
                    if !(self.kind == UNSUBACK && self.v5) =>
                {
                    match self.step {
                        0 => Some(Want::Bytes(2)),
                        1 if self.left == 0 => None,
                        1 if !self.v5 => {
                            return err(format!(
                                "a {} of {} bytes (it has 2)",
                                packet_name(self.kind),
                                self.left + 2
                            ))
                        }
                        1 => Some(Want::Bytes(1)),
                        2 if self.left > 0 => Some(self.prop_len()?),
                        _ => None,
                    }
                }
                // SUBACK (and 5.0's UNSUBACK): a packet id, properties (5.0), a code each.
                SUBACK | UNSUBACK => match self.step {
                    0 => {
                        self.granted = 0;
                        self.failed = 0;
                        self.first_bad = 0;
                        Some(Want::Bytes(2))
                    }
                    1 if self.v5 => Some(self.prop_len()?),
                    1 | 4 => {
                        if self.left == 0 {
                            return err(format!("a {} with no codes", packet_name(self.kind)));
                        }
                        let n = self.left;
                        self.left = 0;
                        self.step = 5;
                        Some(Want::Codes(n))
                    }
                    _ => None,
                },
                PINGRESP => None,
                // DISCONNECT (5.0): a reason code, if any, then what follows passed over.
                DISCONNECT_TYPE => match self.step {
                    0 if self.left > 0 => Some(Want::Bytes(1)),
                    1 if self.left > 0 => {
                        let n = self.left;
                        self.left = 0;
                        self.step = 2;
                        Some(Want::Skip(n))
                    }
                    _ => None,
                },
                // AUTH (5.0): passed over whole.
                _ => match self.step {
                    0 if self.left > 0 => {
                        let n = self.left;
                        self.left = 0;
                        Some(Want::Skip(n))
                    }
                    _ => None,
                },
            };
            match next {
                Some(w) => {
                    if let Want::Bytes(n) = w {
                        self.take(u32::from(n))?;
                        self.left += u32::from(n); // taken when the bytes are in
                    }
                    self.want = w;
                    if matches!(w, Want::Skip(0) | Want::Payload(0) | Want::Codes(0)) {
                        self.step += 1;
                        continue;
                    }
                    return Ok(());
                }
                None => {
                    if self.left > 0 {
                        return err(format!(
                            "{} more bytes at the end of a {}",
                            self.left,
                            packet_name(self.kind)
                        ));
                    }
                    if self.kind == CONNACK && std::mem::replace(&mut self.connacked, true) {
                        // MQTT 3.1.1 3.2, 5.0 3.2: the CONNECT's one answer.
                        return err("a second CONNACK on a connection already accepted");
                    }
                    self.finish(sink);
                    self.want = Want::Type;
                    self.finished = true;
                    return Ok(());
                }
            }
        }
    }

    /// `n` bytes of the packet for a field, or an error if fewer are left.
    fn take(&mut self, n: u32) -> Result<u32, MqttError> {
        if n > self.left {
            return err(format!(
                "a {} field runs past the end of its packet ({n} bytes, {} left)",
                packet_name(self.kind),
                self.left
            ));
        }
        self.left -= n;
        Ok(n)
    }

    fn prop_len(&mut self) -> Result<Want, MqttError> {
        if self.left == 0 {
            return err(format!(
                "a {} ends where its properties should be",
                packet_name(self.kind)
            ));
        }
        self.var = 0;
        self.var_n = 0;
        self.step += 1;
        Ok(Want::PropLen)
    }

    fn finish(&mut self, sink: &mut impl Sink) {
        match self.kind {
            CONNACK => {
                let props = std::mem::take(&mut self.props);
                sink.connack(self.pid == 1, self.reason, props)
            }
            PUBLISH => sink.publish_end(self.qos(), self.pid),
            SUBACK => sink.suback(SUBACK, self.pid, self.granted, self.failed, self.first_bad),
            UNSUBACK if self.v5 => sink.suback(
                UNSUBACK,
                self.pid,
                self.granted,
                self.failed,
                self.first_bad,
            ),
            PINGRESP => sink.pingresp(),
            DISCONNECT_TYPE => sink.disconnect(self.reason),
            AUTH => sink.auth(),
            k => sink.ack(k, self.pid, self.reason),
        }
    }

    /// CONNACK's properties, a slice at a time: Receive Maximum (0x21) and Server Keep
    /// Alive (0x13) are kept, the rest passed over by their types (MQTT 5.0, 2.2.2.2).
    fn connack_props(&mut self, chunk: &[u8]) -> Result<(), MqttError> {
        for &b in chunk {
            let p = &mut self.prop;
            if p.id == 0 {
                p.id = b;
                *p = PropReader {
                    id: b,
                    ..PropReader::default()
                };
                match b {
                    // Byte properties.
                    0x01 | 0x17 | 0x19 | 0x24 | 0x25 | 0x28 | 0x29 | 0x2A => p.need = 1,
                    // Two-byte integers.
                    0x13 | 0x21 | 0x22 | 0x23 => p.need = 2,
                    // Four-byte integers.
                    0x02 | 0x11 | 0x18 | 0x27 => p.need = 4,
                    // Variable byte integer (subscription identifier).
                    0x0B => p.need = 0xff,
                    // Strings and binary data.
                    0x03 | 0x08 | 0x09 | 0x12 | 0x15 | 0x16 | 0x1A | 0x1C | 0x1F => p.len_bytes = 2,
                    // A string pair.
                    0x26 => {
                        p.len_bytes = 2;
                        p.pair = true;
                    }
                    _ => return err(format!("CONNACK with unknown property 0x{b:02x}")),
                }
                continue;
            }
            if p.need == 0xff {
                if b & 0x80 == 0 {
                    p.id = 0;
                }
                continue;
            }
            if p.need > 0 {
                p.val = p.val << 8 | u32::from(b);
                p.need -= 1;
                if p.need == 0 {
                    match p.id {
                        0x21 => self.props.receive_max = p.val as u16,
                        0x13 => self.props.server_keepalive = Some(p.val as u16),
                        0x24 => self.props.max_qos = Some(p.val as u8),
                        0x25 => self.props.retain_available = Some(p.val != 0),
                        0x27 => self.props.max_packet = p.val,
                        _ => {}
                    }
                    self.prop.id = 0;
                }
                continue;
            }
            if p.len_bytes > 0 {
                p.skip = p.skip << 8 | u16::from(b);
                p.len_bytes -= 1;
                if p.len_bytes == 0 && p.skip == 0 {
                    if p.pair {
                        p.pair = false;
                        p.len_bytes = 2;
                    } else {
                        p.id = 0;
                    }
                }
                continue;
            }
            p.skip -= 1;
            if p.skip == 0 {
                if p.pair {
                    p.pair = false;
                    p.len_bytes = 2;
                } else {
                    p.id = 0;
                }
            }
        }
        Ok(())
    }
}
