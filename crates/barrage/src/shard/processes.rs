//! `--processes N`: one run in N local processes (a process here may open only so many
//! files), as N shards of the same command: each child runs `--shard i/N` with a common
//! `--start-at` and writes its `--out` directory; the parent follows their seconds, merged a
//! second at a time, into the run's live outputs (the live view, `--out`, `--csv`, `--hdr-log`,
//! `--prometheus`, `--web`; `--server-metrics` scraped by the parent), and at the end merges
//! the directories exactly (`merge::merged`) into the run's own result, summary, `--json`,
//! `--report` and thresholds.
//!
//! Key decision: the children are ordinary shard runs (the same code as on Slurm or
//! Kubernetes), so nothing here is a protocol of its own; a child cannot outlive the parent
//! (parent-death signal), and a child that fails is named in the result.

use crate::resolve::watch::WatchPlan;
use crate::usage::Usage;
use barrage_metrics::result::Status;
use barrage_metrics::{Aggregator, Delta};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;
use temp_root::TempRoot;

mod temp_root;

/// Flags the parent keeps for itself (with whether they take a value): its outputs, the
/// watch of the server (one monitor, one scrape of its metrics for the whole run) and the
/// thresholds (judged on the merged run; the children are told to skip theirs).
const PARENT_ONLY: [(&str, bool); 26] = [
    ("--monitor", true),
    ("--spawn", true),
    ("--monitor-interval", true),
    ("--recovery", true),
    ("--threshold", true),
    ("--skip-thresholds", false),
    ("-q", false),
    ("--one-clock", false),
    ("--quiet", false),
    ("--processes", true),
    ("--json", true),
    ("--report", true),
    ("--baseline", true),
    ("--max-regression", true),
    ("--no-tui", false),
    ("--out", true),
    ("--csv", true),
    ("--hdr-log", true),
    ("--prometheus", true),
    ("--web", true),
    ("--influx", true),
    ("--otlp", true),
    ("--statsd", true),
    ("--statsd-prefix", true),
    ("--server-metrics", true),
    ("--server-metric", true),
];

/// Flags that do not go with `--processes`: the parent gives each child its own.
const PER_CHILD: [&str; 2] = ["--shard", "--start-at"];

fn flag_of(arg: &str) -> &str {
    arg.split_once('=').map_or(arg, |(f, _)| f)
}

/// The children's arguments: the parent's, less what the parent keeps.
fn child_args(argv: &[String]) -> Vec<String> {
    crate::sys::args_without(argv, &PARENT_ONLY)
}

/// The children of `--processes`: N local shards of the same command, each with `--shard
/// i/N`, a common `--start-at` two seconds ahead and its own `--out` directory in a temporary
/// one; their seconds are followed into the run as they come and merged exactly at the end.
pub struct Children {
    /// The children's arguments: the parent's, less what the parent keeps.
    args: Vec<String>,
    n: usize,
    /// `-t 1` unless the run gave `-t`.
    threads: Option<u64>,
    /// The generator's sampling interval when nothing else is watched.
    monitor_interval: Duration,
    spawned: Option<Spawned>,
}

/// The children once started.
struct Spawned {
    root: TempRoot,
    dirs: Vec<PathBuf>,
    children: Vec<Child>,
}

impl Children {
    /// The children of the command line `argv`, refused when it names what each child gets
    /// for itself.
    pub fn new(
        argv: &[String],
        n: usize,
        threads: Option<u64>,
        monitor_interval: Duration,
    ) -> Result<Children, Usage> {
        for f in PER_CHILD {
            if argv.iter().skip(1).any(|x| flag_of(x) == f) {
                return Err(Usage::says(
                    f,
                    "does not go with --processes (each process gets its own)",
                ));
            }
        }
        Ok(Children {
            args: child_args(argv),
            n,
            threads,
            monitor_interval,
            spawned: None,
        })
    }
}

impl crate::run::Source for Children {
    /// One watch for the whole run: the server (`--monitor`, `--spawn`, started before any
    /// child connects) and barrage with all its children, for the generator's CPU.
    fn watch(&self, plan: Option<WatchPlan>) -> Option<WatchPlan> {
        Some(match plan.filter(WatchPlan::asked) {
            Some(p) => p.with_children_of_self(),
            None => WatchPlan::generator_only(self.monitor_interval),
        })
    }

    /// Each child makes its own.
    fn preflight(&self) -> bool {
        false
    }

    /// The parent's `/metrics` are the whole run's.
    fn shard_label(&self, _: &barrage_engine::Plan) -> String {
        "0".into()
    }

    /// Starts the children, with a common start two seconds ahead.
    fn start(
        &mut self,
        _: &barrage_engine::Plan,
        _: &std::sync::atomic::AtomicBool,
        _: bool,
    ) -> anyhow::Result<Option<std::time::Instant>> {
        let n = self.n;
        let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("--processes: {e}"))?;
        let root = TempRoot::create()
            .map_err(|e| anyhow::anyhow!("--processes: a temporary directory: {e}"))?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let start = now.as_secs() + 2;
        let starts = std::time::Instant::now() + Duration::from_secs(start).saturating_sub(now);
        let threads = self.threads.is_none().then_some("1");
        let dirs: Vec<PathBuf> = (0..n)
            .map(|i| root.path.join(format!("shard{i}")))
            .collect();
        let mut children = Vec::new();
        for (i, dir) in dirs.iter().enumerate() {
            let mut c = crate::sys::child_of_self(&exe);
            c.args(&self.args)
                .args([
                    "--shard",
                    &format!("{i}/{n}"),
                    "--start-at",
                    &format!("@{start}"),
                    "--one-clock",
                    "--skip-thresholds",
                    // No summary, no `wrote` line naming the temporary directory.
                    "--process-of-parent",
                ])
                .args(["-q", "--no-tui", "--out"])
                .arg(dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit());
            if let Some(t) = threads {
                c.args(["-t", t]);
            }
            let child = c
                .spawn()
                .map_err(|e| anyhow::anyhow!("--processes: cannot start shard {i}: {e}"))?;
            children.push(child);
        }
        self.spawned = Some(Spawned {
            root,
            dirs,
            children,
        });
        Ok(Some(starts))
    }

    fn feed(
        self,
        plan: barrage_engine::Plan,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
        obs: &mut crate::run::Observer<'_>,
    ) -> anyhow::Result<crate::run::Fed> {
        use crate::run::SourceEnd;
        let n = self.n;
        let Spawned {
            root,
            dirs,
            mut children,
        } = self
            .spawned
            .expect("the children start before they are followed");
        let follow = Follow {
            dirs: &dirs,
            timeline: plan.timeline(),
            stop: &stop,
        };
        let ended = follow.run(&mut children, obs);
        // The children share this host's clock (--one-clock): their deliveries are timed
        // already.
        let merged = match crate::shard::merge::merge_dirs(&dirs, Duration::ZERO) {
            Ok(m) => m,
            // A child that failed before recording anything is the cause, not the merge.
            Err(e) => match ended.iter().position(|c| !matches!(c, Some(0) | Some(3))) {
                Some(i) => anyhow::bail!(
                    "--processes: shard {i} of {n} {} before it recorded a second (its \
                     message is above)",
                    match ended[i] {
                        Some(code) => format!("exited with {code}"),
                        None => "was killed".to_string(),
                    }
                ),
                None => return Err(e.into()),
            },
        };
        drop(root);
        let stopped = stop.load(std::sync::atomic::Ordering::Relaxed);
        let failed: Vec<String> = ended
            .iter()
            .enumerate()
            // A stop is passed on to the children: their exit 130 is the stop, not a failure.
            .filter(|(_, c)| !(matches!(c, Some(0) | Some(3)) || stopped && *c == &Some(130)))
            .map(|(i, c)| match c {
                Some(code) => format!("shard {i} exited with {code}"),
                None => format!("shard {i} was killed"),
            })
            .collect();
        let end = if !failed.is_empty() {
            SourceEnd::Failed(failed.join(", "))
        } else if stopped {
            SourceEnd::Interrupted
        } else if merged.status == Status::Completed {
            SourceEnd::Completed
        } else {
            // The merge says which shard lacks what.
            SourceEnd::Incomplete(merged.message)
        };
        let mut config = merged.header.config;
        // The children's threads together, as many as the machine runs at once.
        config.threads = n * self.threads.unwrap_or(1) as usize;
        config.processes = Some(n as u64);
        Ok(crate::run::Fed {
            end,
            outcome: merged.outcome,
            recorded: Some(crate::run::Recorded {
                config,
                environment: merged.header.environment,
                spec: merged.header.spec,
            }),
            note: Some(format!("{n} processes merged")),
        })
    }
}

/// The children's `--out` directories, followed.
struct Follow<'a> {
    dirs: &'a [PathBuf],
    timeline: barrage_metrics::Timeline,
    stop: &'a std::sync::atomic::AtomicBool,
}

impl Follow<'_> {
    /// Follows the children until they all exit: their seconds merged a second at a time
    /// (every shard a worker) into the observer, as the engine's coordinator feeds it in a
    /// one-process run. Returns each child's exit code (`None`: killed by a signal).
    fn run(&self, children: &mut [Child], obs: &mut crate::run::Observer<'_>) -> Vec<Option<i32>> {
        use barrage_engine::Observer as _;
        let n = self.dirs.len();
        let mut offsets = vec![0u64; n];
        let mut partial: Vec<Vec<u8>> = vec![Vec::new(); n];
        let mut agg = Aggregator::new(self.timeline, n);
        if obs.wants_segments() {
            agg.keep_segments();
        }
        let mut ended: Vec<Option<Option<i32>>> = vec![None; n];
        let mut done = vec![false; n];
        let mut signalled = false;
        loop {
            if self.stop.load(std::sync::atomic::Ordering::Relaxed) && !signalled {
                // Pass the stop on: each child ends its shard and writes what it has.
                signalled = true;
                for c in children.iter() {
                    crate::sys::interrupt(c);
                }
            }
            for (i, c) in children.iter_mut().enumerate() {
                if ended[i].is_none() {
                    if let Ok(Some(st)) = c.try_wait() {
                        ended[i] = Some(st.code());
                    }
                }
            }
            // After the exits were seen: a child's last seconds are read below.
            let exited: Vec<bool> = ended.iter().map(Option::is_some).collect();
            for i in 0..n {
                for d in new_seconds(&self.dirs[i], &mut offsets[i], &mut partial[i]) {
                    let mut d: Delta = d;
                    d.worker = i as u32;
                    let ticks = agg.push(d);
                    barrage_engine::observe(&mut agg, ticks, obs);
                }
                if exited[i] && !done[i] {
                    // Its last second is read: a child that died (or had nothing to do)
                    // holds none of the others' seconds back.
                    done[i] = true;
                    let ticks = agg.end_worker(i);
                    barrage_engine::observe(&mut agg, ticks, obs);
                }
            }
            let all_ended = exited.iter().all(|e| *e);
            if all_ended {
                return ended.into_iter().map(|e| e.flatten()).collect();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The whole lines added to a shard's seconds file since `offset`.
fn new_seconds(dir: &Path, offset: &mut u64, partial: &mut Vec<u8>) -> Vec<Delta> {
    let Ok(mut f) = std::fs::File::open(dir.join(barrage_report::stream::SECONDS)) else {
        return Vec::new();
    };
    if f.seek(SeekFrom::Start(*offset)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_err() {
        return Vec::new();
    }
    *offset += buf.len() as u64;
    partial.extend_from_slice(&buf);
    let mut out = Vec::new();
    while let Some(at) = partial.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = partial.drain(..=at).collect();
        if let Ok(d) = serde_json::from_slice(&line) {
            out.push(d);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_get_the_command_less_what_the_parent_keeps() {
        let argv: Vec<String> = [
            "barrage",
            "tcp://x:1",
            "--processes",
            "4",
            "-c",
            "10",
            "--json=r.json",
            "--report",
            "r.md",
            "-q",
            "--no-tui",
            "-d",
            "5s",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(child_args(&argv), ["tcp://x:1", "-c", "10", "-d", "5s"]);
    }
}
