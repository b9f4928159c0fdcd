//! From the user's words to a validated plan (the second stage of argument handling).
//!
//! Every check that needs more than one value, the file system or the resolver lives here, and
//! every failure is a `Usage` error: one line naming the flag or file and how to fix it, exit
//! code 2. The engine never sees anything that did not pass through `plan`.

use crate::cli::RunArgs;
use crate::redact::{self, Secrets};
use crate::url::{self, Scheme};
use barrage_engine::{
    unescape, Delimiter, Framing, HttpPlan, LenPrefix, McPlan, Mode, Plan, Protocol, RedisPlan,
    StatusSet, Target, Template, WsPlan,
};
use barrage_metrics::RunConfig;
use std::time::Duration;

pub use crate::usage::Usage;

const MAX_MESSAGE: u64 = 16 << 20;
/// `-n`: far beyond any run, low enough for exact arithmetic on request counts.
const MAX_REQUESTS: u64 = 1_000_000_000_000_000;
/// `-n` without `-d` also stops after this long: every run is bounded in time.
pub const REQUESTS_TIME_BOUND: Duration = Duration::from_secs(600);
const DEFAULT_MESSAGE: &[u8] = b"hello from barrage\n";

pub fn plan(a: &RunArgs) -> Result<(Plan, RunConfig), Usage> {
    let mut secrets = Secrets::default();
    // No message may quote a value filled from the environment.
    plan_with(a, &mut secrets).map_err(|e| e.map(|s| secrets.scrub(s)))
}

fn plan_with(a: &RunArgs, secrets: &mut Secrets) -> Result<(Plan, RunConfig), Usage> {
    // What is shown (results, live line, messages) keeps placeholders and hides query tokens;
    // what is connected to has the secrets filled in.
    let shown_target = redact::url(&a.target, &a.redact);
    let filled_target = secrets.fill_str(&a.target, "target")?;
    let url = url::parse(&filled_target)
        .map_err(|e| e.map(|s| s.replace(&filled_target, &shown_target)))?;
    let target = Target {
        url: shown_target.clone(),
        addr: url.addr,
    };
    check_flags_fit(a, url.scheme)?;
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
    let filled = secrets.fill(&raw, message_flag)?;
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
    let first = match &first_shown {
        Some(b) => Some(Template::new(secrets.fill(b, "--first-message")?)),
        None => None,
    };
    let mode = match (a.think, a.interval, a.rate) {
        (Some(d), _, _) => Mode::Think(d),
        (_, Some(d), _) => Mode::Interval(d),
        (_, _, Some(r)) => Mode::Rate(r),
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
    if a.max_backlog.is_some() && !mode.is_open_loop() {
        return Err(Usage::says(
            "--max-backlog",
            format!(
                "applies to open-loop modes (--interval, --rate), not {}",
                mode.name()
            ),
        ));
    }
    let max_backlog = a.max_backlog.unwrap_or(1024);
    if a.pipeline > 1 << 20 {
        return Err(Usage::new(
            "--pipeline",
            "at most 1048576 exchanges in flight per connection",
        ));
    }
    if a.connections > 10_000_000 {
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
        // Every run is bounded in time: `-n` alone also stops after a default bound, so a
        // server that never answers cannot keep it going forever (run.rs prints the rule).
        (None, Some(_)) => Some(REQUESTS_TIME_BOUND),
        (None, None) => Some(Duration::from_secs(10)),
    };
    let connect_timeout = a.connect_timeout.unwrap_or(a.timeout);
    let headers = headers(&a.headers)?
        .into_iter()
        .map(|(n, v)| Ok((n, secrets.fill_str(&v, "-H/--header")?)))
        .collect::<Result<Vec<_>, Usage>>()?;
    let (protocol, http_note) = protocol(a, &url, &headers, secrets)?;
    let http_note = http_note.map(|n| secrets.scrub(&n));
    let tls = if url.scheme.tls() {
        Some(crate::tls::plan(&url, a.insecure, a.cacert.as_deref())?)
    } else {
        None
    };
    let message = Template::new(filled);
    // `--secret-body`: the size is all that is shown of a message.
    let shown = |b: &[u8], filled_len: usize| {
        if a.secret_body {
            redact::hidden(filled_len)
        } else {
            barrage_engine::escape(&b[..b.len().min(256)])
        }
    };
    let config = RunConfig {
        target: shown_target,
        protocol: url.scheme.name().into(),
        connections: a.connections,
        threads: threads.min(a.connections as usize),
        // `-n` alone: the user set no duration; the time bound is a guard, printed at start.
        duration_s: duration
            .filter(|_| a.duration.is_some() || a.requests.is_none())
            .map(|d| d.as_secs_f64()),
        requests: a.requests,
        warmup_s: a.warmup.as_secs_f64(),
        mode: mode.name().into(),
        pipeline: a.pipeline as u32,
        think_ms: a.think.map(ms),
        interval_ms: a.interval.map(ms),
        rate: a.rate,
        connect_rate: a.connect_rate,
        timeout_ms: ms(a.timeout),
        connect_timeout_ms: ms(connect_timeout),
        max_backlog,
        message: shown(&raw, message.raw().len()),
        message_bytes: message.raw().len(),
        first_message: first_shown
            .as_ref()
            .zip(first.as_ref())
            .map(|(b, t)| shown(b, t.raw().len())),
        expect: match url.scheme {
            Scheme::Http | Scheme::Https => "http response".into(),
            Scheme::Redis => "RESP reply".into(),
            Scheme::Memcache => "memcached reply".into(),
            _ => framing.describe(),
        },
        verify: a.verify,
        http: http_note,
        tls: url.scheme.tls().then(|| {
            if a.insecure {
                "verification off (--insecure)".into()
            } else {
                "verified".into()
            }
        }),
        subprotocol: a.subprotocol.clone(),
        commands: match url.scheme {
            Scheme::Redis if a.command.is_empty() => vec!["PING".into()],
            Scheme::Memcache if a.command.is_empty() => vec!["get key:{rand%1000}".into()],
            Scheme::Redis | Scheme::Memcache => a.command.clone(),
            _ => Vec::new(),
        },
    };
    let plan = Plan {
        target,
        protocol,
        tls,
        connections: a.connections,
        threads,
        connect_rate: a.connect_rate,
        max_connecting: a.max_connecting.min(u32::MAX as u64) as u32,
        duration,
        requests: a.requests,
        warmup: a.warmup,
        message,
        first_message: first,
        framing,
        verify: a.verify,
        mode,
        pipeline: a.pipeline as u32,
        max_backlog,
        timeout: a.timeout,
        connect_timeout,
        drain: Duration::from_secs(2),
        clock: Default::default(),
        shares: None,
    };
    Ok((plan, config))
}

/// The `--command` mix (or the protocol's default command).
fn commands(
    a: &RunArgs,
    default: &str,
    compile: fn(
        &[String],
    )
        -> Result<barrage_engine::redis::Commands, barrage_engine::redis::CommandError>,
) -> Result<barrage_engine::redis::Commands, Usage> {
    let given = if a.command.is_empty() {
        vec![default.to_string()]
    } else {
        a.command.clone()
    };
    compile(&given).map_err(|e| Usage::new("--command", e))
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
    if kv {
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
                    format!("applies to tcp:// and ws:// targets; a {s}:// request is --command"),
                ));
            }
        }
    }
    if http {
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
                    "applies to tcp:// and ws:// targets; an HTTP request is -X, -H and --body",
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

/// What is spoken on the connection, from the scheme and the HTTP/WebSocket flags.
fn protocol(
    a: &RunArgs,
    url: &url::Url,
    headers: &[(String, String)],
    secrets: &mut Secrets,
) -> Result<(Protocol, Option<String>), Usage> {
    match url.scheme {
        Scheme::Tcp => Ok((Protocol::Tcp, None)),
        Scheme::Redis => Ok((
            Protocol::Redis(RedisPlan {
                commands: commands(a, "PING", barrage_engine::redis::Commands::redis)?,
                resp3: a.resp3,
            }),
            None,
        )),
        Scheme::Memcache => Ok((
            Protocol::Memcache(McPlan {
                commands: commands(
                    a,
                    "get key:{rand%1000}",
                    barrage_engine::redis::Commands::memcache,
                )?,
            }),
            None,
        )),
        Scheme::Ws | Scheme::Wss => {
            let host = url.host_header();
            // Build one handshake now: bad headers fail here, not on every connection.
            let spec = barrage_engine::ws::HandshakeSpec {
                host_header: &host,
                path: &url.path,
                headers,
                subprotocol: a.subprotocol.as_deref(),
            };
            let key = barrage_engine::ws::new_key([0; 16]);
            barrage_engine::ws::handshake_request(&spec, &key, &mut Vec::new())
                .map_err(request_usage)?;
            Ok((
                Protocol::Ws(WsPlan {
                    host_header: host,
                    path: url.path.clone(),
                    headers: headers.to_vec(),
                    subprotocol: a.subprotocol.clone(),
                    binary: a.binary,
                    max_message: MAX_MESSAGE,
                }),
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
            let body = match body {
                Some(b) => Some(secrets.fill(&b, "--body")?),
                None => None,
            };
            let method = a.method.clone().unwrap_or_else(|| "GET".into());
            let host = url.host_header();
            let spec = barrage_engine::http::RequestSpec {
                method: &method,
                path: &url.path,
                host_header: &host,
                headers,
                body: body.as_deref(),
                keep_alive: true,
            };
            let request =
                barrage_engine::http::RequestTemplate::new(&spec).map_err(request_usage)?;
            let expect_status = match &a.expect_status {
                Some(l) => status_set(l)?,
                None => StatusSet::default(),
            };
            let note = format!(
                "{method} {}{}",
                redact::url(&url.path, &a.redact),
                body.as_ref()
                    .map(|b| format!(", body {} B", b.len()))
                    .unwrap_or_default()
            );
            Ok((
                Protocol::Http(HttpPlan {
                    request,
                    expect_status,
                }),
                Some(note),
            ))
        }
    }
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
    let bad = |item: &str| {
        Usage::value(
            "--expect-status",
            list,
            format!("'{item}' is not a status; write e.g. 200,204 or 2xx,3xx or 200-299"),
        )
    };
    let code = |t: &str| -> Option<u16> { t.parse().ok().filter(|c| (100..=599).contains(c)) };
    let mut ranges = Vec::new();
    for item in list.split(',').map(str::trim) {
        let r = if let Some(c) = item.strip_suffix("xx").or_else(|| item.strip_suffix("XX")) {
            let d: u16 = c
                .parse()
                .ok()
                .filter(|d| (1..=5).contains(d))
                .ok_or_else(|| bad(item))?;
            (d * 100, d * 100 + 99)
        } else if let Some((lo, hi)) = item.split_once('-') {
            let (lo, hi) = (
                code(lo).ok_or_else(|| bad(item))?,
                code(hi).ok_or_else(|| bad(item))?,
            );
            if lo > hi {
                return Err(bad(item));
            }
            (lo, hi)
        } else {
            let c = code(item).ok_or_else(|| bad(item))?;
            (c, c)
        };
        ranges.push(r);
    }
    Ok(StatusSet(ranges))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
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
    let (kind, arg) = spec.split_once(':').unwrap_or((spec, ""));
    let bad = |why: &str| Usage::value("--expect", spec, why);
    Ok(match (kind, arg) {
        ("echo", "") => Framing::Echo,
        ("line", "") => Framing::Line,
        ("none", "") => Framing::None,
        ("bytes", n) => {
            let n: u64 = n
                .parse()
                .map_err(|_| bad("write bytes:N with N the reply size in bytes, e.g. bytes:64"))?;
            if n == 0 {
                return Err(bad("N must be at least 1 (use --expect none for no reply)"));
            }
            Framing::Bytes(n)
        }
        ("delim", t) => {
            let b = unescape(t).map_err(|e| bad(&e.to_string()))?;
            Framing::Delim(
                Delimiter::new(&b).ok_or_else(|| bad("the delimiter is empty, e.g. delim:\\r\\n"))?,
            )
        }
        ("len", k) => Framing::Len(match k {
            "u16be" => LenPrefix::U16Be,
            "u16le" => LenPrefix::U16Le,
            "u32be" => LenPrefix::U32Be,
            "u32le" => LenPrefix::U32Le,
            _ => return Err(bad("the prefix is one of u16be, u16le, u32be, u32le")),
        }),
        _ => {
            return Err(bad(
                "unknown framing; use echo, bytes:N, line, delim:TEXT, len:u16be|u16le|u32be|u32le or none",
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(argv: &[&str]) -> RunArgs {
        let full: Vec<&str> = ["barrage", "run"].iter().chain(argv).copied().collect();
        match crate::cli::Cli::try_parse_from(full).unwrap().command {
            crate::cli::Command::Run(a) => *a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn requests_without_duration_are_still_bounded_in_time() {
        // Regression: `-n` alone against a server that never answers ran until interrupted.
        let (p, _) = plan(&args(&["tcp://127.0.0.1:9", "-n", "5"])).unwrap();
        assert_eq!(p.duration, Some(REQUESTS_TIME_BOUND));
        assert_eq!(p.requests, Some(5));
        let (p, _) = plan(&args(&["tcp://127.0.0.1:9", "-n", "5", "-d", "2s"])).unwrap();
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
            let err = crate::cli::Cli::try_parse_from(full)
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
        assert_eq!(expect("len:u32le").unwrap(), Framing::Len(LenPrefix::U32Le));
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
