//! `barrage merge DIR|FILE... [-o FILE]`: the shards of a split run made one result, exactly
//! (`shard/merge.rs`), printed or written.

use crate::resolve::cli::MergeArgs;
use crate::shard::merge::{inputs, merged};
use crate::usage::Usage;
use barrage_metrics::failure::{plainly_failed, readiness_failed};
use barrage_metrics::Status;
use barrage_report::Format;

pub fn merge(a: &MergeArgs) -> anyhow::Result<i32> {
    let out = a
        .output
        .as_deref()
        .map(|o| Ok::<_, Usage>((o, out_format(o)?)))
        .transpose()?;
    if let Some((o, _)) = out {
        inputs::refuse_overwrite(o, &a.dirs)?;
    }
    let mut command_line = vec!["barrage".to_string(), "merge".to_string()];
    command_line.extend(a.dirs.iter().map(|d| d.display().to_string()));
    let mut r = merged(&a.dirs, command_line, a.clock_tolerance)?;
    // The exit policy of a run (run/ending.rs), on the whole: a shard leaves it to the merge.
    let failed = (!a.lenient_exit && r.status == Status::Completed)
        .then(|| plainly_failed(&r.summary))
        .flatten();
    if let Some(why) = &failed {
        r.status = Status::Failed;
        r.message = Some(format!("{}: {why}", r.config.target));
    }
    let gate = (!a.lenient_exit && failed.is_none() && r.thresholds.is_empty())
        .then(|| readiness_failed(&r.readiness, &r.summary.connections))
        .flatten();
    match out {
        Some((o, format)) => {
            crate::sinks::outfile::write(&r, o, format)?;
            crate::sinks::outfile::announce(std::path::Path::new(o));
        }
        // Without -o: the merged run's summary, as a run prints its own, and what the merge
        // says (the summary shows it only when the run did not complete).
        None => {
            crate::sinks::outfile::write(&r, "-", Format::Text)?;
            if let Some(m) = &r.message {
                crate::sys::err_line(format_args!("barrage merge: {m}"));
            }
        }
    }
    if let Some(why) = failed.as_ref().filter(|_| out.is_some()) {
        crate::sys::err_line(format_args!("error: {}: {why}", r.config.target));
    }
    if let Some(line) = &gate {
        crate::sys::err_line(format_args!(
            "error: {}: {line} (exit 3; --lenient-exit exits 0)",
            r.config.target
        ));
    }
    Ok(if r.status == Status::Failed && failed.is_some() {
        1
    } else if r.thresholds_failed() || gate.is_some() {
        3
    } else {
        0
    })
}

/// `-o FILE`: JSON, HTML or Markdown by its name.
fn out_format(o: &str) -> Result<Format, Usage> {
    use crate::sinks::output::{file_format, FileKind};
    let docs = [Format::Json, Format::Html, Format::Markdown].map(FileKind::Doc);
    match file_format("-o", o, &docs, true, "; without -o the summary is printed")? {
        FileKind::Doc(f) => Ok(f),
        _ => unreachable!("only documents are allowed"),
    }
}
