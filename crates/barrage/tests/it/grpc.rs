//! gRPC end to end: against `barrage serve grpc` (the `h2` crate, its own gRPC framing, no
//! code shared with the client) and grpc-go's example servers (the greeter and the route
//! guide, built by `.ci/install` from tests/grpc-go), counts reconciled exactly: calls by
//! status and messages with the reference server's counters, and every call ends as one
//! exchange, completed or failed under the class of its status.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};

/// `summary.<part>["grpc.<code>"]` (the class's name holds a dot).
pub(crate) fn class(v: &Value, part: &str, name: &str) -> u64 {
    field(v, &format!("summary.{part}"))[name]
        .as_u64()
        .unwrap_or_else(|| panic!("no {name} in summary.{part}"))
}

/// `barrage serve grpc EXTRA` with its .proto written next to it.
pub(crate) fn serve_grpc(extra: &[&str], dir: &Path) -> (EchoServer, PathBuf) {
    let proto = dir.join("echo.proto");
    let mut args = vec!["--write-proto", proto.to_str().unwrap()];
    args.extend_from_slice(extra);
    (EchoServer::serve("grpc", &args), proto)
}

fn method(server: &EchoServer, m: &str) -> String {
    format!("grpc://127.0.0.1:{}/barrage.Echo/{m}", server.port)
}

/// Unary calls with placeholders in nested, repeated and map fields, then server streams:
/// the server fails every 10th call on its thread with UNAVAILABLE. Calls by status, reply
/// messages and streamed messages all reconcile with the server's counters.
#[test]
fn serve_grpc_calls_reconcile_with_the_servers_counts() {
    let dir = tempfile::tempdir().unwrap();
    let (server, proto) = serve_grpc(
        &["--fail-every", "10", "--stream-messages", "5"],
        dir.path(),
    );
    let proto = proto.to_str().unwrap();
    let data = r#"{"text":"call {seq}","number":7,"tags":["a","{conn}"],
        "labels":{"k":"v-{seq}"},"inner":{"text":"in {seq%3}"}}"#;
    let unary = run_json(
        &[
            &method(&server, "Echo"),
            "--proto",
            proto,
            "--data",
            data,
            "-c",
            "4",
            "--streams",
            "4",
            "-n",
            "1000",
            "-t",
            "2",
        ],
        &dir.path().join("unary.json"),
    );
    conserved(&unary);
    assert_eq!(s(&unary, "config.protocol"), "grpc");
    assert_eq!(u(&unary, "summary.exchanges.completed"), 900);
    assert_eq!(class(&unary, "failed_requests", "grpc.unavailable"), 100);
    assert_eq!(u(&unary, "summary.totals.grpc.status.0"), 900);
    assert_eq!(u(&unary, "summary.totals.grpc.status.14"), 100);
    assert_eq!(u(&unary, "summary.totals.grpc.messages_received"), 900);
    let streams = run_json(
        &[
            &method(&server, "Stream"),
            "--proto",
            proto,
            "--data",
            r#"{"text":"s {seq}"}"#,
            "-c",
            "2",
            "--streams",
            "2",
            "-n",
            "100",
        ],
        &dir.path().join("stream.json"),
    );
    conserved(&streams);
    assert_eq!(u(&streams, "summary.exchanges.completed"), 90);
    assert_eq!(class(&streams, "failed_requests", "grpc.unavailable"), 10);
    assert_eq!(u(&streams, "summary.totals.grpc.messages_received"), 450);
    assert_eq!(u(&streams, "summary.stream_msg_us.count"), 450);
    let stats = server.stop();
    assert_eq!(u(&stats, "grpc.calls"), 1100);
    assert_eq!(u(&stats, "grpc.status_ok"), 990);
    assert_eq!(u(&stats, "grpc.status_error"), 110);
    assert_eq!(u(&stats, "grpc.messages_in"), 1100);
    assert_eq!(u(&stats, "grpc.messages_out"), 900 + 450);
}

/// Every status is its own error class, in the JSON and for thresholds; an unknown method
/// is UNIMPLEMENTED; `--data-bin` sends the file's bytes.
#[test]
fn grpc_statuses_are_error_classes_and_thresholds_name_them() {
    let dir = tempfile::tempdir().unwrap();
    let (server, proto) = serve_grpc(&["--fail-every", "1", "--fail-status", "8"], dir.path());
    let out = barrage()
        .args([
            &method(&server, "Echo"),
            "--proto",
            proto.to_str().unwrap(),
            "-n",
            "50",
            "-q",
            "--threshold",
            "errors.grpc.resource_exhausted == 0",
            // Every call fails: a failed run (exit 1) unless lenient, which keeps the
            // threshold's exit 3.
            "--lenient-exit",
            "--json",
        ])
        .arg(dir.path().join("r.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "a failed threshold exits 3");
    let r = read_json(&dir.path().join("r.json"));
    assert_eq!(class(&r, "failed_requests", "grpc.resource_exhausted"), 50);
    assert_eq!(class(&r, "errors", "grpc.resource_exhausted"), 50);
    let bin = dir.path().join("msg.bin");
    std::fs::write(&bin, [0x0a, 0x02, b'h', b'i']).unwrap();
    let nope = run_json(
        &[
            &format!("grpc://127.0.0.1:{}/barrage.Echo/Nope", server.port),
            "--data-bin",
            bin.to_str().unwrap(),
            "-n",
            "20",
            "--lenient-exit",
        ],
        &dir.path().join("nope.json"),
    );
    conserved(&nope);
    assert_eq!(class(&nope, "failed_requests", "grpc.unimplemented"), 20);
    let stats = server.stop();
    assert_eq!(u(&stats, "grpc.calls"), 70);
    assert_eq!(u(&stats, "grpc.status_error"), 70);
}

/// Every gRPC flag that does not fit, and every message that cannot be built, is one line
/// naming the flag.
#[test]
fn grpc_mistakes_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let proto = dir.path().join("echo.proto");
    std::fs::write(
        &proto,
        "syntax = \"proto3\";\npackage p;\nservice S { rpc U(M) returns (M); \
         rpc C(stream M) returns (M); }\nmessage M { string s = 1; int32 n = 2; }\n",
    )
    .unwrap();
    let p = proto.to_str().unwrap();
    let bad_proto = dir.path().join("bad.proto");
    std::fs::write(
        &bad_proto,
        "syntax = \"proto3\";\nmessage M { strin s = 1; }\n",
    )
    .unwrap();
    let url = "grpc://127.0.0.1:9/p.S/U";
    for (args, flag) in [
        (&[url, "--data", "{}"][..], "--data"),
        (&["http://127.0.0.1:9/", "--proto", p], "--proto"),
        (&[url, "-X", "GET"], "-X/--method"),
        (&[url, "--http2"], "--http2"),
        (&[url, "-m", "x"], "-m/--message"),
        (&["grpc://127.0.0.1:9/", "--proto", p], "target"),
        (&["grpc://127.0.0.1:9/p.Nope/U", "--proto", p], "target"),
        (&["grpc://127.0.0.1:9/p.S/Nope", "--proto", p], "target"),
        (
            &["grpc://127.0.0.1:9/p.S/C", "--proto", p, "--data", "[]"],
            "--data",
        ),
        (&[url, "--proto", p, "--data", "[]"], "--data"),
        (&[url, "--proto", p, "--data", "{not json"], "--data"),
        (&[url, "--proto", p, "--data", r#"{"n":"x"}"#], "--data"),
        (&[url, "--proto", p, "--data", r#"{"nope":1}"#], "--data"),
        (&[url, "--proto", p, "--data", r#"{"n":"{seq}"}"#], "--data"),
        (&[url, "--proto", bad_proto.to_str().unwrap()], "--proto"),
        (&[url, "--proto", "/no/such.proto"], "--proto"),
        (&[url, "--import-path", "/tmp"], "--import-path"),
        (&["grpc://127.0.0.1/p.S/U"], "target"),
    ] {
        let out = barrage().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(flag),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

// -------------------------------------------------------------------------------------------
// grpc-go's examples

/// A grpc-go example server (`tests/grpc-go/bin/NAME`, built by `.ci/install`), on a free
/// port; `None` (skipped, failing under CI) when it was not built.
pub(crate) struct GoServer {
    _child: Guard,
    pub port: u16,
}

pub(crate) fn go_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/grpc-go")
}

impl GoServer {
    pub(crate) fn start(name: &str) -> Option<GoServer> {
        let bin = go_dir().join("bin").join(name);
        if !available(&format!("grpc-go's {name}"), bin.is_file()) {
            return None;
        }
        let port = free_port();
        let mut child = StdCommand::new(&bin)
            .arg(format!("-port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the grpc-go server");
        assert!(wait_listening(&mut child, port), "{name} did not listen");
        // It is still up: the listener answering is its own, not another test's on the port.
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(
            matches!(child.try_wait(), Ok(None)),
            "{name} exited after it started (port {port} taken?)"
        );
        Some(GoServer {
            _child: Guard(child),
            port,
        })
    }
}

/// `--compression gzip` (issue 45, item 6) against grpc-go's compression example (gzip
/// registered; it answers a gzipped call gzipped): every call OK with its one reply, as many
/// as the server logged, and a compressible message costs far fewer bytes than without.
#[test]
fn grpc_go_takes_gzipped_calls_and_answers_them_gzipped() {
    let name = "features_compression_server";
    let bin = go_dir().join("bin").join(name);
    if !available(&format!("grpc-go's {name}"), bin.is_file()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let port = free_port();
    let mut child = StdCommand::new(&bin)
        .arg(format!("-port={port}"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the grpc-go server");
    assert!(wait_listening(&mut child, port), "{name} did not listen");
    let _guard = Guard(child);
    let proto = go_dir().join("echo.proto");
    let url = format!("grpc://127.0.0.1:{port}/grpc.examples.echo.Echo/UnaryEcho");
    let text = "a".repeat(4000);
    let data = format!(r#"{{"message":"{{seq}} {text}"}}"#);
    let run = |extra: &[&str], file: &str| {
        let mut args = vec![
            url.as_str(),
            "--proto",
            proto.to_str().unwrap(),
            "--data",
            &data,
            "-c",
            "2",
            "--streams",
            "4",
            "-n",
            "300",
        ];
        args.extend_from_slice(extra);
        run_json(&args, &dir.path().join(file))
    };
    let gz = run(&["--compression", "gzip"], "gz.json");
    let plain = run(&[], "plain.json");
    for v in [&gz, &plain] {
        conserved(v);
        assert_eq!(u(v, "summary.exchanges.completed"), 300);
        assert_eq!(u(v, "summary.totals.grpc.status.0"), 300);
        assert_eq!(u(v, "summary.totals.grpc.messages_received"), 300);
    }
    assert!(gz["spec"]["protocol"]["gzip"].as_bool().unwrap_or(false));
    // 300 messages of 4 KB: gzipped, a few dozen bytes each.
    let (gz_out, plain_out) = (
        u(&gz, "summary.totals.bytes_written"),
        u(&plain, "summary.totals.bytes_written"),
    );
    assert!(
        gz_out * 5 < plain_out,
        "gzip wrote {gz_out} bytes, plain {plain_out}"
    );
    // The answers came back gzipped too (grpc-go answers in the call's encoding): fewer
    // bytes read as well.
    assert!(u(&gz, "summary.totals.bytes_read") * 5 < u(&plain, "summary.totals.bytes_read"));
    let calls = std::fs::read_to_string(&log).unwrap();
    let served = calls
        .lines()
        .filter(|l| l.starts_with("UnaryEcho called"))
        .count();
    assert_eq!(served, 600, "the server logged {served} calls");
    // A list of messages for a unary method (issue 45, item 6, as ghz takes one): each call
    // sends the next in turn, so 300 calls on 2 connections send each of 3 messages 100 times.
    let list = r#"[{"message":"first {seq}"},{"message":"second"},{"message":"third"}]"#;
    let v = run_json(
        &[
            url.as_str(),
            "--proto",
            proto.to_str().unwrap(),
            "--data",
            list,
            "-c",
            "2",
            "--streams",
            "4",
            "-n",
            "300",
            "--compression",
            "gzip",
        ],
        &dir.path().join("turns.json"),
    );
    conserved(&v);
    assert_eq!(u(&v, "summary.totals.grpc.status.0"), 300);
    let calls = std::fs::read_to_string(&log).unwrap();
    let sent = |m: &str| {
        calls
            .lines()
            .filter(|l| l.starts_with(&format!("UnaryEcho called with message \"{m}")))
            .count()
    };
    assert_eq!(
        (sent("first "), sent("second"), sent("third")),
        (100, 100, 100)
    );
}

/// grpc-go's greeter: unary calls with a placeholder in the name, on streams and
/// connections; every call OK with its one reply.
#[test]
fn grpc_go_greeter_answers_every_call() {
    let Some(g) = GoServer::start("helloworld_greeter_server") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let proto = go_dir().join("helloworld.proto");
    let v = run_json(
        &[
            &format!("grpc://127.0.0.1:{}/helloworld.Greeter/SayHello", g.port),
            "--proto",
            proto.to_str().unwrap(),
            "--data",
            r#"{"name":"user {seq}"}"#,
            "-c",
            "4",
            "--streams",
            "8",
            "-n",
            "2000",
        ],
        &dir.path().join("r.json"),
    );
    conserved(&v);
    assert_eq!(u(&v, "summary.exchanges.completed"), 2000);
    assert_eq!(u(&v, "summary.totals.grpc.status.0"), 2000);
    assert_eq!(u(&v, "summary.totals.grpc.messages_received"), 2000);
    assert_eq!(u(&v, "summary.errors.total"), 0);
}

/// grpc-go's route guide: ListFeatures streams the features inside a rectangle (its
/// built-in database; the whole map holds 100), GetFeature is unary, RecordRoute client
/// streaming, RouteChat bidirectional: every call and message counted.
#[test]
fn grpc_go_route_guide_streams_and_unary_calls_reconcile() {
    let Some(g) = GoServer::start("route_guide_server") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let proto = go_dir().join("route_guide.proto");
    let proto = proto.to_str().unwrap();
    let url = |m: &str| format!("grpc://127.0.0.1:{}/routeguide.RouteGuide/{m}", g.port);
    let all = r#"{"lo":{"latitude":-900000000,"longitude":-1800000000},
        "hi":{"latitude":900000000,"longitude":1800000000}}"#;
    let v = run_json(
        &[
            &url("ListFeatures"),
            "--proto",
            proto,
            "--data",
            all,
            "-c",
            "2",
            "-n",
            "30",
        ],
        &dir.path().join("list.json"),
    );
    conserved(&v);
    assert_eq!(u(&v, "summary.exchanges.completed"), 30);
    let per_call = u(&v, "summary.totals.grpc.messages_received") / 30;
    assert_eq!(
        per_call * 30,
        u(&v, "summary.totals.grpc.messages_received")
    );
    assert_eq!(per_call, 100, "the example's database holds 100 features");
    assert_eq!(u(&v, "summary.stream_msg_us.count"), 3000);
    let one = run_json(
        &[
            &url("GetFeature"),
            "--proto",
            proto,
            "--data",
            r#"{"latitude":409146138,"longitude":-746188906}"#,
            "-n",
            "200",
        ],
        &dir.path().join("get.json"),
    );
    conserved(&one);
    assert_eq!(u(&one, "summary.totals.grpc.status.0"), 200);
    assert_eq!(u(&one, "summary.totals.grpc.messages_received"), 200);
    // Client streaming: three points per call, one summary back.
    let points = r#"[{"latitude":1,"longitude":1},{"latitude":2,"longitude":2},
        {"latitude":3,"longitude":3}]"#;
    let record = run_json(
        &[
            &url("RecordRoute"),
            "--proto",
            proto,
            "--data",
            points,
            "-c",
            "2",
            "--streams",
            "2",
            "-n",
            "50",
        ],
        &dir.path().join("record.json"),
    );
    conserved(&record);
    assert_eq!(u(&record, "summary.totals.grpc.status.0"), 50);
    assert_eq!(u(&record, "summary.totals.grpc.messages_received"), 50);
    // Bidirectional: the server answers each note with every note it was sent at that
    // place so far, this one too (by any call). One call at a time, two notes at two places
    // each: call k (from 0) gets 2 (k + 1) notes back, 2 x (1 + 2 + ... + 10) = 110 in all.
    let notes = r#"[{"location":{"latitude":7,"longitude":7},"message":"a {seq}"},
        {"location":{"latitude":8,"longitude":8},"message":"b"}]"#;
    let chat = run_json(
        &[
            &url("RouteChat"),
            "--proto",
            proto,
            "--data",
            notes,
            "-n",
            "10",
        ],
        &dir.path().join("chat.json"),
    );
    conserved(&chat);
    assert_eq!(u(&chat, "summary.totals.grpc.status.0"), 10);
    assert_eq!(u(&chat, "summary.totals.grpc.messages_received"), 110);
    assert_eq!(u(&chat, "summary.stream_msg_us.count"), 110);
}

/// Client-streaming and bidirectional calls against `serve grpc`: each call sends its three
/// messages and half-closes; `Collect` answers the last, `Chat` each. Messages both ways
/// reconcile with the server's counters.
#[test]
fn client_streams_and_bidi_calls_reconcile() {
    let dir = tempfile::tempdir().unwrap();
    let (server, proto) = serve_grpc(&[], dir.path());
    let proto = proto.to_str().unwrap();
    let three = r#"[{"text":"a {seq}"},{"text":"b"},{"number":3}]"#;
    let mut runs = Vec::new();
    for (m, n) in [("Collect", 300u64), ("Chat", 200)] {
        let v = run_json(
            &[
                &method(&server, m),
                "--proto",
                proto,
                "--data",
                three,
                "-c",
                "2",
                "--streams",
                "3",
                "-n",
                &n.to_string(),
            ],
            &dir.path().join(format!("{m}.json")),
        );
        conserved(&v);
        assert_eq!(u(&v, "summary.exchanges.completed"), n, "{m}");
        runs.push(v);
    }
    assert_eq!(u(&runs[0], "summary.totals.grpc.messages_received"), 300);
    assert_eq!(u(&runs[1], "summary.totals.grpc.messages_received"), 600);
    assert_eq!(u(&runs[1], "summary.stream_msg_us.count"), 600);
    let stats = server.stop();
    assert_eq!(u(&stats, "grpc.calls"), 500);
    assert_eq!(u(&stats, "grpc.status_ok"), 500);
    assert_eq!(u(&stats, "grpc.messages_in"), 1500);
    assert_eq!(u(&stats, "grpc.messages_out"), 300 + 600);
}

/// `--reflect` instead of `--proto`: grpc-go's reflection example serves the greeter and the
/// echo service with server reflection on; barrage asks it for the descriptors, encodes the
/// JSON with them and calls. Its ServerStreamingEcho is not implemented there: every call
/// is `grpc.unimplemented`. `serve grpc` answers reflection too.
#[test]
fn reflect_takes_the_methods_from_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _) = serve_grpc(&["--stream-messages", "3"], dir.path());
    let v = run_json(
        &[
            &method(&server, "Stream"),
            "--reflect",
            "--data",
            r#"{"text":"r {seq}","number":"5"}"#,
            "-n",
            "40",
        ],
        &dir.path().join("own.json"),
    );
    conserved(&v);
    assert_eq!(u(&v, "summary.exchanges.completed"), 40);
    assert_eq!(u(&v, "summary.totals.grpc.messages_received"), 120);
    let stats = server.stop();
    // The reflection call (one request, one reply) and the 40 calls.
    assert_eq!(u(&stats, "grpc.calls"), 41);
    assert_eq!(u(&stats, "grpc.messages_out"), 1 + 120);
    let Some(g) = GoServer::start("features_reflection_server") else {
        return;
    };
    let url = |m: &str| format!("grpc://127.0.0.1:{}/{m}", g.port);
    let hello = run_json(
        &[
            &url("helloworld.Greeter/SayHello"),
            "--reflect",
            "--data",
            r#"{"name":"n {seq}"}"#,
            "-c",
            "2",
            "--streams",
            "4",
            "-n",
            "500",
        ],
        &dir.path().join("hello.json"),
    );
    conserved(&hello);
    assert_eq!(u(&hello, "summary.totals.grpc.status.0"), 500);
    let echo = run_json(
        &[
            &url("grpc.examples.echo.Echo/UnaryEcho"),
            "--reflect",
            "--data",
            r#"{"message":"m {seq}"}"#,
            "-n",
            "100",
        ],
        &dir.path().join("echo.json"),
    );
    assert_eq!(u(&echo, "summary.exchanges.completed"), 100);
    let stream = run_json(
        &[
            &url("grpc.examples.echo.Echo/ServerStreamingEcho"),
            "--reflect",
            "-n",
            "10",
            // The example leaves it unimplemented: every call fails, on purpose.
            "--lenient-exit",
        ],
        &dir.path().join("stream.json"),
    );
    conserved(&stream);
    assert_eq!(class(&stream, "failed_requests", "grpc.unimplemented"), 10);
    let out = barrage()
        .args([&url("no.Such/Thing"), "--reflect", "-n", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: --reflect") && err.contains("no.Such"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
