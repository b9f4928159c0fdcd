//! The run spine: every load test runs here, whatever feeds it its seconds.
//!
//! [`run`] reads as the table of contents: watch (spawn, monitor) -> pre-flight (the TLS
//! handshake that can refuse the server before any load) -> what serves the run live -> the
//! files written as it goes -> the start -> the load, from its [`Source`], into the live view
//! -> the server's metrics and the recovery window -> the ending, decided once
//! ([`Ending::of`]) -> the result, assembled in one place ([`assemble`]) and concluded ->
//! outputs. The source is the engine's threads in this process ([`Engine`]), the children of
//! `--processes` (`shard::processes`), or one step of `find-max` (the engine, unwatched).
//!
//! Key decision: a source only produces seconds and says how its load ended; statuses,
//! messages, exit codes, thresholds and outputs are decided here, so a split run and a
//! one-process run end the same way.

mod ending;
mod engine;
mod observer;
mod signals;

pub use ending::{Ending, Seen, SourceEnd};
pub use engine::Engine;
pub(crate) use observer::{finish_web, serve_live, shard_label, stream_header, Observer};
pub(crate) use signals::{recover, Signals};

use crate::resolve::watch::{Watch, WatchPlan};
use crate::resolve::Resolved;
use crate::sys;
use barrage_engine::Plan;
use barrage_metrics::result::Environment;
use barrage_metrics::{Outcome, RunConfig, RunResult, Status};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// Where a run's seconds come from.
pub trait Source {
    /// The watch the run has with this source (the children of `--processes` are watched
    /// with the parent, as the generator).
    fn watch(&self, plan: Option<WatchPlan>) -> Option<WatchPlan> {
        plan
    }

    /// Whether the TLS pre-flight handshake is made here (the children of `--processes`
    /// make their own).
    fn preflight(&self) -> bool {
        true
    }

    /// The `shard` label of `/metrics`.
    fn shard_label(&self, plan: &Plan) -> String {
        shard_label(plan)
    }

    /// Whether a failed ending (nothing could connect, the server never answered) is said
    /// on stderr here (a find-max step's is said by the search).
    fn says_errors(&self) -> bool {
        true
    }

    /// Readies the load; returns its common start, if it has one (the watch's and the
    /// scraper's clocks start at it).
    fn start(
        &mut self,
        plan: &Plan,
        stop: &AtomicBool,
        quiet: bool,
    ) -> anyhow::Result<Option<Instant>>;

    /// Runs the load to its end, feeding `obs` each second.
    fn feed(self, plan: Plan, stop: Arc<AtomicBool>, obs: &mut Observer<'_>)
        -> anyhow::Result<Fed>;
}

/// What a source produced.
pub struct Fed {
    pub end: SourceEnd,
    pub outcome: Outcome,
    /// What the source recorded of the run in place of this process's own (the merged
    /// shards' config, clocks and spec).
    pub recorded: Option<Recorded>,
    /// Said after the ending's message ("2 processes merged").
    pub note: Option<String>,
}

/// A run as its shards recorded it.
pub struct Recorded {
    pub config: RunConfig,
    pub environment: Environment,
    pub spec: Option<serde_json::Value>,
}

/// A finished run: its result and the exit code.
pub struct Finished {
    pub result: RunResult,
    pub code: i32,
}

/// Runs `r` with the seconds of `source` and writes its results; returns the exit code (0
/// completed or stopped by the user, 1 failed, 3 a threshold failed or the baseline
/// regressed, 130 interrupted by a signal).
pub fn run(r: Resolved, source: impl Source) -> anyhow::Result<i32> {
    Ok(drive(r, source, &Signals::install())?.code)
}

/// [`run`] with the process's stop flags installed once for several runs (find-max's
/// steps), returning the result too.
pub fn drive(r: Resolved, mut source: impl Source, signals: &Signals) -> anyhow::Result<Finished> {
    let started_at = sys::rfc3339_now();
    // A spawned server is up (or the run has failed) before the clock starts.
    let mut watch = source
        .watch(r.watch)
        .map(WatchPlan::start)
        .transpose()?
        .flatten();
    let spec = r.spec.to_json();
    if source.preflight() {
        if let Err(why) = preflight(&r.plan, r.insecure, &signals.stop) {
            let nothing = Outcome::nothing_measured(
                r.plan.timeline(),
                r.plan.connections,
                r.plan.latency_basis(),
            );
            let result = assemble(
                Ending {
                    status: Status::Failed,
                    message: Some(why),
                    code: 1,
                },
                r.argv,
                started_at,
                (r.config, sys::environment(), Some(spec)),
                nothing,
            );
            let code = r.outputs.refused(&result)?;
            return Ok(Finished { result, code });
        }
    }
    let mut outputs = r.outputs;
    let (prom, web) = serve_live(
        &outputs,
        &started_at,
        &r.config,
        &r.argv,
        source.shard_label(&r.plan),
    )?;
    // The files last: a port that cannot be bound leaves no --out directory behind.
    outputs.start_files(&stream_header(
        &r.argv,
        &started_at,
        &r.config,
        spec.clone(),
        &r.plan,
        &r.thresholds,
        Watch::asked(watch.as_ref()),
    ))?;
    // A common start (--start-at, a shard's, the children's): the watch's and the scraper's
    // clocks start at it.
    let starts = source.start(&r.plan, &signals.stop, outputs.quiet())?;
    if let (Some(w), Some(at)) = (&mut watch, starts) {
        w.run_starts_at(at);
    }
    let live = outputs.live(&r.plan, &signals.stop);
    // The wall-clock time of the run's t = 0, which stamps the points --influx pushes.
    let t0 = starts.map_or_else(std::time::SystemTime::now, |at| {
        std::time::SystemTime::now() + at.saturating_duration_since(Instant::now())
    });
    let tags = || crate::sinks::influx::RunTags {
        run: started_at.clone(),
        target: r.config.target.clone(),
        shard: source.shard_label(&r.plan),
    };
    let influx = outputs
        .influx
        .take()
        .map(|t| crate::sinks::influx::Influx::start(t, tags(), t0));
    let otlp = outputs
        .otlp
        .take()
        .map(|t| crate::sinks::otlp::Otlp::start(t, tags(), t0));
    let statsd = outputs
        .statsd
        .take()
        .map(crate::sinks::statsd::Statsd::start);
    let scraper = r
        .metrics
        .map(|m| m.start(starts.unwrap_or_else(Instant::now)));
    let mut observer = Observer::new(
        &live,
        Watch::asked(watch.as_ref()),
        outputs.recorders(),
        observer::Served {
            prom: prom.as_ref(),
            web: web.as_ref(),
            influx: influx.as_ref(),
            otlp: otlp.as_ref(),
            statsd: statsd.as_ref(),
        },
        scraper.as_ref(),
        &signals.stop,
    );
    let source_says = source.says_errors();
    let fed = source.feed(r.plan, signals.stop.clone(), &mut observer)?;
    let out_failed = observer.out_failed;
    if let Some(i) = influx {
        i.finish();
    }
    if let Some(s) = statsd {
        s.finish();
    }
    if let Some(o) = otlp {
        o.finish();
    }
    // The server's metrics up to the end of the load, with a last scrape before a spawned
    // server is stopped (after the recovery window there would be nothing left to read).
    let server_metrics = scraper
        .map(barrage_monitor::Scraper::stop)
        .unwrap_or_default();
    let target = r.config.target.clone();
    let ending = Ending::of(
        fed.end,
        &fed.outcome,
        Seen {
            user_stop: live.keys().is_some_and(|k| k.user_stopped()) && !signals.signalled(),
            out_failed,
            note: fed.note.as_deref(),
            target: &target,
            say: source_says,
            lenient: r.lenient_exit,
        },
    );
    let recovery_s = watch.as_ref().map(Watch::recovery_s).filter(|r| *r > 0.0);
    let watched = watch.map(|w| recover(w, &live, signals));
    live.finish();
    if let Some(p) = prom {
        p.stop();
    }
    let recorded = match fed.recorded {
        Some(rec) => (rec.config, rec.environment, rec.spec),
        None => (r.config, sys::environment(), Some(spec)),
    };
    let code = ending.code;
    let mut result = assemble(ending, r.argv, started_at, recorded, fed.outcome);
    (result.monitor, result.spawn) = watched.map_or((None, None), |(m, s)| (Some(m), s));
    result.server_metrics = server_metrics;
    result.conclude(&r.thresholds, recovery_s);
    // Without --threshold, the readiness rows of what the server got wrong are the gate.
    let gate = (code == 0 && r.thresholds.is_empty() && !r.lenient_exit)
        .then(|| {
            barrage_metrics::failure::readiness_failed(
                &result.readiness,
                &result.summary.connections,
            )
        })
        .flatten();
    let code = if gate.is_some() { 3 } else { code };
    outputs.judge_baseline(&mut result)?;
    finish_web(web, &result);
    let code = outputs.finish(&result, code)?;
    if let Some(line) = gate.filter(|_| source_says) {
        sys::err_line(format_args!(
            "error: {target}: {line} (exit 3; --threshold sets your own bar, --lenient-exit \
             exits 0)"
        ));
    }
    Ok(Finished { result, code })
}

/// The one place a run's result is put together: how it ended, what was asked (the command
/// line, the config, the spec), where it ran and what was measured.
pub fn assemble(
    ending: Ending,
    command_line: Vec<String>,
    started_at: String,
    (config, environment, spec): (RunConfig, Environment, Option<serde_json::Value>),
    outcome: Outcome,
) -> RunResult {
    let mut result = RunResult::new(
        ending.status,
        ending.message,
        command_line,
        started_at,
        config,
        environment,
        outcome,
    );
    result.spec = spec;
    result
}

/// One TLS handshake before the load (unless `--insecure`): a certificate that fails
/// verification stops the run here, with one error line, instead of failing every connection.
/// A target that cannot be reached passes: the run itself reports that.
fn preflight(plan: &Plan, insecure: bool, stop: &AtomicBool) -> Result<(), String> {
    let Some(tls) = plan.tls.as_ref().filter(|_| !insecure) else {
        return Ok(());
    };
    let plain = match plan.target.url.split_once("://") {
        Some(("wss", _)) => "ws",
        Some(("grpcs", _)) => "grpc",
        _ => "http",
    };
    let (addr, via) = match &plan.target.proxy {
        Some(p) => (p.addr, Some(&p.connect[..])),
        None => (plan.target.addr, None),
    };
    crate::probe::tls::preflight(addr, via, tls, plain, plan.connect_timeout, stop).map_err(|why| {
        let msg = format!("{}: {why}", plan.target.url);
        crate::sys::err_line(format_args!("error: {msg}"));
        msg
    })
}
