//! `barrage run`: one load test from arguments to written results.

use crate::cli::RunArgs;
use crate::config::{self, Usage};
use crate::{live, sys, tui};
use anyhow::Context;
use barrage_engine::End;
use barrage_metrics::{RunResult, Status};
use barrage_report::Format;
use std::io::Write;

/// Run the test; returns the exit code (0 completed, 1 failed, 130 interrupted).
pub fn run(a: &RunArgs, argv: Vec<String>) -> anyhow::Result<i32> {
    let (plan, config) = config::plan(a)?;
    let watch_plan = crate::watch::plan(a, plan.target.addr)?;
    let thresholds = a
        .threshold
        .iter()
        .map(|e| {
            barrage_metrics::thresholds::parse(e).map_err(|e| Usage(format!("--threshold: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    sys::ensure_fds(
        sys::fds_needed(plan.connections, plan.threads),
        "-c/--connections",
    )?;
    let json_file = open_json(a.json.as_deref())?;
    // Bad report paths and baselines fail now, not after the load.
    let report_format = match &a.report {
        Some(p) => Some(crate::report_cmd::output_format(p, "--report")?),
        None => None,
    };
    if let Some(b) = &a.baseline {
        if let Some(l) = &a.max_regression {
            barrage_metrics::compare::parse_limits(l)
                .map_err(|e| Usage(format!("--max-regression: {e}")))?;
        }
        barrage_report::load(b).map_err(|e| Usage(format!("--baseline: {e}")))?;
    }
    let stop = sys::stop_on_signals();
    let started_at = sys::rfc3339_now();
    // A spawned server is up (or the run has failed) before the clock starts.
    let watch = match watch_plan {
        Some(w) => Some(w.start()?),
        None => None,
    };
    let recovery_s = watch.as_ref().map(|w| w.recovery_s());
    if let (Some(tls), false) = (&plan.tls, a.insecure) {
        if let Err(why) = crate::tls::preflight(plan.target.addr, tls, plan.connect_timeout) {
            // Stopped before any load: the result says so, with nothing measured.
            let msg = format!("{}: {why}", plan.target.url);
            eprintln!("error: {msg}");
            let outcome = barrage_metrics::Aggregator::new(plan.timeline(), 1)
                .finish(plan.connections, plan.latency_basis());
            let result = RunResult::new(
                Status::Failed,
                Some(msg),
                crate::redact::argv(&argv, &a.redact, a.secret_body),
                sys::rfc3339_now(),
                config,
                sys::environment(),
                outcome,
            );
            write_json(json_file, &result)?;
            return Ok(1);
        }
    }
    let (quiet, target) = (a.quiet, plan.connections);
    if a.requests.is_some() && a.duration.is_none() && !quiet {
        eprintln!(
            "note: -n without -d: the run also stops after {} s; give -d to change that bound",
            config::REQUESTS_TIME_BOUND.as_secs()
        );
    }
    // The dashboard replaces the status line; if the terminal refuses it, the line it is.
    let dash = tui::wanted(a.no_tui, quiet, a.json.as_deref() == Some("-"))
        .then(|| tui::Dashboard::start(tui::DashInfo::from_plan(&plan), stop.clone()))
        .and_then(|d| d.map_err(|e| eprintln!("warning: no dashboard: {e}")).ok());
    let out = barrage_engine::run(plan, stop.clone(), |tick, agg| match &dash {
        Some(d) => d.update_with(tick, agg, watch.as_ref().and_then(|w| w.latest_server())),
        None => {
            if let (false, Some(l)) = (quiet, live::line(tick, agg, target)) {
                eprintln!("{l}");
            }
        }
    });
    if let Some(d) = dash {
        d.finish();
    }
    let out = out?;
    let (status, message, code) = match out.end {
        End::Completed => (Status::Completed, None, 0),
        End::Interrupted => (
            Status::Interrupted,
            Some("interrupted by a signal".to_string()),
            130,
        ),
        End::Unreachable(why) => {
            let msg = format!("cannot connect to {}: {why}", config.target);
            eprintln!("error: {msg}");
            (Status::Failed, Some(msg), 1)
        }
    };
    let watched = watch.map(|w| w.finish(&stop, quiet));
    let mut result = RunResult::new(
        status,
        message,
        crate::redact::argv(&argv, &a.redact, a.secret_body),
        started_at,
        config,
        sys::environment(),
        out.outcome,
    );
    if let Some((series, spawned)) = watched {
        result.monitor = Some(series);
        result.spawn = spawned;
    }
    result.conclude(&thresholds, recovery_s);
    let code = if code == 0 && result.thresholds_failed() {
        3
    } else {
        code
    };
    let mut baseline_lines = Vec::new();
    let mut code = code;
    if let Some(b) = &a.baseline {
        let (lines, regressed) =
            crate::compare::check_baseline(&result, b, a.max_regression.as_deref())?;
        baseline_lines = lines;
        if regressed && code == 0 {
            code = 3;
        }
    }
    // The JSON first: it is the complete record, and stdout may be a pipe whose reader is
    // gone (then the summary is lost, not the result file).
    write_json(json_file, &result)?;
    // With --json -, stdout carries the JSON and the summary goes to stderr.
    let mut text = Vec::new();
    Format::Text.renderer().render(&result, &mut text)?;
    let shown = if a.json.as_deref() == Some("-") {
        std::io::stderr().write_all(&text)
    } else {
        std::io::stdout().write_all(&text)
    };
    if let Err(e) = shown {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(e).context("cannot print the summary");
        }
    }
    if !baseline_lines.is_empty() {
        let mut text = String::from("\nBaseline comparison\n");
        for l in &baseline_lines {
            text += l;
            text.push('\n');
        }
        let _ = if a.json.as_deref() == Some("-") {
            std::io::stderr().write_all(text.as_bytes())
        } else {
            std::io::stdout().write_all(text.as_bytes())
        };
    }
    if let (Some(path), Some(format)) = (&a.report, report_format) {
        crate::report_cmd::write(&result, path, format)
            .with_context(|| format!("--report {path}"))?;
    }
    Ok(code)
}

type JsonOut = (String, Box<dyn Write>);

fn write_json(out: Option<JsonOut>, result: &RunResult) -> anyhow::Result<()> {
    if let Some((path, mut w)) = out {
        Format::Json
            .renderer()
            .render(result, &mut w)
            .and_then(|_| w.flush())
            .with_context(|| format!("--json {path}: cannot write"))?;
    }
    Ok(())
}

/// Open the JSON destination before the run, so a bad path fails in a second, not after it.
fn open_json(path: Option<&str>) -> Result<Option<JsonOut>, Usage> {
    Ok(match path {
        None => None,
        Some("-") => Some(("-".into(), Box::new(std::io::stdout()))),
        Some(p) => {
            let f = std::fs::File::create(p)
                .map_err(|e| Usage(format!("--json {p}: cannot create the file: {e}")))?;
            Some((p.into(), Box::new(std::io::BufWriter::new(f))))
        }
    })
}
