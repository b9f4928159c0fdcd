//! `barrage run`: the flags resolved into a run, and the run driven by the spine (`run/`)
//! with its source: the engine in this process, or the children of `--processes`.

use crate::resolve::cli::RunArgs;

/// Runs the test; returns the exit code (0 completed or stopped by the user, 1 failed, 3 a
/// threshold failed, 130 interrupted by a signal).
pub fn run(a: &RunArgs, argv: Vec<String>) -> anyhow::Result<i32> {
    // A scenario file is read and checked once, here.
    let file = crate::resolve::scenario::load(a)?;
    if let Some(n) = crate::resolve::processes(a, file.as_ref())? {
        let n = n as usize;
        let children = crate::shard::processes::Children::new(
            &argv,
            n,
            a.load.threads,
            a.watch.monitor_interval,
        )?;
        let resolved = crate::resolve::split(a, argv, n, file)?;
        return crate::run::run(resolved, children);
    }
    crate::run::run(crate::resolve::run(a, argv, file)?, crate::run::Engine)
}
