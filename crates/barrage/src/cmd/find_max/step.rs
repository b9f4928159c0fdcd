//! One step of the search: an ordinary run at one rate (the user's run flags through
//! `config::plan`, the run spine with the engine as its source, the SLOs as thresholds), and what the
//! search needs from it ([`Measured`]): the rates offered, sent and completed, the first broken
//! SLO, and barrage's own state (its CPU over the load, its event loop's lateness).
//!
//! Key decision: barrage's CPU is measured here with `getrusage` between the first and the last
//! load tick (no monitor thread needed), so the saturation rule's CPU share applies to every
//! step; the lateness is the ticks' `lag_us_max`, as the saturation analysis reads it.

use super::record;
use super::search::{self, Measured};
use super::setup::{step_args, Setup, CPU_LIMIT};
use crate::resolve::cli::FindMaxArgs;
use crate::resolve::{config, Resolved};
use crate::run::Signals;
use crate::sinks::output::Outputs;
use barrage_metrics::thresholds::{self, Op};
use barrage_metrics::timeline::Phase;
use barrage_metrics::RunResult;
use barrage_report::find_max::{self as render, Step};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// How a step ended.
pub(super) enum StepEnd {
    Done(Box<Step>),
    /// A signal cut it: its figures are not judged.
    Interrupted,
    /// Nothing could connect: why.
    Unreachable(String),
}

/// One step at `rate`: an ordinary run through the spine, unwatched and without outputs, its
/// SLOs as thresholds.
pub(super) fn run_step(
    a: &FindMaxArgs,
    setup: &Setup,
    rate: f64,
    n: usize,
    argv: &[String],
    signals: &Signals,
) -> anyhow::Result<StepEnd> {
    let (plan, spec, config) = config::plan(&step_args(a, rate))?;
    let spec = config::record(&spec, &plan, a.run.output.secret_body, &a.run.output.redact);
    let threads = plan.threads;
    let target = config.target.clone();
    if !a.run.output.quiet {
        eprintln!(
            "step {n}: offering {} for {:?} after {:?} of warm-up ...",
            render::rate(rate),
            a.step_duration,
            a.step_warmup
        );
    }
    let resolved = Resolved {
        plan,
        spec,
        config,
        watch: None,
        metrics: None,
        thresholds: setup.slos.clone(),
        outputs: Outputs::none(),
        argv: argv.to_vec(),
        insecure: a.run.tls.insecure,
        // The search judges each step by its own rules.
        lenient_exit: true,
    };
    let mut cpu = CpuMeter::default();
    let mut unreachable = None;
    let source = StepRun {
        cpu: &mut cpu,
        unreachable: &mut unreachable,
    };
    let result = crate::run::drive(resolved, source, signals)?.result;
    if let Some(why) = unreachable {
        return Ok(StepEnd::Unreachable(format!(
            "cannot connect to {target}: {why}"
        )));
    }
    // The engine ends a load early only when the stop flag is set.
    if signals.stop.load(Ordering::Relaxed) {
        return Ok(StepEnd::Interrupted);
    }
    let cpu_pct = cpu.pct();
    let measured = measure(&result, rate, cpu_pct, threads);
    let verdict = search::judge(&measured);
    let step = record::step(n, &result, measured, cpu_pct, verdict);
    if !a.run.output.quiet {
        eprintln!("{}", render::step_line(&step));
    }
    Ok(StepEnd::Done(Box::new(step)))
}

/// A step's source: the engine, with barrage's CPU sampled each load second; a target that
/// cannot be reached is the search's to say.
struct StepRun<'a> {
    cpu: &'a mut CpuMeter,
    unreachable: &'a mut Option<String>,
}

impl crate::run::Source for StepRun<'_> {
    /// A step is one of many; the first one's connections show a bad certificate.
    fn preflight(&self) -> bool {
        false
    }

    fn says_errors(&self) -> bool {
        false
    }

    fn start(
        &mut self,
        _: &barrage_engine::Plan,
        _: &AtomicBool,
        _: bool,
    ) -> anyhow::Result<Option<Instant>> {
        Ok(None)
    }

    fn feed(
        self,
        plan: barrage_engine::Plan,
        stop: Arc<AtomicBool>,
        obs: &mut crate::run::Observer<'_>,
    ) -> anyhow::Result<crate::run::Fed> {
        let mut tapped = Tapped { obs, cpu: self.cpu };
        let fed = crate::run::Engine.feed_observed(plan, stop, &mut tapped)?;
        if let crate::run::SourceEnd::Unreachable(why) = &fed.end {
            *self.unreachable = Some(why.clone());
        }
        Ok(fed)
    }
}

/// The run's observer, with the CPU meter sampled on each tick of the load.
struct Tapped<'a, 'b> {
    obs: &'a mut crate::run::Observer<'b>,
    cpu: &'a mut CpuMeter,
}

impl barrage_engine::Observer for Tapped<'_, '_> {
    fn tick(&mut self, tick: &barrage_metrics::Tick, agg: &barrage_metrics::Aggregator) {
        if tick.phase != Phase::Drain {
            self.cpu.sample();
        }
        self.obs.tick(tick, agg);
    }

    fn wants_segments(&self) -> bool {
        self.obs.wants_segments()
    }

    fn segment(&mut self, merged: &barrage_metrics::Delta) {
        self.obs.segment(merged);
    }
}

/// What the search needs from a step's result.
fn measure(r: &RunResult, offered: f64, cpu_pct: Option<f64>, threads: usize) -> Measured {
    use barrage_metrics::error::ErrorClass::{ClosedByPeer, ConnectTimeout, Refused, Reset};
    let broken = r.thresholds.iter().find(|o| o.passed != Some(true));
    let latency_excess_us = broken.and_then(|o| {
        let upper = matches!(o.op, Op::Lt | Op::Le);
        let latency = thresholds::kind_of(&o.metric) == Some(thresholds::Kind::Duration);
        (upper && latency).then_some(o.actual? - o.limit)
    });
    let measured: Vec<_> = r
        .timeseries
        .iter()
        .filter(|t| t.phase == Phase::Measured)
        .collect();
    let late_s = measured
        .iter()
        .filter(|t| t.lag_us_max >= barrage_metrics::analysis::LAG_SATURATED_US)
        .count();
    let secs: f64 = measured.iter().map(|t| t.dt).sum();
    let sent = measured.iter().map(|t| t.sent).sum::<u64>() as f64 / secs.max(1e-9);
    let limit = CPU_LIMIT * threads.max(1) as f64 * 100.0;
    let cpu_limit = cpu_pct.filter(|c| *c >= limit).map(|c| {
        format!(
            "barrage used {c:.0} % CPU, at least {limit:.0} % of its {threads} worker thread(s)"
        )
    });
    Measured {
        offered,
        sent,
        achieved: r.summary.rps.avg,
        broken_slo: broken.map(broke),
        latency_excess_us,
        cpu_limit,
        late_s,
        seconds: measured.len(),
        lag_us_max: measured.iter().map(|t| t.lag_us_max).max().unwrap_or(0),
        connection_errors: [Refused, ConnectTimeout, Reset, ClosedByPeer]
            .iter()
            .map(|c| r.summary.errors.get(*c))
            .sum(),
    }
}

/// An SLO that failed, in a few words: `p99 < 20ms broken: p99 = 31.2 ms`.
fn broke(o: &thresholds::ThresholdCheck) -> String {
    let kind = thresholds::kind_of(&o.metric);
    match (o.actual, kind) {
        (Some(v), Some(k)) => format!("{} broken: {} = {}", o.expr, o.metric, k.format(v)),
        _ => format!("{} broken: {}", o.expr, o.reason),
    }
}

/// barrage's own CPU over the load: process CPU time between the first and the last load tick.
#[derive(Default)]
struct CpuMeter {
    first: Option<(Instant, f64)>,
    last: Option<(Instant, f64)>,
}

impl CpuMeter {
    fn sample(&mut self) {
        let Some(cpu) = crate::sys::process_cpu_s() else {
            return;
        };
        let now = (Instant::now(), cpu);
        if self.first.is_none() {
            self.first = Some(now);
        }
        self.last = Some(now);
    }

    /// % of one core; `None` with fewer than two samples.
    fn pct(&self) -> Option<f64> {
        let ((t0, c0), (t1, c1)) = (self.first?, self.last?);
        let wall = t1.duration_since(t0).as_secs_f64();
        (wall > 0.0).then(|| (c1 - c0) / wall * 100.0)
    }
}
