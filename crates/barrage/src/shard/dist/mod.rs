//! `barrage dist slurm|k8s SPEC --shards N ...`: one run as N shards on an engine the user
//! already operates. Each prints what that engine takes (an `sbatch` script, a Kubernetes
//! manifest) and runs nothing: every shard is an ordinary `barrage run SPEC --shard ...
//! --start-at T --out DIR`, and `barrage merge` makes the shards one result.
//!
//! Key decisions:
//! - SPEC is a scenario file (.toml, .yaml) or a target URL; the run's flags follow it (or
//!   follow `--`) and go to every shard. A file is checked here as `barrage validate` does
//!   (without resolving the target, which may only resolve where the shards run); the flags
//!   are parsed by `run`'s own parser, so a typo is refused now, not on N machines later.
//! - A shard judges thresholds on its own share and exits 3 when one fails; that is not a
//!   failed task (the merge judges the whole run), so both launchers map a shard's 3 to 0.
//!   Otherwise Slurm's `--kill-on-bad-exit` or the Job's `backoffLimit: 0` would end the
//!   other shards while they write their results.
//! - Slurm: the start barrier is computed in the batch script, once, before `srun` (all tasks
//!   share it). Kubernetes: a Job's pods start whenever they are scheduled, so the start is
//!   fixed when the manifest is generated and must be applied before it.
//! - Secrets stay references: a scenario file travels as written, `{secret:NAME}` is filled
//!   in each shard from its environment (sbatch exports the submitter's; a pod gets it from
//!   `--env-from-secret`). No environment value is ever written out.

use crate::resolve::cli::{DistArgs, Engine};

mod configmap;
mod k8s;
mod prepare;
mod slurm;
mod yaml;

use k8s::k8s;
use slurm::slurm;

pub fn dist(a: &DistArgs) -> anyhow::Result<i32> {
    let out = match &a.engine {
        Engine::Slurm(s) => slurm(s)?,
        Engine::K8s(k) => k8s(k)?,
    };
    say!("{}", out.trim_end());
    Ok(0)
}

#[cfg(test)]
mod tests;
