//! `barrage validate FILE`: "ok: ..." for a good scenario, one line naming the file, line and
//! key (exit 2) for a bad one. Nothing is sent: the targets here have no server.

use crate::common::*;
use std::path::{Path, PathBuf};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// Runs `barrage validate path`: (exit code, stdout, stderr).
fn validate(path: &Path) -> (i32, String, String) {
    let out = barrage().arg("validate").arg(path).output().unwrap();
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        s(&out.stdout),
        s(&out.stderr),
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn validate_says_ok_with_users_and_steps() {
    let (code, out, err) = validate(&examples().join("chat.toml"));
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("ok: "), "{out}");
    assert!(out.contains("chat.toml: 3000 users (arrive 50/s, last at 59.98s, hold 60s, depart at end), 4 steps that send (1 on leaving), 1 pause, 1 on rule, 1 capture; named: login, join, say, ping, bye"), "{out}");
    let (code, out, _) = validate(&examples().join("engineio.yaml"));
    assert_eq!(code, 0);
    assert!(out.contains("500 users"), "{out}");
}

#[test]
fn validate_bad_file_is_one_line_with_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "chat.toml", "target = \"tcp://127.0.0.1:7000\"\n[users]\ncount = 10\narrive = \"50/s\"\nhold = \"soon\"\n[[steps]]\nsend = \"hi\"\n");
    let (code, out, err) = validate(&p);
    assert_eq!(code, 2);
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "error: {}:5: users.hold: 'soon' is not a duration",
            p.display()
        )),
        "{err}"
    );
}

#[test]
fn validate_checks_the_target_url_and_thresholds_like_run() {
    let dir = tempfile::tempdir().unwrap();
    let body = "[users]\ncount = 1\narrive = \"1/s\"\n[[steps]]\nname = \"join\"\nsend = \"hi\"\n";
    let p = write(
        dir.path(),
        "a.toml",
        &format!("target = \"tcp://127.0.0.1\"\n{body}"),
    );
    let (code, _, err) = validate(&p);
    assert_eq!(code, 2);
    assert!(
        err.starts_with(&format!("error: {}:1: target: ", p.display())) && err.contains("port"),
        "{err}"
    );
    let p = write(dir.path(), "b.toml", &format!("target = \"tcp://127.0.0.1:7000\"\n{body}[run]\nthresholds = [\"steps.join.p99 < 1s\", \"p100 < 1s\"]\n"));
    let (code, _, err) = validate(&p);
    assert_eq!(code, 2);
    assert!(
        err.starts_with(&format!("error: {}:9: run.thresholds[1]: ", p.display()))
            && err.contains("p100"),
        "{err}"
    );
    let p = write(dir.path(), "c.toml", &format!("target = \"tcp://127.0.0.1:7000\"\n{body}[run]\nthresholds = [\"steps.join.p99 << 1s\"]\n"));
    let (code, _, err) = validate(&p);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn validate_missing_or_unknown_kind_of_file() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = validate(&dir.path().join("none.toml"));
    assert_eq!(code, 2);
    assert!(err.contains("none.toml: cannot read it"), "{err}");
    let p = write(dir.path(), "s.json", "{}");
    let (code, _, err) = validate(&p);
    assert_eq!(code, 2);
    assert!(
        err.contains("s.json: a scenario file ends in .toml, .yaml or .yml"),
        "{err}"
    );
    let out = barrage().arg("validate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn run_checks_a_scenario_as_validate_does_and_find_max_points_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "target = \"tcp://127.0.0.1:9\"\n[users]\ncount = 0\narrive = \"5/s\"\n",
    )
    .unwrap();
    let out = barrage().arg("run").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad.toml:3: users.count"), "{err}");
    let chat = examples().join("chat.toml");
    let out = barrage()
        .args(["find-max"])
        .arg(&chat)
        .args(["--slo", "p99 < 1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is a scenario file") && err.contains("barrage run"),
        "{err}"
    );
}

/// Regression (issue 24): `validate` counted a scenario's steps one way (pauses in, departure
/// steps apart) and the run's header another (the steps that send). Both now count the steps
/// that send, the rows of the Steps table.
#[test]
fn validate_and_the_run_header_count_steps_the_same_way() {
    let count = |text: &str| -> u64 {
        let at = text
            .find(" steps that send")
            .or_else(|| text.find(" step that sends"));
        let head = &text[..at.unwrap_or_else(|| panic!("no step count in {text}"))];
        head.rsplit(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    for (file, scheme) in [
        ("routes.toml", "http"),
        ("http-flow.toml", "http"),
        ("chat.toml", "tcp"),
        ("chat-rooms.toml", "tcp"),
    ] {
        let path = examples().join(file);
        let path = path.to_str().unwrap();
        let v = barrage().args(["validate", path]).output().unwrap();
        let said = String::from_utf8_lossy(&v.stdout).to_string();
        // Against a closed port the run fails fast, but its header is printed.
        let run = barrage()
            .args(["run", path, "--users", "1", "-d", "1s", "--no-tui"])
            .args(["--target", &format!("{scheme}://127.0.0.1:9")])
            .output()
            .unwrap();
        let header = String::from_utf8_lossy(&run.stdout).to_string();
        assert_eq!(count(&said), count(&header), "{file}:\n{said}\n{header}");
    }
}

#[test]
fn validate_takes_runs_overrides_of_users_hold_and_arrive() {
    let file = examples().join("chat.toml");
    let out = barrage()
        .arg("validate")
        .arg(&file)
        .args(["--users", "300", "--hold", "5s", "--arrive", "100"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("chat.toml: 300 users (arrive 100/s, last at 2.99s, hold 5s, depart at end)"),
        "{text}"
    );
    // The pre-flight sizes the run as overridden.
    assert!(
        text.contains("pre-flight on this machine (300 users,"),
        "{text}"
    );
    // A bad override is one line naming the flag.
    let out = barrage()
        .arg("validate")
        .arg(&file)
        .args(["--users", "many"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--users"), "{err}");
}
