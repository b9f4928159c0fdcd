use super::*;

#[derive(Default)]
struct Log(Vec<String>);

impl Sink for Log {
    fn connack(&mut self, sp: bool, code: u8, p: decode::ConnackProps) {
        self.0.push(format!(
            "connack sp={sp} code={code} rm={} ka={:?}",
            p.receive_max, p.server_keepalive
        ));
    }
    fn publish(&mut self, qos: u8, pid: u16, len: u32) {
        self.0.push(format!("publish q{qos} #{pid} {len}B"));
    }
    fn payload(&mut self, b: &[u8]) {
        match self.0.last_mut() {
            Some(l) if l.starts_with("data ") => l.push_str(&String::from_utf8_lossy(b)),
            _ => self.0.push(format!("data {}", String::from_utf8_lossy(b))),
        }
    }
    fn publish_end(&mut self, qos: u8, pid: u16) {
        self.0.push(format!("end q{qos} #{pid}"));
    }
    fn ack(&mut self, kind: u8, pid: u16, reason: u8) {
        self.0
            .push(format!("{} #{pid} r{reason}", packet_name(kind)));
    }
    fn suback(&mut self, kind: u8, pid: u16, granted: u32, failed: u32, bad: u8) {
        self.0.push(format!(
            "{} #{pid} ok{granted} bad{failed}/{bad:02x}",
            packet_name(kind)
        ));
    }
    fn pingresp(&mut self) {
        self.0.push("pingresp".into());
    }
    fn disconnect(&mut self, reason: u8) {
        self.0.push(format!("disconnect r{reason:02x}"));
    }
    fn auth(&mut self) {
        self.0.push("auth".into());
    }
}

/// Decodes `wire` whole, then cut at every pair of points: the events are the same.
fn decode_every_split(version: u8, wire: &[u8]) -> Vec<String> {
    let whole = {
        let mut d = Decoder::new(version, 1 << 20);
        let mut log = Log::default();
        d.feed(wire, &mut log).unwrap();
        assert!(!d.mid_packet());
        log.0
    };
    for i in 0..=wire.len() {
        for j in i..=wire.len() {
            let mut d = Decoder::new(version, 1 << 20);
            let mut log = Log::default();
            for part in [&wire[..i], &wire[i..j], &wire[j..]] {
                d.feed(part, &mut log).unwrap();
            }
            assert_eq!(log.0, whole, "cut at {i} and {j}");
        }
    }
    whole
}

fn publish_bytes(h: PublishHead, topic: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    publish(
        &mut out,
        h,
        |o| o.extend_from_slice(topic),
        |o| o.extend_from_slice(payload),
    );
    out
}

#[test]
fn connect_is_what_the_standard_shows() {
    let mut out = vec![0xAA];
    connect(
        &mut out,
        &ConnectSpec {
            version: V311,
            client_id: b"c1",
            username: None,
            password: None,
            keepalive_s: 60,
            clean: true,
        },
    );
    assert_eq!(
        out,
        [0xAA, 0x10, 14, 0, 4, b'M', b'Q', b'T', b'T', 4, 0x02, 0, 60, 0, 2, b'c', b'1']
    );
    let mut out = Vec::new();
    connect(
        &mut out,
        &ConnectSpec {
            version: V5,
            client_id: b"",
            username: Some(b"u"),
            password: Some(b"pw"),
            keepalive_s: 300,
            clean: false,
        },
    );
    assert_eq!(
        out,
        [
            0x10, 20, 0, 4, b'M', b'Q', b'T', b'T', 5, 0xC0, 1, 44, 0, 0, 0, 0, 1, b'u', 0, 2,
            b'p', b'w'
        ]
    );
}

#[test]
fn remaining_lengths_take_their_real_width() {
    for len in [
        0usize, 1, 120, 121, 122, 16_000, 16_500, 2_097_000, 2_100_000,
    ] {
        let payload = vec![b'x'; len];
        let h = PublishHead {
            version: V311,
            qos: 0,
            retain: false,
            pid: 0,
        };
        let out = publish_bytes(h, b"t", &payload);
        let rem = 3 + len; // the topic's two length bytes and one byte, then the payload
        assert_eq!(out.len(), 1 + varint_len(rem as u32) + rem, "payload {len}");
        let mut v = Vec::new();
        put_varint(&mut v, rem as u32);
        assert_eq!(&out[1..1 + v.len()], &v[..]);
        assert_eq!(&out[out.len() - len..], &payload[..]);
    }
}

#[test]
fn publish_subscribe_and_acks() {
    let h = PublishHead {
        version: V311,
        qos: 1,
        retain: true,
        pid: 0x1234,
    };
    assert_eq!(
        publish_bytes(h, b"a/b", b"hi"),
        [0x33, 9, 0, 3, b'a', b'/', b'b', 0x12, 0x34, b'h', b'i']
    );
    let h5 = PublishHead {
        version: V5,
        qos: 0,
        retain: false,
        pid: 7,
    };
    assert_eq!(
        publish_bytes(h5, b"t", b""),
        [0x30, 4, 0, 1, b't', 0],
        "QoS 0 carries no packet id; 5.0 an empty property length"
    );
    let mut out = Vec::new();
    subscribe(&mut out, V311, 1, 2, |o| o.extend_from_slice(b"r/#"));
    assert_eq!(out, [0x82, 8, 0, 1, 0, 3, b'r', b'/', b'#', 2]);
    out.clear();
    subscribe(&mut out, V5, 1, 1, |o| o.extend_from_slice(b"r"));
    assert_eq!(out, [0x82, 7, 0, 1, 0, 0, 1, b'r', 1]);
    out.clear();
    unsubscribe(&mut out, V311, 9, |o| o.extend_from_slice(b"r"));
    assert_eq!(out, [0xA2, 5, 0, 9, 0, 1, b'r']);
    out.clear();
    ack(&mut out, PUBREL, 0x0102);
    ack(&mut out, PUBACK, 3);
    assert_eq!(out, [0x62, 2, 1, 2, 0x40, 2, 0, 3]);
    assert_eq!(wildcard(b"a/+/b"), Some('+'));
    for ok in ["a/+/b", "a/#", "#", "+", "+/+", "a/b", "/a/"] {
        assert_eq!(filter_fault(ok.as_bytes()), None, "{ok}");
    }
    for bad in ["a+", "a/#/b", "a#", "a/b#", "#/a", "+a/b"] {
        assert!(filter_fault(bad.as_bytes()).is_some(), "{bad}");
    }
    assert_eq!(wildcard(b"a/b"), None);
}

#[test]
fn packet_ids_go_round_and_come_back() {
    for oldest_seq in [0u64, 1, 65_533, 65_534, 65_535, 1_000_000] {
        let oldest = oldest_seq << 1 | 1;
        for ahead in [0u64, 1, 100, 65_534] {
            let key = (oldest_seq + ahead) << 1 | 1;
            let pid = pid_of_key(key);
            assert!(pid >= 1);
            assert_eq!(
                key_of_pid(pid, oldest),
                key,
                "oldest {oldest_seq} ahead {ahead}"
            );
        }
    }
}

fn broker_stream_311() -> Vec<u8> {
    let mut w = vec![0x20, 2, 1, 0]; // CONNACK, session present, accepted
    w.extend_from_slice(&[0x90, 4, 0, 1, 1, 0x80]); // SUBACK #1: granted 1, failed
    w.extend(publish_bytes(
        PublishHead {
            version: V311,
            qos: 0,
            retain: false,
            pid: 0,
        },
        b"room/1",
        b"hello",
    ));
    w.extend(publish_bytes(
        PublishHead {
            version: V311,
            qos: 2,
            retain: false,
            pid: 5,
        },
        b"r",
        b"",
    ));
    w.extend_from_slice(&[
        0x40, 2, 0, 9, 0x50, 2, 0, 10, 0x62, 2, 0, 11, 0x70, 2, 0, 12,
    ]);
    w.extend_from_slice(&[0xB0, 2, 0, 13, 0xD0, 0]);
    w
}

#[test]
fn a_broker_stream_decodes_the_same_at_every_split() {
    let log = decode_every_split(V311, &broker_stream_311());
    assert_eq!(
        log,
        [
            "connack sp=true code=0 rm=0 ka=None",
            "SUBACK #1 ok1 bad1/80",
            "publish q0 #0 5B",
            "data hello",
            "end q0 #0",
            "publish q2 #5 0B",
            "end q2 #5",
            "PUBACK #9 r0",
            "PUBREC #10 r0",
            "PUBREL #11 r0",
            "PUBCOMP #12 r0",
            "UNSUBACK #13 r0",
            "pingresp",
        ]
    );
}

#[test]
fn mqtt5_properties_and_reason_codes() {
    let mut w = vec![
        0x20, 13, 0, 0, // CONNACK: accepted, then 10 bytes of properties
        10, 0x21, 0, 20, // Receive Maximum 20
        0x13, 0, 30, // Server Keep Alive 30
        0x1F, 0, 1, b'x', // Reason String "x"
    ];
    w[1] = (w.len() - 2) as u8;
    w[4] = (w.len() - 5) as u8;
    // PUBLISH QoS 1 #4 with a property (Message Expiry, 4 bytes) and payload "pp".
    w.extend_from_slice(&[0x32, 12, 0, 1, b't', 0, 4, 5, 0x02, 0, 0, 0, 9, b'p', b'p']);
    let n = w.len();
    w[n - 14] = 13;
    // PUBACK #2 with reason 0x10 (no matching subscribers) and no properties; PUBREC #3
    // failed (0x87) with an empty property length; PUBCOMP #4 of two bytes (success).
    w.extend_from_slice(&[0x40, 3, 0, 2, 0x10, 0x50, 4, 0, 3, 0x87, 0, 0x70, 2, 0, 4]);
    // SUBACK #1 with no properties and codes 0, 0x87; UNSUBACK #2 with code 0.
    w.extend_from_slice(&[0x90, 5, 0, 1, 0, 0, 0x87, 0xB0, 4, 0, 2, 0, 0]);
    // AUTH, then DISCONNECT 0x8B (server shutting down) with a property length of 0.
    w.extend_from_slice(&[0xF0, 2, 0x18, 0, 0xE0, 2, 0x8B, 0]);
    let log = decode_every_split(V5, &w);
    assert_eq!(
        log,
        [
            "connack sp=false code=0 rm=20 ka=Some(30)",
            "publish q1 #4 2B",
            "data pp",
            "end q1 #4",
            "PUBACK #2 r16",
            "PUBREC #3 r135",
            "PUBCOMP #4 r0",
            "SUBACK #1 ok1 bad1/87",
            "UNSUBACK #2 ok1 bad0/00",
            "auth",
            "disconnect r8b",
        ]
    );
}

#[test]
fn malformed_packets_are_errors_never_panics() {
    let cases: &[(u8, &[u8], &str)] = &[
        (V311, &[0x10, 0], "only a client sends"),
        (V311, &[0x82, 0], "only a client sends"),
        (V311, &[0x36, 0], "flags"),
        (V311, &[0x60, 2, 0, 1], "flags"),
        (V311, &[0x21, 2, 0, 0], "flags"),
        (V311, &[0x20, 2, 2, 0], "CONNACK with flags"),
        (V311, &[0x30, 0xff, 0xff, 0xff, 0xff], "longer than four"),
        (V311, &[0x30, 0xff, 0xff, 0x7f], "over the limit"),
        (V311, &[0x30, 3, 0, 5, b'x'], "runs past"),
        (V311, &[0x32, 4, 0, 1, b't', 0], "runs past"),
        (V311, &[0x32, 5, 0, 1, b't', 0, 0], "packet id 0"),
        (V311, &[0x40, 3, 0, 1, 0], "it has 2"),
        (V311, &[0x40, 1, 0], "runs past"),
        (V311, &[0x90, 2, 0, 1], "no codes"),
        (V311, &[0xD0, 1, 0], "more bytes"),
        (V311, &[0xE0, 0], "only a client sends"),
        (V5, &[0x30, 3, 0, 1, b't'], "where its properties"),
        (V5, &[0x30, 5, 0, 1, b't', 9, 0], "properties run past"),
        (V5, &[0x20, 5, 0, 0, 2, 0x21, 0], "runs past its properties"),
        (V5, &[0x20, 4, 0, 0, 1, 0x7e], "unknown property"),
    ];
    for (version, wire, want) in cases {
        let mut d = Decoder::new(*version, 1 << 20);
        let e = d
            .feed(wire, &mut Log::default())
            .expect_err(&format!("{wire:02x?}"));
        assert!(e.0.contains(want), "{wire:02x?}: {e}");
    }
}
