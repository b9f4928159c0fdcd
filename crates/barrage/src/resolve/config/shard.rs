//! Where a run sits among others: `--shard I/N` (its thread shares of a split run) and
//! `--start-at` (the common time zero of the shards).

use crate::usage::Usage;
use barrage_engine::Clock;
use std::time::Duration;

/// `--shard I/N`: shard I of N, each running `threads` shares (so every shard must use the
/// same -t), from a common `--start-at` (`start_at`: given).
pub(super) fn shard(
    v: Option<&str>,
    threads: Option<usize>,
    start_at: bool,
) -> Result<Option<barrage_engine::ShareSet>, Usage> {
    let Some(v) = v else { return Ok(None) };
    let Some(threads) = threads else {
        return Err(Usage::says(
            "--shard",
            "needs -t N, the same on every shard (the split is by thread shares)",
        ));
    };
    let bad = |why: &str| Usage::value("--shard", v, why);
    let env = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|x| x.trim().parse::<usize>().ok())
    };
    let (i, n): (usize, usize) = if v == "auto" {
        // Slurm gives both; a Kubernetes Indexed Job gives the index (the count: auto/N).
        match (env("SLURM_PROCID"), env("SLURM_NTASKS")) {
            (Some(i), Some(n)) => (i, n),
            _ => return Err(bad(
                "no SLURM_PROCID and SLURM_NTASKS here (Slurm); under a Kubernetes Indexed Job give auto/N",
            )),
        }
    } else if let Some(n) = v.strip_prefix("auto/") {
        let n = n
            .trim()
            .parse()
            .map_err(|_| bad("give auto/N with N whole, e.g. auto/4"))?;
        let i = env("JOB_COMPLETION_INDEX")
            .or_else(|| env("SLURM_PROCID"))
            .ok_or_else(|| {
                bad("no JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or SLURM_PROCID here")
            })?;
        (i, n)
    } else {
        let (i, n) = v
            .split_once('/')
            .ok_or_else(|| bad("give I/N, e.g. 0/4 for the first of four shards, or auto"))?;
        match (i.trim().parse(), n.trim().parse()) {
            (Ok(i), Ok(n)) => (i, n),
            _ => return Err(bad("give I/N with whole numbers, e.g. 0/4")),
        }
    };
    if n == 0 || i >= n {
        return Err(bad("I counts from 0 and is below N, e.g. 0/4 .. 3/4"));
    }
    if !start_at {
        // Without a common time zero the shards' seconds do not line up, and a merge could
        // not tell two runs apart.
        return Err(Usage::says(
            "--shard",
            "needs --start-at TIME, the same on every shard, e.g. --start-at \
             @$(( $(date +%s) + 30 )): the shards' seconds add up from a common time zero",
        ));
    }
    let t = threads.max(1);
    let count = n
        .checked_mul(t)
        .ok_or_else(|| bad("more shards than there can be connections"))?;
    Ok(Some(barrage_engine::ShareSet {
        count,
        run: (i * t..(i + 1) * t).collect(),
    }))
}

/// `--start-at`: RFC 3339 UTC (`2026-11-23T08:00:00Z`) or `@UNIX_SECONDS`, checked against
/// now (see `resolve/start_at.rs`); `load`: the load's length when known.
pub(super) fn start_at(v: Option<&str>, load: Option<Duration>) -> Result<Clock, Usage> {
    let Some(v) = v else { return Ok(Clock::Now) };
    let unix_ns = crate::resolve::start_at::check(v, crate::resolve::start_at::now_ns(), load)?;
    Ok(Clock::At { unix_ns })
}
