//! The chat server against plain blocking clients: rooms fill within the size range, every
//! publish reaches every member, and the fault knobs' counts add up with what clients got.

use crate::common;
use crate::common::ws_client::{
    frame, masked, read_close, read_frame, upgrade, CLOSE, PING, PONG, TEXT,
};
use barrage_servers::chat::{start, ChatConfig};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

fn cfg() -> ChatConfig {
    ChatConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        room_min: 3,
        room_max: 5,
        ..ChatConfig::default()
    }
}

struct Client {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl Client {
    fn login(addr: std::net::SocketAddr, user: &str) -> (Client, String) {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut c = Client {
            w: s.try_clone().unwrap(),
            r: BufReader::new(s),
        };
        writeln!(c.w, "{{\"op\":\"login\",\"user\":\"{user}\"}}").unwrap();
        let joined = c.line();
        (c, joined)
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.r.read_line(&mut l).unwrap();
        l
    }

    /// Lines until `bye`, after sending leave.
    fn leave(&mut self) -> Vec<String> {
        writeln!(self.w, "{{\"op\":\"leave\"}}").unwrap();
        let mut out = Vec::new();
        loop {
            let l = self.line();
            if l.is_empty() || l.starts_with("{\"op\":\"bye\"") {
                return out;
            }
            out.push(l);
        }
    }
}

fn num(line: &str, key: &str) -> usize {
    let k = format!("\"{key}\":");
    let at = line.find(&k).unwrap() + k.len();
    line[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn run(
    cfg: ChatConfig,
    users: usize,
    per_user: usize,
) -> (Vec<usize>, usize, barrage_servers::ChatStats) {
    let server = start(cfg).unwrap();
    let addr = server.local_addr();
    let mut clients = Vec::new();
    let mut rooms: std::collections::BTreeMap<usize, usize> = Default::default();
    for i in 0..users {
        let (c, joined) = Client::login(addr, &format!("u{i}"));
        let (room, size, cap) = (
            num(&joined, "room"),
            num(&joined, "size"),
            num(&joined, "cap"),
        );
        assert!((3..=5).contains(&cap) && size <= cap, "{joined}");
        rooms.insert(room, size);
        clients.push(c);
    }
    for c in clients.iter_mut() {
        for k in 0..per_user {
            writeln!(c.w, "{{\"op\":\"pub\",\"text\":\"m{k}\"}}").unwrap();
        }
    }
    // Every publish handled (its deliveries queued before any later `bye`).
    let t = std::time::Instant::now();
    while server.stats().chat.unwrap().messages_in < (users * per_user) as u64 {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the server never read every publish"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut got = 0;
    for c in clients.iter_mut() {
        got += c
            .leave()
            .iter()
            .filter(|l| l.contains("\"op\":\"msg\""))
            .count();
    }
    let stats = server.shutdown();
    (rooms.values().copied().collect(), got, stats.chat.unwrap())
}

#[test]
fn every_publish_reaches_every_member_of_its_room() {
    let (sizes, got, s) = run(cfg(), 40, 5);
    // Members of a room of n get 5 messages from each of the n members (self included),
    // provided everyone joined before anyone published (true here).
    let want: usize = sizes.iter().map(|n| n * n * 5).sum();
    assert_eq!(sizes.iter().sum::<usize>(), 40);
    assert_eq!(s.logins, 40);
    assert_eq!(s.rooms as usize, sizes.len());
    assert_eq!(s.messages_in, 200);
    assert_eq!(s.deliveries_out as usize, want);
    assert_eq!(got, want, "every delivery arrived");
    assert_eq!((s.dropped, s.duplicated, s.reordered), (0, 0, 0));
}

#[test]
fn fault_knobs_are_counted_as_injected() {
    let mut c = cfg();
    c.drop = 0.05;
    c.dup = 0.05;
    c.reorder = 0.05;
    c.seed = 42;
    let (sizes, got, s) = run(c, 40, 20);
    let offered: u64 = sizes.iter().map(|n| (n * n * 20) as u64).sum();
    assert!(
        s.dropped > 0 && s.duplicated > 0 && s.reordered > 0,
        "{s:?}"
    );
    // Every delivery the server attempted was dropped or sent (a duplicate sends one more).
    assert_eq!(s.deliveries_out, offered - s.dropped + s.duplicated);
    assert_eq!(
        got as u64, s.deliveries_out,
        "what was sent arrived (held ones before bye)"
    );
}

/// WebSocket and line clients share the port and the rooms: the same JSON, one message per
/// text frame, fragments reassembled, pings answered, a close answered and the member gone.
#[test]
fn websocket_members_share_rooms_with_line_members() {
    let mut c = cfg();
    (c.room_min, c.room_max) = (3, 3);
    let server = start(c).unwrap();
    let addr = server.local_addr();
    let ws = |user: &str| {
        let mut s = common::connect(addr);
        upgrade(&mut s);
        let login = format!("{{\"op\":\"login\",\"user\":\"{user}\"}}");
        s.write_all(&masked(TEXT, login.as_bytes())).unwrap();
        let f = read_frame(&mut s);
        assert_eq!(f.opcode, TEXT);
        (s, String::from_utf8(f.payload).unwrap())
    };
    let (mut a, joined) = ws("wa");
    assert!(
        joined.starts_with("{\"op\":\"joined\"") && !joined.ends_with('\n'),
        "{joined}"
    );
    assert_eq!(num(&joined, "size"), 1);
    let (mut b, _) = ws("wb");
    let (mut l, joined) = Client::login(addr, "line");
    assert_eq!(num(&joined, "size"), 3);
    let text = |s: &mut std::net::TcpStream| {
        let f = read_frame(s);
        assert_eq!(f.opcode, TEXT);
        String::from_utf8(f.payload).unwrap()
    };
    // The members told of each arrival.
    assert_eq!(num(&text(&mut a), "size"), 2);
    assert_eq!(num(&text(&mut a), "size"), 3);
    assert_eq!(num(&text(&mut b), "size"), 3);
    // A publish in three fragments with a ping between them.
    let body = br#"{"op":"pub","text":"~hello~"}"#;
    let mask = Some([1, 2, 3, 4]);
    let mut raw = frame(false, TEXT, &body[..5], mask);
    raw.extend(frame(true, PING, b"p!", mask));
    raw.extend(frame(false, 0, &body[5..12], mask));
    raw.extend(frame(true, 0, &body[12..], mask));
    a.write_all(&raw).unwrap();
    let pong = read_frame(&mut a);
    assert_eq!((pong.opcode, pong.payload.as_slice()), (PONG, &b"p!"[..]));
    let want = r#"{"op":"msg","room":0,"from":"wa","text":"~hello~"}"#;
    assert_eq!(text(&mut a), want);
    assert_eq!(text(&mut b), want);
    assert_eq!(l.line(), format!("{want}\n"));
    // A close is answered with its code; the others hear the room shrink.
    b.write_all(&masked(CLOSE, &1000u16.to_be_bytes())).unwrap();
    assert_eq!(read_close(&mut b), Some(1000));
    assert_eq!(num(&text(&mut a), "size"), 2);
    assert_eq!(num(&l.line(), "size"), 2);
    // Leaving over WebSocket: `bye` as a text frame.
    a.write_all(&masked(TEXT, br#"{"op":"leave"}"#)).unwrap();
    assert_eq!(text(&mut a), r#"{"op":"bye"}"#);
    let stats = server.shutdown().chat.unwrap();
    assert_eq!(
        (stats.logins, stats.messages_in, stats.deliveries_out),
        (3, 1, 3)
    );
}

/// Issue 24: a member that never reads had every delivery queued for it without bound (1.9 GB
/// in 12 s), each counted in `deliveries_out` as it was queued. Now its output is capped: past
/// `max_queue` it is disconnected (counted, with the deliveries it was owed), and
/// `deliveries_out` and `bytes_written` are what the sockets took: exactly what the clients
/// read.
#[test]
fn a_member_that_never_reads_is_cut_off_at_its_queue_cap_and_only_written_deliveries_count() {
    use std::io::Read;
    const CAP: usize = 64 * 1024;
    const N: usize = 1000;
    let mut c = cfg();
    (c.room_min, c.room_max) = (3, 3);
    c.self_delivery = false;
    c.max_queue = CAP;
    let server = start(c).unwrap();
    let addr = server.local_addr();
    // The slow member: a small receive window; it reads its `joined` and then nothing.
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    sock.connect(&addr.into()).unwrap();
    let s: TcpStream = sock.into();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut slow = Client {
        w: s.try_clone().unwrap(),
        r: BufReader::new(s),
    };
    writeln!(slow.w, "{{\"op\":\"login\",\"user\":\"slow\"}}").unwrap();
    let mut slow_bytes = slow.line().len();
    // The fast member reads every delivery; the publisher publishes N messages of 20 kB.
    let (mut fast, joined) = Client::login(addr, "fast");
    let mut fast_bytes = joined.len();
    let reader = std::thread::spawn(move || {
        let (mut msgs, mut bytes) = (0, 0);
        while msgs < N {
            let l = fast.line();
            assert!(!l.is_empty(), "the fast member was cut off after {msgs}");
            bytes += l.len();
            msgs += l.contains("\"op\":\"msg\"") as usize;
        }
        (fast, bytes)
    });
    let (mut publisher, joined) = Client::login(addr, "pub");
    let mut pub_bytes = joined.len();
    let line = format!("{{\"op\":\"pub\",\"text\":\"{}\"}}\n", "x".repeat(20_000));
    for _ in 0..N {
        publisher.w.write_all(line.as_bytes()).unwrap();
    }
    let (mut fast, bytes) = reader.join().unwrap();
    fast_bytes += bytes;
    // Every publish was handled (the fast member has them all); the slow member was cut off:
    // it reads what its socket took, then the end.
    let mut rest = Vec::new();
    slow.r
        .read_to_end(&mut rest)
        .expect("the slow member is disconnected, not kept waiting");
    slow_bytes += rest.len();
    let slow_msgs = rest
        .split(|&b| b == b'\n')
        .filter(|l| l.starts_with(b"{\"op\":\"msg\"") && l.ends_with(b"\"}"))
        .count();
    for (c, bytes) in [
        (&mut fast, &mut fast_bytes),
        (&mut publisher, &mut pub_bytes),
    ] {
        *bytes += c.leave().iter().map(|l| l.len()).sum::<usize>() + "{\"op\":\"bye\"}\n".len();
    }
    let all = server.shutdown();
    let s = all.chat.unwrap();
    assert_eq!(s.messages_in, N as u64);
    assert_eq!(s.slow_disconnects, 1, "{s:?}");
    assert!(slow_msgs < N / 2, "it took {slow_msgs} deliveries: no cap");
    assert_eq!(s.deliveries_out, (N + slow_msgs) as u64, "{s:?}");
    assert!(
        s.slow_dropped >= 1 && slow_msgs as u64 + s.slow_dropped <= N as u64,
        "{s:?}"
    );
    assert!(
        s.queue_peak_bytes as usize <= CAP + line.len() + 64,
        "{s:?}"
    );
    assert_eq!(
        all.bytes_written,
        (slow_bytes + fast_bytes + pub_bytes) as u64,
        "bytes written are bytes the clients read"
    );
}
