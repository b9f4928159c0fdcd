//! A run split into shards (`--shard I/N --start-at T`), one process each, and `barrage merge`
//! of their `--out` directories: the shards together do exactly the whole run, the merge
//! adds up exactly and reconciles with what the server served, and a wrong set of shards is
//! refused naming what is wrong. Everything on 127.0.0.1.

use crate::common::*;
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

fn shard(url: &str, i: usize, start: &str, dir: &std::path::Path) -> std::process::Child {
    StdCommand::new(bin())
        .args([url, "-c", "4", "-t", "1", "-n", "2000", "-q", "--no-tui"])
        .args(["--shard", &format!("{i}/2"), "--start-at", start])
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

/// Shards 0 and 1 of the same run (`shard`), started together, both ended well.
fn two_shards(url: &str, dir: &std::path::Path) {
    let start = start_in(2);
    let mut a = Guard(shard(url, 0, &start, dir));
    let mut b = Guard(shard(url, 1, &start, dir));
    for c in [&mut a, &mut b] {
        let st = wait_at_most(&mut c.0, Duration::from_secs(60)).expect("the shard ends");
        assert!(st.success(), "{st}");
    }
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
    two_shards(server.url(), d);
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
            vec![d.join("merged.json")],
            "is a result without its seconds",
        ),
        (
            vec![d.join("nope")],
            "nope is neither a run's --out directory",
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

/// Broadcast across shards: two processes' users share the chat server's rooms. Each counts
/// what it received from the other process and times it apart, on the two clocks; the merge
/// adds up to every delivery the server wrote, and shows the deliveries between shards timed
/// only when the shards' recorded clocks agree within `--clock-tolerance` (here one host;
/// then, with the records edited, two synchronized hosts within and beyond the tolerance, and
/// an unsynchronized one).
#[test]
fn broadcast_across_shards_is_timed_only_when_the_clocks_agree() {
    let server = EchoServer::serve("chat", &["--seed", "4"]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let example = example_without_thresholds("chat-rooms.toml", d);
    let start = start_in(2);
    let run = |i: usize| {
        StdCommand::new(bin())
            .arg("run")
            .arg(&example)
            .args(["--target", server.url()])
            .args([
                "--users", "120", "--arrive", "1000", "--hold", "6s", "-t", "1",
            ])
            .args(["--shard", &format!("{i}/2"), "--start-at", &start])
            .args(["-q", "--no-tui", "--out"])
            .arg(d.join(format!("s{i}")))
            .arg("--json")
            .arg(d.join(format!("s{i}.json")))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (Guard(run(0)), Guard(run(1)));
    for c in [&mut a, &mut b] {
        assert!(
            wait_at_most(&mut c.0, Duration::from_secs(60)).is_some(),
            "the shard ends"
        );
    }
    let merged = d.join("m.json");
    let out = merge(&[&d.join("s0"), &d.join("s1")], &merged);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats = server.stop();
    let chat = &stats["chat"];
    assert_eq!(chat["logins"], 120, "each shard ran its 60 users");
    for i in 0..2 {
        let b = &read_json(&d.join(format!("s{i}.json")))["summary"]["broadcast"];
        let n = |k: &str| b[k].as_u64().unwrap();
        assert!(
            n("remote") > 0,
            "shard {i} heard the other one's users: {b}"
        );
        let timed = b["peer_us"]["count"].as_u64().unwrap_or(0)
            + b["own_us"]["count"].as_u64().unwrap_or(0);
        assert_eq!(
            timed + n("remote"),
            n("delivered"),
            "only the local deliveries are timed"
        );
    }
    let whole = read_json(&merged);
    // Both shards ran here: one clock, and the merge says so.
    assert!(
        s(&whole, "message").contains("clocks: one host"),
        "{}",
        s(&whole, "message")
    );
    assert_eq!(
        whole["environment"]["clocks"].as_array().map(Vec::len),
        Some(2)
    );
    let m = &whole["summary"]["broadcast"];
    let n = |k: &str| m[k].as_u64().unwrap();
    assert_eq!(n("sent"), chat["messages_in"].as_u64().unwrap());
    assert_eq!(
        n("delivered") + n("duplicates"),
        chat["deliveries_out"].as_u64().unwrap()
    );
    // The rooms, joined from both shards' links: the server's rooms, all 120 users.
    assert_eq!(m["rooms"]["count"], chat["rooms"], "{m}");
    assert_eq!(m["rooms"]["users"], 120, "{m}");
    // One host: the deliveries between the shards are timed, every one of them.
    assert_eq!(m["remote_us"]["count"].as_u64(), Some(n("remote")), "{m}");
    assert_eq!(m["remote_clock_us"], 0);
    // Two hosts, as their records say: s1 copied with another boot id.
    let host = |from: &str, to: &str, boot: &str, synced: bool, bound: u64| {
        let (from, to) = (d.join(from), d.join(to));
        std::fs::create_dir(&to).unwrap();
        for f in ["seconds.jsonl", "result.json"] {
            std::fs::copy(from.join(f), to.join(f)).unwrap();
        }
        let mut h = read_json(&from.join("run.json"));
        for c in h["environment"]["clocks"].as_array_mut().unwrap() {
            c["boot_id"] = boot.into();
            c["synced"] = synced.into();
            c["max_error_us"] = bound.into();
        }
        std::fs::write(to.join("run.json"), h.to_string()).unwrap();
    };
    host("s0", "a0", "host-a", true, 300);
    host("s1", "b1", "host-b", true, 200);
    host("s1", "c1", "host-c", false, 0);
    let merged_with = |dirs: [&str; 2], tolerance: &str| {
        let out = d.join(format!("{}-{}.json", dirs[1], tolerance));
        let o = barrage()
            .arg("merge")
            .args(dirs.map(|x| d.join(x)))
            .args(["--clock-tolerance", tolerance, "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        read_json(&out)
    };
    let within = merged_with(["a0", "b1"], "1ms");
    let b = &within["summary"]["broadcast"];
    assert_eq!(b["remote_clock_us"], 500, "the two bounds added");
    assert_eq!(b["remote_us"]["count"].as_u64(), Some(n("remote")));
    assert_eq!(b["delivered"], m["delivered"], "the same deliveries");
    for (dirs, tolerance, why) in [
        (["a0", "b1"], "100us", "more than --clock-tolerance 100"),
        (["a0", "c1"], "1ms", "clocks not known to agree"),
    ] {
        let r = merged_with(dirs, tolerance);
        let b = &r["summary"]["broadcast"];
        assert!(b.get("remote_us").is_none(), "{dirs:?}: {b}");
        assert_eq!(b["remote"], m["remote"], "still counted");
        assert!(s(&r, "message").contains(why), "{}", s(&r, "message"));
    }
}

/// A shard's `--json` result alone merges: it embeds its header and seconds, so `barrage merge
/// shard-*.json` gives exactly what merging the `--out` directories gives (the same time series
/// and histograms), and the whole -n as the server read it.
#[test]
fn shards_json_results_merge_like_their_directories() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_shards(server.url(), d);
    let r0 = read_json(&d.join("shard0.json"));
    let seconds = r0["stream"]["seconds"].as_array().unwrap();
    assert_eq!(
        seconds.len(),
        std::fs::read_to_string(d.join("shard0/seconds.jsonl"))
            .unwrap()
            .lines()
            .count(),
        "the same seconds as its --out"
    );
    assert_eq!(r0["stream"]["header"]["shard"], serde_json::json!([0, 2]));
    let (from_files, from_dirs) = (d.join("files.json"), d.join("dirs.json"));
    for (args, out) in [
        ([d.join("shard1.json"), d.join("shard0.json")], &from_files),
        ([d.join("shard0"), d.join("shard1")], &from_dirs),
    ] {
        let o = merge(&[&args[0], &args[1]], out);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let (f, m) = (read_json(&from_files), read_json(&from_dirs));
    assert_eq!(u(&f, "summary.exchanges.completed"), 2000);
    assert_eq!(f["timeseries"], m["timeseries"]);
    assert_eq!(f["summary"]["latency_us"], m["summary"]["latency_us"]);
    assert_eq!(s(&f, "status"), "completed");
    assert!(f.get("stream").is_none(), "a merged run is no shard");
    let st = server.stop();
    assert_eq!(st["bytes_read"].as_u64().unwrap(), 2000 * 19);
    // A file and a directory of the same shard: given twice.
    let o = merge(
        &[&d.join("shard0.json"), &d.join("shard0")],
        &d.join("x.json"),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("shard 0 is given twice"));
}

/// `--processes N`: the same run as N local shard processes, merged into the run's own result
/// (exactly the whole -n, as the server read it); flags it does not take yet are refused.
#[test]
fn processes_split_a_run_locally_and_merge_it() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = barrage()
        .timeout(Duration::from_secs(60))
        .args([
            server.url(),
            "-c",
            "6",
            "-n",
            "3000",
            "--processes",
            "3",
            "-q",
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
    let r = read_json(&json);
    assert_eq!(s(&r, "status"), "completed");
    assert_eq!(u(&r, "summary.exchanges.completed"), 3000);
    assert_eq!(u(&r, "summary.connections.target"), 6);
    assert_eq!(s(&r, "message"), "3 processes merged");
    let st = server.stop();
    assert_eq!(st["bytes_read"].as_u64().unwrap(), 3000 * 19);
    let e = barrage()
        .args([
            "tcp://127.0.0.1:9",
            "-n",
            "1",
            "--processes",
            "2",
            "--start-at",
            "@2000000000",
        ])
        .output()
        .unwrap();
    assert_eq!(e.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&e.stderr).contains("--start-at does not go with --processes"));
    let e = barrage()
        .args([
            "tcp://127.0.0.1:9",
            "-c",
            "1",
            "-n",
            "1",
            "--processes",
            "2",
        ])
        .output()
        .unwrap();
    assert_eq!(e.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&e.stderr).contains("--processes 2 needs at least 2 connections"),
        "{}",
        String::from_utf8_lossy(&e.stderr)
    );
}

/// Issue 43: each child of `--processes` said `wrote /tmp/barrage-shards-.../shardI/`, a
/// directory removed as the run ends. Now the children say nothing of it: a run without
/// `--out` names no directory, one with `--out DIR` names DIR, once; one summary either way.
#[test]
fn processes_name_only_the_directory_that_survives_the_run() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("run");
    for with_out in [false, true] {
        let mut cmd = barrage();
        cmd.timeout(Duration::from_secs(60)).args([
            server.url(),
            "-c",
            "4",
            "-n",
            "400",
            "--processes",
            "2",
            "-q",
        ]);
        if with_out {
            cmd.arg("--out").arg(&out_dir);
        }
        let o = cmd.output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert!(o.status.success(), "{stderr}");
        assert!(
            !stderr.contains("barrage-shards"),
            "the temporary directory is named:\n{stderr}"
        );
        let wrote: Vec<&str> = stderr.lines().filter(|l| l.contains("wrote")).collect();
        if with_out {
            assert_eq!(wrote.len(), 1, "{stderr}");
            assert!(wrote[0].starts_with(&format!("wrote {}/ (", out_dir.display())));
            assert!(out_dir.join("result.json").is_file());
        } else {
            assert!(wrote.is_empty(), "{stderr}");
        }
        assert_eq!(stdout.matches("\nExchanges ").count(), 1, "{stdout}");
    }
}

/// `--processes` with every live output: the parent merges the children's seconds as they
/// come and feeds `--out`, `--csv`, `--hdr-log`, `--prometheus`, `--web` and
/// `--server-metrics` with the merged run, as one process would. While it runs, `/metrics` and
/// the live page hold whole merged seconds; after it, the `--out` directory rebuilds the same
/// result, the CSV and the HDR log have a row and an interval a second, and the server's own
/// counter adds up to what it served.
#[test]
fn processes_feed_every_live_output_with_the_merged_run() {
    let mport = free_port();
    let server = EchoServer::start(&["--metrics", &format!("127.0.0.1:{mport}")]);
    let root = tempfile::tempdir().unwrap();
    let p = |n: &str| root.path().join(n).to_str().unwrap().to_string();
    let (csv, hlog, dir, json) = (p("r.csv"), p("r.hlog"), p("run"), p("r.json"));
    let (prom, web) = (free_port(), free_port());
    let mut child = std::process::Command::new(bin())
        .args([server.url(), "-c", "4", "-d", "4s", "--processes", "2"])
        .args(["--out", &dir, "--csv", &csv, "--hdr-log", &hlog])
        .args(["--prometheus", &format!("127.0.0.1:{prom}")])
        .args(["--web", &format!("127.0.0.1:{web}")])
        .args([
            "--server-metrics",
            &format!("http://127.0.0.1:{mport}/metrics"),
            "--server-metric",
            "barrage_server_bytes_read_total",
        ])
        .args(["-q", "--no-tui", "--json", &json])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // While it runs: a scrape with requests in it, and the live page's seconds.
    let (mut scraped, mut seconds) = (None, None);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while (scraped.is_none() || seconds.is_none()) && std::time::Instant::now() < deadline {
        if let Some((200, body)) = http_get(prom, "/metrics") {
            let total = body
                .lines()
                .find(|l| l.starts_with("barrage_requests_total"))
                .and_then(|l| l.rsplit(' ').next())
                .and_then(|v| v.parse::<f64>().ok());
            scraped = total.filter(|t| *t > 0.0).or(scraped);
        }
        if let Some((200, body)) = http_get(web, "/series") {
            let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            let n = v["points"].as_array().map_or(0, Vec::len);
            seconds = (n > 0).then_some(n).or(seconds);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let status = wait_at_most(&mut child, Duration::from_secs(60)).expect("the run ends");
    assert!(status.success());
    assert!(seconds.is_some(), "the live page had seconds while it ran");
    let r = read_json(std::path::Path::new(&json));
    assert_eq!(s(&r, "message"), "2 processes merged");
    let ticks = r["timeseries"].as_array().unwrap();
    // Every scrape is whole merged seconds: a sum of the first k seconds of the result.
    let mut prefix = vec![0u64];
    for t in ticks {
        prefix.push(prefix.last().unwrap() + t["requests"].as_u64().unwrap());
    }
    let scraped = scraped.expect("a scrape with requests in it") as u64;
    assert!(prefix.contains(&scraped), "{scraped} in {prefix:?}");
    // --out: a whole run's stream, the merged seconds; rebuilt from them alone (without its
    // result.json), the same run.
    let seconds_only = p("seconds-only");
    std::fs::create_dir(&seconds_only).unwrap();
    for f in ["run.json", "seconds.jsonl", "monitor.jsonl"] {
        std::fs::copy(
            std::path::Path::new(&dir).join(f),
            std::path::Path::new(&seconds_only).join(f),
        )
        .unwrap();
    }
    let again = p("again.json");
    let o = barrage()
        .args(["report", &seconds_only, "-o", &again])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let a = read_json(std::path::Path::new(&again));
    for k in [
        "summary.exchanges.completed",
        "summary.exchanges.sent",
        "summary.latency_us.p99",
        "summary.io.bytes_read",
    ] {
        assert_eq!(u(&a, k), u(&r, k), "{k}");
    }
    assert_eq!(a["timeseries"], r["timeseries"]);
    assert_eq!(
        a["monitor"]["interval_s"], r["monitor"]["interval_s"],
        "the monitor's interval"
    );
    // A row and an interval a second.
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), ticks.len() + 1, "{text}");
    let log = std::fs::read_to_string(&hlog).unwrap();
    let intervals = log.lines().filter(|l| l.contains(",HISTF")).count();
    assert_eq!(intervals, ticks.len());
    // The server's counter, scraped by the parent: what it read.
    let st = server.stop();
    let m = &r["server_metrics"][0];
    assert_eq!(m["kind"], "rate");
    assert_eq!(
        m["increase"].as_f64().unwrap(),
        st["bytes_read"].as_f64().unwrap()
    );
    assert_eq!(
        st["bytes_read"].as_u64().unwrap(),
        u(&r, "summary.io.bytes_written")
    );
}

/// `--processes 2` of the rooms example: the processes share one host's clock (`--one-clock`),
/// so the deliveries between them are timed like the rest; every delivery the server wrote is
/// received and timed.
#[test]
fn processes_on_one_host_time_the_deliveries_between_them() {
    let server = EchoServer::serve("chat", &["--seed", "5"]);
    let dir = tempfile::tempdir().unwrap();
    let example = example_without_thresholds("chat-rooms.toml", dir.path());
    let json = dir.path().join("r.json");
    let out = barrage()
        .timeout(Duration::from_secs(90))
        .arg("run")
        .arg(&example)
        .args([
            "--target",
            server.url(),
            "--users",
            "120",
            "--arrive",
            "1000",
        ])
        .args(["--hold", "5s", "--processes", "2", "-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats = server.stop();
    let b = &read_json(&json)["summary"]["broadcast"];
    let n = |k: &str| b[k].as_u64().unwrap();
    assert!(n("remote") > 0, "the processes heard each other: {b}");
    let timed = b["peer_us"]["count"].as_u64().unwrap() + b["own_us"]["count"].as_u64().unwrap();
    assert_eq!(
        timed,
        n("delivered"),
        "every delivery timed, remote ones too"
    );
    assert_eq!(
        n("delivered") + n("duplicates"),
        stats["chat"]["deliveries_out"].as_u64().unwrap()
    );
    // The rooms, joined from both processes' links: the server's rooms, all 120 users.
    assert_eq!(b["rooms"]["count"], stats["chat"]["rooms"], "{b}");
    assert_eq!(b["rooms"]["users"], 120, "{b}");
}

/// A child of `--processes` that dies is named, the others run on, and what it did until
/// then stays in the merged result (its seconds were streamed); the run fails (exit 1).
#[test]
fn a_killed_child_is_named_and_its_seconds_kept() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut parent = Guard(
        StdCommand::new(bin())
            .args([server.url(), "-c", "4", "--think", "10ms", "-d", "6s"])
            .args(["--processes", "2", "-q", "--no-tui", "--json"])
            .arg(&json)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = parent.0.id();
    // The children, once both are up and running (their start is 2 s after the parent's).
    let kids = |pid: u32| -> Vec<u32> {
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    };
    let t = std::time::Instant::now();
    while kids(pid).len() < 2 && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let children = kids(pid);
    assert_eq!(children.len(), 2, "two children");
    std::thread::sleep(Duration::from_secs(4));
    let victim = children[1];
    send_signal(victim, "KILL");
    let st = wait_at_most(&mut parent.0, Duration::from_secs(60)).expect("the run ends");
    assert_eq!(st.code(), Some(1), "a failed child fails the run");
    let r = read_json(&json);
    assert_eq!(s(&r, "status"), "failed");
    let msg = s(&r, "message");
    assert!(
        msg.contains("was killed") && msg.contains("2 processes merged"),
        "{msg}"
    );
    // Both shards' exchanges are in the result: the killed one's until it died.
    let done = u(&r, "summary.exchanges.completed");
    let served = server.stop()["bytes_read"].as_u64().unwrap() / 19;
    assert!(
        done > 0 && done <= served,
        "{done} completed, {served} served"
    );
    let ticks = r["timeseries"].as_array().unwrap();
    let sum: u64 = ticks.iter().map(|t| t["requests"].as_u64().unwrap()).sum();
    assert_eq!(
        sum, done,
        "the seconds hold every exchange, the killed shard's too"
    );
    // The survivor's seconds after the death are kept: the run's last seconds have its
    // exchanges (a dead shard holds none of the others' seconds back).
    let late: u64 = ticks
        .iter()
        .filter(|t| t["t"].as_f64().unwrap() >= 5.0)
        .map(|t| t["requests"].as_u64().unwrap())
        .sum();
    assert!(late > 0, "{ticks:?}");
}

/// A scenario file's `[run]` outputs and server watch belong to the parent of `--processes`:
/// its `spawn` starts the server once (not once more per child) and its `json` is the merged
/// run's.
#[test]
fn processes_leave_the_files_outputs_and_spawn_to_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let spawns = d.join("spawns");
    let json = d.join("r.json");
    let file = d.join("p.toml");
    std::fs::write(
        &file,
        format!(
            r#"target = "tcp://127.0.0.1:{port}"

[protocol]
framing = "line"

[users]
count = 4
arrive = "1000/s"
hold = "2s"

[[steps]]
send = 'hi {{user}}\n'
expect = {{ prefix = "hi" }}

[run]
processes = 2
json = "{json}"
spawn = "echo started >> {spawns} && exec {bin} serve echo --listen 127.0.0.1:{port}"
"#,
            json = json.display(),
            spawns = spawns.display(),
            bin = bin().display(),
        ),
    )
    .unwrap();
    let out = barrage()
        .timeout(Duration::from_secs(60))
        .args(["run"])
        .arg(&file)
        .args(["-q", "--no-tui"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&spawns).unwrap().lines().count(),
        1,
        "the server was spawned once"
    );
    let r = read_json(&json);
    assert_eq!(s(&r, "message"), "2 processes merged");
    assert_eq!(
        u(&r, "summary.exchanges.completed"),
        4,
        "one exchange a user"
    );
    assert!(
        r["spawn"].is_object(),
        "the parent spawned it: {}",
        r["spawn"]
    );
}

/// `--processes` with `--monitor`: one watch for the whole run (the server, and barrage with
/// its children for the generator's CPU), and the thresholds judged on the merged run, server
/// figures included.
#[test]
fn processes_watch_the_server_and_judge_thresholds_on_the_whole() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let pid = server.pid().to_string();
    let out = barrage()
        .timeout(Duration::from_secs(60))
        .args([server.url(), "-c", "4", "--think", "20ms", "-d", "3s"])
        .args([
            "--processes",
            "2",
            "--monitor",
            &pid,
            "--recovery",
            "1s",
            "-q",
        ])
        .args(["--threshold", "server.rss.max < 1GiB"])
        .args(["--threshold", "requests > 1000000000"])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "one threshold fails: {e}");
    let r = read_json(&json);
    let m = &r["monitor"];
    assert_eq!(m["processes"][0]["pid"].as_u64(), Some(server.pid() as u64));
    let gen = m["generator"].as_array().expect("generator samples");
    assert!(
        gen.iter()
            .any(|g| g["cpu_pct"].as_f64().unwrap_or(0.0) > 0.0),
        "the children's CPU is counted: {gen:?}"
    );
    assert_eq!(r["analysis"]["saturation"]["cpu_measured"], true);
    let t = r["thresholds"].as_array().unwrap();
    assert_eq!(t.len(), 2, "{t:?}");
    assert!(
        t.iter()
            .any(|x| x["expr"] == "server.rss.max < 1GiB" && x["passed"] == true),
        "{t:?}"
    );
    assert!(
        t.iter()
            .any(|x| x["expr"] == "requests > 1000000000" && x["passed"] == false),
        "{t:?}"
    );
    let done = u(&r, "summary.exchanges.completed");
    assert_eq!(done * 19, server.stop()["bytes_read"].as_u64().unwrap());
}

/// `--start-at` refuses what cannot be meant (issue 24): a start gone by (which ran nothing
/// and said `completed`), a date that does not exist, and one past any wait (a number that
/// overflowed into a start at the end of time). One line naming the flag, exit 2, no load.
#[test]
fn start_at_in_the_past_invalid_or_absurd_is_refused_naming_the_flag() {
    let port = refused_port();
    let url = format!("tcp://127.0.0.1:{port}");
    let past = format!(
        "@{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            - 120
    );
    for (start, want) in [
        (past.as_str(), "was 2m0"),
        ("2026-02-30T08:00:00Z", "give a UTC time like"),
        ("2026-11-23T24:00:00Z", "give a UTC time like"),
        ("@99999999999999999999", "more than 7 days from now"),
        ("@-1", "give a UTC time like"),
    ] {
        let out = barrage()
            .args([&url, "-n", "1", "-d", "1s", "--start-at", start])
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{start}: {e}");
        assert!(
            e.starts_with(&format!("error: --start-at {start}: ")) && e.contains(want),
            "{start}: {e}"
        );
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
        assert!(out.stdout.is_empty(), "{start}: no load");
    }
}

/// A start ahead is said and counted down on stderr (issue 24: a far start waited without a
/// word), and the run then runs.
#[test]
fn start_at_says_when_the_run_starts_and_counts_down() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = barrage()
        .timeout(Duration::from_secs(60))
        .args([server.url(), "-c", "2", "-n", "20", "--no-tui", "--json"])
        .arg(&json)
        .args(["--start-at", &start_in(6)])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{e}");
    let said: Vec<&str> = e.lines().filter(|l| l.starts_with("barrage: ")).collect();
    assert!(
        said[0].starts_with("barrage: the run starts at 20")
            && said[0].contains("Z (in ")
            && said[0].ends_with("); waiting (Ctrl-C to cancel)"),
        "{e}"
    );
    // At least one mark of the countdown (4 s of them), each sooner than the last.
    let left: Vec<f64> = said[1..]
        .iter()
        .filter_map(|l| {
            l.strip_prefix("barrage: starts in ")?
                .strip_suffix('s')?
                .parse()
                .ok()
        })
        .collect();
    assert!(!left.is_empty(), "{e}");
    assert!(left.windows(2).all(|w| w[1] < w[0]), "{left:?}");
    assert_eq!(u(&read_json(&json), "summary.exchanges.completed"), 20);
}

/// Shards that own nothing are refused or explained (issue 24), as `--processes` refuses
/// more processes than connections: `--shard 99999/100000` (ran 0 connections and said
/// `completed`), `--processes` with `--shard` (ignored `--processes`), and `--processes` whose
/// children's thread shares outnumber the connections.
#[test]
fn shards_that_own_nothing_are_refused() {
    let url = format!("tcp://127.0.0.1:{}", refused_port());
    let start = start_in(30);
    for (args, want) in [
        (
            vec![
                "-c",
                "10",
                "-t",
                "1",
                "--shard",
                "99999/100000",
                "--start-at",
                &start,
            ],
            "--shard 99999/100000 owns no connection: the run's 10 (-c, or users) over 100000 \
             shards of -t 1 reach shards 0 to 9 only; give at most 10 shards",
        ),
        (
            vec![
                "-c",
                "10",
                "-t",
                "2",
                "--shard",
                "5/6",
                "--start-at",
                &start,
            ],
            "reach shards 0 to 4 only; give at most 5 shards",
        ),
        (
            vec![
                "-c",
                "10",
                "-t",
                "1",
                "--shard",
                "0/2",
                "--start-at",
                &start,
                "--processes",
                "2",
            ],
            "--processes does not go with --shard",
        ),
        (
            vec!["-c", "4", "-t", "2", "--processes", "3"],
            "--processes 3 needs at least 5 connections (users) so that every process owns one",
        ),
        (
            vec!["-c", "4", "-t", "1", "--shard", "0/2"],
            "--shard needs --start-at TIME",
        ),
    ] {
        let out = barrage()
            .arg(&url)
            .args(["-n", "1"])
            .args(&args)
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    }
}

/// Negative values of the shard flags are their value, named with the flag (issue 24), not
/// an "unexpected argument '-1'".
#[test]
fn negative_shard_flag_values_name_their_flag() {
    let url = format!("tcp://127.0.0.1:{}", refused_port());
    for (args, want) in [
        (
            vec![url.as_str(), "-n", "1", "--processes", "-1"],
            "--processes",
        ),
        (
            vec![url.as_str(), "-n", "1", "-t", "1", "--shard", "-1/2"],
            "--shard -1/2",
        ),
        (
            vec!["merge", "a", "--clock-tolerance", "-1ms"],
            "--clock-tolerance",
        ),
        (vec!["serve", "echo", "--processes", "-1"], "--processes"),
    ] {
        let out = barrage().args(&args).output().unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains(want) && !e.contains("unexpected argument"),
            "{args:?}: {e}"
        );
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    }
}

/// The temporary directory of a `--processes` parent killed outright (SIGKILL: no destructor
/// runs) is removed by the next `--processes` run (issue 24: it stayed forever).
#[test]
fn a_killed_processes_parents_temporary_directory_is_removed_by_the_next_run() {
    let server = EchoServer::start(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let ours = |t: &std::path::Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(t)
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("barrage-shards-")
            })
            .map(|e| e.path())
            .collect()
    };
    // The directories (each has a lock file beside it, NAME.lock).
    let dirs = |t: &std::path::Path| -> Vec<std::path::PathBuf> {
        ours(t).into_iter().filter(|p| p.is_dir()).collect()
    };
    let mut parent = Guard(
        StdCommand::new(bin())
            .env("TMPDIR", tmp.path())
            .args([server.url(), "-c", "2", "--rate", "20", "-d", "20s"])
            .args(["--processes", "2", "-q", "--no-tui"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Once both children are recording.
    let t = std::time::Instant::now();
    let recording = |dirs: &[std::path::PathBuf]| {
        dirs.len() == 1
            && (0..2).all(|i| {
                std::fs::metadata(dirs[0].join(format!("shard{i}/seconds.jsonl")))
                    .is_ok_and(|m| m.len() > 0)
            })
    };
    while !recording(&dirs(tmp.path())) && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = dirs(tmp.path());
    assert!(recording(&left), "{left:?}");
    send_signal(parent.0.id(), "KILL");
    parent.0.wait().unwrap();
    // Its children end with it (parent-death signal) and write what they have.
    let t = std::time::Instant::now();
    let ended =
        |d: &std::path::Path| (0..2).all(|i| d.join(format!("shard{i}/result.json")).exists());
    while !ended(&left[0]) && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(ended(&left[0]), "the children ended");
    assert_eq!(
        dirs(tmp.path()),
        left,
        "the killed parent's directory stays behind"
    );
    let out = barrage()
        .timeout(Duration::from_secs(60))
        .env("TMPDIR", tmp.path())
        .args([
            server.url(),
            "-c",
            "2",
            "-n",
            "10",
            "--processes",
            "2",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        ours(tmp.path()),
        Vec::<std::path::PathBuf>::new(),
        "the directory and its lock file are gone"
    );
}
