//! Snapshot tests of the text summary: review `tests/snapshots/` by eye when they change.

mod common;

use barrage_report::{render_to_string, Format};

fn text(r: &barrage_metrics::RunResult) -> String {
    render_to_string(r, Format::Text)
}

#[test]
fn ping_pong_completed() {
    insta::assert_snapshot!(text(&common::ping_pong_completed()));
}

#[test]
fn open_loop_with_errors_and_warmup() {
    insta::assert_snapshot!(text(&common::open_loop_with_errors()));
}

#[test]
fn interrupted_run() {
    insta::assert_snapshot!(text(&common::interrupted()));
}

#[test]
fn failed_run_with_no_exchange() {
    insta::assert_snapshot!(text(&common::failed_refused()));
}

#[test]
fn summary_stays_compact_and_narrow() {
    for r in [
        common::ping_pong_completed(),
        common::open_loop_with_errors(),
        common::interrupted(),
    ] {
        let t = text(&r);
        assert!(t.lines().count() <= 32, "{t}");
        for line in t.lines() {
            assert!(line.chars().count() <= 96, "too wide: {line}");
        }
        assert!(t.ends_with('\n'));
    }
}
