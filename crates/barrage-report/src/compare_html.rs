//! The comparison of runs as one self-contained HTML page: the runs, the core figures side by
//! side with absolute and relative differences and their significance marks (the cells of
//! [`crate::compare_text::table`], so text, Markdown and HTML never disagree), then the runs
//! overlaid: per-second throughput, per-second p99 and the latency percentile spectra.
//!
//! Key decisions: the page is built like the single-run report (`html.rs`): the same inlined
//! uPlot and CSS, the same Content-Security-Policy, every string HTML-escaped and the chart data
//! in a `<script type="application/json">` blob. The runs' points rarely fall on the same x (the
//! seconds of two runs, the spectrum positions of two histograms), so each chart's x is the
//! union of all runs' points and each run's series is `null` where it has no point;
//! the charts set `span_gaps`, so the shared chart script joins each series across those holes.

use crate::compare_text::{legend, run_letter, table, warnings};
use crate::doc::charts::{Chart, Series};
use crate::html::{esc, script_json, CSP, REPORT_CSS, UPLOT_CSS, UPLOT_JS};
use barrage_metrics::compare::{Comparison, Mark};
use barrage_metrics::{Phase, RunResult};
use std::io::{self, Write};

const COMPARE_CSS: &str = "td.n{text-align:right;white-space:nowrap}\
     td.mark-sig{color:#c0262d;font-weight:700}td.mark-noise{color:#777}\
     td.mark-unknown{color:#a35200}td.mark-info{color:#777}td.worse{color:#c0262d}td.better{color:#18794e}\
     ul.rules li{margin:.2em 0}";

/// Render the comparison `c` of `runs` (the first is the reference) as an HTML page;
/// `names[i]` says where run `i` came from.
pub fn render_comparison_html(
    c: &Comparison,
    runs: &[RunResult],
    names: &[String],
    out: &mut dyn Write,
) -> io::Result<()> {
    let sections = [
        ("runs", "Runs"),
        ("figures", "Core figures"),
        ("throughput", "Throughput"),
        ("latency", "Latency"),
        ("spectrum", "Latency percentile spectra"),
    ];
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>barrage comparison</title>\n\
         <style>{UPLOT_CSS}</style>\n<style>{REPORT_CSS}</style>\n<style>{COMPARE_CSS}</style>\n\
         </head>\n<body>\n<header>\n<h1>barrage comparison</h1>\n\
         <p class=\"target\">{} runs, {} is the reference</p>\n</header>\n<nav>\n",
        c.runs.max(runs.len()),
        run_letter(0)
    )?;
    for (id, title) in sections {
        writeln!(out, "<a href=\"#{id}\">{}</a>", esc(title))?;
    }
    writeln!(out, "</nav>\n<main>")?;

    section_start(out, "runs", "Runs")?;
    writeln!(out, "<div class=\"table-wrap\"><table class=\"kv\">")?;
    for i in 0..names.len().max(runs.len()) {
        let name = names.get(i).map_or("", String::as_str);
        let role = if i == 0 { " (reference)" } else { "" };
        writeln!(
            out,
            "<tr><th>{}</th><td>{}{role}</td></tr>",
            run_letter(i),
            esc(name)
        )?;
    }
    writeln!(out, "</table></div>")?;
    for w in warnings(c) {
        writeln!(out, "<p class=\"warning\">{}</p>", esc(&w))?;
    }
    writeln!(out, "</section>")?;

    section_start(out, "figures", "Core figures")?;
    figures(c, out)?;
    writeln!(out, "</section>")?;

    let charts = [
        ("throughput", "Throughput", throughput(runs)),
        ("latency", "Latency", latency(runs)),
        ("spectrum", "Latency percentile spectra", spectra(runs)),
    ];
    let mut drawn = Vec::new();
    for (id, title, chart) in charts {
        section_start(out, id, title)?;
        if has_data(&chart) {
            writeln!(
                out,
                "<noscript><p>The charts need JavaScript; every figure is also in the table.</p></noscript>\n\
                 <figure class=\"chart\"><div class=\"chart-box\" id=\"{}\"></div>\
                 <figcaption>{}: {} over {}, one line per run</figcaption></figure>",
                esc(&chart.id),
                esc(&chart.title),
                esc(&chart.y_label),
                esc(&chart.x_label)
            )?;
            drawn.push(chart);
        } else {
            writeln!(out, "<p>No run has data for this chart.</p>")?;
        }
        writeln!(out, "</section>")?;
    }
    writeln!(out, "</main>")?;
    let data = serde_json::json!({ "charts": drawn });
    writeln!(
        out,
        "<script type=\"application/json\" id=\"barrage-data\">{}</script>",
        script_json(&data)
    )?;
    writeln!(out, "<script>{UPLOT_JS}</script>")?;
    writeln!(out, "<script>{}</script>", crate::html::AXES_JS)?;
    writeln!(out, "<script>{}</script>", crate::html::REPORT_JS)?;
    writeln!(out, "</body>\n</html>")
}

fn section_start(out: &mut dyn Write, id: &str, title: &str) -> io::Result<()> {
    writeln!(out, "<section id=\"{id}\">\n<h2>{}</h2>", esc(title))
}

/// The comparison table, then what the marks mean and the rule behind each.
fn figures(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let t = table(c);
    write!(
        out,
        "<div class=\"table-wrap\"><table class=\"compare\">\n<thead><tr>"
    )?;
    for h in &t.header {
        write!(out, "<th>{}</th>", esc(h))?;
    }
    writeln!(out, "</tr></thead>\n<tbody>")?;
    for (r, row) in t.rows.iter().enumerate() {
        write!(out, "<tr>")?;
        for (j, cell) in row.iter().enumerate() {
            let mut classes = Vec::new();
            if t.numeric[j] {
                classes.push("n");
            }
            // Columns: metric, A, then per other run: value, Δ, Δ %, mark.
            let other = j.checked_sub(2).map(|k| (k / 4 + 1, k % 4));
            let source = other.and_then(|(run, _)| c.rows.get(r)?.cells.get(run));
            match (other, source) {
                (Some((_, 3)), Some(s)) => classes.push(match s.mark {
                    Some(Mark::Significant) => "mark-sig",
                    Some(Mark::Noise) => "mark-noise",
                    Some(Mark::Unknown) => "mark-unknown",
                    Some(Mark::Info) => "mark-info",
                    None => "",
                }),
                (Some((_, 2)), Some(s)) if s.mark == Some(Mark::Significant) => {
                    classes.push(match s.worse {
                        Some(true) => "worse",
                        Some(false) => "better",
                        None => "",
                    })
                }
                _ => {}
            }
            let classes: Vec<&str> = classes.into_iter().filter(|s| !s.is_empty()).collect();
            if classes.is_empty() {
                write!(out, "<td>{}</td>", esc(cell))?;
            } else {
                write!(
                    out,
                    "<td class=\"{}\">{}</td>",
                    classes.join(" "),
                    esc(cell)
                )?;
            }
        }
        writeln!(out, "</tr>")?;
    }
    writeln!(out, "</tbody>\n</table></div>")?;
    let lines = legend();
    let (marks, rules) = lines.split_first().expect("the legend has a first line");
    writeln!(
        out,
        "<p>{}</p>\n<h3>Rules</h3>\n<ul class=\"rules\">",
        esc(marks)
    )?;
    for l in rules {
        let l = l.trim();
        match l.split_once(": ") {
            Some((m, rule)) => writeln!(out, "<li><code>{}</code>: {}</li>", esc(m), esc(rule))?,
            None => writeln!(out, "<li>{}</li>", esc(l))?,
        }
    }
    writeln!(out, "</ul>")
}

/// One series per run on the union of all runs' x values (`None` where a run has no point).
fn overlay(
    id: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    points: Vec<Vec<(f64, Option<f64>)>>,
) -> Chart {
    let mut x: Vec<f64> = points.iter().flatten().map(|p| p.0).collect();
    x.sort_by(f64::total_cmp);
    x.dedup();
    let series = points
        .iter()
        .enumerate()
        .map(|(i, run)| {
            let mut values = vec![None; x.len()];
            for (px, py) in run {
                if let Ok(k) = x.binary_search_by(|v| v.total_cmp(px)) {
                    values[k] = *py;
                }
            }
            Series {
                label: run_letter(i),
                values,
            }
        })
        .collect();
    Chart {
        id: format!("chart-{id}"),
        title: title.into(),
        x_label: x_label.into(),
        y_label: y_label.into(),
        x_log: false,
        y_log: false,
        x,
        series,
        x_percentile: None,
        span_gaps: true,
        points: false,
    }
}

fn has_data(c: &Chart) -> bool {
    !c.x.is_empty()
        && c.series
            .iter()
            .any(|s| s.values.iter().any(|v| v.is_some_and(f64::is_finite)))
}

/// Each run's per-second ticks (drain left out, as in the report), x in seconds from the
/// run's start rounded to the millisecond so that the runs' seconds line up.
fn per_second(
    runs: &[RunResult],
    f: fn(&barrage_metrics::Tick) -> Option<f64>,
) -> Vec<Vec<(f64, Option<f64>)>> {
    runs.iter()
        .map(|r| {
            r.timeseries
                .iter()
                .filter(|t| t.phase != Phase::Drain)
                .map(|t| ((t.t * 1e3).round() / 1e3, f(t)))
                .collect()
        })
        .collect()
}

fn throughput(runs: &[RunResult]) -> Chart {
    overlay(
        "throughput",
        "Throughput",
        "s",
        "req/s",
        per_second(runs, |t| Some(t.rps)),
    )
}

fn latency(runs: &[RunResult]) -> Chart {
    overlay(
        "latency",
        "Latency p99",
        "s",
        "ms",
        per_second(runs, |t| {
            (t.requests > 0).then(|| t.latency_us.p99 as f64 / 1e3)
        }),
    )
}

/// Each run's spectrum as in the report: x = 1 / (1 - q) on a log axis, y in ms (log).
fn spectra(runs: &[RunResult]) -> Chart {
    let points = runs
        .iter()
        .map(|r| {
            r.histograms
                .latency
                .decode()
                .map(|h| h.spectrum())
                .unwrap_or_default()
                .into_iter()
                .filter(|(p, _)| *p < 100.0)
                .map(|(p, v)| (100.0 / (100.0 - p), Some(v.max(1) as f64 / 1e3)))
                .collect()
        })
        .collect();
    let mut c = overlay(
        "spectrum",
        "Latency percentile spectra",
        "percentile",
        "ms",
        points,
    );
    c.x_log = true;
    c.y_log = true;
    c.x_percentile = Some(true);
    c
}
