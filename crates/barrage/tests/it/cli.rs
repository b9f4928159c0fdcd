//! Black-box tests of the `barrage` binary: usage errors, help, exit codes, the text and JSON
//! results, signals, and exact byte reconciliation with the reference echo server.
//!
//! All traffic goes to 127.0.0.1, to servers these tests start (port 0) or to a port nothing
//! listens on. Every run is bounded by -d (at most 1.5 s) or -n, every process by a timeout.

use crate::common::*;
use serde_json::Value;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// 1. Bad input: exit code 2 and one clear line naming the flag or value.
// ---------------------------------------------------------------------------------------------

/// Runs barrage with `args`, expects a usage error, and returns stderr's first line.
fn usage_error(args: &[&str]) -> String {
    let out = barrage().args(args).output().expect("run barrage");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(2),
        "barrage {args:?}: want exit code 2, got {:?}\nstderr: {stderr}\nstdout: {stdout}",
        out.status
    );
    let lower = stderr.to_lowercase();
    assert!(
        !lower.contains("panicked") && !lower.contains("backtrace"),
        "barrage {args:?} panicked:\n{stderr}"
    );
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        (1..=2).contains(&lines.len()),
        "barrage {args:?}: want 1-2 lines on stderr, got {}:\n{stderr}",
        lines.len()
    );
    assert!(
        stdout.trim().is_empty(),
        "barrage {args:?}: a usage error must not start a run; stdout:\n{stdout}"
    );
    lines[0].to_string()
}

/// The first line of stderr contains every one of `words` (case-insensitive).
fn assert_usage(args: &[&str], words: &[&str]) {
    let line = usage_error(args);
    let lower = line.to_lowercase();
    for w in words {
        assert!(
            lower.contains(&w.to_lowercase()),
            "barrage {args:?}: the error line should mention {w:?}:\n{line}"
        );
    }
}

/// A target that refuses connections, for cases that must fail before connecting.
fn dead() -> &'static str {
    Box::leak(format!("tcp://127.0.0.1:{}", refused_port()).into_boxed_str())
}

#[test]
fn bad_unknown_scheme() {
    assert_usage(
        &["udp://127.0.0.1:1", "-n", "1"],
        &["unknown scheme", "udp"],
    );
}

#[test]
fn bad_missing_port() {
    assert_usage(
        &["tcp://127.0.0.1", "-n", "1"],
        &["no port", "tcp://127.0.0.1"],
    );
}

#[test]
fn bad_port_zero() {
    assert_usage(
        &["tcp://127.0.0.1:0", "-n", "1"],
        &["port 0", "out of range"],
    );
}

#[test]
fn bad_port_too_large() {
    assert_usage(
        &["tcp://127.0.0.1:65536", "-n", "1"],
        &["port 65536", "out of range"],
    );
}

#[test]
fn bad_port_not_a_number() {
    assert_usage(
        &["tcp://127.0.0.1:http", "-n", "1"],
        &["'http'", "not a number"],
    );
}

#[test]
fn bad_unresolvable_host() {
    assert_usage(
        &["tcp://no-such-host.invalid:80", "-n", "1"],
        &["cannot resolve", "no-such-host.invalid"],
    );
}

#[test]
fn bad_zero_connections() {
    assert_usage(&[dead(), "-c", "0", "-n", "1"], &["--connections", "'0'"]);
}

#[test]
fn bad_zero_duration() {
    assert_usage(
        &[dead(), "-d", "0s"],
        &["--duration", "0s", "greater than zero"],
    );
}

#[test]

fn bad_negative_duration_names_the_flag() {
    assert_usage(&[dead(), "-d", "-5s"], &["--duration", "-5s"]);
}

#[test]
fn bad_negative_duration_is_a_usage_error() {
    // The part that works today: exit 2, one line, no run.
    usage_error(&[dead(), "-d", "-5s"]);
}

#[test]
fn bad_zero_rate() {
    assert_usage(
        &[dead(), "--rate", "0", "-d", "1s"],
        &["--rate", "greater than zero"],
    );
}

#[test]

fn bad_negative_rate_names_the_flag() {
    assert_usage(&[dead(), "--rate", "-1", "-d", "1s"], &["--rate", "-1"]);
}

#[test]
fn bad_negative_rate_is_a_usage_error() {
    let line = usage_error(&[dead(), "--rate", "-1", "-d", "1s"]);
    assert!(line.contains("-1"), "{line}");
}

#[test]
fn bad_zero_interval() {
    assert_usage(
        &[dead(), "--interval", "0ms", "-d", "1s"],
        &["--interval", "0ms", "greater than zero"],
    );
}

#[test]
fn bad_interval_with_rate() {
    assert_usage(
        &[dead(), "--interval", "10ms", "--rate", "100", "-d", "1s"],
        &["--interval", "--rate", "cannot be used"],
    );
}

#[test]
fn bad_expect_bytes_zero() {
    assert_usage(
        &[dead(), "--expect", "bytes:0", "-n", "1"],
        &["--expect", "bytes:0"],
    );
}

#[test]
fn bad_expect_unknown_framing() {
    assert_usage(
        &[dead(), "--expect", "json", "-n", "1"],
        &["--expect json", "unknown framing"],
    );
}

#[test]
fn bad_message_unknown_escape() {
    assert_usage(&[dead(), "-m", r"bad\q", "-n", "1"], &["--message", r"\q"]);
}

#[test]
fn bad_message_short_hex_escape() {
    assert_usage(
        &[dead(), "-m", r"\x4", "-n", "1"],
        &["--message", r"\x", "two hex"],
    );
}

#[test]
fn bad_message_file_missing() {
    assert_usage(
        &[dead(), "--message-file", "/nonexistent", "-n", "1"],
        &["--message-file", "/nonexistent", "no such file"],
    );
}

#[test]

fn bad_message_file_empty_names_message_file() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, b"").unwrap();
    let p = empty.to_str().unwrap();
    assert_usage(
        &[dead(), "--message-file", p, "-n", "1"],
        &["--message-file", "empty"],
    );
}

#[test]
fn bad_verify_without_echo() {
    assert_usage(
        &[dead(), "--verify", "--expect", "line", "-n", "1"],
        &["--verify", "--expect"],
    );
}

#[test]
fn bad_pipeline_in_open_loop() {
    assert_usage(
        &[dead(), "--pipeline", "4", "--interval", "10ms", "-d", "1s"],
        &["--pipeline", "--interval"],
    );
}

#[test]
fn bad_more_connections_than_open_files() {
    // Assumes the hard RLIMIT_NOFILE is below ~5,000,040 (true on any usual system).
    assert_usage(
        &[dead(), "-c", "5000000", "-d", "1s"],
        &["open files", "hard limit", "--processes 251", "local ports"],
    );
}

#[test]
fn bad_json_path() {
    assert_usage(
        &[dead(), "--json", "/nonexistent-dir/x.json", "-n", "1"],
        &["--json", "/nonexistent-dir/x.json"],
    );
}

#[test]
fn bad_unknown_flag() {
    assert_usage(&[dead(), "--bogus", "-n", "1"], &["--bogus"]);
}

#[test]
fn bad_missing_target_names_it() {
    assert_usage(&["run", "-n", "1"], &["<URL|FILE>"]);
}

#[test]
fn bad_stall_at_without_stall_for_names_it() {
    assert_usage(
        &[
            "serve",
            "echo",
            "--listen",
            "127.0.0.1:0",
            "--exit-after",
            "1s",
            "--stall-at",
            "1s",
        ],
        &["--stall-for"],
    );
}

#[test]
fn bad_target_without_scheme_suggests_tcp() {
    assert_usage(&["127.0.0.1:7000", "-n", "1"], &["tcp://"]);
}

#[test]
fn bad_serve_listen_port() {
    assert_usage(
        &[
            "serve",
            "echo",
            "--listen",
            "127.0.0.1:99999",
            "--exit-after",
            "1s",
        ],
        &["--listen", "127.0.0.1:99999"],
    );
}

#[test]
fn bad_serve_stats_path() {
    assert_usage(
        &[
            "serve",
            "echo",
            "--listen",
            "127.0.0.1:0",
            "--exit-after",
            "1s",
            "--stats",
            "/nonexistent-dir/s.json",
        ],
        &["--stats", "/nonexistent-dir/s.json"],
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Version and help.
// ---------------------------------------------------------------------------------------------

#[test]
fn version_prints_the_crate_version() {
    barrage()
        .arg("--version")
        .assert()
        .success()
        .stdout(format!("barrage {}\n", env!("CARGO_PKG_VERSION")));
}

/// Each reference server takes only its own flags (issue 44, item 3): `serve echo --help` lists
/// no HTTP/2, gRPC or chat flag, and such a flag is refused in one line naming the servers that
/// take it.
#[test]
fn each_server_lists_and_takes_only_its_own_flags() {
    let out = barrage()
        .args(["serve", "echo", "--help"])
        .assert()
        .success();
    let help = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    for own in [
        "--listen",
        "--threads",
        "--processes",
        "--stall-at",
        "--tls-cert",
    ] {
        assert!(help.contains(own), "{own} missing from:\n{help}");
    }
    for other in [
        "--max-streams",
        "--goaway-after",
        "--window",
        "--fail-every",
        "--write-proto",
        "--room-size",
        "--max-queue",
        "--no-self",
        "--drop",
        "--service-time",
        "--server-timing",
    ] {
        assert!(
            !help.contains(other),
            "{other} in serve echo's help:\n{help}"
        );
    }
    for (args, line) in [
        (
            &["serve", "echo", "--max-queue", "1M"][..],
            "error: --max-queue applies to serve chat and serve frames, not serve echo \
             (barrage serve echo --help lists its flags)",
        ),
        (
            &["serve", "grpc", "--server-timing"][..],
            "error: --server-timing applies to serve http and serve h2, not serve grpc \
             (barrage serve grpc --help lists its flags)",
        ),
        (
            &["serve", "h2", "--processes", "2"][..],
            "error: --processes applies to serve echo, serve http, serve ws, serve chat and \
             serve frames, not serve h2 (barrage serve h2 --help lists its flags)",
        ),
    ] {
        let out = barrage().args(args).assert().code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert_eq!(err.trim_end(), line, "{args:?}");
    }
}

/// Issue 43: `serve --help` said "(echo, http, ws or chat)" beside seven servers. The kinds
/// are the ones `serve --help` lists as its commands (clap's list of the servers' table);
/// the one-line description, there and in `barrage --help`, names each of them.
#[test]
fn serve_help_names_every_server_kind() {
    let out = barrage().args(["serve", "--help"]).assert().success();
    let help = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let kinds: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        // A command's line, not its description's continuation.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|k| *k != "help")
        .collect();
    assert_eq!(kinds.len(), 7, "the servers `serve --help` lists:\n{help}");
    let about = help.lines().next().unwrap_or_default();
    let top = barrage().arg("--help").assert().success();
    let top = String::from_utf8_lossy(&top.get_output().stdout).into_owned();
    let serve_line = top
        .lines()
        .find(|l| l.trim_start().starts_with("serve "))
        .unwrap_or_default();
    for k in &kinds {
        let named = |line: &str| {
            line.split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == *k)
        };
        assert!(named(about), "serve --help's first line lacks {k}: {about}");
        assert!(
            named(serve_line),
            "barrage --help's serve line lacks {k}: {serve_line}"
        );
    }
}

#[test]
fn help_explains_exit_codes_and_run_help_the_modes() {
    let top = barrage().arg("--help").assert().success();
    let top = String::from_utf8_lossy(&top.get_output().stdout).into_owned();
    for w in [
        "Exit codes",
        "0 completed",
        "1 the run failed",
        "2 bad usage",
        "130 interrupted",
    ] {
        assert!(top.contains(w), "barrage --help lacks {w:?}:\n{top}");
    }
    assert!(top.contains("run") && top.contains("serve") && top.contains("demo"));

    let run = barrage().args(["run", "--help"]).assert().success();
    let run = String::from_utf8_lossy(&run.get_output().stdout).into_owned();
    for w in [
        "--interval",
        "--rate",
        "--think",
        "--pipeline",
        "ping-pong",
        "Open loop",
    ] {
        assert!(run.contains(w), "barrage run --help lacks {w:?}:\n{run}");
    }
}

#[test]
fn both_helps_mention_modes_and_exit_codes() {
    for args in [&["--help"][..], &["run", "--help"][..]] {
        let out = barrage().args(args).assert().success();
        let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        for w in ["--interval", "--rate", "--think", "--pipeline", "130"] {
            assert!(text.contains(w), "barrage {args:?} lacks {w:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 3. A target that refuses: fail fast, exit 1, still write the JSON.
// ---------------------------------------------------------------------------------------------

#[test]
fn refused_target_fails_fast_with_code_1_and_writes_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = dead();
    let t0 = Instant::now();
    let out = barrage()
        .args([url, "-d", "30s", "-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let elapsed = t0.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        elapsed < Duration::from_secs(10),
        "-d 30s against a refusing target took {elapsed:?}; it should give up at once"
    );
    assert!(
        stderr.lines().any(|l| {
            let l = l.to_lowercase();
            l.contains("cannot connect") && l.contains("refused") && l.contains(url)
        }),
        "no 'cannot connect ... refused' line on stderr:\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("FAILED"),
        "the summary should say FAILED:\n{stdout}"
    );

    let r = read_json(&json);
    assert_eq!(s(&r, "status"), "failed");
    assert!(
        s(&r, "message").contains("cannot connect"),
        "{}",
        r["message"]
    );
    assert!(u(&r, "summary.errors.refused") >= 1);
    assert_eq!(u(&r, "summary.connections.succeeded"), 0);
    assert!(u(&r, "summary.connections.failed") >= 1);
    assert_eq!(u(&r, "summary.requests"), 0);
}

// ---------------------------------------------------------------------------------------------
// 4. Ping-pong against the echo server: the JSON record and exact reconciliation.
// ---------------------------------------------------------------------------------------------

const ERROR_CLASSES: [&str; 10] = [
    "refused",
    "connect_timeout",
    "reset",
    "closed_by_peer",
    "timeout",
    "mismatch",
    "local_fd_exhausted",
    "local_port_exhausted",
    "other",
    "not_sent",
];

#[test]
fn ping_pong_json_is_complete_and_reconciles_with_the_server() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("c.json");
    let json_s = json.to_str().unwrap().to_string();
    let url = server.url().to_string();
    let url = url.as_str();
    let args = [
        url, "-c", "20", "-d", "1s", "-t", "2", "--json", &json_s, "-q",
    ];
    let out = barrage().args(args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let srv = server.stop();
    let r = read_json(&json);

    // The record's frame.
    assert_eq!(s(&r, "schema"), "barrage.result/1");
    assert_eq!(s(&r, "status"), "completed");
    assert!(r.get("message").is_none(), "a completed run has no message");
    let mut want: Vec<String> = vec![bin().to_str().unwrap().to_string()];
    want.extend(args.iter().map(|a| a.to_string()));
    let got: Vec<String> = field(&r, "command_line")
        .as_array()
        .expect("command_line is an array")
        .iter()
        .map(|v| v.as_str().expect("string").to_string())
        .collect();
    assert_eq!(got, want, "command_line");
    assert!(s(&r, "started_at").ends_with('Z'));
    assert_eq!(
        s(&r, "environment.barrage_version"),
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(s(&r, "environment.os"), std::env::consts::OS);
    let _ = s(&r, "environment.kernel");
    let _ = s(&r, "environment.cpu_model");
    assert!(u(&r, "environment.cores") >= 1);
    assert_eq!(s(&r, "config.mode"), "ping-pong");
    assert_eq!(u(&r, "config.connections"), 20);
    assert_eq!(u(&r, "config.threads"), 2);
    assert_eq!(f(&r, "config.duration_s"), 1.0);

    // Summary fields.
    let requests = u(&r, "summary.requests");
    assert!(requests > 0);
    for k in ["current", "avg", "peak"] {
        assert!(f(&r, &format!("summary.rps.{k}")) > 0.0, "rps.{k}");
    }
    assert_eq!(s(&r, "summary.latency_basis"), "actual_send");
    assert_eq!(u(&r, "summary.latency_us.count"), requests);
    let lat = |k: &str| u(&r, &format!("summary.latency_us.{k}"));
    assert!(lat("min") <= lat("p50") && lat("p50") <= lat("p90") && lat("p90") <= lat("p99"));
    assert!(lat("p99") <= lat("p999") && lat("p999") <= lat("max"));
    assert!(lat("max") > 0);
    assert!(f(&r, "summary.latency_us.mean") > 0.0);
    for k in ["reads", "writes", "bytes_read", "bytes_written"] {
        assert!(u(&r, &format!("summary.io.{k}")) > 0, "io.{k}");
    }
    for class in ERROR_CLASSES {
        assert_eq!(
            u(&r, &format!("summary.errors.{class}")),
            0,
            "errors.{class}"
        );
        let _ = u(&r, &format!("summary.totals.errors.{class}"));
    }
    assert_eq!(u(&r, "summary.connections.target"), 20);
    assert_eq!(u(&r, "summary.connections.peak"), 20);
    assert_eq!(u(&r, "summary.connections.failed"), 0);

    // Conservation of exchanges.
    let ex = |k: &str| u(&r, &format!("summary.exchanges.{k}"));
    assert_eq!(
        ex("sent"),
        ex("completed") + ex("failed") + ex("in_flight_at_end"),
        "sent = completed + failed + in_flight_at_end"
    );
    assert_eq!(ex("failed"), 0);
    assert_eq!(
        ex("completed"),
        requests,
        "no warm-up: completed == requests"
    );

    // The timeline adds up to the summary.
    let ts = field(&r, "timeseries")
        .as_array()
        .expect("timeseries array");
    assert!(!ts.is_empty());
    let mut sum = 0;
    for e in ts {
        let _ = f(e, "t");
        let _ = f(e, "rps");
        sum += u(e, "requests");
    }
    assert_eq!(sum, ex("completed"), "sum of timeseries[].requests");
    assert!(!s(&r, "histograms.latency.data").is_empty());

    // Exact reconciliation with what the server counted.
    let msg = u(&r, "config.message_bytes");
    assert_eq!(msg, 19, "the default message is 'hello from barrage\\n'");
    assert_eq!(
        u(&r, "summary.totals.bytes_written"),
        u(&srv, "bytes_read"),
        "client wrote == server read"
    );
    assert_eq!(
        u(&r, "summary.totals.bytes_read"),
        u(&srv, "bytes_written"),
        "client read == server wrote"
    );
    assert_eq!(
        ex("completed") * msg,
        u(&srv, "bytes_read"),
        "completed exchanges * message size == server bytes read"
    );
    assert_eq!(
        u(&srv, "connections_accepted"),
        u(&r, "summary.totals.connects")
    );
}

// ---------------------------------------------------------------------------------------------
// 5-7. Text summary, live status line, --json -, `run` and the shortcut.
// ---------------------------------------------------------------------------------------------

const SECTIONS: [&str; 5] = ["Throughput", "Latency", "IO", "Connections", "Errors"];

#[test]
fn summary_sections_on_stdout_and_status_line_unless_quiet() {
    let server = EchoServer::start(&[]);
    let url = server.url();

    let loud = barrage()
        .args([url, "-c", "2", "-t", "1", "-d", "300ms"])
        .output()
        .unwrap();
    assert!(loud.status.success());
    let stdout = String::from_utf8_lossy(&loud.stdout);
    let stderr = String::from_utf8_lossy(&loud.stderr);
    for sec in SECTIONS {
        assert!(
            stdout.lines().any(|l| l.starts_with(sec)),
            "no {sec} section:\n{stdout}"
        );
    }
    assert!(
        !status_lines(&stderr).is_empty(),
        "no live status line on stderr:\n{stderr}"
    );
    assert!(status_lines(&stdout).is_empty(), "status line on stdout");

    let quiet = barrage()
        .args([url, "-c", "2", "-t", "1", "-d", "300ms", "-q"])
        .output()
        .unwrap();
    assert!(quiet.status.success());
    let stderr = String::from_utf8_lossy(&quiet.stderr);
    assert!(
        status_lines(&stderr).is_empty(),
        "-q still prints status:\n{stderr}"
    );
    assert!(String::from_utf8_lossy(&quiet.stdout).contains("Throughput"));
}

#[test]
fn json_to_stdout_moves_the_summary_to_stderr() {
    let server = EchoServer::start(&[]);
    let out = barrage()
        .args([
            server.url(),
            "-n",
            "200",
            "-c",
            "2",
            "-t",
            "1",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(s(&r, "status"), "completed");
    assert_eq!(u(&r, "summary.requests"), 200);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for sec in SECTIONS {
        assert!(
            stderr.contains(sec),
            "no {sec} section on stderr:\n{stderr}"
        );
    }
}

#[test]
fn run_subcommand_and_url_shortcut_are_the_same() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let url = server.url();
    let mut configs = Vec::new();
    for (name, prefix) in [("run", &["run"][..]), ("short", &[][..])] {
        let json = dir.path().join(format!("{name}.json"));
        barrage()
            .args(prefix)
            .args([url, "-n", "300", "-c", "3", "-t", "1", "-q", "--json"])
            .arg(&json)
            .assert()
            .success();
        let r = read_json(&json);
        assert_eq!(s(&r, "status"), "completed", "{name}");
        assert_eq!(u(&r, "summary.requests"), 300, "{name}");
        configs.push(r["config"].clone());
    }
    assert_eq!(configs[0], configs[1], "same plan with and without `run`");
}

// ---------------------------------------------------------------------------------------------
// 8. SIGINT: stop early, exit 130, still report.
// ---------------------------------------------------------------------------------------------

#[test]
fn sigint_stops_the_run_with_code_130_and_writes_results() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("i.json");
    let out_path = dir.path().join("stdout.txt");
    let child = signals_at_default(StdCommand::new(bin()))
        .args([
            server.url(),
            "-c",
            "10",
            "-t",
            "1",
            "-d",
            "30s",
            "-q",
            "--json",
        ])
        .arg(&json)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Guard(child);
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "a -d 30s run ended within 1 s"
    );
    send_signal(child.0.id(), "INT");
    let status = wait_at_most(&mut child.0, Duration::from_secs(20))
        .expect("barrage did not exit within 20 s of SIGINT");
    assert_eq!(status.code(), Some(130), "{status}");

    let stdout = std::fs::read_to_string(&out_path).unwrap();
    assert!(stdout.contains("INTERRUPTED"), "{stdout}");
    assert!(
        stdout.contains("Throughput"),
        "no summary after SIGINT:\n{stdout}"
    );
    let r = read_json(&json);
    assert_eq!(s(&r, "status"), "interrupted");
    assert!(u(&r, "summary.requests") > 0);
    assert!(f(&r, "summary.duration_s") < 10.0);
    let ex = |k: &str| u(&r, &format!("summary.exchanges.{k}"));
    assert_eq!(
        ex("sent"),
        ex("completed") + ex("failed") + ex("in_flight_at_end")
    );
}

// ---------------------------------------------------------------------------------------------
// 9-12. Stop conditions and modes.
// ---------------------------------------------------------------------------------------------

#[test]
fn request_count_stops_after_exactly_n_exchanges() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("n.json");
    let t0 = Instant::now();
    barrage()
        .args([
            server.url(),
            "-n",
            "5000",
            "-c",
            "10",
            "-t",
            "2",
            "-q",
            "--json",
        ])
        .arg(&json)
        .assert()
        .success();
    assert!(
        t0.elapsed() < Duration::from_secs(8),
        "-n 5000 took {:?}",
        t0.elapsed()
    );
    let r = read_json(&json);
    assert_eq!(s(&r, "status"), "completed");
    assert_eq!(u(&r, "summary.exchanges.completed"), 5000);
    assert_eq!(u(&r, "summary.requests"), 5000);
    assert_eq!(u(&r, "config.requests"), 5000);
    assert!(
        r["config"].get("duration_s").is_none(),
        "-n alone has no duration bound"
    );
}

#[test]
fn demo_prints_two_summaries() {
    let out = barrage()
        .args(["demo", "-d", "500ms", "-q"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("Throughput"))
            .count(),
        2,
        "{stdout}"
    );
    assert!(stdout.contains("1/2 ping-pong") && stdout.contains("2/2 fixed interval"));
    assert!(
        status_lines(&stderr).is_empty(),
        "demo -q printed status:\n{stderr}"
    );
    // It ends with what to try next (issue 26).
    let next = stdout
        .split("Try next")
        .nth(1)
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(next.contains("barrage tcp://HOST:PORT") && next.contains("barrage run --help"));
}

/// Issue 26: every output file is announced with its size, after the summary.
#[test]
fn every_file_written_is_announced_with_its_size() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (json, report, csv) = (
        dir.path().join("r.json"),
        dir.path().join("r.html"),
        dir.path().join("r.csv"),
    );
    let out = barrage()
        .args([server.url(), "-c", "2", "-t", "1", "-d", "300ms", "-q"])
        .arg("--json")
        .arg(&json)
        .arg("--report")
        .arg(&report)
        .arg("--csv")
        .arg(&csv)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for f in [&json, &csv, &report] {
        let size = barrage_report::fmt::bytes(std::fs::metadata(f).unwrap().len() as f64);
        let line = format!("wrote {} ({size})", f.display());
        assert!(
            stderr.lines().any(|l| l == line),
            "no '{line}' in:\n{stderr}"
        );
    }
    // With --json - the JSON is on stdout: nothing to announce for it.
    let out = barrage()
        .args([
            server.url(),
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "300ms",
            "-q",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("wrote"));
}

#[test]
fn expect_none_with_interval_sends_on_schedule() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("e.json");
    barrage()
        .args([server.url(), "--expect", "none", "--interval", "10ms"])
        .args(["-c", "5", "-t", "1", "-d", "1s", "-q", "--json"])
        .arg(&json)
        .assert()
        .success();
    let r = read_json(&json);
    assert_eq!(s(&r, "config.mode"), "interval");
    assert_eq!(s(&r, "config.expect"), "none");
    // Exact accounting, whatever the machine's speed: every message due on a schedule was
    // sent (and, with --expect none, completed on write) or counted as not sent; at most
    // 5 conns x 100/s x 1 s fell due.
    let x = &r["summary"]["exchanges"];
    let (scheduled, sent) = (
        u(&r, "summary.exchanges.scheduled"),
        u(&r, "summary.exchanges.sent"),
    );
    assert_eq!(scheduled, sent + u(&r, "summary.exchanges.not_sent"), "{x}");
    assert_eq!(u(&r, "summary.exchanges.completed"), sent, "{x}");
    assert!((1..=505).contains(&scheduled), "{x}");
    assert_eq!(
        u(&r, "summary.errors.total"),
        0,
        "{}",
        r["summary"]["errors"]
    );
}

#[test]
fn open_loop_latency_counts_a_server_stall() {
    let server = EchoServer::start(&["--stall-at", "300ms", "--stall-for", "500ms"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("s.json");
    barrage()
        .args([
            server.url(),
            "--rate",
            "200",
            "-c",
            "10",
            "-t",
            "1",
            "-d",
            "1500ms",
        ])
        .args(["-q", "--json"])
        .arg(&json)
        .assert()
        .success();
    let r = read_json(&json);
    assert_eq!(s(&r, "summary.latency_basis"), "intended_send");
    let max = u(&r, "summary.latency_us.max");
    assert!(
        max >= 350_000,
        "a 500 ms stall should show in max latency, got {max} µs"
    );
    assert_eq!(
        u(&r, "summary.errors.total"),
        0,
        "{}",
        r["summary"]["errors"]
    );
}

// ---------------------------------------------------------------------------------------------
// Results survive a reader that goes away.
// ---------------------------------------------------------------------------------------------

#[test]
fn serve_writes_stats_when_stdout_reader_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    let mut child = StdCommand::new(bin())
        .args(["serve", "echo", "--listen", "127.0.0.1:0", "--threads", "1"])
        .args(["--exit-after", "500ms", "--stats"])
        .arg(&stats)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    std::io::BufRead::read_line(&mut out, &mut first).unwrap();
    assert!(first.contains("listening on 127.0.0.1:"), "{first}");
    drop(out); // like `| head -1`
    let mut child = Guard(child);
    let st = wait_at_most(&mut child.0, Duration::from_secs(10)).expect("server did not exit");
    assert!(st.success(), "server exited with {st}");
    assert_eq!(s(&read_json(&stats), "server"), "echo");
}

/// Issue 43: `serve --write-proto` and `--stats` wrote their files silently; they now say so
/// on stderr as a run does.
#[test]
fn serve_announces_the_files_it_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (proto, stats) = (dir.path().join("echo.proto"), dir.path().join("stats.json"));
    let out = barrage()
        .args(["serve", "grpc", "--listen", "127.0.0.1:0"])
        .args(["--exit-after", "300ms", "--write-proto"])
        .arg(&proto)
        .arg("--stats")
        .arg(&stats)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("wrote ")).collect();
    assert_eq!(said, [wrote(&proto), wrote(&stats)], "{stderr}");
    // Over processes: the first process names the file it wrote, once; the others' files
    // (in its temporary directory, removed once added up) are not named.
    let out = barrage()
        .args([
            "serve",
            "echo",
            "--listen",
            "127.0.0.1:0",
            "--processes",
            "2",
        ])
        .args(["--exit-after", "300ms", "--stats"])
        .arg(&stats)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("wrote ")).collect();
    assert_eq!(said, [wrote(&stats)], "{stderr}");
}

#[test]
fn run_writes_json_when_stdout_reader_is_gone() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut child = StdCommand::new(bin())
        .args([
            server.url(),
            "-n",
            "100",
            "-c",
            "2",
            "-t",
            "1",
            "-q",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // like `| true`
    let mut child = Guard(child);
    wait_at_most(&mut child.0, Duration::from_secs(10)).expect("barrage did not exit");
    let r = read_json(&json);
    assert_eq!(s(&r, "status"), "completed");
    assert_eq!(u(&r, "summary.requests"), 100);
}

/// HTTP and WebSocket flags: every mistake is one line naming the flag, exit code 2.
#[test]
fn bad_http_and_websocket_input_names_the_flag() {
    let port = refused_port();
    let http = format!("http://127.0.0.1:{port}/");
    let ws = format!("ws://127.0.0.1:{port}/");
    let tcp = format!("tcp://127.0.0.1:{port}");
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec![&http, "-H", "X-A: b\r\nInjected: 1"],
            vec!["-H", "CR or LF"],
        ),
        (vec![&http, "-H", "NoColon"], vec!["-H", "Name: value"]),
        (vec![&http, "-H", "Bad Name: x"], vec!["-H", "token"]),
        (
            vec![&http, "--body", "hi"],
            vec!["--body", "GET", "-X POST"],
        ),
        (vec![&http, "-X", "GE T"], vec!["-X", "token"]),
        (
            vec![&http, "-X", "POST", "--body", "@/nonexistent/b"],
            vec!["--body", "no such file"],
        ),
        (
            vec![&http, "--expect-status", "7xx"],
            vec!["--expect-status", "7xx"],
        ),
        (vec![&http, "-m", "hi"], vec!["-m", "-X", "--body"]),
        (vec![&http, "--insecure"], vec!["--insecure", "https://"]),
        (
            vec!["http://127.0.0.1:1/a\nb"],
            vec!["target", "percent-encode"],
        ),
        (
            vec!["http://u:p@127.0.0.1:1/"],
            vec!["target", "Authorization"],
        ),
        (vec![&tcp, "-H", "A: b"], vec!["-H", "http(s)://"]),
        (vec![&tcp, "--body", "x"], vec!["--body", "http(s)://"]),
        (
            vec![&ws, "--expect", "line"],
            vec!["--expect line", "echo or none"],
        ),
        (vec![&ws, "-H", "Bad Name: x"], vec!["-H", "token"]),
        (vec![&ws, "--subprotocol", "a b"], vec!["--subprotocol"]),
        (
            vec![&ws, "--first-message", "x"],
            vec!["--first-message", "tcp://"],
        ),
        (
            vec!["https://127.0.0.1:1/", "--cacert", "/nonexistent/ca.pem"],
            vec!["--cacert"],
        ),
        (vec![&http, "--binary"], vec!["--binary", "ws(s)://"]),
    ];
    for (args, words) in cases {
        let mut a = args.clone();
        a.extend(["-d", "1s"]);
        assert_usage(&a, &words);
    }
}

/// A secret passed in a header never reaches the JSON result.
#[test]
fn secret_headers_are_redacted_from_the_json() {
    let port = refused_port();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = barrage()
        .args([
            &format!("http://127.0.0.1:{port}/"),
            "-H",
            "Authorization: Bearer canary-s3cret",
            "--header=Cookie: sid=canary-s3cret",
            "-d",
            "1s",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "refused target");
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(!text.contains("canary-s3cret"), "{text}");
    assert!(text.contains("[redacted]"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("canary-s3cret"));
}

/// `--threshold`: a malformed expression is a usage error naming it; a failed threshold makes
/// the exit code 3 and is listed; all outcomes are in the JSON.
#[test]
fn thresholds_pass_fail_and_exit_code_3() {
    assert_usage(
        &[dead(), "--threshold", "p99 < 20", "-n", "1"],
        &["--threshold", "p99 < 20", "unit"],
    );
    assert_usage(
        &[dead(), "--threshold", "p98 < 20ms", "-n", "1"],
        &["unknown metric", "p98"],
    );
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = barrage()
        .args([
            server.url(),
            "-c",
            "4",
            "-d",
            "1s",
            "-q",
            "--threshold",
            "p99 < 10s",
            "--threshold",
            "rps.avg >= 100000000",
            "--json",
            json.to_str().unwrap(),
        ])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Thresholds    1 of 2 passed"), "{stdout}");
    assert!(stdout.contains("FAIL   rps.avg >= 100000000"), "{stdout}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let th = v["thresholds"].as_array().unwrap();
    assert_eq!(th.len(), 2);
    assert_eq!(th[0]["passed"], true);
    assert_eq!(th[1]["passed"], false);
    assert_eq!(v["readiness"].as_array().unwrap().len(), 7);

    let out = barrage()
        .args([
            server.url(),
            "-c",
            "2",
            "-d",
            "1s",
            "-q",
            "--threshold",
            "errors.rate < 1%",
        ])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

/// A server threshold without monitoring used to run the whole test and then fail as "not
/// measured": it is refused at start, naming the missing flag.
#[test]
fn unmeasurable_server_threshold_is_refused_at_start() {
    assert_usage(
        &[dead(), "-d", "10m", "--threshold", "server.rss.max < 64MB"],
        &["--threshold", "server.rss.max", "--monitor", "--spawn"],
    );
    assert_usage(
        &[dead(), "-d", "10m", "--threshold", "leak == no"],
        &["leak", "--monitor"],
    );
    assert_usage(
        &[
            dead(),
            "-d",
            "10m",
            "--spawn",
            "true",
            "--recovery",
            "0s",
            "--threshold",
            "server.rss.after < 1GiB",
        ],
        &["server.rss.after", "--recovery 0"],
    );
}

/// `--redact NAME`: a header named on the command line is redacted from the JSON and reports,
/// like the built-in secret headers.
#[test]
fn redact_adds_header_names_to_the_secret_list() {
    let port = refused_port();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let md = dir.path().join("r.md");
    let html = dir.path().join("r.html");
    for report in [&md, &html] {
        let out = barrage()
            .args([
                &format!("http://127.0.0.1:{port}/"),
                "-H",
                "X-Session: canary-42",
                "--redact",
                "x-session",
                "-d",
                "1s",
                "-q",
                "--json",
                json.to_str().unwrap(),
                "--report",
                report.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "refused target");
        for f in [&json, report] {
            let text = std::fs::read_to_string(f).unwrap();
            assert!(!text.contains("canary-42"), "{}: {text}", f.display());
        }
        assert!(!String::from_utf8_lossy(&out.stdout).contains("canary-42"));
    }
}

/// `--baseline` with `--max-regression`: a run against a slower server regresses beyond the
/// limit and beyond noise, and exits 3; a bad limit is a usage error.
#[test]
fn baseline_regression_exits_3() {
    let fast = EchoServer::start(&[]);
    let slow = EchoServer::start(&["--delay", "5ms"]);
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.json");
    let run = |url: &str, extra: &[&str]| {
        // Six seconds: a figure is judged on at least five full seconds of each run.
        let mut a = vec![url, "-c", "4", "--rate", "400", "-d", "6s", "-q"];
        a.extend(extra);
        barrage()
            .args(&a)
            .timeout(std::time::Duration::from_secs(30))
            .output()
            .unwrap()
    };
    let out = run(fast.url(), &["--json", base.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let b = base.to_str().unwrap();
    let json = dir.path().join("run.json");
    let out = run(
        slow.url(),
        &[
            "--baseline",
            b,
            "--max-regression",
            "p50=10%",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    // Issue 43: the Verdict line names what made the exit code 3 (it said "readiness pass"),
    // and the limits follow it at once, not ~67 lines further down.
    let lines: Vec<&str> = stdout.lines().collect();
    let v = lines
        .iter()
        .position(|l| l.starts_with("Verdict"))
        .expect("a Verdict line");
    assert!(
        lines[v].contains("baseline FAIL (1 of 1 limits regressed: p50 +")
            && lines[v].contains("beyond noise, limit 10 %)"),
        "{stdout}"
    );
    assert!(
        lines[v + 1].starts_with("Baseline") && lines[v + 1].contains("base.json"),
        "{stdout}"
    );
    assert!(
        lines[v + 2].trim_start().starts_with("regression p50: +")
            && lines[v + 2].ends_with("-> REGRESSED"),
        "{stdout}"
    );
    // The JSON records the same check.
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let g = &j["baseline"]["regressions"][0];
    assert_eq!(
        (g["metric"].as_str(), g["regressed"].as_bool()),
        (Some("p50"), Some(true)),
        "{}",
        j["baseline"]
    );
    assert_usage(
        &[
            dead(),
            "-n",
            "1",
            "--baseline",
            b,
            "--max-regression",
            "p50=10",
        ],
        &["--max-regression", "p50=10", "%"],
    );
}
