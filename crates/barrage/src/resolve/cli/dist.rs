//! `barrage dist`'s flags.

use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
barrage dist slurm examples/chat.toml --shards 8 > chat.sbatch && sbatch chat.sbatch\n  \
barrage dist slurm tcp://10.0.0.5:7000 --shards 4 -- -c 40000 -t 2 -d 10m > run.sbatch\n  \
barrage dist k8s chat.toml --shards 8 --image registry.local/barrage:1 > chat.yaml\n\n\
The scenario file or URL is what each shard runs; the run's flags follow it (or `--`).\n\
Bad usage exits 2 with one line naming the flag; nothing is submitted or applied.")]
pub struct DistArgs {
    #[command(subcommand)]
    pub engine: Engine,
}

#[derive(Subcommand, Debug)]
pub enum Engine {
    /// Print an sbatch script: N tasks (one per node by default), each a shard with
    /// --shard auto and a start computed once at job start, then `barrage merge`
    Slurm(Box<SlurmArgs>),
    /// Print a Kubernetes manifest: a ConfigMap with the scenario file and an Indexed Job of
    /// N pods (--shard auto/N), with the start fixed now; commands to run it at its end
    K8s(Box<K8sArgs>),
}

/// What both launchers take.
#[derive(Args, Debug)]
pub struct Shared {
    /// What each shard runs: a scenario file (.toml, .yaml) or a target URL (tcp://,
    /// http://, ...), as `barrage run` takes it
    #[arg(value_name = "FILE|URL")]
    pub spec: String,

    /// How many shards (processes, each on its own node where the engine can)
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub shards: Option<String>,

    /// Start the shards together this long after the job starts (Slurm) or after now
    /// (Kubernetes) [default: slurm 30s, k8s 120s]
    #[arg(
        long,
        value_name = "D",
        conflicts_with = "start_at",
        allow_hyphen_values = true
    )]
    pub start_in: Option<String>,

    /// Start the shards together at this wall-clock time (RFC 3339 UTC,
    /// 2026-11-23T08:00:00Z, or @UNIX_SECONDS)
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub start_at: Option<String>,

    /// The barrage each shard runs [slurm default: this executable; k8s default: barrage,
    /// on the image's PATH]
    #[arg(long, value_name = "PATH")]
    pub barrage: Option<String>,

    /// `barrage run` flags for every shard (-c, -d, -t, --threshold, ...): everything after
    /// FILE|URL that is not a flag of dist, or after `--`
    #[arg(
        value_name = "RUN FLAGS",
        num_args = 0..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub run_flags: Vec<String>,
}

#[derive(Args, Debug)]
pub struct SlurmArgs {
    #[command(flatten)]
    pub shared: Shared,

    /// Tasks (shards) per node
    #[arg(long, value_name = "K", default_value = "1", value_parser = crate::units::count, allow_hyphen_values = true)]
    pub ntasks_per_node: u64,

    /// Where the shards' --out directories, their logs and merged.json go (a directory all
    /// nodes see; new or empty) [default: barrage-JOBID in the directory sbatch is run from]
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct K8sArgs {
    #[command(flatten)]
    pub shared: Shared,

    /// The container image: barrage on its PATH (or --barrage), with /bin/sh, tar, gzip and
    /// base64 (deploy/k8s/README.md)
    #[arg(long, value_name = "IMG")]
    pub image: Option<String>,

    /// The namespace of the Job and ConfigMap [default: kubectl's current one]
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,

    /// The Job's name (the ConfigMap is NAME-spec) [default: barrage-STEM-STARTTIME]
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,

    /// CPU of each shard, requested and the limit, e.g. 2 or 500m [default: its -t]
    #[arg(long, value_name = "X")]
    pub cpu: Option<String>,

    /// Memory of each shard, requested and the limit, e.g. 512Mi or 2Gi
    #[arg(long, value_name = "Y", default_value = "512Mi")]
    pub memory: String,

    /// Mount this PersistentVolumeClaim (ReadWriteMany: the shards run on different nodes)
    /// at /results to keep the shards' directories [default: an emptyDir; they are collected
    /// from the pods' logs]
    #[arg(long, value_name = "NAME")]
    pub results_pvc: Option<String>,

    /// Give each shard the keys of this Secret as environment variables, for the run's
    /// {secret:NAME} references (repeatable)
    #[arg(long, value_name = "SECRET")]
    pub env_from_secret: Vec<String>,

    /// Run each shard in its node's network (hostNetwork, with cluster DNS kept): the node's
    /// addresses and ports, no pod network in between; a loopback target is then the node
    /// itself. Namespaces under the baseline Pod Security level refuse it
    #[arg(long)]
    pub host_network: bool,
}
