//! The machine: CPU busy share (overall and per core), memory, network interfaces, TCP sockets.
//!
//! CPU and network are cumulative counters, so a [`HostSample`] comes from two
//! [`HostReading`]s; memory and sockets are levels ([`HostLevels`]), read at the sample. The
//! readings come from the platform's backend (`os`); this part is platform-free.

use std::time::Instant;

use barrage_metrics::{HostSample, NetIfSample};

use crate::os::HostLevels;

/// Cumulative CPU time of one core (or all): busy and total, in the backend's unit (jiffies
/// of /proc/stat on Linux, 100 ns on Windows); only shares of them are used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpuTimes {
    pub busy: u64,
    pub total: u64,
}

/// All cores, and each core by its number (kept: offline cores are missing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpuStat {
    pub all: CpuTimes,
    pub cores: Vec<(u32, CpuTimes)>,
}

/// Busy share between two readings, %.
pub(crate) fn busy_pct(prev: CpuTimes, cur: CpuTimes) -> f64 {
    let total = cur.total.saturating_sub(prev.total);
    if total == 0 {
        return 0.0;
    }
    (cur.busy.saturating_sub(prev.busy) as f64 * 100.0 / total as f64).min(100.0)
}

/// One network interface's cumulative counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct NetDev {
    pub name: String,
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
}

/// The cumulative part of the machine's state at one instant.
#[derive(Clone, Debug)]
pub(crate) struct HostReading {
    pub at: Instant,
    pub cpu: CpuStat,
    pub net: Vec<NetDev>,
}

/// A sample from two readings plus the levels read now (memory, sockets).
pub(crate) fn sample(prev: &HostReading, cur: &HostReading, t: f64, l: HostLevels) -> HostSample {
    let dt = cur.at.saturating_duration_since(prev.at).as_secs_f64();
    let rate = |a: u64, b: u64| {
        if dt > 0.0 {
            b.saturating_sub(a) as f64 / dt
        } else {
            0.0
        }
    };
    let per_core_pct = cur
        .cpu
        .cores
        .iter()
        .map(|&(n, now)| {
            let before = prev.cpu.cores.iter().find(|c| c.0 == n);
            before.map_or(0.0, |&(_, b)| busy_pct(b, now))
        })
        .collect();
    let net = cur
        .net
        .iter()
        .filter_map(|now| {
            let b = prev.net.iter().find(|d| d.name == now.name)?;
            Some(NetIfSample {
                name: now.name.clone(),
                rx_bytes_per_s: rate(b.rx_bytes, now.rx_bytes),
                tx_bytes_per_s: rate(b.tx_bytes, now.tx_bytes),
                rx_packets_per_s: rate(b.rx_packets, now.rx_packets),
                tx_packets_per_s: rate(b.tx_packets, now.tx_packets),
            })
        })
        .collect();
    HostSample {
        t,
        cpu_pct: busy_pct(prev.cpu.all, cur.cpu.all),
        per_core_pct,
        mem_used_bytes: l.mem_total.saturating_sub(l.mem_available),
        mem_total_bytes: l.mem_total,
        net,
        tcp_inuse: l.tcp_inuse,
        tcp_time_wait: l.tcp_time_wait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cpu(all: (u64, u64), cores: &[(u64, u64)]) -> CpuStat {
        let t = |(busy, total)| CpuTimes { busy, total };
        CpuStat {
            all: t(all),
            cores: cores
                .iter()
                .enumerate()
                .map(|(i, &c)| (i as u32, t(c)))
                .collect(),
        }
    }

    fn dev(name: &str, rx: (u64, u64), tx: (u64, u64)) -> NetDev {
        NetDev {
            name: name.into(),
            rx_bytes: rx.0,
            rx_packets: rx.1,
            tx_bytes: tx.0,
            tx_packets: tx.1,
        }
    }

    #[test]
    fn cpu_busy_shares() {
        let (a, b) = (
            CpuTimes {
                busy: 150,
                total: 1000,
            },
            CpuTimes {
                busy: 350,
                total: 1250,
            },
        );
        assert!((busy_pct(a, b) - 80.0).abs() < 1e-9);
        assert_eq!(busy_pct(b, a), 0.0, "counters going back read as idle");
        assert_eq!(busy_pct(a, a), 0.0);
    }

    #[test]
    fn rates_between_readings_and_levels() {
        let at = Instant::now();
        let prev = HostReading {
            at,
            cpu: cpu((150, 1000), &[(90, 500), (60, 500)]),
            net: vec![dev("lo", (1000, 10), (1000, 10))],
        };
        let cur = HostReading {
            at: at + Duration::from_secs(2),
            cpu: cpu((350, 1250), &[(290, 700), (60, 550)]),
            net: vec![
                dev("lo", (3000, 30), (1000, 12)),
                dev("new", (5, 5), (5, 5)),
            ],
        };
        let levels = HostLevels {
            mem_total: 100,
            mem_available: 30,
            tcp_inuse: 4,
            tcp_time_wait: 2,
        };
        let s = sample(&prev, &cur, 2.0, levels);
        assert!((s.cpu_pct - 80.0).abs() < 1e-9);
        assert_eq!(s.per_core_pct, [100.0, 0.0]);
        assert_eq!(
            s.net.len(),
            1,
            "an interface that just appeared has no rate yet"
        );
        assert_eq!(
            (s.net[0].rx_bytes_per_s, s.net[0].tx_packets_per_s),
            (1000.0, 1.0)
        );
        assert_eq!((s.mem_used_bytes, s.mem_total_bytes), (70, 100));
        assert_eq!((s.tcp_inuse, s.tcp_time_wait, s.t), (4, 2, 2.0));
    }
}
