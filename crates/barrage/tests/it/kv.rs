//! redis:// and memcache:// against the real servers (Debian's `redis-server` and
//! `memcached`): every count barrage reports per command reconciles with the server's own
//! statistics (`INFO commandstats`, `stats`), error replies are `reply_error`, misses are
//! counted apart from errors.
//!
//! Each server is a child of the test on a free port of 127.0.0.1, stopped by its PID through
//! its guard. When a server is missing the tests print "skipped: ..." and pass, except under
//! CI (`CI` set), where `.ci/run` installs both.

use crate::common::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

fn on_path(name: &str) -> bool {
    StdCommand::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

struct Server {
    _child: Guard,
    port: u16,
}

impl Server {
    fn start(bin: &str, args: impl Fn(u16) -> Vec<String>) -> Option<Server> {
        if !available(bin, on_path(bin)) {
            return None;
        }
        // A free port can be taken between probing and binding: try a few.
        for _ in 0..3 {
            let port = refused_port();
            let mut child = StdCommand::new(bin)
                .args(args(port))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("spawn {bin}: {e}"));
            if wait_listening(&mut child, port) {
                return Some(Server {
                    _child: Guard(child),
                    port,
                });
            }
            drop(Guard(child));
        }
        panic!("{bin} did not start");
    }

    fn redis() -> Option<Server> {
        Server::start("redis-server", |port| {
            ["--port", &port.to_string(), "--bind", "127.0.0.1"]
                .iter()
                .chain(&["--save", "", "--appendonly", "no"])
                .map(|s| s.to_string())
                .collect()
        })
    }

    fn memcached() -> Option<Server> {
        Server::start("memcached", |port| {
            let mut a: Vec<String> = ["-l", "127.0.0.1", "-p", &port.to_string(), "-U", "0"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            // memcached refuses to run as root without a user to switch to.
            if std::env::var("USER").as_deref() == Ok("root") || is_root() {
                a.extend(["-u".into(), "nobody".into()]);
            }
            a
        })
    }

    /// Send `request` and read until the reply ends with `end`.
    fn ask(&self, request: &[u8], end: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(request).unwrap();
        let mut out = Vec::new();
        let mut buf = [0u8; 65536];
        while !String::from_utf8_lossy(&out).ends_with(end) {
            let n = s.read(&mut buf).expect("read the server's statistics");
            assert!(n > 0, "the server closed before answering");
            out.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// redis `INFO commandstats`: calls of command `name` (lower case).
    fn redis_calls(&self, name: &str) -> u64 {
        let info = self.ask(b"INFO commandstats\r\n", "\r\n\r\n");
        let key = format!("cmdstat_{name}:calls=");
        info.lines()
            .find_map(|l| l.strip_prefix(&key))
            .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
    }

    /// memcached `stats`: the value of `name`.
    fn mc_stat(&self, name: &str) -> u64 {
        let stats = self.ask(b"stats\r\n", "END\r\n");
        let key = format!("STAT {name} ");
        stats
            .lines()
            .find_map(|l| l.strip_prefix(&key))
            .unwrap_or_else(|| panic!("no {name} in stats"))
            .trim()
            .parse()
            .unwrap()
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"))
    })
}

fn command(v: &Value, i: usize, what: &str) -> u64 {
    let list = field(v, "summary.totals.commands");
    list[i][what]
        .as_u64()
        .unwrap_or_else(|| panic!("no commands[{i}].{what} in {list}"))
}

fn conserved(v: &Value) {
    assert_eq!(
        u(v, "summary.exchanges.sent"),
        u(v, "summary.exchanges.completed")
            + u(v, "summary.exchanges.failed")
            + u(v, "summary.exchanges.in_flight_at_end"),
        "{}",
        field(v, "summary.exchanges")
    );
}

#[test]
fn redis_set_get_mix_reconciles_with_commandstats() {
    let Some(r) = Server::redis() else { return };
    let url = format!("redis://127.0.0.1:{}", r.port);
    let v = run_result(
        &[
            &url,
            "-c",
            "4",
            "-t",
            "2",
            "-n",
            "2000",
            "--pipeline",
            "4",
            "--command",
            "SET key:{seq%100} {conn}",
            "--command",
            "3*GET key:{rand%200}",
        ],
        &[],
    );
    assert_eq!(u(&v, "summary.errors.total"), 0);
    conserved(&v);
    // The weighted mix is exact: 1 SET for every 3 GETs.
    assert_eq!(
        (command(&v, 0, "sent"), command(&v, 1, "sent")),
        (500, 1500)
    );
    assert_eq!(command(&v, 0, "completed"), 500);
    assert_eq!(command(&v, 1, "completed"), 1500);
    assert_eq!(r.redis_calls("set"), 500);
    assert_eq!(r.redis_calls("get"), 1500);
    // A GET of a key never set is a miss (a null reply), not an error.
    let misses = command(&v, 1, "misses");
    assert!(misses > 0 && misses < 1500, "misses {misses}");
    assert_eq!(u(&v, "summary.totals.misses"), misses);
    assert_eq!(field(&v, "config.commands").as_array().unwrap().len(), 2);
}

#[test]
fn redis_error_replies_are_reply_errors_and_keep_the_connection() {
    let Some(r) = Server::redis() else { return };
    r.ask(b"SET s 1\r\n", "\r\n");
    let url = format!("redis://127.0.0.1:{}", r.port);
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("report.md");
    let md_arg = md.to_str().unwrap();
    let args = [
        &url,
        "-c",
        "2",
        "-n",
        "50",
        "--command",
        "LPUSH s x",
        "--report",
        md_arg,
        // Every command an error reply: a failed run, but for this flag.
        "--lenient-exit",
    ];
    let v = run_result(&args, &[]);
    // The report has the per-command table too.
    let report = std::fs::read_to_string(&md).unwrap();
    assert!(
        report.contains("| LPUSH s x | 50 | 0 | 0 | 50 |"),
        "{report}"
    );
    assert_eq!(u(&v, "summary.failed_requests.reply_error"), 50);
    assert_eq!(u(&v, "summary.errors.reply_error"), 50);
    assert_eq!(command(&v, 0, "errors"), 50);
    assert_eq!(u(&v, "summary.connections.attempts"), 2, "no reconnect");
    conserved(&v);
}

#[test]
fn redis_resp3_opens_each_connection_with_hello() {
    let Some(r) = Server::redis() else { return };
    let url = format!("redis://127.0.0.1:{}", r.port);
    let v = run_result(
        &[
            &url,
            "-c",
            "3",
            "-t",
            "1",
            "-n",
            "300",
            "--resp3",
            "--command",
            "HSET h f{seq%10} {seq}",
            "--command",
            "HGETALL h",
        ],
        &[],
    );
    assert_eq!(u(&v, "summary.errors.total"), 0);
    assert_eq!(u(&v, "summary.exchanges.completed"), 300);
    // HELLO 3 is the opening of each connection, not an exchange.
    assert_eq!(r.redis_calls("hello"), 3);
    assert_eq!(r.redis_calls("hset") + r.redis_calls("hgetall"), 300);
}

/// A redis without HELLO (renamed away, as on a server older than 6): `--resp3` stops the
/// run at once with the server's refusal named, exit 1, and no command sent.
#[test]
fn redis_refusing_hello_stops_a_resp3_run_with_the_reason() {
    let Some(r) = Server::start("redis-server", |port| {
        ["--port", &port.to_string(), "--bind", "127.0.0.1"]
            .iter()
            .chain(&["--save", "", "--appendonly", "no"])
            .chain(&["--rename-command", "HELLO", ""])
            .map(|s| s.to_string())
            .collect()
    }) else {
        return;
    };
    let url = format!("redis://127.0.0.1:{}", r.port);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = barrage()
        .args([&url, "-c", "4", "-t", "1", "-d", "30s", "--resp3", "-q"])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("refused HELLO 3"), "{err}");
    let v = read_json(&json);
    assert_eq!(s(&v, "status"), "failed");
    assert_eq!(u(&v, "summary.exchanges.sent"), 0);
    assert!(u(&v, "summary.errors.total") >= 3);
    assert_eq!(r.redis_calls("get") + r.redis_calls("ping"), 0);
}

#[test]
fn memcached_mix_reconciles_with_stats() {
    let Some(m) = Server::memcached() else { return };
    let url = format!("memcache://127.0.0.1:{}", m.port);
    let v = run_result(
        &[
            &url,
            "-c",
            "4",
            "-t",
            "2",
            "-n",
            "4000",
            "--pipeline",
            "4",
            "--command",
            "get key:{seq%50}",
            "--command",
            "3*set key:{seq%50} VALUE-{conn}",
            "--command",
            "delete key:{rand%100}",
            "--command",
            "incr n:{conn} 1",
        ],
        &[],
    );
    assert_eq!(u(&v, "summary.errors.total"), 0);
    conserved(&v);
    let (get, set, del, incr) = (0, 1, 2, 3);
    assert_eq!(command(&v, set, "sent"), 2000);
    assert_eq!(m.mc_stat("cmd_get"), command(&v, get, "completed"));
    assert_eq!(m.mc_stat("get_misses"), command(&v, get, "misses"));
    assert_eq!(
        m.mc_stat("get_hits"),
        command(&v, get, "completed") - command(&v, get, "misses")
    );
    assert_eq!(m.mc_stat("cmd_set"), command(&v, set, "completed"));
    assert_eq!(m.mc_stat("delete_misses"), command(&v, del, "misses"));
    assert_eq!(
        m.mc_stat("delete_hits") + m.mc_stat("delete_misses"),
        command(&v, del, "sent")
    );
    // `n:{conn}` was never set: every incr is a miss.
    assert_eq!(m.mc_stat("incr_misses"), command(&v, incr, "sent"));
    assert_eq!(command(&v, incr, "misses"), command(&v, incr, "sent"));
    let misses: u64 = (0..4).map(|i| command(&v, i, "misses")).sum();
    assert_eq!(u(&v, "summary.totals.misses"), misses);
}

#[test]
fn kv_flags_are_checked_before_any_load() {
    for (args, want) in [
        (
            vec!["tcp://127.0.0.1:9", "--command", "GET k"],
            "--command applies to redis:// and memcache:// targets, not tcp://",
        ),
        (
            vec!["memcache://127.0.0.1:9", "--resp3"],
            "--resp3 applies to redis:// targets, not memcache://",
        ),
        (
            vec!["redis://127.0.0.1:9", "-m", "PING"],
            "-m/--message applies to tcp://, ws(s):// and mqtt(s):// targets, not redis://; a redis:// request is --command",
        ),
        (
            vec!["memcache://127.0.0.1:9", "--command", "frobnicate k"],
            "--command: ",
        ),
        (
            vec!["redis://127.0.0.1:9/path"],
            "a redis:// target has no path",
        ),
    ] {
        let out = barrage().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
    }
}

/// A scenario's users speak raw redis inline commands and memcached text commands; their
/// replies are matched and captured from like any other, and the servers' own counts agree.
#[test]
fn scenario_users_talk_to_redis_and_memcached() {
    let dir = tempfile::tempdir().unwrap();
    if let Some(r) = Server::redis() {
        let file = dir.path().join("redis.toml");
        std::fs::write(
            &file,
            format!(
                r#"
target = "redis://127.0.0.1:{}"
[users]
count = 8
arrive = "200/s"
hold = "200ms"
[[steps]]
name = "set"
send = 'SET user:{{user}} token-{{user}}\r\n'
expect = {{ prefix = "+OK" }}
[[steps]]
name = "get"
send = 'GET user:{{user}}\r\n'
expect = {{ regex = 'token-[0-9]+' }}
capture.token = {{ regex = '(token-[0-9]+)' }}
[[steps]]
name = "echo"
send = 'ECHO {{token}}\r\n'
expect = {{ regex = '^\$[0-9]+\r\ntoken-[0-9]+\r\n$' }}
"#,
                r.port
            ),
        )
        .unwrap();
        let v = run_result(&["run", file.to_str().unwrap()], &[]);
        let steps = v["summary"]["steps"].as_array().unwrap();
        for s in steps {
            assert_eq!(
                (s["sent"].as_u64(), s["completed"].as_u64()),
                (Some(8), Some(8)),
                "{s}"
            );
        }
        assert_eq!(u(&v, "summary.errors.total"), 0);
        assert_eq!(r.redis_calls("set"), 8);
        assert_eq!(r.redis_calls("get"), 8);
        assert_eq!(r.redis_calls("echo"), 8, "the captured token went back");
    }
    if let Some(m) = Server::memcached() {
        let file = dir.path().join("mc.toml");
        std::fs::write(
            &file,
            format!(
                r#"
target = "memcache://127.0.0.1:{}"
[users]
count = 6
arrive = "200/s"
hold = "200ms"
[[steps]]
name = "set"
send = 'set u{{user}} 0 0 8\r\nvalue-{{user}}0\r\n'
expect = {{ prefix = "STORED" }}
[[steps]]
name = "get"
send = 'get u{{user}}\r\n'
expect = {{ regex = 'VALUE u[0-9]+ 0 8\r\nvalue-[0-9]+' }}
capture.v = {{ regex = '(value-[0-9]+)' }}
[[steps]]
name = "append"
send = 'append u{{user}} 0 0 1\r\n!\r\n'
expect = {{ prefix = "STORED" }}
[[steps]]
name = "lookup"
send = 'get {{v}}\r\n'
expect = {{ prefix = "END" }}
[[leave]]
name = "delete"
send = 'delete u{{user}}\r\n'
expect = {{ prefix = "DELETED" }}
"#,
                m.port
            ),
        )
        .unwrap();
        let v = run_result(&["run", file.to_str().unwrap()], &[]);
        let steps = v["summary"]["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 5);
        for s in steps {
            assert_eq!(
                (s["sent"].as_u64(), s["completed"].as_u64()),
                (Some(6), Some(6)),
                "{s}"
            );
        }
        assert_eq!(m.mc_stat("cmd_set"), 12, "6 sets and 6 appends");
        assert_eq!(u(&v, "summary.errors.total"), 0);
        assert_eq!(m.mc_stat("get_hits"), 6);
        assert_eq!(m.mc_stat("get_misses"), 6, "a lookup by the captured value");
        assert_eq!(m.mc_stat("delete_hits"), 6);
    }
}

/// Redis pub/sub as a broadcast: every user subscribes to one channel (RESP3, so the same
/// connection can publish), then publishes stamped messages; each message reaches every
/// subscriber, as redis's own PUBLISH count says. Text stamps in an inline command, and binary
/// stamps (which may hold CR and LF bytes) in a RESP bulk string.
#[test]
fn redis_pubsub_deliveries_are_counted_from_stamps() {
    for (publish, form) in [
        ("PUBLISH room {stamp}\\r\\n", "text"),
        (
            "*3\\r\\n$7\\r\\nPUBLISH\\r\\n$4\\r\\nroom\\r\\n$20\\r\\n{stamp}\\r\\n",
            "binary",
        ),
    ] {
        pubsub(publish, form);
    }
}

fn pubsub(publish: &str, form: &str) {
    let Some(r) = Server::redis() else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pubsub.toml");
    std::fs::write(
        &file,
        format!(
            r#"
target = "redis://127.0.0.1:{}"
[users]
count = 6
arrive = "200/s"
hold = "1500ms"
[[steps]]
name = "hello"
send = 'HELLO 3\r\n'
expect = {{ prefix = "%" }}
[[steps]]
name = "subscribe"
send = 'SUBSCRIBE room\r\n'
expect = {{ framing = "none" }}
[[steps]]
pause = "400ms"
[[steps]]
name = "publish"
every = "100ms"
repeat = 5
send = '{publish}'
expect = {{ prefix = ":6" }}
broadcast = {{ expect = "6", stamp = "{form}" }}
"#,
            r.port
        ),
    )
    .unwrap();
    let v = run_result(&["run", file.to_str().unwrap()], &[]);
    let b = &v["summary"]["broadcast"];
    let n = |k: &str| b[k].as_u64().unwrap();
    assert_eq!(n("sent"), 30, "{form}");
    assert_eq!(r.redis_calls("publish"), 30);
    assert_eq!(n("expected"), 180);
    assert_eq!(
        n("delivered"),
        180,
        "every subscriber got every message: {b}"
    );
    assert_eq!((n("own"), n("duplicates"), n("lost")), (30, 0, 0));
    let steps = v["summary"]["steps"].as_array().unwrap();
    assert_eq!(
        steps[2]["completed"], 30,
        "each PUBLISH answered: 6 receivers"
    );
    assert_eq!(u(&v, "summary.errors.total"), 0);
}
