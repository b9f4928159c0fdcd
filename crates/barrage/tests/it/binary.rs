//! Binary messages (issue 29): `--fields` and a scenario's `fields` steps render typed fields
//! with computed lengths; `--expect field:...` frames the echoed replies by their length
//! field; captures and `expect` read binary integers (`at`, `type`). Against `serve echo`,
//! whose byte counts reconcile exactly with the messages' rendered sizes.

use crate::common::*;

/// `u8 7, len:u16be(u32be {seq}, str:u8 "c{conn}")` for 4 connections (one digit each), 2,000
/// messages: 3 + 4 + 1 + 2 = 10 bytes each, framed back by the length field.
#[test]
fn fields_render_and_length_field_framing_reconcile_with_the_echo_server() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let v = run_json(
        &[
            server.url(),
            "--fields",
            r#"u8 7, len:u16be(u32be {seq}, str:u8 "c{conn}")"#,
            "--expect",
            "field:1:u16be",
            "-c",
            "4",
            "-n",
            "2000",
        ],
        &dir.path().join("out.json"),
    );
    conserved(&v);
    assert_eq!(u(&v, "summary.exchanges.completed"), 2000);
    assert_eq!(u(&v, "summary.errors.total"), 0);
    assert_eq!(u(&v, "summary.io.bytes_written"), 2000 * 10);
    assert_eq!(u(&v, "summary.io.bytes_read"), 2000 * 10);
    let stats = server.stop();
    assert_eq!(u(&stats, "bytes_read"), 2000 * 10);
}

/// A reply whose length field claims more than `--max-frame` fails its connection as
/// `protocol` (nothing of that size is ever allocated); the run goes on and says so.
#[test]
fn a_length_field_over_max_frame_is_a_protocol_error() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let v = run_json(
        &[
            server.url(),
            "--fields",
            "u8 1, u32be 0x7fffffff",
            "--lenient-exit",
            "--expect",
            "field:1:u32be",
            "--max-frame",
            "1KiB",
            "-c",
            "2",
            "-d",
            "1s",
        ],
        &dir.path().join("out.json"),
    );
    let e = field(&v, "summary.exchanges");
    assert_eq!(
        e["sent"].as_u64().unwrap(),
        e["completed"].as_u64().unwrap()
            + e["failed"].as_u64().unwrap()
            + e["in_flight_at_end"].as_u64().unwrap()
    );
    assert_eq!(u(&v, "summary.exchanges.completed"), 0);
    assert!(u(&v, "summary.failed_requests.protocol") > 0, "{v}");
    assert_eq!(
        u(&v, "summary.failed_requests.protocol"),
        u(&v, "summary.exchanges.failed")
    );
}

/// A scenario speaking a binary protocol to the echo server: a login message whose reply's
/// u32be is captured and sent back in the next message, which `expect` checks by offset and
/// type; a reply that does not match its step's `expect` is not its reply (a message
/// protocol's replies may be pushes): that step waits, and is in flight at the end.
#[test]
fn scenario_fields_steps_capture_and_expect_binary_fields() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bin.toml");
    std::fs::write(
        &file,
        format!(
            r#"target = "{url}"

[protocol]
framing = "field:1:u16be"

[users]
count = 3
arrive = "100/s"
hold = "300ms"

[[steps]]
name = "login"
fields = 'u8 1, len:u16be(u32be {{user}}, str:u8 "user-{{user}}")'
capture.id = {{ at = 3, type = "u32be" }}
expect = {{ at = 0, type = "u8", equals = 1 }}

[[steps]]
name = "echo_id"
fields = 'u8 2, len:u16be(u64le {{id}}, i16be -2)'
expect = {{ at = 11, type = "i16be", equals = -2 }}

[[steps]]
name = "wrong"
fields = 'u8 3, len:u16be(u16be {{id}})'
expect = {{ at = 3, type = "u16be", equals = 65535 }}
"#,
            url = server.url()
        ),
    )
    .unwrap();
    let v = run_json(
        &["run", file.to_str().unwrap()],
        &dir.path().join("out.json"),
    );
    let e = field(&v, "summary.exchanges");
    assert_eq!(e["sent"], 9);
    assert_eq!(e["completed"], 6);
    assert_eq!(e["in_flight_at_end"], 3);
    assert_eq!(e["unexpected_replies"], 3);
    let step = |name: &str| step(&v, name);
    assert_eq!(step("login")["completed"], 3);
    assert_eq!(step("login")["capture_misses"], 0);
    assert_eq!(step("echo_id")["completed"], 3);
    assert_eq!(step("wrong")["completed"], 0);
    let login = |user: usize| 3 + 4 + 1 + format!("user-{user}").len();
    let sent = (0..3).map(|u| login(u) + 3 + 8 + 2 + 3 + 2).sum::<usize>() as u64;
    let stats = server.stop();
    assert_eq!(u(&stats, "bytes_read"), sent);
}

/// `examples/binary-echo.toml`, cut short, against `serve echo`: every login captured its id
/// and every move completed or was in flight at the end; the bytes the server read are the
/// messages' sizes (a move in flight at the end may not have been read when it stopped).
#[test]
fn the_binary_example_runs_and_reconciles() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/binary-echo.toml");
    let v = run_json(
        &[
            "run",
            example.to_str().unwrap(),
            "--target",
            server.url(),
            "--users",
            "4",
            "--arrive",
            "100",
            "--hold",
            "1200ms",
        ],
        &dir.path().join("out.json"),
    );
    let step = |name: &str| step(&v, name);
    assert_eq!(step("login")["completed"], 4);
    assert_eq!(step("login")["capture_misses"], 0);
    let moves = step("move")["sent"].as_u64().unwrap();
    assert!(moves > 0, "no move was sent");
    let e = field(&v, "summary.exchanges");
    assert_eq!(u(&v, "summary.errors.total"), 0);
    assert_eq!(
        e["sent"].as_u64().unwrap(),
        e["completed"].as_u64().unwrap() + e["in_flight_at_end"].as_u64().unwrap()
    );
    let login: u64 = (0..4)
        .map(|u| 3 + 4 + 1 + format!("user-{u}").len() as u64)
        .sum();
    let in_flight = e["in_flight_at_end"].as_u64().unwrap();
    let stats = server.stop();
    let read = u(&stats, "bytes_read");
    assert!(
        (login + (moves - in_flight) * 19..=login + moves * 19).contains(&read),
        "read {read}, logins {login}, {moves} moves ({in_flight} in flight)"
    );
}

/// A scenario's binary mistakes, found by `validate` (no server): one line naming the file,
/// line and key.
#[test]
fn validate_finds_binary_mistakes_in_a_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let head = "target = \"tcp://127.0.0.1:9\"\n\n[users]\ncount = 1\narrive = \"10/s\"\n\n";
    for (text, says) in [
        (
            format!("{head}[[steps]]\nfields = 'u8 1, u16 2'\n"),
            "t.toml:8: steps[0].fields: at 6: 'u16' needs its byte order",
        ),
        (
            format!("{head}[[steps]]\nfields = 'u8 {{nope}}'\n"),
            "steps[0].fields",
        ),
        (
            head.replace("\n\n[users]", "\n\n[protocol]\nframing = \"field:1:u12\"\n\n[users]")
                + "[[steps]]\nfields = 'u8 1'\n",
            "protocol.framing",
        ),
        (
            format!("{head}[[steps]]\nfields = 'u8 1'\ncapture.x = {{ at = 1 }}\n"),
            "at goes with type",
        ),
        (
            format!("{head}[[steps]]\nfields = 'u8 1'\nexpect = {{ at = 0, type = \"u7\" }}\n"),
            "not an integer type",
        ),
        (
            format!("{head}[[steps]]\nsend = \"x\"\nexpect = {{ at = 0, type = \"u8\", equals = \"a\" }}\n"),
            "whole number",
        ),
        (
            format!("{head}[[steps]]\nsend = \"x\"\nexpect = {{ at = 0, type = \"i8\", equals = 255 }}\n"),
            "255 does not fit i8 (-128 to 127)",
        ),
        (
            format!("{head}[[steps]]\nfields = '{}u8 1{}'\n", "len:u8(".repeat(9), ")".repeat(9)),
            "lengths nested",
        ),
    ] {
        let file = dir.path().join("t.toml");
        std::fs::write(&file, &text).unwrap();
        let out = barrage().arg("validate").arg(&file).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(err.starts_with("error: ") && err.contains(says), "{text}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{text}: {err}");
    }
}

/// Mistakes in a field list or a length-field framing: one line naming the flag.
#[test]
fn fields_mistakes_are_one_line() {
    for (args, flag) in [
        (&["--fields", "u16 1"][..], "--fields"),
        (&["--fields", "u8 300"], "--fields"),
        (&["--fields", "len:u8(u8 1"], "--fields"),
        (&["--fields", "u8 1", "-m", "x"], "--fields"),
        (&["--expect", "field:1"], "--expect"),
        (&["--expect", "field:99:u8"], "--expect"),
        (&["--expect", "field:1:u12"], "--expect"),
        (&["--max-frame", "1KiB"], "--max-frame"),
        (&["--expect", "mqtt", "--max-frame", "0"], "--max-frame"),
    ] {
        let out = barrage()
            .arg("tcp://127.0.0.1:9")
            .args(args)
            .args(["-n", "1"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(flag),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}
