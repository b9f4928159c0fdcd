//! The output manager of a run: everything the user sees or gets written, in one place.
//!
//! It owns the live view (the dashboard, or one status line a second), the JSON result, the
//! text summary, the `--report` file and the `--baseline` check. Every destination is checked
//! when the run is resolved (a bad path fails in a second, not after the load) and written
//! once at the end, in a fixed order: the JSON first (the complete record; stdout may be a pipe
//! whose reader is gone), then the summary, the baseline comparison and the report.
//! [`file_format`] is the one place that decides what a file is from its name.

use crate::sinks::{live, tui};
use crate::usage::Usage;
use anyhow::Context as _;
use barrage_engine::Plan;
use barrage_metrics::{Aggregator, RunResult, Tick};
use barrage_report::{Format, Renderer as _};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A file a command writes, as its name says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A result rendered whole (JSON, Markdown, HTML).
    Doc(Format),
    /// One row per second.
    Csv,
    /// Each second's latency histogram (an HdrHistogram interval log).
    HdrLog,
}

impl FileKind {
    /// The suffix a message names it by.
    fn suffix(self) -> &'static str {
        match self {
            FileKind::Doc(Format::Markdown) => ".md",
            FileKind::Doc(Format::Html) => ".html",
            FileKind::Doc(Format::Json) => ".json",
            FileKind::Doc(Format::Text) => ".txt",
            FileKind::Csv => ".csv",
            FileKind::HdrLog => ".hlog",
        }
    }

    /// What the file's name says it is: `.md`/`.markdown`, `.html`/`.htm`, `.json`, `.txt`,
    /// `.csv`, `.hlog`.
    pub fn of_name(path: &str) -> Option<FileKind> {
        let p = Path::new(path);
        if let Some(f) = Format::from_path(p) {
            return Some(FileKind::Doc(f));
        }
        match p.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "csv" => Some(FileKind::Csv),
            "hlog" => Some(FileKind::HdrLog),
            _ => None,
        }
    }
}

/// The one rule that decides what a file named on the command line is: its name's suffix,
/// one of `allowed`; with `stdout_ok`, `-` is Markdown on stdout. The error names `flag`,
/// the suffixes allowed, and `more` (advice said after the stdout form).
pub fn file_format(
    flag: &str,
    path: &str,
    allowed: &[FileKind],
    stdout_ok: bool,
    more: &str,
) -> Result<FileKind, Usage> {
    if stdout_ok && path == "-" {
        return Ok(FileKind::Doc(Format::Markdown));
    }
    match FileKind::of_name(path) {
        Some(k) if allowed.contains(&k) => Ok(k),
        _ => {
            let names: Vec<&str> = allowed.iter().map(|k| k.suffix()).collect();
            let list = match names.split_last() {
                Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
                _ => names.join(""),
            };
            let tail = if stdout_ok {
                format!(" (or - for Markdown on stdout{more})")
            } else {
                String::new()
            };
            Err(Usage::value(
                flag,
                path,
                format!("the file name must end in {list}{tail}"),
            ))
        }
    }
}

/// The format of a report file named by `flag` (`--report`, `compare -o`, `find-max
/// --report`): Markdown or HTML, by [`file_format`].
pub fn report_format(flag: &str, path: &str, stdout_ok: bool) -> Result<Format, Usage> {
    const REPORTS: [FileKind; 2] = [FileKind::Doc(Format::Markdown), FileKind::Doc(Format::Html)];
    match file_format(flag, path, &REPORTS, stdout_ok, "")? {
        FileKind::Doc(f) => Ok(f),
        _ => unreachable!("only reports are allowed"),
    }
}

/// Where the JSON goes: stdout, or a file checked at the start and written at the end.
pub(crate) enum JsonOut {
    Stdout,
    File(String),
}

/// Every output of one run, resolved and checked.
pub struct Outputs {
    pub(crate) json: Option<JsonOut>,
    /// `--out DIR`, `--csv`, `--hdr-log`: checked at resolve, opened when the run starts.
    pub(crate) files: crate::sinks::recorders::Paths,
    pub(crate) rec: crate::sinks::recorders::Recorders,
    /// `--prometheus`: where to serve `/metrics` (bound when the run starts).
    pub prometheus: Option<std::net::SocketAddr>,
    /// `--web`: where to serve the live page.
    pub web: Option<std::net::SocketAddr>,
    /// `--influx`: where each second's points go.
    pub influx: Option<crate::sinks::influx::InfluxTarget>,
    /// `--otlp`: the collector each second's metrics go to.
    pub otlp: Option<crate::sinks::otlp::OtlpTarget>,
    /// `--statsd`: where each second's metrics go.
    pub statsd: Option<crate::sinks::statsd::StatsdTarget>,
    pub(crate) report: Option<(String, Format)>,
    pub(crate) baseline: Option<crate::sinks::baseline::Baseline>,
    /// The comparison with the baseline, printed after the summary ([`Outputs::judge_baseline`]).
    pub(crate) baseline_lines: Vec<String>,
    pub(crate) quiet: bool,
    /// `--explain`: the summary gives each readiness row's rule.
    pub(crate) explain: bool,
    pub(crate) no_tui: bool,
    /// Printed as the load starts (unless `-q`).
    pub(crate) note: Option<String>,
    /// The text summary is printed at the end (a find-max step's is not).
    pub(crate) summary: bool,
}

impl Outputs {
    /// `-q`: no live output.
    pub fn quiet(&self) -> bool {
        self.quiet
    }

    /// The summary alone (and the live line unless `quiet`): what the demo's runs write.
    pub fn summary(quiet: bool) -> Outputs {
        Outputs {
            json: None,
            files: Default::default(),
            rec: Default::default(),
            prometheus: None,
            web: None,
            influx: None,
            otlp: None,
            statsd: None,
            report: None,
            baseline: None,
            baseline_lines: Vec::new(),
            quiet,
            explain: false,
            no_tui: false,
            note: None,
            summary: true,
        }
    }

    /// Nothing at all: no live view, no file, no summary (a find-max step, whose search says
    /// what it measured).
    pub fn none() -> Outputs {
        Outputs {
            no_tui: true,
            summary: false,
            ..Outputs::summary(true)
        }
    }

    /// Opens the files written while the load runs (`--out`, `--csv`, `--hdr-log`); one that
    /// cannot be created or written is a usage error naming it, before any load.
    pub fn start_files(&mut self, header: &barrage_report::stream::Header) -> Result<(), Usage> {
        self.rec = crate::sinks::recorders::Recorders::open(&self.files, header)?;
        Ok(())
    }

    /// The live files while the load runs.
    pub fn recorders(&mut self) -> &mut crate::sinks::recorders::Recorders {
        &mut self.rec
    }

    fn json_to_stdout(&self) -> bool {
        matches!(self.json, Some(JsonOut::Stdout))
    }

    /// Start the live view: the dashboard when the terminal allows it (if it refuses, the
    /// status line it is), else the status line (none with `-q`).
    pub fn live(&self, plan: &Plan, stop: &Arc<AtomicBool>) -> Live {
        if let (false, Some(n)) = (self.quiet, &self.note) {
            crate::sys::err_line(format_args!("note: {n}"));
        }
        let dash = tui::wanted(self.no_tui, self.quiet, self.json_to_stdout())
            .then(|| tui::Dashboard::start(tui::DashInfo::from_plan(plan), Arc::clone(stop)))
            .and_then(|d| {
                d.map_err(|e| crate::sys::err_line(format_args!("warning: no dashboard: {e}")))
                    .ok()
            });
        match dash {
            Some(d) => Live::Dashboard(d),
            None => Live::Line {
                quiet: self.quiet,
                target: plan.connections,
            },
        }
    }

    /// A run that stopped before any load (the TLS pre-flight refused the server): only the
    /// JSON result is written, saying why; exit code 1.
    pub fn refused(self, result: &RunResult) -> anyhow::Result<i32> {
        write_json(self.json, result, None)?;
        Ok(1)
    }

    /// `--baseline`: compares the finished run with the baseline and records the check in
    /// the result (every output then says it, the summary's verdict first); its comparison
    /// table is printed after the summary.
    pub fn judge_baseline(&mut self, result: &mut RunResult) -> anyhow::Result<()> {
        if let Some(b) = &self.baseline {
            let (lines, check) = b.check(result)?;
            self.baseline_lines = lines;
            result.baseline = Some(check);
        }
        Ok(())
    }

    /// Write everything at the end of a run and return the final exit code: `code` (the
    /// run's end), or 3 when it was 0 and a threshold failed or the baseline check (recorded
    /// by [`Outputs::judge_baseline`]) regressed.
    pub fn finish(mut self, result: &RunResult, code: i32) -> anyhow::Result<i32> {
        let regressed = result.baseline.as_ref().is_some_and(|b| b.regressed());
        let mut code = if code == 0 && (result.thresholds_failed() || regressed) {
            3
        } else {
            code
        };
        let baseline_lines = std::mem::take(&mut self.baseline_lines);
        let to_stderr = self.json_to_stdout();
        let json_path = match &self.json {
            Some(JsonOut::File(p)) => Some(p.clone()),
            _ => None,
        };
        // Each output succeeds or fails on its own (a full disk for the JSON still prints the
        // summary and writes a report elsewhere); every failure is one line, and exit code 1.
        let mut failed = Vec::new();
        let embedded = self.rec.take_embedded().unwrap_or_else(|why| {
            failed.push(why);
            None
        });
        if let Err(e) = write_json(self.json, result, embedded) {
            failed.push(crate::usage::error_line(&e));
        }
        std::mem::take(&mut self.rec).finish(result, &self.files, &mut failed);
        if self.summary {
            print_summary(
                result,
                self.explain,
                &baseline_lines,
                to_stderr,
                &mut failed,
            )?;
        }
        if let Some((path, format)) = &self.report {
            if let Err(e) = crate::sinks::outfile::write(result, path, *format) {
                failed.push(crate::usage::error_line(
                    &e.context(format!("--report {path}")),
                ));
            }
        }
        // Every file written, last, where the eye ends (what failed is said below instead).
        // A run without its summary is a part of a command that says what it wrote.
        if failed.is_empty() && self.summary {
            let mut written: Vec<&str> = Vec::new();
            written.extend(json_path.as_deref());
            written.extend(self.files.csv.as_deref());
            written.extend(self.files.hdr_log.as_deref());
            written.extend(self.files.out.as_deref().and_then(Path::to_str));
            written.extend(self.report.as_ref().map(|(p, _)| p.as_str()));
            for p in written {
                crate::sinks::outfile::announce(Path::new(p));
            }
        }
        for f in &failed {
            crate::sys::err_line(format_args!("error: {f}"));
        }
        if !failed.is_empty() && code == 0 {
            code = 1;
        }
        Ok(code)
    }
}

/// The text summary (and the baseline comparison) on stdout, or stderr when stdout carries
/// the JSON; a failure to print is one more failed output.
fn print_summary(
    result: &RunResult,
    explain: bool,
    baseline_lines: &[String],
    to_stderr: bool,
    failed: &mut Vec<String>,
) -> anyhow::Result<()> {
    // With --json -, stdout carries the JSON and the summary goes to stderr.
    let mut text = Vec::new();
    barrage_report::TextRenderer { explain }.render(result, &mut text)?;
    if !baseline_lines.is_empty() {
        text.extend_from_slice(b"\nBaseline comparison\n");
        for l in baseline_lines {
            text.extend_from_slice(l.as_bytes());
            text.push(b'\n');
        }
    }
    let shown = if to_stderr {
        std::io::stderr().write_all(&text)
    } else {
        std::io::stdout().write_all(&text)
    };
    if let Err(e) = shown {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            failed.push(format!("cannot print the summary: {e}"));
        }
    }
    Ok(())
}

/// The live view while the load runs; fed one tick a second, never blocking the engine.
pub enum Live {
    Dashboard(tui::Dashboard),
    Line { quiet: bool, target: u64 },
}

impl Live {
    pub fn update(&self, tick: &Tick, agg: &Aggregator, server: Option<tui::ServerSample>) {
        match self {
            Live::Dashboard(d) => d.update_with(tick, agg, server),
            Live::Line { quiet, target } => {
                if let (false, Some(l)) = (quiet, live::line(tick, agg, *target)) {
                    crate::sys::err_line(format_args!("{l}"));
                }
            }
        }
    }

    /// The dashboard's stop keys (`None` for the status line).
    pub fn keys(&self) -> Option<Arc<tui::Keys>> {
        match self {
            Live::Dashboard(d) => Some(d.keys()),
            Live::Line { .. } => None,
        }
    }

    /// Whether the recovery window's own progress line would disturb the view.
    pub fn silent(&self) -> bool {
        match self {
            Live::Dashboard(_) => true,
            Live::Line { quiet, .. } => *quiet,
        }
    }

    /// The load is over; the recovery window runs.
    pub fn recovering(&self) {
        if let Live::Dashboard(d) = self {
            d.recovering();
        }
    }

    /// Give the terminal back before the summary is printed.
    pub fn finish(self) {
        if let Live::Dashboard(d) = self {
            d.finish();
        }
    }
}

/// `--out DIR`: new (in a directory that exists) or empty.
pub(crate) fn check_out_dir(dir: &Path) -> Result<(), Usage> {
    let bad = |why: &str| Usage::value("--out", dir.display(), why);
    match std::fs::read_dir(dir) {
        Ok(mut entries) => match entries.next() {
            None => Ok(()),
            Some(_) => Err(bad(
                "holds files already (a run?); give a new or empty directory",
            )),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = dir
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if parent.is_dir() {
                Ok(())
            } else {
                Err(bad(&format!(
                    "the directory {} does not exist; create it first",
                    parent.display()
                )))
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            Err(bad("is a file; give a directory"))
        }
        Err(e) => Err(bad(&e.to_string())),
    }
}

/// Writes the JSON result; a shard's with its header and seconds embedded (`"stream"`, one
/// second a line), so that the file alone merges exactly.
fn write_json(
    out: Option<JsonOut>,
    result: &RunResult,
    embedded: Option<(String, std::io::BufReader<std::fs::File>)>,
) -> anyhow::Result<()> {
    let embedded = std::cell::RefCell::new(embedded);
    let render = |w: &mut dyn Write| {
        let Some((header, seconds)) = embedded.borrow_mut().take() else {
            return Format::Json
                .renderer()
                .render(result, w)
                .and_then(|_| w.flush());
        };
        let mut text = Vec::new();
        Format::Json.renderer().render(result, &mut text)?;
        let end = text
            .iter()
            .rposition(|&b| b == b'}')
            .expect("a JSON result is an object");
        w.write_all(&text[..end])?;
        write!(
            w,
            ",\n  \"{}\": {{\n    \"header\": {header},\n    \"seconds\": [",
            barrage_report::stream::EMBEDDED
        )?;
        for (i, line) in std::io::BufRead::lines(seconds).enumerate() {
            w.write_all(if i == 0 { b"\n      " } else { b",\n      " })?;
            w.write_all(line?.as_bytes())?;
        }
        w.write_all(b"\n    ]\n  }\n}\n")?;
        w.flush()
    };
    match out {
        None => Ok(()),
        Some(JsonOut::Stdout) => {
            render(&mut std::io::stdout().lock()).context("--json -: cannot write")
        }
        Some(JsonOut::File(p)) => barrage_report::write_whole(Path::new(&p), |w| render(w))
            .with_context(|| format!("--json {p}: cannot write")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rule_decides_a_report_format_from_the_file_name() {
        assert_eq!(
            report_format("-o", "r.md", false).unwrap(),
            Format::Markdown
        );
        assert_eq!(
            report_format("-o", "R.MARKDOWN", false).unwrap(),
            Format::Markdown
        );
        assert_eq!(report_format("-o", "r.htm", false).unwrap(), Format::Html);
        assert_eq!(
            report_format("--report", "-", true).unwrap(),
            Format::Markdown
        );
        let e = report_format("-o", "-", false).unwrap_err().to_string();
        assert!(e.starts_with("-o -: ") && e.contains(".md or .html"), "{e}");
        for bad in ["r.json", "r.txt", "r", "r.md.bak"] {
            let e = report_format("--report", bad, true)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("--report {bad}: ")), "{e}");
            assert!(e.contains("or - for Markdown on stdout"), "{e}");
        }
    }
}
