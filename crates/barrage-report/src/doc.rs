//! The report as a document: sections of tables, paragraphs and charts, built once from a
//! [`RunResult`] and written out by the Markdown and HTML renderers.
//!
//! Key decision: content lives here, markup lives in `markdown.rs` and `html.rs`, so the two
//! reports cannot disagree on a figure and a new section appears in both at once. Strings are
//! kept raw (unescaped); each writer escapes for its own syntax. A section is only built when
//! its data was collected, and a section without blocks is dropped, so nothing shows empty.

use crate::fmt::{bytes, duration_us, real, setting_s, setting_us, thousands};
use barrage_metrics::readiness::Grade;
use barrage_metrics::{RunResult, Status};

pub(crate) mod analysis;
mod block;
pub(crate) mod charts;
mod metrics;

pub(crate) use block::{grade, kv, table, Block};

/// One part of the report, with a stable `id` (the HTML anchor, the snapshot key).
pub(crate) struct Section {
    pub id: &'static str,
    pub title: &'static str,
    pub blocks: Vec<Block>,
}

/// Every section of the report, in reading order, empty ones left out.
pub(crate) fn build(r: &RunResult) -> Vec<Section> {
    let sections = vec![
        section("overview", "Overview", overview(r)),
        section("warnings", "Warnings", warnings(r)),
        section("environment", "Environment", environment(r)),
        section("configuration", "Configuration", configuration(r)),
        section("metrics", "Core metrics", metrics::metrics(r)),
        section("network-io", "Network IO", metrics::network_io(r)),
        section("resources", "Server resources", analysis::resources(r)),
        section("server-metrics", "Server metrics", server_metrics(r)),
        section("charts", "Charts over time", charts::over_time(r)),
        section(
            "latency-distribution",
            "Latency distribution",
            charts::spectrum(r),
        ),
        section(
            "analysis",
            "Stability and leak analysis",
            analysis::analysis(r),
        ),
        section("thresholds", "Thresholds", analysis::thresholds(r)),
        section("baseline", "Baseline", baseline(r)),
        section("readiness", "Readiness", analysis::readiness(r)),
    ];
    sections
        .into_iter()
        .filter(|s| !s.blocks.is_empty())
        .collect()
}

/// The server's own metrics (`--server-metrics`): a row per series, then their charts.
fn server_metrics(r: &RunResult) -> Vec<Block> {
    if r.server_metrics.is_empty() {
        return Vec::new();
    }
    let real = crate::fmt::signed_real;
    let n = |v: Option<f64>| v.map_or("–".into(), real);
    let rows = r
        .server_metrics
        .iter()
        .map(|m| {
            [
                m.name.clone(),
                m.selector.clone(),
                if m.kind == "rate" {
                    "counter, per second".into()
                } else {
                    m.kind.clone()
                },
                n(m.min()),
                n(m.mean()),
                n(m.max()),
                n(m.last()),
                m.increase.map_or("–".into(), real),
                m.samples.len().to_string(),
                m.missed.to_string(),
            ]
        })
        .collect();
    let mut out = vec![
        Block::Para(
            "Scraped from the server while the run went; a counter is its rate between scrapes, the series a selector matched are summed.".into(),
        ),
        table(
            ["name", "selector", "kind", "min", "mean", "max", "last", "increase", "samples", "missed"],
            rows,
        ),
    ];
    out.extend(charts::server_metrics(r));
    out
}

/// `--baseline` with `--max-regression`: each limit and how it ended (a failed one made the
/// exit code 3).
fn baseline(r: &RunResult) -> Vec<Block> {
    let Some(b) = r.baseline.as_ref().filter(|b| !b.regressions.is_empty()) else {
        return Vec::new();
    };
    vec![
        Block::Para(format!(
            "Compared with {}: {}.",
            b.file,
            crate::verdicts::baseline_verdict(b)
        )),
        table(
            ["limit", "outcome"],
            b.regressions
                .iter()
                .map(|g| [g.metric.clone(), crate::verdicts::regression_line(g)])
                .collect(),
        ),
    ]
}

fn section(id: &'static str, title: &'static str, blocks: Vec<Block>) -> Section {
    Section { id, title, blocks }
}

/// `protocol://target` unless the target already names its scheme.
pub(crate) fn target(r: &RunResult) -> String {
    let c = &r.config;
    if c.target.contains("://") || c.protocol.is_empty() {
        c.target.clone()
    } else {
        format!("{}://{}", c.protocol, c.target)
    }
}

fn status(r: &RunResult) -> String {
    let word = match r.status {
        Status::Completed => "completed",
        Status::Interrupted => "interrupted (figures cover the run until then)",
        Status::Stopped => "stopped (figures cover the run until then)",
        Status::Failed => "failed",
        Status::Incomplete => "incomplete",
    };
    match &r.message {
        Some(m) => format!("{word}: {m}"),
        None => word.to_string(),
    }
}

/// The readiness table in one line: the worst measured grade and the aspects that have it.
pub(crate) fn verdict(r: &RunResult) -> Option<String> {
    let rank = |g: Grade| match g {
        Grade::Fail => 3,
        Grade::Warn => 2,
        Grade::Pass => 1,
        Grade::NotMeasured => 0,
    };
    let worst = r
        .readiness
        .iter()
        .map(|row| row.status)
        .max_by_key(|g| rank(*g))?;
    let aspects: Vec<&str> = r
        .readiness
        .iter()
        .filter(|row| row.status == worst)
        .map(|row| row.aspect.as_str())
        .collect();
    Some(match worst {
        Grade::Pass => "pass: every measured aspect passed".to_string(),
        Grade::NotMeasured => "not measured".to_string(),
        g => format!("{} ({})", grade(g), aspects.join(", ")),
    })
}

fn mode(r: &RunResult) -> String {
    let c = &r.config;
    let ms = |v: Option<f64>| v.map(|v| setting_us(v * 1e3)).unwrap_or_else(|| "?".into());
    let base = match c.mode.as_str() {
        "think" => format!("think {}", ms(c.think_ms)),
        "interval" => format!("interval {} per connection", ms(c.interval_ms)),
        "rate" => format!("rate {}/s", c.rate.map(real).unwrap_or_else(|| "?".into())),
        other => other.to_string(),
    };
    match c.streams {
        // HTTP/2 and gRPC: a closed loop keeps `pipeline` streams in flight.
        Some(_) if c.mode == "ping-pong" => format!("{base}, {}", crate::fmt::streams(c.pipeline)),
        Some(n) => format!("{base}, {}", crate::fmt::streams(n)),
        None => format!("{base}, pipeline {}", c.pipeline),
    }
}

fn overview(r: &RunResult) -> Vec<Block> {
    let c = &r.config;
    let mut pairs = vec![
        ("Target", target(r)),
        ("Protocol", c.protocol.clone()),
        ("Mode", mode(r)),
        (
            "Duration",
            format!("{} measured", duration_us(r.summary.duration_s * 1e6)),
        ),
        ("Started", r.started_at.clone()),
        ("Status", status(r)),
    ];
    if let Some(v) = verdict(r) {
        pairs.push(("Verdict", v));
    }
    if let Some(b) = r.baseline.as_ref().filter(|b| !b.regressions.is_empty()) {
        pairs.push(("Baseline", crate::verdicts::baseline_verdict(b)));
    }
    if !r.thresholds.is_empty() {
        let passed = r
            .thresholds
            .iter()
            .filter(|o| o.passed == Some(true))
            .count();
        pairs.push((
            "Thresholds",
            format!("{passed} of {} passed", r.thresholds.len()),
        ));
    }
    vec![kv(&pairs)]
}

fn warnings(r: &RunResult) -> Vec<Block> {
    let mut out = Vec::new();
    if let Some(a) = &r.analysis {
        if let Some(c) = a.correctness.as_ref().filter(|c| c.framing_suspect) {
            out.push(Block::Warning(format!(
                "{} unexpected replies = {:.1} % of {} completed exchanges: the reply framing \
                 (--expect) does not match what the server sends, so latency and throughput \
                 count the wrong things (rule: {}).",
                thousands(c.unexpected_replies),
                c.unexpected_pct,
                thousands(c.completed),
                c.rule
            )));
        }
        if let Some(c) = a.contention.as_ref().filter(|c| c.material) {
            out.push(Block::Warning(format!(
                "Other processes used {:.0} % of a core on average (max {:.0} %) while the load \
                 ran: the machine was shared (rule: {}).",
                c.other_avg_pct, c.other_max_pct, c.rule
            )));
        }
        let sat = &a.saturation;
        for w in crate::verdicts::saturation_warnings(sat) {
            out.push(Block::Warning(format!(
                "{}{} (rule: {}).",
                w[..1].to_uppercase(),
                &w[1..],
                sat.rule
            )));
        }
    }
    let x = &r.summary.exchanges;
    if !x.balanced() {
        out.push(Block::Warning(format!(
            "Exchanges do not balance: sent {} != completed {} + failed {} + in flight {}.",
            thousands(x.sent),
            thousands(x.completed),
            thousands(x.failed),
            thousands(x.in_flight_at_end)
        )));
    }
    out
}

/// Arguments joined so that a shell reads them back: quoted when they hold anything special.
pub(crate) fn shell_line(args: &[String]) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c);
    args.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(safe) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn environment(r: &RunResult) -> Vec<Block> {
    let e = &r.environment;
    let mut out = vec![kv(&[
        ("Host", e.hostname.clone()),
        ("OS", e.os.clone()),
        ("Kernel", e.kernel.clone()),
        ("CPU", e.cpu_model.clone()),
        ("Cores", e.cores.to_string()),
        ("barrage", e.barrage_version.clone()),
    ])];
    if !r.command_line.is_empty() {
        out.push(Block::Heading("Command line".into()));
        out.push(Block::Code(shell_line(&r.command_line)));
    }
    out
}

fn configuration(r: &RunResult) -> Vec<Block> {
    let c = &r.config;
    let mut p: Vec<(&str, String)> = vec![
        ("Connections", thousands(c.connections)),
        ("Threads", c.threads.to_string()),
    ];
    if let Some(d) = c.duration_s {
        p.push(("Duration", setting_s(d)));
    }
    if let Some(n) = c.requests {
        p.push(("Requests", thousands(n)));
    }
    if c.warmup_s > 0.0 {
        p.push(("Warm-up", setting_s(c.warmup_s)));
    }
    p.push(("Mode", mode(r)));
    if let Some(rate) = c.connect_rate {
        p.push(("Connect rate", format!("{}/s", real(rate))));
    }
    p.push(("Timeout", setting_us(c.timeout_ms * 1e3)));
    p.push(("Connect timeout", setting_us(c.connect_timeout_ms * 1e3)));
    p.push(("Max backlog", thousands(c.max_backlog)));
    match &c.http {
        Some(req) => p.push(("HTTP request", req.clone())),
        None => {
            p.push((
                "Message",
                format!("{} ({})", c.message, bytes(c.message_bytes as f64)),
            ));
            if let Some(m) = &c.first_message {
                p.push(("First message", m.clone()));
            }
        }
    }
    p.push((
        "Expect",
        format!("{}{}", c.expect, if c.verify { " (verified)" } else { "" }),
    ));
    if let Some(t) = crate::fmt::tls_setting(r) {
        p.push(("TLS", t));
    }
    if let Some(s) = &c.subprotocol {
        p.push(("Subprotocol", s.clone()));
    }
    vec![kv(&p)]
}
