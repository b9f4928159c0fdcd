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
    unescape, Framing, GrpcSpec, HttpSpec, HttpVersion, Mode, Plan, ProtocolSpec, Spec, SpecError,
    TlsSpec,
};
use barrage_metrics::RunConfig;
use barrage_scenario::protocol::GRPC as PROTO_GRPC;
use std::time::Duration;

mod describe;
mod grpc_steps;
pub use grpc_steps::check_file as check_rpc_steps;
pub use script::check_file as check_scenario_script;
mod protocol;
#[cfg(feature = "grpc")]
mod reflect;
mod script;
mod shard;
mod stages;
mod vertical;

pub use describe::describe;
use protocol::{check_flags_fit, protocol};
use shard::{shard, start_at};
use stages::*;
use vertical::*;
pub use vertical::{expect, DEFAULT_TIMEOUT};

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
    let shown_target = redact::url(&a.target, &a.output.redact);
    let filled_target = secrets.fill_str(&a.target, "target")?;
    let url = url::parse(&filled_target)
        .map_err(|e| e.map(|s| s.replace(&filled_target, &shown_target)))?;
    check_flags_fit(a, url.scheme)?;
    scenario_flags_need_a_file(a)?;
    let mut words = words(a, secrets, url.scheme)?;
    let load = load(a)?;
    // After the load's checks, as before the split: the first mistake is the one reported.
    words.headers = headers(&a.http.headers)?;
    let proxy = crate::resolve::proxy::choose(a, &url)?;
    if let Some(p) = &proxy {
        if !a.load.more_urls.is_empty() {
            return Err(Usage::says(
                p.from.clone(),
                "tunnels to one address: drop --url (or --proxy)",
            ));
        }
        if a.grpc.reflect {
            return Err(Usage::says(
                "--reflect",
                format!(
                    "asks the server directly, not through the proxy ({}): give --proto",
                    p.from
                ),
            ));
        }
    }
    let (protocol, http_note) = protocol(a, &url, &words, secrets)?;
    let http_note = http_note.map(|n| secrets.scrub(&n));
    let version = match &protocol {
        ProtocolSpec::Http(HttpSpec { version, .. }) => *version,
        ProtocolSpec::Grpc(GrpcSpec { .. }) => HttpVersion::H2,
        _ => HttpVersion::H1,
    };
    let tls = if url.scheme.tls() {
        Some(crate::resolve::tls::plan(&url, &a.tls, version)?)
    } else {
        None
    };
    let more_addrs = crate::resolve::sources::more_addrs(&a.load.more_urls, &url)?;
    let targets: Vec<_> = std::iter::once(url.addr)
        .chain(more_addrs.iter().copied())
        .collect();
    let source_ips =
        crate::resolve::sources::resolve(a.load.source_ip.as_deref(), &targets, load.connections)?;
    let aim = Aim {
        target: shown_target,
        addr: url.addr,
        host: secrets.scrub(&url.host),
        protocol,
        more_addrs,
        source_ips,
        proxy: proxy.as_ref().map(|p| p.spec.clone()),
        tls: tls.as_ref().map(|_| TlsSpec {
            insecure: a.tls.insecure,
            cacert: a.tls.cacert.clone(),
            cert: a.tls.cert.clone(),
            key: a.tls.key.clone(),
            servername: a.tls.servername.clone(),
        }),
    };
    let script = script::check(a, url.scheme)?;
    let mut spec = spec(a, &load, aim)?;
    spec.script = script.as_ref().map(|s| s.spec.clone());
    if let (true, Some(sc)) = (url.scheme.is(&PROTO_GRPC), spec.scenario.as_mut()) {
        grpc_steps::resolve(a, &url, sc)?;
    }
    // The plan is built from the spec, as any process taking part in the run builds its own.
    let mut lookup = |name: &str| secrets.lookup(name);
    let mut plan = spec
        .plan(&mut lookup, &|_, _| {
            tls.clone()
                .ok_or_else(|| "no TLS configuration".to_string())
        })
        .map_err(spec_usage)?;
    script::attach(&mut plan, script, spec.max_frame);
    let mut config = describe(&spec, &plan, a.output.secret_body, http_note);
    config.proxy = proxy.map(|p| format!("{} ({})", p.spec.url, p.from));
    Ok((plan, spec, config))
}

/// `--target`, `--users`, `--hold` and `--arrive` without a scenario file are mistakes.
fn scenario_flags_need_a_file(a: &RunArgs) -> Result<(), Usage> {
    if a.scenario.is_some() {
        return Ok(());
    }
    for (flag, given) in [
        ("--target", a.file.target_url.is_some()),
        ("--users", a.file.users.is_some()),
        ("--hold", a.file.hold.is_some()),
        ("--arrive", a.file.arrive.is_some()),
    ] {
        if given {
            return Err(Usage::says(
                flag,
                "applies to scenario files (barrage run FILE.toml); with a URL use -c and the mode flags",
            ));
        }
    }
    Ok(())
}

/// What is sent and expected: `--expect`, `--message`/`--message-file`, `--first-message`
/// (`-H` is added by the caller); the secrets they name are filled (and checked) here.
fn words(a: &RunArgs, secrets: &mut Secrets, scheme: Scheme) -> Result<Words, Usage> {
    let expect_spec = a.msg.expect.as_deref().unwrap_or("echo");
    let framing = expect(expect_spec)?;
    let mqtt = scheme.is(&barrage_scenario::protocol::MQTT);
    if a.msg.max_frame.is_some()
        && !matches!(framing, Framing::Field(_))
        && !mqtt
        && a.msg.script.is_none()
    {
        return Err(Usage::says(
            "--max-frame",
            format!(
                "bounds a length-field framing (--expect field:... or mqtt), not --expect \
                 {expect_spec}"
            ),
        ));
    }
    if a.msg.verify && framing != Framing::Echo {
        return Err(Usage::says(
            "--verify",
            format!("compares echoed bytes and needs --expect echo (got --expect {expect_spec})"),
        ));
    }
    if let Some(f) = &a.msg.fields {
        // Checked now, compiled again by each process's plan.
        barrage_engine::message::binary::compile(f, None, Some(&|_| Some(Vec::new())))
            .map_err(|e| Usage::value("--fields", format!("'{f}'"), e))?;
        secrets.fill(f.as_bytes(), "--fields")?;
    }
    let raw = match (&a.msg.message, &a.msg.message_file) {
        (None, None) if a.msg.fields.is_some() => {
            a.msg.fields.clone().unwrap_or_default().into_bytes()
        }
        (Some(m), _) => unescape(m).map_err(|e| Usage::new("--message", e))?,
        (None, Some(path)) => read_capped("--message-file", path, &path.display(), "a message")?,
        (None, None) => DEFAULT_MESSAGE.to_vec(),
    };
    if raw.is_empty() {
        return Err(match &a.msg.message_file {
            Some(p) if a.msg.message.is_none() => Usage::value(
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
    let message_flag = if a.msg.message.is_some() {
        "--message"
    } else {
        "--message-file"
    };
    secrets.fill(&raw, message_flag)?;
    let first_shown = match &a.msg.first_message {
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
    Ok(Words {
        fields: a.msg.fields.is_some(),
        message: raw,
        first: first_shown,
        expect: expect_spec.to_string(),
        headers: Vec::new(),
    })
}

/// How much load, how paced and for how long, checked against each other.
struct Load {
    mode: Mode,
    connections: u64,
    threads: usize,
    max_backlog: u64,
    duration: Option<Duration>,
}

/// The mode, connections, threads and length of the run, in the order the checks ran before
/// they were split (the first mistake is the one reported).
fn load(a: &RunArgs) -> Result<Load, Usage> {
    let stages = a
        .modes
        .rate_stages
        .as_deref()
        .map(rate_stages)
        .transpose()?;
    let conns = a
        .modes
        .conn_stages
        .as_deref()
        .map(conn_stages)
        .transpose()?;
    if conns.is_some() {
        for (flag, given) in [
            ("--pipeline", a.modes.pipeline != 1),
            ("--first-message", a.msg.first_message.is_some()),
            ("--verify", a.msg.verify),
        ] {
            if given {
                return Err(Usage::says(
                    flag,
                    "does not go with --conn-stages (ramped connections run one exchange in flight each, no opening message)",
                ));
            }
        }
    }
    let connections = conns.map_or(a.load.connections, |(peak, _)| peak);
    let mode = mode(a, stages.map(|(peak, _)| peak))?;
    let max_backlog = a.modes.max_backlog.unwrap_or(1024);
    let threads = limits(a, connections)?;
    let duration = match (a.load.duration, a.load.requests) {
        (Some(d), _) => Some(d),
        // `--rate-stages` or `--conn-stages` alone: until the last point.
        (None, _) if stages.is_some() => stages.map(|(_, end)| end),
        (None, _) if conns.is_some() => conns.map(|(_, end)| end),
        // Every run is bounded in time: `-n` alone also stops after a default bound, so a
        // server that never answers cannot keep it going forever (`resolve/outputs.rs` notes
        // the rule).
        (None, Some(_)) => Some(REQUESTS_TIME_BOUND),
        (None, None) => Some(Duration::from_secs(10)),
    };
    Ok(Load {
        mode,
        connections,
        threads,
        max_backlog,
        duration,
    })
}

/// The pacing mode from `--think`, `--interval`, `--rate` and `--rate-stages`' peak, and the
/// flags that belong to another mode.
fn mode(a: &RunArgs, stage_peak: Option<f64>) -> Result<Mode, Usage> {
    let mode = match (a.modes.think, a.modes.interval, a.modes.rate, stage_peak) {
        (Some(d), _, _, _) => Mode::Think(d),
        (_, Some(d), _, _) => Mode::Interval(d),
        (_, _, Some(r), _) => Mode::Rate(r),
        (_, _, _, Some(peak)) => Mode::Rate(peak),
        _ => Mode::PingPong,
    };
    if mode.is_open_loop() && a.modes.pipeline != 1 {
        return Err(Usage::says(
            "--pipeline",
            "applies to closed-loop modes (ping-pong, --think); open-loop modes \
             (--interval, --rate) send on schedule whatever is in flight",
        ));
    }
    // A flag of another mode is a mistake, not silently ignored.
    for (flag, set) in [
        ("--max-backlog", a.modes.max_backlog.is_some()),
        ("--timer-slack", a.modes.timer_slack.is_some()),
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
    if a.modes
        .timer_slack
        .is_some_and(|d| d > Duration::from_millis(100))
    {
        return Err(Usage::new(
            "--timer-slack",
            "at most 100ms (it delays messages by up to that much; 1ms is the default)",
        ));
    }
    Ok(mode)
}

/// The caps on one process's load; the worker threads (`-t`, default one per core).
fn limits(a: &RunArgs, connections: u64) -> Result<usize, Usage> {
    if a.modes.pipeline > 1 << 20 {
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
    let threads = a.load.threads.map_or(cores, |t| t as usize);
    if threads > 1024 {
        return Err(Usage::new("-t/--threads", "at most 1024"));
    }
    if let Some(d) = a.modes.interval {
        let total = a.load.connections as f64 / d.as_secs_f64();
        if total > crate::units::MAX_RATE {
            return Err(Usage::value(
                "--interval",
                format!("{d:?}"),
                format!(
                    "with -c {} that is {total:.3e} messages/s in total, more \
                     than the 100M/s barrage can schedule; use a longer --interval or fewer \
                     connections",
                    a.load.connections
                ),
            ));
        }
    }
    if a.load.requests.is_some_and(|n| n > MAX_REQUESTS) {
        return Err(Usage::new(
            "-n/--requests",
            "at most 1,000,000,000,000,000 (1e15) exchanges per run",
        ));
    }
    Ok(threads)
}

/// Where the load goes: the spec's target fields, secrets hidden.
struct Aim {
    target: String,
    addr: std::net::SocketAddr,
    host: String,
    protocol: ProtocolSpec,
    more_addrs: Vec<std::net::SocketAddr>,
    source_ips: Vec<std::net::IpAddr>,
    proxy: Option<barrage_engine::ProxySpec>,
    tls: Option<TlsSpec>,
}

/// The run as data: where the load goes, and its load, timing and split.
fn spec(a: &RunArgs, load: &Load, aim: Aim) -> Result<Spec, Usage> {
    let timeout = a.limits.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let connect_timeout = a.limits.connect_timeout.unwrap_or(timeout);
    Ok(Spec {
        target: aim.target,
        addr: aim.addr,
        host: aim.host,
        protocol: aim.protocol,
        more_addrs: aim.more_addrs,
        source_ips: aim.source_ips,
        proxy: aim.proxy,
        tls: aim.tls,
        connections: load.connections,
        threads: load.threads,
        connect_rate: a.load.connect_rate,
        max_connecting: a.load.max_connecting.min(u32::MAX as u64) as u32,
        // `-n` alone: no duration; the plan bounds the run all the same.
        duration_ns: a
            .load
            .duration
            .map(ns)
            .or(load.duration.filter(|_| a.load.requests.is_none()).map(ns)),
        rate_stages: a.modes.rate_stages.clone(),
        conn_stages: a.modes.conn_stages.clone(),
        max_frame: a.msg.max_frame,
        script: None,
        requests: a.load.requests,
        warmup_ns: ns(a.load.warmup.unwrap_or_default()),
        mode: load.mode.into(),
        // HTTP/2 keeps its streams in flight as HTTP/1.1 its pipeline (closed loop).
        pipeline: a
            .http
            .streams
            .filter(|_| !load.mode.is_open_loop())
            .unwrap_or(a.modes.pipeline) as u32,
        max_backlog: load.max_backlog,
        timer_slack_ns: a
            .modes
            .timer_slack
            .map_or(barrage_engine::spec::DEFAULT_TIMER_SLACK_NS, ns),
        timeout_ns: ns(timeout),
        connect_timeout_ns: ns(connect_timeout),
        drain_ns: ns(DRAIN),
        clock: start_at(
            a.output.start_at.as_deref(),
            a.load
                .duration
                .filter(|_| a.scenario.is_none())
                .map(|d| d + a.load.warmup.unwrap_or_default()),
        )?,
        shares: shard(
            a.output.shard.as_deref(),
            a.load.threads.map(|t| t as usize),
            a.output.start_at.is_some(),
        )?,
        one_clock: a.output.one_clock,
        scenario: a.scenario.clone(),
    })
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
    let recording = vertical::Recording {
        message_len: plan.message.raw().len(),
        first_len: plan.first_message.as_ref().map(|t| t.raw().len()),
        hide: &hide,
        secret_body,
        redact,
    };
    (protocol::for_row(s.protocol.info()).record)(&mut s.protocol, &recording);
    s
}

/// A spec the checks above let through cannot fail to make a plan; should it, the error
/// still names what to fix.
fn spec_usage(e: SpecError) -> Usage {
    match e {
        SpecError::Request(e) => request_usage(e),
        SpecError::Escape { what, err } => Usage::new(what, err),
        SpecError::Invalid { what, err } => Usage::new(what, err),
        SpecError::Command(e) => Usage::new("--command", e),
        SpecError::Scenario(e) => Usage::file("scenario", e), // it names the file and key
        other => Usage::new("spec", other),
    }
}

#[cfg(test)]
mod tests;
