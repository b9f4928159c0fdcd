//! Snapshot and safety tests of the Markdown and HTML reports. The Markdown snapshots are the
//! whole text; the HTML snapshots are its structure (sections, headings, charts), since the
//! page inlines a 50 KB chart library.

use crate::common;
use crate::common::page::{attrs, between, chart_data, structure};
use barrage_metrics::RunResult;
use barrage_report::{render_to_string, Format};
use std::path::Path;

fn md(r: &RunResult) -> String {
    render_to_string(r, Format::Markdown)
}

fn html(r: &RunResult) -> String {
    render_to_string(r, Format::Html)
}

#[test]
fn markdown_monitored_run_with_verdicts() {
    insta::assert_snapshot!(md(&common::monitored_with_verdicts()));
}

#[test]
fn markdown_open_loop_with_errors_and_warmup() {
    insta::assert_snapshot!(md(&common::open_loop_with_errors()));
}

#[test]
fn markdown_failed_run_leaves_out_what_was_not_measured() {
    let t = md(&common::failed_refused());
    assert!(!t.contains("## Server resources"), "{t}");
    assert!(!t.contains("## Readiness"), "{t}");
    assert!(!t.contains("## Thresholds"), "{t}");
    assert!(!t.contains("## Latency distribution"), "{t}");
    insta::assert_snapshot!(t);
}

#[test]
fn html_structure_monitored_run_with_verdicts() {
    insta::assert_snapshot!(structure(&html(&common::monitored_with_verdicts())));
}

#[test]
fn html_structure_plain_run_without_monitor() {
    let page = html(&common::ping_pong_completed());
    let s = structure(&page);
    assert!(!s.contains("resources"), "{s}");
    assert!(!s.contains("server-cpu"), "{s}");
    insta::assert_snapshot!(s);
}

#[test]
fn html_structure_failed_run() {
    insta::assert_snapshot!(structure(&html(&common::failed_refused())));
}

#[test]
fn every_chart_has_an_element_and_data_to_draw() {
    for r in [
        common::monitored_with_verdicts(),
        common::ping_pong_completed(),
        common::open_loop_with_errors(),
        common::https_with_statuses(),
        common::interrupted(),
        common::failed_refused(),
    ] {
        let page = html(&r);
        let data = chart_data(&page);
        let charts = data["charts"].as_array().unwrap();
        let ids = attrs(&page, "<div class=\"chart-box\"", "id");
        assert_eq!(ids.len(), charts.len());
        for c in charts {
            let id = c["id"].as_str().unwrap();
            assert!(ids.iter().any(|i| i == id), "no element for {id}");
            let x = c["x"].as_array().unwrap();
            assert!(!x.is_empty(), "{id}: no x values");
            let series = c["series"].as_array().unwrap();
            assert!(!series.is_empty(), "{id}: no series");
            for s in series {
                let v = s["values"].as_array().unwrap();
                assert_eq!(v.len(), x.len(), "{id}: series and x differ in length");
            }
            assert!(
                series.iter().any(|s| s["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|v| v.is_number())),
                "{id}: nothing to draw"
            );
            let xs: Vec<f64> = x.iter().map(|v| v.as_f64().unwrap()).collect();
            assert!(xs.windows(2).all(|w| w[0] < w[1]), "{id}: x not increasing");
        }
    }
}

#[test]
fn monitored_page_has_every_chart() {
    let page = html(&common::monitored_with_verdicts());
    for id in [
        "chart-throughput",
        "chart-latency",
        "chart-connections",
        "chart-errors",
        "chart-server-cpu",
        "chart-server-memory",
        "chart-generator-cpu",
        "chart-spectrum",
    ] {
        assert!(page.contains(&format!("id=\"{id}\"")), "missing {id}");
    }
}

#[test]
fn html_is_self_contained() {
    let page = html(&common::monitored_with_verdicts());
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("Content-Security-Policy"));
    assert!(page.contains("var uPlot="), "uPlot is inlined");
    for remote in [
        "src=\"http",
        "href=\"http",
        "src=\"//",
        "href=\"//",
        "<link",
        "@import",
    ] {
        assert!(!page.contains(remote), "remote resource: {remote}");
    }
    // The data, uPlot, the shared axes helper and the drawing script.
    assert_eq!(page.matches("<script").count(), 4);
    assert!(page.trim_end().ends_with("</html>"));
}

#[test]
fn record_strings_are_escaped() {
    let mut r = common::https_with_statuses();
    r.config.target = "https://x/<script>alert(1)</script>".into();
    r.status = barrage_metrics::Status::Failed;
    r.message = Some("server said </script><img src=x onerror=alert(2)> & left".into());
    r.command_line.push("--body=<b>\"'|x".into());
    let page = html(&r);
    assert!(!page.contains("<script>alert"), "target not escaped");
    assert!(!page.contains("<img"), "message not escaped");
    assert!(!page.contains("<b>"), "command line not escaped");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_eq!(page.matches("<script").count(), 4);
    assert_eq!(page.matches("</script>").count(), 4);
    let t = md(&r);
    assert!(!t.contains("<script>"), "{t}");
    assert!(!t.contains("<img"), "{t}");
}

#[test]
fn redacted_secret_never_reaches_a_report() {
    let mut r = common::https_with_statuses();
    // As barrage writes it: the header value already replaced in the recorded command line.
    r.command_line = [
        "barrage",
        "https://localhost:8443/api",
        "-H",
        "Authorization: Bearer [redacted]",
        "-H",
        "Cookie: [redacted]",
        "-d",
        "3s",
    ]
    .map(String::from)
    .to_vec();
    let json = render_to_string(&r, Format::Json);
    assert!(!json.contains("canary"), "the fixture itself must be clean");
    for format in [Format::Markdown, Format::Html, Format::Text] {
        let out = render_to_string(&r, format);
        assert!(!out.contains("canary"), "{format} leaked the secret");
        assert!(!out.to_lowercase().contains("bearer canary"));
    }
    let page = html(&r);
    assert!(
        page.contains("&#39;Authorization: Bearer [redacted]&#39;"),
        "the redacted header is shown, quoted as a shell would read it"
    );
    assert!(md(&r).contains("'Authorization: Bearer [redacted]'"));
}

#[test]
fn format_from_path_by_extension() {
    let f = |p: &str| Format::from_path(Path::new(p));
    assert_eq!(f("report.html"), Some(Format::Html));
    assert_eq!(f("out/REPORT.HTM"), Some(Format::Html));
    assert_eq!(f("README.md"), Some(Format::Markdown));
    assert_eq!(f("r.markdown"), Some(Format::Markdown));
    assert_eq!(f("result.json"), Some(Format::Json));
    assert_eq!(f("summary.txt"), Some(Format::Text));
    assert_eq!(f("report.pdf"), None);
    assert_eq!(f("report"), None);
    assert_eq!("html".parse::<Format>().unwrap(), Format::Html);
    assert_eq!("markdown".parse::<Format>().unwrap(), Format::Markdown);
    assert_eq!("md".parse::<Format>().unwrap(), Format::Markdown);
}

#[test]
fn html_and_markdown_render_every_fixture() {
    for r in [
        common::ping_pong_completed(),
        common::open_loop_with_errors(),
        common::interrupted(),
        common::failed_refused(),
        common::https_with_statuses(),
        common::monitored_with_verdicts(),
    ] {
        let t = md(&r);
        assert!(t.starts_with("# barrage report: "));
        assert!(t.ends_with('\n'));
        assert!(!t.contains("\n\n\n"), "{t}");
        let page = html(&r);
        assert!(page.contains("<section id=\"overview\">"));
        assert!(page.contains("<section id=\"metrics\">"));
    }
}

/// Writes the sample pages under the target directory, for a look in a browser and for the
/// headless-Chromium check (`target/tmp/report-*.html`).
#[test]
fn sample_pages_are_written_for_the_browser_check() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    for (name, r) in [
        ("monitored", common::monitored_with_verdicts()),
        ("open-loop", common::open_loop_with_errors()),
        ("failed", common::failed_refused()),
    ] {
        barrage_report::save(&r, Format::Html, dir.join(format!("report-{name}.html"))).unwrap();
        barrage_report::save(&r, Format::Markdown, dir.join(format!("report-{name}.md"))).unwrap();
    }
}

/// Issue 43, what a person sees in a clean monitored run: interfaces without traffic left out
/// and counted (not rows of zeros), CLOSE_WAIT in the sample taken as the load ended (the
/// connections closing) not shown, and a master process whose workers are summed in named
/// with them, in the text and the Markdown.
#[test]
fn a_clean_monitored_run_shows_no_idle_interface_end_close_wait_or_lone_master() {
    let mut r = common::monitored_with_verdicts();
    let m = r.monitor.as_mut().unwrap();
    for h in &mut m.host {
        for name in ["ifb0", "docker0"] {
            h.net.push(barrage_metrics::NetIfSample {
                name: name.into(),
                ..Default::default()
            });
        }
    }
    for s in &mut m.processes[0].samples {
        s.children = 2;
        s.tcp.established = if s.t > 0.0 && s.t <= 10.0 { 64 } else { 0 };
        // The sample at the load's end (t = 10) and the drain's read connections closing.
        s.tcp.close_wait = if s.t >= 10.0 { 40 } else { 0 };
    }
    let text = barrage_report::render_to_string(&r, barrage_report::Format::Text);
    for line in [
        "Server        PID 4242 and 2 child processes `./echo-server --port 7000`",
        "  under load  at most 4 threads, 70 open files, 64 TCP established",
        "Network       under load, per interface (all of the machine's traffic); 2 idle \
         interfaces left out",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in:\n{text}");
    }
    for word in ["ifb0", "docker0", "CLOSE_WAIT", "pid 4242"] {
        assert!(!text.contains(word), "{word} in:\n{text}");
    }
    let m = md(&r);
    assert!(m.contains("2 idle interfaces (no traffic under load) are left out."));
    assert!(m.contains("| server PID 4242 and 2 child processes: ./echo-server --port 7000 |"));
    assert!(!m.contains("ifb0") && !m.contains("docker0"), "{m}");
    // CLOSE_WAIT earlier in the load is still shown.
    r.monitor.as_mut().unwrap().processes[0].samples[5]
        .tcp
        .close_wait = 3;
    let text = barrage_report::render_to_string(&r, barrage_report::Format::Text);
    assert!(
        text.contains(", 64 TCP established, 3 CLOSE_WAIT"),
        "{text}"
    );
}

/// The machine's network per interface (sampled, and before never shown): min, mean and max
/// bytes/s in and out under load, idle samples left out, in the text, HTML and Markdown.
#[test]
fn network_per_interface_min_mean_max_reach_text_html_and_markdown() {
    let r = common::monitored_with_verdicts();
    let text = barrage_report::render_to_string(&r, barrage_report::Format::Text);
    for line in [
        "Network       under load, per interface (all of the machine's traffic)",
        "  lo    in  min 2.00 MiB/s, mean 2.43 MiB/s (20.4 Mbit/s), max 2.86 MiB/s",
        "        out min 2.00 MiB/s, mean 2.43 MiB/s (20.4 Mbit/s), max 2.86 MiB/s",
        "  eth0  in  min 17.9 MiB/s, mean 17.9 MiB/s (150 Mbit/s), max 17.9 MiB/s",
        "        out min 52.9 MiB/s, mean 52.9 MiB/s (444 Mbit/s), max 52.9 MiB/s",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in:\n{text}");
    }
    let row = [
        "eth0",
        "17.9 MiB/s (150 Mbit/s)",
        "17.9 MiB/s (150 Mbit/s)",
        "17.9 MiB/s (150 Mbit/s)",
        "52.9 MiB/s (444 Mbit/s)",
        "52.9 MiB/s (444 Mbit/s)",
        "52.9 MiB/s (444 Mbit/s)",
    ];
    let lo = [
        "lo",
        "2.00 MiB/s (16.8 Mbit/s)",
        "2.43 MiB/s (20.4 Mbit/s)",
        "2.86 MiB/s (24.0 Mbit/s)",
        "2.00 MiB/s (16.8 Mbit/s)",
        "2.43 MiB/s (20.4 Mbit/s)",
        "2.86 MiB/s (24.0 Mbit/s)",
    ];
    let m = md(&r);
    assert!(m.contains("Network"), "{m}");
    for cells in [&lo, &row] {
        let line = format!("| {} |", cells.join(" | "));
        assert!(m.lines().any(|l| l == line), "{line:?} in:\n{m}");
    }
    let page = html(&r);
    let tds = between(&page, "<td>", "</td>");
    for cells in [&lo, &row] {
        assert!(
            tds.windows(7).any(|w| w == cells.map(String::from)),
            "{cells:?} in the HTML cells {tds:?}"
        );
    }
    // The JSON carries the same figures.
    let n = &r.analysis.as_ref().unwrap().network;
    assert_eq!(n.len(), 2);
    assert_eq!((n[1].interface.as_str(), n[1].samples), ("eth0", 10));
    assert_eq!(n[1].tx_bytes_per_s.mean, 55_500_000.0);
    assert_eq!(
        (n[0].rx_bytes_per_s.min, n[0].rx_bytes_per_s.max),
        (2.1e6, 3.0e6)
    );
    let json = barrage_report::render_to_string(&r, barrage_report::Format::Json);
    assert!(json.contains("\"network\""), "{json}");
}

/// The other file formats of a result, whole: the JSON, the per-second CSV, the HDR interval
/// log, and the comparison of two runs as text. A refactor that changes their bytes shows
/// here.
mod formats {
    use super::common;
    use barrage_report::{render_to_string, Format};

    #[test]
    fn json_of_a_completed_run() {
        insta::assert_snapshot!(render_to_string(
            &common::ping_pong_completed(),
            Format::Json
        ));
    }

    #[test]
    fn csv_of_an_open_loop_run_with_errors() {
        insta::assert_snapshot!(barrage_report::series::csv(&common::open_loop_with_errors()));
    }

    #[test]
    fn hdr_log_of_two_seconds() {
        let r = common::open_loop_with_errors();
        let mut log =
            barrage_report::series::HdrLog::start(Vec::new(), 1_795_420_800.0, &r.started_at)
                .unwrap();
        for (i, t) in r.timeseries.iter().take(2).enumerate() {
            let mut h = barrage_metrics::LatencyHistogram::new();
            h.record_us(t.latency_us.p50.max(1));
            h.record_us(t.latency_us.p99.max(1));
            log.interval(i as f64, 1.0, &h).unwrap();
        }
        insta::assert_snapshot!(String::from_utf8(log.into_inner()).unwrap());
    }

    #[test]
    fn comparison_of_two_runs_as_text() {
        let runs = [
            common::ping_pong_completed(),
            common::open_loop_with_errors(),
        ];
        let c = barrage_metrics::compare::compare_with(&runs, &Default::default());
        let mut out = Vec::new();
        barrage_report::render_comparison_text(
            &c,
            &["A: ping-pong".into(), "B: open loop".into()],
            &mut out,
        )
        .unwrap();
        insta::assert_snapshot!(String::from_utf8(out).unwrap());
    }
}

#[test]
fn markdown_scenario_steps() {
    insta::assert_snapshot!(md(&common::scenario_with_steps()));
}
