//! `cargo xtask test [--wine] [ARGS]`: the README's test command. Runs `cargo test --workspace
//! ARGS` (with `--wine`, also barrage.exe's tests under wine: minutes of a Windows build, left
//! out unless asked or under CI; without incremental compilation unless `CARGO_INCREMENTAL` is
//! set) and ends with one line naming every test that was skipped because this machine lacks a
//! program it drives (from `target/tmp/skipped.tsv`, which the tests append to), and the one
//! command that installs them all (`.ci/install`). Its exit code is cargo test's.
//!
//! For Windows (on Windows, or with `--target x86_64-pc-windows-gnu` and a runner such as
//! wine) it runs the tests that are Windows' too, [`WINDOWS`]: the integration tests of the
//! binary and most crates drive Linux programs and `/proc`.
//!
//! `cargo xtask ci`: runs exactly what `.ci/run` runs after its install steps (`.ci/test`).
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{exit, Command};

fn main() {
    let mut args = std::env::args().skip(1);
    let task = args.next().unwrap_or_default();
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let code = match task.as_str() {
        "ci" => run(Command::new("bash").arg(root.join(".ci/test"))),
        "test" => test(&root, args.collect()),
        _ => {
            eprintln!("usage: cargo xtask test [cargo test args] | cargo xtask ci");
            2
        }
    };
    exit(code);
}

fn run(cmd: &mut Command) -> i32 {
    match cmd.status() {
        Ok(s) => s.code().unwrap_or(1),
        Err(e) => {
            eprintln!("xtask: cannot run {cmd:?}: {e}");
            1
        }
    }
}

/// The tests that run on Windows: the unit tests of the engine and the servers (where the
/// platform code is: `os/`, `runtime/bind.rs`), and the monitor's (with its Windows integration
/// tests). `crates/barrage/tests/it/wine.rs` runs them under wine through this task, and runs
/// the binary itself there (barrage.exe end to end); the binary's own unit tests hold no
/// Windows code and run on Linux (compiling them for Windows cost CI over a minute).
const WINDOWS: [&[&str]; 2] = [
    &[
        // Without `serve h2` (tokio and the h2 crate): a third of the build, not under test here.
        "--no-default-features",
        "-p",
        "barrage-engine",
        "-p",
        "barrage-servers",
        "--lib",
    ],
    &["-p", "barrage-monitor"],
];

fn for_windows(args: &[String]) -> bool {
    cfg!(windows)
        || args
            .windows(2)
            .any(|w| w[0] == "--target" && w[1].contains("windows"))
        || args
            .iter()
            .any(|a| a.starts_with("--target=") && a.contains("windows"))
}

fn test(root: &Path, mut args: Vec<String>) -> i32 {
    let wine = args.iter().any(|a| a == "--wine");
    args.retain(|a| a != "--wine");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let skipped = target.join("tmp/skipped.tsv");
    let _ = std::fs::remove_file(&skipped);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let code = if for_windows(&args) {
        let mut code = 0;
        for run_args in WINDOWS {
            let c = run(Command::new(&cargo)
                .current_dir(root)
                .arg("test")
                .args(run_args)
                .args(&args));
            code = code.max(c);
        }
        code
    } else {
        let mut cmd = Command::new(cargo);
        if wine {
            cmd.env("BARRAGE_WINE", "1");
        }
        // A one-shot test build needs no incremental cache: on a fresh clone it was 0.8 GB of
        // target/ and a third more compile time of the workspace's crates. Set it to 1 to keep
        // it (an edit-and-test loop through this command).
        if std::env::var_os("CARGO_INCREMENTAL").is_none() {
            cmd.env("CARGO_INCREMENTAL", "0");
        }
        run(cmd
            .current_dir(root)
            .args(["test", "--workspace"])
            .args(&args))
    };
    let text = std::fs::read_to_string(&skipped).unwrap_or_default();
    println!("{}", skip_line(&text));
    code
}

/// `skipped: none`, or a line per missing program naming the tests it skipped (`skipped for
/// want of nginx: barrage interop::a, ...`) and then `skipped: 13 tests for want of nginx (2),
/// python3 websockets (3); install them all with ...`, from the lines `crate<TAB>what<TAB>test`
/// of `target/tmp/skipped.tsv`.
/// A skip whose `what` is a flag (`--wine`) was not asked for: those tests are listed apart,
/// with the command that runs them, not among the missing programs.
fn skip_line(text: &str) -> String {
    let mut by_what: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for line in text.lines() {
        let mut f = line.splitn(3, '\t');
        if let (Some(krate), Some(what), Some(test)) = (f.next(), f.next(), f.next()) {
            by_what.entry(what).or_default().push((krate, test));
        }
    }
    for tests in by_what.values_mut() {
        tests.sort_unstable();
        tests.dedup();
    }
    let (asked, wanted): (Vec<_>, Vec<_>) = by_what.iter().partition(|(w, _)| w.starts_with("--"));
    let count = |v: &[(&&str, &Vec<(&str, &str)>)]| v.iter().map(|(_, t)| t.len()).sum::<usize>();
    let (not_asked, total) = (count(&asked), count(&wanted));
    if not_asked + total == 0 {
        return "skipped: none (every test ran)".into();
    }
    let names = |tests: &[(&str, &str)]| {
        let names: Vec<String> = tests.iter().map(|(k, t)| format!("{k} {t}")).collect();
        names.join(", ")
    };
    let mut out = String::new();
    for (flag, tests) in &asked {
        out += &format!(
            "left out unless asked (`cargo xtask test {flag}`; CI runs them): {}\n",
            names(tests)
        );
    }
    for (what, tests) in &wanted {
        out += &format!("skipped for want of {what}: {}\n", names(tests));
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if total == 0 {
        let flags: Vec<&str> = asked.iter().map(|(f, _)| **f).collect();
        out += &format!(
            "skipped: {not_asked} test{} left out unless asked ({}); none for want of a program",
            plural(not_asked),
            flags.join(", ")
        );
        return out;
    }
    let wants: Vec<String> = wanted
        .iter()
        .map(|(what, tests)| format!("{what} ({})", tests.len()))
        .collect();
    let asked_too = if not_asked == 0 {
        String::new()
    } else {
        format!(" and {not_asked} left out unless asked")
    };
    out += &format!(
        "skipped: {total} test{} for want of {}{asked_too}; install them all with `.ci/install` \
         as root (`sudo .ci/install`; Debian), then run this again",
        plural(total),
        wants.join(", ")
    );
    out
}

#[cfg(test)]
mod tests {
    use super::{for_windows, skip_line};

    #[test]
    fn a_windows_target_runs_the_windows_subset() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(for_windows(&v(&["--target", "x86_64-pc-windows-gnu"])));
        assert!(for_windows(&v(&[
            "--locked",
            "--target=x86_64-pc-windows-msvc"
        ])));
        assert_eq!(
            for_windows(&v(&["--locked", "--no-fail-fast"])),
            cfg!(windows)
        );
    }

    #[test]
    fn skips_are_counted_once_per_test_and_grouped_by_what_is_missing() {
        let tsv = "barrage\tnginx\tinterop::a\nbarrage\tnginx\tinterop::b\n\
                   barrage\tnginx\tinterop::a\nbarrage-engine\tredis-server\tcodecs_live::r\n";
        assert_eq!(
            skip_line(tsv),
            "skipped for want of nginx: barrage interop::a, barrage interop::b\n\
             skipped for want of redis-server: barrage-engine codecs_live::r\n\
             skipped: 3 tests for want of nginx (2), redis-server (1); install them all with \
             `.ci/install` as root (`sudo .ci/install`; Debian), then run this again"
        );
        assert_eq!(skip_line(""), "skipped: none (every test ran)");
        // Tests left out unless asked are listed apart, with the flag that runs them.
        let wine = "barrage\t--wine\twine::a\nbarrage\t--wine\twine::b\n";
        assert_eq!(
            skip_line(wine),
            "left out unless asked (`cargo xtask test --wine`; CI runs them): barrage wine::a, \
             barrage wine::b\n\
             skipped: 2 tests left out unless asked (--wine); none for want of a program"
        );
        assert!(
            skip_line(&format!("{wine}barrage\tnginx\tinterop::a\n")).ends_with(
                "skipped: 1 test for want of nginx (1) and 2 left out unless asked; install them \
             all with `.ci/install` as root (`sudo .ci/install`; Debian), then run this again"
            )
        );
        // A torn line is not counted.
        assert_eq!(
            skip_line("barrage\tnginx"),
            "skipped: none (every test ran)"
        );
    }
}
