//! Resolve: every bad-input check of `barrage run`, before anything starts.
//!
//! One step turns the user's words into what the run needs, or into one `Usage` error naming
//! the flag: the engine's plan and the recorded config (`config/`), what to watch
//! (`watch.rs`), the thresholds (and whether the run can measure them), the open-file limit,
//! and every output destination (`outputs.rs`). Nothing here starts a thread, a process or a
//! connection, and no file is written.

pub mod cli;
pub mod config;
pub mod outputs;
pub mod preflight;
pub mod proxy;
pub mod redact;
mod resolved;
pub mod scenario;
pub mod sources;
pub mod start_at;
pub mod tls;
pub mod url;
pub mod watch;

pub use resolved::{from_spec, resolve, Resolved};

use crate::resolve::cli::RunArgs;
use crate::usage::Usage;

/// A run over `n` processes (`--processes`), resolved whole: every check made once here for
/// all the children (and the machine-wide pre-flight: they share its ports, memory and
/// tables).
pub fn split(
    a: &RunArgs,
    argv: Vec<String>,
    n: usize,
    file: Option<scenario::File>,
) -> Result<Resolved, Usage> {
    let mut whole = a.clone();
    whole.output.parent_of = Some(n as u64);
    let resolved = run(&whole, argv, file)?;
    // Child i runs thread shares i x t ..: it owns a connection only when there are more
    // than i x t of them.
    let t = a.load.threads.unwrap_or(1).max(1);
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
        ));
    }
    Ok(resolved)
}

/// A run: of its scenario file (loaded once, [`scenario::load`]), or of the flags.
pub fn run(
    a: &RunArgs,
    argv: Vec<String>,
    file: Option<scenario::File>,
) -> Result<Resolved, Usage> {
    match file {
        Some(f) => scenario::resolve(a, argv, f),
        None => resolve(a, argv),
    }
}

/// How many processes the run wants (`--processes`, or a scenario file's `processes`):
/// `None` for one (this one), and always for a shard (a shard is one process).
pub fn processes(a: &RunArgs, file: Option<&scenario::File>) -> Result<Option<u64>, Usage> {
    use barrage_scenario::model::Processes;
    if a.output.shard.is_some() {
        if a.output.processes.is_some() {
            return Err(Usage::says(
                "--processes",
                "does not go with --shard: a shard is one process; split the run with more \
                 shards, or run --processes N without --shard (it makes the shards itself)",
            ));
        }
        return Ok(None);
    }
    let p = match a.output.processes.or_else(|| file?.processes()) {
        Some(p) => p,
        None => return Ok(None),
    };
    let n = match p {
        Processes::Count(n) => n,
        Processes::Auto => {
            let conns = match file {
                Some(f) => f.users(),
                None => crate::resolve::config::plan(a)?.0.connections,
            };
            let m = crate::resolve::preflight::Machine::read();
            crate::resolve::preflight::processes_for(
                conns,
                a.load.threads.unwrap_or(1),
                m.nofile_hard,
            )
        }
    };
    Ok((n > 1).then_some(n))
}
