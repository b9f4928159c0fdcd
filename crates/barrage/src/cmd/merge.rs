//! `barrage merge DIR|FILE... [-o FILE]`: the shards of a split run made one result, exactly
//! (`shard/merge.rs`), printed or written.

use crate::resolve::cli::MergeArgs;
use crate::shard::merge::{inputs, merged};
use crate::usage::Usage;
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
    let r = merged(&a.dirs, command_line, a.clock_tolerance)?;
    match out {
        Some((o, format)) => crate::sinks::outfile::write(&r, o, format)?,
        // Without -o: the merged run's summary, as a run prints its own, and what the merge
        // says (the summary shows it only when the run did not complete).
        None => {
            crate::sinks::outfile::write(&r, "-", Format::Text)?;
            if let Some(m) = &r.message {
                crate::sys::err_line(format_args!("barrage merge: {m}"));
            }
        }
    }
    Ok(if r.thresholds_failed() { 3 } else { 0 })
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
