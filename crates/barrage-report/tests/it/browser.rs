//! The HTML report in headless Chromium (Debian's package, driven by playwright-core from
//! tests/browser/): it opens from file:// with no console errors and no network request, every
//! chart draws, and a screenshot is kept under target/test-artifacts/.

use crate::common;
use barrage_report::{render_comparison_html, render_to_string, Format};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The checker can run here; when it cannot, CI fails and a local run says why and passes.
fn checker() -> Option<PathBuf> {
    crate::common::browser("check-page.mjs")
}

fn check(name: &str, html: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join(format!("{name}.html"));
    std::fs::write(&page, html).unwrap();
    let artifacts = root().join("target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join(format!("{name}.png"));
    let out = Command::new("node")
        .arg(checker().unwrap())
        .arg(&page)
        .arg(&shot)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "checker failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(shot.exists(), "no screenshot");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn assert_clean(name: &str, html: &str, min_charts: usize) {
    let v = check(name, html);
    assert_eq!(v["console_errors"], serde_json::json!([]), "{v}");
    assert_eq!(v["page_errors"], serde_json::json!([]), "{v}");
    assert_eq!(
        v["requests"],
        serde_json::json!([]),
        "no network requests: {v}"
    );
    // Issue 26: no two text boxes overlap, no chart label is clipped, no legend says "--",
    // nothing runs off the window, on a desktop and on a phone.
    for width in ["desktop", "phone"] {
        let l = &v["layout"][width];
        for what in ["overlaps", "clipped", "legends", "offscreen"] {
            assert_eq!(
                l[what],
                serde_json::json!([]),
                "{name} at {width}: {what}: {l}"
            );
        }
    }
    let canvases = v["canvases"].as_array().unwrap();
    assert!(canvases.len() >= min_charts, "{v}");
    for c in canvases {
        assert!(c["drawn"].as_i64().unwrap() > 0, "an empty chart: {c}");
    }
}

#[test]
fn the_monitored_report_opens_clean_and_every_chart_draws() {
    if checker().is_none() {
        return;
    }
    let html = render_to_string(&common::monitored_with_verdicts(), Format::Html);
    assert_clean("report-monitored", &html, 9);
}

#[test]
fn the_open_loop_and_failed_reports_open_clean() {
    if checker().is_none() {
        return;
    }
    let html = render_to_string(&common::open_loop_with_errors(), Format::Html);
    assert_clean("report-open-loop", &html, 5);
    let html = render_to_string(&common::failed_refused(), Format::Html);
    assert_clean("report-failed", &html, 0);
}

#[test]
fn the_comparison_page_opens_clean_and_its_overlaid_charts_draw() {
    if checker().is_none() {
        return;
    }
    let runs = [
        common::ping_pong_completed(),
        common::monitored_with_verdicts(),
    ];
    let names = ["a.json".to_string(), "b.json".to_string()];
    let mut page = Vec::new();
    let c = barrage_metrics::compare::compare(&runs);
    render_comparison_html(&c, &runs, &names, &mut page).unwrap();
    assert_clean("compare", &String::from_utf8(page).unwrap(), 3);
}

/// Issue 43: the find-max page, drawn like the others (its charts against the offered rate).
#[test]
fn the_find_max_page_opens_clean_and_its_charts_draw() {
    if checker().is_none() {
        return;
    }
    let r = crate::find_max::record("http://127.0.0.1:8080/");
    let page = barrage_report::find_max_report(&r, Format::Html);
    assert_clean("find-max", &page, 3);
}
