//! The redis and memcached codecs against the real servers (`redis-server`, `memcached`):
//! every rendered command is sent over a plain socket and the decoder must report exactly one
//! reply of the right kind per command, in order; the servers' own counters
//! (`INFO commandstats`, `stats`) must agree with what was sent.
//!
//! Each server is started by the test on a free port of 127.0.0.1 and killed by its PID when
//! its guard drops. When a server binary is missing the test prints "skipped: ..." and passes,
//! except under CI (`CI` set), where it fails: `.ci/run` installs both.

use barrage_engine::memcache::{McDecoder, McReply, McSink};
use barrage_engine::redis::{Commands, RespDecoder, RespReply, RespSink};
use barrage_engine::Fill;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server process, killed by its PID on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn installed(bin: &str) -> bool {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(bin).is_file()))
        .unwrap_or(false);
    crate::common::available(bin, found)
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Starts `make(port)` on a free port, retrying on a port taken in between; waits until the
/// port accepts connections (at most 10 s) and `pid_of` says the process that answers there
/// is this child. A free port can be taken between probing and binding, by another test's
/// server: then the child fails to bind, and a connect alone would reach that other server
/// (a redis test once talked to memcached and read `ERROR` as a reply).
fn start(make: impl Fn(u16) -> Command, pid_of: impl Fn(u16) -> Option<u32>) -> Server {
    for _ in 0..5 {
        let port = free_port();
        let child = make(port)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the server");
        let mut server = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                if pid_of(port) == Some(server.child.id()) {
                    return server;
                }
                break; // another server answers there: try another port
            }
            if let Ok(Some(_)) = server.child.try_wait() {
                break; // the port was taken: try another
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    panic!("the server did not start");
}

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

fn fill(seq: u64) -> Fill {
    Fill {
        conn: 1,
        seq,
        ts_us: 0,
    }
}

/// Writes `request` and reads until `count(sink) >= want`, feeding every read (of at most
/// `chunk` bytes, to cut replies at odd places) to `feed`.
fn exchange<S>(
    s: &mut TcpStream,
    request: &[u8],
    want: usize,
    chunk: usize,
    sink: &mut S,
    count: impl Fn(&S) -> usize,
    mut feed: impl FnMut(&[u8], &mut S),
) {
    s.write_all(request).unwrap();
    let mut buf = vec![0u8; chunk];
    while count(sink) < want {
        let n = s.read(&mut buf).expect("read a reply (5 s timeout)");
        assert!(n > 0, "the server closed the connection");
        feed(&buf[..n], sink);
    }
    assert_eq!(count(sink), want);
}

// ---------------------------------------------------------------------------------------------
// redis

#[derive(Default, Debug)]
struct RespEvents {
    replies: Vec<RespReply>,
    pushes: usize,
}

impl RespSink for RespEvents {
    fn reply(&mut self, r: RespReply) {
        self.replies.push(r);
    }
    fn push(&mut self) {
        self.pushes += 1;
    }
}

fn redis() -> Option<Server> {
    if !installed("redis-server") {
        return None;
    }
    Some(start(
        |port| {
            let mut c = Command::new("redis-server");
            c.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"]);
            c
        },
        |port| {
            // `INFO server` names the process (inline command, RESP bulk reply).
            let mut s = connect(port);
            s.write_all(b"INFO server\r\n").ok()?;
            let info = read_bulk_opt(&mut s)?;
            let pid = info.lines().find_map(|l| l.strip_prefix("process_id:"))?;
            pid.trim().parse().ok()
        },
    ))
}

/// [`read_bulk`] for a server that may not speak RESP: `None` for anything else.
fn read_bulk_opt(s: &mut TcpStream) -> Option<String> {
    let mut head = [0u8; 1];
    s.peek(&mut head).ok()?;
    (head[0] == b'$').then(|| read_bulk(s))
}

/// Reads one RESP bulk string reply (for INFO), with no decoder: the test's own parsing.
fn read_bulk(s: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
        let Some(nl) = got.iter().position(|c| *c == b'\n') else {
            continue;
        };
        let len: usize = std::str::from_utf8(&got[1..nl - 1])
            .unwrap()
            .parse()
            .unwrap();
        if got.len() >= nl + 1 + len + 2 {
            return String::from_utf8_lossy(&got[nl + 1..nl + 1 + len]).into_owned();
        }
    }
}

fn info_calls(info: &str, cmd: &str) -> u64 {
    let prefix = format!("cmdstat_{cmd}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

#[test]
fn redis_replies_are_one_event_each_of_the_right_kind() {
    let Some(server) = redis() else { return };
    let specs: Vec<String> = [
        "SET key:{seq} {conn}",                     // 0
        "GET key:{seq}",                            // 1
        "GET missing:{seq}",                        // 2
        "LPUSH list:{seq} a \"b c\"",               // 3
        "GET list:{seq}",                           // 4: WRONGTYPE
        "HELLO 3",                                  // 5: a map
        "HGETALL nohash",                           // 6: an empty map in RESP3
        "LRANGE list:{seq} 0 -1",                   // 7
        "INCRBYFLOAT f:{seq} 1.5",                  // 8
        "NOSUCHCOMMAND x",                          // 9: -ERR
        "SET big:{seq} \"\\r\\n$5\\r\\n*1\\r\\n\"", // 10: RESP in the payload
        "GET big:{seq}",                            // 11
    ]
    .map(String::from)
    .to_vec();
    let c = Commands::redis(&specs).unwrap();
    let plan: &[(usize, RespReply)] = &[
        (0, RespReply::Value),
        (1, RespReply::Value),
        (2, RespReply::Null),
        (3, RespReply::Value),
        (4, RespReply::Error),
        (7, RespReply::Value),
        (9, RespReply::Error),
        (10, RespReply::Value),
        (11, RespReply::Value),
        (5, RespReply::Value),
        // RESP3 from here on: null is `_`, HGETALL a map, floats doubles.
        (2, RespReply::Null),
        (6, RespReply::Value),
        (7, RespReply::Value),
        (8, RespReply::Value),
        (4, RespReply::Error),
        (11, RespReply::Value),
    ];
    let mut s = connect(server.port);
    let mut d = RespDecoder::default();
    let mut ev = RespEvents::default();
    // One exchange at a time, then everything again pipelined in one write, cut in 7-byte reads.
    for &(i, _) in plan {
        let mut req = Vec::new();
        c.render_into(i, fill(7), &mut req);
        let want = ev.replies.len() + 1;
        exchange(
            &mut s,
            &req,
            want,
            4096,
            &mut ev,
            |e| e.replies.len(),
            |b, e| d.feed(b, e).unwrap(),
        );
    }
    let want: Vec<RespReply> = plan.iter().map(|p| p.1).collect();
    assert_eq!(ev.replies, want);
    let mut req = Vec::new();
    for &(i, _) in plan {
        c.render_into(i, fill(8), &mut req);
    }
    let mut ev2 = RespEvents::default();
    exchange(
        &mut s,
        &req,
        plan.len(),
        7,
        &mut ev2,
        |e| e.replies.len(),
        |b, e| d.feed(b, e).unwrap(),
    );
    // Already RESP3 on this connection: HELLO 3 again is a map, everything else as before.
    assert_eq!(ev2.replies.len(), plan.len());
    assert_eq!(&ev2.replies[9..], &want[9..]);
    assert_eq!(ev.pushes + ev2.pushes, 0);
    assert!(d.is_idle());

    // A RESP3 subscription is confirmed by a push, which completes no request.
    let mut sub = connect(server.port);
    let c = Commands::redis(&["HELLO 3".into(), "SUBSCRIBE news".into()]).unwrap();
    let mut d = RespDecoder::default();
    let mut ev = RespEvents::default();
    let mut req = Vec::new();
    c.render_into(0, fill(0), &mut req);
    c.render_into(1, fill(0), &mut req);
    sub.write_all(&req).unwrap();
    while ev.replies.len() + ev.pushes < 2 {
        let mut buf = [0u8; 512];
        let n = sub
            .read(&mut buf)
            .expect("the subscription's push (5 s timeout)");
        assert!(n > 0);
        d.feed(&buf[..n], &mut ev).unwrap();
    }
    assert_eq!(
        (ev.replies.as_slice(), ev.pushes),
        (&[RespReply::Value][..], 1)
    );
}

#[test]
fn redis_weighted_pipelined_mix_reconciles_with_info_commandstats() {
    let Some(server) = redis() else { return };
    let specs: Vec<String> = [
        "3*SET k:{rand%50} v{seq}",
        "GET k:{seq%50}",
        "2*LPUSH l:{conn} x",
    ]
    .map(String::from)
    .to_vec();
    let c = Commands::redis(&specs).unwrap();
    let mut s = connect(server.port);
    let mut req = Vec::new();
    let mut sent = [0u64; 3];
    for seq in 0..600 {
        let i = c.pick(seq);
        sent[i] += 1;
        c.render_into(i, fill(seq), &mut req);
    }
    assert_eq!(sent, [300, 100, 200]);
    let mut d = RespDecoder::default();
    let mut ev = RespEvents::default();
    exchange(
        &mut s,
        &req,
        600,
        1000,
        &mut ev,
        |e| e.replies.len(),
        |b, e| d.feed(b, e).unwrap(),
    );
    assert!(ev.replies.iter().all(|r| *r != RespReply::Error));
    s.write_all(b"*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n")
        .unwrap();
    let info = read_bulk(&mut s);
    for (i, n) in sent.iter().enumerate() {
        let name = c.name(i).to_lowercase();
        assert_eq!(info_calls(&info, &name), *n, "{name}: {info}");
    }
}

// ---------------------------------------------------------------------------------------------
// memcached

#[derive(Default, Debug)]
struct McReplies(Vec<McReply>);

impl McSink for McReplies {
    fn reply(&mut self, r: McReply) {
        self.0.push(r);
    }
}

fn memcached() -> Option<Server> {
    if !installed("memcached") {
        return None;
    }
    Some(start(
        |port| {
            let mut c = Command::new("memcached");
            c.args([
                "-l",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-U",
                "0",
                "-t",
                "1",
            ]);
            // memcached refuses to run as root unless told which user to be.
            // SAFETY: geteuid has no preconditions and cannot fail.
            if unsafe { libc::geteuid() } == 0 {
                c.args(["-u", "root"]);
            }
            c
        },
        |port| {
            // `stats` names the process: `STAT pid N`, up to `END`.
            let mut s = connect(port);
            s.write_all(b"stats\r\n").ok()?;
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.ends_with(b"END\r\n") {
                let n = s.read(&mut buf).ok().filter(|n| *n > 0)?;
                got.extend_from_slice(&buf[..n]);
                if got.len() > 1 << 16 || got.starts_with(b"-") || got.starts_with(b"$") {
                    return None;
                }
            }
            let text = String::from_utf8_lossy(&got);
            let pid = text.lines().find_map(|l| l.strip_prefix("STAT pid "))?;
            pid.trim().parse().ok()
        },
    ))
}

fn stat(stats: &str, name: &str) -> u64 {
    let prefix = format!("STAT {name} ");
    stats
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(u64::MAX, |v| v.trim().parse().unwrap())
}

fn read_stats(s: &mut TcpStream) -> String {
    s.write_all(b"stats\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.ends_with(b"END\r\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8(got).unwrap()
}

#[test]
fn memcached_replies_are_one_event_each_of_the_right_kind() {
    let Some(server) = memcached() else { return };
    let specs: Vec<String> = [
        "set key:{seq} \"value with spaces {conn}\"", // 0
        "get key:{seq}",                              // 1
        "get missing:{seq}",                          // 2
        "gets key:{seq} missing key:{seq}",           // 3: the same key twice
        "set counter:{seq} 10",                       // 4
        "incr counter:{seq} 5",                       // 5
        "decr counter:{seq} 100",                     // 6
        "incr missing:{seq} 1",                       // 7
        "delete key:{seq}",                           // 8
        "touch counter:{seq} 60",                     // 9
        "add counter:{seq} x",                        // 10
        "set data:{seq} \"END\\r\\nSTORED\\r\\n\"",   // 11
        "get data:{seq}",                             // 12
    ]
    .map(String::from)
    .to_vec();
    let c = Commands::memcache(&specs).unwrap();
    use McReply::*;
    let plan: &[(usize, McReply)] = &[
        (0, Stored),
        (1, Hits(1)),
        (2, Miss),
        (3, Hits(2)),
        (4, Stored),
        (5, Number),
        (6, Number),
        (7, NotFound),
        (8, Deleted),
        (8, NotFound),
        (1, Miss),
        (9, Touched),
        (10, NotStored),
        (11, Stored),
        (12, Hits(1)),
    ];
    let mut s = connect(server.port);
    let mut d = McDecoder::default();
    let mut got = McReplies::default();
    for (round, chunk) in [(0u64, 4096usize), (1, 5)] {
        // Round 0: one exchange at a time; round 1: pipelined in one write, read 5 bytes at a
        // time (every VALUE header is cut).
        let mut req = Vec::new();
        for &(i, _) in plan {
            c.render_into(i, fill(round), &mut req);
            if round == 0 {
                let want = got.0.len() + 1;
                exchange(
                    &mut s,
                    &req,
                    want,
                    chunk,
                    &mut got,
                    |g| g.0.len(),
                    |b, g| d.feed(b, g).unwrap(),
                );
                req.clear();
            }
        }
        if round == 1 {
            let want = got.0.len() + plan.len();
            exchange(
                &mut s,
                &req,
                want,
                chunk,
                &mut got,
                |g| g.0.len(),
                |b, g| d.feed(b, g).unwrap(),
            );
        }
    }
    let want: Vec<McReply> = plan.iter().chain(plan).map(|p| p.1).collect();
    assert_eq!(got.0, want);
    // An unknown command is ERROR.
    exchange(
        &mut s,
        b"bogus\r\n",
        want.len() + 1,
        4096,
        &mut got,
        |g| g.0.len(),
        |b, g| d.feed(b, g).unwrap(),
    );
    assert_eq!(got.0.last(), Some(&Error));
    assert!(d.is_idle());
    // memcached's own counts, per round: 7 keys looked up (gets with 3 keys), 4 hits and 3
    // misses; 4 sets (sets 0, 4, 11 and the refused add, which memcached counts as a set).
    let stats = read_stats(&mut s);
    assert_eq!(stat(&stats, "cmd_get"), 2 * 7, "{stats}");
    assert_eq!(stat(&stats, "get_hits"), 2 * 4, "{stats}");
    assert_eq!(stat(&stats, "get_misses"), 2 * 3, "{stats}");
    assert_eq!(stat(&stats, "touch_hits"), 2, "{stats}");
    assert_eq!(stat(&stats, "incr_hits"), 2, "{stats}");
    assert_eq!(stat(&stats, "cmd_set"), 2 * 4, "{stats}");
    assert_eq!(stat(&stats, "delete_hits"), 2, "{stats}");
    assert_eq!(stat(&stats, "delete_misses"), 2, "{stats}");
    assert_eq!(stat(&stats, "incr_misses"), 2, "{stats}");
}
