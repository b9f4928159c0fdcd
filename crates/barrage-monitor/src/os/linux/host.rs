//! The machine as /proc shows it: /proc/stat (CPU), /proc/meminfo, /proc/net/dev,
//! /proc/net/sockstat. Busy CPU is everything but idle and iowait (guest time is already
//! inside user time, so it is not added twice).

use std::time::Instant;

use super::proc::read_into;
use crate::host::{CpuStat, CpuTimes, HostReading, NetDev};
use crate::os::HostLevels;

pub(crate) fn parse_proc_stat(text: &str) -> CpuStat {
    let mut out = CpuStat::default();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("cpu") else {
            // The cpu lines come first.
            break;
        };
        // "cpu  1 2 ..." (all cores) or "cpu3 1 2 ...".
        let Some((id, fields)) = rest.split_once(|c: char| c.is_ascii_whitespace()) else {
            continue;
        };
        // user nice system idle iowait irq softirq steal [guest guest_nice]
        let v: Vec<u64> = fields
            .split_ascii_whitespace()
            .take(8)
            .filter_map(|x| x.parse().ok())
            .collect();
        if v.len() < 4 {
            continue;
        }
        let total: u64 = v.iter().sum();
        let idle = v[3] + v.get(4).copied().unwrap_or(0);
        let times = CpuTimes {
            busy: total - idle,
            total,
        };
        if id.is_empty() {
            out.all = times;
        } else if let Ok(n) = id.parse() {
            out.cores.push((n, times));
        }
    }
    out
}

/// /proc/meminfo: (MemTotal, MemAvailable) in bytes.
pub(crate) fn parse_meminfo(text: &str) -> (u64, u64) {
    let (mut total, mut available) = (0, 0);
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let bytes = || {
            let kib: u64 = value.trim().trim_end_matches("kB").trim().parse().ok()?;
            Some(kib * 1024)
        };
        match key {
            "MemTotal" => total = bytes().unwrap_or(0),
            "MemAvailable" => available = bytes().unwrap_or(0),
            _ => {}
        }
    }
    (total, available)
}

/// /proc/net/dev: two header lines, then `name: 8 receive fields, 8 transmit fields`.
pub(crate) fn parse_net_dev(text: &str) -> Vec<NetDev> {
    let mut out = Vec::new();
    for line in text.lines() {
        // Old kernels glue the first number to the colon ("eth0:1234").
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let v: Vec<u64> = rest
            .split_ascii_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        if v.len() < 10 {
            continue;
        }
        out.push(NetDev {
            name: name.trim().to_string(),
            rx_bytes: v[0],
            rx_packets: v[1],
            tx_bytes: v[8],
            tx_packets: v[9],
        });
    }
    out
}

/// /proc/net/sockstat: TCP `inuse` and `tw` (TIME_WAIT), machine-wide.
pub(crate) fn parse_sockstat(text: &str) -> (u64, u64) {
    let (mut inuse, mut tw) = (0, 0);
    if let Some(line) = text.lines().find(|l| l.starts_with("TCP:")) {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        for pair in f[1..].chunks(2) {
            if let [key, value] = pair {
                match *key {
                    "inuse" => inuse = value.parse().unwrap_or(0),
                    "tw" => tw = value.parse().unwrap_or(0),
                    _ => {}
                }
            }
        }
    }
    (inuse, tw)
}

/// Reads the counters; `Err` only if /proc/stat itself is unreadable.
pub(crate) fn read_host(buf: &mut String) -> std::io::Result<HostReading> {
    read_into("/proc/stat", buf)?;
    let cpu = parse_proc_stat(buf);
    let net = match read_into("/proc/net/dev", buf) {
        Ok(()) => parse_net_dev(buf),
        Err(_) => Vec::new(),
    };
    Ok(HostReading {
        at: Instant::now(),
        cpu,
        net,
    })
}

/// Memory and TCP sockets now (0 where a file is unreadable).
pub(crate) fn host_levels(buf: &mut String) -> HostLevels {
    let (mem_total, mem_available) = match read_into("/proc/meminfo", buf) {
        Ok(()) => parse_meminfo(buf),
        Err(_) => (0, 0),
    };
    let (tcp_inuse, tcp_time_wait) = match read_into("/proc/net/sockstat", buf) {
        Ok(()) => parse_sockstat(buf),
        Err(_) => (0, 0),
    };
    HostLevels {
        mem_total,
        mem_available,
        tcp_inuse,
        tcp_time_wait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{busy_pct, sample};
    use std::time::Duration;

    const STAT_A: &str = "cpu  100 0 50 800 50 0 0 0 0 0\n\
        cpu0 60 0 30 400 10 0 0 0 0 0\n\
        cpu1 40 0 20 400 40 0 0 0 0 0\n\
        intr 12345 0 0\nctxt 999\n";
    const STAT_B: &str = "cpu  250 0 100 850 50 0 0 0 0 0\n\
        cpu0 210 0 80 400 10 0 0 0 0 0\n\
        cpu1 40 0 20 450 40 0 0 0 0 0\n\
        intr 12345 0 0\n";

    #[test]
    fn cpu_busy_overall_and_per_core() {
        let a = parse_proc_stat(STAT_A);
        let b = parse_proc_stat(STAT_B);
        assert_eq!(
            a.all,
            CpuTimes {
                busy: 150,
                total: 1000
            }
        );
        assert_eq!(a.cores.len(), 2);
        // All: busy +200 of total +250.
        assert!((busy_pct(a.all, b.all) - 80.0).abs() < 1e-9);
        assert!((busy_pct(a.cores[0].1, b.cores[0].1) - 100.0).abs() < 1e-9);
        assert_eq!(busy_pct(a.cores[1].1, b.cores[1].1), 0.0);
        assert_eq!(
            busy_pct(b.all, a.all),
            0.0,
            "counters going back read as idle"
        );
    }

    #[test]
    fn meminfo_used_is_total_minus_available() {
        let text = "MemTotal:       16000000 kB\nMemFree:         1000000 kB\n\
            MemAvailable:    6000000 kB\nBuffers:          100 kB\n";
        assert_eq!(parse_meminfo(text), (16_000_000 * 1024, 6_000_000 * 1024));
    }

    const DEV_A: &str = "\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 1000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0
  eth0:5000 50 0 0 0 0 0 0 7000 70 0 0 0 0 0 0
";
    const DEV_B: &str = "\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 3000 30 0 0 0 0 0 0 3000 30 0 0 0 0 0 0
  eth0:5000 50 0 0 0 0 0 0 9000 80 0 0 0 0 0 0
 wg0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0
";

    #[test]
    fn net_dev_rates_between_readings() {
        let a = parse_net_dev(DEV_A);
        assert_eq!(a.len(), 2);
        assert_eq!(
            a[1],
            NetDev {
                name: "eth0".into(),
                rx_bytes: 5000,
                rx_packets: 50,
                tx_bytes: 7000,
                tx_packets: 70
            }
        );
        let at = Instant::now();
        let prev = HostReading {
            at,
            cpu: parse_proc_stat(STAT_A),
            net: a,
        };
        let cur = HostReading {
            at: at + Duration::from_secs(2),
            cpu: parse_proc_stat(STAT_B),
            net: parse_net_dev(DEV_B),
        };
        let s = sample(&prev, &cur, 2.0, HostLevels::default());
        assert_eq!(
            s.net.len(),
            2,
            "an interface that just appeared has no rate yet"
        );
        assert_eq!(s.net[0].name, "lo");
        assert_eq!(s.net[0].rx_bytes_per_s, 1000.0);
        assert_eq!(s.net[0].tx_packets_per_s, 10.0);
        assert_eq!(s.net[1].tx_bytes_per_s, 1000.0);
        assert_eq!(s.net[1].rx_bytes_per_s, 0.0);
        assert!((s.cpu_pct - 80.0).abs() < 1e-9);
        assert_eq!(s.per_core_pct, [100.0, 0.0]);
        assert_eq!(s.t, 2.0);
    }

    #[test]
    fn sockstat_tcp_line() {
        let text = "sockets: used 230\nTCP: inuse 17 orphan 0 tw 42 alloc 20 mem 3\n\
            UDP: inuse 2 mem 1\n";
        assert_eq!(parse_sockstat(text), (17, 42));
        assert_eq!(parse_sockstat(""), (0, 0));
    }

    #[test]
    fn reads_this_machine() {
        let mut buf = String::new();
        let a = read_host(&mut buf).unwrap();
        assert!(!a.cpu.cores.is_empty() && a.cpu.all.total > 0);
        assert!(a.net.iter().any(|d| d.name == "lo"));
        let b = read_host(&mut buf).unwrap();
        let s = sample(&a, &b, 0.0, host_levels(&mut buf));
        assert!(s.mem_total_bytes > 0 && s.mem_used_bytes <= s.mem_total_bytes);
        assert_eq!(s.per_core_pct.len(), b.cpu.cores.len());
    }
}
