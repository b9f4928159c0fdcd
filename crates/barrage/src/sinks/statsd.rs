//! `--statsd HOST:PORT`: each second's figures sent to a StatsD daemon over UDP while the run
//! goes (Etsy's StatsD, Telegraf's statsd input, the Datadog agent), under `--statsd-prefix`
//! (`barrage` by default).
//!
//! Counters, a second's worth each (StatsD sums them): `P.exchanges.sent`, `.completed`,
//! `.failed`, `P.errors` and `P.errors.CLASS`, `P.connects`, `P.bytes.read`, `P.bytes.written`;
//! gauges, the second's value: `P.connections.open`, `P.in_flight`, `P.rps` and, for a second
//! that timed something, `P.latency.p50_us`, `.p90_us`, `.p99_us`, `.max_us`. A counter that is
//! 0 is not sent. Summed over the run, each counter is the result's figure (what the test
//! checks against Etsy's StatsD).
//!
//! Key decision: UDP datagrams of at most 1,400 bytes (several metrics each, one per line)
//! from the coordinator itself: a send to a StatsD that is not there costs nothing and never
//! waits (the socket does not block); what could not be sent is counted and said in one line
//! at the end.

use crate::usage::Usage;
use barrage_metrics::Tick;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};

/// The largest datagram sent: under a 1,500-byte MTU with its headers.
const DATAGRAM: usize = 1_400;

/// Where the metrics go, and under which prefix.
#[derive(Clone, Debug)]
pub struct StatsdTarget {
    addr: SocketAddr,
    prefix: String,
}

impl StatsdTarget {
    /// `--statsd HOST:PORT` (`PORT` alone: 127.0.0.1) and `--statsd-prefix`.
    pub fn parse(v: &str, prefix: Option<&str>) -> Result<StatsdTarget, Usage> {
        let spec = if v.parse::<u16>().is_ok() {
            format!("127.0.0.1:{v}")
        } else {
            v.to_string()
        };
        let addr = spec
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| {
                Usage::value(
                    "--statsd",
                    v,
                    "give HOST:PORT (or PORT), e.g. 127.0.0.1:8125",
                )
            })?;
        let prefix = prefix.unwrap_or("barrage");
        if prefix.is_empty()
            || !prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        {
            return Err(Usage::value(
                "--statsd-prefix",
                prefix,
                "letters, digits, '.', '_' and '-' only",
            ));
        }
        Ok(StatsdTarget {
            addr,
            prefix: prefix.trim_end_matches('.').to_string(),
        })
    }
}

/// The socket, and what it could not send.
pub struct Statsd {
    socket: Option<UdpSocket>,
    target: StatsdTarget,
    sent: AtomicU64,
    failed: AtomicU64,
    first_error: std::sync::Mutex<Option<String>>,
}

impl Statsd {
    pub fn start(target: StatsdTarget) -> Statsd {
        let bind = if target.addr.is_ipv4() {
            "0.0.0.0:0"
        } else {
            "[::]:0"
        };
        let socket = UdpSocket::bind(bind)
            .ok()
            .filter(|s| s.set_nonblocking(true).is_ok() && s.connect(target.addr).is_ok());
        Statsd {
            socket,
            target,
            sent: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            first_error: std::sync::Mutex::new(None),
        }
    }

    /// A second became final: its metrics, in as few datagrams as fit.
    pub fn tick(&self, t: &Tick) {
        for d in datagrams(t, &self.target.prefix) {
            let res = match &self.socket {
                Some(s) => s.send(d.as_bytes()).map(|_| ()),
                None => Err(std::io::Error::other("no UDP socket")),
            };
            match res {
                Ok(()) => self.sent.fetch_add(1, Ordering::Relaxed),
                Err(e) => {
                    if let Ok(mut f) = self.first_error.lock() {
                        f.get_or_insert_with(|| e.to_string());
                    }
                    self.failed.fetch_add(1, Ordering::Relaxed)
                }
            };
        }
    }

    /// A line on stderr when datagrams could not be sent.
    pub fn finish(self) {
        let failed = self.failed.into_inner();
        if failed > 0 {
            let why = self
                .first_error
                .into_inner()
                .ok()
                .flatten()
                .unwrap_or_default();
            crate::sys::err_line(format_args!(
                "warning: --statsd {}: {failed} of {} datagrams not sent: {why}",
                self.target.addr,
                failed + self.sent.into_inner()
            ));
        }
    }
}

/// One second's metrics ([`crate::sinks::second`]), packed into datagrams of at most
/// [`DATAGRAM`] bytes.
fn datagrams(t: &Tick, p: &str) -> Vec<String> {
    use crate::sinks::second::{counters, gauges, Value};
    let mut lines: Vec<String> = Vec::with_capacity(24);
    let mut count = |name: &str, n: u64| {
        if n > 0 {
            lines.push(format!("{p}.{name}:{n}|c"));
        }
    };
    let all = counters(t);
    for (name, _, n) in &all[..3] {
        count(name, *n);
    }
    count("errors", t.errors.total());
    for (class, n) in t.errors.nonzero() {
        count(&format!("errors.{}", class.as_str()), n);
    }
    for (name, _, n) in &all[3..] {
        count(name, *n);
    }
    for (name, _, v) in gauges(t) {
        lines.push(match v {
            Value::Int(n) => format!("{p}.{name}:{n}|g"),
            Value::Float(x) => format!("{p}.{name}:{x:.3}|g"),
        });
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    for l in lines {
        if !cur.is_empty() && cur.len() + 1 + l.len() > DATAGRAM {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push('\n');
        }
        cur.push_str(&l);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::ErrorClass;

    #[test]
    fn a_second_is_its_counters_and_gauges_and_zero_counters_are_not_sent() {
        let mut t = Tick {
            requests: 10,
            sent: 11,
            open: 4,
            ..Tick::default()
        };
        t.errors.add(ErrorClass::Timeout, 1);
        let d = datagrams(&t, "x");
        assert_eq!(d.len(), 1);
        let lines: Vec<&str> = d[0].lines().collect();
        assert_eq!(
            lines,
            [
                "x.exchanges.sent:11|c",
                "x.exchanges.completed:10|c",
                "x.errors:1|c",
                "x.errors.timeout:1|c",
                "x.connections.open:4|g",
                "x.in_flight:0|g",
                "x.rps:0.000|g",
            ]
        );
    }

    #[test]
    fn bad_targets_and_prefixes_are_refused() {
        assert!(StatsdTarget::parse("8125", None).is_ok());
        let e = StatsdTarget::parse("no port", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--statsd"), "{e}");
        let e = StatsdTarget::parse("8125", Some("a b"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--statsd-prefix"), "{e}");
    }
}
