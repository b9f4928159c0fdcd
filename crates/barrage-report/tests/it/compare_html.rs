//! The comparison page: its structure as a snapshot (sections, headings, tables, charts; not
//! the inlined chart library) and the safety of what it embeds.

use crate::common;
use crate::common::page::{chart_data, structure};
use barrage_metrics::compare::compare;
use barrage_metrics::RunResult;
use barrage_report::render_comparison_html;

fn page(runs: &[RunResult], names: &[String]) -> String {
    let mut out = Vec::new();
    render_comparison_html(&compare(runs), runs, names, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn two_runs() -> Vec<RunResult> {
    vec![
        common::ping_pong_completed(),
        common::monitored_with_verdicts(),
    ]
}

fn names() -> Vec<String> {
    vec!["a.json".into(), "b.json".into()]
}

#[test]
fn html_structure_comparison_of_two_runs() {
    insta::assert_snapshot!(structure(&page(&two_runs(), &names())));
}

#[test]
fn every_chart_has_one_series_per_run_on_one_x_axis() {
    let runs = two_runs();
    let p = page(&runs, &names());
    let data = chart_data(&p);
    let charts = data["charts"].as_array().unwrap();
    let ids: Vec<&str> = charts.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["chart-throughput", "chart-latency", "chart-spectrum"]);
    for c in charts {
        let x = c["x"].as_array().unwrap();
        assert!(x.windows(2).all(|w| w[0].as_f64() < w[1].as_f64()), "{c}");
        let series = c["series"].as_array().unwrap();
        let labels: Vec<&str> = series
            .iter()
            .map(|s| s["label"].as_str().unwrap())
            .collect();
        assert_eq!(labels, ["A", "B"]);
        for s in series {
            let values = s["values"].as_array().unwrap();
            assert_eq!(values.len(), x.len());
            assert!(values.iter().any(|v| v.is_number()), "{c}");
        }
    }
    assert_eq!(charts[2]["x_log"], true);
    assert_eq!(charts[2]["y_log"], true);
    // The significance marks are classed in the table.
    assert!(p.contains("class=\"mark-"), "no marked cell");
    assert!(p.contains("Content-Security-Policy"));
}

#[test]
fn names_are_escaped_and_nothing_closes_the_data_script() {
    let runs = two_runs();
    let names = vec![
        "<script>alert(1)</script>&\"x\"".to_string(),
        "b'</script>".to_string(),
    ];
    let p = page(&runs, &names);
    assert!(!p.contains("<script>alert(1)"));
    assert!(p.contains("&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;x&quot;"));
    assert!(p.contains("b&#39;&lt;/script&gt;"));
    assert_eq!(
        p.matches("</script>").count(),
        4,
        "data, uPlot, the axes helper and the drawing script"
    );
}

#[test]
fn charts_without_data_are_left_out() {
    // Refused connections: one partial second at 0 req/s, no latency at all.
    let runs = vec![common::failed_refused(), common::failed_refused()];
    let p = page(&runs, &names());
    let data = chart_data(&p);
    let ids: Vec<&str> = data["charts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["chart-throughput"]);
    assert_eq!(p.matches("No run has data for this chart.").count(), 2);
}
