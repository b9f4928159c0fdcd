//! Issue 42 item 8, "Inputs": each mistake a test named after it. Bad input gets one line
//! naming the flag or file (line and key for files) and how to fix it, and exit code 2;
//! never a panic, a hang or the library's own advice. Only 127.0.0.1; every run bounded.

use crate::common::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

/// barrage `args` (with `env`): its exit code and stderr, which must be one line.
fn one_line(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = barrage();
    cmd.args(args).timeout(Duration::from_secs(60));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run barrage");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.to_lowercase().contains("panicked"), "{args:?}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line on stderr:\n{err}");
    (out.status.code(), lines[0].to_string())
}

/// A refusal: exit code 2, one line holding every one of `says`.
fn refused(args: &[&str], says: &[&str]) -> String {
    refused_env(args, &[], says)
}

fn refused_env(args: &[&str], env: &[(&str, &str)], says: &[&str]) -> String {
    let (code, line) = one_line(args, env);
    assert_eq!(code, Some(2), "{args:?}: {line}");
    for w in says {
        assert!(line.contains(w), "{args:?}: {w:?} missing from: {line}");
    }
    line
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// (a) A scenario's `[run] recovery` with `processes = 2` and `monitor = ["auto"]` failed
/// every run: each child took the recovery window without the monitor (the parent's) and
/// refused it, and the parent then reported a misleading merge error.
#[test]
fn scenario_recovery_with_processes_and_monitor_auto_runs_as_the_same_flags_do() {
    let server = EchoServer::serve("http", &[]);
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "target = \"http://127.0.0.1:{}\"\n[users]\ncount = 4\narrive = \"20/s\"\n\
         hold = \"500ms\"\n[[steps]]\npath = \"/\"\n",
        server.port
    );
    let bare = write(dir.path(), "bare.toml", &body);
    let file = write(
        dir.path(),
        "run.toml",
        &format!("{body}[run]\nrecovery = \"1s\"\nprocesses = 2\nmonitor = [\"auto\"]\n"),
    );
    let by_file = run_json(&["run", &file, "--no-tui"], &dir.path().join("file.json"));
    let by_flags = run_json(
        &[
            "run",
            &bare,
            "--no-tui",
            "--recovery",
            "1s",
            "--processes",
            "2",
            "--monitor",
            "auto",
        ],
        &dir.path().join("flags.json"),
    );
    for v in [&by_file, &by_flags] {
        assert_eq!(s(v, "status"), "completed", "{}", v["message"]);
        assert_eq!(u(v, "config.processes"), 2);
        assert_eq!(u(v, "summary.exchanges.completed"), 4);
        conserved(v);
        assert_eq!(v["monitor"]["processes"][0]["pid"], server.pid());
    }
}

/// (b) `validate` approved an rpc step with no .proto and no reflection, which `run` refused:
/// both now make the one check, with the same line.
#[test]
fn validate_and_run_refuse_an_rpc_step_without_proto_with_the_same_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "rpc.toml",
        &format!(
            "target = \"grpc://127.0.0.1:{}\"\n[users]\ncount = 1\narrive = \"1/s\"\n\
             hold = \"1s\"\n[[steps]]\nrpc = \"helloworld.Greeter/SayHello\"\n\
             data = {{ name = \"x\" }}\n",
            refused_port()
        ),
    );
    let says = ["rpc.toml:7: steps[0].rpc:", "give protocol.proto"];
    let v = refused(&["validate", &file], &says);
    let r = refused(&["run", &file], &says);
    assert_eq!(v, r);
}

/// (b) `validate` approved a topic that a `{secret:NAME}` fills with a wildcard; `run`
/// refused it: the same check and line for both (the secret never shown).
#[test]
fn validate_and_run_refuse_a_secret_filled_wildcard_topic_with_the_same_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "wild.toml",
        &format!(
            "target = \"mqtt://127.0.0.1:{}\"\n[users]\ncount = 1\narrive = \"1/s\"\n\
             hold = \"1s\"\n[[steps]]\ntopic = \"chat/{{secret:BARRAGE_TEST_ROOM}}\"\n\
             send = \"hi\"\n",
            refused_port()
        ),
    );
    let env = [("BARRAGE_TEST_ROOM", "S3cret/#")];
    let says = ["wild.toml:7: steps[0].topic:", "wildcard", "subscribe"];
    let v = refused_env(&["validate", &file], &env, &says);
    let r = refused_env(&["run", &file], &env, &says);
    assert_eq!(v, r);
    assert!(!v.contains("S3cret"), "{v}");
}

/// A loopback listener that counts the connections it is offered, to show that nothing
/// connected.
fn listener() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

fn nothing_connected(l: &TcpListener) {
    match l.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("a connection was made: {other:?}"),
    }
}

/// (c) A topic over 65,535 bytes was cut to 65,535 and sent: refused in one line before the
/// load, from the flags and from a scenario (validate and run alike); a captured value that
/// makes one fails that user's message as `other` and nothing is sent.
#[test]
fn an_mqtt_topic_over_65535_bytes_is_refused_in_one_line_before_the_load() {
    let (l, port) = listener();
    let url = format!("mqtt://127.0.0.1:{port}");
    let long = "t".repeat(70_000);
    let line = refused(
        &[&url, "--publish", &long, "-n", "1"],
        &["--publish", "70000 bytes", "65,535 bytes at most"],
    );
    assert!(line.len() < 300, "the topic is not quoted: {line}");
    refused(
        &[&url, "--subscribe", &format!("a/{long}/#")],
        &["--subscribe", "70004 bytes", "65,535"],
    );
    // Placeholders count at their widest.
    refused(
        &[&url, "--publish", &format!("{}{{seq}}", &long[..65_530])],
        &["--publish", "can be up to 65550 bytes"],
    );
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "long.toml",
        &format!(
            "target = \"{url}\"\n[users]\ncount = 1\narrive = \"1/s\"\nhold = \"1s\"\n\
             [[steps]]\nsubscribe = \"x\"\n[[steps]]\ntopic = \"{long}\"\nsend = \"hi\"\n"
        ),
    );
    let says = ["long.toml:9: steps[1].topic:", "70000 bytes", "65,535"];
    let v = refused(&["validate", &file], &says);
    assert_eq!(v, refused(&["run", &file], &says));
    nothing_connected(&l);
}

/// (c) The per-message half: a data cell makes one user's topic 70,000 bytes. Each such
/// message fails (class `other`, the reason said; the user reconnects and fails again) and
/// is never written; the other user publishes its one message.
#[test]
fn an_mqtt_topic_a_captured_value_makes_too_long_fails_its_message_unsent() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    // A broker: CONNACK each CONNECT, keep what follows, until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let done = stop.clone();
    let broker = std::thread::spawn(move || {
        let mut conns = Vec::new();
        while !done.load(Ordering::Relaxed) {
            match l.accept() {
                Ok((c, _)) => conns.push(std::thread::spawn(move || {
                    let mut c = c;
                    c.set_nonblocking(false).unwrap();
                    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                    let mut head = [0u8; 2];
                    c.read_exact(&mut head).unwrap();
                    assert_eq!(head[0], 0x10, "CONNECT");
                    let mut connect = vec![0u8; head[1] as usize];
                    c.read_exact(&mut connect).unwrap();
                    c.write_all(&[0x20, 2, 0, 0]).unwrap();
                    let mut rest = Vec::new();
                    let _ = c.read_to_end(&mut rest);
                    rest
                })),
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        conns
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect::<Vec<_>>()
    });
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "topics.csv",
        &format!("topic\n{}\nshort\n", "t".repeat(70_000)),
    );
    let file = write(
        dir.path(),
        "cells.toml",
        &format!(
            "target = \"mqtt://127.0.0.1:{port}\"\n[users]\ncount = 2\narrive = \"20/s\"\n\
             hold = \"300ms\"\ndata = \"topics.csv\"\n[[steps]]\ntopic = \"{{row.topic}}\"\n\
             send = \"hi\"\n"
        ),
    );
    let v = run_json(&["run", &file], &dir.path().join("r.json"));
    stop.store(true, Ordering::Relaxed);
    let sent = broker.join().unwrap();
    let failed = u(&v, "summary.exchanges.failed");
    assert!(failed >= 1, "{}", v["summary"]);
    assert_eq!(u(&v, "summary.errors.other"), failed);
    assert_eq!(u(&v, "summary.exchanges.completed"), 1);
    assert_eq!(u(&v, "summary.exchanges.sent"), failed + 1);
    let reasons = v["summary"]["totals"]["reasons"].to_string();
    assert!(
        reasons.contains("the topic came to 70000 bytes"),
        "{reasons}"
    );
    // One connection published "hi" to "short"; no other sent any PUBLISH.
    let publishes = sent
        .iter()
        .filter(|b| b.first().is_some_and(|&x| x >> 4 == 3))
        .count();
    let sizes: Vec<usize> = sent.iter().map(Vec::len).collect();
    assert_eq!(publishes, 1, "{sizes:?}");
    assert!(sizes.iter().all(|&n| n < 100), "{sizes:?}");
}

/// (c) A client id over 65,535 bytes was refused only once connected (every connection
/// failed as `protocol`): now before any connection. 3.1.1's 23 characters are a server's
/// minimum to accept, not a limit: a longer id is sent.
#[test]
fn an_oversized_mqtt_client_id_is_refused_before_connecting() {
    let (l, port) = listener();
    let url = format!("mqtt://127.0.0.1:{port}");
    let id = "c".repeat(65_536);
    refused(
        &[&url, "--publish", "t", "--client-id", &id, "-n", "1"],
        &["--client-id", "65536 bytes", "65,535 bytes at most"],
    );
    refused(
        &[
            &url,
            "--publish",
            "t",
            "--client-id",
            &format!("{}-{{conn}}", &id[..65_530]),
            "-n",
            "1",
        ],
        &["--client-id", "can be up to", "65,535"],
    );
    refused(
        &[&url, "--publish", "t", "--username", &id, "-n", "1"],
        &["--username", "65536 bytes"],
    );
    nothing_connected(&l);
    // A 100-character id goes to the broker (here: a port that refuses).
    let refuses = format!("mqtt://127.0.0.1:{}", refused_port());
    let out = barrage()
        .args([&refuses, "--publish", "t", "-c", "1", "-n", "1", "-q"])
        .args(["--client-id", &"c".repeat(100)])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("--client-id"), "{err}");
    assert!(err.contains("cannot connect"), "{err}");
}

/// (d) A negative value is its flag's mistake, said with the flag's range, not clap's
/// "unexpected argument '-1'".
#[test]
fn negative_values_of_the_newer_flags_name_the_flag_and_the_range() {
    let http = format!("http://127.0.0.1:{}/", refused_port());
    let mqtt = format!("mqtt://127.0.0.1:{}", refused_port());
    let tcp = format!("tcp://127.0.0.1:{}", refused_port());
    let serve = ["serve", "echo", "--listen", "127.0.0.1:0"];
    let cases: Vec<(Vec<&str>, &[&str])> = vec![
        (
            vec![&http, "--streams", "-1", "-n", "1"],
            &["'--streams <N>'", "at least 1"],
        ),
        (
            vec![&mqtt, "--publish", "t", "--qos", "-1", "-n", "1"],
            &["'--qos <0|1|2>'", "0, 1 or 2"],
        ),
        (
            vec![&mqtt, "--publish", "t", "--keepalive", "-1s", "-n", "1"],
            &["'--keepalive <D>'", "negative", "0 (none) to 65535"],
        ),
        (
            vec![&mqtt, "--publish", "t", "--keepalive", "70000s", "-n", "1"],
            &["'--keepalive <D>'", "0 (none) to 65535"],
        ),
        (
            vec![&tcp, "--max-frame", "-1", "-n", "1"],
            &["'--max-frame <BYTES>'", "at least 1 byte"],
        ),
        (
            vec![&tcp, "--script-budget", "-1", "-n", "1"],
            &["'--script-budget <N>'", "at least 1"],
        ),
        (
            [&serve[..], &["--threads", "-1"]].concat(),
            &["'--threads <N>'", "at least 1"],
        ),
        (
            ["serve", "chat", "--listen", "127.0.0.1:0", "--seed", "-1"].to_vec(),
            &["'--seed <N>'", "whole number from 0"],
        ),
        (
            ["serve", "chat", "--listen", "127.0.0.1:0", "--drop", "-1"].to_vec(),
            &["'--drop <P>'", "from 0 to 1"],
        ),
        (
            [
                "serve",
                "h2",
                "--listen",
                "127.0.0.1:0",
                "--max-streams",
                "-1",
            ]
            .to_vec(),
            &["'--max-streams <N>'", "at least 1"],
        ),
        (
            [
                "serve",
                "grpc",
                "--listen",
                "127.0.0.1:0",
                "--fail-every",
                "2",
                "--fail-status",
                "-1",
            ]
            .to_vec(),
            &["'--fail-status <CODE>'", "from 1 to 16"],
        ),
    ];
    for (args, says) in cases {
        let line = refused(&args, says);
        assert!(!line.contains("unexpected argument"), "{args:?}: {line}");
    }
    // The flags of a number or word, checked after parsing, name themselves the same way.
    let more: Vec<(Vec<&str>, &[&str])> = vec![
        (
            vec![&mqtt, "--publish", "t", "--mqtt-version", "-1"],
            &["--mqtt-version -1", "give 3.1.1 or 5"],
        ),
        (
            vec!["compare", "a.json", "b.json", "--noise-floor", "-1"],
            &["--noise-floor -1", "from 0 to 1000"],
        ),
        (
            vec!["versus", &tcp, "--against", &http, "--reps", "-1"],
            &["'--reps <N>'", "1..=20"],
        ),
        // Any other flag's value that starts with '-': the flag and how to give it anyway.
        (
            vec![&mqtt, "--publish", "-1"],
            &["--publish -1", "reads as a flag", "--publish=-1"],
        ),
        (vec![&http, "-H", "-1", "-n", "1"], &["-H -1", "-H=-1"]),
    ];
    for (args, says) in more {
        let line = refused(&args, says);
        assert!(!line.contains("unexpected argument"), "{args:?}: {line}");
    }
}

/// (e) A `--fields` length adjusted below zero was written as 0: refused, naming the flag
/// and how far the adjustment may go; in a scenario the same, naming file, line and key.
#[test]
fn a_fields_length_that_goes_below_zero_is_refused_not_written_as_0() {
    let tcp = format!("tcp://127.0.0.1:{}", refused_port());
    refused(
        &[&tcp, "--fields", "u8 1, len:u16be-4(u8 2, u8 3)", "-n", "1"],
        &["--fields", "below zero", "subtract at most 2"],
    );
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "f.toml",
        &format!(
            "target = \"{tcp}\"\n[users]\ncount = 1\narrive = \"1/s\"\nhold = \"1s\"\n\
             [[steps]]\nfields = 'len:u8-3(str \"ab\")'\n"
        ),
    );
    let says = [
        "f.toml:7: steps[0].fields:",
        "below zero",
        "subtract at most 2",
    ];
    let v = refused(&["validate", &file], &says);
    assert_eq!(v, refused(&["run", &file], &says));
}

/// (g) Messages that read as a library's advice, or blamed the wrong thing, are our own line.
#[test]
fn misleading_messages_are_our_own_line() {
    let http = format!("http://127.0.0.1:{}/", refused_port());
    let line = refused(
        &[&http, "-H", ":path: /x", "-n", "1"],
        &[
            "-H ':path: /x'",
            "pseudo-headers",
            "cannot be set with -H",
            "URL",
        ],
    );
    assert!(!line.contains("name is empty"), "{line}");
    refused(&[&http, "-H", ":method: PUT", "-n", "1"], &["-X/--method"]);
    let protos = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/grpc-go");
    let grpc = format!(
        "grpc://127.0.0.1:{}/helloworld.Greeter/SayHello",
        refused_port()
    );
    refused(
        &[&grpc, "--proto", protos, "-n", "1"],
        &["--proto", "is a directory", ".proto file", "--import-path"],
    );
    let proto = format!("{protos}/helloworld.proto");
    let deep = format!("{{\"name\": {}{}}}", "[".repeat(200), "]".repeat(200));
    let line = refused(
        &[&grpc, "--proto", &proto, "--data", &deep, "-n", "1"],
        &["--data", "nested more than 128 levels", "flatten"],
    );
    assert!(!line.contains("recursion limit"), "{line}");
    let dir = tempfile::tempdir().unwrap();
    let yaml = write(
        dir.path(),
        "dup.yaml",
        "target: ws://127.0.0.1:9/\nusers:\n  count: 5\n  arrive: 1/s\n  count: 6\n\
         steps:\n  - send: x\n",
    );
    let line = refused(
        &["validate", &yaml],
        &["dup.yaml:5: users.count:", "given twice", "keep one"],
    );
    assert!(!line.contains("DuplicateKeyPolicy"), "{line}");
    let toml = write(
        dir.path(),
        "dup.toml",
        "target = \"ws://127.0.0.1:9/\"\ntarget = \"ws://127.0.0.1:8/\"\n",
    );
    refused(&["run", &toml], &["dup.toml:2: target:", "given twice"]);
    // A scenario file named without `run` is not an "unrecognized subcommand".
    let line = refused(&[&toml], &["is a scenario file", "barrage run"]);
    assert!(!line.contains("subcommand"), "{line}");
}
