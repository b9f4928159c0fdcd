//! `--source-ip`: the local addresses connections come from, and `--url`: more addresses of
//! the same server. One machine holds about `sources × targets × ports` connections to one
//! server (see `barrage_engine::ports::Dialer`); this module turns the user's words into the
//! lists, checks that every source is an address of this machine, and sizes `auto`.

use crate::usage::Usage;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// At most this many source addresses (a /20 of IPv4).
const MAX_SOURCES: usize = 4096;

/// The local ports one source address has for one target: the ephemeral range.
pub fn ports_per_source() -> u64 {
    barrage_engine::ports::PortCursor::system_range()
        .map_or(28_232, |(lo, hi)| u64::from(hi.saturating_sub(lo)) + 1)
}

/// The source list of `--source-ip` for `conns` connections to `targets`.
pub fn resolve(
    text: Option<&str>,
    targets: &[SocketAddr],
    conns: u64,
) -> Result<Vec<IpAddr>, Usage> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let to = targets[0];
    if text.trim() == "auto" {
        return Ok(auto(to, targets.len() as u64, conns));
    }
    let list = parse(text).map_err(|e| Usage::value("--source-ip", text, e))?;
    for ip in &list {
        if ip.is_ipv4() != to.is_ipv4() {
            return Err(Usage::value(
                "--source-ip",
                text,
                format!(
                    "{ip} is not of the target's address family ({to}); give {} addresses",
                    if to.is_ipv4() { "IPv4" } else { "IPv6" }
                ),
            ));
        }
        if to.ip().is_loopback() != ip.is_loopback() {
            return Err(Usage::value(
                "--source-ip",
                text,
                format!(
                    "{ip} cannot reach {to}: a loopback target needs loopback sources (127.0.0.0/8) and the other way round"
                ),
            ));
        }
        crate::probe::local::bindable(*ip).map_err(|e| Usage::value("--source-ip", text, e))?;
    }
    Ok(list)
}

/// The share of a pair's ports `auto` plans for: half, leaving the rest to reconnects (a
/// closed connection holds its port in TIME_WAIT), other sockets and earlier runs. With 90 % (the
/// pre-flight's refusal limit) it once picked one source for 25,000 connections, 2 % of the ports spare, and 956
/// connects found no free port.
const AUTO_SHARE: f64 = 0.5;

/// `auto`: for a loopback target, 127.0.0.1, 127.0.0.2, ... until every (source, target)
/// pair carries at most half its ports ([`AUTO_SHARE`]); elsewhere the kernel's choice (a
/// machine's other addresses are not known to reach the target).
pub fn auto(to: SocketAddr, targets: u64, conns: u64) -> Vec<IpAddr> {
    let per_pair = (ports_per_source() as f64 * AUTO_SHARE) as u64;
    let per_source = per_pair * targets.max(1);
    let need = conns.div_ceil(per_source.max(1)).max(1);
    if need <= 1 || !matches!(to.ip(), IpAddr::V4(ip) if ip.is_loopback()) {
        return Vec::new();
    }
    (1..=need.min(MAX_SOURCES as u64) as u32)
        .map(|i| IpAddr::V4(Ipv4Addr::from(u32::from(Ipv4Addr::new(127, 0, 0, 0)) + i)))
        .collect()
}

/// Addresses, ranges and CIDR blocks, comma-separated, in order and without repeats.
pub fn parse(text: &str) -> Result<Vec<IpAddr>, String> {
    let mut out: Vec<IpAddr> = Vec::new();
    for item in text.split(',').map(str::trim) {
        if item.is_empty() {
            return Err("an empty item; write addresses separated by commas".into());
        }
        let more = item_addrs(item)?;
        if out.len() + more.len() > MAX_SOURCES {
            return Err(format!(
                "more than {MAX_SOURCES} addresses; give a smaller range"
            ));
        }
        for ip in more {
            if out.contains(&ip) {
                return Err(format!("{ip} is listed twice"));
            }
            out.push(ip);
        }
    }
    Ok(out)
}

fn item_addrs(item: &str) -> Result<Vec<IpAddr>, String> {
    let bad = |what: &str| {
        format!("'{item}' is not {what}; write 127.0.0.2, 127.0.0.2-127.0.0.9, 127.0.0.2-9 or 10.1.0.0/28")
    };
    if let Some((net, bits)) = item.split_once('/') {
        let net: Ipv4Addr = net.parse().map_err(|_| bad("an IPv4 CIDR block"))?;
        let bits: u32 = bits.parse().map_err(|_| bad("an IPv4 CIDR block"))?;
        if !(16..=32).contains(&bits) {
            return Err(format!(
                "'{item}': give a prefix of 16 to 32 bits (at most {MAX_SOURCES} addresses are used)"
            ));
        }
        let size = 1u64 << (32 - bits);
        let first = u32::from(net) & !((size - 1) as u32);
        // A block larger than two addresses leaves out its network and broadcast addresses.
        let (lo, hi) = if size > 2 {
            (first as u64 + 1, first as u64 + size - 2)
        } else {
            (first as u64, first as u64 + size - 1)
        };
        if hi - lo + 1 > MAX_SOURCES as u64 {
            return Err(format!(
                "'{item}' has more than {MAX_SOURCES} addresses; give a longer prefix"
            ));
        }
        return Ok((lo..=hi)
            .map(|a| IpAddr::V4(Ipv4Addr::from(a as u32)))
            .collect());
    }
    if let Some((a, b)) = item.split_once('-') {
        let a: Ipv4Addr = a.trim().parse().map_err(|_| bad("an IPv4 range"))?;
        let b = b.trim();
        let b: Ipv4Addr = match b.parse::<u8>() {
            Ok(last) => {
                let o = a.octets();
                Ipv4Addr::new(o[0], o[1], o[2], last)
            }
            Err(_) => b.parse().map_err(|_| bad("an IPv4 range"))?,
        };
        let (lo, hi) = (u32::from(a), u32::from(b));
        if hi < lo {
            return Err(format!("'{item}' ends before it starts"));
        }
        if (hi - lo) as usize >= MAX_SOURCES {
            return Err(format!("'{item}' has more than {MAX_SOURCES} addresses"));
        }
        return Ok((lo..=hi).map(|a| IpAddr::V4(Ipv4Addr::from(a))).collect());
    }
    let ip: IpAddr = item.parse().map_err(|_| bad("an address"))?;
    Ok(vec![ip])
}

/// `--url`: more addresses of the target's server, of the target's scheme.
pub fn more_addrs(
    urls: &[String],
    target: &crate::resolve::url::Url,
) -> Result<Vec<SocketAddr>, Usage> {
    let mut out = Vec::new();
    for u in urls {
        // A URL's own errors name `target`; this one is a --url.
        let parsed = crate::resolve::url::parse(u).map_err(|e| {
            e.map(|s| match s {
                "target" => "--url".to_string(),
                s => s.to_string(),
            })
        })?;
        if parsed.scheme != target.scheme {
            return Err(Usage::value(
                "--url",
                u,
                "give a URL of the target's scheme (another port or address of the same server)",
            ));
        }
        if parsed.addr == target.addr || out.contains(&parsed.addr) {
            return Err(Usage::value(
                "--url",
                u,
                format!("{} is already a target", parsed.addr),
            ));
        }
        if parsed.addr.is_ipv4() != target.addr.is_ipv4() {
            return Err(Usage::value(
                "--url",
                u,
                "give an address of the target's family",
            ));
        }
        out.push(parsed.addr);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(v: &[&str]) -> Vec<IpAddr> {
        v.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn lists_ranges_and_blocks() {
        assert_eq!(
            parse("127.0.0.2-4, 127.0.0.9").unwrap(),
            ips(&["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.9"])
        );
        assert_eq!(
            parse("127.0.0.250-127.0.1.1").unwrap().len(),
            8,
            "a range crosses octets"
        );
        assert_eq!(
            parse("10.1.0.0/30").unwrap(),
            ips(&["10.1.0.1", "10.1.0.2"]),
            "no network or broadcast address"
        );
        assert_eq!(parse("10.1.0.7/32").unwrap(), ips(&["10.1.0.7"]));
        assert_eq!(parse("::1").unwrap(), ips(&["::1"]));
        for (bad, says) in [
            ("127.0.0.5-3", "ends before it starts"),
            ("127.0.0.1,,127.0.0.2", "empty item"),
            ("127.0.0.1,127.0.0.1", "listed twice"),
            ("10.0.0.0/8", "16 to 32 bits"),
            ("10.0.0.0/19", "more than 4096"),
            ("localhost", "is not an address"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn auto_adds_loopback_sources_until_the_ports_suffice() {
        let to: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        let per = (ports_per_source() as f64 * AUTO_SHARE) as u64;
        assert!(auto(to, 1, per).is_empty(), "one address holds them");
        assert_eq!(auto(to, 1, per + 1), ips(&["127.0.0.1", "127.0.0.2"]));
        assert_eq!(auto(to, 1, 100_000).len() as u64, 100_000u64.div_ceil(per));
        assert!(auto(to, 4, 100_000).len() as u64 <= 100_000u64.div_ceil(4 * per).max(1));
        // Regression (issue 24): 25,000 connections on a 28,232-port range went to one
        // source with 2 % of its ports spare; auto leaves half of every pair's ports free.
        let ports = ports_per_source();
        let n = auto(to, 1, ports * 9 / 10);
        assert_eq!(n.len(), 2, "90 % of a range is two sources");
        assert!((ports * 9 / 10).div_ceil(n.len() as u64) <= ports / 2);
        let remote: SocketAddr = "192.0.2.1:80".parse().unwrap();
        assert!(
            auto(remote, 1, 1_000_000).is_empty(),
            "no guess off loopback"
        );
    }

    #[test]
    fn sources_must_be_local_and_of_the_target_family() {
        let to: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        let ok = resolve(Some("127.0.0.2-3"), &[to], 10).unwrap();
        assert_eq!(ok, ips(&["127.0.0.2", "127.0.0.3"]));
        let e = resolve(Some("::1"), &[to], 10).unwrap_err().to_string();
        assert!(
            e.contains("--source-ip") && e.contains("address family"),
            "{e}"
        );
        let e = resolve(Some("192.0.2.7"), &[to], 10)
            .unwrap_err()
            .to_string();
        assert!(e.contains("loopback"), "{e}");
        if crate::sys::wine_version().is_some() {
            return; // under wine 8 a bind of a foreign address succeeds (seen), unlike Windows
        }
        let remote: SocketAddr = "192.0.2.1:80".parse().unwrap();
        let e = resolve(Some("192.0.2.7"), &[remote], 10)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not an address of this machine"), "{e}");
    }
}
