//! Protocol identity in one table: each protocol's name, URL schemes (with aliases and the TLS
//! scheme), default ports, whether its URL has a path, what a scenario step is, and whether
//! the server can push messages. URL parsing, the scenario checker, `barrage dist`, scenario
//! loading and the recorded config all read [`PROTOCOLS`]; none of them lists schemes itself.
//!
//! Key design decision: the table lives here, in the lowest crate both the engine and the
//! binary read, as plain `const` data, so adding a protocol is one row (and a session in the
//! engine), never a scheme list to keep in step in several files.

/// What kind of target the steps talk to: it decides which step keys make sense.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// tcp://: bytes, with a framing.
    Tcp,
    /// http://, https://: a step is a request.
    Http,
    /// ws://, wss://: a step is a message.
    Ws,
    /// redis://, memcache://: a step is a command.
    Kv,
    /// grpc://, grpcs://: a step is a call.
    Grpc,
    /// mqtt://, mqtts://: a step publishes or subscribes.
    Mqtt,
}

/// One protocol's identity (a row of [`PROTOCOLS`]).
#[derive(Debug, PartialEq, Eq)]
pub struct ProtocolInfo {
    /// The protocol's name (the engine's `Protocol::name`, `config.protocol` of a plain run)
    /// and its plain URL scheme.
    pub name: &'static str,
    /// More plain schemes accepted for it (`memcached://`).
    pub aliases: &'static [&'static str],
    /// Its scheme over TLS, if it has one (`https`).
    pub tls_scheme: Option<&'static str>,
    /// The port when the URL names none, plain and TLS; `None`: the URL must name one.
    pub port: Option<u16>,
    pub tls_port: Option<u16>,
    /// Whether its URL carries a path (`http://HOST/PATH`) or names a host and port only.
    pub path: bool,
    /// What a scenario step is for it.
    pub steps: TargetKind,
    /// Whether the server may send what no request asked for, so `on` rules apply.
    pub pushes: bool,
}

pub const TCP: ProtocolInfo = ProtocolInfo {
    name: "tcp",
    aliases: &[],
    tls_scheme: None,
    port: None,
    tls_port: None,
    path: false,
    steps: TargetKind::Tcp,
    pushes: true,
};

pub const HTTP: ProtocolInfo = ProtocolInfo {
    name: "http",
    aliases: &[],
    tls_scheme: Some("https"),
    port: Some(80),
    tls_port: Some(443),
    path: true,
    steps: TargetKind::Http,
    pushes: false,
};

/// HTTP/2 with prior knowledge (`h2c://`); over TLS it is reached by `https://` (ALPN).
pub const H2: ProtocolInfo = ProtocolInfo {
    name: "h2c",
    aliases: &[],
    tls_scheme: None,
    port: Some(80),
    tls_port: None,
    path: true,
    steps: TargetKind::Http,
    pushes: false,
};

/// gRPC: calls over HTTP/2 (h2c; `grpcs://` over TLS, ALPN h2). Its URL names the method,
/// `/package.Service/Method`, and its port (gRPC has no usual one).
pub const GRPC: ProtocolInfo = ProtocolInfo {
    name: "grpc",
    aliases: &[],
    tls_scheme: Some("grpcs"),
    port: None,
    tls_port: None,
    path: true,
    steps: TargetKind::Grpc,
    pushes: false,
};

/// A gRPC method, `package.Service/Method` (a leading `/` allowed, as a URL's path has it):
/// the service's full name and the method's.
pub fn grpc_method(s: &str) -> Result<(&str, &str), String> {
    let bad = || format!("'{s}': a gRPC method is package.Service/Method");
    let rest = s.strip_prefix('/').unwrap_or(s);
    let (svc, m) = rest.split_once('/').ok_or_else(bad)?;
    let ok = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
    };
    if !ok(svc) || !ok(m) || m.contains('.') || svc.starts_with('.') || svc.ends_with('.') {
        return Err(bad());
    }
    Ok((svc, m))
}

pub const WS: ProtocolInfo = ProtocolInfo {
    name: "ws",
    aliases: &[],
    tls_scheme: Some("wss"),
    port: Some(80),
    tls_port: Some(443),
    path: true,
    steps: TargetKind::Ws,
    pushes: true,
};

pub const REDIS: ProtocolInfo = ProtocolInfo {
    name: "redis",
    aliases: &[],
    tls_scheme: None,
    port: Some(6379),
    tls_port: None,
    path: false,
    steps: TargetKind::Kv,
    pushes: true,
};

pub const MEMCACHE: ProtocolInfo = ProtocolInfo {
    name: "memcache",
    aliases: &["memcached"],
    tls_scheme: None,
    port: Some(11211),
    tls_port: None,
    path: false,
    steps: TargetKind::Kv,
    // `on` rules have always been accepted for key-value targets.
    pushes: true,
};

/// MQTT 3.1.1 and 5.0 (`mqtts://` over TLS): the broker pushes what was published to the
/// topics a client subscribed to.
pub const MQTT: ProtocolInfo = ProtocolInfo {
    name: "mqtt",
    aliases: &[],
    tls_scheme: Some("mqtts"),
    port: Some(1883),
    tls_port: Some(8883),
    path: false,
    steps: TargetKind::Mqtt,
    pushes: true,
};

/// Every protocol barrage speaks, in the order messages list them.
pub const PROTOCOLS: &[ProtocolInfo] = &[TCP, HTTP, H2, GRPC, WS, REDIS, MEMCACHE, MQTT];

impl ProtocolInfo {
    /// The scheme a URL of this protocol is written with (`https` for HTTP over TLS).
    pub fn scheme(&self, tls: bool) -> &'static str {
        match (tls, self.tls_scheme) {
            (true, Some(s)) => s,
            _ => self.name,
        }
    }

    /// The port a URL without one gets.
    pub fn default_port(&self, tls: bool) -> Option<u16> {
        if tls {
            self.tls_port
        } else {
            self.port
        }
    }
}

/// The protocol of a URL scheme (any case), and whether the scheme means TLS.
pub fn by_scheme(scheme: &str) -> Option<(&'static ProtocolInfo, bool)> {
    by_scheme_in(PROTOCOLS, scheme)
}

/// [`by_scheme`] in any table (a test's table with a stub row, `tests/it/stub_protocol.rs` in
/// the engine).
pub fn by_scheme_in<'t>(
    table: &'t [ProtocolInfo],
    scheme: &str,
) -> Option<(&'t ProtocolInfo, bool)> {
    table.iter().find_map(|p| {
        if p.tls_scheme.is_some_and(|s| s.eq_ignore_ascii_case(scheme)) {
            Some((p, true))
        } else if p.name.eq_ignore_ascii_case(scheme)
            || p.aliases.iter().any(|a| a.eq_ignore_ascii_case(scheme))
        {
            Some((p, false))
        } else {
            None
        }
    })
}

/// The protocol of a URL (`None` without a known scheme), and whether it means TLS.
pub fn of_url(url: &str) -> Option<(&'static ProtocolInfo, bool)> {
    by_scheme(url.split_once("://")?.0)
}

/// The schemes for messages: `tcp://, http://, https://, h2c://, ..., mqtt://, mqtts://`
/// (aliases left out).
pub fn supported() -> String {
    supported_in(PROTOCOLS)
}

/// [`supported`] of any table.
pub fn supported_in(table: &[ProtocolInfo]) -> String {
    let mut out = String::new();
    for p in table {
        for s in std::iter::once(p.name).chain(p.tls_scheme) {
            if !out.is_empty() {
                out.push_str(", ");
            }
            out.push_str(s);
            out.push_str("://");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scheme_names_one_protocol() {
        let mut seen = Vec::new();
        for p in PROTOCOLS {
            for s in std::iter::once(p.name)
                .chain(p.aliases.iter().copied())
                .chain(p.tls_scheme)
            {
                assert!(!seen.contains(&s), "{s} twice");
                assert_eq!(s, s.to_ascii_lowercase());
                seen.push(s);
                let (q, tls) = by_scheme(&s.to_ascii_uppercase()).unwrap();
                assert_eq!(q, p);
                assert_eq!(tls, Some(s) == p.tls_scheme);
            }
            // A TLS port needs a TLS scheme (gRPC has the scheme, and no usual port).
            assert!(p.tls_port.is_none() || p.tls_scheme.is_some(), "{}", p.name);
        }
        assert_eq!(by_scheme("memcached"), Some((&MEMCACHE, false)));
        assert_eq!(by_scheme("wss"), Some((&WS, true)));
        assert_eq!(by_scheme("ftp"), None);
        assert_eq!(of_url("HTTPS://x/y"), Some((&HTTP, true)));
        assert_eq!(of_url("x:80"), None);
    }

    #[test]
    fn messages_list_the_schemes_in_the_tables_order() {
        assert_eq!(
            supported(),
            "tcp://, http://, https://, h2c://, grpc://, grpcs://, ws://, wss://, redis://, \
             memcache://, mqtt://, mqtts://"
        );
        assert_eq!(HTTP.scheme(true), "https");
        assert_eq!(REDIS.scheme(true), "redis");
        assert_eq!(HTTP.default_port(true), Some(443));
        assert_eq!(TCP.default_port(false), None);
        assert_eq!(by_scheme("grpcs"), Some((&GRPC, true)));
        assert_eq!(
            (GRPC.default_port(false), GRPC.default_port(true)),
            (None, None)
        );
    }
}
