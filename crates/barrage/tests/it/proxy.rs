//! Through an HTTP proxy (issue 45, item 4): `--proxy URL` against a real one, Debian's
//! `tinyproxy` (a child of the test on a free port of 127.0.0.1, logging each CONNECT), in
//! front of barrage's reference servers. Every connection is a tunnel the proxy logged, every
//! request one the server counted; a proxy that wants credentials is told them (never shown)
//! or stops the run saying so; the proxy variables are not used for loopback targets.
//!
//! When tinyproxy is missing the tests print "skipped: ..." and pass, except under CI, where
//! `.ci/install` installs it.

use crate::common::*;
use crate::pki::{pki, Validity};
use std::process::{Command as StdCommand, Stdio};

struct Tinyproxy {
    _child: Guard,
    port: u16,
    log: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Tinyproxy {
    /// With `auth`: `BasicAuth USER PASSWORD`.
    fn start(auth: Option<(&str, &str)>) -> Option<Tinyproxy> {
        if !available("tinyproxy", on_path("tinyproxy")) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("tinyproxy.log");
        for _ in 0..3 {
            let port = refused_port();
            let mut conf = format!(
                "Port {port}\nListen 127.0.0.1\nTimeout 60\nMaxClients 200\nLogLevel Connect\n\
                 LogFile \"{}\"\nAllow 127.0.0.1\n",
                log.display()
            );
            // As root it must be told to stay root (it would switch to `nobody`).
            if unsafe { libc::geteuid() } == 0 {
                conf.push_str("User root\nGroup root\n");
            }
            if let Some((u, p)) = auth {
                conf.push_str(&format!("BasicAuth {u} {p}\n"));
            }
            let path = dir.path().join("tinyproxy.conf");
            std::fs::write(&path, conf).unwrap();
            let mut child = StdCommand::new("tinyproxy")
                .arg("-d")
                .arg("-c")
                .arg(&path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn tinyproxy");
            if wait_listening(&mut child, port) {
                return Some(Tinyproxy {
                    _child: Guard(child),
                    port,
                    log,
                    _dir: dir,
                });
            }
            drop(Guard(child));
        }
        panic!("tinyproxy did not start");
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The tunnels it was asked for to `authority` (its log's `CONNECT` request lines).
    fn tunnels(&self, authority: &str) -> usize {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let want = format!("CONNECT {authority} HTTP/1.1");
        text.lines().filter(|l| l.contains(&want)).count()
    }
}

fn run(args: &[&str], json: &std::path::Path) -> std::process::Output {
    barrage()
        .args(args)
        .args(["-q", "--json"])
        .arg(json)
        .env_remove("https_proxy")
        .env_remove("HTTPS_PROXY")
        .env_remove("http_proxy")
        .env_remove("all_proxy")
        .env_remove("ALL_PROXY")
        .output()
        .expect("run barrage")
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn https_http_and_ws_through_tinyproxy_reconcile_with_the_server_and_the_proxys_log() {
    let Some(proxy) = Tinyproxy::start(None) else {
        return;
    };
    let pki = pki(&["localhost"], Validity::Now);
    let dir = pki.dir.path();
    let (cert, key) = (pki.cert.to_str().unwrap(), pki.key.to_str().unwrap());
    // https://: 4 tunnels for the load and one for the pre-flight handshake.
    let tls = EchoServer::serve("http", &["--tls-cert", cert, "--tls-key", key]);
    let url = format!("https://localhost:{}/", tls.port);
    let json = dir.join("https.json");
    let ca = pki.ca.to_str().unwrap();
    let o = run(
        &[
            &url,
            "--cacert",
            ca,
            "--proxy",
            &proxy.url(),
            "-c",
            "4",
            "-n",
            "200",
        ],
        &json,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = read_json(&json);
    assert_eq!(u(&v, "summary.exchanges.completed"), 200);
    assert_eq!(s(&v, "config.proxy"), format!("{} (--proxy)", proxy.url()));
    let tls_port = tls.port;
    let st = tls.stop();
    assert_eq!(u(&st, "http.requests"), 200, "{st}");
    assert_eq!(u(&st, "connections_accepted"), 5, "{st}");
    assert_eq!(proxy.tunnels(&format!("localhost:{tls_port}")), 5);
    // http:// and ws://: tunnels too, one per connection (no pre-flight without TLS).
    for kind in ["http", "ws"] {
        let srv = EchoServer::serve(kind, &[]);
        let url = format!("{kind}://127.0.0.1:{}/", srv.port);
        let json = dir.join(format!("{kind}.json"));
        let o = run(
            &[&url, "--proxy", &proxy.url(), "-c", "3", "-n", "150"],
            &json,
        );
        assert_eq!(o.status.code(), Some(0), "{kind}: {}", stderr(&o));
        assert_eq!(u(&read_json(&json), "summary.exchanges.completed"), 150);
        let port = srv.port;
        let st = srv.stop();
        assert_eq!(u(&st, "connections_accepted"), 3, "{kind}: {st}");
        assert_eq!(proxy.tunnels(&format!("127.0.0.1:{port}")), 3, "{kind}");
    }
}

#[test]
fn a_proxy_that_wants_credentials_gets_them_and_they_are_never_shown() {
    let Some(proxy) = Tinyproxy::start(Some(("ann", "s3cretpw"))) else {
        return;
    };
    let pki = pki(&["localhost"], Validity::Now);
    let dir = pki.dir.path();
    let (cert, key) = (pki.cert.to_str().unwrap(), pki.key.to_str().unwrap());
    let tls = EchoServer::serve("http", &["--tls-cert", cert, "--tls-key", key]);
    let url = format!("https://localhost:{}/", tls.port);
    let ca = pki.ca.to_str().unwrap();
    // Without them: the pre-flight is refused (407), before any load.
    let json = dir.join("no.json");
    let o = run(
        &[&url, "--cacert", ca, "--proxy", &proxy.url(), "-n", "10"],
        &json,
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("407") && err.contains("credentials"), "{err}");
    // With them: every request through.
    let with = format!("http://ann:s3cretpw@127.0.0.1:{}", proxy.port);
    let json = dir.join("yes.json");
    let o = run(
        &[
            &url, "--cacert", ca, "--proxy", &with, "-c", "2", "-n", "100",
        ],
        &json,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&json).unwrap();
    let v = read_json(&json);
    assert_eq!(u(&v, "summary.exchanges.completed"), 100);
    for shown in [
        text.as_str(),
        &stderr(&o),
        &String::from_utf8_lossy(&o.stdout),
    ] {
        assert!(!shown.contains("s3cretpw"), "the password is shown");
        assert!(!shown.contains("YW5uOnMzY3JldHB3"), "its base64 is shown");
    }
    assert_eq!(s(&v, "spec.proxy.auth"), "[redacted]");
    let st = tls.stop();
    assert_eq!(u(&st, "http.requests"), 100, "{st}");
}

/// The proxy variables stay off loopback targets (a proxy that is not there would fail the
/// run), and each mistake in `--proxy` is one line, exit 2.
#[test]
fn proxy_variables_skip_loopback_and_bad_proxies_are_refused() {
    let srv = EchoServer::serve("http", &[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let nobody = format!("http://127.0.0.1:{}", refused_port());
    let url = format!("http://127.0.0.1:{}/", srv.port);
    let o = barrage()
        .args([&url, "-n", "20", "-q", "--json"])
        .arg(&json)
        .env("http_proxy", &nobody)
        .env("all_proxy", &nobody)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = read_json(&json);
    assert_eq!(u(&v, "summary.exchanges.completed"), 20);
    assert!(v["config"].get("proxy").is_none(), "{}", v["config"]);
    srv.stop();
    for (args, says) in [
        (
            vec!["--proxy", "socks5://127.0.0.1:1080"],
            "socks5:// proxy is not supported",
        ),
        (vec!["--proxy", "http://u:pw@127.0.0.1:99999"], "--proxy"),
        (
            vec!["--proxy", "127.0.0.1:3128", "--url", "http://127.0.0.1:2/"],
            "tunnels to one address",
        ),
        (
            vec!["--proxy", "127.0.0.1:3128", "--no-proxy"],
            "--no-proxy",
        ),
    ] {
        let o = barrage()
            .args(["http://127.0.0.1:1/", "-n", "1"])
            .args(&args)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("pw@"), "{args:?}: {err}");
    }
}
