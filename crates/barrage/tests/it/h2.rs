//! HTTP/2 end to end: against `barrage serve h2` (the `h2` crate, no code shared with the
//! client) and nginx (`http2`, cleartext and TLS), counts reconciled exactly with what each
//! server says it served: the reference server's counters, nginx's access log by status.

use crate::common::*;
use crate::pki;
use serde_json::Value;
use std::process::{Command as StdCommand, Stdio};

/// Streams in flight on a few connections, two routes: every request the server answered is
/// one barrage completed or failed by its status, exactly.
#[test]
fn serve_h2_streams_reconcile_with_the_servers_counts() {
    let server = EchoServer::serve("h2", &[]);
    let dir = tempfile::tempdir().unwrap();
    let ok = run_json(
        &[
            server.url(),
            "-c",
            "4",
            "--streams",
            "8",
            "-n",
            "3000",
            "-t",
            "2",
        ],
        &dir.path().join("ok.json"),
    );
    conserved(&ok);
    assert_eq!(u(&ok, "summary.exchanges.completed"), 3000);
    assert_eq!(u(&ok, "summary.totals.h2.connections"), 4);
    assert_eq!(s(&ok, "config.protocol"), "h2c");
    // Frames written, exactly: a HEADERS per GET; per connection its SETTINGS, the
    // WINDOW_UPDATE that raises its window, the acknowledgement of the server's SETTINGS,
    // and the GOAWAY that ends it.
    assert_eq!(u(&ok, "summary.totals.h2.frames_written"), 3000 + 4 * 4);
    let url503 = format!("{}status/503", server.url());
    let bad = run_json(
        &[
            &url503,
            "-c",
            "2",
            "--streams",
            "4",
            "-n",
            "200",
            "--lenient-exit",
        ],
        &dir.path().join("bad.json"),
    );
    conserved(&bad);
    assert_eq!(u(&bad, "summary.errors.unexpected_status"), 200);
    // A body larger than the default windows (65,535 bytes), in both directions.
    let body = dir.path().join("body");
    std::fs::write(&body, vec![b'b'; 200_000]).unwrap();
    let big = format!("{}bytes/150000", server.url());
    let at = format!("@{}", body.display());
    let post = run_json(
        &[
            &big,
            "-X",
            "POST",
            "--body",
            &at,
            "-c",
            "2",
            "--streams",
            "3",
            "-n",
            "30",
        ],
        &dir.path().join("post.json"),
    );
    conserved(&post);
    assert_eq!(u(&post, "summary.exchanges.completed"), 30);
    let stats = server.stop();
    assert_eq!(u(&stats, "http.requests"), 3000 + 200 + 30);
    assert_eq!(u(&stats, "http.responses_2xx"), 3030);
    assert_eq!(u(&stats, "http.responses_5xx"), 200);
    assert_eq!(u(&stats, "connections_accepted"), 4 + 2 + 2);
}

/// The server's knobs: two streams at most (barrage keeps `--streams 16` under it, so no
/// stream is refused) and a GOAWAY every 100 requests (barrage finishes what the server took
/// and opens a new connection): no error, every request answered once.
#[test]
fn serve_h2_stream_limit_and_goaway_cost_no_request() {
    let server = EchoServer::serve("h2", &["--max-streams", "2", "--goaway-after", "100"]);
    let dir = tempfile::tempdir().unwrap();
    let v = run_json(
        &[
            server.url(),
            "-c",
            "2",
            "--streams",
            "16",
            "-n",
            "1000",
            "-t",
            "1",
        ],
        &dir.path().join("r.json"),
    );
    conserved(&v);
    assert_eq!(
        u(&v, "summary.errors.total"),
        0,
        "{}",
        field(&v, "summary.errors")
    );
    assert_eq!(u(&v, "summary.exchanges.completed"), 1000);
    assert!(
        u(&v, "summary.totals.h2.goaways.0") >= 9,
        "{}",
        field(&v, "summary.totals.h2")
    );
    let stats = server.stop();
    assert_eq!(u(&stats, "http.requests"), 1000);
    // A connection opened as the run ended may not have finished its handshake.
    let conns = u(&stats, "connections_accepted");
    assert_eq!(conns, u(&v, "summary.totals.connects"));
    assert!(
        u(&v, "summary.totals.h2.connections") >= 10,
        "1,000 requests at 100 each"
    );
}

/// `https://` offers h2 and http/1.1 by ALPN: the h2 server gets HTTP/2, the HTTP/1.1 server
/// HTTP/1.1, and each run counts its connections by what they speak. A version the server
/// refuses is one line naming the flag.
#[test]
fn https_speaks_what_alpn_chose_and_a_refused_version_is_one_line() {
    let p = pki::pki(&["127.0.0.1"], pki::Validity::Now);
    let (cert, key, ca) = (
        p.cert.to_str().unwrap(),
        p.key.to_str().unwrap(),
        p.ca.to_str().unwrap(),
    );
    let tls = ["--tls-cert", cert, "--tls-key", key];
    let h2 = EchoServer::serve("h2", &tls);
    let h1 = EchoServer::serve("http", &tls);
    let dir = tempfile::tempdir().unwrap();
    let h2_url = format!("https://127.0.0.1:{}/", h2.port);
    let h1_url = format!("https://127.0.0.1:{}/", h1.port);
    let a = run_json(
        &[&h2_url, "--cacert", ca, "-c", "3", "-n", "300"],
        &dir.path().join("a.json"),
    );
    conserved(&a);
    assert_eq!(u(&a, "summary.exchanges.completed"), 300);
    assert_eq!(u(&a, "summary.totals.h2.connections"), 3);
    let b = run_json(
        &[&h1_url, "--cacert", ca, "-c", "3", "-n", "300"],
        &dir.path().join("b.json"),
    );
    assert_eq!(u(&b, "summary.exchanges.completed"), 300);
    assert_eq!(u(&b, "summary.totals.h2.http1_connections"), 3);
    for (url, flag, words) in [
        (&h1_url, "--http2", "drop --http2"),
        (&h2_url, "--http1.1", "drop --http1.1"),
    ] {
        let out = barrage()
            .args([url.as_str(), flag, "--cacert", ca, "-n", "10"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("ALPN") && err.contains(words), "{flag}: {err}");
    }
    assert_eq!(u(&h2.stop(), "http.requests"), 300);
    assert_eq!(u(&h1.stop(), "http.requests"), 300);
}

/// Flags that do not fit are refused before any load, each naming itself.
#[test]
fn http2_flags_that_do_not_fit_are_one_line() {
    for (args, flag) in [
        (&["tcp://127.0.0.1:9", "--streams", "4"][..], "--streams"),
        (&["http://127.0.0.1:9/", "--streams", "4"], "--streams"),
        (&["http://127.0.0.1:9/", "--http1.1"], "--http1.1"),
        (&["h2c://127.0.0.1:9/", "--http1.1"], "--http1.1"),
        (&["https://127.0.0.1:9/", "--http2", "--http1.1"], "--http2"),
        (&["h2c://127.0.0.1:9/", "--streams", "0"], "--streams"),
        (
            &["h2c://127.0.0.1:9/", "--streams", "4", "--pipeline", "2"],
            "--pipeline",
        ),
        (
            &["h2c://127.0.0.1:9/", "-H", "Connection: close"],
            "-H/--header",
        ),
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
// nginx

const NGINX_H2: &str = r#"
worker_processes 1;
error_log DIR/error.log;
pid DIR/nginx.pid;
events { worker_connections 1024; }
http {
    access_log DIR/access.log;
    client_body_temp_path DIR/client_body;
    proxy_temp_path DIR/proxy;
    fastcgi_temp_path DIR/fastcgi;
    uwsgi_temp_path DIR/uwsgi;
    scgi_temp_path DIR/scgi;
    default_type text/plain;
    server {
        listen 127.0.0.1:PORT http2;
        listen 127.0.0.1:TLSPORT ssl http2;
        ssl_certificate CERT;
        ssl_certificate_key KEY;
        keepalive_requests 100000000;
        root DIR/www;
        location = / { return 200 "hello"; }
        location = /missing { return 404 "no"; }
        location = /file { add_header Server-Timing "nginx;dur=$request_time" always; }
        location = /echo { client_max_body_size 10m; proxy_pass http://127.0.0.1:PORT/; }
    }
    server {
        # A GOAWAY after 50 requests on each connection.
        listen 127.0.0.1:GOPORT http2;
        keepalive_requests 50;
        location = / { return 200 "hello"; }
    }
}
"#;

struct NginxH2 {
    _child: Guard,
    port: u16,
    tls_port: u16,
    go_port: u16,
    dir: tempfile::TempDir,
    _pki: pki::Pki,
}

fn nginx_bin() -> Option<std::path::PathBuf> {
    ["/usr/sbin/nginx", "/usr/local/sbin/nginx"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.is_file())
        .or_else(|| on_path("nginx").then(|| "nginx".into()))
}

impl NginxH2 {
    fn start() -> Option<NginxH2> {
        let bin = nginx_bin();
        if !available("nginx", bin.is_some()) {
            return None;
        }
        let p = pki::pki(&["127.0.0.1"], pki::Validity::Now);
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("www")).unwrap();
        std::fs::write(d.join("www/file"), vec![b'f'; 100_000]).unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            for q in [d.to_path_buf(), d.join("www")] {
                std::fs::set_permissions(&q, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        for _ in 0..3 {
            let (port, tls_port, go_port) = (refused_port(), refused_port(), refused_port());
            let conf = NGINX_H2
                .replace("DIR", d.to_str().unwrap())
                .replace("TLSPORT", &tls_port.to_string())
                .replace("GOPORT", &go_port.to_string())
                .replace("PORT", &port.to_string())
                .replace("CERT", p.cert.to_str().unwrap())
                .replace("KEY", p.key.to_str().unwrap());
            std::fs::write(d.join("nginx.conf"), conf).unwrap();
            let mut child = StdCommand::new(bin.as_ref().unwrap())
                .arg("-p")
                .arg(d)
                .arg("-c")
                .arg(d.join("nginx.conf"))
                .arg("-e")
                .arg(d.join("error.log"))
                .args(["-g", "daemon off; master_process off;"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("spawn nginx");
            if wait_listening(&mut child, port)
                && wait_listening(&mut child, tls_port)
                && wait_listening(&mut child, go_port)
            {
                return Some(NginxH2 {
                    _child: Guard(child),
                    port,
                    tls_port,
                    go_port,
                    dir,
                    _pki: p,
                });
            }
            drop(Guard(child));
        }
        let log = std::fs::read_to_string(d.join("error.log")).unwrap_or_default();
        panic!("nginx did not start; error.log:\n{log}");
    }

    /// Requests in the access log by (protocol, status), read afresh.
    fn log(&self) -> std::collections::BTreeMap<(String, u16), u64> {
        let text = std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default();
        let mut by = std::collections::BTreeMap::new();
        for line in text.lines() {
            // combined: ... "GET /path HTTP/2.0" STATUS BYTES ...
            let mut parts = line.split('"');
            let req = parts.nth(1).unwrap_or_default();
            let proto = req.rsplit(' ').next().unwrap_or_default().to_string();
            let status = parts
                .next()
                .and_then(|r| r.split_whitespace().next())
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            *by.entry((proto, status)).or_insert(0) += 1;
        }
        by
    }
}

fn h2_log(n: &NginxH2, status: u16) -> u64 {
    n.log()
        .get(&("HTTP/2.0".to_string(), status))
        .copied()
        .unwrap_or(0)
}

/// h2c with prior knowledge: every request nginx logged (HTTP/2.0, by status) is one barrage
/// counted, and the Server-Timing of a file's response is recorded for each.
#[test]
fn nginx_h2c_reconciles_with_its_access_log() {
    let Some(n) = NginxH2::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let url = |p: &str| format!("h2c://127.0.0.1:{}{p}", n.port);
    let a = run_json(
        &[
            &url("/"),
            "-c",
            "4",
            "--streams",
            "10",
            "-n",
            "4000",
            "-t",
            "2",
        ],
        &dir.path().join("a.json"),
    );
    conserved(&a);
    assert_eq!(u(&a, "summary.exchanges.completed"), 4000);
    let b = run_json(
        // Every request a 404: a failed run (exit 1) but for --lenient-exit.
        &[
            &url("/missing"),
            "-c",
            "2",
            "--streams",
            "5",
            "-n",
            "100",
            "--lenient-exit",
        ],
        &dir.path().join("b.json"),
    );
    assert_eq!(u(&b, "summary.errors.unexpected_status"), 100);
    let f = run_json(
        &[&url("/file"), "-c", "2", "--streams", "4", "-n", "200"],
        &dir.path().join("f.json"),
    );
    assert_eq!(u(&f, "summary.exchanges.completed"), 200);
    assert_eq!(
        u(&f, "summary.server_us.count"),
        200,
        "{}",
        field(&f, "summary")
    );
    // The 100 KB file through a 16 KiB stream window and the connection's initial 65,535
    // (--h2-window, --h2-conn-window): nginx waits for each WINDOW_UPDATE, every body arrives.
    let small = run_json(
        &[
            &url("/file"),
            "-c",
            "2",
            "--streams",
            "4",
            "-n",
            "100",
            "--h2-window",
            "16KiB",
            "--h2-conn-window",
            "65535",
        ],
        &dir.path().join("small.json"),
    );
    assert_eq!(u(&small, "summary.exchanges.completed"), 100);
    assert_eq!(u(&small, "summary.errors.total"), 0);
    assert!(u(&small, "summary.totals.h2.frames_written") >= 100 + 100 * 5);
    assert_eq!(h2_log(&n, 200), 4000 + 200 + 100);
    assert_eq!(h2_log(&n, 404), 100);
    // nginx indexes nothing in its HPACK table; the block is still smaller than HTTP/1.1.
    let h = field(&a, "summary.totals.h2");
    assert!(
        u(&a, "summary.totals.h2.header_bytes") < u(&a, "summary.totals.h2.header_bytes_plain"),
        "{h}"
    );
}

/// TLS with ALPN: `https://` speaks h2 to nginx by default; `--http1.1` speaks HTTP/1.1 to
/// the same port; the log tells them apart.
#[test]
fn nginx_https_negotiates_h2_and_http1_1_on_request() {
    let Some(n) = NginxH2::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("https://127.0.0.1:{}/", n.tls_port);
    let ca = n._pki.ca.to_str().unwrap().to_string();
    let a = run_json(
        &[
            &url,
            "--cacert",
            &ca,
            "-c",
            "3",
            "--streams",
            "4",
            "-n",
            "600",
        ],
        &dir.path().join("a.json"),
    );
    conserved(&a);
    assert_eq!(u(&a, "summary.totals.h2.connections"), 3);
    let b = run_json(
        &[&url, "--cacert", &ca, "--http1.1", "-c", "2", "-n", "150"],
        &dir.path().join("b.json"),
    );
    conserved(&b);
    assert_eq!(h2_log(&n, 200), 600);
    let h1 = n
        .log()
        .get(&("HTTP/1.1".to_string(), 200))
        .copied()
        .unwrap_or(0);
    assert_eq!(h1, 150);
}

/// nginx ends each connection after 50 requests with a GOAWAY: the streams it did not take
/// fail as `goaway`, the rest complete, and what completed is what nginx logged.
#[test]
fn nginx_goaway_after_keepalive_requests_reconciles() {
    let Some(n) = NginxH2::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("h2c://127.0.0.1:{}/", n.go_port);
    let v = run_json(
        &[&url, "-c", "2", "--streams", "8", "-n", "1000", "-t", "1"],
        &dir.path().join("v.json"),
    );
    conserved(&v);
    let completed = u(&v, "summary.exchanges.completed");
    let goaway = u(&v, "summary.totals.failed_by.goaway");
    assert_eq!(completed + goaway, 1000, "{}", field(&v, "summary"));
    assert!(u(&v, "summary.totals.h2.goaways.0") >= 1);
    assert_eq!(h2_log(&n, 200), completed);
}

/// A scenario over h2c: a header captured from one response (`content-length`, decoded from
/// HPACK) builds the next request's path; a POST with a body; a step that expects a 404. Every
/// step's count reconciles with the server's.
#[test]
fn a_scenario_over_h2c_captures_a_header_and_reconciles() {
    let server = EchoServer::serve("h2", &[]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("flow.toml");
    let text = format!(
        r#"
target = "h2c://127.0.0.1:{}"
[users]
count = 8
arrive = "200/s"
hold = "300ms"
[[steps]]
name = "first"
path = "/bytes/7"
status = "200"
capture.len = {{ header = "content-length" }}
[[steps]]
name = "second"
method = "POST"
path = "/bytes/{{len}}{{len}}"
body = 'user {{user}}'
status = "200"
[[steps]]
name = "missing"
path = "/status/404"
status = "404"
"#,
        server.port
    );
    std::fs::write(&file, text).unwrap();
    let v = run_json(&["run", file.to_str().unwrap()], &dir.path().join("r.json"));
    assert_eq!(
        u(&v, "summary.errors.total"),
        0,
        "{}",
        field(&v, "summary.errors")
    );
    let steps = v["summary"]["steps"].as_array().unwrap();
    for (i, name) in ["first", "second", "missing"].iter().enumerate() {
        assert_eq!(steps[i]["name"], *name);
        assert_eq!(
            steps[i]["completed"].as_u64(),
            Some(8),
            "{name}: {}",
            steps[i]
        );
    }
    // The second step asked for /bytes/77: 77 bytes each, so the capture worked.
    let stats = server.stop();
    assert_eq!(u(&stats, "http.requests"), 24);
    assert_eq!(u(&stats, "http.responses_2xx"), 16);
    assert_eq!(u(&stats, "http.responses_4xx"), 8);
}

/// Open loop against a server that allows one stream at a time and answers in 20 ms: of 200
/// messages due in a second at most ~50 find the stream free, the others wait for it (counted;
/// a slower machine only makes more wait). With streams to spare, none waits.
#[test]
fn open_loop_messages_wait_for_a_stream_when_the_server_allows_too_few() {
    let dir = tempfile::tempdir().unwrap();
    let one = EchoServer::serve("h2", &["--max-streams", "1", "--delay", "20ms"]);
    let v = run_json(
        &[one.url(), "-c", "1", "--rate", "200", "-d", "1s", "-t", "1"],
        &dir.path().join("one.json"),
    );
    let waits = u(&v, "summary.totals.h2.stream_waits");
    assert!(waits >= 100, "{}", field(&v, "summary.totals.h2"));
    assert_eq!(u(&v, "summary.totals.h2.streams_granted"), 1);
    let many = EchoServer::serve("h2", &["--delay", "20ms"]);
    let v = run_json(
        &[
            many.url(),
            "-c",
            "1",
            "--rate",
            "200",
            "-d",
            "1s",
            "-t",
            "1",
        ],
        &dir.path().join("many.json"),
    );
    assert_eq!(
        u(&v, "summary.totals.h2.stream_waits"),
        0,
        "{}",
        field(&v, "summary.totals.h2")
    );
    assert_eq!(u(&v, "summary.errors.total"), 0);
}

// -------------------------------------------------------------------------------------------
// Uploads to Go's net/http (issue 42 item 2)

/// Go's net/http serving h2c (`tests/h2c-go/bin/h2c-upload`, built by `.ci/install`): it
/// counts the request bodies it read whole and says so on `/stats`.
struct GoUpload {
    _child: Guard,
    port: u16,
}

impl GoUpload {
    fn start() -> Option<GoUpload> {
        use std::io::BufRead;
        let bin = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/h2c-go/bin/h2c-upload");
        if !available("tests/h2c-go's h2c-upload (Go)", bin.is_file()) {
            return None;
        }
        let mut child = StdCommand::new(&bin)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start h2c-upload");
        let mut line = String::new();
        let out = child.stdout.take().unwrap();
        std::io::BufReader::new(out).read_line(&mut line).unwrap();
        let port = line
            .strip_prefix("listening ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("h2c-upload said {line:?}"));
        Some(GoUpload {
            _child: Guard(child),
            port,
        })
    }

    /// requests, bytes, connections, bodies not whole (each call is a connection).
    fn stats(&self) -> [u64; 4] {
        let (status, body) = http_get(self.port, "/stats").expect("/stats");
        assert_eq!(status, 200, "{body}");
        let w: Vec<u64> = body
            .split_whitespace()
            .skip(1)
            .step_by(2)
            .map(|n| n.parse().unwrap())
            .collect();
        [w[0], w[1], w[2], w[3]]
    }
}

/// Uploads of 1 KiB to 16 MiB, 4 streams on each of 2 connections, to Go's own HTTP/2
/// server (flow control by its 1 MiB windows): every request completes, on the 2 connections
/// asked for, and the server read exactly the bytes sent. Before issue 42 the DATA a
/// WINDOW_UPDATE let out counted against the cap on owed control answers, and 1 MiB uploads
/// failed as `protocol` blaming the server, each failure a new connection.
#[test]
fn go_net_http_h2c_receives_every_upload_byte_for_byte() {
    let Some(go) = GoUpload::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    for (size, n) in [
        (1u64 << 10, 200u64),
        (64 << 10, 100),
        (1 << 20, 40),
        (16 << 20, 8),
    ] {
        let body = dir.path().join(format!("body-{size}"));
        std::fs::write(&body, vec![b'b'; size as usize]).unwrap();
        let before = go.stats();
        let json = dir.path().join(format!("up-{size}.json"));
        // Longer than the usual bound: the result echoes the body (`spec.protocol.body`,
        // 16 MiB of JSON string), which an unoptimized build on a busy machine takes
        // seconds to write.
        let out = barrage()
            .timeout(std::time::Duration::from_secs(180))
            .args([
                &format!("h2c://127.0.0.1:{}/upload", go.port),
                "-X",
                "POST",
                "--body",
                &format!("@{}", body.display()),
                "-c",
                "2",
                "--streams",
                "4",
                "-n",
                &n.to_string(),
                "--timeout",
                "30s",
                "-q",
                "--json",
            ])
            .arg(&json)
            .output()
            .expect("run barrage");
        assert!(
            json.exists(),
            "{size}: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let v = read_json(&json);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{size}: {} {}: {}",
            field(&v, "status"),
            field(&v, "message"),
            String::from_utf8_lossy(&out.stderr)
        );
        let after = go.stats();
        let e = field(&v, "summary.exchanges");
        assert_eq!(u(&v, "summary.exchanges.completed"), n, "{size}: {e}");
        assert_eq!(u(&v, "summary.exchanges.failed"), 0, "{size}: {e}");
        assert_eq!(u(&v, "summary.connections.attempts"), 2, "{size}");
        assert_eq!(u(&v, "summary.totals.status.200"), n, "{size}");
        assert_eq!(after[0] - before[0], n, "{size}: requests");
        assert_eq!(after[1] - before[1], n * size, "{size}: bytes received");
        assert_eq!(
            after[2] - before[2],
            2 + 1,
            "{size}: connections (and a /stats)"
        );
        assert_eq!(after[3], 0, "{size}: bodies cut short");
    }
}

/// Issue 42, item 6: h2spec (`tests/h2spec/bin/h2spec`, pinned by tests/h2spec/go.mod and built
/// by `.ci/install`; skipped, failing under CI, when it was not built) against `barrage serve
/// h2`, every case including the strict ones (`-S`): clear text and TLS with a stream limit
/// advertised, all 146 pass; with the default knobs the one case that needs an advertised
/// stream limit (5.1.2, exceeding SETTINGS_MAX_CONCURRENT_STREAMS) is skipped by h2spec and
/// the other 145 pass. Before, 3.5/2 (an invalid preface: the server reset the connection
/// instead of GOAWAY and close) failed.
#[test]
fn reference_servers_pass_h2spec() {
    let h2spec =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/h2spec/bin/h2spec");
    if !available("h2spec (tests/h2spec/bin)", h2spec.is_file()) {
        return;
    }
    let p = pki::pki(&["127.0.0.1"], pki::Validity::Now);
    let (cert, key) = (p.cert.to_str().unwrap(), p.key.to_str().unwrap());
    let limit = ["--max-streams", "100"];
    let tls = ["--max-streams", "100", "--tls-cert", cert, "--tls-key", key];
    let runs: [(&[&str], &[&str], &str); 3] = [
        (&[], &[], "146 tests, 145 passed, 1 skipped, 0 failed"),
        (&limit, &[], "146 tests, 146 passed, 0 skipped, 0 failed"),
        (
            &tls,
            &["-t", "-k"],
            "146 tests, 146 passed, 0 skipped, 0 failed",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("h2spec.xml");
    for (knobs, flags, expected) in runs {
        let server = EchoServer::serve("h2", knobs);
        let port = server.port.to_string();
        let out = StdCommand::new(&h2spec)
            .args(["-h", "127.0.0.1", "-p", &port, "-o", "10", "-S", "-j"])
            .arg(&junit)
            .args(flags)
            .stdin(Stdio::null())
            .output()
            .expect("h2spec runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let last = text.lines().rev().find(|l| !l.trim().is_empty());
        assert_eq!(
            last,
            Some(expected),
            "serve h2 {knobs:?}, h2spec {flags:?}:\n{text}"
        );
        assert!(out.status.success(), "{text}");
        // Which cases were skipped, by their section (the JUnit report's package).
        let xml = std::fs::read_to_string(&junit).unwrap();
        let skipped: Vec<&str> = xml
            .match_indices("<skipped")
            .map(|(at, _)| {
                let case = &xml[..at][xml[..at].rfind("<testcase").unwrap()..];
                case.split("package=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
            })
            .collect();
        let want: &[&str] = if knobs.is_empty() {
            &["http2/5.1.2"]
        } else {
            &[]
        };
        assert_eq!(skipped, want, "serve h2 {knobs:?}");
        server.stop();
    }
}

/// `--h2-window`, `--h2-conn-window`, `--h2-header-table` (issue 45, item 6), against the
/// reference server: 150,000-byte bodies through a 16 KiB stream window and the connection's
/// initial 65,535 complete exactly, each refilled by the client's WINDOW_UPDATEs (many more
/// frames written than with the default 1 GiB windows), and a header table of 0 leaves the
/// server no dynamic table to index into. Each flag is refused where HTTP/2 is not spoken, and
/// out of its range.
#[test]
fn small_h2_windows_and_no_header_table_complete_every_body() {
    let server = EchoServer::serve("h2", &[]);
    let dir = tempfile::tempdir().unwrap();
    let big = format!("{}bytes/150000", server.url());
    let base = [big.as_str(), "-c", "2", "--streams", "2", "-n", "40"];
    let plain = run_json(&base, &dir.path().join("plain.json"));
    let small = run_json(
        &[
            &base[..],
            &[
                "--h2-window",
                "16KiB",
                "--h2-conn-window",
                "65535",
                "--h2-header-table",
                "0",
            ],
        ]
        .concat(),
        &dir.path().join("small.json"),
    );
    for v in [&plain, &small] {
        conserved(v);
        assert_eq!(u(v, "summary.exchanges.completed"), 40);
        assert_eq!(u(v, "summary.errors.total"), 0);
    }
    let frames = |v: &Value| u(v, "summary.totals.h2.frames_written");
    // The default: a HEADERS per request, and per connection its SETTINGS, the WINDOW_UPDATE
    // that raises its window, the SETTINGS acknowledgement and the GOAWAY.
    assert_eq!(frames(&plain), 40 + 2 * 4);
    // A stream's 150,000 bytes through a 16 KiB window: at least 150,000 / 16,384 - 1 = 8
    // WINDOW_UPDATEs of its own (and the connection's), none to raise the connection's.
    assert!(
        frames(&small) >= 40 + 2 * 3 + 40 * 8,
        "{} frames written",
        frames(&small)
    );
    assert_eq!(field(&small, "spec.protocol.h2.stream_window"), 16384);
    let stats = server.stop();
    assert_eq!(u(&stats, "http.requests"), 80);
    // Bad values, and HTTP/1.1: one line each, exit 2.
    let url = server_url_refused();
    let cases: [(&[&str], &str); 5] = [
        (&[&url, "--h2-window", "3GiB"], "--h2-window"),
        (&[&url, "--h2-conn-window", "1000"], "--h2-conn-window"),
        (&[&url, "--h2-header-table", "32MiB"], "--h2-header-table"),
        (&[&url, "--h2-window", "x"], "--h2-window"),
        (
            &["http://127.0.0.1:9/", "--h2-window", "64KiB"],
            "apply to HTTP/2",
        ),
    ];
    for (args, says) in cases {
        let o = barrage().args(args).args(["-n", "1"]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

fn server_url_refused() -> String {
    format!("h2c://127.0.0.1:{}/", refused_port())
}
