//! `barrage find-max`: the breaking-point search. Offers open-loop rates step by step (each
//! step an ordinary run: the user's run flags with `--rate`, `-d` and `--warmup` set by the
//! search, resolved by `config::plan` into a spec and a plan like any `barrage run`), judges
//! each step against the SLOs (the `--threshold` grammar and the one metric vocabulary), and
//! reports the highest rate that met every SLO and the first that broke one, and why.
//!
//! Key decisions: the search itself is a pure state machine (`search.rs`), tested in virtual
//! time; this file only checks the input, runs steps (`step.rs`) and feeds it. barrage's own
//! limit (its CPU over the load, or messages it could not send while its event loop was late)
//! ends the search with that verdict instead of a knee that would describe the generator; a
//! latency breach no larger than barrage's own lateness is run again before it counts. Every step is bounded
//! (warm-up + step + drain) and so is the search (`--max-steps`); the bound is printed first.
//! A signal stops the step under way and the search reports what it had found.

mod record;
pub mod search;
mod setup;
mod step;

use crate::resolve::cli::FindMaxArgs;
use crate::resolve::config;
use crate::sys;
use crate::usage::Usage;
use barrage_metrics::thresholds::{self, Needs};
use barrage_report::find_max::{self as render, Step};
use record::write;
use search::{Bounds, End, Next, Search, Verdict};
use setup::{step_args, Setup};
use step::{run_step, StepEnd};

pub fn find_max(a: &FindMaxArgs, argv: Vec<String>) -> anyhow::Result<i32> {
    let setup = resolve(a)?;
    let signals = crate::run::Signals::install();
    let started_at = sys::rfc3339_now();
    say_start(a, &setup);
    let mut search = Search::new(setup.bounds);
    let mut steps: Vec<Step> = Vec::new();
    let end = loop {
        let rate = match search.next() {
            Next::Offer(r) => r,
            Next::Stop(end) => break end,
        };
        match run_step(a, &setup, rate, steps.len() + 1, &argv, &signals)? {
            StepEnd::Done(step) => {
                search.record(rate, step.verdict.clone());
                steps.push(*step);
            }
            StepEnd::Interrupted => break End::Interrupted,
            // Nothing measured yet: the target is wrong, not the server's limit.
            StepEnd::Unreachable(why) if steps.is_empty() => anyhow::bail!("{why}"),
            StepEnd::Unreachable(why) => {
                search.record(rate, Verdict::Fail(why));
                break End::Unreachable;
            }
        }
    };
    let record = record::record(
        argv,
        started_at,
        a,
        &setup.bounds,
        &setup.slos,
        steps,
        &search,
        end,
    );
    match setup.json.as_deref() {
        // The JSON owns stdout; the table goes to stderr.
        Some("-") => {
            eprintln!("{}", render::text(&record));
            say!("{}", render::json(&record)?.trim_end());
        }
        Some(path) => {
            say!("{}", render::text(&record));
            write(path, &render::json(&record)?)?;
        }
        None => say!("{}", render::text(&record)),
    }
    if let Some((path, format)) = &setup.report {
        write(path, &barrage_report::find_max_report(&record, *format))?;
    }
    Ok(match record.result.end {
        End::Interrupted => 130,
        End::Unreachable => 1,
        End::NothingPassed => 3,
        _ => 0,
    })
}

/// Every usage check, before any load: the SLOs (measurable by a run without monitoring), the
/// bounds, the run flags (through a first step's arguments) and the output files.
fn resolve(a: &FindMaxArgs) -> Result<Setup, Usage> {
    let r = &a.run;
    let owned = [
        (
            r.modes.rate.is_some(),
            "--rate",
            "the search sets the rate of each step",
        ),
        (
            r.load.duration.is_some(),
            "-d/--duration",
            "use --step-duration",
        ),
        (
            r.load.warmup.is_some_and(|w| !w.is_zero()),
            "--warmup",
            "use --step-warmup",
        ),
        (
            r.load.requests.is_some(),
            "-n/--requests",
            "each step runs for --step-duration",
        ),
        (
            r.modes.interval.is_some(),
            "--interval",
            "the search offers --rate steps",
        ),
        (
            r.modes.think.is_some(),
            "--think",
            "the search offers open-loop --rate steps",
        ),
        (
            !r.watch.threshold.is_empty(),
            "--threshold",
            "give the limits as --slo",
        ),
        (
            r.output.baseline.is_some(),
            "--baseline",
            "compare saved step results with barrage compare",
        ),
        (
            r.output.csv.is_some() || r.output.hdr_log.is_some() || r.output.out.is_some(),
            "--csv/--hdr-log/--out",
            "find-max writes --json and --report; for one rate's seconds, barrage run --rate R",
        ),
        (
            !r.watch.monitor.is_empty() || r.watch.spawn.is_some() || r.watch.recovery.is_some(),
            "--monitor/--spawn/--recovery",
            "not supported by find-max yet; SLOs use client figures",
        ),
    ];
    if let Some((_, flag, hint)) = owned.iter().find(|(set, _, _)| *set) {
        return Err(Usage::says(
            *flag,
            format!("is not a find-max flag: {hint}"),
        ));
    }
    let slos = a
        .slo
        .iter()
        .map(|e| thresholds::parse(e).map_err(|e| Usage::new("--slo", e)))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(t) = slos
        .iter()
        .find(|t| thresholds::needs(&t.metric) != Needs::Nothing)
    {
        return Err(Usage::value(
            "--slo",
            format!("'{}'", t.expr),
            format!("{} is measured on the server, which find-max does not watch; use client figures (p99, errors.rate, rps.avg, ...)", t.metric),
        ));
    }
    let precision = percent("--precision", &a.precision)?;
    if a.start_rate > a.max_rate {
        return Err(Usage::says(
            "--start-rate",
            format!(
                "({}/s) is above --max-rate ({}/s)",
                a.start_rate, a.max_rate
            ),
        ));
    }
    if a.max_steps == 0 || a.max_steps > 100 {
        return Err(Usage::new("--max-steps", "give 1 to 100 steps"));
    }
    // The run flags, checked as the first and the last possible step would use them.
    for rate in [a.start_rate, a.max_rate] {
        config::plan(&step_args(a, rate))?;
    }
    let (plan, _, _) = config::plan(&step_args(a, a.start_rate))?;
    let json = a.run.output.json.clone();
    if let Some(p) = json.as_deref().filter(|p| *p != "-") {
        crate::sinks::outfile::check_writable("--json", p)?;
    }
    let report = match &a.run.output.report {
        Some(p) => {
            let f = crate::sinks::output::report_format("--report", p, false)?;
            crate::sinks::outfile::check_writable("--report", p)?;
            Some((p.clone(), f))
        }
        None => None,
    };
    Ok(Setup {
        slos,
        bounds: Bounds {
            start: a.start_rate,
            max_rate: a.max_rate,
            max_steps: a.max_steps as usize,
            growth: 2.0,
            precision,
        },
        json,
        report,
        step_bound: a.step_warmup + a.step_duration + plan.drain + plan.connect_timeout,
    })
}

/// `5%` or `0.05` as a fraction in (0, 1).
fn percent(flag: &str, s: &str) -> Result<f64, Usage> {
    let v = match s.trim().strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => s.trim().parse::<f64>(),
    };
    match v {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(Usage::value(
            flag,
            s,
            "give a share between 0 and 100 %, e.g. 5%",
        )),
    }
}

fn say_start(a: &FindMaxArgs, s: &Setup) {
    let total = s.step_bound * s.bounds.max_steps as u32;
    eprintln!(
        "find-max {}: SLOs {}; steps of {:?} after {:?} of warm-up, from {} up to at most {}, \
         at most {} steps: at most {} s in all",
        a.run.target,
        a.slo.join(", "),
        a.step_duration,
        a.step_warmup,
        render::rate(s.bounds.start),
        render::rate(s.bounds.max_rate),
        s.bounds.max_steps,
        total.as_secs()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_takes_percent_or_fraction_and_refuses_the_rest() {
        assert_eq!(percent("--precision", "5%").unwrap(), 0.05);
        assert_eq!(percent("--precision", "0.1").unwrap(), 0.1);
        for bad in ["0", "100%", "-3%", "x"] {
            let e = percent("--precision", bad).unwrap_err().to_string();
            assert!(e.starts_with("--precision"), "{e}");
        }
    }
}
