//! `https://` end to end: certificates made with rcgen (tests/pki: a CA, server certificates
//! signed by it for the right name, another name, and an expired one), `barrage serve http`
//! with `--tls-cert/--tls-key` as the target, and the CLI as a user runs it.
//!
//! Verification is on by default: without `--cacert` the test CA is unknown and the run must
//! stop before any load, naming the problem and both ways out; `--insecure` skips it. Every
//! server is a child process killed by its guard; every run is bounded (`-d 1s`) and goes to
//! 127.0.0.1 (`localhost` resolves there).
//!
//! `wss://` is tested against `barrage serve ws --tls-cert/--tls-key` here (and in interop.rs
//! against a Python `websockets` server with TLS).

use crate::common::*;
use crate::pki::{pki, self_signed, Pki, Validity};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// The server and the client

/// `barrage serve http --tls-cert --tls-key` on 127.0.0.1:0 (one thread, `--stats`, a 20 s
/// backstop), killed by its guard; addressed as `localhost`, the name in its certificate.
struct HttpsServer {
    inner: EchoServer,
    port: u16,
}

fn https_server(pki: &Pki) -> HttpsServer {
    let (cert, key) = (pki.cert.to_str().unwrap(), pki.key.to_str().unwrap());
    let inner = EchoServer::serve("http", &["--tls-cert", cert, "--tls-key", key]);
    HttpsServer {
        port: inner.port,
        inner,
    }
}

impl HttpsServer {
    fn url(&self) -> String {
        format!("https://localhost:{}/", self.port)
    }

    /// SIGTERM, a clean exit, and the `--stats` JSON.
    fn stop(self) -> Value {
        self.inner.stop()
    }
}

struct Ran {
    out: Output,
    took: Duration,
}

impl Ran {
    fn code(&self) -> i32 {
        self.out.status.code().expect("exit code")
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
}

fn barrage_run(url: &str, extra: &[&str]) -> Ran {
    let t = Instant::now();
    let out = barrage()
        .arg(url)
        .args(["-c", "5", "-d", "1s", "-t", "1", "-q"])
        .args(extra)
        .output()
        .expect("run barrage");
    Ran {
        out,
        took: t.elapsed(),
    }
}

/// A load run that must complete cleanly over TLS; returns its JSON result.
fn assert_clean_tls_run(r: &Ran, json: &Path) -> Value {
    assert_eq!(r.code(), 0, "stderr:\n{}", r.stderr());
    let v = read_json(json);
    assert_eq!(s(&v, "status"), "completed");
    assert_eq!(
        u(&v, "summary.errors.total"),
        0,
        "{}",
        field(&v, "summary.errors")
    );
    assert!(u(&v, "summary.exchanges.completed") > 0);
    assert!(
        u(&v, "summary.tls_us.count") >= 5,
        "one TLS handshake per connection: {}",
        field(&v, "summary.tls_us")
    );
    assert_eq!(
        u(&v, "summary.totals.status.200"),
        u(&v, "summary.exchanges.completed")
    );
    v
}

/// The run stopped before any load: exit 1, fast, a message naming the problem and `words`,
/// and the server saw handshakes but not one HTTP request.
fn assert_refused_before_load(r: &Ran, server: HttpsServer, words: &[&str]) -> String {
    assert_eq!(r.code(), 1, "stderr:\n{}", r.stderr());
    assert!(
        r.took < Duration::from_secs(5),
        "a verification failure is known at once, not after the load: {:?}",
        r.took
    );
    let err = r.stderr();
    let lower = err.to_lowercase();
    for w in words {
        assert!(
            lower.contains(&w.to_lowercase()),
            "the message does not mention {w:?}:\n{err}"
        );
    }
    let st = server.stop();
    assert_eq!(u(&st, "http.requests"), 0, "load was sent: {st}");
    err
}

// ---------------------------------------------------------------------------------------------
// Tests

#[test]
fn https_with_cacert_completes_and_reconciles_with_the_server() {
    let pki = pki(&["localhost", "127.0.0.1"], Validity::Now);
    let server = https_server(&pki);
    let json = pki.dir.path().join("r.json");
    let ca = pki.ca.to_str().unwrap();
    let r = barrage_run(
        &server.url(),
        &["--cacert", ca, "--json", json.to_str().unwrap()],
    );
    let v = assert_clean_tls_run(&r, &json);
    let st = server.stop();
    let served = u(&st, "http.requests");
    let (completed, sent) = (
        u(&v, "summary.exchanges.completed"),
        u(&v, "summary.exchanges.sent"),
    );
    assert!(
        (completed..=sent).contains(&served),
        "server answered {served} requests; barrage sent {sent}, completed {completed}"
    );
    assert_eq!(u(&st, "http.tls_errors"), 0, "{st}");
    // 5 load connections plus the pre-flight handshake.
    assert_eq!(u(&st, "http.tls_handshakes"), 6, "{st}");
}

#[test]
fn https_to_an_ip_address_with_an_ip_san_works() {
    let pki = pki(&["localhost", "127.0.0.1"], Validity::Now);
    let server = https_server(&pki);
    let json = pki.dir.path().join("r.json");
    let url = format!("https://127.0.0.1:{}/", server.port);
    let r = barrage_run(
        &url,
        &[
            "--cacert",
            pki.ca.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_clean_tls_run(&r, &json);
}

#[test]
fn https_without_cacert_stops_before_load_naming_the_unknown_ca() {
    let pki = pki(&["localhost"], Validity::Now);
    let server = https_server(&pki);
    let r = barrage_run(&server.url(), &[]);
    let err = assert_refused_before_load(&r, server, &["--cacert", "--insecure"]);
    let lower = err.to_lowercase();
    assert!(
        lower.contains("trusted ca")
            || lower.contains("unknown issuer")
            || lower.contains("unknownissuer"),
        "the message does not name the CA problem:\n{err}"
    );
    assert!(
        err.contains("localhost"),
        "the message names the target:\n{err}"
    );
}

#[test]
fn https_verification_failure_still_writes_a_failed_json_result() {
    let pki = pki(&["localhost"], Validity::Now);
    let server = https_server(&pki);
    let json = pki.dir.path().join("r.json");
    let r = barrage_run(&server.url(), &["--json", json.to_str().unwrap()]);
    assert_eq!(r.code(), 1, "stderr:\n{}", r.stderr());
    drop(server);
    let v = read_json(&json);
    assert_eq!(s(&v, "status"), "failed");
    assert!(s(&v, "message").contains("CA"), "{v}");
}

#[test]
fn https_insecure_works_without_the_ca() {
    let pki = pki(&["localhost"], Validity::Now);
    let server = https_server(&pki);
    let json = pki.dir.path().join("r.json");
    let r = barrage_run(
        &server.url(),
        &["--insecure", "--json", json.to_str().unwrap()],
    );
    assert_clean_tls_run(&r, &json);
}

#[test]
fn https_insecure_accepts_a_wrong_name_and_an_expired_certificate() {
    for (names, validity) in [
        (&["example.invalid"][..], Validity::Now),
        (&["localhost"][..], Validity::Expired),
    ] {
        let pki = pki(names, validity);
        let server = https_server(&pki);
        let json = pki.dir.path().join("r.json");
        let r = barrage_run(
            &server.url(),
            &["--insecure", "--json", json.to_str().unwrap()],
        );
        assert_clean_tls_run(&r, &json);
    }
}

#[test]
fn https_certificate_for_another_name_stops_naming_the_host_name() {
    let pki = pki(&["example.invalid"], Validity::Now);
    let server = https_server(&pki);
    let r = barrage_run(&server.url(), &["--cacert", pki.ca.to_str().unwrap()]);
    let err = assert_refused_before_load(&r, server, &["host name", "localhost", "--insecure"]);
    assert!(
        !err.to_lowercase().contains("expired"),
        "a name mismatch is not an expiry:\n{err}"
    );
}

#[test]
fn https_expired_certificate_stops_naming_the_expiry() {
    let pki = pki(&["localhost"], Validity::Expired);
    let server = https_server(&pki);
    let r = barrage_run(&server.url(), &["--cacert", pki.ca.to_str().unwrap()]);
    assert_refused_before_load(&r, server, &["expired", "--insecure"]);
}

#[test]
fn https_to_a_plain_http_port_stops_before_load() {
    // `serve http` without TLS answers the ClientHello with an HTTP error, not a ServerHello.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = StdCommand::new(bin())
        .args(["serve", "http", "--listen", "127.0.0.1:0", "--threads", "1"])
        .args(["--exit-after", "20s"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn barrage serve http");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let _guard = Guard(child);
    let mut first = String::new();
    stdout.read_line(&mut first).expect("banner");
    let port: u16 = first
        .split_once("listening on 127.0.0.1:")
        .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected server banner: {first:?}"));
    let json = dir.path().join("r.json");
    let r = barrage_run(
        &format!("https://127.0.0.1:{port}/"),
        &["--json", json.to_str().unwrap()],
    );
    assert_eq!(r.code(), 1, "stderr:\n{}", r.stderr());
    assert!(r.took < Duration::from_secs(5), "{:?}", r.took);
    // It says what the server is and what to use, not to skip verification.
    let err = r.stderr();
    assert!(
        err.contains("answered the TLS hello in plain text ('HTTP/1.1 400")
            && err.contains("use http://"),
        "the message names the plain HTTP answer and http://:\n{err}"
    );
    assert!(!err.contains("--insecure"), "{err}");
}

#[test]
fn http_to_a_tls_port_says_to_use_https() {
    let pki = pki(&["localhost"], Validity::Now);
    let server = https_server(&pki);
    let json = pki.dir.path().join("r.json");
    let r = barrage_run(
        &format!("http://localhost:{}/", server.port),
        &["--json", json.to_str().unwrap()],
    );
    let err = r.stderr();
    // Every exchange fails as a protocol error (the TLS server answers with an alert record).
    let v = read_json(&json);
    assert!(
        u(&v, "summary.errors.protocol") >= 1,
        "{}",
        field(&v, "summary.errors")
    );
    assert_eq!(u(&v, "summary.exchanges.completed"), 0);
    let message = v.get("message").and_then(Value::as_str).unwrap_or_default();
    assert!(
        err.contains("https://") || message.contains("https://"),
        "nothing tells the user to use https://; exit {}, stderr:\n{err}\nmessage: {message:?}",
        r.code(),
    );
}

#[test]
fn cacert_that_does_not_exist_is_a_usage_error_naming_the_flag() {
    let pki = pki(&["localhost"], Validity::Now);
    let server = https_server(&pki);
    let missing = pki.dir.path().join("nope.pem");
    let r = barrage_run(&server.url(), &["--cacert", missing.to_str().unwrap()]);
    assert_eq!(r.code(), 2, "stderr:\n{}", r.stderr());
    assert!(r.stderr().contains("--cacert"), "{}", r.stderr());
}

#[test]
fn cacert_without_a_certificate_is_a_usage_error_naming_the_flag() {
    let pki = pki(&["localhost"], Validity::Now);
    let server = https_server(&pki);
    // A key is not a certificate.
    let r = barrage_run(&server.url(), &["--cacert", pki.key.to_str().unwrap()]);
    assert_eq!(r.code(), 2, "stderr:\n{}", r.stderr());
    assert!(r.stderr().contains("--cacert"), "{}", r.stderr());
}

// ---------------------------------------------------------------------------------------------
// Pinning: `--cacert` holding the server's own (CA:TRUE, self-signed) certificate

#[test]
fn self_signed_ca_true_certificate_given_with_cacert_is_accepted_not_ca_used_as_end_entity() {
    let pki = self_signed(&["localhost", "127.0.0.1"], Validity::Now);
    let server = https_server(&pki);
    let json = pki.dir.path().join("r.json");
    let r = barrage_run(
        &server.url(),
        &[
            "--cacert",
            pki.ca.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let v = assert_clean_tls_run(&r, &json);
    let st = server.stop();
    let served = u(&st, "http.requests");
    assert!(
        (u(&v, "summary.exchanges.completed")..=u(&v, "summary.exchanges.sent")).contains(&served),
        "server answered {served}: {}",
        field(&v, "summary.exchanges")
    );
    assert_eq!(u(&st, "http.tls_errors"), 0, "{st}");
}

#[test]
fn pinned_self_signed_certificate_for_another_name_still_fails_on_the_name() {
    let pki = self_signed(&["example.invalid"], Validity::Now);
    let server = https_server(&pki);
    let r = barrage_run(&server.url(), &["--cacert", pki.ca.to_str().unwrap()]);
    assert_refused_before_load(&r, server, &["host name", "localhost", "--insecure"]);
}

#[test]
fn pinned_self_signed_certificate_that_expired_still_fails_on_the_expiry() {
    let pki = self_signed(&["localhost"], Validity::Expired);
    let server = https_server(&pki);
    let r = barrage_run(&server.url(), &["--cacert", pki.ca.to_str().unwrap()]);
    assert_refused_before_load(&r, server, &["expired", "--insecure"]);
}

#[test]
fn a_different_self_signed_certificate_given_with_cacert_is_not_a_pin() {
    let served = self_signed(&["localhost"], Validity::Now);
    let other = self_signed(&["localhost"], Validity::Now);
    let server = https_server(&served);
    let r = barrage_run(&server.url(), &["--cacert", other.ca.to_str().unwrap()]);
    assert_refused_before_load(&r, server, &["--cacert", "--insecure"]);
}

// ---------------------------------------------------------------------------------------------
// wss:// against `serve ws --tls-cert --tls-key`

#[test]
fn wss_against_serve_ws_with_tls_reconciles_message_counts_exactly() {
    let pki = pki(&["localhost", "127.0.0.1"], Validity::Now);
    let (cert, key) = (pki.cert.to_str().unwrap(), pki.key.to_str().unwrap());
    let server = EchoServer::serve("ws", &["--tls-cert", cert, "--tls-key", key]);
    let json = pki.dir.path().join("r.json");
    let r = barrage_run(
        &format!("wss://localhost:{}/", server.port),
        &[
            "--cacert",
            pki.ca.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code(), 0, "stderr:\n{}", r.stderr());
    let v = read_json(&json);
    assert_eq!(s(&v, "status"), "completed");
    assert_eq!(
        u(&v, "summary.errors.total"),
        0,
        "{}",
        field(&v, "summary.errors")
    );
    let st = server.stop();
    let (sent, completed) = (
        u(&v, "summary.exchanges.sent"),
        u(&v, "summary.exchanges.completed"),
    );
    assert!(completed > 0);
    // Ping-pong with a drain: every message sent was echoed and counted on both sides.
    assert_eq!(sent, completed, "{}", field(&v, "summary.exchanges"));
    assert_eq!(u(&st, "ws.messages_in"), sent, "{st}");
    assert_eq!(u(&st, "ws.messages_out"), completed, "{st}");
    assert_eq!(u(&st, "ws.handshakes"), 5, "{st}");
    assert_eq!(u(&st, "ws.protocol_errors"), 0, "{st}");
    // 5 load connections plus the pre-flight handshake.
    assert_eq!(u(&st, "tls.handshakes"), 6, "{st}");
    assert_eq!(u(&st, "tls.errors"), 0, "{st}");
}

#[test]
fn serve_echo_and_ws_accept_tls_files_instead_of_rejecting_them() {
    let pki = pki(&["localhost"], Validity::Now);
    let (cert, key) = (pki.cert.to_str().unwrap(), pki.key.to_str().unwrap());
    for kind in ["echo", "ws"] {
        let server = EchoServer::serve(kind, &["--tls-cert", cert, "--tls-key", key]);
        let st = server.stop();
        assert_eq!(u(&st, "tls.handshakes"), 0, "{kind}: {st}");
    }
    // An unusable key is refused at start, naming the file (not after the first client).
    let out = barrage()
        .args(["serve", "ws", "--listen", "127.0.0.1:0", "--tls-cert", cert])
        .args(["--tls-key", pki.ca.to_str().unwrap(), "--exit-after", "5s"])
        .output()
        .expect("run serve ws");
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ca.pem"), "{err}");
}
