//! A run resolved from its flags ([`resolve`]) or from a spec ([`from_spec`]): the plan,
//! the recorded config, what to watch, the thresholds and the outputs, or one `Usage` error.

use crate::resolve::cli::RunArgs;
use crate::resolve::config;
use crate::resolve::watch::WatchPlan;
use crate::sinks::output::Outputs;
use crate::usage::Usage;
use barrage_engine::Plan;
use barrage_engine::Spec;
use barrage_metrics::thresholds::{self, Needs, Threshold};
use barrage_metrics::RunConfig;

/// A run, resolved and checked: nothing left that could be a usage error.
pub struct Resolved {
    pub plan: Plan,
    /// The run as data, as the result records it (see [`config::record`]).
    pub spec: barrage_engine::Spec,
    pub config: RunConfig,
    pub watch: Option<WatchPlan>,
    /// `--server-metrics`: what to scrape while the run goes.
    pub metrics: Option<crate::resolve::watch::MetricsPlan>,
    pub thresholds: Vec<Threshold>,
    pub outputs: Outputs,
    /// The command line as recorded in the result (secrets redacted).
    pub argv: Vec<String>,
    /// `--insecure`: no certificate check, hence no pre-flight handshake.
    pub insecure: bool,
    /// `--lenient-exit` (and a shard of `--processes`, a step of `find-max`): a run that ran
    /// its course exits 0 even when nearly every request failed or a readiness row failed.
    pub lenient_exit: bool,
}

pub fn resolve(a: &RunArgs, argv: Vec<String>) -> Result<Resolved, Usage> {
    let (plan, spec, config) = config::plan(a)?;
    let spec = config::record(&spec, &plan, a.output.secret_body, &a.output.redact);
    let watch = crate::resolve::watch::plan(a, plan.target.addr)?;
    let metrics = crate::resolve::watch::metrics_plan(a)?;
    // A shard of --processes leaves the thresholds to its parent (which has the monitor).
    let judged: &[String] = if a.output.skip_thresholds {
        &[]
    } else {
        &a.watch.threshold
    };
    let thresholds = judged
        .iter()
        .map(|e| thresholds::parse(e).map_err(|e| Usage::new("--threshold", e)))
        .collect::<Result<Vec<_>, _>>()?;
    let names = metrics.as_ref().map(|m| m.names()).unwrap_or_default();
    measurable(
        &thresholds,
        watch.as_ref().is_some_and(WatchPlan::asked),
        a.watch.recovery,
        &names,
    )?;
    // A shard opens only its own connections; a --processes parent none (its children
    // are checked together here, as the machine holds them).
    let mine: u64 = plan.my_shares().iter().map(|s| s.connections).sum();
    if let (Some(set), None) = (&plan.shares, a.output.parent_of) {
        if mine == 0 {
            return Err(idle_shard(set, plan.connections));
        }
    }
    let threads = plan.my_shares().len() as u64;
    let facts = crate::resolve::preflight::Facts {
        connections: if a.output.parent_of.is_some() {
            plan.connections
        } else {
            mine
        },
        processes: a.output.parent_of.unwrap_or(1),
        threads: if a.output.parent_of.is_some() {
            1
        } else {
            threads
        },
        targets: plan.target.addrs(),
        sources: plan.target.sources.len() as u64,
        paced: plan.connect_rate.is_some() || plan.users.is_some(),
        count_flag: match (&plan.users, a.file.users) {
            (Some(u), _) if u.stages.is_some() => "--conn-stages",
            (Some(_), Some(_)) => "--users",
            (Some(_), None) => "users.count",
            (None, _) => "-c/--connections",
        },
        gave_processes: a.output.parent_of.is_some(),
    };
    let items =
        crate::resolve::preflight::check(&facts, &crate::resolve::preflight::Machine::read());
    if let Some(refused) = crate::resolve::preflight::refusal(&items, &facts) {
        return Err(refused);
    }
    if a.output.parent_of.is_none() {
        crate::sys::ensure_fds(
            crate::sys::fds_needed(mine, plan.threads),
            "-c/--connections",
        )?;
        if !a.output.quiet {
            for i in items
                .iter()
                .filter(|i| i.level == crate::resolve::preflight::Level::Warn)
            {
                crate::sys::err_line(format!(
                    "pre-flight: {}: {}; {}",
                    i.what,
                    i.says,
                    i.fix.as_deref().unwrap_or_default()
                ));
            }
        }
    }
    let outputs = crate::resolve::outputs::outputs(a)?;
    Ok(Resolved {
        plan,
        spec,
        config,
        watch,
        metrics,
        thresholds,
        outputs,
        argv: crate::resolve::redact::argv(&argv, &a.output.redact, a.output.secret_body),
        insecure: a.tls.insecure,
        // A shard of --processes, or of --shard: the merge judges the whole run.
        lenient_exit: a.watch.lenient_exit || a.output.skip_thresholds || a.output.shard.is_some(),
    })
}

/// A run given as a spec (the embedded demo): no watch, no threshold, the summary as its
/// only output (and the live line unless `quiet`).
pub fn from_spec(spec: Spec, quiet: bool, argv: Vec<String>) -> Result<Resolved, Usage> {
    let no_tls =
        |_: &Spec, _: &barrage_engine::TlsSpec| Err("give TLS settings on the command line".into());
    let plan = spec
        .plan(&mut barrage_engine::spec::env_secret, &no_tls)
        .map_err(|e| Usage::new("spec", e))?;
    crate::sys::ensure_fds(
        crate::sys::fds_needed(plan.connections, plan.threads),
        "-c/--connections",
    )?;
    let config = config::describe(&spec, &plan, false, None);
    Ok(Resolved {
        plan,
        spec,
        config,
        watch: None,
        metrics: None,
        thresholds: Vec::new(),
        outputs: Outputs::summary(quiet),
        argv,
        insecure: false,
        lenient_exit: false,
    })
}

/// Refuse, before any load, a threshold the run could not measure: a server figure without
/// `--monitor`/`--spawn`, a recovery figure with `--recovery 0`.
fn measurable(
    thresholds: &[Threshold],
    monitored: bool,
    recovery: Option<std::time::Duration>,
    server_metrics: &[String],
) -> Result<(), Usage> {
    for t in thresholds {
        let need = thresholds::needs(&t.metric);
        if need == Needs::ServerMetrics {
            let name = thresholds::server_metric(&t.metric).map_or("", |(n, _)| n);
            if !server_metrics.iter().any(|m| m == name) {
                return Err(Usage::value(
                    "--threshold",
                    format!("'{}'", t.expr),
                    format!(
                        "no --server-metric is named {name}: add --server-metrics URL --server-metric '{name}=SELECTOR'"
                    ),
                ));
            }
            continue;
        }
        if need != Needs::Nothing && !monitored {
            return Err(Usage::value(
                "--threshold",
                format!("'{}'", t.expr),
                format!(
                    "{} is measured on the server; add --monitor PID|auto or --spawn CMD",
                    t.metric
                ),
            ));
        }
        if need == Needs::Recovery && recovery.is_some_and(|r| r.is_zero()) {
            return Err(Usage::value(
                "--threshold",
                format!("'{}'", t.expr),
                format!(
                    "{} needs the recovery window after the load; drop --recovery 0",
                    t.metric
                ),
            ));
        }
    }
    Ok(())
}

/// A shard that owns no connection: connection g goes to thread share g mod (N x t), so
/// shard I (shares I x t ..) owns one only when the run has more than I x t connections.
fn idle_shard(set: &barrage_engine::ShareSet, connections: u64) -> Usage {
    let t = set.run.len().max(1) as u64;
    let n = set.count as u64 / t;
    let i = set.run.first().copied().unwrap_or(0) as u64 / t;
    let useful = connections.div_ceil(t).min(n);
    Usage::says(
        "--shard",
        format!(
            "{i}/{n} owns no connection: the run's {connections} (-c, or users) over {n} \
             shards of -t {t} reach shards 0 to {} only; give at most {useful} shards, or more \
             connections",
            useful.saturating_sub(1)
        ),
    )
}
