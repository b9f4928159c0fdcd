//! What watches a run as it goes: the live view, the files written as it goes, `/metrics`,
//! the live page, `--influx`, `--otlp` and `--statsd`, fed a second at a time by whatever source runs
//! the load.

use crate::resolve::watch::Watch;
use crate::sinks::output::Live;
use crate::sys;
use barrage_engine::Plan;
use barrage_metrics::RunResult;
use std::sync::atomic::{AtomicBool, Ordering};

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
                    "duration_s": config.duration_s,
                    "warmup_s": config.warmup_s,
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

/// What serves or pushes the run while it goes: `--prometheus`, `--web`, `--influx`,
/// `--otlp`, `--statsd`.
#[derive(Clone, Copy, Default)]
pub(crate) struct Served<'a> {
    pub prom: Option<&'a crate::sinks::prom::Exporter>,
    pub web: Option<&'a crate::sinks::web::Web>,
    pub influx: Option<&'a crate::sinks::influx::Influx>,
    pub otlp: Option<&'a crate::sinks::otlp::Otlp>,
    pub statsd: Option<&'a crate::sinks::statsd::Statsd>,
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
    influx: Option<&'a crate::sinks::influx::Influx>,
    otlp: Option<&'a crate::sinks::otlp::Otlp>,
    statsd: Option<&'a crate::sinks::statsd::Statsd>,
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
        outs: Served<'a>,
        scraper: Option<&'a barrage_monitor::Scraper>,
        stop: &'a AtomicBool,
    ) -> Observer<'a> {
        let Served {
            prom,
            web,
            influx,
            otlp,
            statsd,
        } = outs;
        let mut observer = Observer {
            live,
            watch,
            files,
            prom,
            web,
            influx,
            otlp,
            statsd,
            scraper,
            stop,
            out_failed: false,
            baseline_written: false,
        };
        observer.write_baseline();
        observer
    }

    /// The monitor's idle baseline into the stream, once, as soon as the monitor has it.
    fn write_baseline(&mut self) {
        if self.baseline_written {
            return;
        }
        if let Some(line) = self.watch.and_then(Watch::stream_baseline) {
            self.files.monitor(&line);
            self.baseline_written = true;
        }
    }
}

/// Which shard of a split run this process is, (I, N); `None` for a whole run.
pub(crate) fn shard_of(plan: &Plan) -> Option<(usize, usize)> {
    let set = plan.shares.as_ref()?;
    let t = set.run.len().max(1);
    Some((set.run.first().copied().unwrap_or(0) / t, set.count / t))
}

/// The `shard` label: I of a split run ("0" for a whole run).
pub(crate) fn shard_label(plan: &Plan) -> String {
    shard_of(plan).map_or("0".into(), |(i, _)| i.to_string())
}

impl barrage_engine::Observer for Observer<'_> {
    fn tick(&mut self, tick: &barrage_metrics::Tick, agg: &barrage_metrics::Aggregator) {
        self.write_baseline();
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
        if let Some(i) = self.influx {
            i.tick(tick);
        }
        if let Some(s) = self.statsd {
            s.tick(tick);
        }
        if let Some(o) = self.otlp {
            o.tick(tick);
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
