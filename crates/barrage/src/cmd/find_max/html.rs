//! The find-max HTML page: the verdict, the table of steps and three small inline SVG charts
//! against the offered rate (offered vs achieved rate, p99, errors). Self-contained: no script,
//! no external asset.

use super::render::{rows, Record, Step, HEAD};
use barrage_report::fmt::real;
use barrage_report::html_escape;

pub(super) fn page(r: &Record) -> String {
    let mut table = String::from("<table><tr>");
    for h in HEAD {
        table.push_str(&format!("<th>{h}</th>"));
    }
    table.push_str("</tr>");
    for row in rows(r) {
        table.push_str("<tr>");
        for c in row {
            table.push_str(&format!("<td>{}</td>", html_escape(&c)));
        }
        table.push_str("</tr>");
    }
    table.push_str("</table>");
    let mut by_rate: Vec<&Step> = r.steps.iter().collect();
    by_rate.sort_by(|a, b| a.offered.total_cmp(&b.offered));
    let xs: Vec<f64> = by_rate.iter().map(|s| s.offered).collect();
    let rates = chart(
        "rate per second: offered (dashed) and achieved",
        &xs,
        &[
            (xs.clone(), "#888", true),
            (
                by_rate.iter().map(|s| s.achieved).collect(),
                "#1f77b4",
                false,
            ),
        ],
    );
    let p99 = chart(
        "p99 latency, ms",
        &xs,
        &[(
            by_rate.iter().map(|s| s.p99_us as f64 / 1e3).collect(),
            "#d62728",
            false,
        )],
    );
    let errs = chart(
        "errors, %",
        &xs,
        &[(
            by_rate
                .iter()
                .map(|s| s.error_rate.unwrap_or(0.0) * 100.0)
                .collect(),
            "#ff7f0e",
            false,
        )],
    );
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>find-max: {t}</title>\
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}table{{border-collapse:collapse}}\
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}svg{{display:block;margin:1em 0}}</style>\
</head><body><h1>find-max: {t}</h1><p><b>Verdict:</b> {v}</p><p>SLOs: {slos}. Steps of {d} s after {w} s of warm-up, {c} connections.</p>\
{table}<h2>By offered rate</h2>{rates}{p99}{errs}</body></html>\n",
        t = html_escape(&r.target),
        v = html_escape(&r.result.verdict),
        slos = html_escape(&r.slos.join(", ")),
        d = r.step_duration_s,
        w = r.step_warmup_s,
        c = r.connections,
    )
}

/// A small inline SVG line chart of `series` (values, colour, dashed) against the offered rate.
fn chart(title: &str, xs: &[f64], series: &[(Vec<f64>, &str, bool)]) -> String {
    const W: f64 = 640.0;
    const H: f64 = 200.0;
    const PAD: f64 = 50.0;
    let xmax = xs.iter().cloned().fold(0.0, f64::max).max(1e-9);
    let ymax = series
        .iter()
        .flat_map(|(v, _, _)| v.iter().cloned())
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
        .max(1e-9);
    let px = |x: f64| PAD + x / xmax * (W - 2.0 * PAD);
    let py = |y: f64| H - PAD / 2.0 - y / ymax * (H - PAD);
    let mut svg = format!(
        "<svg width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\"><title>{t}</title>\
<text x=\"{PAD}\" y=\"14\" font-size=\"12\">{t} (max {ymax:.3}; x: offered rate, max {xm})</text>\
<line x1=\"{PAD}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\" stroke=\"#000\"/>",
        t = html_escape(title),
        xm = real(xmax),
        y0 = py(0.0),
        x1 = W - PAD,
    );
    for (ys, colour, dashed) in series {
        let pts: Vec<String> = xs
            .iter()
            .zip(ys)
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(y.min(ymax))))
            .collect();
        svg.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"{} points=\"{}\"/>",
            if *dashed {
                " stroke-dasharray=\"4 3\""
            } else {
                ""
            },
            pts.join(" ")
        ));
    }
    svg + "</svg>"
}
