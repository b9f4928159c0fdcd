//! find-max's renderings on a fixed record: the text table and Markdown as snapshots, the
//! HTML page's structure as a snapshot (as the report's and the comparison's: it inlines the
//! same chart library) and the data of its charts, and escaping.

use crate::common;
use crate::common::page::{attrs, chart_data, structure};
use barrage_report::find_max::{
    json, step_line, text, verdict, Bounds, Conclusion, End, Record, Step, Verdict, SCHEMA,
};
use barrage_report::find_max_report as report;
use barrage_report::Format;

fn step(n: usize, offered: f64, achieved: f64, p99_us: u64, verdict: Verdict) -> Step {
    let mut summary = common::ping_pong_completed().summary;
    summary.latency_us.p50 = p99_us / 3;
    summary.latency_us.p90 = p99_us / 2;
    summary.latency_us.p99 = p99_us;
    summary.latency_us.p999 = p99_us * 2;
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

pub(crate) fn record(target: &str) -> Record {
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
    insta::assert_snapshot!(structure(&report(&r, Format::Html)));
}

/// Issue 43: the page had its own bare style and SVG charts without axes; it is now built like
/// the report and the comparison page (their stylesheet, uPlot and axes.js), and its charts
/// carry labelled axes with units, one point per rate tried.
#[test]
fn find_max_page_looks_like_the_report_and_its_charts_have_labelled_axes() {
    let r = record("http://127.0.0.1:8080/");
    let page = report(&r, Format::Html);
    let run = barrage_report::render_to_string(&common::ping_pong_completed(), Format::Html);
    // The report's stylesheet and shared chart script, whole.
    let style = |p: &str| {
        p.split("<style>")
            .nth(2)
            .unwrap()
            .split("</style>")
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(style(&page), style(&run));
    assert!(page.contains("window.barrageFitAxis"));
    assert!(page.contains("Content-Security-Policy"));
    assert!(!page.contains("<svg"), "no hand-drawn charts");
    let data = chart_data(&page);
    let charts = data["charts"].as_array().unwrap();
    let ids = attrs(&page, "<div class=\"chart-box\"", "id");
    let labels: Vec<(String, String, String, Vec<String>)> = charts
        .iter()
        .map(|c| {
            assert!(ids.iter().any(|i| i == c["id"].as_str().unwrap()), "{c}");
            assert_eq!(
                c["x"],
                serde_json::json!([1000.0, 2000.0, 3000.0, 4000.0]),
                "{c}"
            );
            assert_eq!(c["points"], true, "{c}");
            let series = c["series"].as_array().unwrap();
            for s in series {
                assert_eq!(s["values"].as_array().unwrap().len(), 4, "{c}");
            }
            (
                c["id"].as_str().unwrap().to_string(),
                c["x_label"].as_str().unwrap().to_string(),
                c["y_label"].as_str().unwrap().to_string(),
                series
                    .iter()
                    .map(|s| s["label"].as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect();
    let want = |id: &str, y: &str, series: &[&str]| {
        (
            id.to_string(),
            "offered req/s".to_string(),
            y.to_string(),
            series.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        labels,
        vec![
            want("chart-rates", "req/s", &["offered", "achieved"]),
            want("chart-latency", "ms", &["p50", "p90", "p99", "p99.9"]),
            want("chart-errors", "%", &["errors"]),
        ]
    );
    // Achieved at 4,000/s (step 3) and p99 at 3,000/s (step 4): by offered rate, not by step.
    assert_eq!(charts[0]["series"][1]["values"][3], 3410.5);
    assert_eq!(charts[1]["series"][2]["values"][2], 12.5);
    // The verdict in parts: the max sustainable rate, the first that broke an SLO, and why.
    for cell in [
        "<th>highest rate that met every SLO</th><td>3,000/s</td>",
        "<th>lowest rate that broke one</th><td>4,000/s</td>",
        "<th>why</th><td>p99 &lt; 20ms: p99 = 31 ms</td>",
    ] {
        assert!(page.contains(cell), "no {cell}");
    }
    assert!(page.contains("<td class=\"grade-fail\">FAIL (p99 &lt; 20ms: p99 = 31 ms)</td>"));
}

/// A rate run twice (a step retried because barrage was late) is one point: its last run.
#[test]
fn find_max_charts_draw_a_retried_rate_once() {
    let mut r = record("http://127.0.0.1:8080/");
    r.steps
        .push(step(5, 3_000.0, 2_990.0, 13_000, Verdict::Pass));
    let data = chart_data(&report(&r, Format::Html));
    let c = &data["charts"][0];
    assert_eq!(
        c["x"],
        serde_json::json!([1000.0, 2000.0, 3000.0, 4000.0]),
        "{c}"
    );
    assert_eq!(c["series"][1]["values"][2], 2990.0, "{c}");
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
    assert!(!page.contains("<script>alert"), "{page}");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;|x"));
    let md = report(&r, Format::Markdown);
    assert!(!md.contains("</script>|x"), "{md}");
}
