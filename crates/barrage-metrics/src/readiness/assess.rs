//! [`assess`]: the readiness rows of one run, each aspect's figure judged by its rule in
//! [`super`]; the connections row is in [`super::connections`].

use super::connections::{connections, outage};
use super::{
    busy, row, Aspect, Grade, Row, ERRORS_RULE, MEMORY_RULE, MIN_STEADY_SECONDS, PERFORMANCE_RULE,
    RESOURCE_RULE, STABILITY_RULE,
};
use crate::analysis::{AnalysisReport, LeakStatus, Verdict};
use crate::result::RunResult;
use crate::thresholds::ThresholdCheck;

/// The readiness table, in the order performance, stability, resource use, memory
/// management, errors, correctness, connections. `outcomes`: the evaluated thresholds (may be empty).
pub fn assess(
    result: &RunResult,
    analysis: &AnalysisReport,
    outcomes: &[ThresholdCheck],
) -> Vec<Row> {
    vec![
        performance(result, analysis, outcomes),
        stability(result, analysis),
        resource_use(result, analysis),
        memory(analysis),
        errors(result, analysis),
        correctness(result),
        connections(result, analysis),
    ]
}

fn correctness(result: &RunResult) -> Row {
    let c = crate::analysis::correctness(&result.summary.exchanges);
    if c.completed == 0 && c.unexpected_replies == 0 {
        let fig = "no reply arrived".into();
        return row(
            Aspect::Correctness,
            Grade::NotMeasured,
            fig,
            crate::analysis::CORRECTNESS_RULE,
        );
    }
    let g = if c.unexpected_replies == 0 {
        Grade::Pass
    } else if c.framing_suspect {
        Grade::Fail
    } else {
        Grade::Warn
    };
    let mut fig = format!(
        "{} unexpected replies = {:.2} % of {} completed exchanges",
        crate::thousands(c.unexpected_replies),
        c.unexpected_pct,
        crate::thousands(c.completed)
    );
    if c.framing_suspect {
        fig.push_str("; the reply framing (--expect) does not match the server's replies");
    }
    row(
        Aspect::Correctness,
        g,
        fig,
        crate::analysis::CORRECTNESS_RULE,
    )
}

fn performance(result: &RunResult, a: &AnalysisReport, outcomes: &[ThresholdCheck]) -> Row {
    let s = &result.summary;
    let aspect = Aspect::Performance;
    if result.config.mode == "hold" {
        return row(
            aspect,
            Grade::NotMeasured,
            "no load sent: the connections only held (and subscribed)".into(),
            PERFORMANCE_RULE,
        );
    }
    if s.requests == 0 {
        return row(
            aspect,
            Grade::Fail,
            "no exchange completed".into(),
            PERFORMANCE_RULE,
        );
    }
    let perf: Vec<&ThresholdCheck> = outcomes
        .iter()
        .filter(|o| crate::vocabulary::is_performance(&o.metric))
        .collect();
    // The summary's headline rate, labelled with its window when it is the steady state's.
    let rate = crate::figures::headline_rate(result, Some(a));
    let rps = format!(
        "{} req/s{}",
        crate::thousands(rate.rps.round() as u64),
        if rate.steady.is_some() {
            " in the steady state"
        } else {
            ""
        }
    );
    let (mut grade, mut figure) = if perf.is_empty() {
        match measured_latency(result, a) {
            Some(lat) => {
                let ratio = lat.p99 / lat.p50.max(1.0);
                let g = if ratio <= 10.0 {
                    Grade::Pass
                } else {
                    Grade::Warn
                };
                let mut fig = format!(
                    "{rps}, {}p50 {}, p99 {} (p99/p50 = {ratio:.1})",
                    lat.what,
                    duration(lat.p50),
                    duration(lat.p99)
                );
                if let Some((p50, p99)) = lat.replies {
                    fig.push_str(&format!(
                        "; replies p50 {}, p99 {}",
                        duration(p50),
                        duration(p99)
                    ));
                }
                let steps = step_latencies(result);
                if !steps.is_empty() {
                    fig.push_str(&format!("; step p99: {}", steps.join(", ")));
                }
                (g, fig)
            }
            None => (
                Grade::NotMeasured,
                format!(
                    "{rps}; no latency measured (no exchange awaited a reply and no \
                     broadcast delivery was timed)"
                ),
            ),
        }
    } else {
        let failed: Vec<&str> = perf
            .iter()
            .filter(|o| o.passed != Some(true))
            .map(|o| o.expr.as_str())
            .collect();
        if failed.is_empty() {
            (
                Grade::Pass,
                format!("{} of {} thresholds passed", perf.len(), perf.len()),
            )
        } else {
            let fig = format!(
                "{} of {} thresholds failed: {}",
                failed.len(),
                perf.len(),
                failed.join(", ")
            );
            (Grade::Fail, fig)
        }
    };
    let sat = &a.saturation;
    if sat.saturated_s > 0 {
        figure.push_str(&format!(
            "; generator saturated in {} of {} s",
            sat.saturated_s, sat.of_s
        ));
        if sat.own_work_s + sat.server_s + sat.starved_s > 0 {
            figure.push_str(&format!(
                " (by its own work {} s, out of CPU with the server {} s, starved by other \
                 processes {} s)",
                sat.own_work_s, sat.server_s, sat.starved_s
            ));
        }
        if sat.saturated_s * 20 > sat.of_s {
            grade = grade.at_most_warn();
        }
    }
    if let Some(c) = a.contention.as_ref().filter(|c| c.material) {
        figure.push_str(&format!(
            "; other processes used {:.0} % of a core on average under load",
            c.other_avg_pct
        ));
        grade = grade.at_most_warn();
    }
    row(aspect, grade, figure, PERFORMANCE_RULE)
}

/// The latency a run measures, as the performance row reads it.
struct MeasuredLatency {
    /// `""` for the exchanges' own latency, `"deliveries "` for broadcast deliveries.
    what: &'static str,
    p50: f64,
    p99: f64,
    /// The exchanges' latency too, when deliveries lead and some exchanges awaited a reply.
    replies: Option<(f64, f64)>,
}

/// A broadcast scenario measures its deliveries (its messages are fire-and-forget: their
/// exchanges have no reply to time), so their latency leads, by the names `broadcast.p50` and
/// `broadcast.p99`; otherwise the exchanges' (`p50`, `p99`). `None` when neither timed
/// anything: a p50 of "0 µs" would be a figure of nothing.
fn measured_latency(result: &RunResult, a: &AnalysisReport) -> Option<MeasuredLatency> {
    let s = &result.summary;
    let figure = |m| crate::vocabulary::value(result, Some(a), m).unwrap_or(0.0);
    let replies = (s.latency_us.count > 0).then(|| (figure("p50"), figure("p99")));
    let deliveries = s
        .broadcast
        .as_ref()
        .and_then(|b| b.peer_us.as_ref())
        .is_some_and(|l| l.count > 0);
    if deliveries {
        return Some(MeasuredLatency {
            what: "deliveries ",
            p50: figure("broadcast.p50"),
            p99: figure("broadcast.p99"),
            replies,
        });
    }
    replies.map(|(p50, p99)| MeasuredLatency {
        what: "",
        p50,
        p99,
        replies: None,
    })
}

/// A scenario's steps that await a reply, each with its p99 (`login 1.20 ms`): what its users
/// waited for, step by step (the exchanges' p50/p99 mix them). Fire-and-forget steps time only
/// how late they were written and are left out. At most four, then how many more.
fn step_latencies(result: &RunResult) -> Vec<String> {
    const SHOWN: usize = 4;
    let config = &result.config.steps;
    let timed: Vec<String> = result
        .summary
        .steps
        .iter()
        .enumerate()
        .filter(|(i, _)| config.get(*i).is_none_or(|c| c.awaits))
        .filter_map(|(_, s)| {
            let l = s.latency_us.as_ref().filter(|l| l.count > 0)?;
            Some(format!("{} {}", s.name, duration(l.p99 as f64)))
        })
        .collect();
    let more = timed.len().saturating_sub(SHOWN);
    let mut out: Vec<String> = timed.into_iter().take(SHOWN).collect();
    if more > 0 {
        out.push(format!("{more} more"));
    }
    out
}

/// A duration in µs with a unit a reader takes in at a glance: `812 µs`, `3.17 ms`, `3.17 s`.
pub(super) fn duration(us: f64) -> String {
    if us < 999.5 {
        format!("{us:.0} µs")
    } else if us < 999_500.0 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

fn verdict(v: Option<Verdict>) -> &'static str {
    match v {
        Some(Verdict::Unclear) => "unclear (too few or too noisy points to tell)",
        Some(v) => v.as_str(),
        None => "not measured",
    }
}

fn stability(result: &RunResult, a: &AnalysisReport) -> Row {
    let aspect = Aspect::Stability;
    let Some(st) = &a.stability else {
        let fig = format!(
            "not enough steady seconds: fewer than 3 full seconds in the steady state \
             ({MIN_STEADY_SECONDS} needed to judge)"
        );
        return row(aspect, Grade::NotMeasured, fig, STABILITY_RULE);
    };
    let p99 = a.p99_trend.as_ref().map(|t| t.verdict);
    let drift = format!(
        "throughput {} ({:+.1} % over {:.0} s), p99 {}",
        verdict(Some(st.drift.verdict)),
        st.drift.change,
        st.drift.window_s,
        verdict(p99)
    );
    if st.n < MIN_STEADY_SECONDS {
        // A CV of a handful of seconds says little (its 95 % interval of 4 seconds spans 3.7x
        // its value): neither a pass nor a fail.
        let fig = format!(
            "not enough steady seconds: {} of the {MIN_STEADY_SECONDS} needed to judge \
             (CV {:.1} % over them); {drift}",
            st.n, st.cv_pct
        );
        return row(aspect, Grade::NotMeasured, fig, STABILITY_RULE);
    }
    let mut g = match st.cv_pct {
        cv if cv < 5.0 => Grade::Pass,
        cv if cv < 10.0 => Grade::Warn,
        _ => Grade::Fail,
    };
    let drifts = matches!(st.drift.verdict, Verdict::Growing | Verdict::Shrinking);
    if drifts || p99 == Some(Verdict::Growing) {
        g = g.at_most_warn();
    }
    let cv = format!(
        "CV {:.1} %, max deviation {:.1} % over {} s",
        st.cv_pct, st.max_dev_pct, st.n,
    );
    // Uneven, but the generator's machine was busy when the rate dipped: the figure says so,
    // and the server is not failed for it (inconclusive, a warning).
    if g != Grade::Pass {
        if let Some(b) = busy::busy_dips(result, a) {
            let fig = format!(
                "inconclusive: unstable ({cv}), but the generator's machine was busy in {} of \
                 the {} seconds that dipped ({}): re-run on a quieter machine; {drift}",
                b.busy, b.dips, b.why
            );
            return row(aspect, Grade::Warn, fig, STABILITY_RULE);
        }
    }
    row(aspect, g, format!("{cv}; {drift}"), STABILITY_RULE)
}

fn resource_use(result: &RunResult, a: &AnalysisReport) -> Row {
    let aspect = Aspect::ResourceUse;
    let Some(u) = &a.server else {
        return row(
            aspect,
            Grade::NotMeasured,
            "the server was not monitored".into(),
            RESOURCE_RULE,
        );
    };
    let machine = result.environment.cores as u64;
    let cores = match (u.threads_max, machine) {
        (0, 0) => 1,
        (0, m) | (m, 0) => m,
        (t, m) => t.min(m),
    };
    let share = u.cpu_avg_pct / (cores as f64 * 100.0) * 100.0;
    let mut g = match share {
        s if s < 80.0 => Grade::Pass,
        s if s < 95.0 => Grade::Warn,
        _ => Grade::Fail,
    };
    let fds = a.fd_trend.as_ref().map(|t| t.verdict);
    if fds == Some(Verdict::Growing) {
        g = g.at_most_warn();
    }
    let fig = format!(
        "CPU avg {:.0} % of one core under load = {share:.0} % of {cores} usable core(s); fds max {} (beyond the open connections: {})",
        u.cpu_avg_pct,
        u.fds_max,
        verdict(fds)
    );
    row(aspect, g, fig, RESOURCE_RULE)
}

fn memory(a: &AnalysisReport) -> Row {
    let aspect = Aspect::MemoryManagement;
    let Some(l) = &a.leak else {
        return row(
            aspect,
            Grade::NotMeasured,
            "the server was not monitored".into(),
            MEMORY_RULE,
        );
    };
    let g = match (l.verdict, l.recovered) {
        (LeakStatus::Leak, _) => Grade::Fail,
        (LeakStatus::NoLeak, Some(true)) => Grade::Pass,
        _ => Grade::Warn,
    };
    let mut fig = l.reason.clone();
    if let Some(f) = &a.bytes_per_connection {
        fig.push_str(&format!("; {:.1} KiB per connection", f.slope / 1024.0));
    }
    row(aspect, g, fig, MEMORY_RULE)
}

fn errors(result: &RunResult, a: &AnalysisReport) -> Row {
    let aspect = Aspect::Errors;
    let s = &result.summary;
    if result.config.mode == "hold" {
        // No exchange to judge: the connections are what is held, and a broken one (the
        // server dropped it, its keep-alive went unanswered) is the error.
        let n = s.errors.total();
        let fig = if n == 0 {
            "no connection error while holding".to_string()
        } else {
            let classes: Vec<String> = s
                .errors
                .nonzero()
                .map(|(c, k)| format!("{c} {}", crate::thousands(k)))
                .collect();
            format!(
                "{} connection errors while holding ({})",
                crate::thousands(n),
                classes.join(", ")
            )
        };
        let g = if n == 0 { Grade::Pass } else { Grade::Fail };
        return row(aspect, g, fig, ERRORS_RULE);
    }
    let Some(rate) = s.error_rate() else {
        let fig = "no exchange completed or failed".into();
        return row(aspect, Grade::NotMeasured, fig, ERRORS_RULE);
    };
    let errors = s.failed_requests.total();
    let all = s.requests + errors;
    let pct = rate * 100.0;
    let mut g = match pct {
        p if p < 0.1 => Grade::Pass,
        p if p < 1.0 => Grade::Warn,
        _ => Grade::Fail,
    };
    let tr = a.error_rate_trend.as_ref().map(|t| t.verdict);
    if tr == Some(Verdict::Growing) {
        g = g.at_most_warn();
    }
    let mut fig = format!(
        "{pct:.3} % ({} of {})",
        crate::thousands(errors),
        crate::thousands(all)
    );
    // How the error rate moved, when the run was long enough to tell.
    if let Some(v) = tr {
        fig.push_str(&format!("; trend {}", verdict(Some(v))));
    }
    if let Some((secs, from)) = outage(result, a) {
        g = Grade::Fail;
        fig.push_str(&format!(
            "; no connection open for {secs:.0} s of the load, from {from:.0} s (the server went away)"
        ));
    }
    row(aspect, g, fig, ERRORS_RULE)
}
