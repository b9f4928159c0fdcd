//! Which HTTP proxy the connections tunnel through (CONNECT), if any: `--proxy URL` for any
//! target; else, as curl reads them, `https_proxy`/`HTTPS_PROXY` for TLS targets,
//! `http_proxy` for plain ones (not `HTTP_PROXY`: a CGI request header can set it), then
//! `all_proxy`/`ALL_PROXY`, for the web protocols (http, h2c, ws, grpc and their TLS forms)
//! unless `no_proxy`/`NO_PROXY` names the host (or a domain it is in, or `*`), and never for a
//! loopback target (a load test of this machine's own server does not go out and back);
//! `--no-proxy` ignores the variables.
//!
//! A proxy is an `http://[USER:PASSWORD@]HOST[:PORT]` URL (port 1080 by default, as curl
//! has it); its credentials go out as `Proxy-Authorization: Basic` and are never shown (the
//! result records `http://HOST:PORT`, the credentials as `[redacted]`).

use crate::resolve::cli::RunArgs;
use crate::resolve::url::Url;
use crate::usage::Usage;
use barrage_engine::ProxySpec;
use barrage_scenario::protocol;
use base64::Engine as _;
use std::net::ToSocketAddrs;

/// The proxy a run goes through, and where it was named (`--proxy`, `https_proxy`, ...).
pub struct Chosen {
    pub spec: ProxySpec,
    pub from: String,
}

/// The run's proxy, from its flags and the environment.
pub fn choose(a: &RunArgs, url: &Url) -> Result<Option<Chosen>, Usage> {
    choose_in(a.load.proxy.as_deref(), a.load.no_proxy, url, &|k| {
        std::env::var(k).ok().filter(|v| !v.trim().is_empty())
    })
}

fn choose_in(
    flag: Option<&str>,
    ignore_env: bool,
    url: &Url,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Chosen>, Usage> {
    if let Some(v) = flag {
        return Ok(Some(Chosen {
            spec: parse(v, "--proxy")?,
            from: "--proxy".into(),
        }));
    }
    let web = [
        &protocol::HTTP,
        &protocol::H2,
        &protocol::WS,
        &protocol::GRPC,
    ]
    .iter()
    .any(|r| url.scheme.is(r));
    if ignore_env || !web || url.addr.ip().is_loopback() {
        return Ok(None);
    }
    let names: &[&str] = if url.scheme.tls() {
        &["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]
    } else {
        &["http_proxy", "all_proxy", "ALL_PROXY"]
    };
    let Some((name, v)) = names.iter().find_map(|n| env(n).map(|v| (*n, v))) else {
        return Ok(None);
    };
    let no = env("no_proxy")
        .or_else(|| env("NO_PROXY"))
        .unwrap_or_default();
    if excluded(&no, &url.host) {
        return Ok(None);
    }
    Ok(Some(Chosen {
        spec: parse(&v, name)?,
        from: name.to_string(),
    }))
}

/// Whether `no_proxy` (comma-separated names, `.domain`s, addresses, or `*`) names `host`.
fn excluded(no_proxy: &str, host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    no_proxy.split(',').map(str::trim).any(|e| {
        let e = e.split_once(':').map_or(e, |(h, port)| {
            // `host:port` (but not an IPv6 address): the host part.
            if port.chars().all(|c| c.is_ascii_digit()) && !h.contains(':') {
                h
            } else {
                e
            }
        });
        let e = e
            .trim_start_matches('.')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        e == "*" || (!e.is_empty() && (host == e || host.ends_with(&format!(".{e}"))))
    })
}

/// An `http://[USER:PASSWORD@]HOST[:PORT][/]` proxy URL, resolved.
fn parse(v: &str, from: &str) -> Result<ProxySpec, Usage> {
    // Said without the credentials: only the part after '@'.
    let shown = match v.rsplit_once('@') {
        Some((_, rest)) => format!("http://{}", rest.trim_start_matches("http://")),
        None => v.to_string(),
    };
    let bad = |why: &str| Usage::value(from, &shown, why);
    let rest = match v.split_once("://") {
        Some(("http" | "HTTP", rest)) => rest,
        Some((scheme, _)) => {
            return Err(bad(&format!(
                "a {scheme}:// proxy is not supported: give an HTTP proxy, http://HOST:PORT"
            )))
        }
        None => v,
    };
    let rest = rest.trim_end_matches('/');
    if rest.contains('/') {
        return Err(bad(
            "a proxy URL has no path: http://[USER:PASSWORD@]HOST:PORT",
        ));
    }
    let (userinfo, hostport) = match rest.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, rest),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !p.contains(']') => (
            h,
            p.parse::<u16>()
                .map_err(|_| bad("the port is not a number from 1 to 65535"))?,
        ),
        _ => (hostport, 1080),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() || port == 0 {
        return Err(bad("give the proxy as http://HOST:PORT"));
    }
    let addr = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| bad("its host does not resolve"))?;
    let auth = userinfo.map(|u| {
        let plain = percent_decode(u);
        base64::engine::general_purpose::STANDARD.encode(plain)
    });
    let url = if host.contains(':') {
        format!("http://[{host}]:{port}")
    } else {
        format!("http://{host}:{port}")
    };
    Ok(ProxySpec { url, addr, auth })
}

/// `%XX` escapes of a URL's user info, decoded (anything else as it is).
fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn url(s: &str) -> Url {
        crate::resolve::url::parse(s).unwrap()
    }

    fn chosen(flag: Option<&str>, target: &str, env: &[(&str, &str)]) -> Option<String> {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        choose_in(flag, false, &url(target), &|k| env.get(k).cloned())
            .unwrap()
            .map(|c| format!("{} {}", c.from, c.spec.url))
    }

    #[test]
    fn the_variables_apply_as_curl_reads_them_and_never_to_loopback() {
        let env = [
            ("https_proxy", "http://10.0.0.1:3128"),
            ("http_proxy", "10.0.0.2:8080"),
            ("HTTP_PROXY", "http://10.0.0.9:1"),
            ("no_proxy", "internal.example, .corp,10.9.9.9"),
        ];
        let target = |t: &str| chosen(None, t, &env);
        assert_eq!(
            target("https://93.184.215.14/").unwrap(),
            "https_proxy http://10.0.0.1:3128"
        );
        assert_eq!(
            target("ws://93.184.215.14/").unwrap(),
            "http_proxy http://10.0.0.2:8080"
        );
        // Not for loopback, not for what no_proxy names, not for other protocols.
        assert_eq!(target("https://127.0.0.1/"), None);
        assert_eq!(target("http://10.9.9.9/"), None);
        assert_eq!(target("redis://93.184.215.14/"), None);
        // HTTP_PROXY (upper case) is not read for plain targets; all_proxy is.
        assert_eq!(
            chosen(
                None,
                "http://93.184.215.14/",
                &[("HTTP_PROXY", "http://h:1")]
            ),
            None
        );
        assert_eq!(
            chosen(
                None,
                "http://93.184.215.14/",
                &[("all_proxy", "http://10.0.0.3:1")]
            )
            .unwrap(),
            "all_proxy http://10.0.0.3:1"
        );
        // The flag wins, for any protocol, loopback too.
        assert_eq!(
            chosen(Some("127.0.0.1:3128"), "redis://127.0.0.1/", &env).unwrap(),
            "--proxy http://127.0.0.1:3128"
        );
    }

    #[test]
    fn no_proxy_names_hosts_domains_and_everything() {
        assert!(excluded("example.com", "example.com"));
        assert!(excluded(".example.com", "api.example.com"));
        assert!(excluded("example.com", "api.example.com"));
        assert!(!excluded("example.com", "badexample.com"));
        assert!(excluded("*", "anything"));
        assert!(excluded("a, b:8080 ,c", "b"));
        assert!(!excluded("", "b"));
    }

    #[test]
    fn a_proxy_url_is_checked_and_its_credentials_never_shown() {
        let p = parse("http://ann:s%40cret@127.0.0.1:3128/", "--proxy").unwrap();
        assert_eq!(p.url, "http://127.0.0.1:3128");
        let plain = base64::engine::general_purpose::STANDARD
            .decode(p.auth.unwrap())
            .unwrap();
        assert_eq!(plain, b"ann:s@cret");
        assert_eq!(
            parse("127.0.0.1", "--proxy").unwrap().url,
            "http://127.0.0.1:1080"
        );
        for (bad, says) in [
            (
                "https://u:pw@127.0.0.1:3128",
                "https:// proxy is not supported",
            ),
            (
                "socks5://127.0.0.1:1080",
                "socks5:// proxy is not supported",
            ),
            ("http://u:pw@127.0.0.1:99999", "the port"),
            ("http://127.0.0.1:3128/x", "no path"),
        ] {
            let e = parse(bad, "--proxy").unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains("pw"), "{bad}: {e}");
        }
    }
}
