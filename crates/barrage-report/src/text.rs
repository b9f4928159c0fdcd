//! Text: the human summary printed at the end of a run, as compact as wrk's output.
//!
//! About thirty lines, in the order a reader asks: what ran, how fast, how slow, what the wire
//! saw, what went wrong, do the counts add up. Every figure is read from the result as it is;
//! the only arithmetic here is display ratios (bytes per call) and the conservation check, so
//! the text can never disagree with the JSON it was rendered from.

use crate::fmt::{bytes, duration_us, real, setting_s, setting_us, thousands};
use crate::Renderer;
use barrage_metrics::{ErrorCounts, LatencyBasis, LatencyStats, RunConfig, RunResult, Status};
use std::io::{self, Write};

/// The summary; `explain` adds each readiness row's rule (`barrage run --explain`).
#[derive(Default)]
pub struct TextRenderer {
    pub explain: bool,
}

/// Width of the label column; section names and row labels live there.
const LABEL: usize = 14;
/// Width of one table column.
const COL: usize = 10;

impl Renderer for TextRenderer {
    fn render(&self, r: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        let mut lines = header(r);
        // Nothing ever connected: the header says why, and the connection lines are all
        // there is to show (no table of zeros).
        let sections = if r.summary.connections.succeeded == 0 && r.summary.exchanges.sent == 0 {
            vec![health(r)]
        } else {
            vec![
                answer(r),
                throughput(r),
                latency(r),
                steps(r),
                broadcast(r),
                io(r),
                health(r),
                crate::monitor_text::monitoring(r),
                server_metrics(r),
                crate::verdicts::verdicts(r, self.explain),
                warmup(r),
            ]
        };
        for section in sections {
            if !section.is_empty() {
                lines.push(String::new());
                lines.extend(section);
            }
        }
        for line in lines {
            writeln!(out, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

fn row(label: &str, rest: impl AsRef<str>) -> String {
    format!("{label:<LABEL$}{}", rest.as_ref())
}

/// A label followed by right-aligned columns.
fn table_row<S: AsRef<str>>(label: &str, cells: impl IntoIterator<Item = S>) -> String {
    let cells: String = cells
        .into_iter()
        .map(|c| format!("{:>COL$}", c.as_ref()))
        .collect();
    row(label, cells)
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

fn header(r: &RunResult) -> Vec<String> {
    let c = &r.config;
    let target = if c.target.contains("://") || c.protocol.is_empty() {
        c.target.clone()
    } else {
        format!("{}://{}", c.protocol, c.target)
    };
    let mut lines = vec![format!(
        "barrage {} — {target}",
        r.environment.barrage_version
    )];
    let status = match r.status {
        Status::Completed => None,
        Status::Interrupted => Some("INTERRUPTED"),
        Status::Stopped => Some("STOPPED"),
        Status::Failed => Some("FAILED"),
        Status::Incomplete => Some("INCOMPLETE"),
    };
    if let Some(status) = status {
        let mut line = format!("  {status}");
        if let Some(m) = &r.message {
            line += &format!(": {m}");
        }
        if matches!(r.status, Status::Interrupted | Status::Stopped) {
            line += " (figures cover the run until then)";
        }
        lines.push(line);
    }

    let mut who = format!(
        "  {} on {}",
        plural(c.connections, "connection", "connections"),
        plural(c.threads as u64, "thread", "threads"),
    );
    if let Some(rate) = c.connect_rate {
        who += &format!(", connecting {}/s", real(rate));
    }
    if let Some(st) = &c.conn_stages {
        who += &format!(" (ramped: {st})");
    }
    // `https://`: what each connection's ALPN chose.
    let h2 = &r.summary.totals.h2;
    if h2.http1_connections > 0 || (c.protocol == "https" && h2.connections > 0) {
        who += &format!(
            " (ALPN chose h2 for {}, HTTP/1.1 for {})",
            thousands(h2.connections),
            thousands(h2.http1_connections)
        );
    }
    if let Some(u) = &c.users {
        who = format!(
            "  {} from {} (arrive {}, last at {}, hold {}, depart {}) on {}",
            plural(u.count, "user", "users"),
            u.scenario,
            u.arrive,
            setting_s(u.last_arrival_s),
            setting_s(u.hold_s),
            u.depart.replace('_', " "),
            plural(c.threads as u64, "thread", "threads"),
        );
        lines.push(who);
        let mut what = format!(
            "  {}: {}",
            plural(c.steps.len() as u64, "step that sends", "steps that send"),
            c.steps
                .iter()
                .map(|s| if s.open_loop {
                    format!("{} (every)", s.name)
                } else {
                    s.name.clone()
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        if c.warmup_s > 0.0 {
            what += &format!("; warm-up {}", setting_s(c.warmup_s));
        }
        what += &format!("; timeout {}", setting_us(c.timeout_ms * 1e3));
        lines.push(what);
        if let Some(tls) = crate::fmt::tls_setting(r) {
            lines.push(format!("  TLS {tls}"));
        }
        return lines;
    }
    lines.push(format!("{who}, {}", mode(c)));

    let mut what = match (c.duration_s, c.requests) {
        (Some(d), Some(n)) => format!(
            "for {} or {}",
            setting_s(d),
            plural(n, "request", "requests")
        ),
        (Some(d), None) => format!("for {}", setting_s(d)),
        (None, Some(n)) => format!("up to {}", plural(n, "request", "requests")),
        (None, None) => "until stopped".into(),
    };
    if c.warmup_s > 0.0 {
        what += &format!(", warm-up {}", setting_s(c.warmup_s));
    }
    match &c.http {
        Some(req) => what += &format!("; {req}"),
        None if !c.commands.is_empty() => {
            let word = if c.commands.len() == 1 {
                "command"
            } else {
                "commands"
            };
            what += &format!("; {word} {}", c.commands.join(", "))
        }
        None => {
            what += &format!(
                "; message {}, expect {}{}",
                bytes(c.message_bytes as f64),
                c.expect,
                if c.verify { " (verified)" } else { "" },
            )
        }
    }
    what += &format!(", timeout {}", setting_us(c.timeout_ms * 1e3));
    lines.push(format!("  {what}"));
    if let Some(tls) = crate::fmt::tls_setting(r) {
        lines.push(format!("  TLS {tls}"));
    }
    if let Some(p) = &c.proxy {
        lines.push(format!("  through proxy {p}"));
    }
    if let Some(p) = &c.subprotocol {
        lines.push(format!("  subprotocol {p}"));
    }
    lines
}

/// `, timer slack 1 ms` (open loop; nothing when exact or not recorded).
fn slack(c: &RunConfig) -> String {
    match c.timer_slack_ms {
        Some(ms) if ms > 0.0 => format!(", timer slack {}", setting_us(ms * 1e3)),
        _ => String::new(),
    }
}

/// The load mode with the one parameter that defines it.
fn mode(c: &RunConfig) -> String {
    let ms = |v: Option<f64>| v.map(|v| setting_us(v * 1e3)).unwrap_or_else(|| "?".into());
    let pipeline = match c.streams {
        Some(n) if n != 1 => format!(", {}", crate::fmt::streams(n)),
        _ if c.pipeline > 1 => format!(", pipeline {}", c.pipeline),
        _ => String::new(),
    };
    match c.mode.as_str() {
        // HTTP/2 and gRPC keep their streams in flight as HTTP/1.1 its pipeline.
        "ping-pong" if c.streams.is_some() => {
            format!("ping-pong, {}", crate::fmt::streams(c.pipeline))
        }
        "ping-pong" => format!("ping-pong, pipeline {}", c.pipeline),
        "think" => format!("think {}{pipeline}", ms(c.think_ms)),
        "interval" => format!(
            "interval {} per connection{pipeline}{}",
            ms(c.interval_ms),
            slack(c)
        ),
        "rate" if c.rate_stages.is_some() => format!(
            "rate stages {} (peak {}/s){}",
            c.rate_stages.as_deref().unwrap_or(""),
            c.rate.map(real).unwrap_or_else(|| "?".into()),
            slack(c)
        ),
        "rate" => format!(
            "rate {}/s{pipeline}{}",
            c.rate.map(real).unwrap_or_else(|| "?".into()),
            slack(c)
        ),
        "hold" => "hold: connections only, no load sent".into(),
        other => format!("{other}{pipeline}"),
    }
}

/// The steady state's rate and window when the run ramped (the measured average then covers
/// the ramp): [`barrage_metrics::figures::headline_rate`].
fn steady(r: &RunResult) -> Option<(f64, f64, f64)> {
    let h = barrage_metrics::figures::headline_rate(r, None);
    h.steady.map(|(from, to)| (h.rps, from, to))
}

/// The rate [`headline`] gives: the steady state's when the run ramped (its average then
/// covers the ramp), else the measured window's average. `barrage versus` picks its median
/// rep by it, so the figure it picks by is the one its rep lines print.
pub fn headline_rate(r: &RunResult) -> f64 {
    barrage_metrics::figures::headline_rate(r, None).rps
}

/// A run in one line, as the summary's `Answer` gives it (and `barrage versus` per rep):
/// `134,364 req/s, p50 347 µs, p99 681 µs, no errors` (the steady state's rate when it ramped).
pub fn headline(r: &RunResult) -> String {
    let s = &r.summary;
    if r.config.mode == "hold" {
        let mut line = format!(
            "{} connections held at the end (peak {})",
            thousands(s.connections.open),
            thousands(s.connections.peak)
        );
        let got = s.totals.mqtt.received_total();
        if got > 0 {
            line += &format!(", {} messages delivered", thousands(got));
        }
        return line;
    }
    let within = if steady(r).is_some() {
        " in the steady state"
    } else {
        ""
    };
    let mut parts = vec![format!("{} req/s{within}", real(headline_rate(r)).trim())];
    let l = &s.latency_us;
    // A broadcast scenario measures its deliveries (from a send to each other member): that
    // latency leads; the steps' reply latency is in the Steps table.
    let deliveries = s
        .broadcast
        .as_ref()
        .and_then(|b| b.peer_us.as_ref())
        .filter(|d| d.count > 0 && r.config.users.is_some());
    if let Some(d) = deliveries {
        parts.push(format!(
            "delivery p50 {}, p99 {}",
            duration_us(d.p50 as f64),
            duration_us(d.p99 as f64)
        ));
    } else if l.count > 0 {
        parts.push(format!(
            "p50 {}, p99 {}",
            duration_us(l.p50 as f64),
            duration_us(l.p99 as f64)
        ));
    }
    parts.push(match s.error_rate() {
        Some(e) if s.failed_requests.total() > 0 => format!("errors {}", pct(e)),
        Some(_) => "no errors".into(),
        None => "nothing completed".into(),
    });
    parts.join(", ")
}

/// The answer first, in two lines: how fast, how slow, how many failed; and the verdict.
fn answer(r: &RunResult) -> Vec<String> {
    let mut lines = vec![row("Answer", headline(r))];
    let mut verdict = Vec::new();
    if !r.thresholds.is_empty() {
        let failed: Vec<&str> = r
            .thresholds
            .iter()
            .filter(|o| o.passed != Some(true))
            .map(|o| o.expr.as_str())
            .collect();
        verdict.push(match failed.len() {
            0 => format!(
                "thresholds pass ({} of {})",
                r.thresholds.len(),
                r.thresholds.len()
            ),
            n => format!(
                "thresholds FAIL ({n} of {}: {})",
                r.thresholds.len(),
                failed.join(", ")
            ),
        });
    }
    let base = r.baseline.as_ref().filter(|b| !b.regressions.is_empty());
    if let Some(b) = base {
        verdict.push(crate::verdicts::baseline_verdict(b));
    }
    if let Some(v) = crate::doc::verdict(r) {
        verdict.push(format!("readiness {v}"));
    }
    if !verdict.is_empty() {
        lines.push(row("Verdict", verdict.join("; ")));
    }
    // The limits checked against the baseline, beside the verdict they decide.
    if let Some(b) = base {
        lines.push(row(
            "Baseline",
            format!("{} (the comparison: at the end)", b.file),
        ));
        for g in &b.regressions {
            lines.push(row("", crate::verdicts::regression_line(g)));
        }
    }
    lines
}

/// Throughput, each figure with the window it covers: the headline's first (the steady
/// state's when the run ramped), the measured window's average beside it only when it is
/// another figure, and the best second.
fn throughput(r: &RunResult) -> Vec<String> {
    let s = &r.summary;
    // The best whole second, when there were seconds enough for it to say more than the
    // average (a run shorter than two seconds has none that covers it).
    let best = if s.duration_s >= 2.0 && s.rps.peak >= s.rps.avg {
        format!("; best second {}", real(s.rps.peak).trim())
    } else {
        String::new()
    };
    let window = duration_us(s.duration_s * 1e6);
    let requests = plural(s.requests, "request", "requests");
    match steady(r) {
        Some((rps, from, to)) => vec![
            row(
                "Throughput",
                format!(
                    "{} req/s in the steady state ({from:.0} s to {to:.0} s){best}",
                    real(rps).trim()
                ),
            ),
            row(
                "",
                format!(
                    "{} req/s over the whole measured {window}, ramp included: {requests}",
                    real(s.rps.avg).trim()
                ),
            ),
        ],
        None => vec![row(
            "Throughput",
            format!(
                "{} req/s: {requests} in the measured {window}{best}",
                real(s.rps.avg).trim()
            ),
        )],
    }
}

fn latency(r: &RunResult) -> Vec<String> {
    let s = &r.summary;
    let l = &s.latency_us;
    let mut lines = if l.count == 0 {
        // Exchanges that complete when written (`--expect none`, fire-and-forget steps) are
        // counted, not timed.
        let why = if s.exchanges.completed > 0 {
            "not timed: the exchanges complete when written, with no reply to wait for"
        } else {
            "no completed exchanges"
        };
        vec![row("Latency", why)]
    } else {
        let us = |v: u64| duration_us(v as f64);
        vec![
            table_row("Latency", ["min", "mean", "stdev", "max"]),
            table_row(
                "",
                [
                    us(l.min),
                    duration_us(l.mean),
                    duration_us(l.stdev),
                    us(l.max),
                ],
            ),
            table_row("", ["p50", "p75", "p90", "p99", "p99.9", "p99.99"]),
            table_row("", [l.p50, l.p75, l.p90, l.p99, l.p999, l.p9999].map(us)),
        ]
    };
    if l.count > 0 && r.config.users.is_some() {
        // Only a scenario with `every` steps has steps timed from an intended time.
        let line = if r.config.steps.iter().any(|s| s.open_loop) {
            "  every-steps timed from their intended send time (open loop); other steps \
             from the actual send"
        } else {
            "  every step timed from its actual send"
        };
        lines.push(line.to_string());
    } else if l.count > 0 {
        lines.push(match s.latency_basis {
            LatencyBasis::IntendedSend => "  latency measured from the intended send time \
                                           (open loop, corrected for coordinated omission)"
                .to_string(),
            LatencyBasis::ActualSend => {
                "  service time: measured from the actual send (closed loop)".to_string()
            }
        });
    }
    if l.overflow > 0 {
        lines.push(format!(
            "  {} above the 1 h range, counted as 1 h",
            plural(l.overflow, "value", "values")
        ));
    }
    if let Some(t) = s.ttfb_us.as_ref().filter(|t| t.count > 0) {
        lines.push(row("  first byte", percentiles(t, "response", "responses")));
    }
    if let Some(t) = s.stream_msg_us.as_ref().filter(|t| t.count > 0) {
        lines.push(row(
            "  streamed",
            format!(
                "{}, each from its call's start",
                percentiles(t, "message", "messages")
            ),
        ));
    }
    if let Some(t) = s.server_us.as_ref().filter(|t| t.count > 0) {
        lines.push(row(
            "  server",
            format!(
                "{}, by Server-Timing",
                percentiles(t, "response", "responses")
            ),
        ));
        if let Some(g) = s.server_gap_us.as_ref() {
            lines.push(row(
                "  difference",
                format!(
                    "p50 {}, p99 {}, max {} (latency less the server's time)",
                    duration_us(g.p50 as f64),
                    duration_us(g.p99 as f64),
                    duration_us(g.max as f64)
                ),
            ));
        }
    }
    if s.connect_us.count > 0 {
        lines.push(row(
            "  connect",
            percentiles(&s.connect_us, "connect", "connects"),
        ));
    }
    if let Some(t) = s.tls_us.as_ref().filter(|t| t.count > 0) {
        lines.push(row("  TLS", percentiles(t, "handshake", "handshakes")));
    }
    if let Some(t) = s.handshake_us.as_ref().filter(|t| t.count > 0) {
        let what = if !r.summary.totals.mqtt.is_empty() {
            "  CONNACK"
        } else if r.summary.totals.h2.is_empty() {
            "  upgrade"
        } else {
            "  h2 setup"
        };
        lines.push(row(what, percentiles(t, "handshake", "handshakes")));
    }
    lines
}

/// One-to-many delivery (scenario broadcast steps).
fn broadcast(r: &RunResult) -> Vec<String> {
    let Some(b) = &r.summary.broadcast else {
        return Vec::new();
    };
    let c = &b.c;
    let reach = b.reach.map_or("not measured (no expect)".to_string(), |x| {
        format!("{:.2} %", x * 100.0)
    });
    let mut lines = vec![
        row(
            "Broadcast",
            format!(
                "{} sent; deliveries expected {}, received {} (reach {reach})",
                plural(c.sent, "message", "messages"),
                thousands(c.expected),
                thousands(c.delivered),
            ),
        ),
        row(
            "",
            format!(
                "not received {} (lost {}), late {}, duplicates {}; own copies {}",
                thousands(b.missing),
                thousands(b.lost),
                thousands(c.late),
                thousands(c.duplicates),
                thousands(c.own)
            ),
        ),
    ];
    if let Some(rooms) = &b.rooms {
        lines.push(row(
            "",
            format!(
                "rooms {} of {}: {}",
                thousands(rooms.count),
                plural(rooms.users, "user", "users"),
                crate::fmt::room_sizes(rooms)
            ),
        ));
    }
    if c.remote > 0 {
        lines.push(row(
            "",
            if b.remote_timed() {
                format!(
                    "{} from other processes, timed (they read one host's clock)",
                    thousands(c.remote)
                )
            } else if let Some(us) = b.remote_clock_us {
                format!(
                    "{} from other processes, timed on two clocks known to agree within {}",
                    thousands(c.remote),
                    duration_us(us as f64)
                )
            } else {
                format!(
                    "{} from other processes: counted, not timed (their clocks are not known to agree closely enough)",
                    thousands(c.remote)
                )
            },
        ));
    }
    if let Some(l) = &b.peer_us {
        lines.push(row("  to others", percentiles(l, "delivery", "deliveries")));
    }
    if let Some(l) = &b.remote_us {
        lines.push(row(
            "  other process",
            percentiles(l, "delivery", "deliveries"),
        ));
    }
    if let Some(l) = &b.own_us {
        lines.push(row("  own copy", percentiles(l, "delivery", "deliveries")));
    }
    if let (Some(f), Some(l), Some(s)) = (&b.first_us, &b.last_us, &b.spread_us) {
        lines.push(row(
            "  per message",
            format!(
                "first recipient p50 {}, p99 {}; last p50 {}, p99 {}; spread p50 {}, p99 {}",
                duration_us(f.p50 as f64),
                duration_us(f.p99 as f64),
                duration_us(l.p50 as f64),
                duration_us(l.p99 as f64),
                duration_us(s.p50 as f64),
                duration_us(s.p99 as f64),
            ),
        ));
    }
    lines
}

/// Scenario runs: one row per step (what it sent and how it ended, its latency), and a line
/// under a step with failures naming their classes.
fn steps(r: &RunResult) -> Vec<String> {
    let s = &r.summary;
    if s.steps.is_empty() || r.config.users.is_none() {
        return Vec::new();
    }
    let mut lines = vec![table_row(
        "Steps",
        [
            "sent",
            "completed",
            "failed",
            "not sent",
            "p50",
            "p99",
            "max",
        ],
    )];
    for k in &s.steps {
        let label = format!("  {}", k.name);
        let cells = crate::fmt::step_figures(k);
        if label.len() >= LABEL {
            lines.push(label);
            lines.push(table_row("", cells));
        } else {
            lines.push(table_row(&label, cells));
        }
        let mut notes = crate::fmt::step_failures(k);
        if k.c.capture_misses > 0 {
            notes.push(format!(
                "{} captures found nothing",
                thousands(k.c.capture_misses)
            ));
        }
        if !notes.is_empty() {
            lines.push(row("", format!("    {}", notes.join(", "))));
        }
    }
    if s.steps.iter().any(|k| k.server_us.is_some()) {
        lines.push(table_row(
            "Server time",
            [
                "srv p50", "srv p99", "cli p50", "cli p99", "diff p50", "diff p99",
            ],
        ));
        for k in s.steps.iter() {
            let (Some(sv), Some(l), Some(g)) = (&k.server_us, &k.latency_us, &k.server_gap_us)
            else {
                continue;
            };
            let label = format!("  {}", k.name);
            lines.push(table_row(
                if label.len() < LABEL { &label } else { "" },
                [sv.p50, sv.p99, l.p50, l.p99, g.p50, g.p99].map(|v| duration_us(v as f64)),
            ));
        }
    }
    if s.totals.pushed > 0 {
        lines.push(row(
            "",
            format!(
                "{} pushed messages taken by on rules",
                thousands(s.totals.pushed)
            ),
        ));
    }
    lines
}

fn percentiles(l: &LatencyStats, one: &str, many: &str) -> String {
    format!(
        "p50 {}, p99 {}, max {} ({})",
        duration_us(l.p50 as f64),
        duration_us(l.p99 as f64),
        duration_us(l.max as f64),
        plural(l.count, one, many),
    )
}

fn io(r: &RunResult) -> Vec<String> {
    let io = &r.summary.io;
    let per_call = |b: u64, n: u64| {
        if n == 0 {
            "-".to_string()
        } else {
            bytes(b as f64 / n as f64)
        }
    };
    let line = |label, calls: u64, calls_s: f64, b: u64, b_s: f64| {
        table_row(
            label,
            [
                thousands(calls),
                real(calls_s),
                bytes(b as f64),
                bytes(b_s),
                per_call(b, calls),
            ],
        )
    };
    vec![
        table_row("IO", ["calls", "calls/s", "bytes", "bytes/s", "per call"]),
        line(
            "  reads",
            io.reads,
            io.reads_per_s,
            io.bytes_read,
            io.bytes_read_per_s,
        ),
        line(
            "  writes",
            io.writes,
            io.writes_per_s,
            io.bytes_written,
            io.bytes_written_per_s,
        ),
    ]
}

fn errors(e: &ErrorCounts) -> String {
    if e.total() == 0 {
        return "none".into();
    }
    let classes: Vec<String> = e
        .nonzero()
        .map(|(c, n)| format!("{c} {}", thousands(n)))
        .collect();
    format!("{} ({})", thousands(e.total()), classes.join(", "))
}

/// Requests that did not complete, and their share: the error rate.
fn failed_requests(s: &barrage_metrics::Summary) -> String {
    match s.error_rate() {
        Some(rate) if rate > 0.0 => format!(
            "{} of {} requests ({}): {}",
            thousands(s.failed_requests.total()),
            thousands(s.requests + s.failed_requests.total()),
            pct(rate),
            s.failed_requests
                .nonzero()
                .map(|(c, n)| format!("{c} {}", thousands(n)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => "none".into(),
    }
}

/// Error events (a broken connection counts once, however many requests it carried).
fn error_events(e: &ErrorCounts) -> String {
    match e.total() {
        0 => "none".into(),
        _ => format!("{} events", errors(e)),
    }
}

fn pct(rate: f64) -> String {
    let p = rate * 100.0;
    if p >= 10.0 {
        format!("{p:.1} %")
    } else {
        format!("{p:.3} %")
    }
}

/// Connections, errors and the exchange conservation line: is the run to be trusted?
fn health(r: &RunResult) -> Vec<String> {
    let s = &r.summary;
    let c = &s.connections;
    let x = &s.exchanges;
    let mut lines = vec![
        row(
            "Connections",
            format!(
                "target {}, open {} at end, peak {}",
                thousands(c.target),
                thousands(c.open),
                thousands(c.peak)
            ),
        ),
        row(
            "",
            format!(
                "attempts {}, succeeded {}, failed {}, closed by peer {}",
                thousands(c.attempts),
                thousands(c.succeeded),
                thousands(c.failed),
                thousands(c.closed_by_peer)
            ),
        ),
        row("Failed", failed_requests(s)),
        row("Errors", error_events(&s.errors)),
    ];
    for (i, r) in s.totals.reasons.iter().enumerate() {
        let label = if i == 0 { "Said" } else { "" };
        lines.push(row(label, format!("{}: {}", r.class, r.reason)));
    }
    if let Some(ramp) = &s.ramp {
        let ramp_line = match ramp.all_ready_s {
            Some(t) if s.latency_basis == LatencyBasis::IntendedSend => format!(
                "all {} ready after {t:.2} s; each schedule started when its connection was up",
                thousands(ramp.ready)
            ),
            Some(t) => format!("all {} ready after {t:.2} s", thousands(ramp.ready)),
            None => format!(
                "{} of {} connections were ever ready",
                thousands(ramp.ready),
                thousands(c.target)
            ),
        };
        lines.insert(2, row("Ramp", ramp_line));
    }
    let t = &s.totals;
    if !t.status.is_empty() {
        let codes: Vec<String> = t
            .status
            .iter()
            .map(|(c, n)| format!("{c} {}", thousands(n)))
            .collect();
        let classes: Vec<String> = (1..=5u16)
            .map(|d| (d, t.status.range(d * 100, d * 100 + 99)))
            .filter(|(_, n)| *n > 0)
            .map(|(d, n)| format!("{d}xx {}", thousands(n)))
            .collect();
        lines.insert(
            2,
            row(
                "HTTP status",
                format!("{} ({})", classes.join(", "), codes.join(", ")),
            ),
        );
    }
    let per_command: Vec<_> = t.commands.iter().enumerate().collect();
    for &(i, k) in per_command.iter().rev() {
        let name = r.config.commands.get(i).map_or("?", String::as_str);
        let mut line = format!(
            "{name}: sent {}, completed {}",
            thousands(k.sent),
            thousands(k.completed)
        );
        if k.misses > 0 {
            line += &format!(" ({} misses)", thousands(k.misses));
        }
        if k.errors > 0 {
            line += &format!(", error replies {}", thousands(k.errors));
        }
        lines.insert(2, row(if i == 0 { "Commands" } else { "" }, line));
    }
    // Each protocol's own counters (HTTP/2, gRPC, MQTT, ...): `crate::protocols`.
    let mut at = 2;
    for part in crate::protocols::parts(r) {
        for (i, line) in part.lines.into_iter().enumerate() {
            lines.insert(at, row(if i == 0 { part.title } else { "" }, line));
            at += 1;
        }
    }
    if !t.ws_close.is_empty() {
        let codes: Vec<String> = t
            .ws_close
            .iter()
            .map(|(c, n)| format!("{c} {}", thousands(n)))
            .collect();
        lines.insert(2, row("WS closes", codes.join(", ")));
    }
    let mut conservation = format!(
        "sent {} = completed {} + failed {} + in flight {} at end",
        thousands(x.sent),
        thousands(x.completed),
        thousands(x.failed),
        thousands(x.in_flight_at_end)
    );
    if !x.balanced() {
        let rhs = x.completed + x.failed + x.in_flight_at_end;
        conservation += &format!(" (DOES NOT BALANCE: off by {})", x.sent.abs_diff(rhs));
    }
    lines.push(row("Exchanges", conservation));
    let mut extra = Vec::new();
    if r.warmup.is_some() {
        extra.push("whole run, warm-up included".to_string());
    }
    if x.scheduled > 0 && x.scheduled == x.sent + x.not_sent {
        extra.push(format!(
            "scheduled {} = sent {} + not sent {}",
            thousands(x.scheduled),
            thousands(x.sent),
            thousands(x.not_sent)
        ));
    } else if x.scheduled > 0 {
        extra.push(format!(
            "scheduled {}: sent {}, not sent {}, due after -n was reached {}",
            thousands(x.scheduled),
            thousands(x.sent),
            thousands(x.not_sent),
            thousands(x.scheduled.saturating_sub(x.sent + x.not_sent))
        ));
    } else if x.not_sent > 0 {
        extra.push(format!("not sent {}", thousands(x.not_sent)));
    }
    if x.unexpected_replies > 0 {
        extra.push(format!(
            "unexpected replies {}",
            thousands(x.unexpected_replies)
        ));
    }
    if !extra.is_empty() {
        lines.push(row("", extra.join("; ")));
    }
    lines
}

fn warmup(r: &RunResult) -> Vec<String> {
    let Some(w) = &r.warmup else {
        return Vec::new();
    };
    let mut detail = format!(
        "{} ({} req/s in the warm-up), p99 {}",
        plural(w.requests, "request", "requests"),
        real(w.rps),
        duration_us(w.latency_us.p99 as f64)
    );
    if w.errors.total() > 0 {
        detail += &format!(", errors {}", errors(&w.errors));
    }
    vec![
        row(
            "Warm-up",
            format!(
                "{}, excluded from the figures above",
                duration_us(w.duration_s * 1e6)
            ),
        ),
        row("", detail),
    ]
}

/// The server's own metrics (`--server-metrics`): one line per series.
fn server_metrics(r: &RunResult) -> Vec<String> {
    let real = crate::fmt::signed_real;
    let n = |v: Option<f64>| v.map_or("–".to_string(), real);
    r.server_metrics
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let what = if m.kind == "rate" { " /s" } else { "" };
            let mut line = format!(
                "{}{what}: min {}, mean {}, max {}, last {}",
                m.name,
                n(m.min()),
                n(m.mean()),
                n(m.max()),
                n(m.last())
            );
            if let Some(inc) = m.increase {
                line += &format!("; grew by {}", real(inc));
            }
            if m.missed > 0 {
                line += &format!(" ({} scrapes missed it)", m.missed);
            }
            row(if i == 0 { "Server stats" } else { "" }, line)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(mode: &str) -> RunConfig {
        RunConfig {
            mode: mode.into(),
            pipeline: 1,
            ..Default::default()
        }
    }

    #[test]
    fn mode_names_its_parameter() {
        let mut c = config("ping-pong");
        assert_eq!(mode(&c), "ping-pong, pipeline 1");
        c = config("interval");
        c.interval_ms = Some(50.0);
        assert_eq!(mode(&c), "interval 50 ms per connection");
        c = config("rate");
        c.rate = Some(1000.0);
        c.pipeline = 4;
        assert_eq!(mode(&c), "rate 1,000/s, pipeline 4");
        c = config("think");
        c.think_ms = Some(10.0);
        assert_eq!(mode(&c), "think 10 ms");
        c = config("think");
        assert_eq!(mode(&c), "think ?");
        assert_eq!(mode(&config("burst")), "burst");
        c = config("interval");
        (c.interval_ms, c.timer_slack_ms) = (Some(50.0), Some(1.0));
        assert_eq!(mode(&c), "interval 50 ms per connection, timer slack 1 ms");
        c.timer_slack_ms = Some(0.0);
        assert_eq!(mode(&c), "interval 50 ms per connection");
    }

    #[test]
    fn errors_list_only_nonzero_classes() {
        use barrage_metrics::ErrorClass;
        let mut e = ErrorCounts::default();
        assert_eq!(errors(&e), "none");
        e.add(ErrorClass::Timeout, 1_200);
        e.add(ErrorClass::NotSent, 3);
        assert_eq!(errors(&e), "1,203 (timeout 1,200, not_sent 3)");
    }
}
