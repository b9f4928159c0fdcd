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

use crate::cli::RunArgs;
use crate::sys::rfc3339;
use crate::usage::Usage;
use clap::{Args, Parser as _, Subcommand};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
    #[arg(long, value_name = "TIME")]
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
    #[arg(long, value_name = "K", default_value = "1", value_parser = crate::units::count)]
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

/// dist's own flags: given among the run's flags, they are the user's mistake of order.
const DIST_FLAGS: [&str; 15] = [
    "--shards",
    "--start-in",
    "--start-at",
    "--barrage",
    "--ntasks-per-node",
    "--results",
    "--image",
    "--namespace",
    "--name",
    "--cpu",
    "--memory",
    "--results-pvc",
    "--env-from-secret",
    "--host-network",
    "--help",
];

pub fn dist(a: &DistArgs) -> anyhow::Result<i32> {
    let out = match &a.engine {
        Engine::Slurm(s) => slurm(s)?,
        Engine::K8s(k) => k8s(k)?,
    };
    say!("{}", out.trim_end());
    Ok(0)
}

// ---------------------------------------------------------------------------------------
// What both launchers check and share.

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Slurm,
    K8s,
}

/// A scenario file and the files it names (relative to its folder).
struct ScenarioFile {
    /// As the user gave it (for messages).
    shown: String,
    path: PathBuf,
    name: String,
    text: String,
    /// `users.data`, `protocol.cacert`: (the path as written, the file).
    extra: Vec<(String, PathBuf)>,
}

enum Spec {
    Url(String),
    File(Box<ScenarioFile>),
}

/// The checked input of a launcher.
struct Prepared {
    shards: u64,
    spec: Spec,
    /// The run's flags for every shard (with -t and --no-tui added when missing).
    flags: Vec<String>,
    threads: u64,
    /// The load's length when it is known: warm-up plus -d (or the file's run.duration).
    length: Option<Duration>,
    /// `{secret:NAME}` names the run reads from the environment.
    secrets: Vec<String>,
    /// The target host as given (to warn about loopback).
    host: String,
}

fn prepare(s: &Shared, kind: Kind) -> Result<Prepared, Usage> {
    if let Some(f) = s
        .run_flags
        .iter()
        .find(|x| DIST_FLAGS.contains(&flag_of(x)))
    {
        let first = s.run_flags.first().map_or("", |x| x.as_str());
        return Err(Usage::says(
            flag_of(f),
            format!(
                "is a flag of barrage dist: give it before the run's flags (which start at \
                 '{first}'), or put the run's flags after `--`"
            ),
        ));
    }
    let shards = shards(s.shards.as_deref())?;
    let mut argv = vec!["barrage".to_string(), "run".to_string(), s.spec.clone()];
    argv.extend(s.run_flags.iter().cloned());
    let run = match crate::cli::Cli::try_parse_from(&argv) {
        Ok(crate::cli::Cli {
            command: crate::cli::Command::Run(r),
        }) => r,
        Ok(_) => unreachable!("argv starts with run"),
        Err(e) => return Err(Usage::new("run flags", clap_line(&e))),
    };
    refuse_set_by_dist(&run, kind)?;
    let (spec, file, host) = if crate::scenario::is_file(&s.spec) {
        let (f, settings, target) = scenario_file(&s.spec)?;
        (Spec::File(Box::new(f)), settings, target)
    } else if s.spec.contains("://") {
        let host = url_host(&s.spec, "target")?;
        (Spec::Url(s.spec.clone()), FileRun::default(), host)
    } else {
        return Err(Usage::value(
            "FILE|URL",
            &s.spec,
            "is neither a scenario file (.toml, .yaml, .yml) nor a target URL (tcp://HOST:PORT, \
             http://HOST/PATH, ws://, redis://, memcache://)",
        ));
    };
    let host = match &run.target_url {
        Some(t) => url_host(t, "--target")?,
        None => host,
    };
    let threads = run.threads.or(file.threads).unwrap_or(1);
    // Shard i runs thread shares i x t ..: it owns a connection only when there are more
    // than i x t of them (as `--processes` checks its own).
    // (A --conn-stages ramp's peak is checked by each shard, as it starts.)
    let connections = match &spec {
        Spec::File(_) => Some(run.users.unwrap_or(file.users)),
        Spec::Url(_) => run.conn_stages.is_none().then_some(run.connections),
    };
    let least = (shards - 1)
        .saturating_mul(threads.max(1))
        .saturating_add(1);
    if let Some(connections) = connections.filter(|c| *c < least) {
        return Err(Usage::says(
            "--shards",
            format!(
                "{shards} needs at least {least} connections (users) so that every shard owns \
                 one (each runs -t {} thread shares, by stride); the run has {connections}: \
                 give fewer shards or more connections",
                threads.max(1)
            ),
        ));
    }
    let mut flags = s.run_flags.clone();
    if flags.first().map(String::as_str) == Some("--") {
        flags.remove(0);
    }
    if run.threads.is_none() {
        // Every shard needs the same -t (the split is by thread shares).
        flags.extend(["-t".to_string(), threads.to_string()]);
    }
    if !run.no_tui {
        flags.push("--no-tui".into());
    }
    let warmup = run.warmup.or(file.warmup).unwrap_or_default();
    let length = match (&spec, run.duration.or(file.duration)) {
        (_, Some(d)) => Some(d + warmup),
        // A scenario lasts until its users are gone.
        (Spec::File(_), None) => None,
        (Spec::Url(_), None) => {
            let own_length =
                run.requests.is_some() || run.rate_stages.is_some() || run.conn_stages.is_some();
            (!own_length).then(|| Duration::from_secs(10) + warmup)
        }
    };
    let mut secrets = Vec::new();
    secret_names(&s.spec, &mut secrets);
    for f in &s.run_flags {
        secret_names(f, &mut secrets);
    }
    if let Spec::File(f) = &spec {
        secret_names(&f.text, &mut secrets);
    }
    Ok(Prepared {
        shards,
        spec,
        flags,
        threads,
        length,
        secrets,
        host,
    })
}

/// `--shards N`: a whole number, 1 or more.
fn shards(v: Option<&str>) -> Result<u64, Usage> {
    let Some(v) = v else {
        return Err(Usage::says(
            "--shards",
            "is required: how many shards the run is split into, e.g. --shards 4",
        ));
    };
    match v.trim().parse::<i64>() {
        Ok(n) if (1..=100_000).contains(&n) => Ok(n as u64),
        Ok(n) if n < 1 => Err(Usage::value(
            "--shards",
            v,
            "give 1 or more shards, e.g. --shards 4",
        )),
        Ok(_) => Err(Usage::value(
            "--shards",
            v,
            "at most 100000 (a Kubernetes Indexed Job's limit)",
        )),
        Err(_) => Err(Usage::value(
            "--shards",
            v,
            "give a whole number of shards, e.g. --shards 4",
        )),
    }
}

/// Run flags that dist sets for every shard, or that would make each shard write the same
/// file: refused with what to do instead.
fn refuse_set_by_dist(r: &RunArgs, kind: Kind) -> Result<(), Usage> {
    let results = match kind {
        Kind::Slurm => "RESULTS/merged.json",
        Kind::K8s => "the merged result",
    };
    if r.shard.is_some() {
        return Err(Usage::says(
            "--shard",
            "is set by barrage dist for every shard (--shard auto); leave it out",
        ));
    }
    if r.start_at.is_some() {
        return Err(Usage::says(
            "--start-at",
            "is a flag of barrage dist: give it before the run's flags",
        ));
    }
    if r.out.is_some() {
        let instead = match kind {
            Kind::Slurm => "give barrage dist --results DIR",
            Kind::K8s => "they go to /results (--results-pvc NAME to keep them on a claim)",
        };
        return Err(Usage::says(
            "--out",
            format!("is set by barrage dist, one directory per shard: {instead}"),
        ));
    }
    if r.processes.is_some() {
        return Err(Usage::says(
            "--processes",
            "does not go with barrage dist: each shard is one process; give more --shards",
        ));
    }
    let own_files = [
        ("--json", r.json.is_some()),
        ("--report", r.report.is_some()),
        ("--csv", r.csv.is_some()),
        ("--hdr-log", r.hdr_log.is_some()),
    ];
    if let Some((flag, _)) = own_files.iter().find(|(_, on)| *on) {
        return Err(Usage::says(
            *flag,
            format!(
                "would be written by every shard; {results} is the whole run: render it with \
                 barrage report (-o run.html, run.md, run.csv)"
            ),
        ));
    }
    if r.baseline.is_some() {
        return Err(Usage::says(
            "--baseline",
            format!("would judge each shard alone; compare {results}: barrage compare BASE MERGED"),
        ));
    }
    Ok(())
}

/// What a scenario file's `[run]` says that dist needs.
#[derive(Default)]
struct FileRun {
    threads: Option<u64>,
    /// The file's users (its connections).
    users: u64,
    duration: Option<Duration>,
    warmup: Option<Duration>,
}

/// A scenario file checked as `barrage validate` does, but without resolving its target
/// (a name that may resolve only where the shards run): the file, its settings, and its
/// target's host.
fn scenario_file(shown: &str) -> Result<(ScenarioFile, FileRun, String), Usage> {
    let path = Path::new(shown);
    let checked = barrage_scenario::load(path).map_err(|e| Usage::file(shown, e))?;
    let at = |line: u32, key: &str, why: String| {
        Usage::file(shown, format!("{shown}:{line}: {key}: {why}"))
    };
    let f = &checked.file;
    let host = url_host(&f.target.value, "target").map_err(|e| {
        at(
            f.target.line,
            "target",
            e.to_string().trim_start_matches("target ").to_string(),
        )
    })?;
    let run = f.run.as_ref().map(|r| &r.value);
    let mut settings = FileRun {
        threads: run.and_then(|r| r.threads.as_ref()).map(|t| t.value),
        users: checked.users,
        ..FileRun::default()
    };
    if let Some(r) = run {
        for (i, th) in r.thresholds.iter().enumerate() {
            // `steps.NAME.METRIC`: the step is checked by the scenario; the rest is a metric.
            let expr = match th.trim().strip_prefix("steps.") {
                Some(rest) => rest.split_once('.').map_or(rest, |(_, m)| m).to_string(),
                None => th.to_string(),
            };
            if let Err(e) = barrage_metrics::thresholds::parse(&expr) {
                return Err(at(th.line, &format!("run.thresholds[{i}]"), e.to_string()));
            }
        }
        let dur = |v: &Option<barrage_scenario::At<String>>, key: &str| {
            v.as_ref()
                .map(|d| {
                    barrage_scenario::units::duration(&d.value)
                        .map_err(|e| at(d.line, &format!("run.{key}"), e))
                })
                .transpose()
        };
        settings.duration = dur(&r.duration, "duration")?;
        settings.warmup = dur(&r.warmup, "warmup")?;
    }
    let mut extra = Vec::new();
    let dir = path.parent().unwrap_or(Path::new(""));
    if let Some(d) = &f.users.value.data {
        extra.push((d.value.clone(), dir.join(&d.value)));
    }
    if let Some(c) = f.protocol.as_ref().and_then(|p| p.cacert.as_ref()) {
        extra.push((c.value.clone(), dir.join(&c.value)));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| Usage::file(shown, format!("{shown}: cannot read it: {e}")))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| shown.to_string());
    let abs = std::path::absolute(path)
        .map_err(|e| Usage::file(shown, format!("{shown}: cannot resolve its path: {e}")))?;
    Ok((
        ScenarioFile {
            shown: shown.to_string(),
            path: abs,
            name,
            text,
            extra,
        },
        settings,
        host,
    ))
}

/// The host of a target URL, checked for its shape only (known scheme, a host): the name is
/// resolved where the shards run, not here. `{secret:NAME}` may stand anywhere in it.
fn url_host(raw: &str, flag: &str) -> Result<String, Usage> {
    let bad = |why: &str| Usage::value(flag, raw, why);
    let Some((scheme, rest)) = raw.split_once("://") else {
        return Err(bad(
            "has no scheme; write it as tcp://HOST:PORT, http://HOST/PATH or ws://HOST/PATH",
        ));
    };
    if barrage_scenario::protocol::by_scheme(scheme).is_none() {
        let supported = barrage_scenario::protocol::supported();
        return Err(bad(&format!("unknown scheme; supported: {supported}")));
    }
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    if host.is_empty() {
        return Err(bad("has no host"));
    }
    Ok(host.to_string())
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Every `{secret:NAME}` in `text`, once each.
fn secret_names(text: &str, into: &mut Vec<String>) {
    let mut rest = text;
    while let Some(at) = rest.find("{secret:") {
        rest = &rest[at + "{secret:".len()..];
        if let Some(end) = rest.find('}') {
            let name = &rest[..end];
            if !name.is_empty() && !into.iter().any(|n| n == name) {
                into.push(name.to_string());
            }
        }
    }
}

fn flag_of(arg: &str) -> &str {
    arg.split_once('=').map_or(arg, |(f, _)| f)
}

/// clap's error about the run's flags in one line (without its usage and tips).
fn clap_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("bad flags");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    format!("{first} (barrage run --help lists them)")
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `--start-at TIME` as whole Unix seconds (rounded up), refused when not in the future.
fn start_at(v: &str, now: u64) -> Result<u64, Usage> {
    let secs = crate::start_at::parse(v).map_err(|why| Usage::value("--start-at", v, why))?;
    if secs - now as f64 > crate::start_at::MAX_AHEAD.as_secs_f64() {
        return Err(Usage::value(
            "--start-at",
            v,
            "is more than 7 days from now, further than a shard waits; give a nearer time",
        ));
    }
    let secs = secs.ceil() as u64;
    if secs <= now {
        return Err(Usage::value(
            "--start-at",
            v,
            format!(
                "is in the past (it is {} now); give a later time, or --start-in 2m",
                rfc3339(now)
            ),
        ));
    }
    Ok(secs)
}

/// `--start-in D` in whole seconds (rounded up), at least 1.
fn start_in(v: &str) -> Result<u64, Usage> {
    let d = crate::units::positive_duration(v).map_err(|e| Usage::value("--start-in", v, e))?;
    Ok(d.as_secs() + u64::from(d.subsec_nanos() > 0))
}

/// Lower-case letters, digits and `-` from `s` (runs of anything else become one `-`),
/// at most `max` long, no `-` at either end: a DNS label, a job name.
fn label(s: &str, max: usize) -> String {
    let mut out = String::new();
    for c in s.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let mut out: String = out.trim_matches('-').chars().take(max).collect();
    while out.ends_with('-') {
        out.pop();
    }
    out
}

/// A short name for what the run is: the scenario file's stem, or the target's host.
fn stem(p: &Prepared) -> String {
    let s = match &p.spec {
        Spec::File(f) => label(
            Path::new(&f.name)
                .file_stem()
                .map_or(String::new(), |s| s.to_string_lossy().into_owned())
                .as_str(),
            24,
        ),
        Spec::Url(_) => label(&p.host, 24),
    };
    if s.is_empty() {
        "run".into()
    } else {
        s
    }
}

/// The note on stderr about `{secret:NAME}` references and where they come from.
fn secrets_note(p: &Prepared, kind: Kind, given: bool) {
    if p.secrets.is_empty() {
        return;
    }
    let names = p
        .secrets
        .iter()
        .map(|n| format!("{{secret:{n}}}"))
        .collect::<Vec<_>>()
        .join(", ");
    let line = match kind {
        Kind::Slurm => format!(
            "note: the run reads {names} from the environment: export them before sbatch (it \
             passes your environment to the tasks); the script holds no value"
        ),
        Kind::K8s if given => format!(
            "note: the run reads {names} from the environment: the Secrets of --env-from-secret \
             must have those keys"
        ),
        Kind::K8s => format!(
            "note: the run reads {names} from the environment: create a Secret with those keys \
             (kubectl create secret generic NAME --from-literal=KEY=...) and give \
             --env-from-secret NAME, or the shards stop at start"
        ),
    };
    crate::sys::err_line(line);
}

// ---------------------------------------------------------------------------------------
// Slurm.

fn slurm(a: &SlurmArgs) -> Result<String, Usage> {
    let p = prepare(&a.shared, Kind::Slurm)?;
    if a.ntasks_per_node == 0 {
        return Err(Usage::value(
            "--ntasks-per-node",
            0,
            "give 1 or more tasks per node",
        ));
    }
    let now = now_secs();
    let start = match (&a.shared.start_at, &a.shared.start_in) {
        (Some(t), _) => SlurmStart::At(start_at(t, now)?),
        (None, Some(d)) => SlurmStart::In(start_in(d)?),
        (None, None) => SlurmStart::In(30),
    };
    let barrage = match &a.shared.barrage {
        Some(b) => b.clone(),
        None => std::env::current_exe()
            .map_err(|e| Usage::new("--barrage", format!("cannot find this executable: {e}")))?
            .display()
            .to_string(),
    };
    let results = match &a.results {
        Some(r) => {
            let abs = std::path::absolute(r)
                .map_err(|e| Usage::value("--results", r.display(), e))?
                .display()
                .to_string();
            if abs.contains('\\') {
                return Err(Usage::value(
                    "--results",
                    r.display(),
                    "srun names no per-task log under a path with a backslash; give another",
                ));
            }
            Some(abs)
        }
        None => None,
    };
    if let SlurmStart::At(at) = start {
        crate::sys::err_line(format!(
            "barrage dist slurm: the shards start at {} ({} s from now): the job must start \
             before then",
            rfc3339(at),
            at - now
        ));
    }
    if is_loopback(&p.host) {
        crate::sys::err_line(format!(
            "note: the target {} is loopback: each node loads a server on itself",
            p.host
        ));
    }
    secrets_note(&p, Kind::Slurm, false);
    let command_line = {
        let mut v: Vec<String> = std::env::args().skip(1).collect();
        v.insert(0, "barrage".into());
        v.iter().map(|x| sh_quote(x)).collect::<Vec<_>>().join(" ")
    };
    Ok(slurm_script(&SlurmJob {
        p: &p,
        per_node: a.ntasks_per_node,
        start,
        barrage: &barrage,
        results: results.as_deref(),
        command_line: &command_line,
    }))
}

#[derive(Debug, Clone, Copy)]
enum SlurmStart {
    /// Seconds after the job starts.
    In(u64),
    /// A fixed instant (Unix seconds).
    At(u64),
}

struct SlurmJob<'a> {
    p: &'a Prepared,
    per_node: u64,
    start: SlurmStart,
    barrage: &'a str,
    results: Option<&'a str>,
    command_line: &'a str,
}

/// What each task runs (as `sh -c TASK barrage-shard BARRAGE RESULTS SPEC FLAGS...`): its
/// shard with its own --out directory; a shard's own exit 3 (a threshold missed by its share
/// alone) is not a failed task.
const SLURM_TASK: &str = r#"b=$1 r=$2
shift 2
"$b" run --out "$r/shard-$SLURM_PROCID" "$@"
c=$?
if [ "$c" -eq 3 ]; then
  echo "barrage dist: shard $SLURM_PROCID: a threshold failed on its own share (exit 3); the merge judges the whole run" >&2
  c=0
fi
exit "$c""#;

fn slurm_script(j: &SlurmJob) -> String {
    let p = j.p;
    let n = p.shards;
    let k = j.per_node.min(n);
    let nodes = n.div_ceil(k);
    let t = p.threads;
    let spec_arg = match &p.spec {
        Spec::Url(u) => u.clone(),
        Spec::File(f) => f.path.display().to_string(),
    };
    let when = match j.start {
        SlurmStart::In(secs) => format!("{secs} s after the job starts (computed once, below)"),
        SlurmStart::At(at) => format!("at {} (fixed when this was generated)", rfc3339(at)),
    };
    let mut s = format!(
        "#!/bin/sh\n\
         # One barrage run as {n} shards under Slurm, merged into one result. Generated by:\n\
         #   {generated}\n\
         # Submit: sbatch FILE (sbatch --wait FILE waits and exits with the job's code); sbatch\n\
         # options on its command line (-p PARTITION, --time, -A) override the lines below.\n\
         # Each task is one shard (--shard auto: SLURM_PROCID of SLURM_NTASKS); they start\n\
         # together {when}.\n\
         # Then barrage merge writes RESULTS/merged.json and the job exits with its code: 0, or 3\n\
         # when a threshold failed on the whole run; 1 when a shard failed (--kill-on-bad-exit\n\
         # ends the others; each task's output is RESULTS/shard-I.log).\n\
         #SBATCH --job-name=barrage-{stem}\n\
         #SBATCH --ntasks={n}\n\
         #SBATCH --nodes={nodes}\n\
         #SBATCH --ntasks-per-node={k}\n\
         #SBATCH --cpus-per-task={t}\n\
         \n\
         BARRAGE={barrage}\n",
        generated = one_line(j.command_line),
        stem = stem(p),
        barrage = sh_quote(j.barrage),
    );
    match j.results {
        Some(r) => s.push_str(&format!("RESULTS={}\n", sh_quote(r))),
        None => s.push_str(
            "RESULTS=\"${SLURM_SUBMIT_DIR:-$PWD}/barrage-${SLURM_JOB_ID:?run this script with sbatch}\"\n",
        ),
    }
    match j.start {
        SlurmStart::In(secs) => s.push_str(&format!(
            "# One start for every task: computed once, before srun.\n\
             START=@$(( $(date +%s) + {secs} ))\n"
        )),
        SlurmStart::At(at) => s.push_str(&format!(
            "START=@{at}\n\
             if [ \"$(date +%s)\" -ge {at} ]; then\n  \
               echo \"error: --start-at {} passed while the job waited; generate the script again (barrage dist slurm --start-in D starts after the job starts)\" >&2\n  \
               exit 2\n\
             fi\n",
            rfc3339(at)
        )),
    }
    s.push_str(
        "if [ -d \"$RESULTS\" ] && [ -n \"$(ls -A \"$RESULTS\")\" ]; then\n  \
           echo \"error: --results $RESULTS is not empty: each shard's directory must be new; give another\" >&2\n  \
           exit 2\n\
         fi\n\
         mkdir -p \"$RESULTS\" || exit 1\n\
         # srun's --output pattern: %t is the task's number, %% a % of the path.\n\
         LOGS=$(printf '%s' \"$RESULTS\" | sed 's/%/%%/g')\n\
         echo \"barrage dist: $SLURM_NTASKS shards start together at $START (Unix seconds); results in $RESULTS\" >&2\n",
    );
    if nodes * k != n {
        s.push_str(
            "# N is not a multiple of the tasks per node: let srun lay the tasks out over the\n\
             # allocation (at most --ntasks-per-node each) instead of warning and ignoring it.\n\
             unset SLURM_NTASKS_PER_NODE\n",
        );
    }
    let mut args = vec![
        "barrage-shard".to_string(),
        "\"$BARRAGE\"".to_string(),
        "\"$RESULTS\"".to_string(),
        sh_quote(&spec_arg),
        "--shard auto --start-at \"$START\"".to_string(),
    ];
    args.extend(p.flags.iter().map(|f| sh_quote(f)));
    s.push_str(&format!(
        "\n\
         srun --kill-on-bad-exit=1 --cpus-per-task={t} --output=\"$LOGS/shard-%t.log\" sh -c {task} \\\n  \
           {args}\n\
         ran=$?\n\
         \n",
        task = sh_quote(SLURM_TASK),
        args = args.join(" "),
    ));
    s.push_str(
        "set --\n\
         for d in \"$RESULTS\"/shard-*; do [ -d \"$d\" ] && set -- \"$@\" \"$d\"; done\n\
         if [ \"$#\" -eq 0 ]; then\n  \
           echo \"error: no shard wrote its directory (srun exit $ran): see $RESULTS/shard-*.log\" >&2\n  \
           exit 1\n\
         fi\n\
         \"$BARRAGE\" merge \"$@\" -o \"$RESULTS/merged.json\"\n\
         merged=$?\n\
         if [ \"$ran\" -ne 0 ]; then\n  \
           echo \"error: a shard failed (srun exit $ran): see $RESULTS/shard-*.log\" >&2\n  \
           exit 1\n\
         fi\n\
         if [ \"$merged\" -eq 0 ] || [ \"$merged\" -eq 3 ]; then\n  \
           \"$BARRAGE\" report \"$RESULTS/merged.json\" -o - || true\n  \
           echo \"barrage dist: merged $# shards into $RESULTS/merged.json (barrage report it -o run.html)\" >&2\n\
         fi\n\
         exit \"$merged\"\n",
    );
    s
}

/// Control characters out of a line that goes into a comment.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `s` as one word for sh: as is when it is plainly safe, else in single quotes.
fn sh_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:@%+=,".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

// ---------------------------------------------------------------------------------------
// Kubernetes.

/// Where the pods see the scenario file (from the ConfigMap) and write their directories.
const SPEC_DIR: &str = "/spec";
const RESULTS_DIR: &str = "/results";
/// A ConfigMap holds at most 1 MiB in all; keep room for its metadata.
const CONFIGMAP_MAX: usize = 1_000_000;
/// The marker lines around a shard's directory (a base64 tar.gz) at the end of its log.
const BEGIN: &str = "=== barrage shard begin ===";
const END: &str = "=== barrage shard end ===";

fn k8s(a: &K8sArgs) -> Result<String, Usage> {
    let p = prepare(&a.shared, Kind::K8s)?;
    let image = match a.image.as_deref().map(str::trim) {
        None | Some("") => {
            return Err(Usage::says(
                "--image",
                "is required: the container image the shards run, with barrage on its PATH \
                 (deploy/k8s/README.md)",
            ))
        }
        Some(i) if i.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            return Err(Usage::value(
                "--image",
                i,
                "an image reference has no spaces",
            ))
        }
        Some(i) => i.to_string(),
    };
    if let Some(ns) = &a.namespace {
        if !is_dns_label(ns, 63) {
            return Err(Usage::value(
                "--namespace",
                ns,
                "a namespace is lower-case letters, digits and '-' (a DNS label)",
            ));
        }
    }
    if let Some(pvc) = &a.results_pvc {
        if !is_dns_subdomain(pvc) {
            return Err(Usage::value(
                "--results-pvc",
                pvc,
                "a claim's name is lower-case letters, digits, '-' and '.'",
            ));
        }
    }
    for s in &a.env_from_secret {
        if !is_dns_subdomain(s) {
            return Err(Usage::value(
                "--env-from-secret",
                s,
                "a Secret's name is lower-case letters, digits, '-' and '.'",
            ));
        }
    }
    let cpu = a.cpu.clone().unwrap_or_else(|| p.threads.to_string());
    if !is_quantity(&cpu) {
        return Err(Usage::value(
            "--cpu",
            &cpu,
            "give a Kubernetes quantity, e.g. 2, 1.5 or 500m",
        ));
    }
    if !is_quantity(&a.memory) {
        return Err(Usage::value(
            "--memory",
            &a.memory,
            "give a Kubernetes quantity, e.g. 512Mi or 2Gi",
        ));
    }
    let now = now_secs();
    let start = match (&a.shared.start_at, &a.shared.start_in) {
        (Some(t), _) => start_at(t, now)?,
        (None, Some(d)) => now + start_in(d)?,
        (None, None) => now + 120,
    };
    let name = match &a.name {
        Some(n) if is_dns_label(n, 52) => n.clone(),
        Some(n) => {
            return Err(Usage::value(
                "--name",
                n,
                "a Job's name here is lower-case letters, digits and '-', at most 52 long",
            ))
        }
        None => format!("barrage-{}-{start}", stem(&p)),
    };
    let files = match &p.spec {
        Spec::File(f) => Some(configmap_files(f)?),
        Spec::Url(_) => None,
    };
    let barrage = a.shared.barrage.clone().unwrap_or_else(|| "barrage".into());
    if is_loopback(&p.host) {
        crate::sys::err_line(if a.host_network {
            format!(
                "note: the target {} is loopback: with --host-network that is the node each \
                 shard runs on",
                p.host
            )
        } else {
            format!(
                "note: the target {} is loopback: in a pod that is the pod itself \
                 (--host-network: the node)",
                p.host
            )
        });
    }
    secrets_note(&p, Kind::K8s, !a.env_from_secret.is_empty());
    let wait = p.length.map(|l| (start - now) + l.as_secs() + 300);
    crate::sys::err_line(format!(
        "barrage dist k8s: the {} shards start at {} ({} s from now): apply the manifest \
         before then (kubectl apply -f FILE)",
        p.shards,
        rfc3339(start),
        start - now
    ));
    Ok(manifest(&Manifest {
        p: &p,
        name: &name,
        namespace: a.namespace.as_deref(),
        image: &image,
        barrage: &barrage,
        cpu: &cpu,
        memory: &a.memory,
        pvc: a.results_pvc.as_deref(),
        secrets: &a.env_from_secret,
        host_network: a.host_network,
        start,
        wait,
        files: files.as_deref(),
    }))
}

/// A file of the ConfigMap: its key, where it is mounted under /spec, its text.
struct CmFile {
    key: String,
    path: String,
    text: String,
}

/// The scenario file and the files it names, for the ConfigMap: each must be text, beside
/// the file or below its folder, and all together within a ConfigMap's size.
fn configmap_files(f: &ScenarioFile) -> Result<Vec<CmFile>, Usage> {
    let mut out = vec![CmFile {
        key: cm_key(&f.name),
        path: f.name.clone(),
        text: f.text.clone(),
    }];
    for (written, file) in &f.extra {
        let rel = Path::new(written);
        let inside = rel
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside {
            return Err(Usage::file(
                &f.shown,
                format!(
                    "{}: {written}: the pods get the files a scenario names from the ConfigMap, \
                     beside it: give a path below the scenario's folder (no '..', not absolute)",
                    f.shown
                ),
            ));
        }
        let text = std::fs::read_to_string(file).map_err(|e| {
            Usage::file(
                &f.shown,
                format!(
                    "{}: {written}: cannot read it as text for the ConfigMap: {e}",
                    f.shown
                ),
            )
        })?;
        let mut key = cm_key(written);
        while out.iter().any(|c| c.key == key) {
            key = format!("x-{key}");
        }
        out.push(CmFile {
            key,
            path: written.replace('\\', "/"),
            text,
        });
    }
    let total: usize = out.iter().map(|c| c.text.len()).sum();
    if total > CONFIGMAP_MAX {
        return Err(Usage::file(
            &f.shown,
            format!(
                "{}: with the files it names it is {total} bytes, more than a ConfigMap holds \
                 (1 MiB): put the data in the image and name it by an absolute path",
                f.shown
            ),
        ));
    }
    Ok(out)
}

/// A ConfigMap key for a file name: letters, digits, `-`, `_` and `.` only.
fn cm_key(name: &str) -> String {
    let k: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if k.trim_matches('.').is_empty() {
        format!("file{k}")
    } else {
        k
    }
}

fn is_dns_label(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(|l| is_dns_label(l, 63))
}

/// A Kubernetes resource quantity: a decimal number and an optional suffix.
fn is_quantity(s: &str) -> bool {
    const SUFFIXES: [&str; 14] = [
        "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P",
    ];
    let num = SUFFIXES
        .iter()
        .find_map(|x| s.strip_suffix(x))
        .or_else(|| s.strip_suffix('E'))
        .unwrap_or(s);
    let mut parts = num.splitn(2, '.');
    let int = parts.next().unwrap_or("");
    let frac = parts.next();
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    !num.is_empty()
        && digits(int)
        && frac.is_none_or(|f| !f.is_empty() && digits(f))
        && !(int.is_empty() && frac.is_none())
        && !num.trim_start_matches(['0', '.']).is_empty()
}

struct Manifest<'a> {
    p: &'a Prepared,
    name: &'a str,
    namespace: Option<&'a str>,
    image: &'a str,
    barrage: &'a str,
    cpu: &'a str,
    memory: &'a str,
    pvc: Option<&'a str>,
    secrets: &'a [String],
    /// `hostNetwork: true` (and `dnsPolicy: ClusterFirstWithHostNet`, so that service names
    /// still resolve).
    host_network: bool,
    start: u64,
    /// How long `kubectl wait` and the Job may take, when the run's length is known.
    wait: Option<u64>,
    files: Option<&'a [CmFile]>,
}

/// The container's entry: runs `$0 "$@"` (barrage and the shard's arguments), passes a stop
/// on, maps the shard's own exit 3 to 0, and prints its --out directory at the end of its
/// log (a base64 tar.gz between marker lines), which the collect commands read back. It
/// holds no `$(` and no `$$`, which Kubernetes would expand in a container's command.
fn k8s_entry(start: u64) -> String {
    format!(
        r#"out= prev=
for a in "$@"; do
  if [ "$prev" = --out ]; then out=$a; fi
  prev=$a
done
now=`date +%s`
if [ "$now" -gt {start} ]; then
  echo "barrage dist: shard $JOB_COMPLETION_INDEX started after the common start ({start}); its first seconds are late" >&2
fi
"$0" "$@" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT HUP
wait "$pid"
code=$?
while kill -0 "$pid" 2>/dev/null; do
  wait "$pid"
  code=$?
done
if [ "$code" -eq 3 ]; then
  echo "barrage dist: shard $JOB_COMPLETION_INDEX: a threshold failed on its own share (exit 3); the merge judges the whole run" >&2
  code=0
fi
if [ -n "$out" ] && [ -d "$out" ]; then
  echo "{BEGIN}"
  tar -czf - -C "`dirname "$out"`" "`basename "$out"`" | base64
  echo "{END}"
fi
exit "$code""#
    )
}

/// Kubernetes expands `$(VAR)` and turns `$$` into `$` in a container's command and args:
/// a `$` before `$` or `(` in the user's words is doubled so that they arrive as written.
fn k8s_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        out.push(c);
        if c == '$' && matches!(it.peek(), Some('$') | Some('(')) {
            out.push('$');
        }
    }
    out
}

fn manifest(m: &Manifest) -> String {
    use Y::*;
    let p = m.p;
    let n = p.shards;
    let s = |x: &str| Str(x.to_string());
    let labels = || {
        Map(vec![
            ("app.kubernetes.io/name".into(), s("barrage")),
            ("app.kubernetes.io/instance".into(), s(m.name)),
        ])
    };
    let metadata = |name: &str| {
        let mut v = vec![("name".to_string(), s(name))];
        if let Some(ns) = m.namespace {
            v.push(("namespace".into(), s(ns)));
        }
        v.push(("labels".into(), labels()));
        Map(v)
    };
    let cm_name = format!("{}-spec", m.name);
    let mut docs = Vec::new();
    let spec_arg = match &p.spec {
        Spec::File(f) => {
            let files = m.files.unwrap_or_default();
            let data = files
                .iter()
                .map(|c| (c.key.clone(), Str(c.text.clone())))
                .collect();
            docs.push(Map(vec![
                ("apiVersion".into(), s("v1")),
                ("kind".into(), s("ConfigMap")),
                ("metadata".into(), metadata(&cm_name)),
                ("data".into(), Map(data)),
            ]));
            format!("{SPEC_DIR}/{}", f.name)
        }
        Spec::Url(u) => u.clone(),
    };
    let mut args = vec![
        s("run"),
        Str(k8s_escape(&spec_arg)),
        s("--shard"),
        Str(format!("auto/{n}")),
        s("--start-at"),
        Str(rfc3339(m.start)),
        s("--out"),
        Str(format!("{RESULTS_DIR}/shard-$(JOB_COMPLETION_INDEX)")),
    ];
    args.extend(p.flags.iter().map(|f| Str(k8s_escape(f))));
    let env = vec![Map(vec![
        ("name".into(), s("JOB_COMPLETION_INDEX")),
        (
            "valueFrom".into(),
            Map(vec![(
                "fieldRef".into(),
                Map(vec![(
                    "fieldPath".into(),
                    s("metadata.annotations['batch.kubernetes.io/job-completion-index']"),
                )]),
            )]),
        ),
    ])];
    let resources = || {
        Map(vec![
            ("cpu".into(), Str(m.cpu.to_string())),
            ("memory".into(), Str(m.memory.to_string())),
        ])
    };
    let mut mounts = Vec::new();
    if m.files.is_some() {
        mounts.push(Map(vec![
            ("name".into(), s("spec")),
            ("mountPath".into(), s(SPEC_DIR)),
            ("readOnly".into(), Bool(true)),
        ]));
    }
    mounts.push(Map(vec![
        ("name".into(), s("results")),
        ("mountPath".into(), s(RESULTS_DIR)),
    ]));
    let mut container = vec![
        ("name".into(), s("barrage")),
        ("image".into(), s(m.image)),
        (
            "command".into(),
            List(vec![
                s("/bin/sh"),
                s("-c"),
                Str(k8s_entry(m.start)),
                Str(k8s_escape(m.barrage)),
            ]),
        ),
        ("args".into(), List(args)),
        ("env".into(), List(env)),
    ];
    if !m.secrets.is_empty() {
        container.push((
            "envFrom".into(),
            List(
                m.secrets
                    .iter()
                    .map(|x| Map(vec![("secretRef".into(), Map(vec![("name".into(), s(x))]))]))
                    .collect(),
            ),
        ));
    }
    container.extend([
        (
            "resources".into(),
            Map(vec![
                ("requests".into(), resources()),
                ("limits".into(), resources()),
            ]),
        ),
        ("volumeMounts".into(), List(mounts)),
        (
            "securityContext".into(),
            Map(vec![
                ("allowPrivilegeEscalation".into(), Bool(false)),
                (
                    "capabilities".into(),
                    Map(vec![("drop".into(), List(vec![s("ALL")]))]),
                ),
            ]),
        ),
    ]);
    let mut volumes = Vec::new();
    if let Some(files) = m.files {
        let items = files
            .iter()
            .map(|c| {
                Map(vec![
                    ("key".into(), Str(c.key.clone())),
                    ("path".into(), Str(c.path.clone())),
                ])
            })
            .collect();
        volumes.push(Map(vec![
            ("name".into(), s("spec")),
            (
                "configMap".into(),
                Map(vec![
                    ("name".into(), Str(cm_name.clone())),
                    ("items".into(), List(items)),
                ]),
            ),
        ]));
    }
    volumes.push(Map(vec![
        ("name".into(), s("results")),
        match m.pvc {
            Some(c) => (
                "persistentVolumeClaim".into(),
                Map(vec![("claimName".into(), s(c))]),
            ),
            None => ("emptyDir".into(), Map(vec![])),
        },
    ]));
    let affinity = Map(vec![(
        "podAntiAffinity".into(),
        Map(vec![(
            "preferredDuringSchedulingIgnoredDuringExecution".into(),
            List(vec![Map(vec![
                ("weight".into(), Int(100)),
                (
                    "podAffinityTerm".into(),
                    Map(vec![
                        (
                            "labelSelector".into(),
                            Map(vec![(
                                "matchLabels".into(),
                                Map(vec![("app.kubernetes.io/instance".into(), s(m.name))]),
                            )]),
                        ),
                        ("topologyKey".into(), s("kubernetes.io/hostname")),
                    ]),
                ),
            ])]),
        )]),
    )]);
    let mut pod_spec = vec![
        ("restartPolicy".into(), s("Never")),
        ("automountServiceAccountToken".into(), Bool(false)),
        ("enableServiceLinks".into(), Bool(false)),
    ];
    if m.host_network {
        pod_spec.extend([
            ("hostNetwork".into(), Bool(true)),
            ("dnsPolicy".into(), s("ClusterFirstWithHostNet")),
        ]);
    }
    pod_spec.extend([
        ("affinity".into(), affinity),
        ("containers".into(), List(vec![Map(container)])),
        ("volumes".into(), List(volumes)),
    ]);
    let pod = Map(vec![
        ("metadata".into(), Map(vec![("labels".into(), labels())])),
        ("spec".into(), Map(pod_spec)),
    ]);
    let mut job_spec = vec![
        ("completionMode".into(), s("Indexed")),
        ("completions".into(), Int(n)),
        ("parallelism".into(), Int(n)),
        ("backoffLimit".into(), Int(0)),
    ];
    if let Some(w) = m.wait {
        job_spec.push(("activeDeadlineSeconds".into(), Int(w)));
    }
    job_spec.push(("template".into(), pod));
    docs.push(Map(vec![
        ("apiVersion".into(), s("batch/v1")),
        ("kind".into(), s("Job")),
        ("metadata".into(), metadata(m.name)),
        ("spec".into(), Map(job_spec)),
    ]));

    let mut out = String::new();
    out.push_str(&format!(
        "# One barrage run as {n} shards: a Kubernetes Indexed Job, generated by barrage dist k8s.\n\
         # The shards start together at {} (--start-at): apply this before then.\n\
         # Commands to run it are at the end.\n",
        rfc3339(m.start)
    ));
    for d in &docs {
        out.push_str("---\n");
        emit(&mut out, d, 0);
    }
    out.push_str(&k8s_commands(m));
    out
}

/// The trailing comment block: apply, wait, collect, merge, clean up.
fn k8s_commands(m: &Manifest) -> String {
    let ns = m.namespace.map_or(String::new(), |n| format!(" -n {n}"));
    let name = m.name;
    let n = m.p.shards;
    let sel = format!("app.kubernetes.io/instance={name}");
    let timeout = match m.wait {
        Some(w) => format!("{w}s"),
        None => "1h".into(),
    };
    let timeout_note = match m.wait {
        Some(_) => "the start, the load and 5 minutes".to_string(),
        None => "raise it if the run is longer than that".to_string(),
    };
    let results = match m.pvc {
        Some(c) => format!(
            "#    Every shard's directory is also on the claim {c} (shard-I under its root)."
        ),
        None => "#    They live in an emptyDir: collect them before the pods are deleted (and \
                 before\n#    the kubelet rotates the logs, at 10 MiB by default: hours of a run)."
            .to_string(),
    };
    let cleanup = match m.files {
        Some(_) => format!("job/{name} configmap/{name}-spec"),
        None => format!("job/{name}"),
    };
    format!(
        "# ---- How to run it ------------------------------------------------------------------\n\
         # 1. Apply, before {start}:\n\
         #      kubectl apply -f FILE.yaml\n\
         # 2. Wait for the {n} shards ({timeout_note}):\n\
         #      kubectl{ns} wait --for=condition=complete job/{name} --timeout={timeout}\n\
         #    backoffLimit is 0: a shard that fails is not retried (a rerun would be another\n\
         #    run, its seconds out of step with the rest); the Job fails (the wait above then\n\
         #    runs to its timeout) and its pods say which shard and why:\n\
         #      kubectl{ns} get pods -l {sel}; kubectl{ns} logs POD\n\
         # 3. Collect each shard's --out directory from the end of its log (a base64 tar.gz\n\
         #    between marker lines) and merge them into one result:\n\
         {results}\n\
         #      mkdir -p {name}\n\
         #      for pod in $(kubectl{ns} get pods -l {sel} -o name); do\n\
         #        kubectl{ns} logs \"$pod\" | awk '/^{END}$/ {{ f = 0 }} f {{ print }} /^{BEGIN}$/ {{ f = 1 }}' \\\n\
         #          | base64 -d | tar -xzf - -C {name}\n\
         #      done\n\
         #      barrage merge {name}/shard-* -o {name}.json   # exit 3: a threshold failed\n\
         # 4. Clean up:\n\
         #      kubectl{ns} delete {cleanup}\n",
        start = rfc3339(m.start),
    )
}

// ---------------------------------------------------------------------------------------
// A small YAML writer: block style, strings plain only when nothing could read them as
// another type, multi-line text as literal blocks (exactly as written) when it can be.

enum Y {
    Str(String),
    Int(u64),
    Bool(bool),
    Map(Vec<(String, Y)>),
    List(Vec<Y>),
}

fn emit(out: &mut String, y: &Y, indent: usize) {
    let pad = " ".repeat(indent);
    match y {
        Y::Map(entries) => {
            for (k, v) in entries {
                out.push_str(&pad);
                out.push_str(&scalar(k));
                out.push(':');
                value_after(out, v, indent, true);
            }
        }
        Y::List(items) => {
            for item in items {
                match item {
                    Y::Map(e) if !e.is_empty() => {
                        let mut inner = String::new();
                        emit(&mut inner, item, indent + 2);
                        out.push_str(&pad);
                        out.push_str("- ");
                        out.push_str(&inner[indent + 2..]);
                    }
                    _ => {
                        out.push_str(&pad);
                        out.push('-');
                        value_after(out, item, indent, false);
                    }
                }
            }
        }
        other => {
            out.push_str(&pad);
            value_after(out, other, indent, false);
        }
    }
}

/// The value after `key:` or `-`, with its line break.
fn value_after(out: &mut String, v: &Y, indent: usize, in_map: bool) {
    match v {
        Y::Map(e) if e.is_empty() => out.push_str(" {}\n"),
        Y::List(l) if l.is_empty() => out.push_str(" []\n"),
        Y::Map(_) => {
            out.push('\n');
            emit(out, v, indent + 2);
        }
        Y::List(_) => {
            out.push('\n');
            // Kubernetes style: a list under a key at the key's indentation.
            emit(out, v, if in_map { indent } else { indent + 2 });
        }
        Y::Int(i) => out.push_str(&format!(" {i}\n")),
        Y::Bool(b) => out.push_str(&format!(" {b}\n")),
        Y::Str(t) => match literal_block(t, indent + 2) {
            Some(block) => {
                out.push(' ');
                out.push_str(&block);
            }
            None => {
                out.push(' ');
                out.push_str(&scalar(t));
                out.push('\n');
            }
        },
    }
}

/// A string as a YAML scalar: plain when it is plainly a string, else JSON-quoted (a JSON
/// string is a YAML double-quoted scalar).
fn scalar(s: &str) -> String {
    const WORDS: [&str; 11] = [
        "y", "n", "yes", "no", "true", "false", "on", "off", "null", "nan", "inf",
    ];
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '/')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c))
        && !WORDS.contains(&s.to_ascii_lowercase().as_str());
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("a string serializes")
    }
}

/// Multi-line text as a literal block (`|`, `|-` or `|+` by its trailing line breaks), its
/// lines at `indent`; `None` when a block could not hold it exactly (control characters, a
/// first line that starts with a space, a single line).
fn literal_block(t: &str, indent: usize) -> Option<String> {
    if !t.contains('\n') || t.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return None;
    }
    if t.starts_with('\u{feff}') {
        return None;
    }
    let body = t.trim_end_matches('\n');
    let trailing = t.len() - body.len();
    let first = body.lines().find(|l| !l.is_empty())?;
    if first.starts_with([' ', '\t']) {
        return None;
    }
    let chomp = match trailing {
        0 => "-",
        1 => "",
        _ => "+",
    };
    let pad = " ".repeat(indent);
    let mut out = format!("|{chomp}\n");
    for line in body.split('\n') {
        if !line.is_empty() {
            out.push_str(&pad);
            out.push_str(line);
        }
        out.push('\n');
    }
    for _ in 1..trailing {
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sh_words_are_quoted_when_they_must_be() {
        assert_eq!(sh_quote("tcp://127.0.0.1:7000"), "tcp://127.0.0.1:7000");
        assert_eq!(sh_quote("-c"), "-c");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_quote("$HOME"), "'$HOME'");
        assert_eq!(sh_quote("p99 < 20ms"), "'p99 < 20ms'");
    }

    #[test]
    fn yaml_scalars_never_change_type() {
        for s in [
            "yes", "No", "true", "null", "2", "1.5", "500m", "-c", "", "a: b", "#x",
        ] {
            assert!(scalar(s).starts_with('"'), "{s}: {}", scalar(s));
        }
        for s in [
            "barrage",
            "batch/v1",
            "/bin/sh",
            "app.kubernetes.io/name",
            "Never",
        ] {
            assert_eq!(scalar(s), s);
        }
        assert_eq!(literal_block("a\n  b\n", 4).unwrap(), "|\n    a\n      b\n");
        assert_eq!(literal_block("a\n\nb", 2).unwrap(), "|-\n  a\n\n  b\n");
        assert_eq!(literal_block("a\nb\n\n", 2).unwrap(), "|+\n  a\n  b\n\n");
        assert!(literal_block(" a\nb\n", 2).is_none());
        assert!(literal_block("a\r\nb\n", 2).is_none());
        assert!(literal_block("one line", 2).is_none());
    }

    #[test]
    fn kubernetes_would_expand_nothing_of_the_users_words() {
        // Kubernetes reads `$$` as `$` and leaves `$` before anything else: `$$$ ` is `$$ `.
        assert_eq!(k8s_escape("a $(X) $$ $y"), "a $$(X) $$$ $y");
        assert_eq!(k8s_escape("$$("), "$$$$(");
        let entry = k8s_entry(1_800_000_000);
        assert!(!entry.contains("$(") && !entry.contains("$$"), "{entry}");
    }

    #[test]
    fn times_and_names() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_795_420_800), "2026-11-23T08:00:00Z");
        assert_eq!(
            barrage_report::series::unix_seconds(&rfc3339(1_795_420_861)),
            Some(1_795_420_861.0)
        );
        assert_eq!(
            start_at("@1795420800", 1_795_420_000).unwrap(),
            1_795_420_800
        );
        assert!(start_at("2026-11-23T08:00:00Z", 1_795_420_800).is_err());
        // Not a real date; further than anyone waits (once a u64 overflow, accepted).
        assert!(start_at("2026-11-31T08:00:00Z", 1_795_420_000).is_err());
        assert!(start_at("@99999999999999999999", 1_795_420_000).is_err());
        assert_eq!(label("Chat Rooms_v2.toml", 24), "chat-rooms-v2-toml");
        assert!(is_dns_label("barrage-chat-1", 52) && !is_dns_label("Barrage", 52));
        for q in ["2", "500m", "1.5", "512Mi", "2Gi"] {
            assert!(is_quantity(q), "{q}");
        }
        for q in ["", "x", "2x", "-1", ".", "0", "1.", "Mi"] {
            assert!(!is_quantity(q), "{q}");
        }
        assert_eq!(cm_key("my chat.toml"), "my_chat.toml");
        let mut names = Vec::new();
        secret_names("a {secret:TOKEN} b {secret:K2} {secret:TOKEN}", &mut names);
        assert_eq!(names, ["TOKEN", "K2"]);
    }
}
