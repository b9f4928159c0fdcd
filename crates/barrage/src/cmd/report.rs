//! `barrage report RESULT.json|DIR -o FILE.html|.md|.json` (offline, from the canonical JSON
//! or a run's `--out` directory, finished or not) and
//! `--report FILE` at the end of a run: one renderer per format in barrage-report.

use crate::resolve::cli::ReportArgs;
use crate::usage::Usage;
use anyhow::Context as _;
use barrage_report::Format;
use std::io::Write;

/// What `barrage report` writes.
enum Out {
    Doc(Format),
    Csv,
    HdrLog,
}

fn out_format(a: &ReportArgs) -> Result<Out, Usage> {
    let by_name = std::path::Path::new(&a.output)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let name = a.format.as_deref().map(str::to_ascii_lowercase).or(by_name);
    match name.as_deref() {
        Some("csv") => Ok(Out::Csv),
        Some("hdr-log" | "hlog" | "hdr") => Ok(Out::HdrLog),
        // A result (a stream directory's, rebuilt or not) can be written out as JSON too.
        Some("json") => Ok(Out::Doc(Format::Json)),
        Some("html" | "htm") if a.format.is_some() => Ok(Out::Doc(Format::Html)),
        Some("md" | "markdown") if a.format.is_some() => Ok(Out::Doc(Format::Markdown)),
        Some(other) if a.format.is_some() => Err(Usage::value(
            "--format",
            other,
            "give html, md, json, csv or hdr-log",
        )),
        // Every suffix this command writes, not only the documents'.
        _ => {
            use crate::sinks::output::{file_format, FileKind};
            let all = [
                FileKind::Doc(Format::Html),
                FileKind::Doc(Format::Markdown),
                FileKind::Doc(Format::Json),
                FileKind::Csv,
                FileKind::HdrLog,
            ];
            let more = "; --format FORMAT for another name";
            Ok(match file_format("-o", &a.output, &all, true, more)? {
                FileKind::Doc(f) => Out::Doc(f),
                FileKind::Csv => Out::Csv,
                FileKind::HdrLog => Out::HdrLog,
            })
        }
    }
}

pub fn report(a: &ReportArgs) -> anyhow::Result<i32> {
    let out = out_format(a)?;
    let bytes = match out {
        Out::Doc(format) => {
            let r =
                barrage_report::load(&a.result).map_err(|e| Usage::file(a.result.display(), e))?;
            crate::sinks::outfile::write(&r, &a.output, format)?;
            crate::sinks::outfile::announce(std::path::Path::new(&a.output));
            return Ok(0);
        }
        Out::Csv => {
            let r =
                barrage_report::load(&a.result).map_err(|e| Usage::file(a.result.display(), e))?;
            barrage_report::series::csv(&r).into_bytes()
        }
        Out::HdrLog => {
            if !barrage_report::stream::is_stream(&a.result) {
                return Err(Usage::file(
                    a.result.display(),
                    "an HDR log needs each second's histogram, which a run keeps in its --out DIR (or writes live with --hdr-log); give that directory",
                )
                .into());
            }
            barrage_report::series::hdr_log_of_stream(&a.result)
                .map_err(|e| Usage::file(a.result.display(), e))?
        }
    };
    if a.output == "-" {
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(&bytes).and_then(|()| out.flush()) {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                return Err(e).context("-o -: cannot write to stdout");
            }
        }
    } else {
        barrage_report::write_whole(std::path::Path::new(&a.output), |w| w.write_all(&bytes))
            .with_context(|| format!("-o {}: cannot write", a.output))?;
        crate::sinks::outfile::announce(std::path::Path::new(&a.output));
    }
    Ok(0)
}
