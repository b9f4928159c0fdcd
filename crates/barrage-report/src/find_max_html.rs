//! find-max's record as one self-contained HTML page, built like the run report and the
//! comparison page (`html.rs`, `compare_html.rs`): the same stylesheet, inlined uPlot and
//! `axes.js` (y axes as wide as their labels, legends), the same Content-Security-Policy.
//!
//! What it shows: the verdict (the highest rate that met every SLO, the lowest that broke one
//! and why, how the search ended), the steps in the order run (the text table's cells), then
//! three charts against the offered rate, one point per rate tried (a rate run twice, a
//! retried step, is drawn as its last run): offered and achieved rate, latency percentiles,
//! errors. Every string from the record is escaped; the chart data travels as JSON in a
//! `<script type="application/json">` blob, as in the report.

use crate::doc::charts::Chart;
use crate::find_max::{rate, rows, End, Record, Step, Verdict, HEAD};
use crate::html::{esc, script_json, AXES_JS, CSP, REPORT_CSS, REPORT_JS, UPLOT_CSS, UPLOT_JS};
use std::fmt::Write as _;

const SECTIONS: [(&str, &str); 6] = [
    ("verdict", "Verdict"),
    ("steps", "Steps"),
    ("rates", "Offered and achieved rate"),
    ("latency", "Latency per step"),
    ("errors", "Errors per step"),
    ("setup", "Setup"),
];

/// The page.
pub fn page(r: &Record) -> String {
    let target = esc(&r.target);
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>barrage find-max: {target}</title>\n\
         <style>{UPLOT_CSS}</style>\n<style>{REPORT_CSS}</style>\n</head>\n<body>\n\
         <header>\n<h1>barrage find-max</h1>\n<p class=\"target\">{target}</p>\n</header>\n<nav>\n"
    );
    let charts = charts(r);
    for (id, title) in SECTIONS {
        let _ = writeln!(out, "<a href=\"#{id}\">{}</a>", esc(title));
    }
    out.push_str("</nav>\n<main>\n");
    verdict(r, &mut out);
    steps(r, &mut out);
    let mut drawn = Vec::new();
    for (chart, (id, title)) in charts.into_iter().zip(&SECTIONS[2..5]) {
        start(&mut out, id, title);
        if chart.has_data() {
            let _ = writeln!(
                out,
                "<noscript><p>The charts need JavaScript; every figure is also in the table of \
                 steps.</p></noscript>\n<figure class=\"chart\"><div class=\"chart-box\" \
                 id=\"{}\"></div><figcaption>{}: {} over the offered rate ({}), one point per \
                 rate tried</figcaption></figure>",
                esc(&chart.id),
                esc(&chart.title),
                esc(&chart.y_label),
                esc(&chart.x_label)
            );
            drawn.push(chart);
        } else {
            out.push_str("<p>No step measured this.</p>\n");
        }
        out.push_str("</section>\n");
    }
    setup(r, &mut out);
    out.push_str("</main>\n");
    let data = serde_json::json!({ "charts": drawn });
    let _ = writeln!(
        out,
        "<script type=\"application/json\" id=\"barrage-data\">{}</script>\n\
         <script>{UPLOT_JS}</script>\n<script>{AXES_JS}</script>\n<script>{REPORT_JS}</script>\n\
         </body>\n</html>",
        script_json(&data)
    );
    out
}

/// `5`, `0.5`, `2.25`: a setting as the user gave it, at most two decimals.
fn num(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn start(out: &mut String, id: &str, title: &str) {
    let _ = writeln!(out, "<section id=\"{id}\">\n<h2>{}</h2>", esc(title));
}

fn kv(out: &mut String, pairs: &[(&str, String)]) {
    out.push_str("<div class=\"table-wrap\"><table class=\"kv\">\n");
    for (k, v) in pairs {
        let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    }
    out.push_str("</table></div>\n");
}

/// The verdict line, then its parts: the max sustainable rate, the first rate that broke an
/// SLO and why, how the search ended.
fn verdict(r: &Record, out: &mut String) {
    start(out, "verdict", "Verdict");
    let c = &r.result;
    let class = if c.end == End::Found || c.end == End::MaxRate {
        "verdict"
    } else {
        "verdict warning"
    };
    let _ = writeln!(
        out,
        "<p class=\"{class}\"><strong>{}</strong></p>",
        esc(&c.verdict)
    );
    let none = || "none".to_string();
    let mut pairs = vec![
        (
            "highest rate that met every SLO",
            c.max_ok.map_or_else(none, rate),
        ),
        (
            "lowest rate that broke one",
            c.first_bad.map_or_else(none, rate),
        ),
    ];
    if let Some(why) = &c.why {
        pairs.push(("why", why.clone()));
    }
    pairs.push(("search ended", ended(&c.end, r)));
    kv(out, &pairs);
    out.push_str("</section>\n");
}

fn ended(end: &End, r: &Record) -> String {
    match end {
        End::Found => format!(
            "the limit lies between these two rates, within --precision {} %",
            num(r.bounds.precision * 100.0)
        ),
        End::MaxRate => format!(
            "every step passed up to --max-rate {}",
            rate(r.bounds.max_rate)
        ),
        End::MaxSteps => format!(
            "--max-steps ({}) ran out before the precision was reached",
            r.bounds.max_steps
        ),
        End::GeneratorLimit => "barrage itself was the limit, not the server".into(),
        End::NothingPassed => "even the lowest rate tried broke an SLO".into(),
        End::Interrupted => "interrupted by a signal".into(),
        End::Unreachable => "the server stopped accepting connections".into(),
    }
}

/// The steps in the order run, the text table's cells; the verdict cell coloured.
fn steps(r: &Record, out: &mut String) {
    start(out, "steps", "Steps");
    let _ = writeln!(
        out,
        "<p>In the order run: each step offers an open-loop rate for {} s after {} s of \
         warm-up, over {} connections.</p>",
        num(r.step_duration_s),
        num(r.step_warmup_s),
        r.connections
    );
    out.push_str("<div class=\"table-wrap\"><table class=\"steps\">\n<thead><tr>");
    for h in HEAD {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (s, row) in r.steps.iter().zip(rows(r)) {
        out.push_str("<tr>");
        let last = row.len() - 1;
        for (i, cell) in row.iter().enumerate() {
            let class = match (i == last, &s.verdict) {
                (false, _) => "n",
                (true, Verdict::Pass) => "grade-pass",
                (true, Verdict::Fail(_)) => "grade-fail",
                (true, _) => "grade-warn",
            };
            let _ = write!(out, "<td class=\"{class}\">{}</td>", esc(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n</section>\n");
}

fn setup(r: &Record, out: &mut String) {
    start(out, "setup", "Setup");
    let b = &r.bounds;
    kv(
        out,
        &[
            ("command", r.command_line.join(" ")),
            ("started", r.started_at.clone()),
            ("SLOs", r.slos.join(", ")),
            (
                "steps",
                format!(
                    "{} s each after {} s of warm-up, {} connections",
                    num(r.step_duration_s),
                    num(r.step_warmup_s),
                    r.connections
                ),
            ),
            (
                "search",
                format!(
                    "from {} up to at most {}, ×{} per step until a failure, then halving \
                     to within {} %; at most {} steps",
                    rate(b.start),
                    rate(b.max_rate),
                    num(b.growth),
                    num(b.precision * 100.0),
                    b.max_steps
                ),
            ),
        ],
    );
    out.push_str("</section>\n");
}

/// One step per rate tried (the last run at it), by offered rate.
fn by_rate(r: &Record) -> Vec<&Step> {
    let mut steps: Vec<&Step> = Vec::new();
    for s in &r.steps {
        steps.retain(|t| t.offered != s.offered);
        steps.push(s);
    }
    steps.sort_by(|a, b| a.offered.total_cmp(&b.offered));
    steps
}

/// The rate, latency and error charts, in the order of `SECTIONS[2..5]`.
fn charts(r: &Record) -> [Chart; 3] {
    let steps = by_rate(r);
    let x: Vec<f64> = steps.iter().map(|s| s.offered).collect();
    let col = |f: &dyn Fn(&Step) -> Option<f64>| steps.iter().map(|s| f(s)).collect::<Vec<_>>();
    let ms = |us: u64| Some(us as f64 / 1e3);
    let measured = |s: &Step| s.summary.latency_us.count > 0;
    let x_label = "offered req/s";
    let mut charts = [
        Chart::new(
            "rates",
            "Offered and achieved rate",
            x_label,
            "req/s",
            x.clone(),
        )
        .series("offered", col(&|s| Some(s.offered)))
        .series("achieved", col(&|s| Some(s.achieved))),
        Chart::new("latency", "Latency per step", x_label, "ms", x.clone())
            .series("p50", col(&|s| ms(s.p50_us).filter(|_| measured(s))))
            .series(
                "p90",
                col(&|s| ms(s.summary.latency_us.p90).filter(|_| measured(s))),
            )
            .series("p99", col(&|s| ms(s.p99_us).filter(|_| measured(s))))
            .series(
                "p99.9",
                col(&|s| ms(s.summary.latency_us.p999).filter(|_| measured(s))),
            ),
        Chart::new("errors", "Errors per step", x_label, "%", x)
            .series("errors", col(&|s| s.error_rate.map(|e| e * 100.0))),
    ];
    for c in &mut charts {
        c.points = true;
    }
    charts
}

/// The find-max record as a page: HTML, or Markdown for any other format.
pub fn report(r: &Record, f: crate::Format) -> String {
    match f {
        crate::Format::Html => page(r),
        _ => markdown(r),
    }
}

fn markdown(r: &Record) -> String {
    use crate::markdown_escape as escape;
    let mut out = format!("# find-max: {}\n\n", escape(&r.target));
    out.push_str(&format!("**Verdict:** {}\n\n", escape(&r.result.verdict)));
    out.push_str(&format!(
        "SLOs: {}. Steps of {} s after {} s of warm-up, {} connections.\n\n",
        r.slos
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", "),
        r.step_duration_s,
        r.step_warmup_s,
        r.connections
    ));
    out.push_str(&format!("| {} |\n", HEAD.join(" | ")));
    out.push_str(&format!("|{}\n", "---|".repeat(HEAD.len())));
    for row in rows(r) {
        let cells: Vec<String> = row.iter().map(|c| escape(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}
