//! TLS identities (issue 45, item 4): a client certificate for mutual TLS (`--cert`, `--key`,
//! or `protocol.cert`/`.key` in a scenario file) and the name the server's certificate is
//! checked against (`--servername`). The servers are barrage's own, `serve http|h2|ws|grpc
//! --tls-client-ca` (rustls' WebPKI client verifier), with certificates made by rcgen
//! (tests/it/pki); nginx with `ssl_verify_client on` is in interop.rs. Every run is bounded and
//! goes to 127.0.0.1 (`localhost` resolves there); every server is killed by its guard.

use crate::common::*;
use crate::pki::{mtls, Mtls};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `barrage serve KIND` with the PKI's server certificate, requiring client certificates
/// signed by its CA.
fn server(kind: &str, m: &Mtls) -> EchoServer {
    server_with(kind, m, &[])
}

fn server_with(kind: &str, m: &Mtls, extra: &[&str]) -> EchoServer {
    let mut args = vec![
        "--tls-cert",
        p(&m.pki.cert),
        "--tls-key",
        p(&m.pki.key),
        "--tls-client-ca",
        p(&m.pki.ca),
    ];
    args.extend_from_slice(extra);
    EchoServer::serve(kind, &args)
}

/// 200 exchanges over 4 connections, with the PKI's CA trusted and `extra`.
fn run(url: &str, m: &Mtls, json: &Path, extra: &[&str]) -> Output {
    barrage()
        .arg(url)
        .args(["-c", "4", "-n", "200", "-t", "1", "-q"])
        .args(["--cacert", p(&m.pki.ca), "--json", p(json)])
        .args(extra)
        .output()
        .expect("run barrage")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A run that completed its 200 exchanges without an error.
fn clean(o: &Output, json: &Path) -> Value {
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr(o));
    let v = read_json(json);
    assert_eq!(s(&v, "status"), "completed");
    assert_eq!(
        u(&v, "summary.errors.total"),
        0,
        "{}",
        field(&v, "summary.errors")
    );
    assert_eq!(u(&v, "summary.exchanges.completed"), 200);
    v
}

#[test]
fn https_with_a_client_certificate_reconciles_with_the_server() {
    let m = mtls(&["localhost"]);
    let srv = server("http", &m);
    let json = m.pki.dir.path().join("r.json");
    let url = format!("https://localhost:{}/", srv.port);
    let args = ["--cert", p(&m.client_cert), "--key", p(&m.client_key)];
    let v = clean(&run(&url, &m, &json, &args), &json);
    let st = srv.stop();
    assert_eq!(u(&st, "http.requests"), 200, "{st}");
    // 4 load connections plus the pre-flight handshake, each with the client's certificate.
    assert_eq!(u(&st, "tls.handshakes"), 5, "{st}");
    assert_eq!(u(&st, "tls.errors"), 0, "{st}");
    // The result records the files, never the key itself.
    let spec = field(&v, "spec").to_string();
    assert!(
        spec.contains("client.key") && spec.contains("client.pem"),
        "{spec}"
    );
    let key = std::fs::read_to_string(&m.client_key).unwrap();
    let body = key.lines().nth(1).unwrap();
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(!text.contains(body), "the key's text is in the result");
}

#[test]
fn h2_wss_and_grpcs_take_a_client_certificate_with_its_key_in_the_same_file() {
    let m = mtls(&["localhost"]);
    let both = p(&m.client_both);
    // HTTP/2 over TLS (ALPN h2).
    let srv = server("h2", &m);
    let json = m.pki.dir.path().join("h2.json");
    let url = format!("https://localhost:{}/", srv.port);
    let v = clean(&run(&url, &m, &json, &["--cert", both, "--http2"]), &json);
    assert_eq!(u(&v, "summary.totals.h2.connections"), 4);
    let st = srv.stop();
    assert_eq!(u(&st, "tls.handshakes"), 5, "{st}");
    assert_eq!(u(&st, "tls.errors"), 0, "{st}");
    // WebSocket over TLS: every message echoed, counted on both sides.
    let srv = server("ws", &m);
    let json = m.pki.dir.path().join("ws.json");
    let url = format!("wss://localhost:{}/", srv.port);
    clean(&run(&url, &m, &json, &["--cert", both]), &json);
    let st = srv.stop();
    assert_eq!(u(&st, "ws.messages_in"), 200, "{st}");
    assert_eq!(u(&st, "tls.handshakes"), 5, "{st}");
    // gRPC over TLS: unary calls of the reference server's echo method.
    let proto = m.pki.dir.path().join("echo.proto");
    let srv = server_with("grpc", &m, &["--write-proto", p(&proto)]);
    let json = m.pki.dir.path().join("grpc.json");
    let url = format!("grpcs://localhost:{}/barrage.Echo/Echo", srv.port);
    let v = clean(
        &run(&url, &m, &json, &["--cert", both, "--proto", p(&proto)]),
        &json,
    );
    assert_eq!(u(&v, "summary.totals.grpc.status.0"), 200);
    let st = srv.stop();
    assert_eq!(u(&st, "tls.handshakes"), 5, "{st}");
    assert_eq!(u(&st, "tls.errors"), 0, "{st}");
}

#[test]
fn without_a_client_certificate_the_run_stops_before_load_saying_to_pass_one() {
    let m = mtls(&["localhost"]);
    let srv = server("http", &m);
    let json = m.pki.dir.path().join("r.json");
    let url = format!("https://localhost:{}/", srv.port);
    let o = run(&url, &m, &json, &[]);
    assert_eq!(o.status.code(), Some(1), "stderr:\n{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("asks for a client certificate") && err.contains("--cert FILE"),
        "{err}"
    );
    let st = srv.stop();
    assert_eq!(u(&st, "http.requests"), 0, "load was sent: {st}");
    assert_eq!(u(&st, "tls.handshakes"), 0, "{st}");
    assert_eq!(u(&st, "tls.errors"), 1, "the pre-flight alone: {st}");
}

#[test]
fn a_client_certificate_of_another_ca_is_refused_before_load() {
    let m = mtls(&["localhost"]);
    let srv = server("http", &m);
    let json = m.pki.dir.path().join("r.json");
    let url = format!("https://localhost:{}/", srv.port);
    let args = ["--cert", p(&m.stranger_cert), "--key", p(&m.stranger_key)];
    let o = run(&url, &m, &json, &args);
    assert_eq!(o.status.code(), Some(1), "stderr:\n{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("refused the client certificate"), "{err}");
    let st = srv.stop();
    assert_eq!(u(&st, "http.requests"), 0, "load was sent: {st}");
    assert_eq!(u(&st, "tls.errors"), 1, "the pre-flight alone: {st}");
}

#[test]
fn servername_checks_the_certificate_against_another_name_than_the_address() {
    let m = mtls(&["localhost"]);
    let srv = EchoServer::serve(
        "http",
        &["--tls-cert", p(&m.pki.cert), "--tls-key", p(&m.pki.key)],
    );
    let json = m.pki.dir.path().join("r.json");
    // By its address, the server's certificate (for `localhost` only) does not fit.
    let url = format!("https://127.0.0.1:{}/", srv.port);
    let o = run(&url, &m, &json, &[]);
    assert_eq!(o.status.code(), Some(1), "stderr:\n{}", stderr(&o));
    assert!(
        stderr(&o).contains("not valid for this host name"),
        "{}",
        stderr(&o)
    );
    // --servername (and its ghz name, --cname): checked against `localhost`, and it fits.
    for flag in ["--servername", "--cname"] {
        let v = clean(&run(&url, &m, &json, &[flag, "localhost"]), &json);
        assert_eq!(field(&v, "spec.tls.servername"), "localhost");
    }
    let st = srv.stop();
    assert_eq!(u(&st, "http.requests"), 400, "{st}");
}

#[test]
fn a_scenario_file_gives_the_client_certificate_relative_to_itself() {
    let m = mtls(&["localhost"]);
    let srv = server("http", &m);
    let dir = m.pki.dir.path();
    let file = dir.join("s.toml");
    std::fs::write(
        &file,
        format!(
            "target = \"https://localhost:{}\"\n\n[protocol]\ncacert = \"ca.pem\"\n\
             cert = \"client.pem\"\nkey = \"client.key\"\n\n[users]\ncount = 2\narrive = \"100/s\"\nhold = \"1s\"\n\n\
             [[steps]]\npath = \"/\"\nrepeat = 5\n",
            srv.port
        ),
    )
    .unwrap();
    let json = dir.join("r.json");
    let o = barrage()
        .args(["run", p(&file), "-q", "--json", p(&json)])
        .output()
        .expect("run barrage");
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr(&o));
    let v = read_json(&json);
    assert_eq!(
        u(&v, "summary.errors.total"),
        0,
        "{}",
        field(&v, "summary.errors")
    );
    let st = srv.stop();
    assert_eq!(u(&st, "http.requests"), 10, "{st}");
    assert_eq!(u(&st, "tls.errors"), 0, "{st}");
    // A key without its certificate is a mistake in the file, named with its line.
    std::fs::write(
        &file,
        "target = \"https://localhost:1\"\n\n[protocol]\nkey = \"client.key\"\n\n\
         [users]\ncount = 1\narrive = \"1/s\"\n\n[[steps]]\npath = \"/\"\n",
    )
    .unwrap();
    let o = barrage().args(["validate", p(&file)]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "stderr:\n{}", stderr(&o));
    assert!(stderr(&o).contains("protocol.key"), "{}", stderr(&o));
}

/// Each mistake in the identity flags: exit 2 and one line naming the flag and the fix.
#[test]
fn bad_identity_flags_are_refused_in_one_line_naming_the_flag() {
    let m = mtls(&["localhost"]);
    let url = "https://localhost:1/";
    let missing = m.pki.dir.path().join("nope.pem");
    let cases: [(&[&str], &str); 6] = [
        (&["--cert", p(&missing)], "--cert"),
        (&["--cert", p(&m.client_key)], "no PEM certificate"),
        (&["--cert", p(&m.client_cert)], "pass it with --key FILE"),
        (
            &["--cert", p(&m.client_cert), "--key", p(&m.stranger_key)],
            "does not fit the certificate",
        ),
        (&["--key", p(&m.client_key)], "--cert"),
        (&["--servername", "not a name"], "--servername"),
    ];
    for (args, says) in cases {
        let o = barrage()
            .args([url, "-n", "1", "-q"])
            .args(args)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // On a target without TLS.
    let o = barrage()
        .args([
            "http://127.0.0.1:1/",
            "-n",
            "1",
            "--cert",
            p(&m.client_both),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("apply to TLS targets"),
        "{}",
        stderr(&o)
    );
}

/// nginx (Debian's) with `ssl_verify_client on`, over HTTP/1.1 and HTTP/2: with the client's
/// certificate every request is served and logged as verified (counted exactly in its access
/// log); without one nginx answers each request 400 ("No required SSL certificate was sent"),
/// which barrage counts as failed by status, as many as nginx logged.
#[test]
fn nginx_verifies_the_client_certificate_and_its_log_reconciles() {
    let m = mtls(&["localhost"]);
    let block = format!(
        "log_format mtls '$ssl_client_verify $server_protocol $status';\n\
         server {{\n\
         listen 127.0.0.1:TLSPORT ssl http2;\n\
         ssl_certificate {cert};\n\
         ssl_certificate_key {key};\n\
         ssl_client_certificate {ca};\n\
         ssl_verify_client on;\n\
         access_log DIR/mtls.log mtls;\n\
         location = / {{ return 200 \"hello\"; }}\n\
         }}\n",
        cert = p(&m.pki.cert),
        key = p(&m.pki.key),
        ca = p(&m.pki.ca),
    );
    let Some((nginx, port)) = crate::interop::Nginx::start_extra(&block) else {
        return;
    };
    let url = format!("https://localhost:{port}/");
    let dir = m.pki.dir.path();
    let id = ["--cert", p(&m.client_cert), "--key", p(&m.client_key)];
    let h1 = dir.join("h1.json");
    clean(
        &run(&url, &m, &h1, &[&id[..], &["--http1.1"]].concat()),
        &h1,
    );
    let h2 = dir.join("h2.json");
    let v = clean(&run(&url, &m, &h2, &[&id[..], &["--http2"]].concat()), &h2);
    assert_eq!(u(&v, "summary.totals.h2.connections"), 4);
    // Without a certificate: the handshake passes (nginx asks, does not demand), each
    // request is answered 400.
    let none = dir.join("none.json");
    let o = run(&url, &m, &none, &["--http1.1"]);
    assert_eq!(o.status.code(), Some(1), "stderr:\n{}", stderr(&o));
    let v = read_json(&none);
    let refused = u(&v, "summary.totals.status.400");
    assert!(refused > 0, "{}", field(&v, "summary.totals"));
    assert_eq!(u(&v, "summary.exchanges.completed"), 0);
    // Every request in nginx's log, by verification, protocol and status.
    let log = std::fs::read_to_string(nginx.file("mtls.log")).unwrap();
    let count = |line: &str| log.lines().filter(|l| *l == line).count() as u64;
    assert_eq!(count("SUCCESS HTTP/1.1 200"), 200, "{log}");
    assert_eq!(count("SUCCESS HTTP/2.0 200"), 200, "{log}");
    assert_eq!(count("NONE HTTP/1.1 400"), refused, "{log}");
    assert_eq!(log.lines().count() as u64, 400 + refused, "{log}");
    nginx.stop();
}
