//! The verdict part of the text summary: stability, memory (recovery and leak), generator
//! saturation, thresholds and the readiness table. Only what was measured is shown.

use crate::fmt::bytes;
use barrage_metrics::analysis::{LeakStatus, SaturationSummary};
use barrage_metrics::readiness::Grade;
use barrage_metrics::RunResult;

/// The generator-saturation warnings of the steady state, one sentence per cause, without
/// the rule (the text summary leaves it out, the documents append it).
pub(crate) fn saturation_warnings(sat: &SaturationSummary) -> Vec<String> {
    let of = sat.of_s;
    let mut out = Vec::new();
    if sat.own_work_s > 0 {
        out.push(format!(
            "the load generator was saturated by its own work for {} s of {of} s of the steady \
             state; the figures of those seconds describe barrage, not the server",
            sat.own_work_s
        ));
    }
    if sat.server_s > 0 {
        out.push(format!(
            "the load generator and the server ran out of CPU together for {} s of {of} s of \
             the steady state (the machine's cores were full, the server holding most of what \
             barrage did not use); the figures of those seconds describe this machine, not the \
             server's capacity: give them separate cores or machines",
            sat.server_s
        ));
    }
    if sat.starved_s > 0 {
        out.push(format!(
            "the load generator was starved of CPU by other processes for {} s of {of} s of the \
             steady state; the figures of those seconds describe the machine, not the server",
            sat.starved_s
        ));
    }
    let unknown = sat.unknown_s();
    if unknown > 0 {
        out.push(format!(
            "the load generator was the bottleneck for {unknown} s of {of} s of the steady state \
             (its CPU was not sampled: add --monitor to tell its own work from starvation); the \
             figures of those seconds describe barrage, not the server"
        ));
    }
    out
}

/// The saturated seconds outside the steady state, by cause, or `None` when there were none.
pub(crate) fn ramp_saturation(sat: &SaturationSummary) -> Option<String> {
    if sat.ramp_s == 0 {
        return None;
    }
    let mut causes = Vec::new();
    for (n, what) in [
        (sat.ramp_own_work_s, "own work"),
        (sat.ramp_server_s, "out of CPU with the server"),
        (sat.ramp_starved_s, "starved by other processes"),
    ] {
        if n > 0 {
            causes.push(format!("{what} {n} s"));
        }
    }
    let known = sat.ramp_own_work_s + sat.ramp_server_s + sat.ramp_starved_s;
    if known < sat.ramp_s {
        causes.push(format!("not sampled {} s", sat.ramp_s - known));
    }
    Some(format!(
        "the generator also looked saturated in {} s outside the steady state (warm-up, ramp \
         up or ramp down): {}; reported apart, not counted above",
        sat.ramp_s,
        causes.join(", ")
    ))
}

/// Analysis, thresholds and readiness, one line per row; `explain` adds each row's rule.
pub fn verdicts(r: &RunResult, explain: bool) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(a) = &r.analysis {
        if let Some(s) = &a.stability {
            let few = if s.n < barrage_metrics::readiness::MIN_STEADY_SECONDS {
                format!(
                    " (not enough steady seconds to judge: {} needed)",
                    barrage_metrics::readiness::MIN_STEADY_SECONDS
                )
            } else {
                String::new()
            };
            lines.push(format!(
                "Stability     CV {:.1} %, largest deviation {:.1} % over {} steady seconds{few}; drift {} ({:+.1} % over {:.0} s)",
                s.cv_pct, s.max_dev_pct, s.n, s.drift.verdict.as_str(), s.drift.change, s.drift.window_s
            ));
        }
        if let Some(rec) = &a.recovery {
            lines.push(format!(
                "Memory        idle {} -> peak {} under load -> {} after recovery: {}",
                bytes(rec.idle_before_bytes as f64),
                bytes(rec.peak_under_load_bytes as f64),
                bytes(rec.after_recovery_bytes as f64),
                if rec.returned {
                    format!("returned (within {:.0} %)", rec.tolerance_pct)
                } else {
                    "did NOT return to the idle level".to_string()
                }
            ));
        }
        if let Some(l) = &a.leak {
            let word = match l.verdict {
                LeakStatus::Leak => "LEAK",
                LeakStatus::NoLeak => "no leak",
                LeakStatus::Inconclusive => "inconclusive",
            };
            lines.push(format!("Leak          {word}: {}", l.reason));
        }
        if let Some(b) = &a.bytes_per_connection {
            lines.push(format!(
                "Per conn.     {} of server memory per open connection (during the ramp)",
                bytes(b.slope.max(0.0))
            ));
        }
        if let Some(c) = a.correctness.as_ref().filter(|c| c.framing_suspect) {
            lines.push(format!(
                "WARNING       {} unexpected replies = {:.1} % of {} completed exchanges: the reply framing (--expect) does not match what the server sends; latency and throughput count the wrong things",
                c.unexpected_replies, c.unexpected_pct, c.completed
            ));
        }
        // A run that asked for no monitoring has the Machine busy line instead.
        let asked = r.monitor.as_ref().is_some_and(|m| !m.unasked);
        if let Some(c) = a.contention.as_ref().filter(|c| c.material && asked) {
            lines.push(format!(
                "WARNING       other processes used {:.0} % of a core on average (max {:.0} %) while the load ran: the machine was shared",
                c.other_avg_pct, c.other_max_pct
            ));
        }
        for w in saturation_warnings(&a.saturation) {
            lines.push(format!("WARNING       {w}"));
        }
        // Seconds outside the steady state count in no figure: a detail for --explain (the
        // reports show it), not a line every demo ends with.
        if let Some(ramp) = ramp_saturation(&a.saturation).filter(|_| explain) {
            lines.push(format!("Ramp          {ramp}"));
        }
    }
    if !r.thresholds.is_empty() {
        let failed = r
            .thresholds
            .iter()
            .filter(|o| o.passed != Some(true))
            .count();
        lines.push(format!(
            "Thresholds    {} of {} passed",
            r.thresholds.len() - failed,
            r.thresholds.len()
        ));
        for o in &r.thresholds {
            let mark = match o.passed {
                Some(true) => "pass",
                Some(false) => "FAIL",
                None => "FAIL (not measured)",
            };
            lines.push(format!("  {mark:<6} {}: {}", o.expr, o.reason));
        }
    }
    if !r.readiness.is_empty() {
        lines.push(if explain {
            "Readiness".to_string()
        } else {
            "Readiness     (the rules: --explain, or the HTML report)".to_string()
        });
        for row in &r.readiness {
            let g = match row.status {
                Grade::Pass => "pass",
                Grade::Warn => "warn",
                Grade::Fail => "FAIL",
                Grade::NotMeasured => "n/a",
            };
            lines.push(format!(
                "  {:<18} {g:<5} {}",
                row.aspect.as_str(),
                row.figure
            ));
            if explain {
                lines.push(format!("  {:<18}       rule: {}", "", row.rule));
            }
        }
    }
    lines
}

/// The baseline check in the verdict's words: `baseline FAIL (1 of 2 limits: p50 +412.3 %
/// beyond noise, limit 10 %)` or `baseline pass (2 of 2 limits)`. A failed check makes the
/// exit code 3, so the first failed limit is named where the verdict is read.
pub fn baseline_verdict(b: &barrage_metrics::compare::BaselineCheck) -> String {
    let n = b.regressions.len();
    let failed: Vec<&barrage_metrics::compare::Regression> = b.failed().collect();
    let Some(first) = failed.first() else {
        return format!("baseline pass ({n} of {n} limits)");
    };
    let what = if !first.measured() {
        format!("{} cannot be checked", first.metric)
    } else if !first.judged {
        format!("{} cannot be judged: too few seconds", first.metric)
    } else {
        let change = first
            .change_pct
            .map_or("from 0".to_string(), |p| format!("{p:+.1} %"));
        format!(
            "{} {change} beyond noise, limit {} %",
            first.metric, first.limit_pct
        )
    };
    let more = match failed.len() {
        1 => String::new(),
        k => format!(", and {} more", k - 1),
    };
    format!(
        "baseline FAIL ({} of {n} limits regressed: {what}{more})",
        failed.len()
    )
}

/// One `--max-regression` limit as the summary lists it under the verdict.
pub fn regression_line(r: &barrage_metrics::compare::Regression) -> String {
    let limit = format!("limit {}%", r.limit_pct);
    if !r.measured() {
        let missing = if r.reference.is_none() {
            "the baseline"
        } else {
            "this run"
        };
        return format!(
            "regression {}: cannot check, {missing} has no such figure ({limit}) -> FAILED",
            r.metric
        );
    }
    let change = r
        .change_pct
        .map_or("from 0".to_string(), |p| format!("{p:+.1} %"));
    if !r.judged {
        return format!(
            "regression {}: {change}, cannot check: not enough data to judge it (too few \
             seconds, or too few exchanges a second for this percentile; run longer) ({limit}) \
             -> FAILED",
            r.metric
        );
    }
    let noise = if r.significant {
        "beyond noise"
    } else {
        "within noise"
    };
    let verdict = if r.regressed { "REGRESSED" } else { "ok" };
    format!(
        "regression {}: {change} ({noise}, {limit}) -> {verdict}",
        r.metric
    )
}
