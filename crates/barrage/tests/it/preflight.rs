//! The pre-flight: a plan that does not fit this machine (ports, open files) is refused before
//! any traffic, naming the fix; `--processes auto` takes as many processes as the open-file
//! limit needs. The open-file limit is lowered for the run (`ulimit -Hn`) so that the checks
//! bite at CI size. Everything on 127.0.0.1.

use crate::common::*;
use std::process::Command as StdCommand;

/// `barrage ARGS` under a hard open-file limit of `limit`.
fn limited(limit: u32, args: &[&str]) -> std::process::Output {
    let script = format!("ulimit -Sn {limit} && ulimit -Hn {limit} && exec \"$0\" \"$@\"");
    StdCommand::new("sh")
        .arg("-c")
        .arg(script)
        .arg(bin())
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn plans_too_big_for_the_machine_are_refused_naming_the_fix() {
    // 100,000 connections from one address: more than one port range.
    let out = barrage()
        .args(["tcp://127.0.0.1:9", "-c", "100000", "-d", "1s"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    // The line names the flag the user gave (the count), then every fix.
    assert!(
        e.starts_with("error: -c/--connections: ")
            && e.contains("127.0.0.1-127.0.0.4")
            && e.contains("and --processes 6"),
        "{e}"
    );
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    // With sources, one process's open files are what is short: six processes.
    let out = barrage()
        .args(["tcp://127.0.0.1:9", "-c", "100000", "-d", "1s"])
        .args(["--source-ip", "auto"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.starts_with("error: -c/--connections: ") && e.contains("--processes 6"),
        "{e}"
    );
    // Given --processes 2 and two sources, both too few: the line names the flag given that
    // does not fit, and advises neither of the values just refused.
    let out = barrage()
        .args(["tcp://127.0.0.1:9", "-c", "100000", "-d", "1s"])
        .args(["--source-ip", "127.0.0.1-127.0.0.2", "--processes", "2"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.starts_with("error: --source-ip: ")
            && e.contains("--source-ip 127.0.0.1-127.0.0.4")
            && e.contains("--processes 6")
            && !e.contains("--processes 2 ")
            && !e.contains("127.0.0.1-127.0.0.2 "),
        "{e}"
    );
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    // The same under a limit of 1,000 files: 1,500 connections need two processes.
    let out = limited(1000, &["tcp://127.0.0.1:9", "-c", "1500", "-d", "1s"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("--processes 2"), "{e}");
}

#[test]
fn processes_auto_splits_the_run_as_the_open_file_limit_needs() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let json = json.to_str().unwrap();
    let out = limited(
        1000,
        &[
            server.url(),
            "-c",
            "1500",
            "-n",
            "6000",
            "--processes",
            "auto",
            "-q",
            "--json",
            json,
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_json(std::path::Path::new(json));
    assert_eq!(s(&r, "message"), "2 processes merged");
    assert_eq!(u(&r, "summary.exchanges.completed"), 6000);
    let st = server.stop();
    assert_eq!(st["bytes_read"].as_u64(), Some(6000 * 19));
    // `-n` may end the run before the last of the 1,500 connections is up (a busy machine):
    // the server accepted every connection the shards saw open, and none beyond the plan.
    let accepted = st["connections_accepted"].as_u64().unwrap();
    let opened = u(&r, "summary.connections.succeeded");
    assert!(
        opened <= accepted && accepted <= 1500,
        "accepted {accepted}, opened {opened}"
    );
}

#[test]
fn validate_prints_the_preflight_of_the_whole_run() {
    let out = barrage()
        .args(["validate", "examples/chat-100k.toml"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}{e}");
    assert!(
        text.contains("pre-flight on this machine (100000 users"),
        "{text}"
    );
    assert!(text.contains("ok     local ports"), "{text}");
    assert!(text.contains("ok     open files"), "{text}");
}
