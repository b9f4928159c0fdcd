//! `--baseline FILE` and `--max-regression`: a finished run compared with a saved one, each
//! limit judged beyond both runs' noise. The baseline is loaded once, when the run is resolved
//! (a bad file fails before any load), and compared at the end.

use crate::usage::Usage;
use barrage_metrics::compare::{self, BaselineCheck, Options};
use barrage_metrics::RunResult;
use std::path::PathBuf;

/// A loaded baseline with its limits and noise options.
pub struct Baseline {
    path: PathBuf,
    run: RunResult,
    limits: Option<Vec<(String, f64)>>,
    opts: Options,
}

impl Baseline {
    /// `--baseline PATH` with `--max-regression LIMITS` and `--noise-floor`: loaded and parsed
    /// now.
    pub fn load(path: PathBuf, limits: Option<&str>, opts: Options) -> Result<Baseline, Usage> {
        let limits = limits
            .map(compare::parse_limits)
            .transpose()
            .map_err(|e| Usage::new("--max-regression", e))?;
        let run = barrage_report::load(&path).map_err(|e| Usage::new("--baseline", e))?;
        Ok(Baseline {
            path,
            run,
            limits,
            opts,
        })
    }

    /// Compares a finished run with the baseline and, with `limits` (`--max-regression`),
    /// checks each limit. Returns the comparison's lines to print (at the end of the summary)
    /// and the check the result records (its verdict and limits lead the summary): a limit is
    /// broken when the figure is worse by more than its margin and the difference is beyond both
    /// runs' noise; a limit on a figure one of the runs lacks (e.g. server.cpu.avg without
    /// monitoring), or without enough data to judge (fewer than five seconds, a p999 of seconds
    /// too small to have one), cannot be checked and counts as broken, as a threshold that cannot
    /// be measured fails.
    pub fn check(&self, result: &RunResult) -> anyhow::Result<(Vec<String>, BaselineCheck)> {
        let opts = &self.opts;
        let runs = [self.run.clone(), result.clone()];
        let cmp = compare::compare_with(&runs, opts);
        let names = [
            describe(&format!("baseline {}", self.path.display()), &runs[0]),
            describe("this run", &runs[1]),
        ];
        let mut text = Vec::new();
        barrage_report::render_comparison_text(&cmp, &names, &mut text)?;
        let mut lines: Vec<String> = String::from_utf8_lossy(&text)
            .lines()
            .map(str::to_string)
            .collect();
        let mut check = BaselineCheck {
            file: self.path.display().to_string(),
            regressions: Vec::new(),
        };
        if let Some(limits) = &self.limits {
            check.regressions = compare::regressions(&runs[0], &runs[1], limits, opts);
            lines.push(String::new());
            lines.push(format!(
                "{}: each limit is listed under the Verdict, at the top",
                barrage_report::baseline_verdict(&check)
            ));
            let floor = if opts.noise_floor > 0.0 {
                format!(
                    ", and at least {} % with --noise-floor",
                    opts.noise_floor * 100.0
                )
            } else {
                String::new()
            };
            lines.push(format!(
                "(noise: each run's own per-second series, Yuen's test at 95 %{floor}; a limit \
                 without enough seconds to judge fails; docs/compare.md)"
            ));
        }
        Ok((lines, check))
    }
}

/// `--noise-floor 20%` (or `20`): a percentage from 0 to 1000; `None` means the default.
pub fn options(noise_floor: Option<&str>) -> Result<Options, Usage> {
    let Some(s) = noise_floor else {
        return Ok(Options::default());
    };
    let pct: f64 = s
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .ok()
        .filter(|p: &f64| p.is_finite() && (0.0..=1000.0).contains(p))
        .ok_or_else(|| {
            Usage::value(
                "--noise-floor",
                s,
                "expected a percentage from 0 to 1000, e.g. 20%",
            )
        })?;
    Ok(Options {
        noise_floor: pct / 100.0,
    })
}

/// `file: target, mode, c connections, started` — enough to tell the runs apart.
pub fn describe(name: &str, r: &RunResult) -> String {
    let c = &r.config;
    let when = if r.started_at.is_empty() {
        String::new()
    } else {
        format!(", {}", r.started_at)
    };
    format!(
        "{name}: {} {}, {} connections{when}",
        c.target, c.mode, c.connections
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::path::Path;

    /// The baseline at `path` loaded with `limits`, then compared with `r`.
    fn check_baseline(
        r: &RunResult,
        path: &Path,
        limits: Option<&str>,
        opts: &Options,
    ) -> anyhow::Result<(Vec<String>, bool)> {
        let (lines, check) = Baseline::load(path.to_path_buf(), limits, *opts)?.check(r)?;
        // The limits' lines (the summary prints them under the verdict), then the comparison.
        let mut all: Vec<String> = check
            .regressions
            .iter()
            .map(barrage_report::regression_line)
            .collect();
        all.extend(lines);
        Ok((all, check.regressed()))
    }

    pub(crate) fn empty_run() -> RunResult {
        let tl = barrage_metrics::Timeline {
            warmup_ns: 0,
            load_end_ns: Some(0),
        };
        let o = barrage_metrics::Aggregator::new(tl, 1)
            .finish(1, barrage_metrics::LatencyBasis::ActualSend);
        RunResult::new(
            barrage_metrics::Status::Completed,
            None,
            vec![],
            String::new(),
            Default::default(),
            Default::default(),
            o,
        )
    }

    #[test]
    fn baseline_checks_limits_first_then_the_file_and_fails_unmeasurable_limits() {
        let r = empty_run();
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.json");
        let e = check_baseline(&r, &missing, Some("p99=10"), &Options::default()).unwrap_err();
        assert!(e.is::<Usage>() && e.to_string().starts_with("--max-regression: \"p99=10\""));
        let e = check_baseline(&r, &missing, None, &Options::default()).unwrap_err();
        assert!(e.is::<Usage>() && e.to_string().starts_with("--baseline: cannot read"));

        let base = dir.path().join("base.json");
        barrage_report::save(&r, barrage_report::Format::Json, &base).unwrap();
        let (lines, regressed) = check_baseline(&r, &base, None, &Options::default()).unwrap();
        assert!(!regressed && lines.iter().any(|l| l.starts_with("metric")));
        let (lines, regressed) = check_baseline(
            &r,
            &base,
            Some("p99=10%,server.cpu.avg=5%"),
            &Options::default(),
        )
        .unwrap();
        assert!(regressed, "cpu was not monitored: {lines:?}");
        assert!(lines
            .iter()
            .any(|l| l.contains("server.cpu.avg: cannot check")));
        assert!(lines
            .iter()
            .any(|l| l.starts_with("regression p99:") && l.ends_with("ok")));
        assert!(lines.last().unwrap().contains("own per-second series"));
        assert!(!lines.last().unwrap().contains("--noise-floor"));
    }

    #[test]
    fn a_limit_without_enough_data_to_judge_fails_the_gate() {
        let r = |p99: u64| {
            let mut r = empty_run();
            r.summary.latency_us.p99 = p99;
            r
        };
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("base.json");
        barrage_report::save(&r(100), barrage_report::Format::Json, &base).unwrap();
        let (lines, regressed) =
            check_baseline(&r(150), &base, Some("p99=10%"), &Options::default()).unwrap();
        assert!(regressed, "{lines:?}");
        assert!(
            lines.iter().any(|l| l.starts_with(
                "regression p99: +50.0 %, cannot check: not \
                 enough data"
            ) && l.ends_with("-> FAILED")),
            "{lines:?}"
        );
    }

    #[test]
    fn the_noise_floor_is_a_percentage_or_a_usage_error() {
        assert_eq!(options(None).unwrap(), Options::default());
        assert_eq!(options(Some("20%")).unwrap().noise_floor, 0.2);
        assert_eq!(options(Some("0")).unwrap().noise_floor, 0.0);
        for bad in ["-5%", "abc", "2000%", "NaN"] {
            let e = options(Some(bad)).unwrap_err();
            assert!(
                e.to_string().starts_with(&format!("--noise-floor {bad}: ")),
                "{e}"
            );
        }
    }
}
