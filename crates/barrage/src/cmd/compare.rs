//! `barrage compare A.json B.json ...`: runs side by side (the `--baseline` check at the end of a
//! run is `sinks/baseline.rs`).
//!
//! All judgement lives in `barrage_metrics::compare` (what differs, beyond which noise) and
//! all cell formatting in `barrage_report::compare_text`; this file loads files, picks the
//! output form (text on stdout, `-o` Markdown or HTML) and turns mistakes into `Usage` errors
//! that name the file or flag.

use crate::resolve::cli::CompareArgs;
use crate::sinks::baseline::{describe, options};
use crate::usage::Usage;
use anyhow::Context;
use barrage_metrics::compare::{self, Comparison};
use barrage_metrics::RunResult;
use barrage_report::compare_text::{legend, run_letter, table, warnings};
use std::io::Write;
use std::path::Path;

#[derive(Clone, Copy)]
pub(crate) enum Output {
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

fn load(path: &Path) -> Result<RunResult, Usage> {
    barrage_report::load(path).map_err(|e| Usage::file(path.display(), e))
}

/// Compare the saved runs (the first is the reference); exit code 0.
pub fn compare(a: &CompareArgs) -> anyhow::Result<i32> {
    let out = output(a.output.as_deref())?;
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
    show(&runs, &names, &opts, out)?;
    Ok(0)
}

/// `-o FILE`, checked before anything runs.
pub(crate) fn output(path: Option<&str>) -> Result<Option<(&str, Output)>, Usage> {
    path.map(|p| output_kind(p).map(|k| (p, k))).transpose()
}

/// The comparison of `runs` (the first is the reference) on stdout, and in `out` if given.
pub(crate) fn show(
    runs: &[RunResult],
    names: &[String],
    opts: &compare::Options,
    out: Option<(&str, Output)>,
) -> anyhow::Result<()> {
    let cmp = compare::compare_with(runs, opts);
    let mut text = Vec::new();
    barrage_report::render_comparison_text(&cmp, names, &mut text)?;
    if let Err(e) = std::io::stdout().write_all(&text) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(e).context("cannot print the comparison");
        }
    }
    if let Some((path, kind)) = out {
        let body = match kind {
            Output::Markdown => markdown(&cmp, names),
            Output::Html => html(&cmp, runs, names),
        };
        std::fs::write(path, body).with_context(|| format!("-o {path}: cannot write"))?;
        crate::sinks::outfile::announce(Path::new(path));
    }
    Ok(())
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
        let h = html(
            &c,
            &[
                crate::sinks::baseline::tests::empty_run(),
                crate::sinks::baseline::tests::empty_run(),
            ],
            &names,
        );
        assert!(h.contains("&lt;a&gt;&amp;&quot;b&quot;") && !h.contains("<a>"));
        assert!(markdown(&c, &names).contains("x\\|y"));
        // The same escaper as the reports: emphasis, code spans and HTML in a name stay text.
        let names = ["*a* `b`".to_string(), "<i>_c_</i>".to_string()];
        let md = markdown(&c, &names);
        assert!(md.contains("\\*a\\* \\`b\\`"), "{md}");
        assert!(md.contains("&lt;i&gt;\\_c\\_&lt;/i&gt;"), "{md}");
    }

    #[test]
    fn only_md_and_html_outputs_are_accepted() {
        assert!(matches!(output_kind("r.MD"), Ok(Output::Markdown)));
        assert!(matches!(output_kind("r.html"), Ok(Output::Html)));
        let e = output_kind("r.txt").err().unwrap();
        assert!(e.to_string().contains("-o r.txt"), "{e}");
    }
}
