//! Readiness: one row per aspect of a server (performance, stability, resource use, memory
//! management, errors), each Pass, Warn, Fail or Not measured, with its figure and its rule.
//!
//! Built only from measured data: an aspect without the data to judge it is `NotMeasured`,
//! never a pass (without monitoring, resource use and memory management are not measured).
//! Every rule is explicit and printed with its row:
//!
//! - **performance**: no completed exchange → Fail. With latency/throughput thresholds
//!   (`p*`, `latency.*`, `connect.p99`, `rps.*`, `requests`, `connections.peak`): all passed →
//!   Pass, else Fail. Without: p99 ≤ 10 × p50 → Pass, else Warn (a long tail, never a Fail
//!   without a user's limit), on the latency the run measures: a broadcast scenario's
//!   deliveries (its messages are fire-and-forget), else the exchanges'; nothing timed → Not
//!   measured. A Pass becomes Warn when the generator was saturated in more
//!   than 5 % of the seconds (the figures may be barrage's limit, not the server's), or when
//!   other processes used more than 20 % of a core on average under load (a shared machine).
//! - **stability**: fewer than [`MIN_STEADY_SECONDS`] full seconds in the steady state → Not
//!   measured ("not enough steady seconds"); else CV of the steady per-second rate < 5 % →
//!   Pass, < 10 % → Warn, else Fail; a Pass becomes Warn when throughput grows or shrinks or
//!   p99 grows (trend rule; an "unclear" trend claims nothing either way). Fail or Warn is
//!   Warn, "inconclusive", when in at least half the steady seconds that dipped more than 5 %
//!   below the mean the generator was saturated or its machine busy (`busy.rs`): a server is
//!   not failed for the noise of the machine that loads it.
//! - **resource use**: server CPU on average < 80 % of its usable cores → Pass, < 95 % → Warn,
//!   else Fail (usable cores: its most threads, at most the machine's cores); a Pass becomes
//!   Warn when its open fds grow beyond the connections barrage holds open (fds that follow
//!   arriving users are not a warning).
//! - **memory management**: no leak and RSS back after the recovery phase → Pass; leak → Fail;
//!   anything else (inconclusive, no recovery phase, not back without growth) → Warn.
//! - **errors**: failed requests / (completed + failed requests) after the warm-up < 0.1 % → Pass, < 1 % → Warn,
//!   else Fail; a Pass becomes Warn when the error rate grows (trend rule).
//! - **correctness**: unexpected replies / completed exchanges: 0 → Pass, ≤ 1 % → Warn, else
//!   Fail (a reply framing that does not match the server is not a pass).
//! - **connections**: the planned connections (users) that were ever ready: all → Pass,
//!   ≥ 99 % → Warn, else Fail; then those open in the steady state ([`steady_open`]): fewer
//!   than 99 % in the typical (median) second → Fail when the run had errors (the server did
//!   not hold them), else at most Warn (closed without an error: `Connection: close`); a Pass
//!   becomes Warn when fewer than 99 % were open in some second.

use crate::analysis::{AnalysisReport, LeakStatus, Verdict};
use crate::result::RunResult;
use crate::thresholds::ThresholdCheck;
use crate::timeline::Phase;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Aspect {
    #[serde(rename = "performance")]
    Performance,
    #[serde(rename = "stability")]
    Stability,
    #[serde(rename = "resource use")]
    ResourceUse,
    #[serde(rename = "memory management")]
    MemoryManagement,
    #[serde(rename = "errors")]
    Errors,
    #[serde(rename = "correctness")]
    Correctness,
    #[serde(rename = "connections")]
    Connections,
}

impl Aspect {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Performance => "performance",
            Self::Stability => "stability",
            Self::ResourceUse => "resource use",
            Self::MemoryManagement => "memory management",
            Self::Errors => "errors",
            Self::Correctness => "correctness",
            Self::Connections => "connections",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grade {
    Pass,
    Warn,
    Fail,
    NotMeasured,
}

impl Grade {
    /// Pass becomes Warn; the others stay.
    fn at_most_warn(self) -> Self {
        if self == Self::Pass {
            Self::Warn
        } else {
            self
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub aspect: Aspect,
    pub status: Grade,
    pub figure: String,
    pub rule: String,
}

pub const PERFORMANCE_RULE: &str = "no completed exchange: Fail; with latency/throughput \
    thresholds: Pass if all pass, else Fail; without: Pass if p99 <= 10 x p50, else Warn, on \
    the latency the run measures (broadcast deliveries when there are any, else the exchanges'; \
    not measured when nothing was timed); Pass \
    becomes Warn if the generator was saturated (for any cause) \
    in more than 5 % of the seconds, or if other processes used more than 20 % of a core on \
    average under load";
pub const STABILITY_RULE: &str = "fewer than 8 full steady seconds: not measured (not enough \
    steady seconds to judge); else CV of the steady per-second rate < 5 %: Pass, < 10 %: Warn, \
    else Fail; Pass becomes Warn if throughput drifts (grows or shrinks by the trend rule) or \
    p99 grows; Fail or Warn is Warn, inconclusive, when in at least half the steady seconds \
    that dipped more than 5 % below the mean the generator was saturated or its machine busy \
    (other processes above 20 % of a core, or its cores at least 90 % busy)";

/// Full seconds of the steady state the stability row needs before it grades anything.
pub const MIN_STEADY_SECONDS: usize = 8;
pub const RESOURCE_RULE: &str = "server CPU average < 80 % of its usable cores (its most \
    threads, at most the machine's cores): Pass, < 95 %: Warn, else Fail; Pass becomes Warn if \
    its open fds grow beyond the connections barrage holds open (trend rule)";
pub const MEMORY_RULE: &str = "no leak and RSS back after the recovery phase: Pass; leak: Fail; \
    otherwise (inconclusive, no recovery phase, not back): Warn";
pub const ERRORS_RULE: &str = "failed requests (failed after sending, or not sent) / (completed + \
    failed) after the warm-up < 0.1 %: Pass, \
    < 1 %: Warn, else Fail; Pass becomes Warn if the error rate grows; a second of the load \
    with no connection open (the server went away) is Fail";

pub const CONNECTIONS_RULE: &str = "planned connections (users) ever ready: all: Pass, >= 99 %: \
    Warn, else Fail; then the steady state (a URL run's from its last connection's first \
    ready to the load's end), open at the end of each full second over the plan: typically \
    (median) < 99 %: Fail when the run had errors (the server did not hold them), else at most \
    Warn (closed without an error, e.g. Connection: close); fewer than 99 % in some second: \
    Pass becomes Warn";

fn row(aspect: Aspect, status: Grade, figure: String, rule: &str) -> Row {
    Row {
        aspect,
        status,
        figure,
        rule: rule.into(),
    }
}

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
fn duration(us: f64) -> String {
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

/// Did the run get the connections it planned: ever ready (each at least once), and open
/// through the steady state.
fn connections(result: &RunResult, a: &AnalysisReport) -> Row {
    let aspect = Aspect::Connections;
    let s = &result.summary;
    let planned = s.connections.target;
    let Some(ramp) = s.ramp.as_ref().filter(|_| planned > 0) else {
        let fig = "not recorded".into();
        return row(aspect, Grade::NotMeasured, fig, CONNECTIONS_RULE);
    };
    let ready = ramp.ready.min(planned);
    if ready < planned {
        // The plan was cut short before every connection was due: not the server's doing.
        // A run stopped after barrage had tried every planned connection was not cut short:
        // what held the rest back is said below (issue 43: 60,000 connections against a
        // server out of open files were blamed on "the run ended early").
        let cut = match result.status {
            crate::result::Status::Completed if result.config.requests.is_some() => {
                Some("the request count (-n) ended the run")
            }
            crate::result::Status::Completed => None,
            _ if s.connections.attempts >= planned => None,
            _ => Some("the run ended early"),
        };
        if let Some(why) = cut {
            let fig = format!(
                "{ready} of {planned} planned ever ready; {why} before every connection was due"
            );
            return row(aspect, Grade::NotMeasured, fig, CONNECTIONS_RULE);
        }
    }
    // Those due to be up, with a second to connect, before the load ended: a ramp
    // (`--connect-rate`, `--conn-stages`, a scenario's arrivals) may still be opening the last
    // ones when the load ends.
    let due = due_by_end(result, a.load_end_s - 1.0).map_or(planned, |d| d.min(planned));
    if due == 0 {
        let fig = format!(
            "{ready} of {planned} planned ever ready; none was due a second before the load ended"
        );
        return row(aspect, Grade::NotMeasured, fig, CONNECTIONS_RULE);
    }
    let pct = 100.0 * ready.min(due) as f64 / due as f64;
    let mut g = if ready >= due {
        Grade::Pass
    } else if pct >= 99.0 {
        Grade::Warn
    } else {
        Grade::Fail
    };
    let mut fig = if due < planned {
        format!("{ready} of {due} due by the load's last second ever ready ({pct:.1} %; {planned} planned)")
    } else {
        format!("{ready} of {planned} planned ever ready ({pct:.1} %)")
    };
    if ready < due {
        let c = &s.connections;
        fig.push_str(&format!("; {} of {} connects failed", c.failed, c.attempts));
        let top = s.errors.nonzero().max_by_key(|(_, n)| *n);
        if let Some((class, n)) = top {
            fig.push_str(&format!(", most as {class} ({n})"));
        }
        if let Some(side) = which_side(s) {
            fig.push_str(&format!(": {side}"));
        }
    }
    if let Some(o) = steady_open(result) {
        fig.push_str(&if o.low_open == o.median_open && o.low_pct == o.median_pct {
            format!(
                "; steady state ({} s): {} open ({:.1} %) at the end of every second",
                o.seconds, o.median_open, o.median_pct
            )
        } else {
            format!(
                "; steady state ({} s): typically {} open ({:.1} %), at least {} ({:.1} %) at {:.0} s",
                o.seconds, o.median_open, o.median_pct, o.low_open, o.low_pct, o.low_at_s
            )
        });
        if o.median_pct < 99.0 {
            // Most of the steady state ran without the connections it planned. Lost to
            // failures (the server closed or reset them): the server did not hold them. Closed
            // without a single error (`Connection: close`, HTTP/1.0): by the protocol's choice.
            if s.errors.total() > 0 {
                g = Grade::Fail;
                fig.push_str("; the server did not hold them");
            } else {
                g = g.at_most_warn();
                fig.push_str("; closed without an error (Connection: close?) and reopened");
            }
        } else if o.low_pct < 99.0 {
            g = g.at_most_warn();
        }
    }
    row(aspect, g, fig, CONNECTIONS_RULE)
}

/// Which side ran out when connections never came up, from how their connects ended: barrage
/// (its own open files or local ports), or the server (connects refused, timed out or still
/// pending at the end: it stopped accepting, as a server out of open files does, its listen
/// backlog full). `None` when the connects say neither.
fn which_side(s: &crate::aggregate::Summary) -> Option<String> {
    use crate::error::ErrorClass as E;
    let (c, e) = (&s.connections, &s.errors);
    let fds = e.get(E::LocalFdExhausted);
    let ports = e.get(E::LocalPortExhausted);
    let pending = c.attempts.saturating_sub(c.succeeded + c.failed);
    let server = e.get(E::Refused) + e.get(E::ConnectTimeout) + pending;
    if fds + ports > server {
        let what = if fds >= ports {
            "open files (ulimit -n; --processes spreads them)"
        } else {
            "local ports (--source-ip adds addresses)"
        };
        return Some(format!("barrage ran out of its own {what}"));
    }
    (server > 0).then(|| {
        format!(
            "the server did not accept them ({} refused, {} timed out, {pending} still \
             pending at the end): the server ran out or fell behind (one out of open files, \
             or with its listen backlog full, stops accepting), not barrage's own limits",
            e.get(E::Refused),
            e.get(E::ConnectTimeout)
        )
    })
}

/// The planned connections open through the steady state ([`steady_open`]): each full
/// second's open count at its end, over what the plan wanted open then.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteadyOpen {
    /// Full seconds judged.
    pub seconds: usize,
    /// The typical second (the lower median of the shares): its open count and share (%).
    pub median_open: u64,
    pub median_pct: f64,
    /// The fewest: its open count, share (%) and the end of its second.
    pub low_open: u64,
    pub low_pct: f64,
    pub low_at_s: f64,
}

/// The connections open in the steady state, the connections row's and `connections.ready`'s
/// figure (issue 42: a server that accepted every connection and at once closed half of them
/// passed, every connection having been ready once). The seconds judged: a scenario's steady
/// state (every user arrived, none departed yet); a URL run's from when its last connection
/// was first ready to the end of the load (its own steady state is where 99 % were open, so it
/// could not show a loss). Each full second counts its open connections at its end against
/// the plan then (`--conn-stages`: its plan at that moment; seconds that plan none are left
/// out). `None` without such a second.
pub fn steady_open(result: &RunResult) -> Option<SteadyOpen> {
    let s = &result.summary;
    let c = &result.config;
    let target = s.connections.target;
    let ramp = s.ramp.as_ref().filter(|_| target > 0)?;
    let steady = crate::analysis::run_steady_state(result);
    let (from, to) = match (&c.users, ramp.all_ready_s) {
        (None, Some(t)) => (t, crate::figures::load_end(&result.timeseries)),
        _ => (steady.from_s, steady.to_s),
    };
    let mut seconds: Vec<(f64, u64, f64)> = result
        .timeseries
        .iter()
        .filter(|t| t.phase == Phase::Measured && t.dt >= 0.999)
        .filter(|t| t.t - t.dt >= from - 1e-9 && t.t <= to + 1e-9)
        .filter_map(|t| {
            let planned = if c.planned_connections.is_empty() {
                target as f64
            } else {
                planned_at(&c.planned_connections, t.t)
                    .floor()
                    .min(target as f64)
            };
            (planned >= 1.0).then(|| (t.t, t.open, (100.0 * t.open as f64 / planned).min(100.0)))
        })
        .collect();
    let low = *seconds.iter().min_by(|a, b| a.2.total_cmp(&b.2))?;
    let n = seconds.len();
    seconds.sort_by(|a, b| a.2.total_cmp(&b.2));
    let mid = seconds[(n - 1) / 2];
    Some(SteadyOpen {
        seconds: n,
        median_open: mid.1,
        median_pct: mid.2,
        low_open: low.1,
        low_pct: low.2,
        low_at_s: low.0,
    })
}

/// Whether the plan wants a connection open through `(from, to]`: always, but for a
/// `--conn-stages` ramp that plans none at some moment of it (a ramp down to 0 on purpose).
fn planned_open(c: &crate::result::RunConfig, from: f64, to: f64) -> bool {
    let p = &c.planned_connections;
    if p.is_empty() {
        return true;
    }
    let inside = p
        .iter()
        .filter(|(t, _)| *t > from && *t < to)
        .map(|&(_, v)| v);
    inside
        .chain([planned_at(p, from), planned_at(p, to)])
        .all(|v| v >= 1.0)
}

/// The connections `--conn-stages` plans at `x` seconds: its points, linear between them.
fn planned_at(p: &[(f64, f64)], x: f64) -> f64 {
    match p.iter().position(|&(pt, _)| pt > x) {
        None => p.last().map_or(0.0, |l| l.1),
        Some(0) => p[0].1,
        Some(i) => {
            let ((t0, v0), (t1, v1)) = (p[i - 1], p[i]);
            v0 + (v1 - v0) * (x - t0) / (t1 - t0).max(1e-9)
        }
    }
}

/// Connections (users) a ramp had due to open by `t` seconds: `--conn-stages` (the most its
/// points reach by then), `--connect-rate` (one every 1/rate s) or a scenario whose last
/// arrival came later (the users due by then, if its arrivals are a constant rate); `None`
/// when every planned connection was due by then.
fn due_by_end(result: &RunResult, t: f64) -> Option<u64> {
    let c = &result.config;
    let t = t.max(0.0);
    if !c.planned_connections.is_empty() {
        let at = |x: f64| planned_at(&c.planned_connections, x);
        let peak = c
            .planned_connections
            .iter()
            .filter(|(pt, _)| *pt <= t)
            .map(|&(_, v)| v)
            .fold(at(t), f64::max);
        return Some(peak.floor() as u64);
    }
    if let Some(u) = &c.users {
        if u.last_arrival_s <= t {
            return None;
        }
        // Arrivals at a constant rate: u.count over last_arrival_s; otherwise unknown.
        let per_s: f64 = u.arrive.strip_suffix("/s")?.parse().ok()?;
        return Some((per_s * t).floor() as u64 + 1);
    }
    if let Some(rate) = c.connect_rate.filter(|r| *r > 0.0) {
        return Some((rate * t).floor() as u64 + 1);
    }
    None
}

/// Seconds of the measured load, after a connection first opened, in which not one
/// connection was open: the server went away (killed, stopped listening), and a closed loop
/// sends nothing to fail meanwhile. Returns their length and when the first began. In a
/// scenario, whose users come and go, only the steady state counts (every user arrived,
/// none departed yet): a second there with no connection open is the server gone.
fn outage(result: &RunResult, a: &AnalysisReport) -> Option<(f64, f64)> {
    let users = result.config.users.is_some();
    let mut opened = false;
    let (mut secs, mut from) = (0.0, None);
    for t in &result.timeseries {
        let steady = t.t - t.dt >= a.steady_from_s - 1e-9 && t.t <= a.steady_to_s + 1e-9;
        if t.open_peak > 0 {
            opened = true;
        } else if opened
            && t.phase == Phase::Measured
            && (!users || steady)
            && planned_open(&result.config, t.t - t.dt, t.t)
        {
            secs += t.dt;
            from.get_or_insert(t.t - t.dt);
        }
    }
    from.map(|f| (secs, f))
}

mod busy;
#[cfg(test)]
mod tests;
