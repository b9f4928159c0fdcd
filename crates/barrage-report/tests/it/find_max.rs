//! find-max's renderings on a fixed record: the text table, Markdown and the HTML page as
//! snapshots (the page is small and self-contained, so the whole of it), and escaping.

use crate::common;
use barrage_report::find_max::{
    json, report, step_line, text, verdict, Bounds, Conclusion, End, Record, Step, Verdict, SCHEMA,
};
use barrage_report::Format;

fn step(n: usize, offered: f64, achieved: f64, p99_us: u64, verdict: Verdict) -> Step {
    let summary = common::ping_pong_completed().summary;
    Step {
        step: n,
        offered,
        achieved,
        p50_us: p99_us / 3,
        p99_us,
        error_rate: Some(if matches!(verdict, Verdict::Fail(_)) {
            0.012
        } else {
            0.0
        }),
        late_s: 0,
        seconds: 5,
        saturated_s: 0,
        generator_cpu_pct: Some(offered / 100.0),
        verdict,
        slos: Vec::new(),
        summary,
        spec: None,
    }
}

fn record(target: &str) -> Record {
    let bounds = Bounds {
        start: 1_000.0,
        max_rate: 1e6,
        max_steps: 12,
        growth: 2.0,
        precision: 0.05,
    };
    let why = "p99 < 20ms: p99 = 31 ms";
    let steps = vec![
        step(1, 1_000.0, 999.8, 4_100, Verdict::Pass),
        step(2, 2_000.0, 1_999.1, 9_800, Verdict::Pass),
        step(3, 4_000.0, 3_410.5, 31_000, Verdict::Fail(why.into())),
        step(4, 3_000.0, 2_998.7, 12_500, Verdict::Pass),
    ];
    let line = verdict(
        &End::Found,
        Some(3_000.0),
        Some((4_000.0, why)),
        None,
        &bounds,
    );
    Record {
        schema: SCHEMA,
        command_line: vec!["barrage".into(), "find-max".into(), target.into()],
        started_at: "2026-11-27T12:00:00Z".into(),
        target: target.into(),
        slos: vec!["p99 < 20ms".into(), "errors.rate < 1%".into()],
        bounds,
        step_duration_s: 5.0,
        step_warmup_s: 1.0,
        connections: 16,
        steps,
        result: Conclusion {
            end: End::Found,
            max_ok: Some(3_000.0),
            first_bad: Some(4_000.0),
            why: Some(why.into()),
            verdict: line,
        },
    }
}

#[test]
fn find_max_text_table_and_verdict() {
    let r = record("http://127.0.0.1:8080/");
    insta::assert_snapshot!(text(&r));
}

#[test]
fn find_max_step_lines_as_printed_while_searching() {
    let r = record("http://127.0.0.1:8080/");
    let lines: Vec<String> = r.steps.iter().map(step_line).collect();
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn find_max_markdown() {
    let r = record("http://127.0.0.1:8080/");
    insta::assert_snapshot!(report(&r, Format::Markdown));
}

#[test]
fn find_max_html_page() {
    let r = record("http://127.0.0.1:8080/");
    insta::assert_snapshot!(report(&r, Format::Html));
}

#[test]
fn find_max_json_is_the_record_with_its_schema() {
    let r = record("http://127.0.0.1:8080/");
    let v: serde_json::Value = serde_json::from_str(&json(&r).unwrap()).unwrap();
    assert_eq!(v["schema"], "barrage.find-max/1");
    assert_eq!(v["result"]["end"], "found");
    assert_eq!(v["result"]["max_ok"], 3000.0);
    assert_eq!(v["steps"][2]["verdict"]["kind"], "fail");
    assert_eq!(v["steps"].as_array().unwrap().len(), 4);
}

#[test]
fn find_max_pages_escape_the_target() {
    let r = record("http://127.0.0.1:1/<script>alert(1)</script>|x");
    let page = report(&r, Format::Html);
    assert!(!page.contains("<script>"), "{page}");
    assert!(page.contains("&lt;script&gt;"));
    let md = report(&r, Format::Markdown);
    assert!(!md.contains("</script>|x"), "{md}");
}
