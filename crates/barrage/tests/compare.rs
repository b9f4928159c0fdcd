//! Black-box tests of `barrage compare`: results from short runs against reference echo
//! servers on 127.0.0.1 (one of them delaying every reply), compared as text, Markdown and
//! HTML; unreadable files are usage errors.

mod common;

use common::{barrage, EchoServer};
use std::path::{Path, PathBuf};

/// A one-second open-loop run (2 connections, 2000/s) against `url`, saved as `dir/name`.
fn saved_run(url: &str, dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    barrage()
        .args([
            "run", url, "-c", "2", "-t", "1", "-d", "1s", "--rate", "2k", "-q",
        ])
        .arg("--json")
        .arg(&path)
        .assert()
        .success();
    path
}

/// The mark column of `metric`'s row for run B (the last cell of the row).
fn mark<'a>(text: &'a str, metric: &str) -> &'a str {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(metric))
        .and_then(|l| l.split_whitespace().last())
        .unwrap_or_else(|| panic!("no row {metric} in:\n{text}"))
}

fn stdout(args: &[&Path]) -> String {
    let out = barrage().arg("compare").args(args).assert().success();
    String::from_utf8(out.get_output().stdout.clone()).expect("utf-8")
}

#[test]
fn a_delayed_server_is_significantly_slower_and_identical_runs_mostly_are_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fast = EchoServer::start(&[]);
    let slow = EchoServer::start(&["--delay", "2ms"]);
    let a = saved_run(fast.url(), dir.path(), "a.json");
    let b = saved_run(fast.url(), dir.path(), "b.json");
    let d = saved_run(slow.url(), dir.path(), "d.json");

    let text = stdout(&[&a, &d]);
    assert!(
        text.contains("A = ") && text.contains("(reference)"),
        "{text}"
    );
    assert_eq!(mark(&text, "p50"), "*", "{text}");
    let p50 = text.lines().find(|l| l.starts_with("p50")).unwrap();
    assert!(p50.contains(" +"), "p50 got worse: {p50}");

    // Same server, same settings: the within-run noise explains most differences. (Runs on
    // a busy machine do drift between runs, which no single run can see; hence "most".)
    let text = stdout(&[&a, &b]);
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("metric"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    let significant = rows.iter().filter(|l| l.ends_with('*')).count();
    assert!(rows.len() >= 8, "{text}");
    assert!(
        significant * 2 < rows.len(),
        "{significant} of {}:\n{text}",
        rows.len()
    );
    assert_ne!(mark(&text, "rps.avg"), "*", "{text}");

    // Three runs and the written forms.
    let md = dir.path().join("cmp.md");
    let html = dir.path().join("cmp.html");
    barrage()
        .arg("compare")
        .args([&a, &b, &d])
        .arg("-o")
        .arg(&md)
        .assert()
        .success();
    let md = std::fs::read_to_string(&md).expect("markdown written");
    assert!(md.contains("| metric | A | B | Δ | Δ % |  | C |"), "{md}");
    assert!(md.contains("| p50 |"), "{md}");
    barrage()
        .arg("compare")
        .args([&a, &d])
        .arg("-o")
        .arg(&html)
        .assert()
        .success();
    let html = std::fs::read_to_string(&html).expect("html written");
    assert!(
        html.to_ascii_lowercase().starts_with("<!doctype html>") && html.contains(">p50<"),
        "{html}"
    );
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "self-contained"
    );
}

#[test]
fn unreadable_or_foreign_files_are_usage_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let foreign = dir.path().join("foreign.json");
    std::fs::write(&foreign, "{\"hello\": 1}").unwrap();
    let missing = dir.path().join("missing.json");
    for (args, needle) in [
        (
            vec![&foreign, &foreign],
            "foreign.json is not a barrage result",
        ),
        (vec![&foreign, &missing], "foreign.json"),
        (vec![&missing, &foreign], "cannot read result file"),
    ] {
        let out = barrage().arg("compare").args(args).assert().code(2);
        let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
        assert!(err.contains(needle), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
    let out = barrage()
        .args(["compare", "a.json", "b.json", "-o", "cmp.txt"])
        .assert()
        .code(2);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("-o cmp.txt") && err.contains(".md or .html"),
        "{err}"
    );
}
