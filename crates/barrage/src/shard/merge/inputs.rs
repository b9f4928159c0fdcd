//! The shards `merge` is given, opened and checked as one run before a second is read: each
//! a shard (`I/N` with I below N), all of one run (the same spec and start instant), every
//! index once, and `-o` none of them.

use crate::usage::Usage;
use barrage_metrics::result::Status;
use barrage_report::stream;
use std::path::{Path, PathBuf};

/// One shard: where it is, its header, its seconds (read as the merge goes), and how its
/// process ended.
pub struct Shard {
    pub path: PathBuf,
    pub index: usize,
    pub count: usize,
    pub header: stream::Header,
    pub seconds: stream::Seconds,
    /// The shard's own result: its status and message; `None` when it wrote none (killed).
    pub ended: Option<(Status, Option<String>)>,
}

impl Shard {
    /// `PATH` as messages show it.
    pub fn shown(&self) -> String {
        self.path.display().to_string()
    }
}

/// Opens every input and checks that they are the shards of one run, every index once;
/// returns them in index order.
pub fn open(paths: &[PathBuf]) -> Result<Vec<Shard>, Usage> {
    let mut shards = paths
        .iter()
        .map(|p| one(p))
        .collect::<Result<Vec<_>, _>>()?;
    one_run(&shards)?;
    every_index_once(&shards)?;
    shards.sort_by_key(|s| s.index);
    Ok(shards)
}

fn one(path: &Path) -> Result<Shard, Usage> {
    let shown = path.display().to_string();
    let (header, seconds, ended) = if stream::is_stream(path) {
        let (header, seconds) = stream::seconds_iter(path).map_err(|e| Usage::file(&shown, e))?;
        (header, seconds, own_result(&path.join(stream::RESULT))?)
    } else if path.is_file() {
        let spool = crate::sys::unlinked_temp_file("merge-seconds").map_err(|e| {
            Usage::file(
                &shown,
                format!("{shown}: a temporary file for its seconds: {e}"),
            )
        })?;
        let (header, seconds, ended) =
            stream::embedded_iter(path, spool).map_err(|e| Usage::file(&shown, e))?;
        // Every result says how its run ended; one without a status ended as planned.
        let status = ended.status.unwrap_or(Status::Completed);
        (header, seconds, Some((status, ended.message)))
    } else {
        return Err(Usage::says(
            shown,
            "is neither a run's --out directory nor a shard's --json result (barrage merge \
             reads each shard's --out DIR or its --json FILE)",
        ));
    };
    let Some((index, count)) = header.shard else {
        return Err(Usage::says(shown, "is not a shard (run with --shard I/N)"));
    };
    if index >= count {
        return Err(Usage::says(
            shown,
            format!(
                "says it is shard {index}/{count}, and I must be below N: its header (run.json) \
                 is damaged or was edited"
            ),
        ));
    }
    Ok(Shard {
        path: path.to_path_buf(),
        index,
        count,
        header,
        seconds,
        ended,
    })
}

/// A stream directory's `result.json`: its status and message, `None` without one.
fn own_result(path: &Path) -> Result<Option<(Status, Option<String>)>, Usage> {
    if !path.is_file() {
        return Ok(None);
    }
    #[derive(serde::Deserialize)]
    struct Ended {
        status: Status,
        #[serde(default)]
        message: Option<String>,
    }
    let shown = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| Usage::file(&shown, e))?;
    let e: Ended = serde_json::from_reader(std::io::BufReader::new(f)).map_err(|e| {
        Usage::file(
            &shown,
            format!("{shown} is not a barrage result (JSON): {e}"),
        )
    })?;
    Ok(Some((e.status, e.message)))
}

/// The spec less what differs between the shards of one run (which shares each runs, its
/// clock's record); the start instant stays: two runs of one command differ in it.
fn run_of(h: &stream::Header) -> serde_json::Value {
    let mut spec = h.spec.clone().unwrap_or_default();
    if let Some(o) = spec.as_object_mut() {
        o.remove("shares");
    }
    spec
}

/// The start instant a shard's spec records (`--start-at`), as it reads; `None` without one.
fn start_of(h: &stream::Header) -> Option<String> {
    let clock = h.spec.as_ref()?.get("clock")?;
    if clock.get("kind")?.as_str()? != "at" {
        return Some("its own start (no --start-at)".into());
    }
    let ns = clock.get("unix_ns")?.as_u64()?;
    Some(format!(
        "{}{}",
        crate::sys::rfc3339(ns / 1_000_000_000),
        match ns % 1_000_000_000 {
            0 => String::new(),
            frac => format!(" + {frac} ns"),
        }
    ))
}

fn one_run(shards: &[Shard]) -> Result<(), Usage> {
    let first = &shards[0];
    let (n, run0) = (first.count, run_of(&first.header));
    for s in shards {
        if s.count != n {
            return Err(Usage::says(
                s.shown(),
                format!("is shard {}/{}, the others are of {n}", s.index, s.count),
            ));
        }
        let clock = s.header.spec.as_ref().and_then(|x| x.get("clock"));
        if clock.is_some_and(|c| c.get("kind").and_then(|k| k.as_str()) != Some("at")) {
            return Err(Usage::says(
                s.shown(),
                "was run without --start-at: its seconds count from its own start, not the \
                 others'; run every shard with the same --start-at",
            ));
        }
        if run_of(&s.header) != run0 || s.header.timeline != first.header.timeline {
            let (a, b) = (start_of(&s.header), start_of(&first.header));
            let why = match (a, b) {
                (Some(a), Some(b)) if a != b => {
                    format!(": it started at {a}, {} at {b}", first.shown())
                }
                _ => " (their settings differ)".into(),
            };
            return Err(Usage::says(
                s.shown(),
                format!("is a shard of another run than {}{why}", first.shown()),
            ));
        }
    }
    Ok(())
}

fn every_index_once(shards: &[Shard]) -> Result<(), Usage> {
    let n = shards[0].count;
    let mut seen = vec![Vec::new(); n];
    for s in shards {
        seen[s.index].push(s.shown());
    }
    if let Some((i, dirs)) = seen.iter().enumerate().find(|(_, d)| d.len() > 1) {
        return Err(Usage::says(
            "merge",
            format!("shard {i} is given twice: {}", dirs.join(", ")),
        ));
    }
    let missing: Vec<String> = (0..n)
        .filter(|i| seen[*i].is_empty())
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(Usage::says(
            "merge",
            format!("shards {} of {n} are missing", missing.join(", ")),
        ));
    }
    Ok(())
}

/// `-o FILE` would write over one of the inputs: the file itself, or a file of a shard's
/// stream directory (its header, seconds or result).
pub fn refuse_overwrite(output: &str, inputs: &[PathBuf]) -> Result<(), Usage> {
    if output == "-" {
        return Ok(());
    }
    let out = Path::new(output);
    let Some(name) = out.file_name() else {
        return Ok(());
    };
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // Where the output would land; an output whose folder does not exist is no input.
    let Ok(dir) = parent.canonicalize() else {
        return Ok(());
    };
    let target = out.canonicalize().unwrap_or_else(|_| dir.join(name));
    let stream_files = [
        stream::HEADER,
        stream::SECONDS,
        stream::RESULT,
        stream::MONITOR,
    ];
    for input in inputs {
        let Ok(inp) = input.canonicalize() else {
            continue;
        };
        let clash = target == inp
            || (inp.is_dir()
                && target.parent() == Some(inp.as_path())
                && stream_files
                    .iter()
                    .any(|f| target.file_name() == Some(f.as_ref())));
        if clash {
            return Err(Usage::value(
                "-o",
                output,
                format!(
                    "would write over the input {} (a shard's own record); give another file",
                    input.display()
                ),
            ));
        }
    }
    Ok(())
}
