//! Target URLs: `tcp://HOST:PORT`, `http(s)://HOST[:PORT][/PATH]`, `ws(s)://HOST[:PORT][/PATH]`,
//! `redis://HOST[:PORT]` (6379), `memcache://HOST[:PORT]` (11211), `mqtt(s)://HOST[:PORT]`
//! (1883, 8883). Schemes, aliases, default
//! ports and whether a path is allowed come from the protocol table
//! (`barrage_scenario::protocol`); a [`Scheme`] is a row of it and a TLS bit.
//!
//! Parsed by hand (the grammar is small) so that every mistake gets its own one-line advice,
//! and resolved at once so that a bad host name fails before any load.

use crate::usage::Usage;
use barrage_scenario::protocol::{self, ProtocolInfo};
use std::net::{SocketAddr, ToSocketAddrs};

/// What a URL's scheme says: the protocol's row of the table and whether it runs over TLS
/// (`https` is the HTTP row with TLS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scheme {
    pub info: &'static ProtocolInfo,
    pub tls: bool,
}

impl Scheme {
    /// The protocol's row of the table.
    pub fn info(self) -> &'static ProtocolInfo {
        self.info
    }

    pub fn tls(self) -> bool {
        self.tls
    }

    /// The scheme as the table writes it (`https` for HTTP over TLS).
    pub fn name(self) -> &'static str {
        self.info.scheme(self.tls)
    }

    /// Whether this is protocol `row` (plain or over TLS).
    pub fn is(self, row: &ProtocolInfo) -> bool {
        self.info.name == row.name
    }

    /// Targets that name a host and port only (no path).
    pub fn pathless(self) -> bool {
        !self.info.path
    }

    /// The scheme a URL is written with (any case, aliases too).
    fn of(word: &str) -> Option<Scheme> {
        let (info, tls) = protocol::by_scheme(word)?;
        Some(Scheme { info, tls })
    }
}

#[derive(Clone, Debug)]
pub struct Url {
    pub scheme: Scheme,
    /// Host as written (a name or an address; IPv6 without brackets).
    pub host: String,
    pub port: u16,
    /// Path and query, starting with '/' (http and ws only).
    pub path: String,
    pub addr: SocketAddr,
}

impl Url {
    /// The Host header: the port is left out when it is the scheme's default.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        // Only targets with a path (http, ws) send a Host header.
        let default = if self.scheme.pathless() {
            None
        } else {
            self.scheme.info().default_port(self.scheme.tls())
        };
        if Some(self.port) == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// Every target error starts with `target 'URL'`.
fn usage<T>(s: &str, why: impl std::fmt::Display) -> Result<T, Usage> {
    Err(bad(s, why))
}

fn bad(s: &str, why: impl std::fmt::Display) -> Usage {
    Usage::says("target", format!("'{s}'{why}"))
}

pub fn parse(raw: &str) -> Result<Url, Usage> {
    // Messages show the target with control characters escaped, so they stay one line.
    let shown = raw.escape_debug().to_string();
    let s = shown.as_str();
    let Some((scheme, rest)) = raw.split_once("://") else {
        if barrage_scenario::Format::of(std::path::Path::new(raw)).is_some() {
            return usage(
                s,
                format!(
                    " is a scenario file: run it with `barrage run {s}` (find-max takes a URL)"
                ),
            );
        }
        return usage(
            s,
            " has no scheme; write it as tcp://HOST:PORT, http://HOST/PATH or ws://HOST/PATH",
        );
    };
    let Some(scheme) = Scheme::of(scheme) else {
        return usage(
            s,
            format!(
                ": unknown scheme '{}'; supported: {}",
                scheme.to_ascii_lowercase(),
                protocol::supported()
            ),
        );
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if scheme.pathless() && !path.is_empty() && path != "/" {
        let n = scheme.name();
        return usage(
            s,
            format!(": a {n}:// target has no path; write {n}://HOST:PORT"),
        );
    }
    if path.chars().any(|c| c.is_control() || c == ' ') {
        return usage(
            s,
            ": the path has spaces or control characters; percent-encode them (%20)",
        );
    }
    if authority.contains('@') {
        return usage(
            s,
            ": user:password@ in the URL is not supported; send -H 'Authorization: ...'",
        );
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, "")) => (h, None),
            Some((h, p)) if p.starts_with(':') => (h, Some(&p[1..])),
            _ => return usage(s, ": write an IPv6 host as [ADDR]:PORT"),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return usage(s, " has no host");
    }
    let port: u16 = match port {
        None => match scheme.info().default_port(scheme.tls()) {
            Some(p) => p,
            None => {
                let n = scheme.name();
                return usage(s, format!(" has no port; write {n}://{authority}:PORT"));
            }
        },
        Some(p) => {
            let n: u32 = p
                .parse()
                .map_err(|_| bad(s, format!(": port '{p}' is not a number (1-65535)")))?;
            if n == 0 || n > 65535 {
                return usage(s, format!(": port {n} is out of range; use 1-65535"));
            }
            n as u16
        }
    };
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| bad(s, format!(": cannot resolve host '{host}': {e}")))?
        .next()
        .ok_or_else(|| bad(s, format!(": host '{host}' has no address")))?;
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_string(),
    };
    Ok(Url {
        scheme,
        host: host.to_string(),
        port,
        path,
        addr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_scheme() {
        let u = parse("tcp://127.0.0.1:7000").unwrap();
        assert_eq!((u.scheme.name(), u.port), ("tcp", 7000));
        let u = parse("http://127.0.0.1/x?y=1").unwrap();
        assert_eq!((u.port, u.path.as_str()), (80, "/x?y=1"));
        assert_eq!(u.host_header(), "127.0.0.1");
        let u = parse("https://localhost:8443").unwrap();
        assert_eq!((u.port, u.path.as_str()), (8443, "/"));
        assert_eq!(u.host_header(), "localhost:8443");
        let u = parse("ws://[::1]:9000/chat").unwrap();
        assert_eq!(u.host_header(), "[::1]:9000");
        assert_eq!(parse("wss://127.0.0.1").unwrap().port, 443);
    }

    #[test]
    fn every_mistake_has_its_advice() {
        for (bad, needle) in [
            ("127.0.0.1:7000", "no scheme"),
            ("udp://127.0.0.1:1", "unknown scheme 'udp'"),
            ("tcp://127.0.0.1", "no port"),
            ("tcp://127.0.0.1:0", "out of range"),
            ("http://127.0.0.1:65536/", "out of range"),
            ("tcp://127.0.0.1:http", "not a number"),
            ("tcp://:80", "no host"),
            ("http:///x", "no host"),
            ("tcp://no-such-host.invalid:80", "cannot resolve host"),
            ("tcp://127.0.0.1:80/x", "no path"),
            ("http://127.0.0.1/a b", "percent-encode"),
            ("http://127.0.0.1/a\r\nX: y", "percent-encode"),
            ("http://u:p@127.0.0.1/", "Authorization"),
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.flag(), "target");
            let e = e.to_string();
            assert!(
                e.starts_with("target '") && e.contains(needle),
                "{bad}: {e}"
            );
        }
    }
}
