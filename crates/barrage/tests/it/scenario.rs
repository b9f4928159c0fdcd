//! `barrage run FILE.toml` end to end: users against `serve echo`, per-step counts in the
//! JSON that reconcile with the server's byte counts, the command line over the file, and the
//! usage errors a scenario run can meet.

use crate::common::{self, barrage, f, read_json, s, u, EchoServer};
use std::path::{Path, PathBuf};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Twenty users of an echo server: hello, a chat message every 50 ms while they stay, bye.
/// Its thresholds judge what does not depend on time: a tick due while the machine stalled is
/// honestly not sent (and counts in `steps.chat.errors.rate`), so that rate is not one of them.
fn echo_scenario(url: &str) -> String {
    format!(
        r#"
target = "{url}"
[protocol]
framing = "line"
[users]
count = 20
arrive = "200/s"
hold = "600ms"
depart = "100/s"
data = "people.csv"
[[steps]]
name = "hello"
send = 'hello {{row.name}} {{user}}\n'
expect = {{ prefix = "hello" }}
capture.who = {{ split = " ", field = 3 }}
[[steps]]
name = "chat"
every = "50ms"
send = 'msg {{who}} {{seq}}\n'
expect = {{ regex = "^msg [0-9]+ [0-9]+$" }}
[[leave]]
name = "bye"
send = 'bye {{who}}\n'
expect = {{ prefix = "bye" }}
[run]
timeout = "2s"
thresholds = ["steps.hello.errors.rate == 0", "steps.chat.capture_misses == 0"]
"#
    )
}

fn people(dir: &Path, n: usize) {
    let rows: String = (0..n).map(|i| format!("person{i}\n")).collect();
    write(dir, "people.csv", &format!("name\n{rows}"));
}

#[test]
fn a_scenario_runs_users_whose_steps_reconcile_with_the_server() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    people(dir.path(), 20);
    let file = write(dir.path(), "echo.toml", &echo_scenario(server.url()));
    let json = dir.path().join("out.json");
    let out = barrage()
        .arg("run")
        .arg(&file)
        .args(["-q", "--no-tui", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = read_json(&json);
    let stats = server.stop();
    assert_eq!(s(&v, "config.mode"), "users");
    assert_eq!(u(&v, "config.users.count"), 20);
    let steps = v["summary"]["steps"].as_array().unwrap();
    let names: Vec<&str> = steps.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["hello", "chat", "bye"]);
    let get = |i: usize, k: &str| steps[i][k].as_u64().unwrap();
    assert_eq!((get(0, "sent"), get(0, "completed")), (20, 20));
    assert_eq!((get(2, "sent"), get(2, "completed")), (20, 20));
    assert!(get(1, "completed") >= 20);
    assert_eq!(get(1, "sent"), get(1, "completed"));
    assert_eq!(get(1, "failed") + get(1, "capture_misses"), 0);
    let total: u64 = (0..3).map(|i| get(i, "completed")).sum();
    assert_eq!(total, u(&v, "summary.exchanges.completed"));
    assert_eq!(u(&v, "summary.exchanges.in_flight_at_end"), 0);
    // The echo server read exactly what the users wrote, and wrote it back.
    assert_eq!(
        u(&stats, "bytes_read"),
        u(&v, "summary.totals.bytes_written")
    );
    assert_eq!(
        u(&stats, "bytes_written"),
        u(&v, "summary.totals.bytes_read")
    );
    assert_eq!(
        u(&stats, "connections_accepted"),
        20,
        "one connection per user"
    );
    let th = v["thresholds"].as_array().unwrap();
    assert_eq!(th.len(), 2);
    assert!(th.iter().all(|t| t["passed"] == true), "{th:?}");
}

#[test]
fn the_command_line_overrides_the_file() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    people(dir.path(), 20);
    let file = write(dir.path(), "echo.toml", &echo_scenario(server.url()));
    let json = dir.path().join("out.json");
    let out = barrage()
        .arg("run")
        .arg(&file)
        .args([
            "--users",
            "5",
            "--hold",
            "100ms",
            "--arrive",
            "1000",
            "--threshold",
            "steps.bye.requests == 5",
            "-q",
            "--no-tui",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = read_json(&json);
    drop(server);
    assert_eq!(u(&v, "config.users.count"), 5);
    assert_eq!(v["config"]["users"]["hold_s"].as_f64(), Some(0.1));
    assert_eq!(v["summary"]["steps"][0]["sent"].as_u64(), Some(5));
    // The file's thresholds and the command line's, all evaluated.
    assert_eq!(v["thresholds"].as_array().unwrap().len(), 3);
    assert_eq!(
        v["spec"]["scenario"]["users"].as_u64(),
        Some(5),
        "the spec carries the scenario and its overrides"
    );
}

fn usage_error(args: &[&str], dir: &Path) -> String {
    let out = barrage().current_dir(dir).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn scenario_usage_errors_name_the_flag_or_the_file() {
    let dir = tempfile::tempdir().unwrap();
    people(dir.path(), 20);
    write(dir.path(), "echo.toml", &echo_scenario("tcp://127.0.0.1:9"));
    let d = dir.path();
    let e = usage_error(&["run", "echo.toml", "--rate", "100"], d);
    assert!(e.contains("--rate") && e.contains("scenario"), "{e}");
    let e = usage_error(&["run", "echo.toml", "--users", "50"], d);
    assert!(e.contains("--users 50") && e.contains("rows"), "{e}");
    let e = usage_error(
        &["run", "echo.toml", "--threshold", "steps.nope.p99 < 1s"],
        d,
    );
    assert!(
        e.contains("--threshold") && e.contains("nope") && e.contains("hello"),
        "{e}"
    );
    write(
        d,
        "bad.toml",
        "target = \"tcp://127.0.0.1:9\"\n[users]\ncount = 2\narrive = \"fast\"\n",
    );
    let e = usage_error(&["run", "bad.toml"], d);
    assert!(e.contains("bad.toml:4: users.arrive"), "{e}");
}

#[test]
fn the_route_comparison_example_runs_one_row_per_route_against_serve_http() {
    let server = EchoServer::serve("http", &[]);
    let dir = tempfile::tempdir().unwrap();
    let file = common::example_without_thresholds("routes.toml", dir.path());
    let url = server.url().trim_end_matches('/').to_string();
    let json = dir.path().join("out.json");
    let out = barrage()
        .arg("run")
        .arg(&file)
        .args(["--users", "10", "--hold", "500ms", "--arrive", "100"])
        .args(["--target", &url, "--warmup", "0s"])
        .args(["-q", "--no-tui", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = read_json(&json);
    let stats = server.stop();
    let steps = v["summary"]["steps"].as_array().unwrap();
    let names: Vec<&str> = steps.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["static", "sayhi", "page"]);
    let sent: Vec<u64> = steps.iter().map(|x| x["sent"].as_u64().unwrap()).collect();
    assert!(
        sent[0] >= 10 && sent.iter().all(|&n| n == sent[0]),
        "{sent:?}: each tick sends all three"
    );
    for x in steps {
        assert_eq!(x["completed"], x["sent"], "{x}");
        assert_eq!(x["open_loop"], true);
    }
    let completed = u(&v, "summary.exchanges.completed");
    assert_eq!(completed, sent.iter().sum::<u64>());
    assert_eq!(
        u(&stats, "http.requests"),
        completed,
        "the server answered every request"
    );
    assert_eq!(u(&stats, "http.responses_2xx"), completed);
}

#[test]
fn server_timing_puts_the_servers_time_next_to_the_clients_per_step() {
    let server = EchoServer::serve("http", &["--server-timing"]);
    let dir = tempfile::tempdir().unwrap();
    let url = server.url().trim_end_matches('/').to_string();
    let file = write(
        dir.path(),
        "st.toml",
        &format!(
            r#"
target = "{url}"
[users]
count = 4
arrive = "100/s"
# Room for every user's ten steps (at least 100 ms of /delay/20) on a busy machine: 300 ms
# left 4 of 40 undone once beside two busy loops. The steps run once either way.
hold = "3s"
[[steps]]
name = "hello"
repeat = 5
path = "/"
[[steps]]
name = "slow"
repeat = 5
path = "/delay/20"
"#
        ),
    );
    let json = dir.path().join("out.json");
    let out = barrage()
        .arg("run")
        .arg(&file)
        .args(["-q", "--no-tui", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = read_json(&json);
    drop(server);
    let completed = u(&v, "summary.exchanges.completed");
    assert_eq!(completed, 40);
    assert_eq!(
        u(&v, "summary.server_us.count"),
        completed,
        "every response said"
    );
    let steps = v["summary"]["steps"].as_array().unwrap();
    let slow = &steps[1];
    assert_eq!(slow["server_us"]["count"].as_u64(), Some(20));
    // The server held each /delay/20 request at least 20 ms, and the client saw at least that.
    assert!(
        slow["server_us"]["min"].as_u64().unwrap() >= 19_900,
        "{slow}"
    );
    assert!(
        slow["latency_us"]["min"].as_u64().unwrap() >= slow["server_us"]["min"].as_u64().unwrap(),
        "{slow}"
    );
    assert_eq!(slow["server_gap_us"]["count"].as_u64(), Some(20));
    assert_eq!(steps[0]["server_us"]["count"].as_u64(), Some(20));
}

/// The seed's chat protocol, one JSON object per line: login gives a session, join answers
/// `joined` and pushes a ping, say answers `said`, leave answers `bye`. Counts what it saw.
fn chat_server(
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) -> (u16, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    use std::io::{BufRead, BufReader, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let st = stop.clone();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        while !st.load(std::sync::atomic::Ordering::Relaxed) {
            let Ok((s, _)) = l.accept() else {
                std::thread::sleep(std::time::Duration::from_millis(5));
                continue;
            };
            s.set_nonblocking(false).unwrap();
            let seen = seen.clone();
            std::thread::spawn(move || {
                let mut w = s.try_clone().unwrap();
                let mut session = String::new();
                for line in BufReader::new(s).lines() {
                    let Ok(line) = line else { return };
                    let v: serde_json::Value = match serde_json::from_str(&line) {
                        Ok(v) => v,
                        Err(_) => return,
                    };
                    let op = v["op"].as_str().unwrap_or("?").to_string();
                    let ok_session = v["session"].as_str() == Some(session.as_str());
                    seen.lock().unwrap().push(match op.as_str() {
                        "login" => format!("login {}", v["user"].as_str().unwrap_or("?")),
                        "pong" => "pong".into(),
                        other if v.get("session").is_none() => other.to_string(),
                        other => format!("{other} {}", if ok_session { "ok" } else { "BAD" }),
                    });
                    let reply = match op.as_str() {
                        "login" => {
                            session = format!("s-{}", v["user"].as_str().unwrap_or("?"));
                            format!("{{\"ok\":true,\"session\":\"{session}\"}}\n")
                        }
                        "join" => "{\"op\":\"joined\"}\n{\"op\":\"ping\"}\n".into(),
                        "say" => "{\"op\":\"said\"}\n".into(),
                        "leave" => "{\"op\":\"bye\"}\n".into(),
                        _ => String::new(),
                    };
                    if w.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, stop)
}

#[test]
fn the_chat_example_runs_as_written_against_a_chat_server() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (port, stop) = chat_server(seen.clone());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("chat.json");
    let chat = common::example_without_thresholds("chat.toml", dir.path());
    let out = barrage()
        .arg("run")
        .arg(&chat)
        .args(["--target", &format!("tcp://127.0.0.1:{port}")])
        .args(["--threshold", "errors.rate < 0.1%"])
        .args([
            "--users", "10", "--arrive", "100", "--hold", "4s", "--warmup", "0s",
        ])
        .args(["-q", "--no-tui", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let v = read_json(&json);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        v["thresholds"]
    );
    let seen = seen.lock().unwrap();
    let n = |p: &str| seen.iter().filter(|l| l.starts_with(p)).count() as u64;
    let logins: std::collections::BTreeSet<&str> = seen
        .iter()
        .filter_map(|l| l.strip_prefix("login "))
        .collect();
    let want: std::collections::BTreeSet<String> = (0..10).map(|i| format!("user{i:04}")).collect();
    assert_eq!(
        logins,
        want.iter().map(String::as_str).collect(),
        "row g of users.csv fed user g"
    );
    let bad = seen.iter().filter(|l| l.ends_with("BAD")).count();
    assert_eq!(bad, 0, "the captured session reached join and leave");
    assert_eq!((n("join ok"), n("pong"), n("leave ok")), (10, 10, 10));
    let steps = v["summary"]["steps"].as_array().unwrap();
    let by = |name: &str| steps.iter().find(|s| s["name"] == name).unwrap().clone();
    assert_eq!(by("login")["completed"], 10);
    assert_eq!(by("join")["completed"], 10);
    assert_eq!(by("bye")["completed"], 10);
    let say = by("say");
    assert!(say["completed"].as_u64().unwrap() >= 10, "{say}");
    assert_eq!(say["sent"].as_u64().unwrap(), n("say"));
    assert_eq!(u(&v, "summary.totals.pushed"), 10);
    assert_eq!(v["thresholds"].as_array().unwrap().len(), 1);
}

/// A tiny HTTP/1.1 server: `/h` says its time in `X-Response-Time: 7ms`, `/j` in the JSON
/// body (`{"took_ms":3.5}`), both also with `Server-Timing: app;dur=99` (which the step's
/// own source overrides).
fn timed_http_server() -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            std::thread::spawn(move || {
                let mut w = s.try_clone().unwrap();
                let mut r = BufReader::new(s);
                loop {
                    let mut first = String::new();
                    if r.read_line(&mut first).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                    }
                    let (extra, body) = if first.starts_with("GET /h ") {
                        ("X-Response-Time: 7ms\r\n", "{}".to_string())
                    } else {
                        ("", "{\"took_ms\":3.5}".to_string())
                    };
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\nServer-Timing: app;dur=99\r\n{extra}Content-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if w.write_all(resp.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[test]
fn a_step_names_where_the_server_says_its_time() {
    let port = timed_http_server();
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "t.toml",
        &format!(
            r#"
target = "http://127.0.0.1:{port}"
[users]
count = 3
arrive = "100/s"
hold = "100ms"
[[steps]]
name = "by-header"
repeat = 4
path = "/h"
server_time = {{ header = "X-Response-Time" }}
[[steps]]
name = "by-json"
repeat = 4
path = "/j"
server_time = {{ json = "/took_ms" }}
"#
        ),
    );
    let json = dir.path().join("out.json");
    let out = barrage()
        .arg("run")
        .arg(&file)
        .args(["-q", "--no-tui", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = read_json(&json);
    let steps = v["summary"]["steps"].as_array().unwrap();
    let p50 = |i: usize| steps[i]["server_us"]["p50"].as_u64().unwrap();
    assert_eq!(steps[0]["server_us"]["count"].as_u64(), Some(12));
    assert!((6_990..=7_010).contains(&p50(0)), "{}", p50(0));
    assert!((3_495..=3_505).contains(&p50(1)), "{}", p50(1));
    // A source that is not one of header or json is refused before any traffic.
    let bad = std::fs::read_to_string(&file).unwrap().replace(
        "{ json = \"/took_ms\" }",
        "{ json = \"/took_ms\", header = \"X\" }",
    );
    write(dir.path(), "bad.toml", &bad);
    let e = usage_error(&["run", "bad.toml"], dir.path());
    assert!(e.contains("bad.toml:") && e.contains("server_time"), "{e}");
}

/// 120 users of the rooms example against `target`, held `hold`, with the thresholds
/// `broadcast.reach >= REACH` and `broadcast.lost == 0`: the run's output and its JSON.
fn rooms(
    example: &Path,
    target: &str,
    hold: &str,
    reach: &str,
    dir: &Path,
) -> (std::process::Output, serde_json::Value) {
    let json = dir.join("rooms.json");
    let out = barrage()
        .arg("run")
        .arg(example)
        .args(["--target", target])
        .args(["--users", "120", "--arrive", "1000", "--hold", hold])
        .args(["--threshold", &format!("broadcast.reach >= {reach}")])
        .args(["--threshold", "broadcast.lost == 0"])
        .args(["-q", "--no-tui", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let v = read_json(&json);
    (out, v)
}

#[test]
fn the_rooms_example_reconciles_deliveries_with_serve_chat_and_reads_its_faults() {
    let dir = tempfile::tempdir().unwrap();
    // The file's latency limit is for a quiet machine: judged here are reach and loss only.
    let example = common::example_without_thresholds("chat-rooms.toml", dir.path());
    for (fault, knob) in [
        (None, ""),
        (Some("--drop"), "2%"),
        (Some("--dup"), "2%"),
        (Some("--reorder"), "5%"),
    ] {
        let mut extra = vec!["--seed", "5"];
        if let Some(f) = fault {
            extra.extend([f, knob]);
        }
        let server = EchoServer::serve("chat", &extra);
        let (out, v) = rooms(&example, server.url(), "6s", "99.9%", dir.path());
        let stats = server.stop();
        let chat = &stats["chat"];
        let b = &v["summary"]["broadcast"];
        let n = |x: &serde_json::Value, k: &str| x[k].as_u64().unwrap();
        assert_eq!(n(chat, "logins"), 120);
        assert_eq!(n(b, "sent"), n(chat, "messages_in"), "{fault:?}");
        assert_eq!(
            n(b, "delivered") + n(b, "duplicates"),
            n(chat, "deliveries_out"),
            "{fault:?}: every delivery the server wrote was received"
        );
        assert_eq!(n(b, "duplicates"), n(chat, "duplicated"), "{fault:?}");
        assert_eq!(n(b, "late"), n(chat, "reordered"), "{fault:?}");
        match fault {
            None | Some("--reorder") => {
                // A reordered delivery arrives late, not lost: the gap it left is filled.
                if fault.is_some() {
                    assert!(n(chat, "reordered") > 0);
                }
                assert!(out.status.success(), "{}", v["thresholds"]);
                assert_eq!(n(b, "lost"), 0);
                assert_eq!(n(b, "delivered"), n(b, "expected"), "reach 100 %");
                assert_eq!(n(b, "missing"), 0);
            }
            Some("--drop") => {
                // Everyone is in a room before anyone speaks (arrivals take 0.12 s, the first
                // message comes 1 s after login), so the expected deliveries are exact.
                assert!(n(chat, "dropped") > 0);
                assert_eq!(n(b, "delivered") + n(chat, "dropped"), n(b, "expected"));
                assert_eq!(
                    n(b, "missing"),
                    n(chat, "dropped"),
                    "not received: the dropped"
                );
                assert!(n(b, "lost") <= n(chat, "dropped"));
                assert_eq!(out.status.code(), Some(3), "the reach threshold fails");
            }
            _ => {}
        }
    }
}

/// The rooms a broadcast run saw, against `barrage serve chat --room-size 5`: 120 users are
/// exactly 24 rooms of 5, as the server made them, in the JSON (`summary.broadcast.rooms`),
/// the text summary and the Markdown report; with sizes drawn from 3-8 the count is the
/// server's and the members add up to its logins.
#[test]
fn the_rooms_example_reports_as_many_rooms_of_each_size_as_serve_chat_made() {
    let dir = tempfile::tempdir().unwrap();
    let example = common::example_without_thresholds("chat-rooms.toml", dir.path());
    let server = EchoServer::serve("chat", &["--room-size", "5"]);
    let json = dir.path().join("rooms.json");
    let out = barrage()
        .arg("run")
        .arg(&example)
        .args(["--target", server.url()])
        .args([
            "--users", "120", "--arrive", "1000", "--hold", "3s", "--no-tui",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stats = server.stop();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert_eq!(stats["chat"]["rooms"], 24);
    let v = read_json(&json);
    assert_eq!(
        v["summary"]["broadcast"]["rooms"],
        serde_json::json!({"count": 24, "users": 120, "sizes": [{"size": 5, "rooms": 24}]})
    );
    assert!(
        text.contains("rooms 24 of 120 users: 24 of 5 members"),
        "{text}"
    );
    let md = dir.path().join("rooms.md");
    let out = barrage()
        .args(["report", json.to_str().unwrap(), "-o", md.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("| rooms (users that heard each other) | 24 of 120 users |")
            && md.contains("| room sizes (rooms of each size) | 24 of 5 members |"),
        "{md}"
    );

    let server = EchoServer::serve("chat", &["--seed", "5"]);
    let (_, v) = rooms(&example, server.url(), "3s", "99.9%", dir.path());
    let chat = server.stop()["chat"].clone();
    let r = &v["summary"]["broadcast"]["rooms"];
    assert_eq!(r["count"], chat["rooms"]);
    assert_eq!(r["users"], chat["logins"]);
    let sizes = r["sizes"].as_array().unwrap();
    let members: u64 = sizes
        .iter()
        .map(|z| z["size"].as_u64().unwrap() * z["rooms"].as_u64().unwrap())
        .sum();
    assert_eq!(members, 120);
}

/// The two timing knobs of serve chat read as injected: with `--delay`, no delivery arrives
/// sooner than the delay and the server's `bye` still follows what it owed (reach 100 %);
/// with a one-second `--stall-at/--stall-for`, nothing is lost and the messages sent into the
/// stall wait for its end.
#[test]
fn the_delay_and_stall_knobs_read_as_injected() {
    let dir = tempfile::tempdir().unwrap();
    let example = common::example_without_thresholds("chat-rooms.toml", dir.path());
    let delay_us = 150_000;
    for knobs in [
        &["--delay", "150ms"][..],
        &["--stall-at", "4s", "--stall-for", "1s"][..],
    ] {
        let server = EchoServer::serve("chat", &[&["--seed", "7"][..], knobs].concat());
        let (out, v) = rooms(&example, server.url(), "8s", "100%", dir.path());
        let stats = server.stop();
        assert!(out.status.success(), "{knobs:?}: {}", v["thresholds"]);
        let (chat, b) = (&stats["chat"], &v["summary"]["broadcast"]);
        let n = |x: &serde_json::Value, k: &str| x[k].as_u64().unwrap();
        assert_eq!(n(chat, "logins"), 120);
        assert_eq!(n(b, "sent"), n(chat, "messages_in"), "{knobs:?}");
        assert_eq!(n(b, "delivered"), n(chat, "deliveries_out"), "{knobs:?}");
        assert_eq!(n(b, "delivered"), n(b, "expected"), "{knobs:?}");
        let (peer, own) = (&b["peer_us"], &b["own_us"]);
        if knobs[0] == "--delay" {
            assert!(n(peer, "min") >= delay_us, "{knobs:?}: {peer}");
            assert!(n(own, "min") >= delay_us, "{knobs:?}: {own}");
        } else {
            // About 30 messages a second are sent from 1 s to 8 s into the run: some sent early
            // in the stall (4 s to 5 s after the server started, so barrage may start up to
            // 3.5 s late) wait most of it.
            assert!(n(peer, "max").max(n(own, "max")) >= 500_000, "{peer}");
        }
    }
}

/// The rooms over WebSocket: examples/chat-ws.toml against serve chat's WebSocket side
/// reconciles as the line protocol does.
#[test]
fn the_websocket_rooms_example_reconciles_with_serve_chat() {
    let dir = tempfile::tempdir().unwrap();
    let example = common::example_without_thresholds("chat-ws.toml", dir.path());
    let server = EchoServer::serve("chat", &["--seed", "3"]);
    let target = server.url().replace("tcp://", "ws://") + "/chat";
    let (out, v) = rooms(&example, &target, "6s", "100%", dir.path());
    let stats = server.stop();
    assert!(out.status.success(), "{}", v["thresholds"]);
    let (chat, b) = (&stats["chat"], &v["summary"]["broadcast"]);
    let n = |x: &serde_json::Value, k: &str| x[k].as_u64().unwrap();
    assert_eq!((n(chat, "logins"), n(chat, "leaves")), (120, 120));
    assert_eq!(n(b, "sent"), n(chat, "messages_in"));
    assert_eq!(n(b, "delivered"), n(chat, "deliveries_out"));
    assert_eq!(n(b, "delivered"), n(b, "expected"));
    assert_eq!((n(b, "lost"), n(b, "duplicates")), (0, 0));
    assert_eq!(u(&v, "summary.exchanges.unexpected_replies"), 0);
    assert_eq!(v["summary"]["steps"][1]["sent"], b["sent"], "the say step");
}

/// The fault knobs at CI size: 2,000 users against serve chat dropping, duplicating and
/// reordering 1 % of deliveries each. Duplicates and late (reordered) copies read exactly as
/// injected, and the loss as the dropped share of what was owed.
#[test]
fn the_fault_knobs_read_as_injected_at_ci_size() {
    let dir = tempfile::tempdir().unwrap();
    let example = common::example_without_thresholds("chat-rooms.toml", dir.path());
    let server = EchoServer::serve(
        "chat",
        &[
            "--seed",
            "11",
            "--drop",
            "1%",
            "--dup",
            "1%",
            "--reorder",
            "1%",
        ],
    );
    let json = dir.path().join("faults.json");
    let out = barrage()
        .timeout(std::time::Duration::from_secs(90))
        .arg("run")
        .arg(&example)
        .args(["--target", server.url()])
        .args(["--users", "2000", "--arrive", "1000", "--hold", "9s"])
        .args(["-q", "--no-tui", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(json.exists(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = read_json(&json);
    let stats = server.stop();
    let (chat, b) = (&stats["chat"], &v["summary"]["broadcast"]);
    let n = |x: &serde_json::Value, k: &str| x[k].as_u64().unwrap();
    assert_eq!(n(chat, "logins"), 2000);
    assert_eq!(n(b, "sent"), n(chat, "messages_in"));
    // Users leave with a `leave` the server answers after what it owed them: every delivery
    // written was received, a duplicate being one more.
    assert_eq!(
        n(b, "delivered") + n(b, "duplicates"),
        n(chat, "deliveries_out")
    );
    assert_eq!(
        n(b, "duplicates"),
        n(chat, "duplicated"),
        "duplicates as injected"
    );
    assert!(n(b, "late") > 0, "{b}");
    assert_eq!(n(b, "late"), n(chat, "reordered"), "reorders as injected");
    assert_eq!(n(b, "too_old"), 0);
    // What was owed and not received was dropped: the measured loss is the injected one, but
    // for messages a sender sent while its room size was out of date.
    let owed = n(b, "expected");
    let missing = owed - n(b, "delivered");
    let dropped = n(chat, "dropped");
    assert!(dropped > 0);
    assert!(
        missing.abs_diff(dropped) * 1000 <= owed,
        "{missing} missing, {dropped} dropped of {owed}"
    );
    let injected =
        dropped as f64 / (n(chat, "deliveries_out") + dropped - n(chat, "duplicated")) as f64;
    assert!(
        (0.007..0.013).contains(&injected),
        "1 % drop injected: {injected}"
    );
    let reach = b["reach"].as_f64().unwrap();
    assert!(
        (1.0 - reach - injected).abs() < 0.001,
        "reach {reach} against {injected} dropped"
    );
    assert!(n(b, "lost") > 0 && n(b, "lost") <= dropped, "{b}");
}

/// Seed 003 at CI size: examples/chat-100k.toml itself, 2,000 users arriving at 500/s,
/// against serve chat. Every delivery the server wrote is counted; reach is 100 % but for the
/// few messages sent while a room was still filling (their sender's room size was one behind).
#[test]
fn the_seed_file_at_ci_size_counts_every_delivery() {
    let server = EchoServer::serve("chat", &["--room-size", "3-8"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("seed.json");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chat-100k.toml");
    // 2,000 users: 4 s of arrivals, 11 s of hold, 20 s of departures at 100/s.
    let out = barrage()
        .timeout(std::time::Duration::from_secs(90))
        .arg("run")
        .arg(&example)
        .args(["--target", server.url()])
        .args([
            "--users", "2000", "--arrive", "500", "--hold", "11s", "-t", "1",
        ])
        .args(["-q", "--no-tui", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(json.exists(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = read_json(&json);
    let stats = server.stop();
    let chat = &stats["chat"];
    let b = &v["summary"]["broadcast"];
    let n = |x: &serde_json::Value, k: &str| x[k].as_u64().unwrap();
    assert_eq!(n(chat, "logins"), 2000);
    assert_eq!(n(b, "sent"), n(chat, "messages_in"));
    // Users leave at 100/s at the end: a delivery the server wrote to a user who had already
    // closed is lost on the wire, and only those.
    let written = n(chat, "deliveries_out");
    let got = n(b, "delivered") + n(b, "duplicates");
    assert!(got <= written && written - got <= 10, "{got} of {written}");
    let reach = b["reach"].as_f64().unwrap();
    assert!((0.99..=1.01).contains(&reach), "reach {reach}");
    assert_eq!(n(b, "duplicates"), 0);
    assert_eq!(u(&v, "summary.exchanges.unexpected_replies"), 0);
    assert!(out.status.code() == Some(0) || out.status.code() == Some(3));
    // The steady state is the schedule's: from the moment the last user's own pacing began
    // (its arrival, or its connection if that opened later, plus the longest think before
    // its first `every`: 5 s) to the first departure (hold after the last arrival), although
    // users leaving at 100/s keep the run from ending at full strength.
    let a = &v["analysis"];
    let last = f(&v, "config.users.last_arrival_s");
    assert_eq!(f(&v, "config.users.pacing_after_s"), 5.0);
    let from = f(a, "steady_from_s");
    assert!(from >= last + 5.0, "{from}");
    assert_eq!(f(a, "steady_to_s"), last + 11.0);
    assert!(f(a, "load_end_s") > last + 11.0);
    let full_steady = v["timeseries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["phase"] == "measured" && f(t, "dt") >= 0.999)
        .filter(|t| f(t, "t") - f(t, "dt") >= from - 1e-6 && f(t, "t") <= last + 11.0)
        .count() as u64;
    assert!(full_steady >= 3, "{full_steady}");
    assert_eq!(u(a, "stability.n"), full_steady);
    // The report draws the delivery side over time.
    let html = dir.path().join("seed.html");
    let r = barrage()
        .arg("report")
        .arg(&json)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(r.status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    for want in [
        "Broadcast (one-to-many delivery)",
        "Broadcast deliveries",
        "Broadcast reach per second",
        "Delivery latency to others",
    ] {
        assert!(page.contains(want), "the report has {want}");
    }
}
