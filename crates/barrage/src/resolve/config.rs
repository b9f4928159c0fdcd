//! From the user's words to a validated plan (the second stage of argument handling).
//!
//! Every check that needs more than one value, the file system or the resolver lives here, and
//! every failure is a `Usage` error: one line naming the flag or file and how to fix it, exit
//! code 2. The engine never sees anything that did not pass through `plan`.

use crate::resolve::cli::RunArgs;
use crate::resolve::redact::{self, Secrets};
use crate::resolve::url::{self, Scheme};
use crate::usage::Usage;
use barrage_engine::spec::ns;
use barrage_engine::{
    escape, unescape, Clock, Framing, Mode, ModeSpec, Plan, ProtocolSpec, Spec, SpecError,
    StatusSet, TlsSpec,
};
use barrage_metrics::RunConfig;
use std::time::Duration;

const MAX_MESSAGE: u64 = 16 << 20;
/// `-n`: far beyond any run, low enough for exact arithmetic on request counts.
const MAX_REQUESTS: u64 = 1_000_000_000_000_000;
pub use barrage_engine::spec::REQUESTS_TIME_BOUND;
const DEFAULT_MESSAGE: &[u8] = b"hello from barrage\n";

pub fn plan(a: &RunArgs) -> Result<(Plan, Spec, RunConfig), Usage> {
    let mut secrets = Secrets::default();
    // No message may quote a value filled from the environment.
    plan_with(a, &mut secrets).map_err(|e| e.map(|s| secrets.scrub(s)))
}

fn plan_with(a: &RunArgs, secrets: &mut Secrets) -> Result<(Plan, Spec, RunConfig), Usage> {
    // What is shown (results, live line, messages) keeps placeholders and hides query tokens;
    // what is connected to has the secrets filled in.
    let shown_target = redact::url(&a.target, &a.redact);
    let filled_target = secrets.fill_str(&a.target, "target")?;
    let url = url::parse(&filled_target)
        .map_err(|e| e.map(|s| s.replace(&filled_target, &shown_target)))?;
    check_flags_fit(a, url.scheme)?;
    if a.scenario.is_none() {
        for (flag, given) in [
            ("--target", a.target_url.is_some()),
            ("--users", a.users.is_some()),
            ("--hold", a.hold.is_some()),
            ("--arrive", a.arrive.is_some()),
        ] {
            if given {
                return Err(Usage::says(
                    flag,
                    "applies to scenario files (barrage run FILE.toml); with a URL use -c and the mode flags",
                ));
            }
        }
    }
    let expect_spec = a.expect.as_deref().unwrap_or("echo");
    let framing = expect(expect_spec)?;
    if a.verify && framing != Framing::Echo {
        return Err(Usage::says(
            "--verify",
            format!("compares echoed bytes and needs --expect echo (got --expect {expect_spec})"),
        ));
    }
    let raw = match (&a.message, &a.message_file) {
        (Some(m), _) => unescape(m).map_err(|e| Usage::new("--message", e))?,
        (None, Some(path)) => read_capped("--message-file", path, &path.display(), "a message")?,
        (None, None) => DEFAULT_MESSAGE.to_vec(),
    };
    if raw.is_empty() {
        return Err(match &a.message_file {
            Some(p) if a.message.is_none() => Usage::value(
                "--message-file",
                p.display(),
                "the file is empty; a message needs at least one byte",
            ),
            _ => Usage::says(
                "--message",
                "is empty; give at least one byte, e.g. -m 'PING\\r\\n'",
            ),
        });
    }
    let message_flag = if a.message.is_some() {
        "--message"
    } else {
        "--message-file"
    };
    secrets.fill(&raw, message_flag)?;
    let first_shown = match &a.first_message {
        Some(m) => {
            let b = unescape(m).map_err(|e| Usage::new("--first-message", e))?;
            if b.is_empty() {
                return Err(Usage::says(
                    "--first-message",
                    "is empty; drop it or give at least one byte",
                ));
            }
            Some(b)
        }
        None => None,
    };
    if let Some(b) = &first_shown {
        secrets.fill(b, "--first-message")?;
    }
    let stages = a.rate_stages.as_deref().map(rate_stages).transpose()?;
    let conns = a.conn_stages.as_deref().map(conn_stages).transpose()?;
    if conns.is_some() {
        for (flag, given) in [
            ("--pipeline", a.pipeline != 1),
            ("--first-message", a.first_message.is_some()),
            ("--verify", a.verify),
        ] {
            if given {
                return Err(Usage::says(
                    flag,
                    "does not go with --conn-stages (ramped connections run one exchange in flight each, no opening message)",
                ));
            }
        }
    }
    let connections = conns.map_or(a.connections, |(peak, _)| peak);
    let mode = match (a.think, a.interval, a.rate, &stages) {
        (Some(d), _, _, _) => Mode::Think(d),
        (_, Some(d), _, _) => Mode::Interval(d),
        (_, _, Some(r), _) => Mode::Rate(r),
        (_, _, _, Some((peak, _))) => Mode::Rate(*peak),
        _ => Mode::PingPong,
    };
    if mode.is_open_loop() && a.pipeline != 1 {
        return Err(Usage::says(
            "--pipeline",
            "applies to closed-loop modes (ping-pong, --think); open-loop modes \
             (--interval, --rate) send on schedule whatever is in flight",
        ));
    }
    // A flag of another mode is a mistake, not silently ignored.
    for (flag, set) in [
        ("--max-backlog", a.max_backlog.is_some()),
        ("--timer-slack", a.timer_slack.is_some()),
    ] {
        if set && !mode.is_open_loop() {
            return Err(Usage::says(
                flag,
                format!(
                    "applies to open-loop modes (--interval, --rate), not {}",
                    mode.name()
                ),
            ));
        }
    }
    if a.timer_slack
        .is_some_and(|d| d > Duration::from_millis(100))
    {
        return Err(Usage::new(
            "--timer-slack",
            "at most 100ms (it delays messages by up to that much; 1ms is the default)",
        ));
    }
    let max_backlog = a.max_backlog.unwrap_or(1024);
    if a.pipeline > 1 << 20 {
        return Err(Usage::new(
            "--pipeline",
            "at most 1048576 exchanges in flight per connection",
        ));
    }
    if connections > 10_000_000 {
        return Err(Usage::new(
            "-c/--connections",
            "at most 10,000,000 per process; split larger loads over processes",
        ));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = a.threads.map_or(cores, |t| t as usize);
    if threads > 1024 {
        return Err(Usage::new("-t/--threads", "at most 1024"));
    }
    if let Some(d) = a.interval {
        let total = a.connections as f64 / d.as_secs_f64();
        if total > crate::units::MAX_RATE {
            return Err(Usage::value(
                "--interval",
                format!("{d:?}"),
                format!(
                    "with -c {} that is {total:.3e} messages/s in total, more \
                     than the 100M/s barrage can schedule; use a longer --interval or fewer \
                     connections",
                    a.connections
                ),
            ));
        }
    }
    if a.requests.is_some_and(|n| n > MAX_REQUESTS) {
        return Err(Usage::new(
            "-n/--requests",
            "at most 1,000,000,000,000,000 (1e15) exchanges per run",
        ));
    }
    let duration = match (a.duration, a.requests) {
        (Some(d), _) => Some(d),
        // `--rate-stages` or `--conn-stages` alone: until the last point.
        (None, _) if stages.is_some() => stages.as_ref().map(|(_, end)| *end),
        (None, _) if conns.is_some() => conns.map(|(_, end)| end),
        // Every run is bounded in time: `-n` alone also stops after a default bound, so a
        // server that never answers cannot keep it going forever (run.rs prints the rule).
        (None, Some(_)) => Some(REQUESTS_TIME_BOUND),
        (None, None) => Some(Duration::from_secs(10)),
    };
    let timeout = a.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let connect_timeout = a.connect_timeout.unwrap_or(timeout);
    let words = Words {
        message: raw.clone(),
        first: first_shown.clone(),
        expect: expect_spec.to_string(),
        headers: headers(&a.headers)?,
    };
    let (protocol, http_note) = protocol(a, &url, &words, secrets)?;
    let http_note = http_note.map(|n| secrets.scrub(&n));
    let tls = if url.scheme.tls() {
        Some(crate::resolve::tls::plan(
            &url,
            a.insecure,
            a.cacert.as_deref(),
        )?)
    } else {
        None
    };
    let more_addrs = crate::resolve::sources::more_addrs(&a.more_urls, &url)?;
    let targets: Vec<_> = std::iter::once(url.addr)
        .chain(more_addrs.iter().copied())
        .collect();
    let source_ips =
        crate::resolve::sources::resolve(a.source_ip.as_deref(), &targets, connections)?;
    let spec = Spec {
        target: shown_target,
        addr: url.addr,
        host: secrets.scrub(&url.host),
        protocol,
        more_addrs,
        source_ips,
        tls: tls.as_ref().map(|_| TlsSpec {
            insecure: a.insecure,
            cacert: a.cacert.clone(),
        }),
        connections,
        threads,
        connect_rate: a.connect_rate,
        max_connecting: a.max_connecting.min(u32::MAX as u64) as u32,
        // `-n` alone: no duration; the plan bounds the run all the same.
        duration_ns: a
            .duration
            .map(ns)
            .or(duration.filter(|_| a.requests.is_none()).map(ns)),
        rate_stages: a.rate_stages.clone(),
        conn_stages: a.conn_stages.clone(),
        requests: a.requests,
        warmup_ns: ns(a.warmup.unwrap_or_default()),
        mode: mode.into(),
        pipeline: a.pipeline as u32,
        max_backlog,
        timer_slack_ns: a
            .timer_slack
            .map_or(barrage_engine::spec::DEFAULT_TIMER_SLACK_NS, ns),
        timeout_ns: ns(timeout),
        connect_timeout_ns: ns(connect_timeout),
        drain_ns: ns(DRAIN),
        clock: start_at(
            a.start_at.as_deref(),
            a.duration
                .filter(|_| a.scenario.is_none())
                .map(|d| d + a.warmup.unwrap_or_default()),
        )?,
        shares: shard(
            a.shard.as_deref(),
            a.threads.map(|t| t as usize),
            a.start_at.is_some(),
        )?,
        one_clock: a.one_clock,
        scenario: a.scenario.clone(),
    };
    // The plan is built from the spec, as any process taking part in the run builds its own.
    let mut lookup = |name: &str| secrets.lookup(name);
    let plan = spec
        .plan(&mut lookup, &|_, _| {
            tls.clone()
                .ok_or_else(|| "no TLS configuration".to_string())
        })
        .map_err(spec_usage)?;
    let config = describe(&spec, &plan, a.secret_body, http_note);
    Ok((plan, spec, config))
}

/// The spec as the result records it: header values hidden ([`Spec::redacted`]),
/// secret-looking query parameters of the path redacted as in the target, and under
/// `--secret-body` the messages and body shown by size only.
pub fn record(spec: &Spec, plan: &Plan, secret_body: bool, redact: &[String]) -> Spec {
    let mut s = spec.redacted();
    let hide = |text: &mut String, len: usize| {
        if secret_body {
            *text = redact::hidden(len);
        }
    };
    match &mut s.protocol {
        ProtocolSpec::Tcp {
            message,
            first_message,
            ..
        } => {
            hide(message, plan.message.raw().len());
            if let (Some(f), Some(t)) = (first_message.as_mut(), plan.first_message.as_ref()) {
                hide(f, t.raw().len());
            }
        }
        ProtocolSpec::Ws { message, path, .. } => {
            hide(message, plan.message.raw().len());
            *path = redact::url(path, redact);
        }
        ProtocolSpec::Http { body, path, .. } => {
            if let Some(b) = body.as_mut() {
                let len = unescape(b).map_or(0, |v| v.len());
                hide(b, len);
            }
            *path = redact::url(path, redact);
        }
        ProtocolSpec::Redis { .. } | ProtocolSpec::Memcache { .. } => {}
    }
    s
}

/// What the result records of the settings (`RunConfig`), from the spec and its plan: the
/// user's words with placeholders kept, `--secret-body` messages shown by size only, the
/// HTTP request as `http_note` (method, path, body size).
pub fn describe(
    spec: &Spec,
    plan: &Plan,
    secret_body: bool,
    http_note: Option<String>,
) -> RunConfig {
    let shown = |text: &str, filled_len: usize| {
        if secret_body {
            redact::hidden(filled_len)
        } else {
            let b = unescape(text).unwrap_or_default();
            escape(&b[..b.len().min(256)])
        }
    };
    let tls = spec.tls.is_some();
    let protocol = spec.protocol.info().scheme(tls);
    let (message, first, expect, subprotocol, commands) = match &spec.protocol {
        ProtocolSpec::Tcp {
            message,
            first_message,
            ..
        } => (
            Some(message),
            first_message.as_ref(),
            plan.framing.describe(),
            None,
            Vec::new(),
        ),
        ProtocolSpec::Ws {
            message,
            subprotocol,
            ..
        } => (
            Some(message),
            None,
            plan.framing.describe(),
            subprotocol.clone(),
            Vec::new(),
        ),
        ProtocolSpec::Http { .. } => (None, None, "http response".to_string(), None, Vec::new()),
        ProtocolSpec::Redis { commands, .. } => {
            (None, None, "RESP reply".to_string(), None, commands.clone())
        }
        ProtocolSpec::Memcache { commands } => (
            None,
            None,
            "memcached reply".to_string(),
            None,
            commands.clone(),
        ),
    };
    let mode: Mode = spec.mode.into();
    let secs = |ns: u64| ns as f64 / 1e9;
    let msecs = |ns: u64| ns as f64 / 1e6;
    RunConfig {
        target: spec.target.clone(),
        protocol: protocol.into(),
        connections: spec.connections,
        threads: spec.threads.min(spec.connections as usize),
        // `-n` alone: the user set no duration; the time bound is a guard, printed at start.
        duration_s: match plan.users {
            Some(_) => plan.duration.map(|d| d.as_secs_f64()),
            None => spec.duration_ns.map(secs),
        },
        requests: spec.requests,
        warmup_s: secs(spec.warmup_ns),
        mode: if plan.users.as_ref().is_some_and(|u| u.stages.is_none()) {
            "users".into()
        } else {
            mode.name().into()
        },
        pipeline: spec.pipeline,
        think_ms: match spec.mode {
            ModeSpec::Think { ns } => Some(msecs(ns)),
            _ => None,
        },
        interval_ms: match spec.mode {
            ModeSpec::Interval { ns } => Some(msecs(ns)),
            _ => None,
        },
        rate: match spec.mode {
            ModeSpec::Rate { per_s } => Some(per_s),
            _ => None,
        },
        connect_rate: spec.connect_rate,
        timeout_ms: msecs(spec.timeout_ns),
        connect_timeout_ms: msecs(spec.connect_timeout_ns),
        max_backlog: spec.max_backlog,
        timer_slack_ms: matches!(spec.mode, ModeSpec::Interval { .. } | ModeSpec::Rate { .. })
            .then(|| msecs(spec.timer_slack_ns)),
        message: message.map_or_else(String::new, |m| shown(m, plan.message.raw().len())),
        message_bytes: message.map_or(0, |_| plan.message.raw().len()),
        first_message: first
            .zip(plan.first_message.as_ref())
            .map(|(m, t)| shown(m, t.raw().len())),
        expect,
        verify: plan.verify,
        http: http_note,
        tls: spec.tls.as_ref().map(|t| {
            if t.insecure {
                "verification off (--insecure)".into()
            } else {
                "verified".into()
            }
        }),
        subprotocol,
        commands,
        rate_stages: spec.rate_stages.clone(),
        conn_stages: spec.conn_stages.clone(),
        planned_connections: plan
            .users
            .as_ref()
            .and_then(|u| u.stages.as_ref())
            .map_or_else(Vec::new, |s| s.points.clone()),
        planned_rate: plan
            .rate_shape
            .as_deref()
            .map_or_else(Vec::new, |s| s.points().to_vec()),
        steps: scenario_users(plan).map_or_else(Vec::new, |u| {
            u.program
                .steps
                .iter()
                .map(|s| barrage_metrics::ConfigStep {
                    name: s.name.clone(),
                    open_loop: s.open_loop,
                    awaits: s.awaits,
                })
                .collect()
        }),
        users: scenario_users(plan).map(|u| users_config(u, spec)),
        source_ips: spec.source_ips.iter().map(|ip| ip.to_string()).collect(),
        processes: None,
    }
}

/// The users of a scenario run (not those of a `--conn-stages` ramp).
fn scenario_users(plan: &Plan) -> Option<&barrage_engine::users::Users> {
    plan.users.as_deref().filter(|u| u.stages.is_none())
}

/// A scenario's users as the result records them.
fn users_config(u: &barrage_engine::users::Users, spec: &Spec) -> barrage_metrics::ConfigUsers {
    let points = u.arrive.points();
    let arrive = match points {
        [(_, r)] => format!("{r}/s"),
        _ => format!(
            "{} points, from {}/s",
            points.len(),
            points.first().map_or(0.0, |p| p.1)
        ),
    };
    barrage_metrics::ConfigUsers {
        count: u.count,
        arrive,
        last_arrival_s: u.last_arrival_ns() as f64 / 1e9,
        hold_s: u.hold_ns as f64 / 1e9,
        pacing_after_s: u.program.lead_in_ns() as f64 / 1e9,
        depart: match u.depart {
            barrage_engine::users::Depart::AtEnd => "at_end".into(),
            barrage_engine::users::Depart::Rate(r) => format!("{r}/s"),
        },
        scenario: spec
            .scenario
            .as_ref()
            .map_or_else(String::new, |s| s.file.clone()),
    }
}

/// How long the replies in flight are awaited once the load stops.
const DRAIN: Duration = Duration::from_secs(2);
/// `--rate-stages POINTS`: its peak rate and the time of its last point (the load's length
/// unless -d says otherwise).
fn rate_stages(text: &str) -> Result<(f64, Duration), Usage> {
    let shape = barrage_engine::shape::Shape::parse(
        text,
        crate::units::duration,
        crate::units::rate_or_zero,
    )
    .map_err(|e| Usage::value("--rate-stages", format!("'{text}'"), e))?;
    let points = shape.points();
    let peak = points.iter().map(|p| p.1).fold(0.0, f64::max);
    let end = points.last().map_or(0.0, |p| p.0);
    let why = if peak <= 0.0 {
        Some("the rate is 0 at every point; give a point above 0, e.g. 0s:100,30s:1k".to_string())
    } else if peak > crate::units::MAX_RATE {
        Some("a rate above the 100M/s barrage can schedule".to_string())
    } else if end <= 0.0 {
        Some(
            "give a later point too, e.g. 0s:100,30s:1k: the load lasts until the last point"
                .to_string(),
        )
    } else {
        None
    };
    match why {
        Some(w) => Err(Usage::value("--rate-stages", format!("'{text}'"), w)),
        None => Ok((peak, Duration::from_secs_f64(end))),
    }
}

/// `--conn-stages POINTS`: its peak (the connections) and the time of its last point.
fn conn_stages(text: &str) -> Result<(u64, Duration), Usage> {
    let bad = |w: String| Usage::value("--conn-stages", format!("'{text}'"), w);
    let shape = barrage_engine::shape::Shape::parse(
        text,
        crate::units::duration,
        crate::units::rate_or_zero,
    )
    .map_err(|e| bad(e.to_string()))?;
    let points = shape.points();
    let peak = points.iter().map(|p| p.1).fold(0.0, f64::max).floor() as u64;
    let end = points.last().map_or(0.0, |p| p.0);
    if peak == 0 {
        return Err(bad(
            "no point reaches 1 connection; e.g. 0s:0,30s:100,1m:100,1m30s:0".into(),
        ));
    }
    if peak > 10_000_000 {
        return Err(bad("at most 10,000,000 connections per process".into()));
    }
    if end <= 0.0 {
        return Err(bad(
            "give a later point too: the load lasts until the last point".into(),
        ));
    }
    Ok((peak, Duration::from_secs_f64(end)))
}

/// `--timeout` when none is given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// A spec the checks above let through cannot fail to make a plan; should it, the error
/// still names what to fix.
fn spec_usage(e: SpecError) -> Usage {
    match e {
        SpecError::Request(e) => request_usage(e),
        SpecError::Escape { what, err } => Usage::new(what, err),
        SpecError::Invalid { what, err } => Usage::new(what, err),
        SpecError::Command(e) => Usage::new("--command", e),
        other => Usage::new("spec", other),
    }
}

/// The `--command` mix (or the protocol's default command), checked by compiling it.
fn commands(
    a: &RunArgs,
    default: &str,
    compile: fn(
        &[String],
    )
        -> Result<barrage_engine::redis::Commands, barrage_engine::redis::CommandError>,
) -> Result<Vec<String>, Usage> {
    let given = if a.command.is_empty() {
        vec![default.to_string()]
    } else {
        a.command.clone()
    };
    compile(&given).map_err(|e| Usage::new("--command", e))?;
    Ok(given)
}

/// Flags that belong to other protocols are mistakes, not silently ignored.
fn check_flags_fit(a: &RunArgs, scheme: Scheme) -> Result<(), Usage> {
    let http = matches!(scheme, Scheme::Http | Scheme::Https);
    let ws = matches!(scheme, Scheme::Ws | Scheme::Wss);
    let s = scheme.name();
    let only = |flag: &str, what: &str| {
        Usage::says(flag, format!("applies to {what} targets, not {s}://"))
    };
    if !http {
        if a.method.is_some() {
            return Err(only("-X/--method", "http(s)://"));
        }
        if a.body.is_some() {
            return Err(only("--body", "http(s)://"));
        }
        if a.expect_status.is_some() {
            return Err(only("--expect-status", "http(s)://"));
        }
    }
    if !http && !ws && !a.headers.is_empty() {
        return Err(only("-H/--header", "http(s):// and ws(s)://"));
    }
    if !ws && (a.subprotocol.is_some() || a.binary) {
        return Err(only("--subprotocol and --binary", "ws(s)://"));
    }
    if !scheme.tls() && (a.insecure || a.cacert.is_some()) {
        return Err(only("--insecure and --cacert", "https:// and wss://"));
    }
    let kv = matches!(scheme, Scheme::Redis | Scheme::Memcache);
    if !kv && !a.command.is_empty() {
        return Err(only("--command", "redis:// and memcache://"));
    }
    if scheme != Scheme::Redis && a.resp3 {
        return Err(only("--resp3", "redis://"));
    }
    // The message flags describe a raw TCP or WebSocket message; other protocols say what
    // they send in their own words.
    let own_words = if kv {
        Some(format!("a {s}:// request is --command"))
    } else if http {
        Some("an HTTP request is -X, -H and --body".to_string())
    } else {
        None
    };
    if let Some(words) = own_words {
        for (flag, set) in [
            ("-m/--message", a.message.is_some()),
            ("--message-file", a.message_file.is_some()),
            ("--first-message", a.first_message.is_some()),
            ("--expect", a.expect.is_some()),
            ("--verify", a.verify),
        ] {
            if set {
                return Err(Usage::says(
                    flag,
                    format!("applies to tcp:// and ws:// targets; {words}"),
                ));
            }
        }
    }
    if ws {
        if a.first_message.is_some() {
            return Err(only("--first-message", "tcp://"));
        }
        if let Some(e) = &a.expect {
            if e != "echo" && e != "none" {
                return Err(Usage::value(
                    "--expect",
                    e,
                    "a ws:// reply is one message; use --expect echo or none",
                ));
            }
        }
    }
    Ok(())
}

/// `-H 'Name: value'` into pairs; the HTTP codec checks names and values for injection.
fn headers(raw: &[String]) -> Result<Vec<(String, String)>, Usage> {
    raw.iter()
        .map(|h| {
            let (n, v) = h.split_once(':').ok_or_else(|| {
                Usage::value("-H", format!("'{h}'"), "write a header as 'Name: value'")
            })?;
            let n = n.trim();
            if n.is_empty() {
                return Err(Usage::value(
                    "-H",
                    format!("'{h}'"),
                    "the header name is empty",
                ));
            }
            Ok((n.to_string(), v.trim().to_string()))
        })
        .collect()
}

/// What is spoken on the connection, from the scheme and the HTTP/WebSocket flags: the
/// spec's words (placeholders unfilled), checked here with the secrets filled in, so a bad
/// request fails before any load, against its flag.
fn protocol(
    a: &RunArgs,
    url: &url::Url,
    words: &Words,
    secrets: &mut Secrets,
) -> Result<(ProtocolSpec, Option<String>), Usage> {
    let headers_filled = words
        .headers
        .iter()
        .map(|(n, v)| Ok((n.clone(), secrets.fill_str(v, "-H/--header")?)))
        .collect::<Result<Vec<_>, Usage>>()?;
    match url.scheme {
        Scheme::Tcp => Ok((
            ProtocolSpec::Tcp {
                message: escape(&words.message),
                first_message: words.first.as_deref().map(escape),
                expect: words.expect.clone(),
                verify: a.verify,
            },
            None,
        )),
        Scheme::Redis => {
            let commands = commands(a, "PING", barrage_engine::redis::Commands::redis)?;
            let resp3 = a.resp3;
            Ok((ProtocolSpec::Redis { commands, resp3 }, None))
        }
        Scheme::Memcache => {
            let default = "get key:{rand%1000}";
            let commands = commands(a, default, barrage_engine::command::Commands::memcache)?;
            Ok((ProtocolSpec::Memcache { commands }, None))
        }
        Scheme::Ws | Scheme::Wss => {
            let host = url.host_header();
            // Build one handshake now: bad headers fail here, not on every connection.
            let spec = barrage_engine::ws::HandshakeSpec {
                host_header: &host,
                path: &url.path,
                headers: &headers_filled,
                subprotocol: a.subprotocol.as_deref(),
            };
            let key = barrage_engine::ws::new_key([0; 16]);
            barrage_engine::ws::handshake_request(&spec, &key, &mut Vec::new())
                .map_err(request_usage)?;
            Ok((
                ProtocolSpec::Ws {
                    host_header: host,
                    path: url.path.clone(),
                    headers: words.headers.clone(),
                    subprotocol: a.subprotocol.clone(),
                    binary: a.binary,
                    max_message: MAX_MESSAGE,
                    message: escape(&words.message),
                    expect: words.expect.clone(),
                    verify: a.verify,
                },
                None,
            ))
        }
        Scheme::Http | Scheme::Https => {
            let body = match a.body.as_deref() {
                None => None,
                Some(b) => Some(match b.strip_prefix('@') {
                    Some(path) => read_capped(
                        "--body",
                        std::path::Path::new(path),
                        &format!("@{path}"),
                        "a body",
                    )?,
                    None => b.as_bytes().to_vec(),
                }),
            };
            let filled_body = match &body {
                Some(b) => Some(secrets.fill(b, "--body")?),
                None => None,
            };
            let method = a.method.clone().unwrap_or_else(|| "GET".into());
            let host = url.host_header();
            let spec = barrage_engine::http::RequestSpec {
                method: &method,
                path: &url.path,
                host_header: &host,
                headers: &headers_filled,
                body: filled_body.as_deref(),
                keep_alive: true,
            };
            barrage_engine::http::RequestTemplate::new(&spec).map_err(request_usage)?;
            let expect_status = match &a.expect_status {
                Some(l) => status_set(l)?,
                None => StatusSet::default(),
            };
            let note = format!(
                "{method} {}{}",
                redact::url(&url.path, &a.redact),
                filled_body
                    .as_ref()
                    .map(|b| format!(", body {} B", b.len()))
                    .unwrap_or_default()
            );
            Ok((
                ProtocolSpec::Http {
                    method,
                    path: url.path.clone(),
                    host_header: host,
                    headers: words.headers.clone(),
                    body: body.as_deref().map(escape),
                    expect_status: expect_status.0,
                },
                Some(note),
            ))
        }
    }
}

/// The user's own bytes and words for the spec: placeholders (`{secret:NAME}`) unfilled.
struct Words {
    message: Vec<u8>,
    first: Option<Vec<u8>>,
    expect: String,
    headers: Vec<(String, String)>,
}

/// A request that cannot be built, against the flag the error says it is about.
fn request_usage(e: barrage_engine::http::RequestError) -> Usage {
    use barrage_engine::http::Field;
    let flag = match e.field() {
        Field::Method => "-X/--method",
        Field::Target => "target",
        Field::Header => "-H/--header",
        Field::Body => "--body",
        Field::Subprotocol => "--subprotocol",
    };
    let hint = match &e {
        barrage_engine::http::RequestError::HandshakeHeader(h) if h == "Sec-WebSocket-Protocol" => {
            " (offer one with --subprotocol NAME)"
        }
        _ => "",
    };
    Usage::new(flag, format!("{e}{hint}"))
}

/// `--expect-status 200,204`, `2xx,3xx`, `200-299`.
pub fn status_set(list: &str) -> Result<StatusSet, Usage> {
    StatusSet::parse(list).map_err(|e| Usage::value("--expect-status", list, e))
}

/// A message or body file, read through a bounded reader: its size on disk is no bound
/// (`/dev/zero`, a pipe or a file that grows report 0 or less than they give).
/// `shown`: the value as the user wrote it (`@FILE` for `--body`).
fn read_capped(
    flag: &str,
    path: &std::path::Path,
    shown: &dyn std::fmt::Display,
    what: &str,
) -> Result<Vec<u8>, Usage> {
    use std::io::Read as _;
    let p = shown;
    let fail = |e: std::io::Error| Usage::value(flag, p, io_reason(&e));
    let file = std::fs::File::open(path).map_err(fail)?;
    let mut data = Vec::new();
    file.take(MAX_MESSAGE + 1)
        .read_to_end(&mut data)
        .map_err(fail)?;
    if data.len() as u64 > MAX_MESSAGE {
        return Err(Usage::value(
            flag,
            p,
            format!("more than the 16 MiB {what} may have; give a smaller file"),
        ));
    }
    Ok(data)
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// `--expect SPEC`.
pub fn expect(spec: &str) -> Result<Framing, Usage> {
    barrage_engine::spec::parse_expect(spec).map_err(|why| Usage::value("--expect", spec, why))
}

/// `--shard I/N`: shard I of N, each running `threads` shares (so every shard must use the
/// same -t), from a common `--start-at` (`start_at`: given).
fn shard(
    v: Option<&str>,
    threads: Option<usize>,
    start_at: bool,
) -> Result<Option<barrage_engine::ShareSet>, Usage> {
    let Some(v) = v else { return Ok(None) };
    let Some(threads) = threads else {
        return Err(Usage::says(
            "--shard",
            "needs -t N, the same on every shard (the split is by thread shares)",
        ));
    };
    let bad = |why: &str| Usage::value("--shard", v, why);
    let env = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|x| x.trim().parse::<usize>().ok())
    };
    let (i, n): (usize, usize) = if v == "auto" {
        // Slurm gives both; a Kubernetes Indexed Job gives the index (the count: auto/N).
        match (env("SLURM_PROCID"), env("SLURM_NTASKS")) {
            (Some(i), Some(n)) => (i, n),
            _ => return Err(bad(
                "no SLURM_PROCID and SLURM_NTASKS here (Slurm); under a Kubernetes Indexed Job give auto/N",
            )),
        }
    } else if let Some(n) = v.strip_prefix("auto/") {
        let n = n
            .trim()
            .parse()
            .map_err(|_| bad("give auto/N with N whole, e.g. auto/4"))?;
        let i = env("JOB_COMPLETION_INDEX")
            .or_else(|| env("SLURM_PROCID"))
            .ok_or_else(|| {
                bad("no JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or SLURM_PROCID here")
            })?;
        (i, n)
    } else {
        let (i, n) = v
            .split_once('/')
            .ok_or_else(|| bad("give I/N, e.g. 0/4 for the first of four shards, or auto"))?;
        match (i.trim().parse(), n.trim().parse()) {
            (Ok(i), Ok(n)) => (i, n),
            _ => return Err(bad("give I/N with whole numbers, e.g. 0/4")),
        }
    };
    if n == 0 || i >= n {
        return Err(bad("I counts from 0 and is below N, e.g. 0/4 .. 3/4"));
    }
    if !start_at {
        // Without a common time zero the shards' seconds do not line up, and a merge could
        // not tell two runs apart.
        return Err(Usage::says(
            "--shard",
            "needs --start-at TIME, the same on every shard, e.g. --start-at \
             @$(( $(date +%s) + 30 )): the shards' seconds add up from a common time zero",
        ));
    }
    let t = threads.max(1);
    let count = n
        .checked_mul(t)
        .ok_or_else(|| bad("more shards than there can be connections"))?;
    Ok(Some(barrage_engine::ShareSet {
        count,
        run: (i * t..(i + 1) * t).collect(),
    }))
}

/// `--start-at`: RFC 3339 UTC (`2026-11-23T08:00:00Z`) or `@UNIX_SECONDS`, checked against
/// now (see `start_at.rs`); `load`: the load's length when known.
fn start_at(v: Option<&str>, load: Option<Duration>) -> Result<Clock, Usage> {
    let Some(v) = v else { return Ok(Clock::Now) };
    let unix_ns = crate::resolve::start_at::check(v, crate::resolve::start_at::now_ns(), load)?;
    Ok(Clock::At { unix_ns })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(argv: &[&str]) -> RunArgs {
        let full: Vec<&str> = ["barrage", "run"].iter().chain(argv).copied().collect();
        match crate::resolve::cli::Cli::try_parse_from(full)
            .unwrap()
            .command
        {
            crate::resolve::cli::Command::Run(a) => *a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn requests_without_duration_are_still_bounded_in_time() {
        // Regression: `-n` alone against a server that never answers ran until interrupted.
        let (p, _, _) = plan(&args(&["tcp://127.0.0.1:9", "-n", "5"])).unwrap();
        assert_eq!(p.duration, Some(REQUESTS_TIME_BOUND));
        assert_eq!(p.requests, Some(5));
        let (p, _, _) = plan(&args(&["tcp://127.0.0.1:9", "-n", "5", "-d", "2s"])).unwrap();
        assert_eq!(p.duration, Some(Duration::from_secs(2)));
    }

    #[test]
    fn absurd_rates_counts_and_intervals_are_refused_naming_the_flag() {
        // Regression: `--rate 1e19` wrapped the schedule arithmetic and the worker spun.
        for (argv, flag) in [
            (&["--interval", "1ns", "-c", "1000"][..], "--interval"),
            (&["--interval", "5ns"][..], "--interval"),
            (&["-n", "2000000000000000"][..], "-n/--requests"),
        ] {
            let mut full = vec!["tcp://127.0.0.1:9"];
            full.extend_from_slice(argv);
            let err = plan(&args(&full)).unwrap_err();
            assert_eq!(err.flag(), flag);
            assert!(err.to_string().starts_with(flag), "{argv:?}: {err}");
        }
        for rate in ["1e19", "1e20", "1e16", "2e8"] {
            let full = ["barrage", "run", "tcp://127.0.0.1:9", "--rate", rate];
            let err = crate::resolve::cli::Cli::try_parse_from(full)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("--rate") && err.contains("100M"),
                "{rate}: {err}"
            );
        }
        plan(&args(&["tcp://127.0.0.1:9", "--rate", "100M", "-c", "100"])).unwrap();
        plan(&args(&[
            "tcp://127.0.0.1:9",
            "--interval",
            "1us",
            "-c",
            "100",
        ]))
        .unwrap();
    }

    #[test]
    fn status_sets() {
        let s = status_set("200,204,3xx,500-502").unwrap();
        for (c, want) in [
            (200, true),
            (204, true),
            (201, false),
            (302, true),
            (501, true),
            (503, false),
        ] {
            assert_eq!(s.contains(c), want, "{c}");
        }
        for bad in ["", "abc", "6xx", "99", "600", "300-200", "2xx,x"] {
            assert!(
                status_set(bad)
                    .unwrap_err()
                    .to_string()
                    .starts_with("--expect-status"),
                "{bad}"
            );
        }
    }

    #[test]
    fn framings() {
        assert_eq!(expect("echo").unwrap(), Framing::Echo);
        assert_eq!(expect("bytes:64").unwrap(), Framing::Bytes(64));
        assert_eq!(
            expect("len:u32le").unwrap(),
            Framing::Len(barrage_engine::LenPrefix::U32Le)
        );
        assert!(matches!(expect("delim:\\r\\n").unwrap(), Framing::Delim(_)));
        for bad in [
            "bytes:0",
            "bytes:x",
            "delim:",
            "delim:\\q",
            "len:u8",
            "echo:1",
            "json",
        ] {
            assert_eq!(expect(bad).unwrap_err().flag(), "--expect", "{bad}");
        }
    }
}
