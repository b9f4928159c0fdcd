//! `barrage compare A.json B.json ...` and the `--baseline` check at the end of a run.
//!
//! All judgement lives in `barrage_metrics::compare` (what differs, beyond which noise) and
//! all cell formatting in `barrage_report::compare_text`; this file loads files, picks the
//! output form (text on stdout, `-o` Markdown or HTML) and turns mistakes into `Usage` errors
//! that name the file or flag.

use crate::resolve::cli::CompareArgs;
use crate::usage::Usage;
use anyhow::Context;
use barrage_metrics::compare::{self, Comparison, Options, Regression};
use barrage_metrics::RunResult;
use barrage_report::compare_text::{legend, run_letter, table, warnings};
use std::io::Write;
use std::path::Path;

#[derive(Clone, Copy)]
enum Output {
    Markdown,
    Html,
}

/// `-o FILE`: by the one rule of `output::report_format` (no stdout form here).
fn output_kind(path: &str) -> Result<Output, Usage> {
    Ok(
        match crate::sinks::output::report_format("-o", path, false)? {
            barrage_report::Format::Html => Output::Html,
            _ => Output::Markdown,
        },
    )
}

/// `--noise-floor 20%` (or `20`): a percentage from 0 to 1000; `None` means the default.
pub fn options(noise_floor: Option<&str>) -> Result<Options, Usage> {
    let Some(s) = noise_floor else {
        return Ok(Options::default());
    };
    let pct: f64 = s
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .ok()
        .filter(|p: &f64| p.is_finite() && (0.0..=1000.0).contains(p))
        .ok_or_else(|| {
            Usage::value(
                "--noise-floor",
                s,
                "expected a percentage from 0 to 1000, e.g. 20%",
            )
        })?;
    Ok(Options {
        noise_floor: pct / 100.0,
    })
}

fn load(path: &Path) -> Result<RunResult, Usage> {
    barrage_report::load(path).map_err(|e| Usage::file(path.display(), e))
}

/// Compare the saved runs (the first is the reference); exit code 0.
pub fn compare(a: &CompareArgs) -> anyhow::Result<i32> {
    let out = a
        .output
        .as_deref()
        .map(|p| output_kind(p).map(|k| (p, k)))
        .transpose()?;
    let opts = options(a.noise_floor.as_deref())?;
    let runs = a
        .results
        .iter()
        .map(|p| load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let names: Vec<String> = a
        .results
        .iter()
        .zip(&runs)
        .map(|(p, r)| describe(&p.display().to_string(), r))
        .collect();
    let cmp = compare::compare_with(&runs, &opts);
    let mut text = Vec::new();
    barrage_report::render_comparison_text(&cmp, &names, &mut text)?;
    if let Err(e) = std::io::stdout().write_all(&text) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(e).context("cannot print the comparison");
        }
    }
    if let Some((path, kind)) = out {
        let body = match kind {
            Output::Markdown => markdown(&cmp, &names),
            Output::Html => html(&cmp, &runs, &names),
        };
        std::fs::write(path, body).with_context(|| format!("-o {path}: cannot write"))?;
    }
    Ok(0)
}

/// `file: target, mode, c connections, started` — enough to tell the runs apart.
fn describe(name: &str, r: &RunResult) -> String {
    let c = &r.config;
    let when = if r.started_at.is_empty() {
        String::new()
    } else {
        format!(", {}", r.started_at)
    };
    format!(
        "{name}: {} {}, {} connections{when}",
        c.target, c.mode, c.connections
    )
}

/// Compare a finished run with a saved `baseline` and, with `limits` (`--max-regression`),
/// check each limit. Returns the lines to print and whether the run regressed: a limit is
/// broken when the figure is worse by more than its margin and the difference is beyond both
/// runs' noise; a limit on a figure one of the runs lacks (e.g. server.cpu.avg without
/// monitoring), or without enough data to judge (fewer than five seconds, a p999 of seconds
/// too small to have one), cannot be checked and counts as broken, as a threshold that cannot
/// be measured fails.
pub fn check_baseline(
    result: &RunResult,
    baseline: &Path,
    limits: Option<&str>,
    opts: &Options,
) -> anyhow::Result<(Vec<String>, bool)> {
    let limits = limits
        .map(compare::parse_limits)
        .transpose()
        .map_err(|e| Usage::new("--max-regression", e))?;
    let base = barrage_report::load(baseline).map_err(|e| Usage::new("--baseline", e))?;
    let runs = [base, result.clone()];
    let cmp = compare::compare_with(&runs, opts);
    let names = [
        describe(&format!("baseline {}", baseline.display()), &runs[0]),
        describe("this run", &runs[1]),
    ];
    let mut text = Vec::new();
    barrage_report::render_comparison_text(&cmp, &names, &mut text)?;
    let mut lines: Vec<String> = String::from_utf8_lossy(&text)
        .lines()
        .map(str::to_string)
        .collect();
    let mut regressed = false;
    if let Some(limits) = limits {
        lines.push(String::new());
        for r in compare::regressions(&runs[0], &runs[1], &limits, opts) {
            regressed |= r.fails();
            lines.push(regression_line(&r));
        }
        let floor = if opts.noise_floor > 0.0 {
            format!(
                ", and at least {} % with --noise-floor",
                opts.noise_floor * 100.0
            )
        } else {
            String::new()
        };
        lines.push(format!(
            "(noise: each run's own per-second series, Yuen's test at 95 %{floor}; a limit \
             without enough seconds to judge fails; docs/compare.md)"
        ));
    }
    Ok((lines, regressed))
}

fn regression_line(r: &Regression) -> String {
    let limit = format!("limit {}%", r.limit_pct);
    if !r.measured() {
        let missing = if r.reference.is_none() {
            "the baseline"
        } else {
            "this run"
        };
        return format!(
            "regression {}: cannot check, {missing} has no such figure ({limit}) -> FAILED",
            r.metric
        );
    }
    let change = r
        .change_pct
        .map_or("from 0".to_string(), |p| format!("{p:+.1} %"));
    if !r.judged {
        return format!(
            "regression {}: {change}, cannot check: not enough data to judge it (too few \
             seconds, or too few exchanges a second for this percentile; run longer) ({limit}) \
             -> FAILED",
            r.metric
        );
    }
    let noise = if r.significant {
        "beyond noise"
    } else {
        "within noise"
    };
    let verdict = if r.regressed { "REGRESSED" } else { "ok" };
    format!(
        "regression {}: {change} ({noise}, {limit}) -> {verdict}",
        r.metric
    )
}

fn markdown(c: &Comparison, names: &[String]) -> String {
    let t = table(c);
    let esc = barrage_report::markdown_escape;
    let row = |cells: &[String]| {
        let inner: Vec<String> = cells.iter().map(|s| esc(s)).collect();
        format!("| {} |\n", inner.join(" | "))
    };
    let mut out = String::from("# barrage comparison\n\n");
    for (i, n) in names.iter().enumerate() {
        let role = if i == 0 { " (reference)" } else { "" };
        out.push_str(&format!("- **{}** = {}{role}\n", run_letter(i), esc(n)));
    }
    out.push('\n');
    for w in warnings(c) {
        out.push_str(&format!("> **{}**\n\n", esc(&w)));
    }
    out.push_str(&row(&t.header));
    let rule: Vec<String> = t
        .numeric
        .iter()
        .map(|n| if *n { "---:" } else { "---" }.to_string())
        .collect();
    out.push_str(&format!("|{}|\n", rule.join("|")));
    for r in &t.rows {
        out.push_str(&row(r));
    }
    out.push('\n');
    for l in legend() {
        let l = esc(&l);
        match l.strip_prefix("  ") {
            Some(rule) => out.push_str(&format!("- {rule}\n")),
            None => out.push_str(&format!("{l}\n\n")),
        }
    }
    out
}

/// The page with the table and the runs' overlaid charts (`barrage_report::compare_html`).
fn html(c: &Comparison, runs: &[RunResult], names: &[String]) -> String {
    let mut out = Vec::new();
    barrage_report::render_comparison_html(c, runs, names, &mut out)
        .expect("rendering into a Vec cannot fail");
    String::from_utf8(out).expect("the page is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escapes_names_and_markdown_escapes_pipes() {
        let c = Comparison {
            runs: 2,
            rows: vec![],
            mismatches: vec![],
        };
        let names = ["<a>&\"b\"".to_string(), "x|y".to_string()];
        let h = html(&c, &[empty_run(), empty_run()], &names);
        assert!(h.contains("&lt;a&gt;&amp;&quot;b&quot;") && !h.contains("<a>"));
        assert!(markdown(&c, &names).contains("x\\|y"));
        // The same escaper as the reports: emphasis, code spans and HTML in a name stay text.
        let names = ["*a* `b`".to_string(), "<i>_c_</i>".to_string()];
        let md = markdown(&c, &names);
        assert!(md.contains("\\*a\\* \\`b\\`"), "{md}");
        assert!(md.contains("&lt;i&gt;\\_c\\_&lt;/i&gt;"), "{md}");
    }

    fn empty_run() -> RunResult {
        let tl = barrage_metrics::Timeline {
            warmup_ns: 0,
            load_end_ns: Some(0),
        };
        let o = barrage_metrics::Aggregator::new(tl, 1)
            .finish(1, barrage_metrics::LatencyBasis::ActualSend);
        RunResult::new(
            barrage_metrics::Status::Completed,
            None,
            vec![],
            String::new(),
            Default::default(),
            Default::default(),
            o,
        )
    }

    #[test]
    fn baseline_checks_limits_first_then_the_file_and_fails_unmeasurable_limits() {
        let r = empty_run();
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.json");
        let e = check_baseline(&r, &missing, Some("p99=10"), &Options::default()).unwrap_err();
        assert!(e.is::<Usage>() && e.to_string().starts_with("--max-regression: \"p99=10\""));
        let e = check_baseline(&r, &missing, None, &Options::default()).unwrap_err();
        assert!(e.is::<Usage>() && e.to_string().starts_with("--baseline: cannot read"));

        let base = dir.path().join("base.json");
        barrage_report::save(&r, barrage_report::Format::Json, &base).unwrap();
        let (lines, regressed) = check_baseline(&r, &base, None, &Options::default()).unwrap();
        assert!(!regressed && lines.iter().any(|l| l.starts_with("metric")));
        let (lines, regressed) = check_baseline(
            &r,
            &base,
            Some("p99=10%,server.cpu.avg=5%"),
            &Options::default(),
        )
        .unwrap();
        assert!(regressed, "cpu was not monitored: {lines:?}");
        assert!(lines
            .iter()
            .any(|l| l.contains("server.cpu.avg: cannot check")));
        assert!(lines
            .iter()
            .any(|l| l.starts_with("regression p99:") && l.ends_with("ok")));
        assert!(lines.last().unwrap().contains("own per-second series"));
        assert!(!lines.last().unwrap().contains("--noise-floor"));
    }

    #[test]
    fn a_limit_without_enough_data_to_judge_fails_the_gate() {
        let r = |p99: u64| {
            let mut r = empty_run();
            r.summary.latency_us.p99 = p99;
            r
        };
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("base.json");
        barrage_report::save(&r(100), barrage_report::Format::Json, &base).unwrap();
        let (lines, regressed) =
            check_baseline(&r(150), &base, Some("p99=10%"), &Options::default()).unwrap();
        assert!(regressed, "{lines:?}");
        assert!(
            lines.iter().any(|l| l.starts_with(
                "regression p99: +50.0 %, cannot check: not \
                 enough data"
            ) && l.ends_with("-> FAILED")),
            "{lines:?}"
        );
    }

    #[test]
    fn the_noise_floor_is_a_percentage_or_a_usage_error() {
        assert_eq!(options(None).unwrap(), Options::default());
        assert_eq!(options(Some("20%")).unwrap().noise_floor, 0.2);
        assert_eq!(options(Some("0")).unwrap().noise_floor, 0.0);
        for bad in ["-5%", "abc", "2000%", "NaN"] {
            let e = options(Some(bad)).unwrap_err();
            assert!(
                e.to_string().starts_with(&format!("--noise-floor {bad}: ")),
                "{e}"
            );
        }
    }

    #[test]
    fn only_md_and_html_outputs_are_accepted() {
        assert!(matches!(output_kind("r.MD"), Ok(Output::Markdown)));
        assert!(matches!(output_kind("r.html"), Ok(Output::Html)));
        let e = output_kind("r.txt").err().unwrap();
        assert!(e.to_string().contains("-o r.txt"), "{e}");
    }
}
