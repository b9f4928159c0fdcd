//! The outputs of a run from its flags: every destination checked before any load (a bad
//! path fails in a second, not after the load), the baseline loaded once.

use crate::resolve::cli::RunArgs;
use crate::sinks::baseline::Baseline;
use crate::sinks::output::{JsonOut, Outputs};
use crate::usage::Usage;

/// Every output of the run, each destination checked now; nothing is written (or truncated)
/// before the end.
pub fn outputs(a: &RunArgs) -> Result<Outputs, Usage> {
    let json = match a.output.json.as_deref() {
        None => None,
        Some("-") => Some(JsonOut::Stdout),
        Some(p) => {
            crate::sinks::outfile::check_writable("--json", p)?;
            Some(JsonOut::File(p.into()))
        }
    };
    let report = match &a.output.report {
        Some(p) if p == "-" && matches!(json, Some(JsonOut::Stdout)) => {
            return Err(Usage::value(
                "--report",
                p,
                "--json - already writes to stdout; give the report a FILE.md or FILE.html",
            ));
        }
        Some(p) => {
            let format = crate::sinks::output::report_format("--report", p, true)?;
            crate::sinks::outfile::check_writable("--report", p)?;
            Some((p.clone(), format))
        }
        None => None,
    };
    if let Some(dir) = &a.output.out {
        crate::sinks::output::check_out_dir(dir)?;
    }
    if let Some(p) = &a.output.csv {
        if p == "-" {
            return Err(Usage::value(
                "--csv",
                p,
                "the CSV is rewritten whole at the end, so it needs a file; give FILE.csv \
                 (barrage report RESULT.json --format csv -o - prints one)",
            ));
        }
        crate::sinks::outfile::check_writable("--csv", p)?;
    }
    let prometheus = a
        .output
        .prometheus
        .as_deref()
        .map(|v| crate::sinks::prom::parse_addr(v, a.output.listen_any))
        .transpose()?;
    let influx = a
        .output
        .influx
        .as_deref()
        .map(crate::sinks::influx::InfluxTarget::parse)
        .transpose()?;
    let otlp = a
        .output
        .otlp
        .as_deref()
        .map(crate::sinks::otlp::OtlpTarget::parse)
        .transpose()?;
    let statsd = a
        .output
        .statsd
        .as_deref()
        .map(|v| crate::sinks::statsd::StatsdTarget::parse(v, a.output.statsd_prefix.as_deref()))
        .transpose()?;
    let web = a
        .output
        .web
        .as_deref()
        .map(|v| crate::sinks::web::parse_addr(v, a.output.listen_any))
        .transpose()?;
    if let Some(p) = &a.output.hdr_log {
        if p == "-" {
            return Err(Usage::value(
                "--hdr-log",
                p,
                "stdout carries the summary; give a FILE (or --out DIR, then \
                 barrage report DIR --format hdr-log -o -)",
            ));
        }
        crate::sinks::outfile::check_writable("--hdr-log", p)?;
    }
    let opts = crate::sinks::baseline::options(a.output.noise_floor.as_deref())?;
    let baseline = a
        .output
        .baseline
        .as_ref()
        .map(|b| Baseline::load(b.clone(), a.output.max_regression.as_deref(), opts))
        .transpose()?;
    Ok(Outputs {
        summary: !a.output.process_of_parent,
        json,
        files: crate::sinks::recorders::Paths {
            out: a.output.out.clone(),
            csv: a.output.csv.clone(),
            hdr_log: a.output.hdr_log.clone(),
            embed: a.output.shard.is_some() && a.output.json.is_some(),
        },
        rec: Default::default(),
        prometheus,
        web,
        influx,
        otlp,
        statsd,
        report,
        baseline,
        baseline_lines: Vec::new(),
        quiet: a.output.quiet,
        explain: a.output.explain,
        no_tui: a.output.no_tui,
        note: (a.load.requests.is_some() && a.load.duration.is_none()).then(|| {
            format!(
                "-n without -d: the run also stops after {} s; give -d to change that bound",
                crate::resolve::config::REQUESTS_TIME_BOUND.as_secs()
            )
        }),
    })
}
