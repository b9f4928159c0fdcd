//! `barrage report RESULT.json|DIR -o FILE.html|.md|.json` (offline, from the canonical JSON
//! or a run's `--out` directory, finished or not) and
//! `--report FILE` at the end of a run: one renderer per format in barrage-report.

use crate::cli::ReportArgs;
use crate::config::Usage;
use anyhow::Context as _;
use barrage_metrics::RunResult;
use barrage_report::Format;
use std::io::Write;

pub fn report(a: &ReportArgs) -> anyhow::Result<i32> {
    // A result (a stream directory's, rebuilt or not) can be written out as JSON too.
    let format = match Format::from_path(std::path::Path::new(&a.output)) {
        Some(Format::Json) => Format::Json,
        _ => crate::output::report_format("-o", &a.output, true)?,
    };
    let r = barrage_report::load(&a.result).map_err(|e| Usage::file(a.result.display(), e))?;
    write(&r, &a.output, format)?;
    Ok(0)
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
