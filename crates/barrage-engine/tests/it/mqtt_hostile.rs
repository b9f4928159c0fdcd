//! MQTT brokers written here packet by packet (nothing from the engine's codec), each
//! misbehaving or testing one rule: a refused CONNECT, acknowledgements out of order, a
//! Receive Maximum of 2, a broker that goes silent (the keep-alive fails it), one that answers
//! every PINGREQ (one ping per keep-alive when idle), a malformed packet, a flood of QoS 1
//! deliveries (each counted and acknowledged). Every run is bounded, every exchange accounted
//! for, and each failure lands in its class.

use crate::common::{go_virtual, plan, TestServer};
use barrage_engine::plan::MqttPlan;
use barrage_engine::{run, Mode, Plan, Protocol, RunOutput, Template};
use barrage_metrics::ErrorClass;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

fn mqtt_plan(addr: SocketAddr, publish: bool, qos: u8, secs: f64) -> Plan {
    let mut p = plan(addr, 1, Mode::PingPong, secs);
    p.threads = 1;
    p.timeout = Duration::from_millis(500);
    p.drain = Duration::from_millis(300);
    p.target.url = format!("mqtt://{addr}");
    p.message = Template::new(b"payload".to_vec());
    p.protocol = Protocol::Mqtt(Box::new(MqttPlan {
        version: 4,
        client_id: Template::try_new(b"c{conn}".to_vec()).unwrap(),
        username: None,
        password: None,
        keepalive_s: 60,
        clean: true,
        publish: publish.then(|| Template::new(b"t/1".to_vec())),
        subscribe: None,
        qos,
        sub_qos: qos,
        retain: false,
        max_packet: 1 << 20,
    }));
    p
}

fn mqtt(p: &mut Plan) -> &mut MqttPlan {
    match &mut p.protocol {
        Protocol::Mqtt(m) => m,
        _ => unreachable!(),
    }
}

fn go(p: Plan) -> RunOutput {
    let out = run(p, Arc::new(AtomicBool::new(false)), |_, _| {}).expect("engine run");
    let e = out.outcome.summary.exchanges;
    assert!(e.balanced(), "conservation broken: {e:?}");
    out
}

/// One packet from the client: its first byte and its body.
fn read_packet(s: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut b = [0u8; 1];
    s.read_exact(&mut b).ok()?;
    let (mut len, mut shift) = (0usize, 0);
    loop {
        let mut l = [0u8; 1];
        s.read_exact(&mut l).ok()?;
        len |= usize::from(l[0] & 0x7f) << shift;
        shift += 7;
        if l[0] & 0x80 == 0 {
            break;
        }
    }
    let mut body = vec![0; len];
    s.read_exact(&mut body).ok()?;
    Some((b[0], body))
}

/// A PUBLISH's packet id (QoS 1 and 2): after its topic.
fn publish_pid(body: &[u8]) -> u16 {
    let t = usize::from(u16::from_be_bytes([body[0], body[1]]));
    u16::from_be_bytes([body[2 + t], body[3 + t]])
}

/// Reads CONNECT and accepts it (3.1.1, or 5.0 with these CONNACK properties).
fn accept(s: &mut TcpStream, props: Option<&[u8]>) -> Option<()> {
    let (first, _) = read_packet(s)?;
    assert_eq!(first, 0x10, "CONNECT first");
    match props {
        None => s.write_all(&[0x20, 2, 0, 0]).ok(),
        Some(p) => {
            let mut c = vec![0x20, (3 + p.len()) as u8, 0, 0, p.len() as u8];
            c.extend_from_slice(p);
            s.write_all(&c).ok()
        }
    }
}

#[test]
fn a_refused_connect_is_mqtt_refused_and_no_load_is_sent() {
    let server = TestServer::start(|mut s| {
        if read_packet(&mut s).is_some() {
            let _ = s.write_all(&[0x20, 2, 0, 5]); // not authorized
        }
    });
    let out = go(mqtt_plan(server.addr, true, 1, 0.5));
    let s = &out.outcome.summary;
    assert!(s.totals.errors.get(ErrorClass::MqttRefused) >= 1);
    assert_eq!(
        s.totals.mqtt.connack.get(5),
        s.totals.errors.get(ErrorClass::MqttRefused)
    );
    assert_eq!((s.exchanges.sent, s.totals.mqtt.connack.get(0)), (0, 0));
}

#[test]
fn qos1_acknowledgements_out_of_order_complete_by_packet_id() {
    // Acknowledges each four PUBLISHes in reverse order, and once sends a PUBACK for a packet
    // id nobody sent: an unexpected reply, not a completion.
    let server = TestServer::start(|mut s| {
        if accept(&mut s, None).is_none() {
            return;
        }
        let mut ids = Vec::new();
        let mut stray = true;
        while let Some((first, body)) = read_packet(&mut s) {
            if first >> 4 != 3 {
                continue;
            }
            ids.push(publish_pid(&body));
            if ids.len() == 4 {
                let mut w = Vec::new();
                if std::mem::take(&mut stray) {
                    w.extend_from_slice(&[0x40, 2, 0xff, 0xf0]);
                }
                for id in ids.drain(..).rev() {
                    let [a, b] = id.to_be_bytes();
                    w.extend_from_slice(&[0x40, 2, a, b]);
                }
                if s.write_all(&w).is_err() {
                    return;
                }
            }
        }
    });
    // Bounded by a count, not a time: a busy machine takes longer, never fewer.
    let mut p = mqtt_plan(server.addr, true, 1, 30.0);
    p.requests = Some(40);
    p.pipeline = 4;
    let out = go(p);
    let s = &out.outcome.summary;
    assert!(s.exchanges.completed >= 40, "{:?}", s.exchanges);
    assert_eq!(s.exchanges.failed, 0);
    assert_eq!(s.totals.unexpected, 1, "the stray PUBACK");
    assert_eq!(s.totals.mqtt.puback, s.exchanges.completed + 1);
}

#[test]
fn mqtt5_receive_maximum_bounds_the_publishes_in_flight() {
    // Receive Maximum 2: the broker acknowledges late and checks it never has more than two
    // PUBLISHes unacknowledged, though the client's window is 8.
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let server = TestServer::start(move |mut s| {
        if accept(&mut s, Some(&[0x21, 0, 2])).is_none() {
            return;
        }
        let (mut open, mut most) = (Vec::new(), 0);
        while let Some((first, body)) = read_packet(&mut s) {
            if first >> 4 != 3 {
                continue;
            }
            open.push(publish_pid(&body));
            most = most.max(open.len());
            if open.len() == 2 {
                let mut w = Vec::new();
                for id in open.drain(..) {
                    let [a, b] = id.to_be_bytes();
                    w.extend_from_slice(&[0x40, 2, a, b]);
                }
                if s.write_all(&w).is_err() {
                    break;
                }
            }
        }
        let _ = tx.lock().unwrap().send(most);
    });
    let mut p = mqtt_plan(server.addr, true, 1, 30.0);
    p.requests = Some(20);
    mqtt(&mut p).version = 5;
    p.pipeline = 8;
    let out = go(p);
    let s = &out.outcome.summary;
    assert!(s.exchanges.completed >= 20, "{:?}", s.exchanges);
    assert_eq!(s.exchanges.failed, 0);
    let most = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("the broker's count");
    assert_eq!(most, 2, "PUBLISHes in flight at once");
}

#[test]
fn an_idle_connection_pings_once_per_keepalive() {
    // Answers CONNECT and every PINGREQ. Keep-alive 2 s, 9.5 s of holding on virtual time:
    // ticks at 1..9 s; the first finds CONNECT sent, then a PINGREQ goes out every other tick
    // (2, 4, 6, 8 s).
    let server = TestServer::start(|mut s| {
        if accept(&mut s, None).is_none() {
            return;
        }
        while let Some((first, _)) = read_packet(&mut s) {
            if first == 0xC0 && s.write_all(&[0xD0, 0]).is_err() {
                return;
            }
        }
    });
    let mut p = mqtt_plan(server.addr, false, 0, 9.5);
    mqtt(&mut p).keepalive_s = 2;
    let (out, _) = go_virtual(p);
    let m = &out.outcome.summary.totals.mqtt;
    assert_eq!((m.pings, m.pongs), (4, 4));
    assert_eq!(out.outcome.summary.totals.errors.total(), 0);
}

#[test]
fn a_silent_broker_fails_the_keepalive_as_timeout() {
    // Accepts, then reads everything and answers nothing. Keep-alive 2 s: the PINGREQ at
    // 2 s is unanswered at 4 s, a whole keep-alive later, and the connection fails as
    // `timeout`; each connection it reopens does the same.
    let server = TestServer::start(|mut s| {
        if accept(&mut s, None).is_none() {
            return;
        }
        while read_packet(&mut s).is_some() {}
    });
    let mut p = mqtt_plan(server.addr, false, 0, 9.5);
    mqtt(&mut p).keepalive_s = 2;
    let (out, _) = go_virtual(p);
    let t = &out.outcome.summary.totals;
    let timeouts = t.errors.get(ErrorClass::Timeout);
    assert!(timeouts >= 1, "{:?}", t.errors);
    assert_eq!(t.mqtt.pongs, 0);
    // Each connection pinged once and timed out; the last one may still be waiting.
    assert!(
        (timeouts..=timeouts + 1).contains(&t.mqtt.pings),
        "{:?}",
        t.mqtt
    );
    assert!((timeouts..=timeouts + 1).contains(&t.mqtt.connack.get(0)));
}

#[test]
fn a_malformed_packet_fails_the_connection_as_protocol() {
    // After CONNACK, a PUBLISH whose QoS bits say 3.
    let server = TestServer::start(|mut s| {
        if accept(&mut s, None).is_some() {
            let _ = s.write_all(&[0x36, 4, 0, 1, b't', 0]);
            while read_packet(&mut s).is_some() {}
        }
    });
    let out = go(mqtt_plan(server.addr, false, 0, 0.3));
    let t = &out.outcome.summary.totals;
    assert!(t.errors.get(ErrorClass::Protocol) >= 1, "{:?}", t.errors);
}

#[test]
fn a_flood_of_qos1_deliveries_is_counted_and_acknowledged() {
    const N: u64 = 10_000;
    let acks = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&acks);
    let server = TestServer::start(move |mut s| {
        let (first, _) = read_packet(&mut s).expect("CONNECT");
        assert_eq!(first, 0x10);
        let (first, _) = read_packet(&mut s).expect("SUBSCRIBE");
        assert_eq!(first, 0x82);
        let mut w = vec![0x20, 2, 0, 0, 0x90, 3, 0, 1, 1];
        for i in 0..N {
            let pid = (i % 65_535 + 1) as u16;
            let [a, b] = pid.to_be_bytes();
            w.extend_from_slice(&[0x32, 9, 0, 3, b'a', b'/', b'b', a, b, b'h', b'i']);
        }
        let mut r = s.try_clone().unwrap();
        let counter = Arc::clone(&seen);
        let reader = std::thread::spawn(move || {
            while let Some((first, _)) = read_packet(&mut r) {
                if first == 0x40 {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        let _ = s.write_all(&w);
        let _ = reader.join();
    });
    let mut p = mqtt_plan(server.addr, false, 1, 1.0);
    mqtt(&mut p).subscribe = Some(Template::new(b"a/#".to_vec()));
    let out = go(p);
    let m = &out.outcome.summary.totals.mqtt;
    assert_eq!((m.subscribed, m.received), (1, [0, N, 0]));
    assert_eq!(m.received_bytes, 2 * N);
    // The broker's reader counts the PUBACKs until the connection closes (after the run).
    for _ in 0..50 {
        if acks.load(Ordering::Relaxed) == N {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(acks.load(Ordering::Relaxed), N);
}

#[test]
fn a_packet_id_is_never_reused_while_its_publish_is_unacknowledged() {
    // The broker holds back the first PUBLISH's acknowledgement and acknowledges every other
    // at once. The client publishes until the newest id would reach the held one's (65,535
    // ids in flight from the oldest), and waits; the broker, seeing no PUBLISH come for a
    // moment (one reusing the held id would come at once), releases it, and the client goes
    // on. (On a machine too slow to send within the moment, the check is weaker, not false.) No PUBLISH ever carries an id still unacknowledged. Bounded by a count
    // (70,000 answered), not a time.
    const RING: u64 = 65_535;
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let server = TestServer::start(move |mut s| {
        let _ = s.set_nodelay(true);
        if accept(&mut s, None).is_none() {
            return;
        }
        let (mut held, mut reused, mut n): (Option<u16>, u64, u64) = (None, 0, 0);
        let mut w = Vec::new();
        loop {
            if n == RING && held.is_some() {
                // The ring is full: a client that keeps it sends nothing now. Wait a moment
                // for a PUBLISH that would reuse the held id, then release the held one.
                let _ = s.set_read_timeout(Some(Duration::from_millis(300)));
            }
            let got = read_packet(&mut s);
            let _ = s.set_read_timeout(None);
            let Some((first, body)) = got else {
                match held.take() {
                    Some(h) if n == RING => {
                        let [a, b] = h.to_be_bytes();
                        if s.write_all(&[0x40, 2, a, b]).is_err() {
                            break;
                        }
                        continue;
                    }
                    _ => break,
                }
            };
            if first >> 4 != 3 {
                continue;
            }
            n += 1;
            let id = publish_pid(&body);
            match held {
                None if n == 1 => held = Some(id),
                Some(h) if h == id => reused += 1,
                _ => {
                    let [a, b] = id.to_be_bytes();
                    w.extend_from_slice(&[0x40, 2, a, b]);
                }
            }
            if !w.is_empty() {
                if s.write_all(&w).is_err() {
                    break;
                }
                w.clear();
            }
        }
        let _ = tx.lock().unwrap().send((n, reused));
    });
    let mut p = mqtt_plan(server.addr, true, 1, 60.0);
    p.requests = Some(70_000);
    p.pipeline = 256;
    p.timeout = Duration::from_secs(30);
    let out = go(p);
    let s = &out.outcome.summary;
    let (n, reused) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the broker's count");
    assert_eq!(
        reused, 0,
        "packet ids reused while in flight ({n} PUBLISHes)"
    );
    assert!(n > RING, "the client went on past the full ring: {n}");
    assert!(s.exchanges.completed >= 70_000, "{:?}", s.exchanges);
    assert_eq!(s.totals.errors.total(), 0, "{:?}", s.totals.errors);
}

#[test]
fn the_brokers_server_keep_alive_replaces_the_clients() {
    // A 5.0 broker says Server Keep Alive 2 s to a client asking for 60 s: the client pings
    // on the broker's period (ticks at 1..9 s of 9.5 s; a PINGREQ every other tick).
    let server = TestServer::start(|mut s| {
        if accept(&mut s, Some(&[0x13, 0, 2])).is_none() {
            return;
        }
        while let Some((first, _)) = read_packet(&mut s) {
            if first == 0xC0 && s.write_all(&[0xD0, 0]).is_err() {
                return;
            }
        }
    });
    let mut p = mqtt_plan(server.addr, false, 0, 9.5);
    mqtt(&mut p).version = 5;
    let (out, _) = go_virtual(p);
    let m = &out.outcome.summary.totals.mqtt;
    assert_eq!((m.pings, m.pongs), (4, 4));
}

#[test]
fn a_qos_above_the_brokers_maximum_is_refused_before_any_publish() {
    // Maximum QoS 0 in CONNACK; the run publishes at QoS 1: each connection fails at once as
    // mqtt.refused, and no PUBLISH reaches the broker (it would disconnect the client).
    let publishes = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&publishes);
    let server = TestServer::start(move |mut s| {
        if accept(&mut s, Some(&[0x24, 0])).is_none() {
            return;
        }
        while let Some((first, _)) = read_packet(&mut s) {
            if first >> 4 == 3 {
                seen.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let mut p = mqtt_plan(server.addr, true, 1, 0.5);
    mqtt(&mut p).version = 5;
    let out = go(p);
    let s = &out.outcome.summary;
    assert!(s.totals.errors.get(ErrorClass::MqttRefused) >= 1);
    assert_eq!(s.exchanges.sent, 0);
    assert_eq!(publishes.load(Ordering::Relaxed), 0);
}

/// A broker that answers the first PUBLISH with a second CONNACK (issue 42): one CONNACK per
/// connection is the rule, so the connection fails as `protocol`, the PUBLISH with it, and
/// no exchange completes.
#[test]
fn a_second_connack_fails_the_connection_as_protocol() {
    let server = TestServer::start(|mut s| {
        if accept(&mut s, None).is_none() {
            return;
        }
        while let Some((first, body)) = read_packet(&mut s) {
            if first >> 4 != 3 {
                continue;
            }
            let [a, b] = publish_pid(&body).to_be_bytes();
            // CONNACK again, then the PUBACK it would have been owed.
            if s.write_all(&[0x20, 2, 0, 0, 0x40, 2, a, b]).is_err() {
                return;
            }
        }
    });
    let mut p = mqtt_plan(server.addr, true, 1, 0.5);
    p.requests = Some(5);
    let out = go(p);
    let s = &out.outcome.summary;
    assert!(
        s.totals.errors.get(ErrorClass::Protocol) >= 1,
        "{:?}",
        s.totals.errors
    );
    assert_eq!(
        s.totals.errors.total(),
        s.totals.errors.get(ErrorClass::Protocol)
    );
    assert_eq!(s.exchanges.completed, 0, "{:?}", s.exchanges);
    // The second CONNACK of each connection is refused, not counted: one per attempt, but
    // the attempt the load's end cut short may not have had its first yet.
    let acks = s.totals.mqtt.connack.get(0);
    let attempts = s.connections.attempts;
    assert!(
        acks == attempts || acks + 1 == attempts,
        "{acks} CONNACKs counted for {attempts} connection attempts"
    );
    let why = s.totals.reasons.first(ErrorClass::Protocol).unwrap();
    assert!(why.contains("a second CONNACK"), "{why}");
}
