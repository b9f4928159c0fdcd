//! From the user's words to a validated plan (the second stage of argument handling).
//!
//! Every check that needs more than one value, the file system or the resolver lives here, and
//! every failure is a `Usage` error: one line naming the flag or file and how to fix it, exit
//! code 2. The engine never sees anything that did not pass through `plan`.

use crate::cli::RunArgs;
use barrage_engine::{unescape, Delimiter, Framing, LenPrefix, Mode, Plan, Target, Template};
use barrage_metrics::RunConfig;
use std::net::ToSocketAddrs;
use std::time::Duration;

/// A mistake in the command line or its files; printed as one line, exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

fn usage<T>(msg: impl Into<String>) -> Result<T, Usage> {
    Err(Usage(msg.into()))
}

const MAX_MESSAGE: u64 = 16 << 20;
const DEFAULT_MESSAGE: &[u8] = b"hello from barrage\n";

pub fn plan(a: &RunArgs) -> Result<(Plan, RunConfig), Usage> {
    let target = target(&a.target)?;
    let framing = expect(&a.expect)?;
    if a.verify && framing != Framing::Echo {
        return usage(format!(
            "--verify compares echoed bytes and needs --expect echo (got --expect {})",
            a.expect
        ));
    }
    let raw = match (&a.message, &a.message_file) {
        (Some(m), _) => unescape(m).map_err(|e| Usage(format!("--message: {e}")))?,
        (None, Some(path)) => {
            let p = path.display();
            let meta = std::fs::metadata(path)
                .map_err(|e| Usage(format!("--message-file {p}: {}", io_reason(&e))))?;
            if meta.len() > MAX_MESSAGE {
                return usage(format!(
                    "--message-file {p}: {} bytes is more than the 16 MiB a message may have",
                    meta.len()
                ));
            }
            std::fs::read(path)
                .map_err(|e| Usage(format!("--message-file {p}: {}", io_reason(&e))))?
        }
        (None, None) => DEFAULT_MESSAGE.to_vec(),
    };
    if raw.is_empty() {
        return usage(match &a.message_file {
            Some(p) if a.message.is_none() => format!(
                "--message-file {}: the file is empty; a message needs at least one byte",
                p.display()
            ),
            _ => "--message is empty; give at least one byte, e.g. -m 'PING\\r\\n'".into(),
        });
    }
    let first = match &a.first_message {
        Some(m) => {
            let b = unescape(m).map_err(|e| Usage(format!("--first-message: {e}")))?;
            if b.is_empty() {
                return usage("--first-message is empty; drop it or give at least one byte");
            }
            Some(Template::new(b))
        }
        None => None,
    };
    let mode = match (a.think, a.interval, a.rate) {
        (Some(d), _, _) => Mode::Think(d),
        (_, Some(d), _) => Mode::Interval(d),
        (_, _, Some(r)) => Mode::Rate(r),
        _ => Mode::PingPong,
    };
    if mode.is_open_loop() && a.pipeline != 1 {
        return usage(
            "--pipeline applies to closed-loop modes (ping-pong, --think); open-loop modes \
             (--interval, --rate) send on schedule whatever is in flight",
        );
    }
    if a.pipeline > 1 << 20 {
        return usage("--pipeline: at most 1048576 exchanges in flight per connection");
    }
    if a.connections > 10_000_000 {
        return usage(
            "-c/--connections: at most 10,000,000 per process; split larger loads over processes",
        );
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = a.threads.map_or(cores, |t| t as usize);
    if threads > 1024 {
        return usage("-t/--threads: at most 1024");
    }
    let duration = match (a.duration, a.requests) {
        (Some(d), _) => Some(d),
        (None, Some(_)) => None,
        (None, None) => Some(Duration::from_secs(10)),
    };
    let connect_timeout = a.connect_timeout.unwrap_or(a.timeout);
    let message = Template::new(raw);
    let config = RunConfig {
        target: a.target.clone(),
        protocol: "tcp".into(),
        connections: a.connections,
        threads: threads.min(a.connections as usize),
        duration_s: duration.map(|d| d.as_secs_f64()),
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
        max_backlog: a.max_backlog,
        message: barrage_engine::escape(&message.raw()[..message.raw().len().min(256)]),
        message_bytes: message.raw().len(),
        first_message: first.as_ref().map(|t| barrage_engine::escape(t.raw())),
        expect: framing.describe(),
        verify: a.verify,
    };
    let plan = Plan {
        target,
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
        max_backlog: a.max_backlog,
        timeout: a.timeout,
        connect_timeout,
        drain: Duration::from_secs(2),
    };
    Ok((plan, config))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// `tcp://HOST:PORT`, resolved now so that a bad name fails before any load.
pub fn target(s: &str) -> Result<Target, Usage> {
    let Some((scheme, rest)) = s.split_once("://") else {
        return usage(format!(
            "target '{s}' has no scheme; write it as tcp://HOST:PORT, e.g. tcp://127.0.0.1:7000"
        ));
    };
    if !scheme.eq_ignore_ascii_case("tcp") {
        return usage(format!(
            "unknown scheme '{scheme}' in target '{s}'; supported: tcp://HOST:PORT"
        ));
    }
    let hostport = rest.strip_suffix('/').unwrap_or(rest);
    if hostport.contains('/') {
        return usage(format!(
            "target '{s}': a tcp:// target has no path; write tcp://HOST:PORT"
        ));
    }
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        match v6.split_once("]:") {
            Some((h, p)) => (h, p),
            None => return usage(format!("target '{s}' has no port; write tcp://[ADDR]:PORT")),
        }
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) if !h.is_empty() => (h, p),
            Some(_) => return usage(format!("target '{s}' has no host; write tcp://HOST:PORT")),
            None => {
                return usage(format!(
                    "target '{s}' has no port; write tcp://{hostport}:PORT"
                ))
            }
        }
    };
    let port: u32 = port.parse().map_err(|_| {
        Usage(format!(
            "target '{s}': port '{port}' is not a number (1-65535)"
        ))
    })?;
    if port == 0 || port > 65535 {
        return usage(format!(
            "target '{s}': port {port} is out of range; use 1-65535"
        ));
    }
    let addr = (host, port as u16)
        .to_socket_addrs()
        .map_err(|e| Usage(format!("target '{s}': cannot resolve host '{host}': {e}")))?
        .next()
        .ok_or_else(|| Usage(format!("target '{s}': host '{host}' has no address")))?;
    Ok(Target {
        url: s.to_string(),
        addr,
    })
}

/// `--expect SPEC`.
pub fn expect(spec: &str) -> Result<Framing, Usage> {
    let (kind, arg) = spec.split_once(':').unwrap_or((spec, ""));
    let bad = |why: &str| Usage(format!("--expect {spec}: {why}"));
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

    #[test]
    fn targets() {
        assert_eq!(
            target("tcp://127.0.0.1:7000").unwrap().addr,
            "127.0.0.1:7000".parse().unwrap()
        );
        assert_eq!(
            target("tcp://[::1]:80/").unwrap().addr,
            "[::1]:80".parse().unwrap()
        );
        assert!(target("tcp://localhost:9").is_ok());
        for (bad, needle) in [
            ("127.0.0.1:7000", "no scheme"),
            ("udp://127.0.0.1:1", "unknown scheme 'udp'"),
            ("tcp://127.0.0.1", "no port"),
            ("tcp://127.0.0.1:0", "out of range"),
            ("tcp://127.0.0.1:65536", "out of range"),
            ("tcp://127.0.0.1:http", "not a number"),
            ("tcp://:80", "no host"),
            ("tcp://no-such-host.invalid:80", "cannot resolve host"),
            ("tcp://127.0.0.1:80/x", "no path"),
        ] {
            let e = target(bad).unwrap_err().0;
            assert!(e.contains(needle), "{bad}: {e}");
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
            assert!(expect(bad).unwrap_err().0.starts_with("--expect"), "{bad}");
        }
    }
}
