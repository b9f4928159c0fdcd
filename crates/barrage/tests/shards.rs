//! A run split into shards (`--shard I/N --start-at T`), one process each, and `barrage merge`
//! of their `--out` directories: the shards together do exactly the whole run, the merge
//! adds up exactly and reconciles with what the server served, and a wrong set of shards is
//! refused naming what is wrong. Everything on 127.0.0.1.

mod common;

use common::*;
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

fn shard(url: &str, i: usize, start: u64, dir: &std::path::Path) -> std::process::Child {
    StdCommand::new(bin())
        .args([url, "-c", "4", "-t", "1", "-n", "2000", "-q", "--no-tui"])
        .args([
            "--shard",
            &format!("{i}/2"),
            "--start-at",
            &format!("@{start}"),
        ])
        .arg("--out")
        .arg(dir.join(format!("shard{i}")))
        .arg("--json")
        .arg(dir.join(format!("shard{i}.json")))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn merge(args: &[&std::path::Path], out: &std::path::Path) -> std::process::Output {
    barrage()
        .arg("merge")
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn shards_of_a_run_merge_into_exactly_the_whole_run() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 2;
    let mut a = Guard(shard(server.url(), 0, start, d));
    let mut b = Guard(shard(server.url(), 1, start, d));
    for c in [&mut a, &mut b] {
        let st = wait_at_most(&mut c.0, Duration::from_secs(60)).expect("the shard ends");
        assert!(st.success(), "{st}");
    }
    let (r0, r1) = (
        read_json(&d.join("shard0.json")),
        read_json(&d.join("shard1.json")),
    );
    let merged = d.join("merged.json");
    let out = merge(&[&d.join("shard1"), &d.join("shard0")], &merged);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = read_json(&merged);
    let ex = |v: &serde_json::Value, k: &str| u(v, &format!("summary.exchanges.{k}"));
    // The shards did the whole -n between them, and the merge adds them up exactly.
    assert_eq!(ex(&r0, "completed") + ex(&r1, "completed"), 2000);
    for k in ["sent", "completed", "failed", "in_flight_at_end"] {
        assert_eq!(ex(&m, k), ex(&r0, k) + ex(&r1, k), "{k}");
    }
    assert_eq!(u(&m, "summary.connections.target"), 4);
    assert_eq!(s(&m, "status"), "completed");
    let ticks = m["timeseries"].as_array().unwrap();
    let sum: u64 = ticks.iter().map(|t| t["requests"].as_u64().unwrap()).sum();
    assert_eq!(sum, 2000, "the merged seconds hold every exchange");
    assert_eq!(
        u(&m, "summary.latency_us.count"),
        u(&r0, "summary.latency_us.count") + u(&r1, "summary.latency_us.count"),
        "the histograms merged"
    );
    // What the server served: 2,000 messages of 19 bytes.
    let st = server.stop();
    assert_eq!(st["bytes_read"].as_u64().unwrap(), 2000 * 19);

    // A wrong set of shards is refused, naming what is wrong.
    for (args, want) in [
        (vec![d.join("shard0")], "shards 1 of 2 are missing"),
        (
            vec![d.join("shard0"), d.join("shard0"), d.join("shard1")],
            "shard 0 is given twice",
        ),
        (
            vec![d.join("shard0.json")],
            "is not a run's --out directory",
        ),
    ] {
        let args: Vec<&std::path::Path> = args.iter().map(|p| p.as_path()).collect();
        let out = merge(&args, &d.join("x.json"));
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{e}");
        assert!(e.contains(want), "{e}");
    }
}

#[test]
fn shard_flags_are_checked_before_any_load() {
    for (args, want) in [
        (&["--shard", "2/2", "-t", "1"][..], "below N"),
        (&["--shard", "1/2"][..], "needs -t N"),
        (&["--shard", "x", "-t", "1"][..], "I/N"),
        (&["--start-at", "tomorrow"][..], "UTC time"),
    ] {
        let out = barrage()
            .args(["tcp://127.0.0.1:9", "-n", "1"])
            .args(args)
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: {e}");
    }
}
