//! What both launchers check and share: the spec (a scenario file or a URL) and the run's
//! flags checked as `run` and `validate` would, the shard count, the start, names and notes.

use crate::resolve::cli::{RunArgs, Shared};
use crate::sys::rfc3339;
use crate::usage::Usage;
use clap::Parser as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// dist's own flags: given among the run's flags, they are the user's mistake of order.
pub(super) const DIST_FLAGS: [&str; 15] = [
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

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Kind {
    Slurm,
    K8s,
}

/// A scenario file and the files it names (relative to its folder).
pub(super) struct ScenarioFile {
    /// As the user gave it (for messages).
    pub(super) shown: String,
    pub(super) path: PathBuf,
    pub(super) name: String,
    pub(super) text: String,
    /// `users.data`, `protocol.cacert`, `.cert`, `.key`: (the path as written, the file).
    pub(super) extra: Vec<(String, PathBuf)>,
}

pub(super) enum Spec {
    Url(String),
    File(Box<ScenarioFile>),
}

/// The checked input of a launcher.
pub(super) struct Prepared {
    pub(super) shards: u64,
    pub(super) spec: Spec,
    /// The run's flags for every shard (with -t and --no-tui added when missing).
    pub(super) flags: Vec<String>,
    pub(super) threads: u64,
    /// The load's length when it is known: warm-up plus -d (or the file's run.duration).
    pub(super) length: Option<Duration>,
    /// `{secret:NAME}` names the run reads from the environment.
    pub(super) secrets: Vec<String>,
    /// The target host as given (to warn about loopback).
    pub(super) host: String,
}

pub(super) fn prepare(s: &Shared, kind: Kind) -> Result<Prepared, Usage> {
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
    let run = match crate::resolve::cli::Cli::try_parse_from(&argv) {
        Ok(crate::resolve::cli::Cli {
            command: crate::resolve::cli::Command::Run(r),
        }) => r,
        Ok(_) => unreachable!("argv starts with run"),
        Err(e) => return Err(Usage::new("run flags", clap_line(&e))),
    };
    refuse_set_by_dist(&run, kind)?;
    let (spec, file, host) = if crate::resolve::scenario::is_file(&s.spec) {
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
    let host = match &run.file.target_url {
        Some(t) => url_host(t, "--target")?,
        None => host,
    };
    let threads = run.load.threads.or(file.threads).unwrap_or(1);
    // Shard i runs thread shares i x t ..: it owns a connection only when there are more
    // than i x t of them (as `--processes` checks its own).
    // (A --conn-stages ramp's peak is checked by each shard, as it starts.)
    let connections = match &spec {
        Spec::File(_) => Some(run.file.users.unwrap_or(file.users)),
        Spec::Url(_) => run
            .modes
            .conn_stages
            .is_none()
            .then_some(run.load.connections),
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
    if run.load.threads.is_none() {
        // Every shard needs the same -t (the split is by thread shares).
        flags.extend(["-t".to_string(), threads.to_string()]);
    }
    if !run.output.no_tui {
        flags.push("--no-tui".into());
    }
    let warmup = run.load.warmup.or(file.warmup).unwrap_or_default();
    let length = match (&spec, run.load.duration.or(file.duration)) {
        (_, Some(d)) => Some(d + warmup),
        // A scenario lasts until its users are gone.
        (Spec::File(_), None) => None,
        (Spec::Url(_), None) => {
            let own_length = run.load.requests.is_some()
                || run.modes.rate_stages.is_some()
                || run.modes.conn_stages.is_some();
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
pub(super) fn shards(v: Option<&str>) -> Result<u64, Usage> {
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
pub(super) fn refuse_set_by_dist(r: &RunArgs, kind: Kind) -> Result<(), Usage> {
    let results = match kind {
        Kind::Slurm => "RESULTS/merged.json",
        Kind::K8s => "the merged result",
    };
    if r.output.shard.is_some() {
        return Err(Usage::says(
            "--shard",
            "is set by barrage dist for every shard (--shard auto); leave it out",
        ));
    }
    if r.output.start_at.is_some() {
        return Err(Usage::says(
            "--start-at",
            "is a flag of barrage dist: give it before the run's flags",
        ));
    }
    if r.output.out.is_some() {
        let instead = match kind {
            Kind::Slurm => "give barrage dist --results DIR",
            Kind::K8s => "they go to /results (--results-pvc NAME to keep them on a claim)",
        };
        return Err(Usage::says(
            "--out",
            format!("is set by barrage dist, one directory per shard: {instead}"),
        ));
    }
    if r.output.processes.is_some() {
        return Err(Usage::says(
            "--processes",
            "does not go with barrage dist: each shard is one process; give more --shards",
        ));
    }
    let own_files = [
        ("--json", r.output.json.is_some()),
        ("--report", r.output.report.is_some()),
        ("--csv", r.output.csv.is_some()),
        ("--hdr-log", r.output.hdr_log.is_some()),
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
    if r.output.baseline.is_some() {
        return Err(Usage::says(
            "--baseline",
            format!("would judge each shard alone; compare {results}: barrage compare BASE MERGED"),
        ));
    }
    Ok(())
}

/// What a scenario file's `[run]` says that dist needs.
#[derive(Default)]
pub(super) struct FileRun {
    pub(super) threads: Option<u64>,
    /// The file's users (its connections).
    pub(super) users: u64,
    pub(super) duration: Option<Duration>,
    pub(super) warmup: Option<Duration>,
}

/// A scenario file checked as `barrage validate` does, but without resolving its target
/// (a name that may resolve only where the shards run): the file, its settings, and its
/// target's host.
pub(super) fn scenario_file(shown: &str) -> Result<(ScenarioFile, FileRun, String), Usage> {
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
    if let Some(p) = f.protocol.as_ref() {
        for c in [&p.cacert, &p.cert, &p.key].into_iter().flatten() {
            extra.push((c.value.clone(), dir.join(&c.value)));
        }
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
pub(super) fn url_host(raw: &str, flag: &str) -> Result<String, Usage> {
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

pub(super) fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Every `{secret:NAME}` in `text`, once each.
pub(super) fn secret_names(text: &str, into: &mut Vec<String>) {
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

pub(super) fn flag_of(arg: &str) -> &str {
    arg.split_once('=').map_or(arg, |(f, _)| f)
}

/// clap's error about the run's flags in one line (without its usage and tips).
pub(super) fn clap_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("bad flags");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    format!("{first} (barrage run --help lists them)")
}

pub(super) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `--start-at TIME` as whole Unix seconds (rounded up), refused when not in the future.
pub(super) fn start_at(v: &str, now: u64) -> Result<u64, Usage> {
    let secs =
        crate::resolve::start_at::parse(v).map_err(|why| Usage::value("--start-at", v, why))?;
    if secs - now as f64 > crate::resolve::start_at::MAX_AHEAD.as_secs_f64() {
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
pub(super) fn start_in(v: &str) -> Result<u64, Usage> {
    let d = crate::units::positive_duration(v).map_err(|e| Usage::value("--start-in", v, e))?;
    Ok(d.as_secs() + u64::from(d.subsec_nanos() > 0))
}

/// Lower-case letters, digits and `-` from `s` (runs of anything else become one `-`),
/// at most `max` long, no `-` at either end: a DNS label, a job name.
pub(super) fn label(s: &str, max: usize) -> String {
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
pub(super) fn stem(p: &Prepared) -> String {
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
pub(super) fn secrets_note(p: &Prepared, kind: Kind, given: bool) {
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
