//! gRPC in scenario files: `rpc` steps whose `data` is encoded with the .proto (or the
//! server's reflection), `{var}`s filled per user, captures and `expect` on the reply decoded
//! to JSON; against `barrage serve grpc` (counts reconciled with its counters) and grpc-go's
//! reflection example; and each mistake in one line naming the file, line and key.

use crate::common::*;
use crate::grpc::{class, go_dir, serve_grpc, GoServer};
use std::path::Path;

fn scenario(dir: &Path, text: &str) -> String {
    let file = dir.join("calls.toml");
    std::fs::write(&file, text).unwrap();
    file.to_str().unwrap().to_string()
}

/// Four users each: a unary call whose reply's text is captured, a server stream whose third
/// message's nested text is captured from the decoded array, a call sending that capture
/// back and checking it (the user's own name, so `expect` holds for every user only if every
/// capture was that user's), a check that fails for every user (a field at its default is in
/// the JSON, 0, not 5), and a method the server does not implement. Per-step counts, gRPC
/// statuses and the server's counters all reconcile.
#[test]
fn rpc_steps_capture_from_decoded_replies_and_reconcile() {
    let dir = tempfile::tempdir().unwrap();
    let (server, proto) = serve_grpc(&["--stream-messages", "3"], dir.path());
    // The server's .proto, and a method it does not have.
    let text = std::fs::read_to_string(&proto).unwrap().replace(
        "rpc Stream(Message)",
        "rpc Missing(Message) returns (Message);\n  rpc Stream(Message)",
    );
    std::fs::write(dir.path().join("calls.proto"), text).unwrap();
    let file = scenario(
        dir.path(),
        &format!(
            r#"target = "grpc://127.0.0.1:{port}"

[protocol]
proto = "calls.proto"
headers = ["x-run: rpc-steps"]

[users]
count = 4
arrive = "200/s"
hold = "1s"

[[steps]]
name = "login"
rpc = "barrage.Echo/Echo"
data = {{ text = "user-{{user}}", number = 41, labels = {{ k = "v-{{user}}" }} }}
capture.who = {{ json = "/text" }}
expect = {{ json = "/number", equals = 41 }}

[[steps]]
name = "feed"
rpc = "barrage.Echo/Stream"
data = {{ text = "{{who}}!", inner = {{ text = "{{who}}" }}, tags = ["a", "{{who}}"] }}
capture.last = {{ json = "/2/inner/text" }}
expect = {{ regex = '"tags":\["a","user-[0-9]+!?"\]' }}

[[steps]]
name = "again"
rpc = "barrage.Echo/Echo"
data = {{ text = "{{last}}" }}
expect = {{ regex = '"text":"user-[0-9]+"' }}

[[steps]]
name = "wrong"
rpc = "barrage.Echo/Echo"
data = {{ text = "{{last}}" }}
expect = {{ json = "/number", equals = 5 }}

[[steps]]
name = "missing"
rpc = "barrage.Echo/Missing"

[[steps]]
name = "collect"
rpc = "barrage.Echo/Collect"
data = [{{ text = "a" }}, {{ text = "{{who}}" }}]
expect = {{ regex = '"text":"user-[0-9]+"' }}

[[steps]]
name = "chat"
rpc = "barrage.Echo/Chat"
data = [{{ text = "x" }}, {{ text = "y" }}, {{ text = "z-{{last}}" }}]
capture.third = {{ json = "/2/text" }}
expect = {{ json = "/1/text", equals = "y" }}

[[steps]]
name = "third"
rpc = "barrage.Echo/Echo"
data = {{ text = "{{third}}" }}
expect = {{ regex = '"text":"z-user-[0-9]+"' }}
"#,
            port = server.port
        ),
    );
    let v = run_json(&["run", &file], &dir.path().join("out.json"));
    conserved(&v);
    assert_eq!(s(&v, "config.protocol"), "grpc");
    for (name, completed, failed) in [
        ("login", 4, 0),
        ("feed", 4, 0),
        ("again", 4, 0),
        ("wrong", 0, 4),
        ("missing", 0, 4),
        ("collect", 4, 0),
        ("chat", 4, 0),
        ("third", 4, 0),
    ] {
        let st = step(&v, name);
        assert_eq!(st["sent"], 4, "{name}");
        assert_eq!(st["completed"], completed, "{name}");
        assert_eq!(st["failed"], failed, "{name}");
        assert_eq!(st["capture_misses"], 0, "{name}");
    }
    assert_eq!(step(&v, "wrong")["failed_by"]["mismatch"], 4);
    assert_eq!(step(&v, "missing")["failed_by"]["grpc.unimplemented"], 4);
    assert_eq!(class(&v, "failed_requests", "grpc.unimplemented"), 4);
    assert_eq!(u(&v, "summary.totals.grpc.status.0"), 28);
    assert_eq!(u(&v, "summary.totals.grpc.status.12"), 4);
    // Per user: one reply per unary or client-streaming call (login, again, wrong, collect,
    // third), 3 per feed (server streaming) and per chat (bidirectional).
    assert_eq!(
        u(&v, "summary.totals.grpc.messages_received"),
        4 * (5 + 3 + 3)
    );
    assert_eq!(u(&v, "summary.stream_msg_us.count"), 4 * (3 + 3));
    let stats = server.stop();
    assert_eq!(u(&stats, "grpc.calls"), 32);
    assert_eq!(u(&stats, "grpc.status_ok"), 28);
    assert_eq!(u(&stats, "grpc.status_error"), 4);
    // The unknown method's message is not read; collect sends 2, chat 3.
    assert_eq!(u(&stats, "grpc.messages_in"), 4 * (4 + 2 + 3 + 1));
    assert_eq!(u(&stats, "grpc.messages_out"), 4 * (5 + 3 + 3));
}

/// An `every` block of calls (open loop, each tick both calls); a secret whose value looks
/// like a placeholder, in the data and in the metadata, sent as written (the server echoes
/// the message: the reply says what was sent); a captured value with CR/LF in a header.
#[test]
fn rpc_steps_in_blocks_with_secrets_and_odd_values() {
    let dir = tempfile::tempdir().unwrap();
    // It writes its .proto as echo.proto in the scenario's folder.
    let (server, _) = serve_grpc(&[], dir.path());
    let file = scenario(
        dir.path(),
        &format!(
            r#"target = "grpc://127.0.0.1:{port}"

[protocol]
proto = "echo.proto"
headers = ["x-token: {{secret:RPC_TOKEN}}"]

[users]
count = 2
arrive = "100/s"
hold = "1s"

[[steps]]
name = "secret"
rpc = "barrage.Echo/Echo"
data = {{ text = "{{secret:RPC_TOKEN}}", tags = ["a\r\nb"] }}
capture.odd = {{ json = "/tags/0" }}
expect = {{ json = "/text", equals = "t{{seq}}k" }}

[[steps]]
name = "odd"
rpc = "barrage.Echo/Echo"
headers = ["x-odd: {{odd}}"]

[[steps]]
every = "20ms"
repeat = 3
steps = [
  {{ name = "tick_a", rpc = "barrage.Echo/Echo", data = {{ text = "a" }} }},
  {{ name = "tick_b", rpc = "barrage.Echo/Stream", data = {{ text = "b" }} }},
]
"#,
            port = server.port
        ),
    );
    let json = dir.path().join("out.json");
    let out = barrage()
        .env("RPC_TOKEN", "t{seq}k")
        .args(["run", &file, "-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 3)), "{err}");
    let v = read_json(&json);
    conserved(&v);
    for (name, n) in [("secret", 2), ("odd", 2), ("tick_a", 6), ("tick_b", 6)] {
        assert_eq!(step(&v, name)["completed"], n, "{name}");
        assert_eq!(step(&v, name)["failed"], 0, "{name}");
    }
    let stats = server.stop();
    assert_eq!(u(&stats, "grpc.calls"), 16);
}

/// grpc-go's reflection example: the steps' types from the server (reflect = true, asked
/// once per service), a greeting captured and sent back as the next call's name.
#[test]
fn rpc_steps_against_grpc_go_with_reflection() {
    let Some(g) = GoServer::start("features_reflection_server") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(
        dir.path(),
        &format!(
            r#"target = "grpc://127.0.0.1:{port}"

[protocol]
reflect = true

[users]
count = 3
arrive = "100/s"
hold = "500ms"

[[steps]]
name = "hello"
rpc = "helloworld.Greeter/SayHello"
data = {{ name = "u{{user}}" }}
capture.greeting = {{ json = "/message" }}
expect = {{ regex = "Hello u[0-9]" }}

[[steps]]
name = "echo"
rpc = "grpc.examples.echo.Echo/UnaryEcho"
data = {{ message = "{{greeting}}" }}
expect = {{ regex = '"message":"Hello u[0-9]"' }}
"#,
            port = g.port
        ),
    );
    let v = run_json(&["run", &file], &dir.path().join("out.json"));
    conserved(&v);
    for name in ["hello", "echo"] {
        assert_eq!(step(&v, name)["completed"], 3, "{name}");
        assert_eq!(step(&v, name)["failed"], 0, "{name}");
    }
    assert_eq!(u(&v, "summary.totals.grpc.status.0"), 6);
}

/// grpc-go's route guide, client streaming: the summary it sends back counts the points
/// each user's call streamed (all three arrived), and a bidirectional call's notes come back.
#[test]
fn rpc_client_stream_steps_against_grpc_go() {
    let Some(g) = GoServer::start("route_guide_server") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        go_dir().join("route_guide.proto"),
        dir.path().join("route_guide.proto"),
    )
    .unwrap();
    let file = scenario(
        dir.path(),
        &format!(
            r#"target = "grpc://127.0.0.1:{port}"

[protocol]
proto = "route_guide.proto"

[users]
count = 3
arrive = "100/s"
hold = "500ms"

[[steps]]
name = "record"
rpc = "routeguide.RouteGuide/RecordRoute"
data = [{{ latitude = 1, longitude = 1 }}, {{ latitude = 2, longitude = 2 }}, {{ latitude = 3, longitude = 3 }}]
capture.points = {{ json = "/point_count" }}
expect = {{ json = "/point_count", equals = 3 }}

[[steps]]
name = "chat"
rpc = "routeguide.RouteGuide/RouteChat"
data = [{{ location = {{ latitude = 5, longitude = 5 }}, message = "user {{user}} saw {{points}}" }}]
expect = {{ regex = "saw 3" }}
"#,
            port = g.port
        ),
    );
    let v = run_json(&["run", &file], &dir.path().join("out.json"));
    conserved(&v);
    for name in ["record", "chat"] {
        assert_eq!(step(&v, name)["completed"], 3, "{name}");
        assert_eq!(step(&v, name)["failed"], 0, "{name}");
    }
    // Each chat note comes back with the notes before it at that place: 1 + 2 + 3.
    assert_eq!(u(&v, "summary.totals.grpc.messages_received"), 3 + 6);
}

/// Mistakes in a gRPC scenario: one line, exit code 2, naming the file and key.
#[test]
fn rpc_step_mistakes_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let proto = dir.path().join("p.proto");
    std::fs::write(
        &proto,
        "syntax = \"proto3\";\npackage p;\nservice S { rpc U(M) returns (M); }\n\
         message M { string s = 1; int64 n = 2; map<string, string> m = 3; }\n",
    )
    .unwrap();
    let head = "target = \"grpc://127.0.0.1:9\"\n\n[users]\ncount = 1\narrive = \"10/s\"\n\n";
    let with_proto = "target = \"grpc://127.0.0.1:9\"\n\n[protocol]\nproto = \"p.proto\"\n\n\
                      [users]\ncount = 1\narrive = \"10/s\"\n\n";
    for (text, extra, says) in [
        (
            format!("{head}[[steps]]\nsend = \"x\"\n"),
            &[][..],
            "steps[0].send",
        ),
        (
            format!("{head}[[steps]]\nrpc = \"p.S/U\"\n"),
            &[],
            "protocol.proto",
        ),
        (
            format!("{with_proto}[[steps]]\nrpc = \"p.S\"\n"),
            &[],
            "steps[0].rpc",
        ),
        (
            format!("{with_proto}[[steps]]\nrpc = \"p.S/Nope\"\n"),
            &[],
            "steps[0].rpc: method 'Nope'",
        ),
        (
            format!("{with_proto}[[steps]]\nrpc = \"p.Nope/U\"\n"),
            &[],
            "steps[0].rpc: service 'p.Nope'",
        ),
        (
            format!("{with_proto}[[steps]]\nrpc = \"p.S/U\"\ndata = {{ nope = 1 }}\n"),
            &[],
            "steps[0].data",
        ),
        (
            format!("{with_proto}[[steps]]\nrpc = \"p.S/U\"\ndata = {{ n = \"{{user}}\" }}\n"),
            &[],
            "steps[0].data",
        ),
        (
            format!("{with_proto}[[steps]]\nrpc = \"p.S/U\"\ndata = {{ s = \"{{nope}}\" }}\n"),
            &[],
            "steps[0].data",
        ),
        (
            format!("{with_proto}[[steps]]\nrpc = \"p.S/U\"\ndata = \"x\"\n"),
            &[],
            "steps[0].data",
        ),
        (
            format!("{with_proto}[[steps]]\nrpc = \"p.S/U\"\ndata = [{{ s = \"a\" }}]\n"),
            &[],
            "steps[0].data",
        ),
        (
            format!(
                "{with_proto}[[steps]]\nrpc = \"p.S/U\"\ncapture.c = {{ json = \"/s\" }}\n\n\
                 [[steps]]\nrpc = \"p.S/U\"\ndata = {{ m = {{ \"{{c}}\" = \"v\" }} }}\n"
            ),
            &[],
            "steps[1].data",
        ),
        (
            with_proto.replace("127.0.0.1:9", "127.0.0.1:9/p.S/U") + "[[steps]]\nrpc = \"p.S/U\"\n",
            &[],
            "target",
        ),
        (
            with_proto.replace("p.proto", "nope.proto") + "[[steps]]\nrpc = \"p.S/U\"\n",
            &[],
            "protocol.proto",
        ),
        (
            format!("{with_proto}[[steps]]\nrpc = \"p.S/U\"\n"),
            &["--data", "{}"],
            "--data",
        ),
        (
            "target = \"http://127.0.0.1:9\"\n\n[users]\ncount = 1\narrive = \"10/s\"\n\n\
             [[steps]]\nrpc = \"p.S/U\"\n"
                .to_string(),
            &[],
            "steps[0].rpc",
        ),
        (
            "target = \"http://127.0.0.1:9\"\n\n[protocol]\nproto = \"p.proto\"\n\n[users]\n\
             count = 1\narrive = \"10/s\"\n\n[[steps]]\npath = \"/\"\n"
                .to_string(),
            &[],
            "protocol.proto",
        ),
    ] {
        let file = scenario(dir.path(), &text);
        let out = barrage()
            .arg("run")
            .arg(&file)
            .args(extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(says),
            "{text}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{text}: {err}");
    }
    // `validate` finds what `run` would refuse in the steps, without a server.
    let file = scenario(
        dir.path(),
        &format!("{with_proto}[[steps]]\nrpc = \"p.S/Nope\"\n"),
    );
    let out = barrage().arg("validate").arg(&file).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("calls.toml:11: steps[0].rpc: method 'Nope'"),
        "{err}"
    );
}
