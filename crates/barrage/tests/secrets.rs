//! Secrets never reach an output: a canary placed in a URL query token, a secret header, the
//! HTTP body, the message, the first message (login) and a `{secret:NAME}` environment
//! variable must be absent from stdout, stderr (live line included), the JSON result, the HTML
//! and Markdown reports and `compare` (text and HTML), while the secrets really were sent
//! (the servers' byte and request counts reconcile with the filled, not the shown, lengths).
//!
//! Runs are short (`-d 1s`, 2 connections) against `barrage serve http` and `serve echo` on
//! 127.0.0.1.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Output;

const CANARY: &str = "CANARY";
const ENV: &str = "BARRAGE_TEST_LOGIN_SECRET";
const ENV_VALUE: &str = "CANARY-from-the-environment";

fn assert_no_canary(what: &str, text: &str) {
    assert!(!text.contains(CANARY), "{what} holds a secret:\n{text}");
}

fn assert_output_clean(what: &str, out: &Output) {
    assert_no_canary(
        &format!("{what} stdout"),
        &String::from_utf8_lossy(&out.stdout),
    );
    assert_no_canary(
        &format!("{what} stderr"),
        &String::from_utf8_lossy(&out.stderr),
    );
}

fn assert_files_clean(files: &[&Path]) {
    for f in files {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert_no_canary(&f.display().to_string(), &text);
    }
}

fn path(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

#[test]
fn canaries_in_query_token_header_body_first_message_and_env_secret_reach_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // HTTP: query token, secret header, body, {secret:NAME} in a header.
    let http = EchoServer::serve("http", &[]);
    let url = format!(
        "http://127.0.0.1:{}/?page=1&access_token=CANARY-query&sig=CANARY-sig",
        http.port
    );
    let (j1, j2, html, md) = (
        path(d, "a.json"),
        path(d, "b.json"),
        path(d, "a.html"),
        path(d, "b.md"),
    );
    let mut runs = Vec::new();
    for (json, report) in [(&j1, &html), (&j2, &md)] {
        let out = barrage()
            .env(ENV, ENV_VALUE)
            .args([
                url.as_str(),
                "-c",
                "2",
                "-d",
                "1s",
                "-t",
                "1",
                "--no-tui",
                "-X",
                "POST",
                "-H",
                "Authorization: Bearer CANARY-header",
                "-H",
                &format!("X-Login: {{secret:{ENV}}}"),
                "--body",
                "user=me&password=CANARY-body",
                "--secret-body",
                "--json",
                json.to_str().unwrap(),
                "--report",
                report.to_str().unwrap(),
            ])
            .timeout(std::time::Duration::from_secs(20))
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_output_clean("http run", &out);
        runs.push(read_json(json));
    }
    let st = http.stop();
    let completed: u64 = runs
        .iter()
        .map(|v| u(v, "summary.exchanges.completed"))
        .sum();
    let sent: u64 = runs.iter().map(|v| u(v, "summary.exchanges.sent")).sum();
    let served = u(&st, "http.requests");
    assert!(
        completed > 0 && (completed..=sent).contains(&served),
        "server answered {served}; barrage sent {sent}, completed {completed}"
    );
    let v = &runs[0];
    assert!(
        s(v, "config.target").contains("access_token=[redacted]"),
        "{v}"
    );
    assert!(s(v, "config.target").contains("page=1"), "{v}");
    assert!(
        s(v, "config.http").contains("body 28 B"),
        "the size is shown: {}",
        s(v, "config.http")
    );
    let cmd = field(v, "command_line").to_string();
    assert!(cmd.contains("[redacted 28 bytes]"), "{cmd}");
    assert!(cmd.contains(&format!("{{secret:{ENV}}}")), "{cmd}");

    // TCP: message and first message (a login holding the environment secret).
    let echo = EchoServer::start(&[]);
    let (tj, thtml) = (path(d, "t.json"), path(d, "t.html"));
    let first = format!("LOGIN CANARY-first {{secret:{ENV}}}\\n");
    let out = barrage()
        .env(ENV, ENV_VALUE)
        .args([
            echo.url(),
            "-c",
            "2",
            "-d",
            "1s",
            "-t",
            "1",
            "--no-tui",
            "-m",
            "PING CANARY-message\\n",
            "--first-message",
            &first,
            "--secret-body",
            "--json",
            tj.to_str().unwrap(),
            "--report",
            thtml.to_str().unwrap(),
        ])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_output_clean("tcp run", &out);
    let st = echo.stop();
    let t = read_json(&tj);
    let (completed, sent) = (
        u(&t, "summary.exchanges.completed"),
        u(&t, "summary.exchanges.sent"),
    );
    // The login the server read carries the filled secret, not the placeholder.
    let login = format!("LOGIN CANARY-first {ENV_VALUE}\n").len() as u64;
    let ping = "PING CANARY-message\n".len() as u64;
    let read = u(&st, "bytes_read");
    assert!(
        completed > 0 && (2 * login + completed * ping..=2 * login + sent * ping).contains(&read),
        "server read {read} B; 2 logins of {login} B, {completed}..{sent} pings of {ping} B"
    );
    assert_eq!(s(&t, "config.message"), "[redacted 20 bytes]");
    assert_eq!(
        s(&t, "config.first_message"),
        format!("[redacted {login} bytes]")
    );

    // Offline outputs: report re-rendered, compare as text and HTML.
    let cmp_html = path(d, "c.html");
    let out = barrage()
        .args(["compare", j1.to_str().unwrap(), j2.to_str().unwrap()])
        .args(["-o", cmp_html.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_output_clean("compare", &out);
    let out = barrage()
        .args(["report", tj.to_str().unwrap(), "-o", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_output_clean("report -o -", &out);
    assert_files_clean(&[&j1, &j2, &html, &md, &tj, &thtml, &cmp_html]);
}

#[test]
fn a_secret_placeholder_without_its_environment_variable_is_a_usage_error_naming_it() {
    let port = refused_port();
    for (flag, value) in [
        ("--body", "{secret:BARRAGE_TEST_SURELY_UNSET}"),
        ("-H", "X-Token: {secret:BARRAGE_TEST_SURELY_UNSET}"),
    ] {
        let out = barrage()
            .env_remove("BARRAGE_TEST_SURELY_UNSET")
            .args([
                &format!("http://127.0.0.1:{port}/"),
                flag,
                value,
                "-d",
                "1s",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("BARRAGE_TEST_SURELY_UNSET"), "{err}");
        assert!(err.contains(flag), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
    let out = barrage()
        .args([
            &format!("http://127.0.0.1:{port}/?token={{secret:BAD-NAME}}"),
            "-d",
            "1s",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("target"));
}

/// A GET on 127.0.0.1; the whole response.
fn get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(s, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

/// The live outputs too: /metrics and the live page's data while the run goes, the CSV, the
/// HDR log and the --out directory after it.
#[test]
fn canaries_reach_no_live_output() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let http = EchoServer::serve("http", &[]);
    let url = format!("http://127.0.0.1:{}/?access_token=CANARY-query", http.port);
    let (prom, web) = (free_port(), free_port());
    let p = |n: &str| path(d, n).to_str().unwrap().to_string();
    let mut child = std::process::Command::new(bin())
        .env(ENV, ENV_VALUE)
        .args([url.as_str(), "-c", "2", "-d", "3s", "--no-tui"])
        .args(["-H", "Authorization: Bearer CANARY-header"])
        .args(["-H", &format!("X-Login: {{secret:{ENV}}}")])
        .args([
            "-X",
            "POST",
            "--body",
            "password=CANARY-body",
            "--secret-body",
        ])
        .args(["--prometheus", &prom.to_string(), "--web", &web.to_string()])
        .args([
            "--csv",
            &p("r.csv"),
            "--hdr-log",
            &p("r.hlog"),
            "--out",
            &p("run"),
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut child = Guard(child);
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "ended early: {seen}");
        seen.push_str(&line);
        if line.starts_with('[') {
            break;
        }
    }
    assert_no_canary("/metrics", &get(prom, "/metrics"));
    assert_no_canary("the live page", &get(web, "/"));
    let series = get(web, "/series");
    assert!(series.contains("access_token=[redacted]"), "{series}");
    assert_no_canary("the live page's data", &series);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert!(wait_at_most(&mut child.0, std::time::Duration::from_secs(30)).is_some());
    assert_no_canary("stderr", &format!("{seen}{rest}"));
    for f in [
        "r.csv",
        "r.hlog",
        "run/run.json",
        "run/seconds.jsonl",
        "run/result.json",
    ] {
        assert_no_canary(f, &std::fs::read_to_string(path(d, f)).unwrap());
    }
    let _ = http.stop();
}
