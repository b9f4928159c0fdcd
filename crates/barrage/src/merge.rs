//! `barrage merge DIR|FILE... -o FILE`: the shards of a split run (`--shard I/N` each, with
//! `--out DIR` or `--json FILE`) made one result, exactly.
//!
//! Key decision: a shard's `--out` directory holds each second's merged delta (counters and
//! histograms), and a shard's `--json` result embeds the same seconds, so merging is what the aggregator does within one process: every shard is a
//! worker, their seconds are pushed in time order, and the same ticks and summary come out as
//! if one process had run every share. Thresholds are judged again on the whole (exit 3).
//! Refused, naming them: shards of different runs (their specs differ beyond the shard and
//! start), a missing or repeated index, a directory that is no shard.

use crate::cli::MergeArgs;
use crate::config::Usage;
use barrage_metrics::result::Status;
use barrage_metrics::{Aggregator, RunResult};
use barrage_report::{stream, ReportError};

pub fn merge(a: &MergeArgs) -> anyhow::Result<i32> {
    let format = match barrage_report::Format::from_path(std::path::Path::new(&a.output)) {
        Some(barrage_report::Format::Json) => barrage_report::Format::Json,
        _ => crate::output::report_format("-o", &a.output, true)?,
    };
    let mut command_line = vec!["barrage".to_string(), "merge".to_string()];
    command_line.extend(a.dirs.iter().map(|d| d.display().to_string()));
    let r = merged(&a.dirs, command_line, a.clock_tolerance)?;
    crate::report_cmd::write(&r, &a.output, format)?;
    Ok(if r.thresholds_failed() { 3 } else { 0 })
}

/// The shards' directories as one result (thresholds judged); `command_line` is recorded.
/// Deliveries between shards whose clocks differ are timed when the clocks are known to agree
/// within `clock_tolerance`.
pub fn merged(
    dirs: &[std::path::PathBuf],
    command_line: Vec<String>,
    clock_tolerance: std::time::Duration,
) -> Result<RunResult, Usage> {
    let mut shards = Vec::new();
    type Seconds = Box<dyn Iterator<Item = Result<barrage_metrics::Delta, ReportError>>>;
    for dir in dirs {
        let (header, seconds, finished): (_, Seconds, _) = if stream::is_stream(dir) {
            let (header, seconds) =
                stream::seconds_iter(dir).map_err(|e| Usage::file(dir.display(), e))?;
            (
                header,
                Box::new(seconds),
                dir.join(stream::RESULT).is_file(),
            )
        } else if dir.is_file() {
            let (header, seconds, finished) =
                stream::embedded_iter(dir).map_err(|e| Usage::file(dir.display(), e))?;
            (header, Box::new(seconds), finished)
        } else {
            return Err(Usage::says(
                dir.display().to_string(),
                "is neither a run's --out directory nor a shard's --json result (barrage merge \
                 reads each shard's --out DIR or its --json FILE)",
            ));
        };
        let Some((i, n)) = header.shard else {
            return Err(Usage::says(
                dir.display().to_string(),
                "is not a shard (run with --shard I/N)",
            ));
        };
        shards.push((dir.clone(), i, n, header, seconds, finished));
    }
    // One run, every index once.
    let n = shards[0].2;
    let same = |h: &stream::Header| {
        let mut spec = h.spec.clone().unwrap_or_default();
        if let Some(o) = spec.as_object_mut() {
            o.remove("shares");
            o.remove("clock");
        }
        spec
    };
    let spec0 = same(&shards[0].3);
    for (dir, i, ni, h, _, _) in &shards {
        if *ni != n {
            return Err(Usage::says(
                dir.display().to_string(),
                format!("is shard {i}/{ni}, the others are of {n}"),
            ));
        }
        if same(h) != spec0 {
            return Err(Usage::says(
                dir.display().to_string(),
                format!("is a shard of another run than {}", shards[0].0.display()),
            ));
        }
    }
    let mut seen = vec![Vec::new(); n];
    for (dir, i, _, _, _, _) in &shards {
        seen[*i].push(dir.display().to_string());
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
    // Every shard a worker; seconds in time order.
    shards.sort_by_key(|s| s.1);
    let mut header = shards[0].3.clone();
    // Every shard's clock, in index order: whether their times compare.
    header.environment.clocks = shards
        .iter()
        .flat_map(|s| s.3.environment.clocks.clone())
        .collect();
    let spread = barrage_metrics::result::clock_spread_us(&header.environment.clocks);
    let tolerance_us = clock_tolerance.as_micros() as u64;
    let mut clocks = match spread {
        Some(0) => "clocks: one host".to_string(),
        Some(us) => format!("clocks within {us} µs of each other (NTP bounds)"),
        None => "clocks not known to agree".to_string(),
    };
    let mut agg = Aggregator::new(header.timeline, n);
    // Why deliveries between shards are not timed, if there are any (said below).
    let untimed = match spread {
        Some(us) if us <= tolerance_us => {
            agg.time_remote(us);
            None
        }
        Some(_) => Some(format!(
            ", more than --clock-tolerance {}: deliveries between shards counted, not timed",
            barrage_report::fmt::duration_us(clock_tolerance.as_micros() as f64)
        )),
        None => Some(": deliveries between shards counted, not timed".to_string()),
    };
    let mut unfinished = Vec::new();
    let mut streams = Vec::new();
    for (dir, i, _, _, seconds, finished) in shards {
        if !finished {
            unfinished.push(format!("{i} ({})", dir.display()));
        }
        streams.push((dir, i, seconds.peekable()));
    }
    // The shards' seconds in time order, one at a time from each file (a k-way merge: a
    // long run's seconds, a histogram each, do not fit in memory together).
    loop {
        let mut next: Option<(u64, usize)> = None;
        // Streams are in shard order: on equal keys the lower shard goes first.
        for (s, (dir, _, it)) in streams.iter_mut().enumerate() {
            match it.peek() {
                Some(Ok(d)) if next.is_none_or(|(k, _)| d.key < k) => {
                    next = Some((d.key, s));
                }
                Some(Ok(_)) => {}
                Some(Err(_)) => {
                    let e = it.next().and_then(Result::err).map(|e| e.to_string());
                    return Err(Usage::file(dir.display(), e.unwrap_or_default()));
                }
                None => {}
            }
        }
        let Some((_, s)) = next else { break };
        let i = streams[s].1;
        if let Some(Ok(mut d)) = streams[s].2.next() {
            d.worker = i as u32;
            agg.push(d);
        }
    }
    // A shard whose seconds ended early (killed, or it had nothing to do) holds none of the
    // others' back.
    for i in 0..n {
        agg.end_worker(i);
    }
    let outcome = agg.finish(header.connections, header.latency_basis);
    let remote = outcome
        .summary
        .broadcast
        .as_ref()
        .is_some_and(|b| b.c.remote > 0 && !b.remote_timed());
    if let (Some(why), true) = (untimed, remote) {
        clocks.push_str(&why);
    }
    let (status, message) = if unfinished.is_empty() {
        (Status::Completed, format!("{n} shards merged; {clocks}"))
    } else {
        (
            Status::Incomplete,
            format!(
                "{n} shards merged; {clocks}; without a summary (ended early): shard {}",
                unfinished.join(", ")
            ),
        )
    };
    // The monitors watched each shard's own servers: not merged.
    Ok(stream::result_of(
        header,
        outcome,
        status,
        message,
        command_line,
        None,
    ))
}
