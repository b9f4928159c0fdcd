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

use crate::resolve::cli::RunArgs;
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
const PARENT_ONLY: [(&str, bool); 22] = [
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

/// How many processes the run wants (`--processes`, or a scenario file's `processes`):
/// `None` for one (this one), and always for a shard (a shard is one process).
pub fn wanted(a: &RunArgs) -> Result<Option<u64>, Usage> {
    use barrage_scenario::model::Processes;
    if a.shard.is_some() {
        if a.processes.is_some() {
            return Err(Usage::says(
                "--processes",
                "does not go with --shard: a shard is one process; split the run with more \
                 shards, or run --processes N without --shard (it makes the shards itself)",
            ));
        }
        return Ok(None);
    }
    let file = crate::resolve::scenario::is_file(&a.target);
    let p = match a.processes {
        Some(p) => p,
        None if file => match crate::resolve::scenario::file_processes(&a.target)? {
            Some(p) => p,
            None => return Ok(None),
        },
        None => return Ok(None),
    };
    let n = match p {
        Processes::Count(n) => n,
        Processes::Auto => {
            let conns = if file {
                crate::resolve::scenario::users(a)?
            } else {
                crate::resolve::config::plan(a)?.0.connections
            };
            let m = crate::resolve::preflight::Machine::read();
            crate::resolve::preflight::processes_for(conns, a.threads.unwrap_or(1), m.nofile_hard)
        }
    };
    Ok((n > 1).then_some(n))
}

pub fn run(a: &RunArgs, argv: Vec<String>, n: usize) -> anyhow::Result<i32> {
    for f in PER_CHILD {
        if argv.iter().skip(1).any(|x| flag_of(x) == f) {
            return Err(Usage::says(
                f,
                "does not go with --processes (each process gets its own)",
            )
            .into());
        }
    }
    // Every check of the run, made once here for all the children (and the machine-wide
    // pre-flight: they share its ports, memory and tables).
    let mut whole = a.clone();
    whole.parent_of = Some(n as u64);
    let resolved = if crate::resolve::scenario::is_file(&a.target) {
        crate::resolve::scenario::resolve(&whole, argv.clone())?
    } else {
        crate::resolve::resolve(&whole, argv.clone())?
    };
    // Child i runs thread shares i x t ..: it owns a connection only when there are more
    // than i x t of them.
    let t = a.threads.unwrap_or(1).max(1);
    let least = (n as u64 - 1).saturating_mul(t).saturating_add(1);
    if resolved.plan.connections < least {
        return Err(Usage::says(
            "--processes",
            format!(
                "{n} needs at least {least} connections (users) so that every process owns \
                 one{}; the run has {}",
                if t > 1 {
                    format!(" (each runs -t {t} thread shares, by stride)")
                } else {
                    String::new()
                },
                resolved.plan.connections
            ),
        )
        .into());
    }
    let thresholds = resolved.thresholds;
    let mut outputs = resolved.outputs;
    // One watch for the whole run: the server (--monitor, --spawn, started here before any
    // child connects) and barrage with all its children, for the generator's CPU.
    let plan = match resolved.watch {
        Some(p) => p.with_children_of_self(),
        None => crate::resolve::watch::WatchPlan::generator_only(a.monitor_interval),
    };
    let mut watch = plan.start()?;
    let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("--processes: {e}"))?;
    let root = TempRoot::create()
        .map_err(|e| anyhow::anyhow!("--processes: a temporary directory: {e}"))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let start = now.as_secs() + 2;
    let starts = std::time::Instant::now() + Duration::from_secs(start).saturating_sub(now);
    watch.run_starts_at(starts);
    let started_at = crate::sys::rfc3339_now();
    let (prom, web) = crate::run::serve_live(
        &outputs,
        &started_at,
        &resolved.config,
        &resolved.argv,
        "0".into(),
    )?;
    // The parent's --out is a whole run's stream: the merged seconds, replayable alone.
    outputs.start_files(&crate::run::stream_header(
        &resolved.argv,
        &started_at,
        &resolved.config,
        resolved.spec.to_json(),
        &resolved.plan,
        &thresholds,
        Some(&watch),
    ))?;
    let args = child_args(&argv);
    let threads = a.threads.is_none().then_some("1");
    let dirs: Vec<PathBuf> = (0..n)
        .map(|i| root.path.join(format!("shard{i}")))
        .collect();
    let mut children = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let mut c = crate::sys::child_of_self(&exe);
        c.args(&args)
            .args([
                "--shard",
                &format!("{i}/{n}"),
                "--start-at",
                &format!("@{start}"),
                "--one-clock",
                "--skip-thresholds",
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
    let signals = crate::run::Signals::install();
    let live = outputs.live(&resolved.plan, &signals.stop);
    // The scraper's clock is the run's: its samples on the run's timeline.
    let scraper = resolved.metrics.map(|m| m.start(starts));
    let mut observer = crate::run::Observer::new(
        &live,
        Some(&watch),
        outputs.recorders(),
        prom.as_ref(),
        web.as_ref(),
        scraper.as_ref(),
        &signals.stop,
    );
    let follow = Follow {
        dirs: &dirs,
        timeline: resolved.plan.timeline(),
        stop: &signals.stop,
    };
    let ended = follow.run(&mut children, &mut observer);
    let out_failed = observer.out_failed;
    let server_metrics = scraper
        .map(barrage_monitor::Scraper::stop)
        .unwrap_or_default();
    let recovery_s = Some(watch.recovery_s()).filter(|r| *r > 0.0);
    let user_stop = live.keys().is_some_and(|k| k.user_stopped()) && !signals.signalled();
    let (series, spawned) = crate::run::recover(watch, &live, &signals);
    live.finish();
    if let Some(p) = prom {
        p.stop();
    }
    // The children share this host's clock (--one-clock): their deliveries are timed already.
    let mut result = crate::shard::merge::merged(&dirs, argv.clone(), Duration::ZERO)?;
    drop(root);
    result.started_at = started_at;
    result.monitor = Some(series);
    result.spawn = spawned;
    result.server_metrics = server_metrics;
    // The children's threads together, as many as the machine runs at once.
    result.config.threads = n * a.threads.unwrap_or(1) as usize;
    result.config.processes = Some(n as u64);
    result.conclude(&thresholds, recovery_s);
    let stopped = signals.stop.load(std::sync::atomic::Ordering::Relaxed);
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
    let mut code = 0;
    if out_failed {
        result.status = Status::Failed;
        result.message = Some(format!(
            "--out: a second could not be written; the load was stopped; {n} processes merged"
        ));
        code = 1;
    } else if !failed.is_empty() {
        result.status = Status::Failed;
        result.message = Some(format!("{}; {n} processes merged", failed.join(", ")));
        code = 1;
    } else if user_stop {
        let at = barrage_metrics::figures::load_end(&result.timeseries);
        result.status = Status::Stopped;
        result.message = Some(format!(
            "stopped by the user at {at:.1} s; {n} processes merged"
        ));
    } else if stopped {
        result.status = Status::Interrupted;
        result.message = Some(format!("interrupted by a signal; {n} processes merged"));
        code = 130;
    } else if result.status == Status::Completed {
        result.message = Some(format!("{n} processes merged"));
    }
    // (Otherwise the merge says which shard lacks what: the run is `incomplete`.)
    crate::run::finish_web(web, &result);
    outputs.finish(&result, code)
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
                    // SAFETY: kill on our own child's pid.
                    unsafe {
                        libc::kill(c.id() as i32, libc::SIGINT);
                    }
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
