//! Secrets never reach an output: a canary placed in a URL query token, a secret header, the
//! HTTP body, the message, the first message (login) and a `{secret:NAME}` environment
//! variable must be absent from stdout, stderr (live line included), the JSON result, the HTML
//! and Markdown reports and `compare` (text and HTML), while the secrets really were sent
//! (the servers' byte and request counts reconcile with the filled, not the shown, lengths).
//!
//! Runs are short (`-d 1s`, 2 connections) against `barrage serve http` and `serve echo` on
//! 127.0.0.1.

use crate::common::*;
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

const SC_TOKEN: &str = "BARRAGE_TEST_SCENARIO_TOKEN";
const SC_PW: &str = "BARRAGE_TEST_SCENARIO_PW";

/// A line server on 127.0.0.1 that answers each line with itself and keeps every line read.
fn line_server() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = lines.clone();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(s) = s else { return };
            let seen = seen.clone();
            std::thread::spawn(move || {
                let mut w = s.try_clone().unwrap();
                for line in std::io::BufReader::new(s).lines() {
                    let Ok(line) = line else { return };
                    seen.lock().unwrap().push(line.clone());
                    if w.write_all(format!("{line}\n").as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, lines)
}

/// A scenario whose login step, repeated step, leave step and `users.data` cells hold
/// `{secret:NAME}`s, in `dir`.
fn secret_scenario(dir: &Path, port: u16) -> PathBuf {
    std::fs::write(
        dir.join("users.csv"),
        format!("name,password\nann,{{secret:{SC_PW}}}\nbob,plain\ncy,x-{{secret:{SC_PW}}}-y\n"),
    )
    .unwrap();
    let file = dir.join("secrets.toml");
    std::fs::write(
        &file,
        format!(
            r#"target = "tcp://127.0.0.1:{port}"
[protocol]
framing = "line"
[users]
count = 3
arrive = "100/s"
hold = "3s"
depart = "at_end"
data = "users.csv"
[[steps]]
name = "login"
send = 'LOGIN {{row.name}} {{row.password}} {{secret:{SC_TOKEN}}}\n'
[[steps]]
name = "say"
every = "500ms"
send = 'SAY {{secret:{SC_TOKEN}}} {{seq}}\n'
[[leave]]
name = "bye"
send = 'BYE {{secret:{SC_TOKEN}}}\n'
"#
        ),
    )
    .unwrap();
    file
}

/// `{secret:NAME}` in a scenario file's steps and `users.data` cells is filled into what is
/// sent (the server reads the values, never the placeholder), and no output holds a value:
/// stdout, stderr, the JSON result, the HTML report, the Markdown report re-rendered from the
/// `--out` stream, the CSV, the HDR log, the stream itself, /metrics and the live page.
#[test]
fn scenario_secrets_are_filled_into_steps_and_data_and_reach_no_output() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (port, lines) = line_server();
    let file = secret_scenario(d, port);
    let (prom, web) = (free_port(), free_port());
    let p = |n: &str| path(d, n).to_str().unwrap().to_string();
    let mut child = std::process::Command::new(bin())
        .env(SC_TOKEN, "CANARY-token")
        .env(SC_PW, "CANARY-pw")
        .args(["run", file.to_str().unwrap(), "--no-tui"])
        .args(["--prometheus", &prom.to_string(), "--web", &web.to_string()])
        .args(["--csv", &p("r.csv"), "--hdr-log", &p("r.hlog")])
        .args(["--out", &p("run"), "--json", &p("r.json")])
        .args(["--report", &p("r.html")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut out = child.stdout.take().unwrap();
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
    assert_no_canary("the live page's data", &get(web, "/series"));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut out, &mut stdout).unwrap();
    let status = wait_at_most(&mut child.0, std::time::Duration::from_secs(30)).unwrap();
    assert!(status.success(), "{seen}{rest}");
    assert_no_canary("stderr", &format!("{seen}{rest}"));
    assert_no_canary("stdout", &stdout);
    let md = p("r.md");
    let out = barrage()
        .args(["report", &p("run"), "-o", &md])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_output_clean("report", &out);
    for f in [
        "r.json",
        "r.html",
        "r.md",
        "r.csv",
        "r.hlog",
        "run/run.json",
        "run/seconds.jsonl",
        "run/result.json",
    ] {
        assert_no_canary(f, &std::fs::read_to_string(path(d, f)).unwrap());
    }
    // What the server read: the values, never a placeholder.
    let lines = lines.lock().unwrap().clone();
    let count = |prefix: &str| lines.iter().filter(|l| l.starts_with(prefix)).count();
    let mut logins: Vec<&String> = lines.iter().filter(|l| l.starts_with("LOGIN")).collect();
    logins.sort();
    assert_eq!(
        logins,
        [
            "LOGIN ann CANARY-pw CANARY-token",
            "LOGIN bob plain CANARY-token",
            "LOGIN cy x-CANARY-pw-y CANARY-token",
        ],
        "{lines:?}"
    );
    assert_eq!(count("BYE CANARY-token"), 3, "{lines:?}");
    assert!(count("SAY CANARY-token ") >= 3, "{lines:?}");
    assert!(lines.iter().all(|l| !l.contains("{secret:")), "{lines:?}");
    let v = read_json(&path(d, "r.json"));
    assert_eq!(
        u(&v, "summary.exchanges.sent") as usize,
        lines.len(),
        "every line sent was read"
    );
}

/// An unset `{secret:NAME}` in a scenario's step, data cell or `run.spawn` stops `validate`
/// and `run` (exit 2) with one line naming the file, line, key and variable; a secret in a
/// `[run]` value that is never sent is refused too.
#[test]
fn a_scenario_secret_without_its_environment_variable_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = secret_scenario(d, refused_port());
    let f = file.to_str().unwrap();
    for (env, key) in [
        (
            vec![],
            format!("secrets.toml:12: steps[0].send: {{secret:{SC_TOKEN}}}"),
        ),
        (
            vec![(SC_TOKEN, "t")],
            format!(
                "secrets.toml:9: users.data: users.csv row 1, column password: {{secret:{SC_PW}}}"
            ),
        ),
    ] {
        for cmd in [vec!["validate", f], vec!["run", f, "--no-tui"]] {
            let mut c = barrage();
            c.env_remove(SC_TOKEN).env_remove(SC_PW);
            for (k, v) in &env {
                c.env(k, v);
            }
            let out = c
                .args(&cmd)
                .timeout(std::time::Duration::from_secs(20))
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
            assert!(err.contains(&key), "{cmd:?}: {err}");
            assert!(err.contains("not set; export it"), "{err}");
        }
    }
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        format!("{text}[run]\njson = \"{{secret:{SC_TOKEN}}}.json\"\n"),
    )
    .unwrap();
    let out = barrage()
        .env(SC_TOKEN, "t")
        .env(SC_PW, "p")
        .args(["validate", f])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("secrets.toml:21: run.json:"), "{err}");
}

/// `{secret:NAME}` in a scenario's `run.spawn` is filled into the command that starts the
/// server (its `--stats` file is named with the value), and the value reaches no output: the
/// recorded spawn command and the monitored server's command line (read from /proc, where
/// the value is) keep the placeholder.
#[test]
fn a_scenario_spawn_secret_is_filled_into_the_server_command_and_reaches_no_output() {
    const SPAWN: &str = "BARRAGE_TEST_SCENARIO_SPAWN";
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let file = d.join("spawn.toml");
    std::fs::write(
        &file,
        format!(
            r#"target = "tcp://127.0.0.1:{port}"
[protocol]
framing = "line"
[users]
count = 2
arrive = "100/s"
hold = "1s"
[[steps]]
send = 'PING\n'
[run]
recovery = "0s"
spawn = "exec {} serve echo --listen 127.0.0.1:{port} --threads 1 --exit-after 60s --stats {}/stats-{{secret:{SPAWN}}}.json"
"#,
            bin().display(),
            d.display()
        ),
    )
    .unwrap();
    let p = |n: &str| path(d, n).to_str().unwrap().to_string();
    let out = barrage()
        .env(SPAWN, "CANARY-spawn")
        .args(["run", file.to_str().unwrap(), "--no-tui"])
        .args([
            "--json",
            &p("r.json"),
            "--out",
            &p("run"),
            "--report",
            &p("r.html"),
        ])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_output_clean("spawn run", &out);
    assert!(
        path(d, "stats-CANARY-spawn.json").exists(),
        "the server ran with the filled command"
    );
    for f in [
        "r.json",
        "r.html",
        "run/run.json",
        "run/seconds.jsonl",
        "run/result.json",
    ] {
        assert_no_canary(f, &std::fs::read_to_string(path(d, f)).unwrap());
    }
    let v = read_json(&path(d, "r.json"));
    let placeholder = format!("stats-{{secret:{SPAWN}}}.json");
    assert!(s(&v, "spawn.command").contains(&placeholder), "{v}");
    let cmd = field(&v, "monitor.processes")[0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        cmd.contains(&placeholder),
        "the server's command line: {cmd}"
    );
    assert_eq!(u(&v, "summary.exchanges.completed"), 2);
}
