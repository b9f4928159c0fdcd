//! The script hook (issue 29, part 3): `--script FILE` builds requests, frames and judges
//! replies in Lua. Against `serve echo` (byte counts reconciled exactly with what the script
//! wrote), and against hostile servers made here (silent, flooding, lying about lengths):
//! every fault a named class, every run ends by itself and writes its results.

use crate::common::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

/// `examples/length-prefixed.lua`: fixed-size requests (`u16 8` + conn + seq = 10 bytes),
/// framed by their length prefix, each reply checked against the oldest request the
/// connection has in flight (its own state).
fn example() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/length-prefixed.lua"
    )
    .to_string()
}

/// `barrage ARGS -q --json DIR/NAME`, bounded by the helper's timeout: its exit code, its
/// result and its stderr (a run that did not end by itself fails the test).
fn run_in(dir: &Path, name: &str, args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let json = dir.join(name);
    let out = barrage()
        .args(args)
        .args(["-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.code().is_some(), "{args:?} did not end: {err}");
    (out.status.code(), read_json(&json), err)
}

fn script_errors(v: &serde_json::Value) -> u64 {
    field(v, "summary.errors")["script.error"]
        .as_u64()
        .expect("errors.script.error")
}

fn script(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn a_script_speaks_a_length_prefixed_protocol_reconciled_with_the_echo_server() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let file = example();
    let v = run_json(
        &[
            server.url(),
            "--script",
            &file,
            "-c",
            "4",
            "-n",
            "2000",
            "--pipeline",
            "4",
        ],
        &dir.path().join("out.json"),
    );
    conserved(&v);
    assert_eq!(u(&v, "summary.exchanges.sent"), 2000);
    // Each connection's request 7 is judged `reply_error`; every other reply matched its
    // request (a reply out of order would be a `mismatch`).
    assert_eq!(
        u(&v, "summary.errors.reply_error"),
        4,
        "{}",
        field(&v, "summary.errors")
    );
    assert_eq!(u(&v, "summary.errors.mismatch"), 0);
    assert_eq!(u(&v, "summary.exchanges.completed"), 2000 - 4);
    assert_eq!(u(&v, "summary.io.bytes_written"), 2000 * 10);
    let stats = server.stop();
    assert_eq!(u(&stats, "bytes_read"), 2000 * 10);
    assert_eq!(u(&stats, "connections_accepted"), 4);
}

/// `init` sends a login whose reply is awaited (and judged) before the load: its bytes are
/// the server's too, and none of its replies is counted as an exchange. A login the script
/// judges wrong fails every connection with the class it names; the run still ends and
/// writes its results.
#[test]
fn init_logs_in_before_the_load_and_a_refused_login_fails_the_connection() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let login = r#"
function init(conn) return "LOGIN " .. conn.id .. "\n" end
function request(conn, seq) return string.format("msg %03d\n", seq % 1000) end
function response(conn, reply)
  if reply:sub(1, 5) == "LOGIN" and reply ~= "LOGIN " .. conn.id then return "reply_error" end
end
"#;
    let file = script(dir.path(), "login.lua", login);
    let v = run_json(
        &[
            server.url(),
            "--script",
            &file,
            "--expect",
            "line",
            "-c",
            "3",
            "-n",
            "300",
        ],
        &dir.path().join("out.json"),
    );
    conserved(&v);
    assert_eq!(u(&v, "summary.exchanges.completed"), 300);
    let logins: u64 = (0..3).map(|c| format!("LOGIN {c}\n").len() as u64).sum();
    let msgs = 300 * 8;
    let stats = server.stop();
    assert_eq!(u(&stats, "bytes_read"), logins + msgs);

    // A login judged wrong: each connection fails as `reply_error` (the class response()
    // named), no request is sent, and the run stops as unreachable and says why.
    let server = EchoServer::start(&[]);
    let refuse = login.replace("reply ~= \"LOGIN \" .. conn.id", "true");
    let file = script(dir.path(), "refuse.lua", &refuse);
    let args = [
        server.url(),
        "--script",
        &file,
        "--expect",
        "line",
        "-c",
        "2",
        "-d",
        "5s",
    ];
    let (code, v, err) = run_in(dir.path(), "refused.json", &args);
    assert_ne!(code, Some(0), "{err}");
    assert!(
        u(&v, "summary.errors.reply_error") >= 3,
        "{}",
        field(&v, "summary.errors")
    );
    assert_eq!(u(&v, "summary.exchanges.sent"), 0);
    assert!(
        s(&v, "message").contains("judged reply_error by response()"),
        "{}",
        s(&v, "message")
    );
}

/// A call that loops forever is stopped by the budget and fails its connection as
/// `script.error` (which reconnects and goes on); the first error is written once, whole,
/// naming the file, line and function.
#[test]
fn a_script_that_loops_forever_is_stopped_counted_and_the_run_goes_on() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let file = script(
        dir.path(),
        "loop.lua",
        "function request(conn, seq)\n  if seq == 50 then while true do end end\n  return 'x' .. seq .. '\\n'\nend\n",
    );
    let args = [server.url(), "--script", &file, "--script-budget", "20000"];
    let more = ["--expect", "line", "-c", "2", "-n", "400"];
    let (code, v, err) = run_in(dir.path(), "out.json", &[&args[..], &more].concat());
    assert_eq!(code, Some(0), "{err}");
    let want = format!(
        "{file}:2: request(): ran out of its instruction budget (20000 instructions; --script-budget)"
    );
    assert!(err.contains(&want), "{err}");
    assert_eq!(err.matches("script error").count(), 1, "{err}");
    conserved(&v);
    // Said again with the run's ending (a dashboard may have covered the line).
    assert!(
        s(&v, "message").contains(&format!("the first script error: {want}")),
        "{}",
        s(&v, "message")
    );
    // Request 50 of each connection: its connection failed with it (pipeline 1).
    assert_eq!(script_errors(&v), 2, "{}", field(&v, "summary.errors"));
    assert_eq!(u(&v, "summary.connections.attempts"), 4);
    assert_eq!(
        u(&v, "summary.exchanges.completed") + 2,
        u(&v, "summary.exchanges.sent")
    );
}

/// A loopback server that runs `serve` on each connection it accepts, for `secs` at most.
fn hostile(secs: u64, serve: fn(std::net::TcpStream)) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            match l.accept() {
                Ok((c, _)) => {
                    c.set_nonblocking(false).unwrap();
                    std::thread::spawn(move || serve(c));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    format!("tcp://127.0.0.1:{port}")
}

/// Reads what the client sends, and answers with `answer` for each read, until the client
/// goes (or 10 s).
fn answer_each_read(mut c: std::net::TcpStream, answer: &[u8]) {
    let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
    let mut buf = [0u8; 4096];
    while let Ok(n) = c.read(&mut buf) {
        if n == 0 || c.write_all(answer).is_err() {
            return;
        }
    }
}

const FRAMED: &str = r#"
function request(conn, seq) return string.pack(">s4", "ping " .. seq) end
function frame(buf)
  if #buf < 4 then return nil end
  return 4 + string.unpack(">I4", buf)
end
"#;

#[test]
fn hostile_servers_are_classified_and_every_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    let file = script(dir.path(), "framed.lua", FRAMED);
    let run = |url: &str, extra: &[&str], name: &str| {
        let args = [
            url,
            "--script",
            &file,
            "-c",
            "2",
            "-d",
            "1s",
            "--timeout",
            "300ms",
        ];
        let (_, v, err) = run_in(dir.path(), name, &[&args[..], extra].concat());
        (v, err)
    };

    // Silent: accepts, reads, never answers: every request times out.
    let url = hostile(5, |c| answer_each_read(c, b""));
    let (v, _) = run(&url, &[], "silent.json");
    assert!(
        u(&v, "summary.errors.timeout") >= 2,
        "{}",
        field(&v, "summary.errors")
    );
    assert_eq!(u(&v, "summary.exchanges.completed"), 0);

    // A length that lies: 4 GiB claimed, over --max-frame: `protocol`, nothing allocated.
    let url = hostile(5, |c| answer_each_read(c, b"\xff\xff\xff\xf0ping"));
    let (v, _) = run(&url, &["--max-frame", "64KiB"], "liar.json");
    assert!(
        u(&v, "summary.errors.protocol") >= 2,
        "{}",
        field(&v, "summary.errors")
    );
    assert_eq!(u(&v, "summary.exchanges.completed"), 0);

    // A flood of bytes frame() never finds a reply in (it says `nil` while under 4 bytes,
    // then a length it never reaches): bounded by --max-frame, `protocol`.
    let nil_forever = script(
        dir.path(),
        "never.lua",
        "function request(c, s) return 'x' end\nfunction frame(buf) return nil end\n",
    );
    let url = hostile(5, |mut c| {
        let junk = [b'z'; 16 << 10];
        let _ = c.set_write_timeout(Some(Duration::from_secs(5)));
        while c.write_all(&junk).is_ok() {}
    });
    let args = [
        &url,
        "--script",
        &nil_forever,
        "-c",
        "2",
        "-d",
        "1s",
        "--max-frame",
        "256KiB",
    ];
    let (_, v, _) = run_in(dir.path(), "flood.json", &args);
    assert!(
        u(&v, "summary.errors.protocol") >= 2,
        "{}",
        field(&v, "summary.errors")
    );

    // Malformed replies the script's own decoder chokes on: `script.error`, named once.
    let strict = script(
        dir.path(),
        "strict.lua",
        &format!(
            "{FRAMED}\nfunction response(conn, reply)\n  assert(reply:sub(5, 9) == 'pong ', 'not a pong')\nend\n"
        ),
    );
    let url = hostile(5, |c| answer_each_read(c, b"\x00\x00\x00\x04nope"));
    let args = [&url, "--script", &strict, "-c", "2", "-n", "50"];
    let (_, v, err) = run_in(dir.path(), "strict.json", &args);
    assert!(
        err.contains("strict.lua:9: response(): not a pong"),
        "{err}"
    );
    assert_eq!(script_errors(&v), 50, "{}", field(&v, "summary.errors"));
    conserved(&v);
}

#[test]
fn script_mistakes_are_one_line_before_any_load() {
    let dir = tempfile::tempdir().unwrap();
    let ok = script(dir.path(), "ok.lua", FRAMED);
    let syntax = script(
        dir.path(),
        "syntax.lua",
        "function request(conn)\n  return 'x'\n",
    );
    let none = script(dir.path(), "none.lua", "local x = 1\n");
    let resp = script(dir.path(), "resp.lua", "function response(conn, r) end\n");
    let url = format!("tcp://127.0.0.1:{}", refused_port());
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["--script", "missing.lua"],
            "error: --script missing.lua: no such file".into(),
        ),
        (
            vec!["--script", &syntax],
            format!("error: --script {syntax}:3: the file's top level: 'end' expected"),
        ),
        (
            vec!["--script", &none],
            format!("error: --script {none}: defines none of the functions"),
        ),
        (
            vec!["--script", &ok, "-m", "hi"],
            "error: -m/--message is not used: --script".into(),
        ),
        (
            vec!["--script", &ok, "--expect", "line"],
            "error: --expect is not used: --script".into(),
        ),
        (
            vec!["--script-budget", "1000"],
            "error: --script-budget bounds the calls of a script".into(),
        ),
        (
            vec!["--script", &ok, "--verify"],
            "error: --verify compares echoes".into(),
        ),
        (
            vec!["--script", &resp, "--expect", "none"],
            "error: --expect none awaits no reply".into(),
        ),
        (
            vec!["--script", &ok, "--script-budget", "0"],
            "error: invalid value '0' for '--script-budget <N>': must be at least 1".into(),
        ),
        (
            vec!["--script", &ok, "--script-budget", "100000001"],
            "error: --script-budget 100000001 is over the cap of 100000000 instructions per call"
                .into(),
        ),
        (
            vec!["--script-unsafe"],
            "error: --script-unsafe gives a script the full libraries: give --script FILE".into(),
        ),
    ];
    for (args, want) in cases {
        let out = barrage().arg(&url).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with(&want), "{args:?}:\n{err}\nwant: {want}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
    // A scenario's step naming a function the script does not define.
    let toml = dir.path().join("s.toml");
    std::fs::write(
        &toml,
        format!(
            "target = \"{url}\"\nscript = \"ok.lua\"\n[users]\ncount = 1\narrive = \"1/s\"\n\
             [[steps]]\nname = \"a\"\ncall = \"nope\"\n"
        ),
    )
    .unwrap();
    let out = barrage().args(["run"]).arg(&toml).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let want = format!(
        "error: {}:8: steps[0].call: nope is not a function of the script",
        toml.display()
    );
    assert!(err.starts_with(&want), "{err}\nwant: {want}");
    // `barrage validate` compiles the script and finds the same mistake, sending nothing.
    let out = barrage().args(["validate"]).arg(&toml).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with(&want), "{err}\nwant: {want}");
    let out = barrage()
        .args(["http://127.0.0.1:1/", "--script", &ok])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: --script applies to tcp:// targets, not http://"),
        "{err}"
    );
}

/// `examples/game-rooms.toml`: users log in, join rooms and chat over `serve frames`' binary
/// protocol, every message made and every reply framed and checked by `examples/game.lua`.
/// Reconciled exactly with the server: logins, leaves, messages, and every delivery it wrote
/// (with duplicates injected: each one seen as a duplicate); every byte each way.
#[test]
fn the_game_example_speaks_serve_frames_through_its_script_and_reconciles() {
    let server = EchoServer::serve("frames", &["--dup", "0.05", "--seed", "3"]);
    let dir = tempfile::tempdir().unwrap();
    let example = example_without_thresholds("game-rooms.toml", dir.path());
    let json = dir.path().join("game.json");
    let out = barrage()
        .timeout(std::time::Duration::from_secs(60))
        .arg("run")
        .arg(&example)
        .args(["--target", server.url(), "--users", "48", "--hold", "5s"])
        .args(["-q", "--no-tui", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let v = read_json(&json);
    let stats = server.stop();
    let chat = &stats["chat"];
    let n = |x: &serde_json::Value, k: &str| x[k].as_u64().unwrap();
    let b = &v["summary"]["broadcast"];
    conserved(&v);
    assert_eq!(
        u(&v, "summary.errors.total"),
        0,
        "{}",
        field(&v, "summary.errors")
    );
    assert_eq!(u(&v, "summary.exchanges.unexpected_replies"), 0);
    assert_eq!(n(chat, "logins"), 48);
    assert_eq!(n(chat, "leaves"), 48);
    assert_eq!(n(chat, "malformed"), 0);
    for name in ["login", "join", "leave"] {
        assert_eq!(step(&v, name)["completed"], 48, "{name}");
    }
    assert_eq!(n(b, "sent"), n(chat, "messages_in"));
    assert!(n(b, "sent") > 0);
    // Users leave together at the end, after the drain: every delivery written was read.
    assert_eq!(
        n(b, "delivered") + n(b, "duplicates"),
        n(chat, "deliveries_out")
    );
    assert_eq!(n(b, "duplicates"), n(chat, "duplicated"));
    assert!(n(chat, "duplicated") > 0, "the knob injected none: {chat}");
    assert_eq!(
        n(b, "delivered"),
        n(b, "expected"),
        "every member got every message"
    );
    assert_eq!(u(&v, "summary.io.bytes_written"), u(&stats, "bytes_read"));
    assert_eq!(u(&v, "summary.io.bytes_read"), u(&stats, "bytes_written"));
}

/// `serve frames` answers a ping, closes a connection that then breaks the protocol (a bad
/// header byte, a frame over 64 KiB, an object cut short), counts it, and answers a message
/// it does not know with an error.
#[test]
fn serve_frames_closes_malformed_connections_and_counts_them() {
    use std::io::{Read, Write};
    let server = EchoServer::serve("frames", &[]);
    let addr = format!("127.0.0.1:{}", server.port);
    // A ping (answered), then what breaks the rules: the answer, then the connection closes.
    let ping =
        b"\x80\x00\x14\x12\x00\x03\x00\x01c\x02\x00\x00\x01a\x03\x00\x1d\x00\x01p\x12\x00\x00";
    for bad in [
        &b"\x81\x00\x00"[..],
        b"\x88\x00\x01\x00\x01",
        b"\x80\x00\x04\x12\x00\x01\x00",
    ] {
        let mut c = std::net::TcpStream::connect(&addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(ping).unwrap();
        let mut pong = [0u8; 23];
        c.read_exact(&mut pong).unwrap();
        assert_eq!(&pong[15..17], &29i16.to_be_bytes());
        c.write_all(bad).unwrap();
        let mut rest = Vec::new();
        c.read_to_end(&mut rest).expect("closed by the server");
        assert!(rest.is_empty(), "{bad:?}: {rest:?}");
    }
    // An unknown action: an error answer (`ec`), and the connection stays.
    let mut c = std::net::TcpStream::connect(&addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let msg =
        b"\x80\x00\x14\x12\x00\x03\x00\x01c\x02\x00\x00\x01a\x03\x00\x63\x00\x01p\x12\x00\x00";
    c.write_all(msg).unwrap();
    let mut head = [0u8; 3];
    c.read_exact(&mut head).unwrap();
    let mut body = vec![0u8; u16::from_be_bytes([head[1], head[2]]) as usize];
    c.read_exact(&mut body).unwrap();
    assert_eq!(&body[12..14], &99i16.to_be_bytes(), "the action answered");
    assert_eq!(&body[22..24], b"ec");
    drop(c);
    let stats = server.stop();
    assert_eq!(stats["chat"]["malformed"], 3);
}

/// An `init` that raises fails each connection as `script.error` (counted once per attempt,
/// the worker going on connecting), and a run that never gets through says why; a `request`
/// that returns nothing is an error too, not a request that never ends.
#[test]
fn an_init_that_raises_or_an_empty_request_is_a_script_error() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let file = script(
        dir.path(),
        "init.lua",
        "function init(conn) error('no login for ' .. conn.id) end\nfunction request() return 'x' end\n",
    );
    let args = [server.url(), "--script", &file, "-c", "2", "-d", "3s"];
    let (_, v, err) = run_in(dir.path(), "init.json", &args);
    assert!(err.contains("init.lua:1: init(): no login for "), "{err}");
    assert!(script_errors(&v) >= 3, "{}", field(&v, "summary.errors"));
    assert_eq!(u(&v, "summary.connections.succeeded"), script_errors(&v));
    assert_eq!(u(&v, "summary.exchanges.sent"), 0);
    assert!(
        s(&v, "message").contains("no login for"),
        "{}",
        s(&v, "message")
    );

    let file = script(
        dir.path(),
        "empty.lua",
        "function request(conn, seq) return '' end\n",
    );
    let args = [server.url(), "--script", &file, "-c", "1", "-d", "1s"];
    let (_, v, _) = run_in(dir.path(), "empty.json", &args);
    assert!(script_errors(&v) >= 1, "{}", field(&v, "summary.errors"));
    assert_eq!(u(&v, "summary.exchanges.completed"), 0);
    assert_eq!(u(&v, "summary.errors.timeout"), 0);
}

/// Issue 42, item 4: a script can neither end barrage (`os.exit`) nor reach outside the run
/// (`io`, `os.execute`, `require` ...) unless `--script-unsafe` gives it the full libraries,
/// and even then `os.exit` is refused. In a function, each is a `script.error` named with the
/// file and line, the run going on to write its result; at the top level, the file is refused
/// before any load in one line.
#[test]
fn a_script_cannot_end_or_escape_the_run() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "still here").unwrap();
    let text = format!(
        "function request(conn, seq)\n\
           if seq == 3 then os.exit(0) end\n\
           if seq == 4 then os.remove({victim:?}) end\n\
           if seq == 5 then io.open({victim:?}, 'w') end\n\
           if seq == 6 then os.execute('rm -f ' .. {victim:?}) end\n\
           return 'msg ' .. seq .. '\\n'\n\
         end\n",
        victim = victim.display().to_string()
    );
    let file = script(dir.path(), "escape.lua", &text);
    for (name, unsafe_libs) in [("safe.json", false), ("unsafe.json", true)] {
        let mut args = vec![server.url(), "--script", &file, "--expect", "line"];
        args.extend(["-c", "1", "-n", "20"]);
        if unsafe_libs {
            // The full libraries: os.exit is still refused (the rest runs, in the test's
            // directory).
            args.push("--script-unsafe");
        }
        let (code, v, err) = run_in(dir.path(), name, &args);
        assert!(code.is_some(), "{err}");
        assert!(
            err.contains(&format!(
                "{file}:2: request(): os.exit would end barrage without its results"
            )),
            "{err}"
        );
        conserved(&v);
        if !unsafe_libs {
            // Requests 3, 4, 5 and 6 each failed their connection; the others went through.
            assert_eq!(script_errors(&v), 4, "{}", field(&v, "summary.errors"));
            assert_eq!(u(&v, "summary.exchanges.completed"), 20);
            assert_eq!(std::fs::read_to_string(&victim).unwrap(), "still here");
        }
        let spec = &v["spec"]["script"];
        assert_eq!(
            spec["unsafe_libs"].as_bool().unwrap_or(false),
            unsafe_libs,
            "{spec}"
        );
    }
    // (The run with the full libraries removed it: os.remove and os.execute ran.)
    assert!(!victim.exists());
    std::fs::write(&victim, "still here").unwrap();
    // Used at the top level: refused before any load, in one line naming the file and line.
    let url = format!("tcp://127.0.0.1:{}", refused_port());
    for (call, what) in [
        (
            "os.exit(0)",
            "os.exit would end barrage without its results",
        ),
        (
            "io.open('/etc/hostname')",
            "io.open is not available to scripts",
        ),
        ("require('socket')", "require is not available to scripts"),
    ] {
        let f = script(
            dir.path(),
            "top.lua",
            &format!("local x = 1\n{call}\nfunction request() return 'x' end\n"),
        );
        let out = barrage().args([&url, "--script", &f]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{call}: {err}");
        let want = format!("error: --script {f}:2: the file's top level: {what}");
        assert!(err.starts_with(&want), "{err}\nwant: {want}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    // `--script-unsafe` gives io: a top level that reads a file loads.
    let f = script(
        dir.path(),
        "reads.lua",
        &format!(
            "local f = assert(io.open({:?}))\nlocal body = f:read('a')\nf:close()\n\
             function request(conn, seq) return body .. '\\n' end\n",
            victim.display().to_string()
        ),
    );
    let args = [
        server.url(),
        "--script",
        &f,
        "--script-unsafe",
        "--expect",
        "line",
    ];
    let (code, v, err) = run_in(
        dir.path(),
        "reads.json",
        &[&args[..], &["-n", "5"]].concat(),
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(u(&v, "summary.exchanges.completed"), 5);
    assert_eq!(
        u(&v, "summary.io.bytes_written"),
        5 * "still here\n".len() as u64
    );
}

/// A loop whose every instruction is slow (a 4 KiB string made each turn): its budget, the
/// cap, would take it seconds, so what ends the call below is the run's end, not its budget.
const SLOW_LOOP: &str = "while true do local s = string.rep('x', 4096) end";

/// Issue 42, item 4: a call that loops with a budget as large as allowed does not hold its
/// worker past the run's end (`-d`): it is stopped as `script.error` (said with the file,
/// line and why), and the run ends and writes its result.
#[test]
fn a_looping_script_is_stopped_when_the_run_ends() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let file = script(
        dir.path(),
        "forever.lua",
        &format!("function request(conn, seq)\n  {SLOW_LOOP}\nend\n"),
    );
    let args = [
        server.url(),
        "--script",
        &file,
        "--script-budget",
        "100000000",
    ];
    let more = ["--expect", "line", "-c", "2", "-d", "1s"];
    let (code, v, err) = run_in(dir.path(), "out.json", &[&args[..], &more].concat());
    assert!(code.is_some(), "{err}");
    let want = format!(
        "{file}:2: request(): stopped: the run's duration (-d) is over and this call was still \
         running"
    );
    assert!(err.contains(&want), "{err}");
    // Each connection's one call: stopped, and counted.
    assert_eq!(script_errors(&v), 2, "{}", field(&v, "summary.errors"));
    assert_eq!(u(&v, "summary.exchanges.completed"), 0);
    conserved(&v);
}

/// The same loop and no `-d`: SIGTERM (as the first SIGINT: the run's stop flag) stops the
/// call, and the run ends as interrupted with its result written. The script says when it
/// has started looping (a file it writes, with `--script-unsafe`'s io), so the signal comes
/// while the call runs.
#[cfg(unix)]
#[test]
fn a_stop_signal_ends_a_run_whose_script_loops() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("looping");
    let json = dir.path().join("r.json");
    let file = script(
        dir.path(),
        "forever.lua",
        &format!(
            "function request(conn, seq)\n  \
               local f = io.open({:?}, 'w'); f:write('x'); f:close()\n  {SLOW_LOOP}\nend\n",
            mark.display().to_string()
        ),
    );
    let mut child = signals_at_default(std::process::Command::new(bin()))
        .args([server.url(), "--script", &file, "--script-unsafe"])
        .args([
            "--script-budget",
            "100000000",
            "--expect",
            "line",
            "-c",
            "1",
        ])
        .args(["-q", "--json"])
        .arg(&json)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !mark.exists() {
        assert!(start.elapsed() < CMD_TIMEOUT, "the script never ran");
        std::thread::sleep(Duration::from_millis(10));
    }
    send_signal(child.id(), "TERM");
    let status = wait_at_most(&mut child, CMD_TIMEOUT);
    if status.is_none() {
        let _ = child.kill();
    }
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.is_some(), "still running after SIGTERM: {err}");
    assert!(
        err.contains(&format!(
            "{file}:3: request(): stopped: the run is stopping and this call was still running"
        )),
        "{err}"
    );
    let v = read_json(&json);
    assert_eq!(script_errors(&v), 1, "{}", field(&v, "summary.errors"));
    conserved(&v);
}
