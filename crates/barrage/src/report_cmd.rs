//! `barrage report RESULT.json -o FILE.html|.md` (offline, from the canonical JSON) and
//! `--report FILE` at the end of a run: one renderer per format in barrage-report.

use crate::cli::ReportArgs;
use crate::config::Usage;
use anyhow::Context as _;
use barrage_metrics::RunResult;
use barrage_report::Format;
use std::io::Write;
use std::path::Path;

pub fn report(a: &ReportArgs) -> anyhow::Result<i32> {
    let format = output_format(&a.output, "-o")?;
    let r = barrage_report::load(&a.result).map_err(|e| Usage(e.to_string()))?;
    write(&r, &a.output, format)?;
    Ok(0)
}

/// The format for an output path (`-`: Markdown on stdout); a usage error names `flag`.
pub fn output_format(path: &str, flag: &str) -> Result<Format, Usage> {
    if path == "-" {
        return Ok(Format::Markdown);
    }
    match Format::from_path(Path::new(path)) {
        Some(f @ (Format::Html | Format::Markdown)) => Ok(f),
        _ => Err(Usage(format!(
            "{flag} {path}: the report is written as .html or .md (or - for Markdown on stdout)"
        ))),
    }
}

pub fn write(r: &RunResult, path: &str, format: Format) -> anyhow::Result<()> {
    if path == "-" {
        // Rendered first, so that a reader that goes away (`| head`) ends the output quietly:
        // a closed pipe is the reader's choice, not an error.
        let mut text = Vec::new();
        barrage_report::render(r, format, &mut text)?;
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(&text).and_then(|()| out.flush()) {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                return Err(e).context("-o -: cannot write the report to stdout");
            }
        }
        return Ok(());
    }
    barrage_report::save(r, format, path)?;
    Ok(())
}
