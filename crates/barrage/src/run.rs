//! `barrage run`: one load test from arguments to written results.

use crate::cli::RunArgs;
use crate::config::{self, Usage};
use crate::{live, sys};
use anyhow::Context;
use barrage_engine::End;
use barrage_metrics::{RunResult, Status};
use barrage_report::Format;
use std::io::Write;

/// Run the test; returns the exit code (0 completed, 1 failed, 130 interrupted).
pub fn run(a: &RunArgs, argv: Vec<String>) -> anyhow::Result<i32> {
    let (plan, config) = config::plan(a)?;
    sys::ensure_fds(
        sys::fds_needed(plan.connections, plan.threads),
        "-c/--connections",
    )?;
    let json_file = open_json(a.json.as_deref())?;
    let stop = sys::stop_on_signals();
    let started_at = sys::rfc3339_now();
    let (quiet, target) = (a.quiet, plan.connections);
    let out = barrage_engine::run(plan, stop, |tick, agg| {
        if let (false, Some(l)) = (quiet, live::line(tick, agg, target)) {
            eprintln!("{l}");
        }
    })?;
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
    let result = RunResult::new(
        status,
        message,
        argv,
        started_at,
        config,
        sys::environment(),
        out.outcome,
    );
    // The JSON first: it is the complete record, and stdout may be a pipe whose reader is
    // gone (then the summary is lost, not the result file).
    if let Some((path, mut w)) = json_file {
        Format::Json
            .renderer()
            .render(&result, &mut w)
            .and_then(|_| w.flush())
            .with_context(|| format!("--json {path}: cannot write"))?;
    }
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
    Ok(code)
}

type JsonOut = (String, Box<dyn Write>);

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
