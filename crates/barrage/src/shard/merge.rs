//! `barrage merge DIR|FILE... [-o FILE]`: the shards of a split run (`--shard I/N` each, with
//! `--out DIR` or `--json FILE`) made one result, exactly.
//!
//! Key decision: a shard's `--out` directory holds each second's merged delta (counters and
//! histograms), and a shard's `--json` result embeds the same seconds, so merging is what the
//! aggregator does within one process: every shard is a worker, their seconds are pushed in
//! time order, and the same ticks and summary come out as if one process had run every
//! share. Thresholds are judged again on the whole (exit 3).
//!
//! Nothing is taken on trust (`merge/inputs.rs`, `barrage_report::stream::Order`): shards of
//! different runs (their specs or start instants differ), an index not below its count, a
//! missing or repeated index, `-o` naming an input, and a second that is out of place or
//! holds a wrapped count are refused, naming the shard and the second. What is missing (a
//! shard that recorded nothing, ended without its drain or its summary, or ended other than
//! completed) makes the merged run `incomplete`, naming each shard and what it lacks.
//!
//! Memory: one second per shard at a time (a k-way merge over the files), and a shard whose
//! seconds run out is ended at once, so that the others' seconds never wait for it: a merge
//! holds a few seconds' histograms, however long the run.

pub mod inputs;

use crate::usage::Usage;
use barrage_metrics::result::Status;
use barrage_metrics::{Aggregator, Delta, RunResult, DRAIN_KEY};
use barrage_report::stream;

/// The shards' directories as one result (thresholds judged); `command_line` is recorded.
/// Deliveries between shards whose clocks differ are timed when the clocks are known to agree
/// within `clock_tolerance`.
pub fn merged(
    dirs: &[std::path::PathBuf],
    command_line: Vec<String>,
    clock_tolerance: std::time::Duration,
) -> Result<RunResult, Usage> {
    let m = merge_dirs(dirs, clock_tolerance)?;
    let thresholds: Vec<_> = m
        .header
        .thresholds
        .iter()
        .filter_map(|e| barrage_metrics::thresholds::parse(e).ok())
        .collect();
    let ending = crate::run::Ending {
        status: m.status,
        message: Some(m.message),
        code: 0,
    };
    let h = m.header;
    // The monitors watched each shard's own servers: not merged.
    let mut r = crate::run::assemble(
        ending,
        command_line,
        h.started_at,
        (h.config, h.environment, h.spec),
        m.outcome,
    );
    r.conclude(&thresholds, None);
    Ok(r)
}

/// The shards merged: the first shard's header with every shard's clock, the merged outcome,
/// and whether it makes a whole run (`Completed`) or what it lacks (`Incomplete`).
pub struct Merged {
    pub header: stream::Header,
    pub outcome: barrage_metrics::Outcome,
    pub status: Status,
    pub message: String,
}

/// The shards' directories (or result files) merged exactly.
pub fn merge_dirs(
    dirs: &[std::path::PathBuf],
    clock_tolerance: std::time::Duration,
) -> Result<Merged, Usage> {
    let mut shards = inputs::open(dirs)?;
    let n = shards.len();
    let mut header = shards[0].header.clone();
    // Every shard's clock, in index order: whether their times compare.
    header.environment.clocks = shards
        .iter()
        .flat_map(|s| s.header.environment.clocks.clone())
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
    k_way(&mut shards, &mut agg)?;
    let outcome = agg.finish(header.connections, header.latency_basis);
    let remote = outcome
        .summary
        .broadcast
        .as_ref()
        .is_some_and(|b| b.c.remote > 0 && !b.remote_timed());
    if let (Some(why), true) = (untimed, remote) {
        clocks.push_str(&why);
    }
    let lacking: Vec<String> = shards.iter().filter_map(lacks).collect();
    let (status, message) = if lacking.is_empty() {
        (Status::Completed, format!("{n} shards merged; {clocks}"))
    } else {
        (
            Status::Incomplete,
            format!("{n} shards merged; {clocks}; {}", lacking.join("; ")),
        )
    };
    Ok(Merged {
        header,
        outcome,
        status,
        message,
    })
}

/// The shards' seconds in time order, one at a time from each (a k-way merge: a long run's
/// seconds, a histogram each, do not fit in memory together). Streams are in shard order: on
/// equal keys the lower shard goes first. A shard's drain, its last second, goes in as soon
/// as it is read, and a shard whose seconds run out is ended there: the others' seconds are
/// final as they come instead of waiting for it to the end. Returns the most seconds the
/// aggregator held at once (waiting for a shard to pass them).
fn k_way(shards: &mut [inputs::Shard], agg: &mut Aggregator) -> Result<usize, Usage> {
    let mut held = 0;
    let mut heads = Vec::with_capacity(shards.len());
    for (w, s) in shards.iter_mut().enumerate() {
        heads.push(advance(s, w, agg)?);
    }
    loop {
        let next = heads
            .iter()
            .enumerate()
            .filter_map(|(w, h)| h.as_ref().map(|d: &Delta| (d.key, w)))
            .min();
        let Some((_, w)) = next else { break };
        let mut d = heads[w].take().expect("the smallest head is there");
        d.worker = w as u32;
        agg.push(d);
        held = held.max(agg.pending());
        heads[w] = advance(&mut shards[w], w, agg)?;
    }
    Ok(held)
}

/// Shard `w`'s next second before its drain; its drain is pushed as it comes, and its end
/// ends the worker.
fn advance(s: &mut inputs::Shard, w: usize, agg: &mut Aggregator) -> Result<Option<Delta>, Usage> {
    loop {
        let shown = s.shown();
        let next = s
            .seconds
            .next()
            .transpose()
            .map_err(|e| Usage::new(format!("shard {} ({shown})", s.index), e))?;
        match next {
            Some(mut d) if d.key == DRAIN_KEY => {
                d.worker = w as u32;
                agg.push(d);
            }
            Some(d) => return Ok(Some(d)),
            None => {
                agg.end_worker(w);
                return Ok(None);
            }
        }
    }
}

/// What a shard that was read to its end lacks to make a whole run, if anything: a shard
/// that recorded no second, one that stopped before its drain (the process ended early),
/// one without its summary, or one that ended other than completed.
fn lacks(s: &inputs::Shard) -> Option<String> {
    let name = format!("shard {} ({})", s.index, s.shown());
    let o = s.seconds.order();
    if o.count == 0 {
        return Some(format!("{name} recorded no second"));
    }
    if !o.drained() {
        return Some(format!(
            "{name} ended at {} without its last second (the drain) or summary: the process \
             stopped early",
            stream::clock(o.end_ns)
        ));
    }
    match &s.ended {
        None => Some(format!(
            "{name} has no summary (result.json): it ended early"
        )),
        Some((Status::Completed, _)) => None,
        Some((status, message)) => Some(format!(
            "{name} ended {}{}",
            serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            message
                .as_deref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::{Timeline, SECOND_NS};
    use std::path::{Path, PathBuf};

    /// A shard's `--out` directory: `seconds` whole seconds with one exchange each, then its
    /// drain if `drained`, and its result if `finished`.
    fn shard(
        dir: &Path,
        i: usize,
        n: usize,
        seconds: u64,
        drained: bool,
        finished: bool,
    ) -> PathBuf {
        let path = dir.join(format!("shard{i}"));
        let header = stream::Header {
            schema: stream::SCHEMA.into(),
            command_line: vec!["barrage".into()],
            started_at: "2026-11-23T08:00:00Z".into(),
            config: Default::default(),
            environment: Default::default(),
            spec: Some(
                serde_json::json!({"clock": {"kind": "at", "unix_ns": 1_795_420_800_000_000_000u64}}),
            ),
            timeline: Timeline {
                warmup_ns: 0,
                load_end_ns: Some(4000 * SECOND_NS),
            },
            latency_basis: Default::default(),
            connections: n as u64,
            thresholds: Vec::new(),
            shard: Some((i, n)),
            monitor: None,
        };
        let mut w = stream::Writer::create(&path, &header).unwrap();
        let mut second = |key: u64, start: u64, end: u64| {
            let mut d = barrage_metrics::Delta {
                key,
                start_ns: start,
                end_ns: end,
                ..Default::default()
            };
            d.counters.completed = 1;
            d.latency.record_us(100 + i as u64);
            w.second(&d).unwrap();
        };
        for k in 0..seconds {
            second(k * SECOND_NS, k * SECOND_NS, (k + 1) * SECOND_NS);
        }
        if drained {
            second(DRAIN_KEY, seconds * SECOND_NS, seconds * SECOND_NS + 5);
        }
        if finished {
            std::fs::write(path.join(stream::RESULT), r#"{"status": "completed"}"#).unwrap();
        }
        path
    }

    #[test]
    fn a_merge_holds_a_few_seconds_at_once_whatever_ends_early() {
        // Regression: a shard whose seconds ended early (killed at second 3, or one that
        // recorded nothing) held every later second of the others in memory, ~370 KB each.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let dirs = [
            shard(d, 0, 4, 4000, true, true),
            shard(d, 1, 4, 3, false, false),
            shard(d, 2, 4, 0, false, false),
            shard(d, 3, 4, 4000, true, true),
        ];
        let mut shards = inputs::open(&dirs).unwrap();
        let mut agg = Aggregator::new(shards[0].header.timeline, 4);
        let held = k_way(&mut shards, &mut agg).unwrap();
        assert!(held <= 2, "{held} seconds held at once");
        let lacking: Vec<String> = shards.iter().filter_map(lacks).collect();
        assert_eq!(lacking.len(), 2, "{lacking:?}");
        assert!(
            lacking[0].starts_with("shard 1 (")
                && lacking[0].contains("ended at 3.0s without its last second")
        );
        assert!(lacking[1].starts_with("shard 2 (") && lacking[1].ends_with("recorded no second"));
        let out = agg.finish(4, Default::default());
        assert_eq!(out.summary.exchanges.completed, 4000 + 3 + 4000 + 2);
    }

    #[test]
    fn a_whole_set_of_shards_merges_completed_and_one_short_of_it_incomplete() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let dirs = [shard(d, 0, 2, 5, true, true), shard(d, 1, 2, 5, true, true)];
        let r = merged(&dirs, vec![], std::time::Duration::ZERO).unwrap();
        assert_eq!(r.status, Status::Completed, "{:?}", r.message);
        assert_eq!(r.summary.exchanges.completed, 12);
        // The same shard without its summary: counted, and named as lacking it.
        std::fs::remove_file(dirs[1].join(stream::RESULT)).unwrap();
        let r = merged(&dirs, vec![], std::time::Duration::ZERO).unwrap();
        assert_eq!(r.status, Status::Incomplete);
        assert_eq!(r.summary.exchanges.completed, 12);
        let m = r.message.unwrap();
        assert!(
            m.contains("shard 1 (") && m.contains("has no summary"),
            "{m}"
        );
        // One that ended interrupted says so.
        std::fs::write(
            dirs[1].join(stream::RESULT),
            r#"{"status": "interrupted", "message": "interrupted by a signal"}"#,
        )
        .unwrap();
        let r = merged(&dirs, vec![], std::time::Duration::ZERO).unwrap();
        assert_eq!(r.status, Status::Incomplete);
        let m = r.message.unwrap();
        assert!(
            m.contains("ended interrupted (interrupted by a signal)"),
            "{m}"
        );
    }

    #[test]
    fn merging_a_shard_killed_mid_write_keeps_its_in_flight_exchanges() {
        // Each second sends 3 and settles 2: one more in flight each second. Shard 1 was
        // killed while writing its fourth second (a torn last line, no drain, no result).
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let dirs = [
            shard(d, 0, 2, 5, true, true),
            shard(d, 1, 2, 3, false, false),
        ];
        for (i, path) in dirs.iter().enumerate() {
            let header = std::fs::read(path.join(stream::HEADER)).unwrap();
            std::fs::remove_dir_all(path).unwrap();
            let header: stream::Header = serde_json::from_slice(&header).unwrap();
            let mut w = stream::Writer::create(path, &header).unwrap();
            let seconds = if i == 0 { 5 } else { 3 };
            for k in 0..seconds {
                let mut x = barrage_metrics::Delta {
                    key: k * SECOND_NS,
                    start_ns: k * SECOND_NS,
                    end_ns: (k + 1) * SECOND_NS,
                    in_flight: k + 1,
                    ..Default::default()
                };
                x.counters.sent = 3;
                x.counters.completed = 2;
                x.latency.record_us(100);
                x.latency.record_us(100);
                w.second(&x).unwrap();
            }
            if i == 0 {
                // The drain settles one of shard 0's five.
                let mut x = barrage_metrics::Delta {
                    key: DRAIN_KEY,
                    start_ns: 5 * SECOND_NS,
                    end_ns: 5 * SECOND_NS + 5,
                    in_flight: 4,
                    ..Default::default()
                };
                x.counters.completed = 1;
                x.latency.record_us(100);
                w.second(&x).unwrap();
                std::fs::write(path.join(stream::RESULT), r#"{"status": "completed"}"#).unwrap();
            }
        }
        // The torn line a killed writer leaves: half a second, no newline.
        let seconds = dirs[1].join(stream::SECONDS);
        let whole = std::fs::read_to_string(&seconds).unwrap();
        let last = whole.lines().last().unwrap().to_string();
        let mut torn = whole;
        torn.push_str(&last[..last.len() / 2]);
        std::fs::write(&seconds, torn).unwrap();
        let r = merged(&dirs, vec![], std::time::Duration::ZERO).unwrap();
        assert_eq!(r.status, Status::Incomplete);
        let x = r.summary.exchanges;
        assert_eq!(x.sent, 5 * 3 + 3 * 3);
        assert_eq!(x.completed, 5 * 2 + 1 + 3 * 2);
        // Shard 0's 4 still in flight at its drain, and shard 1's 3 when it was killed.
        assert_eq!(x.in_flight_at_end, 4 + 3, "{x:?}");
        assert!(x.balanced(), "{x:?}");
    }
}
