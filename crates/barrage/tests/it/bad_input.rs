//! The bad-input sweep as one table: every mistake gets a non-zero exit code (2 for usage),
//! exactly one line on stderr that names the flag (or file) to fix, and no panic. Usage errors
//! are found before any load: nothing on stdout.
//!
//! Targets are a loopback port nothing listens on, or a reference echo server this test
//! starts; every run that does start is bounded by -n.

use crate::common::*;

/// One case: the arguments, the exit code, words the stderr line must contain, and words it
/// must not (the flag a guess used to blame).
struct Case<'a> {
    args: Vec<String>,
    code: i32,
    says: &'a [&'a str],
    not: &'a [&'a str],
}

fn case<'a>(args: &[&str], code: i32, says: &'a [&'a str], not: &'a [&'a str]) -> Case<'a> {
    Case {
        args: args.iter().map(|a| a.to_string()).collect(),
        code,
        says,
        not,
    }
}

#[test]
fn bad_input_sweep_one_line_naming_the_flag_and_no_panic() {
    let port = refused_port();
    let tcp = format!("tcp://127.0.0.1:{port}");
    let http = format!("http://127.0.0.1:{port}/");
    let ws = format!("ws://127.0.0.1:{port}/");
    let server = EchoServer::start(&[]);
    let live = server.url();
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.md");
    std::os::unix::fs::symlink("/dev/full", &full).unwrap();
    let full = full.to_str().unwrap();
    let kept = dir.path().join("kept.json");
    std::fs::write(&kept, b"keep me").unwrap();
    let kept = kept.to_str().unwrap();
    let colon = dir.path().join("run-10:00.json");
    let colon = colon.to_str().unwrap();

    let cases = [
        // A flag of another mode is an error, not ignored.
        case(
            &[&tcp, "--max-backlog", "10", "-n", "1"],
            2,
            &["--max-backlog", "open-loop", "ping-pong"],
            &[],
        ),
        case(&[&tcp, "--redact", "", "-n", "1"], 2, &["--redact"], &[]),
        case(
            &[&tcp, "--threshold", "errors.rate < 200%", "-n", "1"],
            2,
            &["--threshold", "at most 100 %"],
            &[],
        ),
        // A negative value is the flag's value, not an unknown argument.
        case(
            &[&http, "--expect-status", "-1", "-n", "1"],
            2,
            &["--expect-status", "-1"],
            &["unexpected argument"],
        ),
        case(
            &[&tcp, "--monitor", "-1", "-n", "1"],
            2,
            &["--monitor", "-1"],
            &["unexpected argument"],
        ),
        case(
            &[&tcp, "--threshold", "-1", "-n", "1"],
            2,
            &["--threshold", "-1"],
            &["unexpected argument"],
        ),
        // The flag is carried by the error, not guessed from its words.
        case(
            &[&http, "-X", "GE\r\nT", "-n", "1"],
            2,
            &["-X/--method", "CR or LF"],
            &["-H/--header"],
        ),
        case(
            &[&ws, "-H", "Sec-WebSocket-Protocol: x", "-n", "1"],
            2,
            &[
                "-H/--header",
                "Sec-WebSocket-Protocol",
                "offer one with --subprotocol",
            ],
            &["--subprotocol:"],
        ),
        // Unbounded files are read through a bounded reader.
        case(
            &[&http, "-X", "POST", "--body", "@/dev/zero", "-n", "1"],
            2,
            &["--body @/dev/zero", "16 MiB"],
            &[],
        ),
        case(
            &[&tcp, "--message-file", "/dev/zero", "-n", "1"],
            2,
            &["--message-file /dev/zero", "16 MiB"],
            &[],
        ),
        // Output paths are checked before any load.
        case(
            &[live, "--report", "/nonexistent-dir/r.md", "-n", "1"],
            2,
            &["--report /nonexistent-dir/r.md", "does not exist"],
            &[],
        ),
        // Issue 24: a negative port names its flag; one stdout; `-` is never a file name.
        case(
            &[&tcp, "--prometheus", "-1", "-n", "1"],
            2,
            &["--prometheus -1", "0 to 65535"],
            &["unexpected argument"],
        ),
        case(
            &[&tcp, "--web", "-1", "-n", "1"],
            2,
            &["--web -1", "0 to 65535"],
            &[],
        ),
        case(
            &[
                "serve",
                "echo",
                "--listen",
                "127.0.0.1:0",
                "--metrics",
                "-1",
            ],
            2,
            &["--metrics -1", "0 to 65535"],
            &[],
        ),
        case(
            &[
                "serve",
                "echo",
                "--listen",
                "127.0.0.1:0",
                "--max-queue",
                "1M",
            ],
            2,
            &["--max-queue", "applies to serve chat"],
            &[],
        ),
        case(
            &[live, "--json", "-", "--report", "-", "-n", "1"],
            2,
            &["--report -", "--json - already writes to stdout"],
            &[],
        ),
        case(
            &[live, "--csv", "-", "-n", "1"],
            2,
            &["--csv -", "needs a file"],
            &[],
        ),
        case(
            &[live, "--hdr-log", "-", "-n", "1"],
            2,
            &["--hdr-log -", "give a FILE"],
            &[],
        ),
        case(
            &[live, "--json", "/proc/version", "-n", "1"],
            2,
            &["--json /proc/version"],
            &[],
        ),
        case(
            &[&tcp, "--json", kept, "--expect", "bogus", "-n", "1"],
            2,
            &["--expect bogus"],
            &[],
        ),
        // `report` with a colon in the file name is `report`, not a run of a target.
        case(
            &["report", colon, "-o", "r.md"],
            2,
            &["run-10:00.json"],
            &["target", "scheme"],
        ),
        // A write that fails at the end: exit 1, the OS error once.
        case(
            &[live, "-n", "20", "-c", "1", "-q", "--report", full],
            1,
            &["--report", "No space left on device"],
            &[],
        ),
    ];
    for c in &cases {
        let out = barrage().args(&c.args).output().expect("run barrage");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let args = &c.args;
        assert_eq!(
            out.status.code(),
            Some(c.code),
            "barrage {args:?}: exit code\nstderr: {stderr}"
        );
        let lower = stderr.to_lowercase();
        assert!(!lower.contains("panicked"), "barrage {args:?}:\n{stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(
            lines.len(),
            1,
            "barrage {args:?}: one line on stderr:\n{stderr}"
        );
        for w in c.says {
            assert!(
                lines[0].contains(w),
                "barrage {args:?}: {w:?} missing:\n{stderr}"
            );
        }
        for w in c.not {
            assert!(
                !lines[0].contains(w),
                "barrage {args:?}: {w:?} present:\n{stderr}"
            );
        }
        assert!(
            lines[0].matches("os error").count() <= 1,
            "barrage {args:?}: an OS error printed twice:\n{stderr}"
        );
        if c.code == 2 {
            assert!(
                stdout.trim().is_empty(),
                "barrage {args:?}: a run started:\n{stdout}"
            );
        }
    }
    // The early check of --json did not destroy the file it found.
    assert_eq!(std::fs::read(kept).unwrap(), b"keep me");
}
