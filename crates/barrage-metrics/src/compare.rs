//! Comparison of runs: the core figures side by side, each difference marked as significant
//! or within the runs' own noise, and the regression check behind `--baseline`.
//!
//! Key decision: a difference is judged against the runs' own measured variability, their
//! per-second series: every full second is one observation (its rate, its own p50/p90/p99/p999,
//! a CPU sample), and two runs differ when their trimmed means differ beyond what their seconds
//! scatter (`stats::between_runs`, Yuen's test at 95 %, allowing for seconds that wander
//! together). No fixed floor stands in for drift the runs did not show (a 50 % floor called a
//! 24 % slower protocol "within noise"). The rule for every figure is written down in [`RULES`]
//! so that a report can say why it marked what it marked. A figure with too few observations
//! (fewer than five seconds, or seconds with too few exchanges for their p999) is
//! [`Mark::Unknown`], "not enough data", not a guess. The first run is the reference; every
//! other run is compared with it alone, and settings that make the comparison moot (another
//! target, protocol, mode or connection count) are listed in [`Comparison::mismatches`].

mod noise;
mod record;
mod stats;

pub use noise::{Options, DEFAULT_NOISE_FLOOR};
pub use record::{BaselineCheck, Better, Regression, Unit};

use noise::{judge, Noise};

use crate::result::RunResult;
use serde::{Deserialize, Serialize};

/// The compared figures, in display order (names as in `--threshold`): the figures of
/// [`crate::vocabulary::FIGURES`] that `compare` shows.
pub fn metrics() -> Vec<&'static str> {
    crate::vocabulary::compared_figures()
        .map(|(f, _)| f.name)
        .collect()
}

/// How each figure's significance is decided, per figure group (metric pattern, rule).
pub const RULES: [(&str, &str); 9] = [
    (
        "rps.avg",
        "on the per-second rates of the full measured seconds (at least 5 in each run, else \
         ?): Yuen's test at 95 % on the log scale, the 20 %-trimmed means differ by more than \
         t x their standard error from the winsorized spread of the seconds, allowing for \
         seconds that wander together (from 10 s on); no fixed floor",
    ),
    (
        "rps.peak",
        "the peaks differ by more than t(95 %) x sqrt(sd_A^2 + sd_B^2 + 2 d^2) of the \
         per-second rates, d = the larger sd (a peak is one second; at least 5 in each run)",
    ),
    (
        "p50 p90 p99 p999",
        "the per-second p50/p90/p99/p999 differ between runs as for rps.avg, counting only \
         seconds with at least 5 exchanges beyond the percentile (p99: 500 in the second, \
         p999: 5,000; at least 5 such seconds in each run, else ? not enough data), and the \
         95 % order-statistic bands of the percentile on each run's histogram do not overlap",
    ),
    (
        "latency.max",
        "one exchange: information only (i), never marked significant and not a \
         --max-regression limit; identical runs differ in it by chance (judge p99, p999)",
    ),
    (
        "errors.rate",
        "two-proportion z-test (95 %) on failed / (completed + failed) requests",
    ),
    (
        "connections.peak",
        "set by the plan, no sampling noise: any difference counts",
    ),
    (
        "server.cpu.avg server.rss.max generator.cpu.avg",
        "cpu: as rps.avg, on the monitor samples under load (the server's, barrage's); \
         rss.max: as rps.peak, on the RSS samples under load",
    ),
    (
        "server.cpu_per_req generator.cpu_per_req",
        "CPU time per completed exchange (mean CPU under load / rps.avg); as rps.avg, on each \
         full second's CPU / requests",
    ),
    (
        "machine.cpu.avg",
        "busy share of all cores under load (the server, barrage and everything else); as \
         rps.avg, on the host samples",
    ),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    /// Larger than both runs' noise.
    Significant,
    /// Within the noise.
    Noise,
    /// Not enough data in one of the runs to know its noise (or the figure is missing).
    Unknown,
    /// Shown for information, never judged: one observation (`latency.max`), which identical
    /// runs differ in by chance.
    Info,
}

impl Mark {
    /// `*` significant, `~` within noise, `?` unknown, `i` information only.
    pub fn symbol(self) -> &'static str {
        match self {
            Mark::Significant => "*",
            Mark::Noise => "~",
            Mark::Unknown => "?",
            Mark::Info => "i",
        }
    }
}

/// One run's value of one figure, and how it differs from the reference run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// `None` when the run does not have this figure (e.g. no server monitoring).
    pub value: Option<f64>,
    /// `value − reference`; `None` for the reference itself or when either value is missing.
    pub delta: Option<f64>,
    /// `delta / reference · 100`; also `None` when the reference is 0.
    pub delta_pct: Option<f64>,
    /// `None` for the reference run.
    pub mark: Option<Mark>,
    /// Whether the change goes the bad way (`None` without a delta or when it is 0).
    pub worse: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricRow {
    pub metric: String,
    pub unit: Unit,
    pub better: Better,
    /// One per run, the reference first.
    pub cells: Vec<Cell>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub runs: usize,
    /// Only the figures that at least one run has.
    pub rows: Vec<MetricRow>,
    /// Settings in which a run differs from the reference: its figures then measure another
    /// test, not a change of the server.
    #[serde(default)]
    pub mismatches: Vec<Mismatch>,
}

/// One setting that is not the same in every run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    /// `target`, `protocol`, `mode` or `connections`.
    pub setting: String,
    /// One per run, the reference first.
    pub values: Vec<String>,
}

/// The settings of `runs` that differ from the first run's (see [`Mismatch`]).
pub fn mismatches(runs: &[RunResult]) -> Vec<Mismatch> {
    type Setting = fn(&RunResult) -> String;
    let settings: [(&str, Setting); 4] = [
        ("target", |r| r.config.target.clone()),
        ("protocol", |r| r.config.protocol.clone()),
        ("mode", |r| r.config.mode.clone()),
        ("connections", |r| r.config.connections.to_string()),
    ];
    settings
        .iter()
        .filter_map(|(setting, get)| {
            let values: Vec<String> = runs.iter().map(get).collect();
            values.iter().any(|v| *v != values[0]).then(|| Mismatch {
                setting: (*setting).to_string(),
                values,
            })
        })
        .collect()
}

impl Comparison {
    pub fn row(&self, metric: &str) -> Option<&MetricRow> {
        self.rows.iter().find(|r| r.metric == metric)
    }
}

/// Unit and good direction of a compared figure ([`metrics`]).
pub fn describe(metric: &str) -> Option<(Unit, Better)> {
    let c = crate::vocabulary::find(metric)?.compared.as_ref()?;
    Some((c.unit, c.better))
}

/// Compare `runs` (the first is the reference) on every figure of [`metrics`] that at least
/// one of them has, with the default [`Options`].
pub fn compare(runs: &[RunResult]) -> Comparison {
    compare_with(runs, &Options::default())
}

/// [`compare`] with explicit [`Options`].
pub fn compare_with(runs: &[RunResult], o: &Options) -> Comparison {
    let noise: Vec<Noise> = runs.iter().map(Noise::of).collect();
    let mut rows = Vec::new();
    for metric in metrics() {
        let (unit, better) = describe(metric).expect("every listed metric is described");
        let values: Vec<Option<f64>> = noise.iter().map(|n| n.value(metric)).collect();
        if values.iter().all(Option::is_none) {
            continue;
        }
        let cells = values
            .iter()
            .enumerate()
            .map(|(i, &value)| {
                if i == 0 {
                    return Cell {
                        value,
                        delta: None,
                        delta_pct: None,
                        mark: None,
                        worse: None,
                    };
                }
                cell(
                    metric,
                    better,
                    (&noise[0], values[0]),
                    (&noise[i], value),
                    o,
                )
            })
            .collect();
        rows.push(MetricRow {
            metric: metric.to_string(),
            unit,
            better,
            cells,
        });
    }
    Comparison {
        runs: runs.len(),
        rows,
        mismatches: mismatches(runs),
    }
}

fn cell(
    metric: &str,
    better: Better,
    a: (&Noise, Option<f64>),
    b: (&Noise, Option<f64>),
    o: &Options,
) -> Cell {
    let (Some(va), Some(vb)) = (a.1, b.1) else {
        return Cell {
            value: b.1,
            delta: None,
            delta_pct: None,
            mark: Some(Mark::Unknown),
            worse: None,
        };
    };
    let delta = vb - va;
    let mark = match judge(metric, a.0, va, b.0, vb, o) {
        _ if noise::informational(metric) => Mark::Info,
        _ if delta == 0.0 => Mark::Noise,
        Some(true) => Mark::Significant,
        Some(false) => Mark::Noise,
        None => Mark::Unknown,
    };
    Cell {
        value: Some(vb),
        delta: Some(delta),
        delta_pct: (va != 0.0).then(|| delta / va * 100.0),
        mark: Some(mark),
        worse: (delta != 0.0).then(|| (delta > 0.0) == (better == Better::Lower)),
    }
}

/// Check `candidate` against `reference` for every `(metric, pct)` limit (see
/// [`parse_limits`]).
pub fn regressions(
    reference: &RunResult,
    candidate: &RunResult,
    limits: &[(String, f64)],
    o: &Options,
) -> Vec<Regression> {
    let c = compare_with(&[reference.clone(), candidate.clone()], o);
    limits
        .iter()
        .map(|(metric, limit)| {
            let (row_ref, row_cand) = c
                .row(metric)
                .map_or((None, None), |r| (Some(&r.cells[0]), Some(&r.cells[1])));
            let reference = row_ref.and_then(|x| x.value);
            let candidate = row_cand.and_then(|x| x.value);
            let mark = row_cand.and_then(|x| x.mark);
            let significant = mark == Some(Mark::Significant);
            let better = describe(metric).map_or(Better::Lower, |d| d.1);
            let worse_pct = match (reference, candidate) {
                (Some(r), Some(v)) if r != 0.0 => {
                    let pct = (v - r) / r.abs() * 100.0;
                    Some(if better == Better::Lower { pct } else { -pct })
                }
                (Some(_), Some(0.0)) => Some(0.0),
                (Some(_), Some(v)) => Some(if (v > 0.0) == (better == Better::Lower) {
                    f64::INFINITY
                } else {
                    f64::NEG_INFINITY
                }),
                _ => None,
            };
            let change_pct = match (reference, candidate) {
                (Some(r), Some(v)) if r != 0.0 => Some((v - r) / r.abs() * 100.0),
                (Some(_), Some(0.0)) => Some(0.0),
                _ => None,
            };
            Regression {
                metric: metric.clone(),
                reference,
                candidate,
                change_pct,
                limit_pct: *limit,
                regressed: significant && worse_pct.is_some_and(|w| w > *limit),
                significant,
                judged: mark.is_some_and(|m| m != Mark::Unknown),
            }
        })
        .collect()
}

/// Parse `p99=10%,rps.avg=5%`: metric names from [`metrics`], limits as non-negative
/// percentages with the `%` sign. Errors name the offending item.
pub fn parse_limits(s: &str) -> Result<Vec<(String, f64)>, String> {
    let mut out: Vec<(String, f64)> = Vec::new();
    for item in s.split(',').map(str::trim) {
        if item.is_empty() {
            continue;
        }
        let (metric, limit) = item
            .split_once('=')
            .ok_or_else(|| format!("{item:?}: expected METRIC=PCT%, e.g. p99=10%"))?;
        let (metric, limit) = (metric.trim(), limit.trim());
        if describe(metric).is_none() {
            return Err(format!(
                "{item:?}: unknown metric {metric:?} (one of: {})",
                metrics()
                    .into_iter()
                    .filter(|m| !noise::informational(m))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if noise::informational(metric) {
            return Err(format!(
                "{item:?}: {metric} is one exchange, which identical runs differ in by \
                 chance: it is shown for information, not gated; limit p99 or p999 instead"
            ));
        }
        let number = limit.strip_suffix('%').ok_or_else(|| {
            format!("{item:?}: write the limit as a percentage, e.g. {metric}=10%")
        })?;
        let pct: f64 = number
            .trim()
            .parse()
            .ok()
            .filter(|p: &f64| p.is_finite() && *p >= 0.0)
            .ok_or_else(|| {
                format!("{item:?}: {limit:?} is not a non-negative percentage, e.g. 10%")
            })?;
        if out.iter().any(|(m, _)| m == metric) {
            return Err(format!("{item:?}: {metric} is limited twice"));
        }
        out.push((metric.to_string(), pct));
    }
    if out.is_empty() {
        return Err("no limits given: expected e.g. 'p99=10%,rps.avg=5%'".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
