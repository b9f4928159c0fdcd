//! `barrage run`: one load test from arguments to written results.

use crate::cli::RunArgs;
use crate::config::{self, Usage};
use crate::{live, sys, tui};
use anyhow::Context;
use barrage_engine::End;
use barrage_metrics::{RunResult, Status};
use barrage_report::Format;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Run the test; returns the exit code (0 completed or stopped by the user, 1 failed, 3 a
/// threshold failed, 130 interrupted by a signal).
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
    measurable(&thresholds, watch_plan.is_some(), a.recovery)?;
    sys::ensure_fds(
        sys::fds_needed(plan.connections, plan.threads),
        "-c/--connections",
    )?;
    let json_file = open_json(a.json.as_deref())?;
    // Bad report paths and baselines fail now, not after the load.
    let report_format = match &a.report {
        Some(p) => {
            let format = crate::report_cmd::output_format(p, "--report")?;
            crate::outfile::check_writable("--report", p)?;
            Some(format)
        }
        None => None,
    };
    let compare_opts = crate::compare::options(a.noise_floor.as_deref())?;
    if let Some(b) = &a.baseline {
        if let Some(l) = &a.max_regression {
            barrage_metrics::compare::parse_limits(l)
                .map_err(|e| Usage(format!("--max-regression: {e}")))?;
        }
        barrage_report::load(b).map_err(|e| Usage(format!("--baseline: {e}")))?;
    }
    let stop = sys::stop_on_signals();
    // Signals only (the dashboard's `q` sets `stop` too, but is a user stop, not an interrupt).
    let signalled = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&signalled));
    }
    let started_at = sys::rfc3339_now();
    // A spawned server is up (or the run has failed) before the clock starts.
    let watch = match watch_plan {
        Some(w) => Some(w.start()?),
        None => None,
    };
    let recovery_s = watch.as_ref().map(|w| w.recovery_s());
    if let (Some(tls), false) = (&plan.tls, a.insecure) {
        if let Err(why) = crate::tls::preflight(plan.target.addr, tls, plan.connect_timeout, &stop)
        {
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
    let keys = dash.as_ref().map(|d| d.keys());
    let out = out?;
    let user_stop =
        keys.as_ref().is_some_and(|k| k.user_stopped()) && !signalled.load(Ordering::Relaxed);
    let (status, message, code) = match out.end {
        End::Completed => (Status::Completed, None, 0),
        // `q` in the dashboard: a normal end, by the usual exit rules.
        End::Interrupted if user_stop => {
            let at = barrage_metrics::figures::load_end(&out.outcome.timeseries);
            (
                Status::Stopped,
                Some(format!("stopped by the user at {at:.1} s")),
                0,
            )
        }
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
    // The recovery window runs after a user stop too; a signal, Ctrl-C or one more `q` cuts it.
    let quits_before = keys.as_ref().map_or(0, |k| k.quits());
    let cut = || {
        signalled.load(Ordering::Relaxed)
            || match &keys {
                Some(k) => k.skip_recovery(quits_before),
                None => stop.load(Ordering::Relaxed),
            }
    };
    let watched = watch.map(|w| {
        if let Some(d) = &dash {
            d.recovering();
        }
        w.finish(cut, quiet || dash.is_some())
    });
    if let Some(d) = dash {
        d.finish();
    }
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
            crate::compare::check_baseline(&result, b, a.max_regression.as_deref(), &compare_opts)?;
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

/// Refuse, before any load, a threshold the run could not measure: a server figure without
/// `--monitor`/`--spawn`, a recovery figure with `--recovery 0`.
fn measurable(
    thresholds: &[barrage_metrics::thresholds::Threshold],
    monitored: bool,
    recovery: Option<std::time::Duration>,
) -> Result<(), Usage> {
    use barrage_metrics::thresholds::{needs, Needs};
    for t in thresholds {
        let need = needs(&t.metric);
        if need != Needs::Nothing && !monitored {
            return Err(Usage(format!(
                "--threshold '{}': {} is measured on the server; add --monitor PID|auto or --spawn CMD",
                t.expr, t.metric
            )));
        }
        if need == Needs::Recovery && recovery.is_some_and(|r| r.is_zero()) {
            return Err(Usage(format!(
                "--threshold '{}': {} needs the recovery window after the load; drop --recovery 0",
                t.expr, t.metric
            )));
        }
    }
    Ok(())
}

/// Where the JSON goes: stdout, or a file checked at the start and written at the end.
enum JsonOut {
    Stdout,
    File(String),
}

fn write_json(out: Option<JsonOut>, result: &RunResult) -> anyhow::Result<()> {
    let render = |w: &mut dyn Write| {
        Format::Json
            .renderer()
            .render(result, w)
            .and_then(|_| w.flush())
    };
    match out {
        None => Ok(()),
        Some(JsonOut::Stdout) => {
            render(&mut std::io::stdout().lock()).context("--json -: cannot write")
        }
        Some(JsonOut::File(p)) => std::fs::File::create(&p)
            .and_then(|f| render(&mut std::io::BufWriter::new(f)))
            .with_context(|| format!("--json {p}: cannot write")),
    }
}

/// Check the JSON destination before the run, so a bad path fails in a second, not after it.
fn open_json(path: Option<&str>) -> Result<Option<JsonOut>, Usage> {
    Ok(match path {
        None => None,
        Some("-") => Some(JsonOut::Stdout),
        Some(p) => {
            crate::outfile::check_writable("--json", p)?;
            Some(JsonOut::File(p.into()))
        }
    })
}
