//! `barrage run`: one load test from arguments to written results.
//!
//! `run` reads as the table of contents: resolve (every usage check) -> pre-flight (the TLS
//! handshake that can refuse the server before any load) -> watch (spawn, monitor) -> engine
//! (with the live view) -> recovery window -> outputs. Each step is a named function or
//! module; a refused pre-flight is its own typed path, not an engine outcome.

use crate::resolve;
use crate::resolve::cli::RunArgs;
use crate::resolve::watch::{Watch, WatchPlan};
use crate::sinks::output::Live;
use crate::sys;
use barrage_engine::{End, Plan};
use barrage_metrics::{MonitorSeries, Outcome, RunResult, SpawnRecord, Status};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Run the test; returns the exit code (0 completed or stopped by the user, 1 failed, 3 a
/// threshold failed, 130 interrupted by a signal).
pub fn run(a: &RunArgs, argv: Vec<String>) -> anyhow::Result<i32> {
    if let Some(n) = crate::shard::processes::wanted(a)? {
        return crate::shard::processes::run(a, argv, n as usize);
    }
    let r = if crate::resolve::scenario::is_file(&a.target) {
        crate::resolve::scenario::resolve(a, argv)?
    } else {
        resolve::resolve(a, argv)?
    };
    run_resolved(r)
}

/// Run a resolved test (from the command line, or a spec: the demo).
pub fn run_resolved(r: resolve::Resolved) -> anyhow::Result<i32> {
    let signals = Signals::install();
    let started_at = sys::rfc3339_now();
    // A spawned server is up (or the run has failed) before the clock starts.
    let mut watch = r.watch.map(WatchPlan::start).transpose()?;
    let spec = r.spec.to_json();
    if let Err(refused) = preflight(&r.plan, r.insecure, &signals.stop) {
        let mut result = refused.record(&r.plan, r.argv, started_at, r.config);
        result.spec = Some(spec);
        return r.outputs.refused(&result);
    }
    let mut outputs = r.outputs;
    let (prom, web) = serve_live(
        &outputs,
        &started_at,
        &r.config,
        &r.argv,
        shard_label(&r.plan),
    )?;
    // The files last: a port that cannot be bound leaves no --out directory behind.
    outputs.start_files(&stream_header(
        &r.argv,
        &started_at,
        &r.config,
        spec.clone(),
        &r.plan,
        &r.thresholds,
        watch.as_ref(),
    ))?;
    // A common start (--start-at, a shard's): said and counted down; the watch's and the
    // scraper's clocks start at it.
    let mut starts = std::time::Instant::now();
    if let barrage_engine::Clock::At { unix_ns } = r.plan.clock {
        crate::resolve::start_at::wait(unix_ns, &signals.stop, outputs.quiet());
        let ahead = unix_ns.saturating_sub(crate::resolve::start_at::now_ns());
        starts = std::time::Instant::now() + std::time::Duration::from_nanos(ahead);
        if let Some(w) = &mut watch {
            w.run_starts_at(starts);
        }
    }
    let live = outputs.live(&r.plan, &signals.stop);
    let scraper = r.metrics.map(|m| m.start(starts));
    let mut observer = Observer::new(
        &live,
        watch.as_ref(),
        outputs.recorders(),
        prom.as_ref(),
        web.as_ref(),
        scraper.as_ref(),
        &signals.stop,
    );
    let out = barrage_engine::run_observed(r.plan, signals.stop.clone(), &mut observer)?;
    let out_failed = observer.out_failed;
    // The server's metrics up to the end of the load, with a last scrape before a spawned
    // server is stopped (after the recovery window there would be nothing left to read).
    let server_metrics = scraper
        .map(barrage_monitor::Scraper::stop)
        .unwrap_or_default();
    let mut end = Ending::of(out.end, &out.outcome, &live, &signals, &r.config.target);
    if out_failed {
        end = Ending {
            status: Status::Failed,
            message: Some("--out: a second could not be written; the load was stopped".into()),
            code: 1,
        };
    }
    let recovery_s = watch.as_ref().map(Watch::recovery_s);
    let watched = watch.map(|w| recover(w, &live, &signals));
    live.finish();
    if let Some(p) = prom {
        p.stop();
    }
    let mut result = RunResult::new(
        end.status,
        end.message,
        r.argv,
        started_at,
        r.config,
        sys::environment(),
        out.outcome,
    );
    (result.monitor, result.spawn) = watched.map_or((None, None), |(m, s)| (Some(m), s));
    result.server_metrics = server_metrics;
    result.spec = Some(spec);
    result.conclude(&r.thresholds, recovery_s);
    finish_web(web, &result);
    outputs.finish(&result, end.code)
}

/// Starts what serves the run while it goes: `--prometheus` and `--web` (each said on stderr,
/// even with -q: with port 0 that is the only way to learn the port).
pub(crate) fn serve_live(
    outputs: &crate::sinks::output::Outputs,
    started_at: &str,
    config: &barrage_metrics::RunConfig,
    argv: &[String],
    shard: String,
) -> anyhow::Result<(
    Option<crate::sinks::prom::Exporter>,
    Option<crate::sinks::web::Web>,
)> {
    let prom = outputs
        .prometheus
        .map(|addr| {
            crate::sinks::prom::Exporter::start(
                addr,
                crate::sinks::prom::RunLabels {
                    run: started_at.to_string(),
                    target: config.target.clone(),
                    shard,
                    steps: config.steps.iter().map(|s| s.name.clone()).collect(),
                },
            )
        })
        .transpose()?;
    if let Some(p) = &prom {
        crate::sys::err_line(format_args!(
            "barrage: metrics on http://{}/metrics",
            p.addr()
        ));
    }
    let web = outputs
        .web
        .map(|addr| {
            crate::sinks::web::Web::start(
                addr,
                serde_json::json!({
                    "target": config.target,
                    "started_at": started_at,
                    "command_line": argv,
                }),
            )
        })
        .transpose()?;
    if let Some(w) = &web {
        crate::sys::err_line(format_args!("barrage: live page on http://{}/", w.addr()));
    }
    Ok((prom, web))
}

/// The live page's last state: the run's text summary.
pub(crate) fn finish_web(web: Option<crate::sinks::web::Web>, result: &RunResult) {
    if let Some(w) = web {
        let mut text = Vec::new();
        let _ = barrage_report::Format::Text
            .renderer()
            .render(result, &mut text);
        w.finish(String::from_utf8_lossy(&text).into_owned());
    }
}

/// What watches the run as it goes: the live view, and the files written as it goes. Fed by
/// the engine's coordinator, or by the parent of `--processes` with its children's merged
/// seconds.
pub(crate) struct Observer<'a> {
    live: &'a Live,
    watch: Option<&'a Watch>,
    files: &'a mut crate::sinks::recorders::Recorders,
    prom: Option<&'a crate::sinks::prom::Exporter>,
    web: Option<&'a crate::sinks::web::Web>,
    scraper: Option<&'a barrage_monitor::Scraper>,
    stop: &'a AtomicBool,
    /// The durable stream failed and stopped the load.
    pub out_failed: bool,
    /// The monitor's baseline is in the stream (it comes before any later sample).
    baseline_written: bool,
}

/// The header of the run's durable stream (`--out DIR/run.json`).
pub(crate) fn stream_header(
    argv: &[String],
    started_at: &str,
    config: &barrage_metrics::RunConfig,
    spec: serde_json::Value,
    plan: &Plan,
    thresholds: &[barrage_metrics::thresholds::Threshold],
    watch: Option<&Watch>,
) -> barrage_report::stream::Header {
    barrage_report::stream::Header {
        schema: barrage_report::stream::SCHEMA.into(),
        command_line: argv.to_vec(),
        started_at: started_at.to_string(),
        config: config.clone(),
        environment: sys::environment(),
        spec: Some(spec),
        timeline: plan.timeline(),
        latency_basis: plan.latency_basis(),
        connections: plan.connections,
        thresholds: thresholds.iter().map(|t| t.expr.clone()).collect(),
        monitor: watch.map(Watch::stream_header),
        shard: shard_of(plan),
    }
}

impl<'a> Observer<'a> {
    /// The observer of a run about to start; the monitor's idle baseline (the series' t = 0)
    /// goes into the stream now if it is there already, else with the first second.
    pub(crate) fn new(
        live: &'a Live,
        watch: Option<&'a Watch>,
        files: &'a mut crate::sinks::recorders::Recorders,
        prom: Option<&'a crate::sinks::prom::Exporter>,
        web: Option<&'a crate::sinks::web::Web>,
        scraper: Option<&'a barrage_monitor::Scraper>,
        stop: &'a AtomicBool,
    ) -> Observer<'a> {
        let mut baseline_written = false;
        if let Some(line) = watch.and_then(Watch::stream_baseline) {
            files.monitor(&line);
            baseline_written = true;
        }
        Observer {
            live,
            watch,
            files,
            prom,
            web,
            scraper,
            stop,
            out_failed: false,
            baseline_written,
        }
    }
}

/// Which shard of a split run this process is, (I, N); `None` for a whole run.
fn shard_of(plan: &Plan) -> Option<(usize, usize)> {
    let set = plan.shares.as_ref()?;
    let t = set.run.len().max(1);
    Some((set.run.first().copied().unwrap_or(0) / t, set.count / t))
}

/// The `shard` label: I of a split run ("0" for a whole run).
fn shard_label(plan: &Plan) -> String {
    shard_of(plan).map_or("0".into(), |(i, _)| i.to_string())
}

impl barrage_engine::Observer for Observer<'_> {
    fn tick(&mut self, tick: &barrage_metrics::Tick, agg: &barrage_metrics::Aggregator) {
        if !self.baseline_written {
            if let Some(line) = self.watch.and_then(Watch::stream_baseline) {
                self.files.monitor(&line);
                self.baseline_written = true;
            }
        }
        if let Some(line) = self.watch.and_then(Watch::stream_line) {
            self.files.monitor(&line);
        }
        self.files.tick(tick);
        let server = self.watch.and_then(Watch::latest_server);
        let metrics = self.scraper.map(|s| s.latest()).unwrap_or_default();
        if let Some(p) = self.prom {
            p.tick(tick, server.as_ref().map(|s| (s.cpu_pct, s.rss_bytes)));
            p.server_metrics(&metrics);
        }
        if let Some(w) = self.web {
            let net = self.watch.and_then(Watch::latest_net);
            w.tick(tick, server.as_ref(), net.as_ref(), &metrics);
        }
        self.live.update(tick, agg, server)
    }

    fn wants_segments(&self) -> bool {
        self.files.wants_segments() || self.prom.is_some()
    }

    /// A second the durable stream cannot write stops the load (the run must not go on
    /// blind); what was recorded is kept and the other outputs are still written.
    fn segment(&mut self, merged: &barrage_metrics::Delta) {
        if let Some(p) = self.prom {
            p.segment(merged);
        }
        if !self.files.segment(merged) {
            self.out_failed = true;
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}

/// The run's stop flags. `stop` is set by SIGINT/SIGTERM/SIGHUP and by the dashboard's `q`;
/// `signalled` by the signals only (a `q` is a user stop, not an interrupt).
pub(crate) struct Signals {
    pub stop: Arc<AtomicBool>,
    signalled: Arc<AtomicBool>,
}

impl Signals {
    pub(crate) fn install() -> Signals {
        let stop = sys::stop_on_signals();
        let signalled = Arc::new(AtomicBool::new(false));
        for sig in sys::STOP_SIGNALS {
            if sys::ignored(sig) {
                continue; // left ignored (nohup), as stop_on_signals leaves it
            }
            let _ = signal_hook::flag::register(sig, Arc::clone(&signalled));
        }
        Signals { stop, signalled }
    }

    pub(crate) fn signalled(&self) -> bool {
        self.signalled.load(Ordering::Relaxed)
    }
}

/// The pre-flight refused the server before any load (its certificate failed verification).
struct Refused(String);

impl Refused {
    /// The result of a run that never started: its settings and why, nothing measured.
    fn record(
        self,
        plan: &Plan,
        argv: Vec<String>,
        started_at: String,
        c: barrage_metrics::RunConfig,
    ) -> RunResult {
        let nothing =
            Outcome::nothing_measured(plan.timeline(), plan.connections, plan.latency_basis());
        RunResult::new(
            Status::Failed,
            Some(self.0),
            argv,
            started_at,
            c,
            sys::environment(),
            nothing,
        )
    }
}

/// One TLS handshake before the load (unless `--insecure`): a certificate that fails
/// verification stops the run here, with one error line, instead of failing every connection.
/// A target that cannot be reached passes: the run itself reports that.
fn preflight(plan: &Plan, insecure: bool, stop: &AtomicBool) -> Result<(), Refused> {
    let Some(tls) = plan.tls.as_ref().filter(|_| !insecure) else {
        return Ok(());
    };
    crate::resolve::tls::preflight(plan.target.addr, tls, plan.connect_timeout, stop).map_err(
        |why| {
            let msg = format!("{}: {why}", plan.target.url);
            crate::sys::err_line(format_args!("error: {msg}"));
            Refused(msg)
        },
    )
}

/// How the load ended, as the result's status and message and the exit code.
struct Ending {
    status: Status,
    message: Option<String>,
    code: i32,
}

impl Ending {
    fn of(end: End, outcome: &Outcome, live: &Live, signals: &Signals, target: &str) -> Ending {
        let user_stop = live.keys().is_some_and(|k| k.user_stopped()) && !signals.signalled();
        let t = &outcome.summary.totals;
        // Requests went out and not one byte came back: the server accepted and never
        // answered. Nothing was measured, and saying so beats a summary of zeros with exit 0.
        // (Scenario runs may send without awaiting anything: their steps are judged instead.)
        let silent = t.sent > 0
            && t.completed == 0
            && t.bytes_read == 0
            && outcome.summary.steps.is_empty()
            && outcome.summary.broadcast.is_none();
        let (status, message, code) = match end {
            End::Completed if silent => {
                let msg = format!(
                    "{target} never answered: {} requests sent, not a byte came back",
                    t.sent
                );
                crate::sys::err_line(format_args!("error: {msg}"));
                (Status::Failed, Some(msg), 1)
            }
            End::Completed => (Status::Completed, None, 0),
            // `q` in the dashboard: a normal end, by the usual exit rules.
            End::Interrupted if user_stop => {
                let at = barrage_metrics::figures::load_end(&outcome.timeseries);
                let msg = format!("stopped by the user at {at:.1} s");
                (Status::Stopped, Some(msg), 0)
            }
            End::Interrupted => (
                Status::Interrupted,
                Some("interrupted by a signal".to_string()),
                130,
            ),
            End::Unreachable(why) => {
                let msg = format!("cannot connect to {target}: {why}");
                crate::sys::err_line(format_args!("error: {msg}"));
                (Status::Failed, Some(msg), 1)
            }
        };
        Ending {
            status,
            message,
            code,
        }
    }
}

/// The recovery window, then the monitor's series. It runs after a user stop too; a signal,
/// Ctrl-C or one more `q` cuts it.
pub(crate) fn recover(
    w: Watch,
    live: &Live,
    signals: &Signals,
) -> (MonitorSeries, Option<SpawnRecord>) {
    let keys = live.keys();
    let quits_before = keys.as_ref().map_or(0, |k| k.quits());
    let cut = || {
        signals.signalled()
            || match &keys {
                Some(k) => k.skip_recovery(quits_before),
                None => signals.stop.load(Ordering::Relaxed),
            }
    };
    live.recovering();
    w.finish(cut, live.silent())
}
