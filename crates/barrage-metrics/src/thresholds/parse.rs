//! Parsing `METRIC OP VALUE[UNIT]`, with errors that say what to write instead.

use super::{kind_of, metrics, Kind, Op, Threshold};
use crate::error::ErrorClass;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ThresholdError {
    #[error("empty threshold: write METRIC OP VALUE, e.g. `p99 < 20ms`")]
    Empty,
    #[error("threshold `{expr}`: no operator; write METRIC OP VALUE with OP one of < <= > >= == != (e.g. `p99 < 20ms`){hint}")]
    MissingOperator { expr: String, hint: String },
    #[error("threshold `{expr}`: no metric before `{op}`; e.g. `p99 {op} 20ms`")]
    MissingMetric { expr: String, op: String },
    #[error("threshold `{expr}`: unknown metric `{metric}`; {hint}")]
    UnknownMetric {
        expr: String,
        metric: String,
        hint: String,
    },
    #[error("threshold `{expr}`: no value after `{op}`")]
    MissingValue { expr: String, op: String },
    #[error("threshold `{expr}`: `{value}` is not a number")]
    BadNumber { expr: String, value: String },
    #[error("threshold `{expr}`: `{metric}` is a {kind} and needs a unit: {allowed}")]
    MissingUnit {
        expr: String,
        metric: String,
        kind: &'static str,
        allowed: &'static str,
    },
    #[error("threshold `{expr}`: unit `{unit}` does not fit `{metric}`, a {kind}; use {allowed}")]
    BadUnit {
        expr: String,
        metric: String,
        unit: String,
        kind: &'static str,
        allowed: &'static str,
    },
    #[error("threshold `{expr}`: the value must not be negative")]
    Negative { expr: String },
    #[error("threshold `{expr}`: a rate without `%` is a fraction from 0 to 1; write `{value}%` for percent")]
    RateAboveOne { expr: String, value: String },
    #[error("threshold `{expr}`: a rate is at most 100 % (a fraction at most 1); `{value}` can never be reached")]
    RateAbove100 { expr: String, value: String },
    #[error("threshold `{expr}`: `{metric}` is yes or no, compared with == or != (e.g. `{metric} == no`)")]
    YesNo { expr: String, metric: String },
}

const DURATION: &[(&str, f64)] = &[
    ("us", 1.0),
    ("µs", 1.0),
    ("μs", 1.0),
    ("ms", 1e3),
    ("s", 1e6),
    ("m", 60e6),
];
const COUNT: &[(&str, f64)] = &[("", 1.0), ("k", 1e3), ("M", 1e6)];
const BYTES: &[(&str, f64)] = &[
    ("B", 1.0),
    ("KB", 1e3),
    ("KiB", 1024.0),
    ("MB", 1e6),
    ("MiB", 1048576.0),
    ("GB", 1e9),
    ("GiB", 1073741824.0),
];
const PERCENT: &[(&str, f64)] = &[("%", 1.0)];
const RATE: &[(&str, f64)] = &[("%", 0.01), ("", 1.0)];

impl Kind {
    /// The units a value of this kind takes, for messages and help.
    pub fn units(self) -> &'static str {
        match self {
            Self::Duration => "us, µs, ms, s or m",
            Self::Count => "no unit, k or M",
            Self::Bytes => "B, KB, KiB, MB, MiB, GB or GiB",
            Self::Percent => "%",
            Self::Rate => "% or a fraction without unit",
            Self::YesNo => "yes or no",
        }
    }

    /// Unit names and factors to the canonical unit.
    fn unit_table(self) -> &'static [(&'static str, f64)] {
        match self {
            Self::Duration => DURATION,
            Self::Count => COUNT,
            Self::Bytes => BYTES,
            Self::Percent => PERCENT,
            Self::Rate => RATE,
            Self::YesNo => &[],
        }
    }
}

const OPS: [(&str, Op); 6] = [
    ("<=", Op::Le),
    (">=", Op::Ge),
    ("==", Op::Eq),
    ("!=", Op::Ne),
    ("<", Op::Lt),
    (">", Op::Gt),
];

fn is_metric_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-'
}

pub fn parse(expr: &str) -> Result<Threshold, ThresholdError> {
    let expr = expr.trim();
    if expr.is_empty() {
        return Err(ThresholdError::Empty);
    }
    let e = || expr.to_string();
    let split = expr
        .find(|c: char| !is_metric_char(c))
        .unwrap_or(expr.len());
    let metric = &expr[..split];
    let rest = expr[split..].trim_start();
    let Some((op_str, op)) = OPS.iter().find(|(s, _)| rest.starts_with(s)).copied() else {
        let hint = if rest.starts_with('=') {
            "; `=` is not an operator, use `==`".into()
        } else {
            String::new()
        };
        return Err(ThresholdError::MissingOperator { expr: e(), hint });
    };
    if metric.is_empty() {
        return Err(ThresholdError::MissingMetric {
            expr: e(),
            op: op_str.into(),
        });
    }
    let kind = kind_of(metric).ok_or_else(|| ThresholdError::UnknownMetric {
        expr: e(),
        metric: metric.into(),
        hint: suggest(metric),
    })?;
    let value = rest[op_str.len()..].trim();
    if value.is_empty() {
        return Err(ThresholdError::MissingValue {
            expr: e(),
            op: op_str.into(),
        });
    }
    let limit = if kind == Kind::YesNo {
        yes_no(value, op).ok_or_else(|| ThresholdError::YesNo {
            expr: e(),
            metric: metric.into(),
        })?
    } else {
        quantity(expr, metric, kind, value)?
    };
    Ok(Threshold {
        expr: expr.into(),
        metric: metric.into(),
        op,
        limit,
        kind,
    })
}

fn yes_no(value: &str, op: Op) -> Option<f64> {
    if !matches!(op, Op::Eq | Op::Ne) {
        return None;
    }
    match value.to_ascii_lowercase().as_str() {
        "yes" => Some(1.0),
        "no" => Some(0.0),
        _ => None,
    }
}

/// The number and unit of `value`, converted to the kind's canonical unit.
fn quantity(expr: &str, metric: &str, kind: Kind, value: &str) -> Result<f64, ThresholdError> {
    let e = || expr.to_string();
    let num_len = value
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-')))
        .unwrap_or(value.len());
    // The longest prefix that is a number: `5e` in `5es` is 5 and the unit `es`.
    let (num, unit) = (1..=num_len)
        .rev()
        .filter(|&i| value.is_char_boundary(i))
        .find_map(|i| {
            value[..i]
                .parse::<f64>()
                .ok()
                .map(|n| (n, value[i..].trim()))
        })
        .filter(|(n, _)| n.is_finite())
        .ok_or_else(|| ThresholdError::BadNumber {
            expr: e(),
            value: value.into(),
        })?;
    if num < 0.0 {
        return Err(ThresholdError::Negative { expr: e() });
    }
    let table = kind.unit_table();
    let factor = table
        .iter()
        .find(|(u, _)| *u == unit)
        .or_else(|| {
            // Byte units are often written in any case (kb, mb); case never changes them.
            (kind == Kind::Bytes)
                .then(|| table.iter().find(|(u, _)| u.eq_ignore_ascii_case(unit)))
                .flatten()
        })
        .map(|(_, f)| *f);
    let Some(factor) = factor else {
        return Err(if unit.is_empty() {
            ThresholdError::MissingUnit {
                expr: e(),
                metric: metric.into(),
                kind: kind.as_str(),
                allowed: kind.units(),
            }
        } else {
            ThresholdError::BadUnit {
                expr: e(),
                metric: metric.into(),
                unit: unit.into(),
                kind: kind.as_str(),
                allowed: kind.units(),
            }
        });
    };
    if kind == Kind::Rate && unit.is_empty() && num > 1.0 {
        return Err(ThresholdError::RateAboveOne {
            expr: e(),
            value: value.into(),
        });
    }
    if kind == Kind::Rate && num * factor > 1.0 {
        return Err(ThresholdError::RateAbove100 {
            expr: e(),
            value: value.into(),
        });
    }
    Ok(num * factor)
}

/// Every concrete metric name (each error class spelled out).
fn all_names() -> Vec<String> {
    metrics()
        .filter(|(m, _)| !m.contains('<'))
        .map(|(m, _)| m.to_string())
        .chain(ErrorClass::ALL.iter().map(|c| format!("errors.{c}")))
        .collect()
}

fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// "did you mean ..." with up to 5 names close in spelling or containing what was written,
/// or the list of all metrics.
fn suggest(metric: &str) -> String {
    let lower = metric.to_ascii_lowercase();
    let mut close: Vec<(usize, String)> = all_names()
        .into_iter()
        .filter_map(|n| {
            let d = distance(&lower, &n);
            let near = d <= 2.max(n.len() / 4) || (lower.len() >= 3 && n.contains(&lower));
            near.then_some((d, n))
        })
        .collect();
    close.sort();
    if close.is_empty() {
        let names: Vec<&str> = metrics().map(|(m, _)| m).collect();
        format!("known metrics: {}", names.join(", "))
    } else {
        let names: Vec<String> = close.into_iter().take(5).map(|(_, n)| n).collect();
        format!("did you mean {}?", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_expressions_and_units() {
        const MIB: f64 = 1048576.0;
        let table: &[(&str, &str, Op, f64)] = &[
            ("p99 < 20ms", "p99", Op::Lt, 20_000.0),
            ("p99<20ms", "p99", Op::Lt, 20_000.0),
            ("  p50 <= 250 us ", "p50", Op::Le, 250.0),
            ("p9999 < 1.5s", "p9999", Op::Lt, 1.5e6),
            ("latency.max < 2m", "latency.max", Op::Lt, 120e6),
            ("latency.mean < 800µs", "latency.mean", Op::Lt, 800.0),
            ("connect.p99 < 1e3us", "connect.p99", Op::Lt, 1000.0),
            ("rps.avg >= 15000", "rps.avg", Op::Ge, 15_000.0),
            ("rps.peak > 1.5k", "rps.peak", Op::Gt, 1_500.0),
            ("requests >= 2M", "requests", Op::Ge, 2e6),
            ("errors == 0", "errors", Op::Eq, 0.0),
            ("errors.timeout != 0", "errors.timeout", Op::Ne, 0.0),
            ("errors.rate < 0.1%", "errors.rate", Op::Lt, 0.001),
            ("errors.rate < 0.001", "errors.rate", Op::Lt, 0.001),
            (
                "connections.peak >= 10k",
                "connections.peak",
                Op::Ge,
                10_000.0,
            ),
            ("server.rss.max < 64MB", "server.rss.max", Op::Lt, 64e6),
            (
                "server.rss.avg < 64 MiB",
                "server.rss.avg",
                Op::Lt,
                64.0 * MIB,
            ),
            (
                "server.rss.after <= 1GiB",
                "server.rss.after",
                Op::Le,
                1024.0 * MIB,
            ),
            ("server.rss.max < 512kb", "server.rss.max", Op::Lt, 512e3),
            ("server.cpu.avg < 80%", "server.cpu.avg", Op::Lt, 80.0),
            ("server.cpu.max <= 350 %", "server.cpu.max", Op::Le, 350.0),
            ("server.fds.max < 1k", "server.fds.max", Op::Lt, 1000.0),
            ("stability.cv < 5%", "stability.cv", Op::Lt, 5.0),
            ("leak == no", "leak", Op::Eq, 0.0),
            ("leak != YES", "leak", Op::Ne, 1.0),
        ];
        for (expr, metric, op, limit) in table {
            let t = parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
            assert_eq!((t.metric.as_str(), t.op), (*metric, *op), "{expr}");
            assert!(
                (t.limit - limit).abs() <= 1e-9 * limit.max(1.0),
                "{expr}: {}",
                t.limit
            );
            assert_eq!(t.expr, expr.trim());
        }
    }

    #[test]
    fn bad_expressions_say_what_is_wrong() {
        let table: &[(&str, &str)] = &[
            ("", "empty threshold"),
            ("p99 20ms", "no operator"),
            ("p99 = 20ms", "use `==`"),
            ("< 20ms", "no metric before `<`"),
            (
                "p95 < 20ms",
                "unknown metric `p95`; did you mean p75, p90, p99",
            ),
            ("rss.max < 1MB", "did you mean server.rss.max"),
            ("errors.timeouts > 0", "did you mean errors.timeout"),
            ("bogus < 1", "known metrics: p50, p75"),
            ("p99 <", "no value after `<`"),
            ("p99 < fast", "`fast` is not a number"),
            (
                "p99 < 20",
                "`p99` is a duration and needs a unit: us, µs, ms, s or m",
            ),
            (
                "p99 < 20MB",
                "unit `MB` does not fit `p99`, a duration; use us, µs, ms, s or m",
            ),
            (
                "server.rss.max < 64",
                "needs a unit: B, KB, KiB, MB, MiB, GB or GiB",
            ),
            ("server.rss.max < 64ms", "unit `ms` does not fit"),
            ("rps.avg > 10m", "use no unit, k or M"),
            ("server.cpu.avg < 80", "is a percentage and needs a unit: %"),
            ("errors.rate < 5", "write `5%` for percent"),
            ("errors.rate < 5ms", "use % or a fraction"),
            ("errors.rate < 200%", "a rate is at most 100 %"),
            ("p99 < -1ms", "must not be negative"),
            ("leak < yes", "`leak` is yes or no, compared with == or !="),
            ("leak == maybe", "(e.g. `leak == no`)"),
        ];
        for (expr, want) in table {
            let err = parse(expr).expect_err(expr).to_string();
            assert!(err.contains(want), "{expr}: {err}");
            if !expr.is_empty() {
                assert!(err.contains(&format!("`{}`", expr.trim())), "{expr}: {err}");
            }
        }
    }

    #[test]
    fn edit_distance() {
        assert_eq!(distance("p95", "p99"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
