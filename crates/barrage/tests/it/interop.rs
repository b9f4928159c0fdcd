//! Interop with real third-party servers: nginx (Debian's package) for HTTP/1.1 and the
//! Python `websockets` package for WebSocket (plain and over TLS). barrage shares no code
//! with them, so agreement here means the codecs speak the protocols, not just each other.
//!
//! Each server is a child of the test on a free port of 127.0.0.1, stopped by its PID through
//! its guard; nginx runs in the foreground as a single process (`master_process off`) so that
//! killing the child leaves no worker behind. Counts are reconciled with the servers' own:
//! nginx's `stub_status` and the Python server's message count.
//!
//! When nginx or `websockets` is missing the tests print "skipped: ..." and pass, except under
//! CI (`CI` set), where a missing server is a failure: `.ci/run` installs both.

use crate::common;
use crate::common::*;
use crate::pki;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Availability

fn nginx_bin() -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|d| d.join("nginx"))
        .find(|c| c.is_file())
}

fn python_websockets() -> bool {
    StdCommand::new("python3")
        .args(["-c", "import websockets"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn run_json(args: &[&str], json: &Path) -> Value {
    let out = barrage()
        .args(args)
        .args(["-q", "--json"])
        .arg(json)
        .output()
        .expect("run barrage");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "barrage {args:?}:\n{stderr}");
    read_json(json)
}

fn assert_no_errors(v: &Value) {
    assert_eq!(s(v, "status"), "completed");
    assert_eq!(
        u(v, "summary.errors.total"),
        0,
        "{}",
        field(v, "summary.errors")
    );
    assert!(u(v, "summary.exchanges.completed") > 0);
    let e = field(v, "summary.exchanges");
    assert_eq!(
        u(v, "summary.exchanges.sent"),
        u(v, "summary.exchanges.completed")
            + u(v, "summary.exchanges.failed")
            + u(v, "summary.exchanges.in_flight_at_end"),
        "conservation: {e}"
    );
}

// ---------------------------------------------------------------------------------------------
// nginx

const NGINX_CONF: &str = r#"
worker_processes 1;
error_log DIR/error.log;
pid DIR/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path DIR/client_body;
    proxy_temp_path DIR/proxy;
    fastcgi_temp_path DIR/fastcgi;
    uwsgi_temp_path DIR/uwsgi;
    scgi_temp_path DIR/scgi;
    # The default (1000) would close busy keep-alive connections during the run.
    keepalive_requests 100000000;
    default_type text/plain;
    server {
        listen 127.0.0.1:PORT;
        root DIR/www;
        location = / { return 200 "hello"; }
        # A static file, gzipped on the fly: nginx cannot know the length, so it answers chunked.
        location = /chunked { gzip on; gzip_min_length 0; gzip_types *; }
        location = /close { keepalive_timeout 0; return 200 "bye"; }
        # A static file sent with sendfile (head, then the body): its Server-Timing must be
        # recorded however the reads split.
        location = /file {
            sendfile on;
            add_header Server-Timing "nginx;dur=$request_time" always;
        }
        location = /nginx_status { stub_status; }
        # A login flow for scenario users: a token in the JSON body, a session in a header;
        # each route logs to its own file, so requests are counted per location.
        location = /login {
            access_log DIR/login.log;
            default_type application/json;
            add_header X-Session-Id "s-42" always;
            add_header Server-Timing "nginx;dur=$request_time" always;
            return 200 '{"token":"abc123","user":"ann"}';
        }
        location = /api/me {
            access_log DIR/me.log;
            default_type application/json;
            set $ok "";
            if ($http_authorization = "Bearer abc123") { set $ok "a"; }
            if ($http_x_session_id = "s-42") { set $ok "${ok}s"; }
            if ($ok != "as") { return 401 '{"error":"who are you"}'; }
            return 200 '{"user":"ann"}';
        }
    }
    # EXTRA
}
"#;

pub(crate) struct Nginx {
    child: Guard,
    port: u16,
    dir: tempfile::TempDir,
}

impl Nginx {
    pub(crate) fn start() -> Option<Nginx> {
        Self::start_conf(0, "").map(|(n, _)| n)
    }

    fn start_with(workers: u32) -> Option<Nginx> {
        Self::start_conf(workers, "").map(|(n, _)| n)
    }

    /// With `extra` in the `http` block (its `DIR` the server's directory, `TLSPORT` a port
    /// of its own, returned with it): another server, e.g. one that speaks TLS.
    pub(crate) fn start_extra(extra: &str) -> Option<(Nginx, u16)> {
        Self::start_conf(0, extra)
    }

    /// The file `name` in the server's directory (its logs).
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// With `workers` > 0: a master process and that many workers (nginx's usual shape),
    /// which [`Nginx::stop_master`] must stop (a killed master leaves its workers behind).
    fn start_conf(workers: u32, extra: &str) -> Option<(Nginx, u16)> {
        let bin = nginx_bin();
        if !available("nginx", bin.is_some()) {
            return None;
        }
        let bin = bin.unwrap();
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::create_dir(d.join("www")).unwrap();
        let body: String = (0..2000)
            .map(|i| format!("line {i} of a body that gzip squeezes into chunks\n"))
            .collect();
        std::fs::write(d.join("www/file"), &body).unwrap();
        std::fs::write(d.join("www/chunked"), body).unwrap();
        {
            // Readable however nginx's user is set up.
            use std::os::unix::fs::PermissionsExt;
            for p in [d.to_path_buf(), d.join("www")] {
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        // A free port can be taken between probing and binding: try a few.
        for _ in 0..3 {
            let (port, tls_port) = (refused_port(), refused_port());
            let mut conf = NGINX_CONF
                .replace("# EXTRA", &extra.replace("TLSPORT", &tls_port.to_string()))
                .replace("DIR", d.to_str().unwrap())
                .replace("PORT", &port.to_string());
            if workers > 0 {
                conf = conf.replace(
                    "worker_processes 1;",
                    &format!("worker_processes {workers};"),
                );
            }
            std::fs::write(d.join("nginx.conf"), conf).unwrap();
            let mut child = StdCommand::new(&bin)
                .arg("-p")
                .arg(d)
                .arg("-c")
                .arg(d.join("nginx.conf"))
                .arg("-e")
                .arg(d.join("error.log"))
                .args([
                    "-g",
                    if workers > 0 {
                        "daemon off;"
                    } else {
                        "daemon off; master_process off;"
                    },
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("spawn nginx");
            if wait_listening(&mut child, port) {
                let nginx = Nginx {
                    child: Guard(child),
                    port,
                    dir,
                };
                return Some((nginx, tls_port));
            }
            drop(Guard(child));
        }
        let log = std::fs::read_to_string(d.join("error.log")).unwrap_or_default();
        panic!("nginx did not start; error.log:\n{log}");
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// One plain GET on a connection of its own; the whole response.
    fn get_raw(&self, path: &str, headers: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to nginx");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Connection: close\r\n\r\n"
        )
        .unwrap();
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).expect("read response");
        String::from_utf8_lossy(&buf).into_owned()
    }

    /// stub_status's (accepts, handled, requests); the status request counts itself.
    pub(crate) fn status(&self) -> (u64, u64, u64) {
        let r = self.get_raw("/nginx_status", "");
        let line = r
            .lines()
            .skip_while(|l| !l.starts_with("server accepts"))
            .nth(1)
            .unwrap_or_else(|| panic!("unexpected stub_status: {r}"));
        let n: Vec<u64> = line
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        (n[0], n[1], n[2])
    }

    fn json(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub(crate) fn stop(self) {
        drop(self.child);
    }

    fn pid(&self) -> u32 {
        self.child.0.id()
    }

    /// Stops a master and its workers: SIGTERM to the master (our child, by its PID), which
    /// stops its workers before it exits; the guard kills it after 10 s.
    fn stop_master(mut self) {
        // SAFETY: kill on our own child's pid.
        unsafe { libc::kill(self.pid() as libc::pid_t, libc::SIGTERM) };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// barrage's requests and connections as nginx counted them: after - before, less the
/// status request (and its connection) made for `after`.
pub(crate) fn nginx_delta(before: (u64, u64, u64), after: (u64, u64, u64)) -> (u64, u64) {
    (after.0 - before.0 - 1, after.2 - before.2 - 1)
}

#[test]
fn nginx_keep_alive_get_reconciles_with_stub_status() {
    let Some(ngx) = Nginx::start() else { return };
    let before = ngx.status();
    let json = ngx.json("r.json");
    let v = run_json(&[&ngx.url("/"), "-c", "10", "-d", "1s"], &json);
    let (accepts, requests) = nginx_delta(before, ngx.status());
    assert_no_errors(&v);
    assert_eq!(u(&v, "summary.connections.attempts"), 10, "kept alive");
    assert_eq!(accepts, 10, "connections nginx accepted");
    assert_eq!(
        requests,
        u(&v, "summary.exchanges.sent"),
        "nginx counted {requests} requests; barrage: {}",
        field(&v, "summary.exchanges")
    );
    assert_eq!(u(&v, "summary.exchanges.in_flight_at_end"), 0);
    assert_eq!(u(&v, "summary.totals.status.200"), requests);
    ngx.stop();
}

#[test]
fn nginx_pipelined_requests_reconcile() {
    let Some(ngx) = Nginx::start() else { return };
    let before = ngx.status();
    let json = ngx.json("r.json");
    let v = run_json(
        &[&ngx.url("/"), "-c", "4", "--pipeline", "8", "-d", "1s"],
        &json,
    );
    let (_, requests) = nginx_delta(before, ngx.status());
    assert_no_errors(&v);
    assert_eq!(requests, u(&v, "summary.exchanges.sent"));
    assert_eq!(u(&v, "summary.connections.attempts"), 4);
    ngx.stop();
}

#[test]
fn nginx_chunked_gzip_replies_complete_without_errors() {
    let Some(ngx) = Nginx::start() else { return };
    // The premise: nginx really answers this one chunked.
    let raw = ngx.get_raw("/chunked", "Accept-Encoding: gzip\r\n");
    let head = raw.split("\r\n\r\n").next().unwrap().to_lowercase();
    assert!(
        head.contains("transfer-encoding: chunked") && head.contains("content-encoding: gzip"),
        "nginx did not answer chunked:\n{head}"
    );
    let before = ngx.status();
    let json = ngx.json("r.json");
    let v = run_json(
        &[
            &ngx.url("/chunked"),
            "-H",
            "Accept-Encoding: gzip",
            "-c",
            "4",
            "-d",
            "1s",
        ],
        &json,
    );
    let (accepts, requests) = nginx_delta(before, ngx.status());
    assert_no_errors(&v);
    assert_eq!(accepts, 4, "chunked replies keep the connection alive");
    assert_eq!(requests, u(&v, "summary.exchanges.sent"));
    // Each reply is the gzipped file (a few KiB), not just a head.
    let per_reply = u(&v, "summary.totals.bytes_read") / u(&v, "summary.exchanges.completed");
    assert!(per_reply > 1000, "{per_reply} bytes per reply");
    ngx.stop();
}

/// Regression: nginx's static file route (head, then the body by sendfile) had its
/// `Server-Timing` recorded for none of 12,467 responses; every one is recorded now.
#[test]
fn nginx_static_file_server_timing_is_recorded_for_every_response() {
    let Some(ngx) = Nginx::start() else { return };
    let json = ngx.json("r.json");
    let v = run_json(&[&ngx.url("/file"), "-c", "4", "-n", "2000"], &json);
    assert_no_errors(&v);
    let completed = u(&v, "summary.exchanges.completed");
    assert_eq!(completed, 2000);
    assert_eq!(
        u(&v, "summary.server_us.count"),
        completed,
        "{}",
        field(&v, "summary.server_us")
    );
    assert_eq!(u(&v, "summary.server_gap_us.count"), completed);
    ngx.stop();
}

#[test]
fn nginx_head_requests_do_not_wait_for_a_body() {
    let Some(ngx) = Nginx::start() else { return };
    let json = ngx.json("r.json");
    // nginx answers HEAD with the Content-Length of the GET and no body.
    let v = run_json(
        &[&ngx.url("/chunked"), "-X", "HEAD", "-c", "2", "-d", "1s"],
        &json,
    );
    assert_no_errors(&v);
    assert_eq!(u(&v, "summary.connections.attempts"), 2);
    assert!(u(&v, "summary.exchanges.completed") > 100, "no timeouts");
    ngx.stop();
}

#[test]
fn nginx_post_with_a_body_reconciles() {
    let Some(ngx) = Nginx::start() else { return };
    let before = ngx.status();
    let json = ngx.json("r.json");
    let v = run_json(
        &[
            &ngx.url("/"),
            "-X",
            "POST",
            "--body",
            "seq={seq}&conn={conn}",
            "-c",
            "4",
            "-d",
            "1s",
        ],
        &json,
    );
    let (accepts, requests) = nginx_delta(before, ngx.status());
    assert_no_errors(&v);
    assert_eq!(accepts, 4, "nginx read every body and kept the connection");
    assert_eq!(requests, u(&v, "summary.exchanges.sent"));
    ngx.stop();
}

/// Issue 43: `--monitor` of nginx's master summed its workers in and called the master's PID
/// "the server". The summary names the tree: `PID N and 2 child processes`.
#[test]
fn nginx_master_is_named_with_the_workers_summed_in() {
    let Some(ngx) = Nginx::start_with(2) else {
        return;
    };
    let master = ngx.pid();
    let json = ngx.json("r.json");
    let out = barrage()
        .args([&ngx.url("/"), "-c", "4", "-d", "2s", "--no-tui", "-q"])
        .args([
            "--monitor",
            &master.to_string(),
            "--monitor-interval",
            "250ms",
        ])
        .args(["--recovery", "0s", "--json"])
        .arg(&json)
        .timeout(Duration::from_secs(40))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // Read before the master stops (its directory goes with it); no assertion before it stops
    // (a panic would SIGKILL the master and leave its workers behind).
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap_or_default())
        .unwrap_or(Value::Null);
    ngx.stop_master();
    assert_eq!(out.status.code(), Some(0), "{text}");
    let samples = &v["monitor"]["processes"][0]["samples"];
    let children: Vec<u64> = samples
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["children"].as_u64().unwrap_or(0))
        .collect();
    assert!(children.iter().all(|&c| c == 2), "{children:?}");
    let label = format!("Server        PID {master} and 2 child processes `nginx: master process");
    assert!(
        text.lines().any(|l| l.starts_with(&label)),
        "{label:?} in:\n{text}"
    );
}

#[test]
fn nginx_connection_close_reconnects_are_counted_without_errors() {
    let Some(ngx) = Nginx::start() else { return };
    let before = ngx.status();
    let json = ngx.json("r.json");
    let v = run_json(&[&ngx.url("/close"), "-c", "4", "-d", "1s"], &json);
    let (accepts, requests) = nginx_delta(before, ngx.status());
    assert_no_errors(&v);
    let done = u(&v, "summary.exchanges.completed");
    let attempts = u(&v, "summary.connections.attempts");
    // One connection per response: every response closed its connection, gracefully.
    assert_eq!(u(&v, "summary.connections.closed_by_peer"), done);
    assert!(
        (done..=done + 4).contains(&attempts),
        "{attempts} connects for {done} responses"
    );
    assert_eq!(accepts, u(&v, "summary.connections.succeeded"));
    assert_eq!(requests, u(&v, "summary.exchanges.sent"));
    ngx.stop();
}

#[test]
fn nginx_404_is_unexpected_status_and_keeps_the_connection() {
    let Some(ngx) = Nginx::start() else { return };
    let json = ngx.json("r.json");
    let out = barrage()
        .args([&ngx.url("/missing"), "-c", "2", "-d", "1s", "-q", "--json"])
        .arg(&json)
        .output()
        .expect("run barrage");
    // Every request a 404: the run failed (exit 1), and says why in one line.
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("404 Not Found: check the URL's path"), "{err}");
    let v = read_json(&json);
    assert_eq!(s(&v, "status"), "failed");
    let bad = u(&v, "summary.errors.unexpected_status");
    assert!(bad > 10, "{}", field(&v, "summary.errors"));
    assert_eq!(u(&v, "summary.errors.total"), bad);
    assert_eq!(u(&v, "summary.totals.status.404"), bad);
    assert_eq!(u(&v, "summary.connections.attempts"), 2);
    ngx.stop();
}

// ---------------------------------------------------------------------------------------------
// Python websockets

/// An asyncio echo server; counts the messages it received and, each time a connection
/// handler ends, writes "<messages> <connections ended>" to the count file.
const WS_SERVER: &str = r#"
import asyncio, os, ssl, sys
try:
    from websockets.asyncio.server import serve  # websockets >= 13
except ImportError:
    from websockets.server import serve  # the legacy API (e.g. Debian's python3-websockets)

count_file = sys.argv[1]
total = 0
ended = 0

async def echo(ws):
    global total, ended
    n = 0
    try:
        async for msg in ws:
            n += 1
            await ws.send(msg)
    except Exception as e:
        print(f"handler: {e!r}", file=sys.stderr, flush=True)
    finally:
        total += n
        ended += 1
        with open(count_file + ".tmp", "w") as f:
            f.write(f"{total} {ended}\n")
        os.replace(count_file + ".tmp", count_file)

async def main():
    tls = None
    if len(sys.argv) > 3:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(sys.argv[2], sys.argv[3])
    async with serve(echo, "127.0.0.1", 0, ssl=tls, compression=None, ping_interval=None) as server:
        print("ready", server.sockets[0].getsockname()[1], flush=True)
        await asyncio.sleep(30)  # backstop: the test kills it long before

asyncio.run(main())
"#;

struct PyWs {
    /// Declared first: the process is gone before its directory.
    _child: Guard,
    port: u16,
    count: PathBuf,
    /// The server's stderr (websockets logs failed handshakes there), shown on failures.
    log: PathBuf,
    dir: tempfile::TempDir,
}

impl PyWs {
    fn start(tls: Option<&pki::Pki>) -> Option<PyWs> {
        Self::start_script(WS_SERVER, tls)
    }

    fn start_script(script: &str, tls: Option<&pki::Pki>) -> Option<PyWs> {
        if !available("python3 websockets", python_websockets()) {
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let count = dir.path().join("count");
        let log = dir.path().join("server.log");
        let mut cmd = StdCommand::new("python3");
        cmd.args(["-c", script]).arg(&count);
        if let Some(p) = tls {
            cmd.arg(&p.cert).arg(&p.key);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("create server.log"))
            .spawn()
            .expect("spawn python3");
        let stdout = child.stdout.take().expect("stdout");
        let child = Guard(child);
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the server's ready line");
        let port = line
            .strip_prefix("ready ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| {
                let log = std::fs::read_to_string(&log).unwrap_or_default();
                panic!("the Python server did not start: {line:?}\n{log}")
            });
        Some(PyWs {
            _child: child,
            port,
            count,
            log,
            dir,
        })
    }

    /// (messages received, connections ended) once `connections` handlers have ended.
    fn counts(&self, connections: u64) -> (u64, u64) {
        let t = Instant::now();
        loop {
            let text = std::fs::read_to_string(&self.count).unwrap_or_default();
            let n: Vec<u64> = text
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            if n.len() == 2 && n[1] >= connections {
                return (n[0], n[1]);
            }
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "the server saw {text:?} (messages, connections ended), want {connections} \
                 ended; its log:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn ws_echo_reconciles(url: &str, server: &PyWs, extra: &[&str]) -> Value {
    let json = server.dir.path().join("r.json");
    let mut args = vec![url, "-c", "10", "-d", "1s", "--verify"];
    args.extend_from_slice(extra);
    let v = run_json(&args, &json);
    assert_no_errors(&v);
    let (messages, ended) = server.counts(10);
    assert_eq!(ended, 10);
    assert_eq!(u(&v, "summary.connections.attempts"), 10);
    assert_eq!(
        messages,
        u(&v, "summary.exchanges.sent"),
        "the server received {messages} messages; barrage: {}",
        field(&v, "summary.exchanges")
    );
    assert_eq!(u(&v, "summary.exchanges.completed"), messages);
    v
}

#[test]
fn python_websockets_echo_reconciles_message_counts() {
    let Some(server) = PyWs::start(None) else {
        return;
    };
    let url = format!("ws://127.0.0.1:{}/", server.port);
    let v = ws_echo_reconciles(&url, &server, &[]);
    assert!(u(&v, "summary.handshake_us.count") >= 10);
}

#[test]
fn python_websockets_binary_echo_reconciles() {
    let Some(server) = PyWs::start(None) else {
        return;
    };
    let url = format!("ws://127.0.0.1:{}/", server.port);
    ws_echo_reconciles(&url, &server, &["--binary", "-m", "\\x00\\xff{seq}"]);
}

#[test]
fn python_websockets_over_tls_with_cacert_reconciles() {
    if !available("python3 websockets", python_websockets()) {
        return;
    }
    let pki = pki::pki(&["localhost"], pki::Validity::Now);
    let Some(server) = PyWs::start(Some(&pki)) else {
        return;
    };
    let url = format!("wss://localhost:{}/", server.port);
    let v = ws_echo_reconciles(&url, &server, &["--cacert", pki.ca.to_str().unwrap()]);
    assert!(u(&v, "summary.tls_us.count") >= 10);
}

#[test]
fn python_websockets_over_tls_without_the_ca_stops_before_load() {
    if !available("python3 websockets", python_websockets()) {
        return;
    }
    let pki = pki::pki(&["localhost"], pki::Validity::Now);
    let Some(server) = PyWs::start(Some(&pki)) else {
        return;
    };
    let url = format!("wss://localhost:{}/", server.port);
    let out = barrage()
        .args([url.as_str(), "-c", "2", "-d", "1s", "-q"])
        .output()
        .expect("run barrage");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--cacert") && err.contains("--insecure"),
        "{err}"
    );
    // The pre-flight handshake failed, so no WebSocket connection was ever opened.
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !server.count.exists(),
        "a WebSocket connection reached the server"
    );
}

/// The access log lines of one location, by status.
fn nginx_log(n: &Nginx, name: &str) -> std::collections::BTreeMap<u16, u64> {
    let text = std::fs::read_to_string(n.dir.path().join(name)).unwrap_or_default();
    let mut by = std::collections::BTreeMap::new();
    for line in text.lines() {
        // combined format: ... "GET /path HTTP/1.1" STATUS BYTES ...
        let status = line
            .split("\" ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        *by.entry(status).or_insert(0) += 1;
    }
    by
}

#[test]
fn a_scenario_logs_in_to_nginx_and_calls_an_authenticated_route_with_the_captured_token() {
    let Some(n) = Nginx::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("flow.toml");
    let text = format!(
        r#"
target = "{}"
[users]
count = 12
arrive = "200/s"
hold = "300ms"
[[steps]]
name = "login"
method = "POST"
path = "/login"
headers = ["Content-Type: application/json"]
body = '{{"user":"u{{user}}","password":"pw"}}'
status = "200"
expect = {{ json = "/token" }}
capture.token = {{ json = "/token" }}
capture.session = {{ header = "X-Session-Id" }}
[[steps]]
name = "me"
repeat = 3
path = "/api/me"
headers = ["Authorization: Bearer {{token}}", "X-Session-Id: {{session}}"]
status = "200"
expect = {{ json = "/user", equals = "ann" }}
"#,
        n.url("")
    );
    std::fs::write(&file, text).unwrap();
    let json = n.json("flow.json");
    let v = run_json(&["run", file.to_str().unwrap()], &json);
    assert_no_errors(&v);
    let steps = v["summary"]["steps"].as_array().unwrap();
    let get = |i: usize, k: &str| steps[i][k].as_u64().unwrap();
    assert_eq!((get(0, "sent"), get(0, "completed")), (12, 12));
    assert_eq!((get(1, "sent"), get(1, "completed")), (36, 36));
    // nginx's Server-Timing on the login route (its $request_time, whole milliseconds):
    // recorded for every login and for nothing else.
    assert_eq!(steps[0]["server_us"]["count"].as_u64(), Some(12));
    assert!(steps[1].get("server_us").is_none());
    let login = nginx_log(&n, "login.log");
    let me = nginx_log(&n, "me.log");
    n.stop();
    assert_eq!(login.into_iter().collect::<Vec<_>>(), vec![(200, 12)]);
    assert_eq!(
        me.into_iter().collect::<Vec<_>>(),
        vec![(200, 36)],
        "every call carried the captured token and session"
    );
}

/// Engine.IO over WebSocket, the little a client meets: the open packet (`0{"sid":...}`) at
/// connect, a ping (`2`) every 100 ms answered by a pong (`3`), the namespace connect (`40` ->
/// `40{"sid":...}`), and events (`42[...]`): `hello` answered by `welcome`, `chat` and `bye`
/// counted. Each handler's end rewrites the count file with the totals as JSON.
const EIO_SERVER: &str = r#"
import asyncio, json, os, sys
try:
    from websockets.asyncio.server import serve
except ImportError:
    from websockets.server import serve

count_file = sys.argv[1]
tot = {"pongs": 0, "opens": 0, "hello": 0, "hello_sid_ok": 0, "chat": 0, "bye": 0, "bye_eio_ok": 0, "ended": 0}

async def pinger(ws):
    while True:
        await asyncio.sleep(0.1)
        await ws.send("2")

async def handler(ws):
    sid = "sid%d" % id(ws)
    await ws.send('0{"sid":"%s","upgrades":[],"pingInterval":100,"pingTimeout":5000}' % sid)
    task = asyncio.ensure_future(pinger(ws))
    try:
        async for msg in ws:
            if msg == "3":
                tot["pongs"] += 1
            elif msg == "40":
                tot["opens"] += 1
                await ws.send('40{"sid":"ns-%s"}' % sid)
            elif msg.startswith('42["hello"'):
                tot["hello"] += 1
                if ('"sid":"ns-%s"' % sid) in msg:
                    tot["hello_sid_ok"] += 1
                await ws.send('42["welcome",{}]')
            elif msg.startswith('42["chat"'):
                tot["chat"] += 1
            elif msg.startswith('42["bye"'):
                tot["bye"] += 1
                if ('"eio":"%s"' % sid) in msg:
                    tot["bye_eio_ok"] += 1
    except Exception as e:
        print(f"handler: {e!r}", file=sys.stderr, flush=True)
    finally:
        task.cancel()
        tot["ended"] += 1
        with open(count_file + ".tmp", "w") as f:
            json.dump(tot, f)
        os.replace(count_file + ".tmp", count_file)

async def main():
    async with serve(handler, "127.0.0.1", 0, compression=None, ping_interval=None) as server:
        print("ready", server.sockets[0].getsockname()[1], flush=True)
        await asyncio.sleep(30)

asyncio.run(main())
"#;

#[test]
fn the_engineio_example_answers_pings_by_its_on_rules_against_a_python_server() {
    let Some(py) = PyWs::start_script(EIO_SERVER, None) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("eio.json");
    // Its `steps.hello.p99 < 100ms` is for a quiet machine: dropped here, counts are judged.
    let example = common::example_without_thresholds("engineio.yaml", dir.path());
    let target = format!(
        "ws://127.0.0.1:{}/socket.io/?EIO=4&transport=websocket",
        py.port
    );
    let v = run_json(
        &[
            "run",
            example.to_str().unwrap(),
            "--target",
            &target,
            "--users",
            "5",
            "--arrive",
            "50",
            "--hold",
            "2500ms",
        ],
        &json,
    );
    assert_eq!(s(&v, "status"), "completed");
    // The handlers end when the users close: wait for all five.
    let t = std::time::Instant::now();
    let counts: Value = loop {
        let c = std::fs::read_to_string(&py.count).unwrap_or_default();
        if let Ok(c) = serde_json::from_str::<Value>(&c) {
            if c["ended"] == 5 || t.elapsed() > Duration::from_secs(5) {
                break c;
            }
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the server never counted"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let steps = v["summary"]["steps"].as_array().unwrap();
    let by = |n: &str| steps.iter().find(|x| x["name"] == n).unwrap().clone();
    assert_eq!(counts["opens"], 5);
    assert_eq!(counts["hello"], 5);
    assert_eq!(
        counts["hello_sid_ok"], 5,
        "the sid captured from 40{{...}} reached hello"
    );
    assert_eq!(by("hello")["completed"], 5);
    assert_eq!(by("chat")["sent"], counts["chat"]);
    assert_eq!(by("goodbye")["sent"], counts["bye"]);
    assert_eq!(counts["bye"], 5);
    assert_eq!(
        counts["bye_eio_ok"], 5,
        "the open packet's sid, captured by an on rule"
    );
    let pongs = counts["pongs"].as_u64().unwrap();
    assert!(
        pongs >= 5 * 10,
        "every user answered its pings: {pongs} {counts} {}",
        v["summary"]["totals"]
    );
    assert_eq!(
        u(&v, "summary.totals.pushed"),
        pongs + 5,
        "pings and the open packets"
    );
    assert_eq!(
        u(&v, "summary.errors.total"),
        0,
        "{}",
        v["summary"]["errors"]
    );
}

// ---------------------------------------------------------------------------------------------
// Socket.IO (npm socket.io, tests/socketio): rooms and broadcast are Socket.IO's own

/// `node tests/socketio/server.js COUNTS ROOM_SIZE`, when node and the fixture's
/// node_modules are there (`.ci/run` installs them).
fn socketio_server(count: &std::path::Path, room: u32) -> Option<(Guard, u16)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/socketio");
    // The skip names exactly what is missing (node was named beside node_modules when
    // only node_modules was).
    let parts = [
        ("node", on_path_bin("node")),
        (
            "tests/socketio/node_modules (npm ci)",
            dir.join("node_modules/socket.io").is_dir(),
        ),
    ];
    if !available(&missing(&parts), parts.iter().all(|p| p.1)) {
        return None;
    }
    let mut child = StdCommand::new("node")
        .arg(dir.join("server.js"))
        .arg(count)
        .arg(room.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn node");
    let stdout = child.stdout.take().unwrap();
    let guard = Guard(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let port = line
        .strip_prefix("ready ")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("the Socket.IO server did not start: {line:?}"));
    Some((guard, port))
}

fn on_path_bin(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

#[test]
fn socketio_rooms_deliver_every_stamped_message_to_every_member() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("counts.json");
    let Some((server, port)) = socketio_server(&count, 4) else {
        return;
    };
    let file = dir.path().join("sio.toml");
    std::fs::write(
        &file,
        format!(
            r#"
target = "ws://127.0.0.1:{port}/socket.io/?EIO=4&transport=websocket"
[users]
count = 12
arrive = "200/s"
hold = "1500ms"
[[steps]]
name = "open"
send = "40"
expect = {{ prefix = "40" }}
[[steps]]
name = "join"
send = '42["join"]'
expect = {{ prefix = '42["joined"' }}
capture.room_size = {{ regex = '"size":([0-9]+)' }}
[[steps]]
pause = "300ms"
[[steps]]
name = "say"
every = "100ms"
repeat = 5
send = '42["say","{{stamp}}"]'
expect = {{ framing = "none" }}
broadcast = {{ expect = "{{room_size}}" }}
[[on]]
name = "open-packet"
match = {{ prefix = "0{{" }}
[[on]]
name = "ping"
match = {{ prefix = "2" }}
reply = "3"
[[on]]
name = "member"
match = {{ prefix = '42["member"' }}
capture.room_size = {{ regex = '"size":([0-9]+)' }}
"#
        ),
    )
    .unwrap();
    let json = dir.path().join("sio.json");
    let v = run_json(&["run", file.to_str().unwrap()], &json);
    let t = std::time::Instant::now();
    let counts: Value = loop {
        let c = std::fs::read_to_string(&count).unwrap_or_default();
        if let Ok(c) = serde_json::from_str::<Value>(&c) {
            if c["disconnects"] == 12 {
                break c;
            }
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the server never counted 12 disconnects"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(server);
    let b = &v["summary"]["broadcast"];
    assert_eq!(counts["says"], b["sent"]);
    assert_eq!(
        counts["deliveries"], b["delivered"],
        "Socket.IO's emits all arrived: {b}"
    );
    assert_eq!(b["expected"], b["delivered"], "reach 100 %");
    assert_eq!(
        (b["duplicates"].as_u64(), b["lost"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(u(&v, "summary.exchanges.unexpected_replies"), 0);
}
