//! `barrage merge` takes nothing on trust (issue 24): shards of another run, an index not
//! below its count, seconds repeated, reversed or holding a wrapped count, and an output that
//! is one of the inputs are refused naming the shard and the second; a shard that recorded
//! nothing or stopped early makes the merged run `incomplete`, naming it. Each test runs two
//! real shards (open loop, 2.5 s, on 127.0.0.1) and edits copies of what they wrote, as a
//! cut, edited or mixed-up file would be.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

/// Shards 0 and 1 of one run (250 exchanges at 100 a second against `url`: seconds 0, 1 and
/// 2, cut at the 250th reply, and the drain), into
/// `dir/shard0`, `dir/shard1` and `dir/shard0.json`, `dir/shard1.json`.
fn two_shards(url: &str, dir: &Path) {
    let start = start_in(2);
    let run = |i: usize| {
        Guard(
            StdCommand::new(bin())
                .args([url, "-c", "4", "-t", "1", "--rate", "100", "-n", "250"])
                .args(["-q", "--no-tui", "--shard", &format!("{i}/2")])
                .args(["--start-at", &start, "--out"])
                .arg(dir.join(format!("shard{i}")))
                .arg("--json")
                .arg(dir.join(format!("shard{i}.json")))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let mut shards = [run(0), run(1)];
    for c in &mut shards {
        let st = wait_at_most(&mut c.0, Duration::from_secs(60)).expect("the shard ends");
        assert!(st.success(), "{st}");
    }
}

/// A copy of a shard's `--out` directory, `edit`ed.
fn edited(src: &Path, to: &Path, edit: impl FnOnce(&Path)) -> PathBuf {
    std::fs::create_dir(to).unwrap();
    for f in std::fs::read_dir(src).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), to.join(f.file_name())).unwrap();
    }
    edit(to);
    to.to_path_buf()
}

fn lines_of(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("seconds.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_lines(dir: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    std::fs::write(dir.join("seconds.jsonl"), text).unwrap();
}

fn merge(args: &[&Path], out: Option<&Path>) -> std::process::Output {
    let mut c = barrage();
    c.arg("merge").args(args);
    if let Some(o) = out {
        c.arg("-o").arg(o);
    }
    c.output().unwrap()
}

/// A refusal: exit 2, one line on stderr saying `want`, nothing on stdout, no panic.
fn refused(out: &std::process::Output, want: &[&str]) {
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(!e.contains("panicked"), "{e}");
    assert!(out.stdout.is_empty());
    for w in want {
        assert!(e.contains(w), "{w:?} not in: {e}");
    }
}

#[test]
fn merge_refuses_a_shard_index_not_below_its_count() {
    // Regression: `merge` panicked (index out of bounds) on a header saying shard 7/2.
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_shards(server.url(), d);
    let bad = edited(&d.join("shard1"), &d.join("bad"), |p| {
        let h = std::fs::read_to_string(p.join("run.json")).unwrap();
        let mut h: serde_json::Value = serde_json::from_str(&h).unwrap();
        h["shard"] = serde_json::json!([7, 2]);
        std::fs::write(p.join("run.json"), h.to_string()).unwrap();
    });
    let out = merge(&[&d.join("shard0"), &bad], Some(&d.join("m.json")));
    refused(&out, &["bad says it is shard 7/2", "I must be below N"]);
}

#[test]
fn merge_refuses_shards_of_two_runs_of_the_same_command() {
    // Regression: shard 0 of one run and shard 1 of another run of the same command (their
    // start instants differ) merged as one `completed` run.
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for d in [&a, &b] {
        std::fs::create_dir(d).unwrap();
        two_shards(server.url(), d);
    }
    let out = merge(
        &[&a.join("shard0"), &b.join("shard1")],
        Some(&dir.path().join("m.json")),
    );
    refused(
        &out,
        &["is a shard of another run than", "it started at 20"],
    );
    let out = merge(
        &[&a.join("shard0.json"), &b.join("shard1.json")],
        Some(&dir.path().join("m.json")),
    );
    refused(&out, &["shard1.json is a shard of another run"]);
    // The shards of one run merge.
    let out = merge(&[&b.join("shard0"), &b.join("shard1")], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn merge_refuses_repeated_reversed_and_wrapped_seconds_naming_the_shard_and_the_second() {
    // Regression: a second given twice, seconds out of order, and a count wrapped below zero
    // (18446744073709551615) were summed into a `completed` run.
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_shards(server.url(), d);
    let src = d.join("shard1");
    let lines = lines_of(&src);
    assert!(lines.len() >= 4, "{lines:?}");
    let twice = edited(&src, &d.join("twice"), |p| {
        let mut l = lines.clone();
        l.insert(2, l[1].clone());
        write_lines(p, &l);
    });
    let reversed = edited(&src, &d.join("reversed"), |p| {
        let mut l = lines.clone();
        l.swap(1, 2);
        write_lines(p, &l);
    });
    let wrapped = edited(&src, &d.join("wrapped"), |p| {
        let mut l = lines.clone();
        let mut v: serde_json::Value = serde_json::from_str(&l[1]).unwrap();
        v["counters"]["sent"] = serde_json::json!(u64::MAX);
        l[1] = v.to_string();
        write_lines(p, &l);
    });
    let shard0 = d.join("shard0");
    let m = d.join("m.json");
    refused(
        &merge(&[&shard0, &twice], Some(&m)),
        &[
            "shard 1 (",
            "twice/seconds.jsonl, line 3 (the second at 1.0s): the second at 1.0s again",
        ],
    );
    refused(
        &merge(&[&shard0, &reversed], Some(&m)),
        &[
            "shard 1 (",
            "line 2 (the second at 2.0s): the second at 2.0s comes where the second at 1.0s should",
        ],
    );
    refused(
        &merge(&[&shard0, &wrapped], Some(&m)),
        &[
            "shard 1 (",
            "line 2 (the second at 1.0s): counters.sent is 18446744073709551615",
        ],
    );
    assert!(!m.exists(), "nothing written");
}

#[test]
fn merge_of_a_shard_with_an_empty_or_cut_stream_is_incomplete_naming_it() {
    // Regression: a shard whose stream was empty was silently dropped, and the merge said
    // `completed`.
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_shards(server.url(), d);
    let completed = |p: &Path| {
        u(
            &read_json(&p.join("result.json")),
            "summary.exchanges.completed",
        )
    };
    let (c0, c1) = (completed(&d.join("shard0")), completed(&d.join("shard1")));
    // Each shard holds its stride of the 250 exchanges (and the merge all of them).
    assert_eq!(c0 + c1, 250);
    let whole = d.join("whole.json");
    assert!(merge(&[&d.join("shard0"), &d.join("shard1")], Some(&whole))
        .status
        .success());
    assert_eq!(s(&read_json(&whole), "status"), "completed");
    assert_eq!(u(&read_json(&whole), "summary.exchanges.completed"), 250);

    let empty = edited(&d.join("shard1"), &d.join("empty"), |p| write_lines(p, &[]));
    let cut = edited(&d.join("shard1"), &d.join("cut"), |p| {
        write_lines(p, &lines_of(p)[..2]);
        std::fs::remove_file(p.join("result.json")).unwrap();
    });
    for (shard1, says) in [
        (
            &empty,
            "shard 1 (".to_string() + &empty.display().to_string() + ") recorded no second",
        ),
        (
            &cut,
            "shard 1 (".to_string()
                + &cut.display().to_string()
                + ") ended at 2.0s without its last second (the drain) or summary",
        ),
    ] {
        let m = d.join("m.json");
        let out = merge(&[&d.join("shard0"), shard1], Some(&m));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = read_json(&m);
        assert_eq!(s(&r, "status"), "incomplete");
        assert!(s(&r, "message").contains(&says), "{}", s(&r, "message"));
        let got = u(&r, "summary.exchanges.completed");
        assert!(got >= c0 && got < 250, "{got}");
    }
}

#[test]
fn merge_refuses_an_output_that_is_one_of_its_inputs() {
    // Regression: `-o shard0.json` (an input) was written over.
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_shards(server.url(), d);
    let input = d.join("shard0.json");
    let before = std::fs::read(&input).unwrap();
    refused(
        &merge(&[&input, &d.join("shard1.json")], Some(&input)),
        &["-o ", "would write over the input"],
    );
    // A file of an input directory's stream, named through another path to it.
    let other = d
        .join("shard0")
        .join("..")
        .join("shard0")
        .join("result.json");
    refused(
        &merge(&[&d.join("shard0"), &d.join("shard1")], Some(&other)),
        &["would write over the input"],
    );
    assert_eq!(std::fs::read(&input).unwrap(), before);
    // Beside the inputs, or in an input's directory under a name of its own: written.
    let beside = d.join("shard0").join("merged.json");
    assert!(
        merge(&[&d.join("shard0"), &d.join("shard1")], Some(&beside))
            .status
            .success()
    );
    assert_eq!(u(&read_json(&beside), "summary.exchanges.completed"), 250);
}

#[test]
fn merge_without_o_prints_the_merged_summary() {
    // Regression: `-o` was required; without it merge printed a usage error.
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_shards(server.url(), d);
    let out = merge(&[&d.join("shard0"), &d.join("shard1")], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("completed 250 +"), "{text}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(said, "barrage merge: 2 shards merged; clocks: one host\n");
}

/// Issue 43: `merge -o FILE` wrote its file silently; it now says so as `--report` does (and
/// nothing for `-o -`, Markdown on stdout).
#[test]
fn merge_o_announces_the_file_it_wrote() {
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_shards(server.url(), d);
    let shards = [d.join("shard0"), d.join("shard1")];
    let shards = [shards[0].as_path(), shards[1].as_path()];
    for name in ["m.json", "m.html", "m.md"] {
        let file = d.join(name);
        let out = merge(&shards, Some(&file));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {stderr}");
        assert_eq!(stderr, format!("{}\n", wrote(&file)), "{name}");
    }
    let out = merge(&shards, Some(Path::new("-")));
    assert!(out.status.success());
    assert!(!out.stdout.is_empty());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn merge_and_report_o_name_every_suffix_they_write() {
    // Regression: both said "must end in .md or .html", though merge writes .json too and
    // report .json, .csv and .hlog.
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.txt");
    let out = barrage()
        .args(["merge", "a", "b", "-o"])
        .arg(&x)
        .output()
        .unwrap();
    refused(
        &out,
        &[
            "-o ",
            "must end in .json, .html or .md (or - for Markdown on stdout",
        ],
    );
    let out = barrage()
        .args(["report", "r.json", "-o"])
        .arg(&x)
        .output()
        .unwrap();
    refused(
        &out,
        &["-o ", "must end in .html, .md, .json, .csv or .hlog (or -"],
    );
}
