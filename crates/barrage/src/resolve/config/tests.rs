//! The config resolution's unit tests.

use super::*;
use clap::Parser;

fn args(argv: &[&str]) -> RunArgs {
    let full: Vec<&str> = ["barrage", "run"].iter().chain(argv).copied().collect();
    match crate::resolve::cli::Cli::try_parse_from(full)
        .unwrap()
        .command
    {
        crate::resolve::cli::Command::Run(a) => *a,
        _ => unreachable!(),
    }
}

#[test]
fn requests_without_duration_are_still_bounded_in_time() {
    // Regression: `-n` alone against a server that never answers ran until interrupted.
    let (p, _, _) = plan(&args(&["tcp://127.0.0.1:9", "-n", "5"])).unwrap();
    assert_eq!(p.duration, Some(REQUESTS_TIME_BOUND));
    assert_eq!(p.requests, Some(5));
    let (p, _, _) = plan(&args(&["tcp://127.0.0.1:9", "-n", "5", "-d", "2s"])).unwrap();
    assert_eq!(p.duration, Some(Duration::from_secs(2)));
}

#[test]
fn absurd_rates_counts_and_intervals_are_refused_naming_the_flag() {
    // Regression: `--rate 1e19` wrapped the schedule arithmetic and the worker spun.
    for (argv, flag) in [
        (&["--interval", "1ns", "-c", "1000"][..], "--interval"),
        (&["--interval", "5ns"][..], "--interval"),
        (&["-n", "2000000000000000"][..], "-n/--requests"),
    ] {
        let mut full = vec!["tcp://127.0.0.1:9"];
        full.extend_from_slice(argv);
        let err = plan(&args(&full)).unwrap_err();
        assert_eq!(err.flag(), flag);
        assert!(err.to_string().starts_with(flag), "{argv:?}: {err}");
    }
    for rate in ["1e19", "1e20", "1e16", "2e8"] {
        let full = ["barrage", "run", "tcp://127.0.0.1:9", "--rate", rate];
        let err = crate::resolve::cli::Cli::try_parse_from(full)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--rate") && err.contains("100M"),
            "{rate}: {err}"
        );
    }
    plan(&args(&["tcp://127.0.0.1:9", "--rate", "100M", "-c", "100"])).unwrap();
    plan(&args(&[
        "tcp://127.0.0.1:9",
        "--interval",
        "1us",
        "-c",
        "100",
    ]))
    .unwrap();
}

#[test]
fn status_sets() {
    let s = status_set("200,204,3xx,500-502").unwrap();
    for (c, want) in [
        (200, true),
        (204, true),
        (201, false),
        (302, true),
        (501, true),
        (503, false),
    ] {
        assert_eq!(s.contains(c), want, "{c}");
    }
    for bad in ["", "abc", "6xx", "99", "600", "300-200", "2xx,x"] {
        assert!(
            status_set(bad)
                .unwrap_err()
                .to_string()
                .starts_with("--expect-status"),
            "{bad}"
        );
    }
}

#[test]
fn framings() {
    assert_eq!(expect("echo").unwrap(), Framing::Echo);
    assert_eq!(expect("bytes:64").unwrap(), Framing::Bytes(64));
    assert_eq!(
        expect("len:u32le").unwrap(),
        Framing::Len(barrage_engine::LenPrefix::U32Le)
    );
    assert!(matches!(expect("delim:\\r\\n").unwrap(), Framing::Delim(_)));
    for bad in [
        "bytes:0",
        "bytes:x",
        "delim:",
        "delim:\\q",
        "len:u8",
        "echo:1",
        "json",
    ] {
        assert_eq!(expect(bad).unwrap_err().flag(), "--expect", "{bad}");
    }
}
