//! find-max's record (`barrage.find-max/1`: every step with its summary and SLO outcomes, and
//! the result) and its renderings: the text table with the verdict line, JSON, Markdown, and
//! an HTML page (`find_max_html.rs`: the report's style and charts, self-contained).
//!
//! The binary's `cmd/find_max` runs the search and fills a [`Record`]; everything a person or
//! a program reads of it is rendered here, as a run's result is by the other formats.

use crate::fmt::{duration_us, real};
use barrage_metrics::thresholds::ThresholdCheck;
use barrage_metrics::Summary;
use serde::Serialize;

pub const SCHEMA: &str = "barrage.find-max/1";

/// One step as recorded.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub step: usize,
    /// Offered (open-loop) rate, per second.
    pub offered: f64,
    /// Completed exchanges per second, measured window.
    pub achieved: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    /// Share of exchanges that did not complete (`errors.rate`); `None` when nothing ran.
    pub error_rate: Option<f64>,
    /// Measured seconds in which barrage's event loop ran 10 ms or more late, of `seconds`.
    pub late_s: usize,
    pub seconds: usize,
    /// Seconds the run's saturation analysis flagged (CPU, lag or a growing backlog).
    pub saturated_s: usize,
    /// barrage's own CPU over the load, % of one core.
    pub generator_cpu_pct: Option<f64>,
    pub verdict: Verdict,
    pub slos: Vec<ThresholdCheck>,
    pub summary: Summary,
    /// The step's run as data (`barrage_engine::Spec`, as a run result records it).
    pub spec: Option<serde_json::Value>,
}

/// What the search concluded.
#[derive(Clone, Debug, Serialize)]
pub struct Conclusion {
    pub end: End,
    /// Highest offered rate that met every SLO.
    pub max_ok: Option<f64>,
    /// Lowest offered rate that broke an SLO, and why.
    pub first_bad: Option<f64>,
    pub why: Option<String>,
    /// The verdict in one line, as printed.
    pub verdict: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Record {
    pub schema: &'static str,
    pub command_line: Vec<String>,
    pub started_at: String,
    pub target: String,
    pub slos: Vec<String>,
    pub bounds: Bounds,
    pub step_duration_s: f64,
    pub step_warmup_s: f64,
    pub connections: u64,
    pub steps: Vec<Step>,
    pub result: Conclusion,
}

/// The search's bounds and shape (resolved from the flags).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Bounds {
    /// First offered rate, per second.
    pub start: f64,
    /// Highest rate ever offered.
    pub max_rate: f64,
    /// Most steps run.
    pub max_steps: usize,
    /// Factor between steps until the first failure (> 1).
    pub growth: f64,
    /// Stop bisecting when (lowest failing - highest passing) / highest passing is at most this.
    pub precision: f64,
}

/// Lowest rate the search goes down to when even the first step fails.
pub const MIN_RATE: f64 = 1.0;
/// A step's judgement.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", content = "why", rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    /// The server broke an SLO (or did not complete the offered load): why.
    Fail(String),
    /// A latency SLO broke by no more than barrage's own event loop was late: the breach may
    /// be barrage's (or its machine's) doing, so the rate is run once more before anything is
    /// concluded.
    Suspect(String),
    /// barrage could not offer the rate: why. Nothing is concluded about the server.
    GeneratorLimit(String),
}

/// Why the search stopped.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// The knee is between the highest passing and the lowest failing rate, within precision.
    Found,
    /// Every step passed up to `--max-rate`: the server's limit is above it.
    MaxRate,
    /// `--max-steps` ran out before the precision was reached.
    MaxSteps,
    /// barrage was the limit: the server's limit is above the highest passing rate.
    GeneratorLimit,
    /// Even the lowest rate tried failed.
    NothingPassed,
    /// Stopped by a signal: what was found so far.
    Interrupted,
    /// The server stopped accepting connections (after earlier steps had measured it).
    Unreachable,
}

/// `2,000/s`.
pub fn rate(r: f64) -> String {
    format!("{}/s", real(r))
}

pub fn verdict(
    end: &End,
    ok: Option<f64>,
    bad: Option<(f64, &str)>,
    limit: Option<&(f64, String)>,
    b: &Bounds,
) -> String {
    let ok_s = ok.map_or("no rate".to_string(), rate);
    let broke = |(r, why): (f64, &str)| format!("{} broke it: {why}", rate(r));
    match end {
        End::Found => format!(
            "max {} met every SLO; {}",
            ok_s,
            bad.map(broke).unwrap_or_default()
        ),
        End::MaxRate => format!(
            "every step met the SLOs up to --max-rate {}: the server's limit is higher",
            rate(b.max_rate)
        ),
        End::MaxSteps => format!(
            "--max-steps ({}) ran out: {} met every SLO{}",
            b.max_steps,
            ok_s,
            bad.map(|x| format!("; {}", broke(x))).unwrap_or_default()
        ),
        End::GeneratorLimit => {
            let (r, why) = limit.map_or((0.0, ""), |(r, w)| (*r, w.as_str()));
            format!(
                "barrage itself was the limit at {} ({why}): not a knee of the server; {} met \
                 every SLO, the server's limit is at least that (rerun with more --threads or \
                 from another machine)",
                rate(r),
                ok_s
            )
        }
        End::NothingPassed => format!(
            "no rate met every SLO, down to {}; {}",
            rate(MIN_RATE),
            bad.map(broke).unwrap_or_default()
        ),
        End::Unreachable => {
            let (r, why) = limit.map_or((0.0, ""), |(r, w)| (*r, w.as_str()));
            format!(
                "the server stopped accepting connections at {}: {why}; before that {} met \
                 every SLO",
                rate(r),
                ok_s
            )
        }
        End::Interrupted => format!(
            "interrupted: so far {} met every SLO{}",
            ok_s,
            bad.map(|x| format!("; {}", broke(x))).unwrap_or_default()
        ),
    }
}

/// One step as printed while the search runs.
pub fn step_line(s: &Step) -> String {
    format!(
        "step {}: offered {}, achieved {}, p99 {}, errors {}: {}",
        s.step,
        rate(s.offered),
        rate(s.achieved),
        duration_us(s.p99_us as f64),
        errors(s.error_rate),
        verdict_word(&s.verdict)
    )
}

fn errors(rate: Option<f64>) -> String {
    rate.map_or("n/a".into(), |e| format!("{:.2} %", e * 100.0))
}

fn verdict_word(v: &Verdict) -> String {
    match v {
        Verdict::Pass => "ok".into(),
        Verdict::Fail(why) => format!("FAIL ({why})"),
        Verdict::Suspect(why) => format!("RETRY ({why})"),
        Verdict::GeneratorLimit(why) => format!("GENERATOR LIMIT ({why})"),
    }
}

pub(crate) const HEAD: [&str; 8] = [
    "step", "offered", "achieved", "p50", "p99", "errors", "gen. CPU", "verdict",
];

pub(crate) fn rows(r: &Record) -> Vec<[String; 8]> {
    r.steps
        .iter()
        .map(|s| {
            [
                s.step.to_string(),
                rate(s.offered),
                rate(s.achieved),
                duration_us(s.p50_us as f64),
                duration_us(s.p99_us as f64),
                errors(s.error_rate),
                s.generator_cpu_pct
                    .map_or("n/a".into(), |c| format!("{c:.0} %")),
                verdict_word(&s.verdict),
            ]
        })
        .collect()
}

/// The text table (steps in the order run) and the verdict line.
pub fn text(r: &Record) -> String {
    let rows = rows(r);
    let width = |i: usize| {
        rows.iter()
            .map(|row| row[i].chars().count())
            .chain([HEAD[i].len()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..8).map(width).collect();
    let line = |cells: Vec<&str>| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == 7 {
                l.push_str(c);
            } else {
                l.push_str(&format!("{c:>w$}  ", w = widths[i]));
            }
        }
        l.trim_end().to_string() + "\n"
    };
    let mut out = String::from("\n");
    out.push_str(&line(HEAD.to_vec()));
    for row in &rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out.push_str(&format!("\nverdict: {}", r.result.verdict));
    out
}

pub fn json(r: &Record) -> serde_json::Result<String> {
    Ok(serde_json::to_string_pretty(r)? + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds() -> Bounds {
        Bounds {
            start: 100.0,
            max_rate: 1e6,
            max_steps: 12,
            growth: 2.0,
            precision: 0.05,
        }
    }

    #[test]
    fn the_verdict_names_the_max_the_first_failure_and_why() {
        let v = verdict(
            &End::Found,
            Some(1_900.0),
            Some((2_000.0, "p99 < 20ms: p99 = 31 ms")),
            None,
            &bounds(),
        );
        assert_eq!(
            v,
            "max 1,900/s met every SLO; 2,000/s broke it: p99 < 20ms: p99 = 31 ms"
        );
    }

    #[test]
    fn a_generator_limit_is_said_not_reported_as_a_knee() {
        let limit = (6_400.0, "barrage used 99 % CPU".to_string());
        let v = verdict(
            &End::GeneratorLimit,
            Some(3_200.0),
            None,
            Some(&limit),
            &bounds(),
        );
        assert!(
            v.starts_with(
                "barrage itself was the limit at 6,400/s (barrage used 99 % CPU): not a knee"
            ),
            "{v}"
        );
        assert!(v.contains("3,200/s met every SLO"), "{v}");
    }
}
