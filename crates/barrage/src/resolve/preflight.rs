//! The pre-flight of a plan's size against the machine, before any traffic: local ports per
//! (source, target) pair, open files per process, memory, and the kernel's connection tables
//! (`somaxconn`, `nf_conntrack_max`, `tcp_tw_reuse`). A plan that cannot fit is refused with
//! the fix spelled out (`--processes 6`, `--source-ip 127.0.0.1-127.0.0.4`); one that may
//! strain a table gets a warning. `barrage validate` prints the same table.
//!
//! Key decision: the checks are a pure function of the plan's facts and the machine's
//! ([`Machine`]), so every rule is tested with made-up machines; only [`Machine::read`] looks
//! at this one.

use std::net::SocketAddr;

/// Kernel memory of one idle loopback connection, both ends (socket, file, buffers at rest).
const KERNEL_BYTES_PER_CONN: u64 = 6 * 1024;
/// The generator's own memory per connection or user (measured: 728 B per idle user).
const GENERATOR_BYTES_PER_CONN: u64 = 1024;
/// Open files a process keeps besides its connections (per thread, and in all).
const FDS_PER_THREAD: u64 = 4;
const FDS_FIXED: u64 = 32;

/// What the plan asks of this machine.
#[derive(Clone, Debug)]
pub struct Facts {
    /// Connections (users) this machine holds at once, all its processes together.
    pub connections: u64,
    /// Processes they are split over on this machine.
    pub processes: u64,
    /// Threads per process.
    pub threads: u64,
    pub targets: Vec<SocketAddr>,
    /// Source addresses given (0: the kernel's choice, one address).
    pub sources: u64,
    /// Connects are paced (`--connect-rate`, a scenario's arrivals), not one burst.
    pub paced: bool,
    /// How the user set the connection count, for a refusal to name: `-c/--connections`,
    /// `--users` or `users.count`.
    pub count_flag: &'static str,
    /// The user split the run with `--processes` (a refusal of its open files names it).
    pub gave_processes: bool,
}

/// What this machine has.
#[derive(Clone, Debug, Default)]
pub struct Machine {
    /// Open files one process may have (the hard limit).
    pub nofile_hard: u64,
    /// Size of the ephemeral port range.
    pub ports: u64,
    pub somaxconn: Option<u64>,
    pub conntrack_max: Option<u64>,
    pub tw_reuse: Option<u64>,
    pub mem_available: Option<u64>,
}

impl Machine {
    pub fn read() -> Machine {
        let num = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .and_then(|t| t.split_whitespace().next()?.parse::<u64>().ok())
        };
        let nofile_hard = crate::sys::nofile_hard();
        let mem_available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
            let line = t.lines().find(|l| l.starts_with("MemAvailable:"))?;
            Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
        });
        Machine {
            nofile_hard,
            ports: crate::resolve::sources::ports_per_source(),
            somaxconn: num("/proc/sys/net/core/somaxconn"),
            conntrack_max: num("/proc/sys/net/netfilter/nf_conntrack_max"),
            tw_reuse: num("/proc/sys/net/ipv4/tcp_tw_reuse"),
            mem_available,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Ok,
    Warn,
    Refuse,
}

/// One line of the pre-flight.
#[derive(Clone, Debug)]
pub struct Item {
    pub what: &'static str,
    /// What the plan needs against what there is.
    pub says: String,
    pub level: Level,
    /// How to make it fit (for a warning or a refusal).
    pub fix: Option<String>,
}

/// Open files one process needs for `conns` connections on `threads` threads.
pub fn fds_for(conns: u64, threads: u64) -> u64 {
    conns + FDS_PER_THREAD * threads + FDS_FIXED
}

/// The fewest processes whose open files fit under `hard` for `conns` connections.
pub fn processes_for(conns: u64, threads: u64, hard: u64) -> u64 {
    let room = hard
        .saturating_sub(FDS_PER_THREAD * threads + FDS_FIXED)
        .max(1);
    conns.div_ceil(room).max(1)
}

pub fn check(f: &Facts, m: &Machine) -> Vec<Item> {
    let mut out = Vec::new();
    let targets = f.targets.len().max(1) as u64;
    let sources = f.sources.max(1);
    let loopback = f.targets.first().is_some_and(|t| t.ip().is_loopback());

    // Local ports: each (source, target) pair has one port range.
    let usable = (m.ports as f64 * 0.9) as u64;
    let per_pair = f.connections.div_ceil(sources * targets);
    let ports = if per_pair <= usable {
        Item {
            what: "local ports",
            says: format!(
                "{per_pair} per (source, target) of {usable} usable ({sources} source{}, {targets} target{})",
                plural(sources),
                plural(targets)
            ),
            level: Level::Ok,
            fix: None,
        }
    } else {
        let need = f.connections.div_ceil(usable.max(1) * targets);
        let fix = if loopback && f.targets[0].is_ipv4() {
            format!(
                "--source-ip 127.0.0.1-127.0.0.{} (or --source-ip auto)",
                need.min(254)
            )
        } else {
            format!(
                "{need} source addresses of this machine (--source-ip), or more target ports (--url)"
            )
        };
        let fix = format!(
            "{fix}; or widen the ephemeral port range ({} now): {}",
            m.ports,
            barrage_engine::os::net::WIDEN_PORTS
        );
        Item {
            what: "local ports",
            says: format!(
                "{per_pair} connections per (source, target) but {usable} usable ports ({sources} source{}, {targets} target{})",
                plural(sources),
                plural(targets)
            ),
            level: Level::Refuse,
            fix: Some(fix),
        }
    };
    out.push(ports);

    // Open files per process.
    let per_process = f.connections.div_ceil(f.processes.max(1));
    let fds = fds_for(per_process, f.threads);
    let processes = format!(
        "{} process{}",
        f.processes,
        if f.processes == 1 { "" } else { "es" }
    );
    out.push(if fds <= m.nofile_hard {
        Item {
            what: "open files",
            says: if m.nofile_hard == u64::MAX {
                format!("{fds} per process, no limit on this system ({processes})")
            } else {
                format!("{fds} per process of {} allowed ({processes})", m.nofile_hard)
            },
            level: Level::Ok,
            fix: None,
        }
    } else {
        let n = processes_for(f.connections, f.threads, m.nofile_hard);
        Item {
            what: "open files",
            says: format!(
                "{fds} per process but a process may open {} (hard limit)",
                m.nofile_hard
            ),
            level: Level::Refuse,
            fix: Some(format!(
                "--processes {n} (or --processes auto), or raise the hard limit (limits.conf, systemd LimitNOFILE)"
            )),
        }
    });

    // Memory: the generator's and, for a loopback target, both ends' kernel sockets.
    if let Some(avail) = m.mem_available {
        let kernel = if loopback {
            KERNEL_BYTES_PER_CONN
        } else {
            KERNEL_BYTES_PER_CONN / 2
        };
        let need = f.connections * (GENERATOR_BYTES_PER_CONN + kernel);
        let (level, fix) = if need > avail {
            (
                Level::Refuse,
                Some(
                    "fewer connections per machine: split the run with --shard over machines"
                        .to_string(),
                ),
            )
        } else if need > avail / 5 * 4 {
            (
                Level::Warn,
                Some("little memory left for the server and the system".to_string()),
            )
        } else {
            (Level::Ok, None)
        };
        out.push(Item {
            what: "memory",
            says: format!(
                "about {} MiB estimated of {} MiB available",
                need >> 20,
                avail >> 20
            ),
            level,
            fix,
        });
    }

    // The listen backlog: an unpaced connect burst beyond it may be dropped by a local server.
    if let Some(max) = m.somaxconn {
        let burst = !f.paced && loopback && f.connections > max;
        out.push(Item {
            what: "somaxconn",
            says: format!("{max} (the longest accept queue a local server may have)"),
            level: if burst { Level::Warn } else { Level::Ok },
            fix: burst.then(|| {
                "pace the connects (--connect-rate, a scenario's arrival rate) or raise net.core.somaxconn".to_string()
            }),
        });
    }

    // Connection tracking: a full table drops new connections.
    if let Some(max) = m.conntrack_max {
        // A loopback connection is one entry; count both directions' worth of margin.
        let full = f.connections > max / 10 * 9;
        out.push(Item {
            what: "nf_conntrack_max",
            says: format!("{} connections against a table of {max}", f.connections),
            level: if full { Level::Warn } else { Level::Ok },
            fix: full.then(|| {
                format!(
                    "sysctl -w net.netfilter.nf_conntrack_max={} (if connections are tracked here)",
                    (f.connections * 2).next_power_of_two()
                )
            }),
        });
    }

    // TIME_WAIT: a closed connection's port stays taken for 60 s unless it can be reused.
    if let Some(v) = m.tw_reuse {
        let tight = v == 0 && per_pair > usable / 2;
        out.push(Item {
            what: "tcp_tw_reuse",
            says: format!(
                "{v} ({})",
                match v {
                    0 => "ports in TIME_WAIT wait 60 s",
                    1 => "reused for new connections",
                    _ => "reused on loopback",
                }
            ),
            level: if tight { Level::Warn } else { Level::Ok },
            fix: tight.then(|| {
                "reconnects may run out of ports: sysctl -w net.ipv4.tcp_tw_reuse=1, or more --source-ip".to_string()
            }),
        });
    }
    out
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The refusals as one usage line naming every fix, under the first one's flag.
/// The one line refusing a plan that cannot fit, or `None`. It names the flag the user gave
/// that does not fit (`--source-ip` or `--processes` when given and too few, else the count:
/// `-c`, `--users` or `users.count`), then every fix.
pub fn refusal(items: &[Item], f: &Facts) -> Option<crate::usage::Usage> {
    let refused: Vec<&Item> = items.iter().filter(|i| i.level == Level::Refuse).collect();
    let flag = match refused.first()?.what {
        "local ports" if f.sources > 0 => "--source-ip",
        "open files" if f.gave_processes => "--processes",
        _ => f.count_flag,
    };
    let why: Vec<String> = refused
        .iter()
        .map(|i| format!("{}: {}", i.what, i.says))
        .collect();
    let fix: Vec<&str> = refused
        .iter()
        .map(|i| i.fix.as_deref().unwrap_or("a smaller plan"))
        .collect();
    Some(crate::usage::Usage::new(
        flag,
        format!(
            "the plan does not fit this machine: {}; fix: {}",
            why.join("; "),
            fix.join("; and ")
        ),
    ))
}

/// The table for `barrage validate` and the warnings of a run.
pub fn lines(items: &[Item]) -> Vec<String> {
    items
        .iter()
        .map(|i| {
            let tag = match i.level {
                Level::Ok => "ok",
                Level::Warn => "warn",
                Level::Refuse => "refuse",
            };
            match &i.fix {
                Some(f) => format!("  {tag:<6} {:<16} {}; {f}", i.what, i.says),
                None => format!("  {tag:<6} {:<16} {}", i.what, i.says),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Machine {
        Machine {
            nofile_hard: 20_000,
            ports: 28_232,
            somaxconn: Some(4096),
            conntrack_max: Some(262_144),
            tw_reuse: Some(2),
            mem_available: Some(24 << 30),
        }
    }

    fn facts(connections: u64, processes: u64, sources: u64) -> Facts {
        Facts {
            connections,
            processes,
            threads: 1,
            targets: vec!["127.0.0.1:7100".parse().unwrap()],
            sources,
            paced: false,
            count_flag: "-c/--connections",
            gave_processes: processes > 1,
        }
    }

    fn level(items: &[Item], what: &str) -> Level {
        items.iter().find(|i| i.what == what).unwrap().level
    }

    #[test]
    fn a_plan_that_fits_passes() {
        let mut f = facts(10_000, 1, 0);
        f.paced = true;
        let items = check(&f, &machine());
        assert!(items.iter().all(|i| i.level == Level::Ok), "{items:?}");
        assert!(refusal(&items, &f).is_none());
    }

    #[test]
    fn too_many_connections_for_one_process_name_the_process_count() {
        let f = facts(100_000, 1, 4);
        let items = check(&f, &machine());
        assert_eq!(level(&items, "open files"), Level::Refuse);
        let e = refusal(&items, &f).unwrap().to_string();
        // 100,000 / (20,000 - 36) = 5.01: six processes. The user gave no --processes: the
        // line names the count they gave.
        assert!(
            e.starts_with("-c/--connections: ") && e.contains("--processes 6"),
            "{e}"
        );
        // Given --processes 3, too few: the line names it, and advises 6, not 3.
        let f = facts(100_000, 3, 4);
        let e = refusal(&check(&f, &machine()), &f).unwrap().to_string();
        assert!(
            e.starts_with("--processes: ")
                && e.contains("--processes 6")
                && !e.contains("--processes 3"),
            "{e}"
        );
        // A scenario's users.
        let mut f = facts(100_000, 1, 4);
        f.count_flag = "users.count";
        let e = refusal(&check(&f, &machine()), &f).unwrap().to_string();
        assert!(e.starts_with("users.count: "), "{e}");
        assert_eq!(processes_for(100_000, 1, 20_000), 6);
        let items = check(&facts(100_000, 6, 4), &machine());
        assert_eq!(level(&items, "open files"), Level::Ok);
    }

    #[test]
    fn too_many_connections_for_the_ports_name_the_source_range() {
        let f = facts(100_000, 6, 0);
        let items = check(&f, &machine());
        let e = refusal(&items, &f).unwrap().to_string();
        // 100,000 / 25,408 usable = 3.9: four loopback sources. No --source-ip was given: the
        // line names the count.
        assert!(
            e.starts_with("-c/--connections: ") && e.contains("--source-ip 127.0.0.1-127.0.0.4"),
            "{e}"
        );
        // Given two sources, too few: the line names --source-ip, and advises four.
        let f = facts(100_000, 6, 2);
        let e = refusal(&check(&f, &machine()), &f).unwrap().to_string();
        assert!(
            e.starts_with("--source-ip: ") && e.contains("--source-ip 127.0.0.1-127.0.0.4"),
            "{e}"
        );
        let f = facts(100_000, 6, 4);
        let items = check(&f, &machine());
        assert!(refusal(&items, &f).is_none(), "{items:?}");
        // Two target ports double what one source holds.
        let mut two = facts(50_000, 3, 0);
        two.targets.push("127.0.0.1:7101".parse().unwrap());
        assert!(refusal(&check(&two, &machine()), &two).is_none());
        // Off loopback the fix is the machine's own addresses.
        let mut remote = facts(60_000, 3, 0);
        remote.targets = vec!["192.0.2.1:80".parse().unwrap()];
        let e = refusal(&check(&remote, &machine()), &remote)
            .unwrap()
            .to_string();
        assert!(e.contains("3 source addresses of this machine"), "{e}");
    }

    #[test]
    fn memory_and_kernel_tables_warn_or_refuse() {
        let mut m = machine();
        m.mem_available = Some(500 << 20);
        let items = check(&facts(100_000, 6, 4), &m);
        assert_eq!(level(&items, "memory"), Level::Refuse);
        m.mem_available = Some(800 << 20);
        assert_eq!(
            level(&check(&facts(100_000, 6, 4), &m), "memory"),
            Level::Warn
        );
        let mut m = machine();
        m.conntrack_max = Some(65_536);
        m.somaxconn = Some(128);
        m.tw_reuse = Some(0);
        let items = check(&facts(20_000, 1, 0), &m);
        assert_eq!(level(&items, "nf_conntrack_max"), Level::Ok);
        assert_eq!(level(&items, "somaxconn"), Level::Warn);
        assert_eq!(level(&items, "tcp_tw_reuse"), Level::Warn);
        let mut paced = facts(20_000, 1, 0);
        paced.paced = true;
        assert_eq!(level(&check(&paced, &m), "somaxconn"), Level::Ok);
        let f = facts(60_000, 4, 3);
        let items = check(&f, &m);
        assert_eq!(level(&items, "nf_conntrack_max"), Level::Warn);
        assert!(refusal(&items, &f).is_none(), "warnings do not refuse");
    }
}
