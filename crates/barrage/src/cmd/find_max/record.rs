//! Filling find-max's [`Record`] from the steps run and the search (its renderings are
//! `barrage_report::find_max`'s).

use super::search::{Bounds, End, Measured, Search, Verdict};
use crate::resolve::cli::FindMaxArgs;
use anyhow::Context as _;
use barrage_metrics::thresholds::Threshold;
use barrage_metrics::RunResult;
use barrage_report::find_max::{verdict, Conclusion, Record, Step, SCHEMA};

/// One step as recorded.
pub fn step(n: usize, r: &RunResult, m: Measured, cpu_pct: Option<f64>, verdict: Verdict) -> Step {
    Step {
        step: n,
        offered: m.offered,
        achieved: m.achieved,
        p50_us: r.summary.latency_us.p50,
        p99_us: r.summary.latency_us.p99,
        error_rate: r.summary.error_rate(),
        late_s: m.late_s,
        seconds: m.seconds,
        saturated_s: r.analysis.as_ref().map_or(0, |a| a.saturation.saturated_s),
        generator_cpu_pct: cpu_pct,
        verdict,
        slos: r.thresholds.clone(),
        summary: r.summary.clone(),
        spec: r.spec.clone(),
    }
}

/// The search's record: its setup, every step, and what it concluded.
#[allow(clippy::too_many_arguments)]
pub fn record(
    command_line: Vec<String>,
    started_at: String,
    a: &FindMaxArgs,
    bounds: &Bounds,
    slos: &[Threshold],
    steps: Vec<Step>,
    search: &Search,
    end: End,
) -> Record {
    let max_ok = search.best_pass();
    let bad = search.first_fail();
    let limit = search.generator_limit().map(|(r, w)| (r, w.to_string()));
    let last = search.steps.last().map(|(r, v)| match v {
        Verdict::Fail(w) => (*r, w.clone()),
        _ => (*r, String::new()),
    });
    let why = match (&end, &limit) {
        (End::GeneratorLimit, Some((_, w))) => Some(w.clone()),
        (End::Unreachable, _) => last.as_ref().map(|(_, w)| w.clone()),
        _ => bad.map(|(_, w)| w.to_string()),
    };
    let cut = match end {
        End::Unreachable => last.as_ref(),
        _ => limit.as_ref(),
    };
    let verdict = verdict(&end, max_ok, bad, cut, bounds);
    Record {
        schema: SCHEMA,
        command_line,
        started_at,
        target: a.run.target.clone(),
        slos: slos.iter().map(|t| t.expr.clone()).collect(),
        bounds: *bounds,
        step_duration_s: a.step_duration.as_secs_f64(),
        step_warmup_s: a.step_warmup.as_secs_f64(),
        connections: a.run.load.connections,
        steps,
        result: Conclusion {
            end,
            max_ok,
            first_bad: bad.map(|(r, _)| r),
            why,
            verdict,
        },
    }
}

/// Writes an output file whole, naming it on failure, and says on stderr that it did, as every
/// command does (`wrote knee.html (61.6 KiB)`).
pub fn write(path: &str, text: &str) -> anyhow::Result<()> {
    let p = std::path::Path::new(path);
    barrage_report::write_whole(p, |w| w.write_all(text.as_bytes()))
        .with_context(|| format!("cannot write {path}"))?;
    crate::sinks::outfile::announce(p);
    Ok(())
}
