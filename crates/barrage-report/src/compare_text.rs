//! The comparison of runs as a table: one row per figure, the reference run's value, then for
//! every other run its value, the difference (absolute and relative) and a mark: `*` beyond
//! both runs' noise, `~` within it, `?` not enough data to tell, `i` information only.
//!
//! [`table`] builds the cells once as strings so that the text, Markdown and HTML forms can
//! never disagree; [`render_comparison_text`] lays them out in aligned columns. Every figure is
//! read from the [`Comparison`] as it is; the only arithmetic here is unit formatting.

use crate::fmt::{bytes, duration_us, real, thousands};
use barrage_metrics::compare::{Cell, Comparison, Unit, RULES};
use std::io::{self, Write};

/// The comparison as strings: a header row and body rows of equal length.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Which columns hold numbers (right-aligned).
    pub numeric: Vec<bool>,
}

/// The letter naming run `i` in tables: A, B, ... Z, then 27, 28 ...
pub fn run_letter(i: usize) -> String {
    match u8::try_from(i).ok().filter(|i| *i < 26) {
        Some(i) => char::from(b'A' + i).to_string(),
        None => (i + 1).to_string(),
    }
}

/// Cells of `c`: `metric | A | B | Δ | Δ % | mark | C | ...`.
pub fn table(c: &Comparison) -> Table {
    let mut header = vec!["metric".to_string(), run_letter(0)];
    let mut numeric = vec![false, true];
    for i in 1..c.runs {
        header.extend([run_letter(i), "Δ".into(), "Δ %".into(), String::new()]);
        numeric.extend([true, true, true, false]);
    }
    let rows = c
        .rows
        .iter()
        .map(|r| {
            let mut row = vec![r.metric.clone()];
            for (i, cell) in r.cells.iter().enumerate() {
                row.push(cell.value.map_or("n/a".into(), |v| value(r.unit, v)));
                if i > 0 {
                    row.extend(difference(r.unit, cell));
                }
            }
            row
        })
        .collect();
    Table {
        header,
        rows,
        numeric,
    }
}

fn difference(unit: Unit, cell: &Cell) -> [String; 3] {
    let delta = cell.delta.map_or("n/a".into(), |d| {
        let sign = if d > 0.0 {
            "+"
        } else if d < 0.0 {
            "-"
        } else {
            ""
        };
        format!("{sign}{}", value(unit, d.abs()))
    });
    let pct = match (cell.delta_pct, cell.delta) {
        (Some(p), _) => format!("{p:+.1} %"),
        (None, Some(d)) if d != 0.0 => "new".into(),
        (None, Some(_)) => "+0.0 %".into(),
        _ => "n/a".into(),
    };
    let mark = cell.mark.map_or("", |m| m.symbol()).to_string();
    [delta, pct, mark]
}

/// One value in its unit.
pub fn value(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Duration => duration_us(v),
        Unit::Rate => format!("{}/s", real(v)),
        Unit::Fraction => format!("{:.3} %", v * 100.0),
        Unit::Percent => format!("{v:.1} %"),
        Unit::Bytes => bytes(v),
        Unit::Count => thousands(v.max(0.0).round() as u64),
    }
}

/// One line per setting in which the runs differ (target, protocol, mode, connections): their
/// figures then measure different tests, not a change of the server.
pub fn warnings(c: &Comparison) -> Vec<String> {
    c.mismatches
        .iter()
        .map(|m| {
            let values: Vec<String> = m
                .values
                .iter()
                .enumerate()
                .map(|(i, v)| format!("{} {v}", run_letter(i)))
                .collect();
            format!(
                "warning: the runs differ in {} ({}): the differences below may come from the \
                 settings, not from the server",
                m.setting,
                values.join(", ")
            )
        })
        .collect()
}

/// The lines under the table: what the marks mean and how each was decided.
pub fn legend() -> Vec<String> {
    let mut out = vec![
        "* beyond both runs' noise (significant), ~ within the noise, ? not enough data to \
         tell, i information only (one exchange: not judged)"
            .to_string(),
    ];
    out.extend(RULES.iter().map(|(m, rule)| format!("  {m}: {rule}")));
    out
}

/// Render `c` as an aligned text table; `names[i]` is what run `i` was loaded from (printed
/// as `A = name` under the table).
pub fn render_comparison_text(
    c: &Comparison,
    names: &[String],
    out: &mut dyn Write,
) -> io::Result<()> {
    let t = table(c);
    let cols = t.header.len();
    let width = |j: usize| {
        std::iter::once(&t.header[j])
            .chain(t.rows.iter().map(|r| &r[j]))
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..cols).map(width).collect();
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (j, cell) in cells.iter().enumerate() {
            let pad = widths[j].saturating_sub(cell.chars().count());
            if j > 0 {
                s.push_str("  ");
            }
            if t.numeric[j] {
                s.push_str(&" ".repeat(pad));
                s.push_str(cell);
            } else {
                s.push_str(cell);
                s.push_str(&" ".repeat(pad));
            }
        }
        s.trim_end().to_string()
    };
    for (i, name) in names.iter().enumerate() {
        let role = if i == 0 { " (reference)" } else { "" };
        writeln!(out, "{} = {name}{role}", run_letter(i))?;
    }
    for w in warnings(c) {
        writeln!(out, "{w}")?;
    }
    writeln!(out)?;
    writeln!(out, "{}", line(&t.header))?;
    for row in &t.rows {
        writeln!(out, "{}", line(row))?;
    }
    writeln!(out)?;
    for l in legend() {
        writeln!(out, "{l}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::compare::{Better, Mark, MetricRow};

    fn cmp() -> Comparison {
        let cell = |value, delta, delta_pct, mark| Cell {
            value,
            delta,
            delta_pct,
            mark,
            worse: None,
        };
        Comparison {
            runs: 2,
            mismatches: vec![],
            rows: vec![
                MetricRow {
                    metric: "rps.avg".into(),
                    unit: Unit::Rate,
                    better: Better::Higher,
                    cells: vec![
                        cell(Some(20_000.0), None, None, None),
                        cell(Some(19_000.0), Some(-1000.0), Some(-5.0), Some(Mark::Noise)),
                    ],
                },
                MetricRow {
                    metric: "p50".into(),
                    unit: Unit::Duration,
                    better: Better::Lower,
                    cells: vec![
                        cell(Some(100.0), None, None, None),
                        cell(
                            Some(2150.0),
                            Some(2050.0),
                            Some(2050.0),
                            Some(Mark::Significant),
                        ),
                    ],
                },
                MetricRow {
                    metric: "server.cpu.avg".into(),
                    unit: Unit::Percent,
                    better: Better::Lower,
                    cells: vec![
                        cell(None, None, None, None),
                        cell(Some(50.0), None, None, Some(Mark::Unknown)),
                    ],
                },
            ],
        }
    }

    #[test]
    fn the_table_aligns_values_differences_and_marks() {
        let mut out = Vec::new();
        render_comparison_text(&cmp(), &["a.json".into(), "b.json".into()], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let want = "\
A = a.json (reference)
B = b.json

metric                 A         B         Δ        Δ %
rps.avg         20,000/s  19,000/s  -1,000/s     -5.0 %  ~
p50               100 µs   2.15 ms  +2.05 ms  +2050.0 %  *
server.cpu.avg       n/a    50.0 %       n/a        n/a  ?
";
        assert!(text.starts_with(want), "{text}");
        assert!(text.contains("~ within the noise"));
    }

    #[test]
    fn runs_with_other_settings_are_flagged_above_the_table() {
        let mut c = cmp();
        c.mismatches.push(barrage_metrics::compare::Mismatch {
            setting: "connections".into(),
            values: vec!["20".into(), "50".into()],
        });
        let mut out = Vec::new();
        render_comparison_text(&c, &["a.json".into(), "b.json".into()], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with(
                "A = a.json (reference)\nB = b.json\nwarning: the runs differ in connections \
                 (A 20, B 50): the differences below may come from the settings, not from the \
                 server\n\nmetric"
            ),
            "{text}"
        );
    }

    #[test]
    fn letters_run_out_into_numbers() {
        assert_eq!(run_letter(0), "A");
        assert_eq!(run_letter(25), "Z");
        assert_eq!(run_letter(26), "27");
    }
}
