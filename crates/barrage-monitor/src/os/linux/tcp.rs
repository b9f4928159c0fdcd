//! TCP sockets of a process by state, and the process behind a listening port.
//!
//! /proc/net/tcp{,6} list every socket of a network namespace with its state and inode; a
//! process's sockets are the `socket:[inode]` links in `/proc/<pid>/fd`. Counting is a join of
//! the two. In barrage's own network namespace the sockets come from a sock_diag netlink dump
//! (`diag`, much cheaper when a load test left thousands of TIME_WAIT sockets); in another
//! namespace from `/proc/<pid>/net/tcp{,6}`, i.e. as the monitored process sees them (a server
//! in a container). Sockets in TIME_WAIT belong to no process any more (inode 0), so a process
//! never shows any: the machine-wide count is in the host sample.

mod diag;

use std::collections::HashSet;
use std::io;

use barrage_metrics::TcpStates;

pub(crate) use super::proc::socket_inode;
use super::proc::{numeric_entries, read_into, read_stat};
use crate::os::add_owned;
use crate::os::state::LISTEN;
use crate::MonitorError;
use diag::Diag;

/// One row of /proc/net/tcp or tcp6.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TcpEntry {
    pub local_port: u16,
    pub state: u8,
    /// 0 for sockets no process owns (TIME_WAIT, not yet accepted).
    pub inode: u64,
}

/// Parses a row: `sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...`, addresses as
/// `HEXADDR:HEXPORT` (8 hex digits for IPv4, 32 for IPv6). The header row yields `None`.
pub(crate) fn parse_line(line: &str) -> Option<TcpEntry> {
    let mut f = line.split_ascii_whitespace();
    let _sl = f.next()?;
    let (_, port) = f.next()?.rsplit_once(':')?;
    let _remote = f.next()?;
    let state = u8::from_str_radix(f.next()?, 16).ok()?;
    let inode = f.nth(5)?.parse().ok()?;
    Some(TcpEntry {
        local_port: u16::from_str_radix(port, 16).ok()?,
        state,
        inode,
    })
}

pub(crate) fn entries(table: &str) -> impl Iterator<Item = TcpEntry> + '_ {
    table.lines().filter_map(parse_line)
}

/// Adds the sockets of a /proc/net/tcp `table` whose inode is in `owned[i]` to `out[i]`.
pub(crate) fn count_states(table: &str, owned: &[&HashSet<u64>], out: &mut [TcpStates]) {
    for e in entries(table) {
        add_owned(e.state, e.inode, owned, out);
    }
}

/// Reads tcp and tcp6 of the network namespace of `pid` (`None`: our own) into `bufs`. A
/// kernel without IPv6 has no tcp6: that one is left empty.
pub(crate) fn read_tables(pid: Option<u32>, bufs: &mut [String; 2]) -> io::Result<()> {
    let dir = pid.map_or_else(|| "/proc/net".to_string(), |p| format!("/proc/{p}/net"));
    for (name, buf) in ["tcp", "tcp6"].into_iter().zip(bufs.iter_mut()) {
        match read_into(&format!("{dir}/{name}"), buf) {
            Ok(()) => {}
            Err(e) if name == "tcp6" && e.kind() == io::ErrorKind::NotFound => buf.clear(),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The process that owns a socket listening on `port` (any address, IPv4 or IPv6), for
/// `--monitor auto`. When several hold it (a pre-forked server: master and workers share the
/// listening socket; or SO_REUSEPORT), the oldest wins, which is the one that opened it.
///
/// `Ok(None)`: nothing listens on the port. [`MonitorError::ListenerNotVisible`]: something
/// does, but no process whose file descriptors we may read holds it. Processes we may not
/// inspect are skipped.
pub(crate) fn listener_pid(port: u16) -> Result<Option<u32>, MonitorError> {
    let mut bufs = [String::new(), String::new()];
    read_tables(None, &mut bufs).map_err(|source| MonitorError::Io {
        path: "/proc/net/tcp".into(),
        source,
    })?;
    let inodes: HashSet<u64> = bufs
        .iter()
        .flat_map(|t| entries(t))
        .filter(|e| e.state == LISTEN && e.local_port == port && e.inode != 0)
        .map(|e| e.inode)
        .collect();
    if inodes.is_empty() {
        return Ok(None);
    }
    let pids = numeric_entries("/proc").map_err(|source| MonitorError::Io {
        path: "/proc".into(),
        source,
    })?;
    let mut buf = String::new();
    let mut best: Option<(u64, u32)> = None;
    for pid in pids {
        if !holds_any(pid, &inodes) {
            continue;
        }
        if let Ok(stat) = read_stat(pid, &mut buf) {
            let key = (stat.starttime, pid);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
    }
    match best {
        Some((_, pid)) => Ok(Some(pid)),
        None => Err(MonitorError::ListenerNotVisible { port }),
    }
}

/// TCP states of the monitored processes, from the socket inodes of their readings. Sockets
/// are listed once per network namespace (not once per process), and only if someone there
/// has sockets: through sock_diag in barrage's own namespace, from `/proc/<pid>/net/tcp{,6}`
/// in another (a server in a container).
pub(crate) struct TcpCounter {
    /// The sock_diag socket for our own namespace (`None`: not available, or it failed once).
    diag: Option<Diag>,
    own_ns: String,
    bufs: [String; 2],
}

impl TcpCounter {
    pub fn new() -> Self {
        TcpCounter {
            diag: Diag::open().ok(),
            own_ns: net_namespace("self"),
            bufs: [String::new(), String::new()],
        }
    }

    /// The states of each `(pid, socket inodes)`; `None` (gone) and no sockets read 0.
    pub fn count(&mut self, procs: &[(u32, Option<&HashSet<u64>>)]) -> Vec<TcpStates> {
        let mut out = vec![TcpStates::default(); procs.len()];
        // (namespace link, a pid in it, indices of procs)
        let mut groups: Vec<(String, u32, Vec<usize>)> = Vec::new();
        for (i, &(pid, sockets)) in procs.iter().enumerate() {
            if sockets.is_none_or(|s| s.is_empty()) {
                continue;
            }
            let ns = net_namespace(&pid.to_string());
            match groups.iter_mut().find(|g| g.0 == ns) {
                Some(g) => g.2.push(i),
                None => groups.push((ns, pid, vec![i])),
            }
        }
        for (ns, pid, members) in groups {
            let owned: Vec<&HashSet<u64>> = members.iter().filter_map(|&i| procs[i].1).collect();
            let mut counts = vec![TcpStates::default(); owned.len()];
            if !self.count_via_diag(&ns, &owned, &mut counts) {
                if read_tables(Some(pid), &mut self.bufs).is_err() {
                    continue;
                }
                for table in &self.bufs {
                    count_states(table, &owned, &mut counts);
                }
            }
            for (&i, c) in members.iter().zip(counts) {
                out[i] = c;
            }
        }
        out
    }

    /// Counts through sock_diag if `ns` is ours; false: use /proc instead.
    fn count_via_diag(&mut self, ns: &str, owned: &[&HashSet<u64>], out: &mut [TcpStates]) -> bool {
        if ns.is_empty() || ns != self.own_ns {
            return false;
        }
        let Some(diag) = self.diag.as_mut() else {
            return false;
        };
        let mut counted = vec![TcpStates::default(); out.len()];
        match diag.for_each(|state, inode| add_owned(state, inode, owned, &mut counted)) {
            Ok(()) => {
                out.copy_from_slice(&counted);
                true
            }
            Err(_) => {
                // Refused once (a sandbox, say): /proc from now on.
                self.diag = None;
                false
            }
        }
    }
}

/// The network namespace of /proc/`who` (a pid or "self"), as its link reads; empty if we
/// may not look.
fn net_namespace(who: &str) -> String {
    std::fs::read_link(format!("/proc/{who}/ns/net"))
        .map(|l| l.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether one of `pid`'s descriptors is one of `inodes` (false if we may not look).
fn holds_any(pid: u32, inodes: &HashSet<u64>) -> bool {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    dir.filter_map(Result::ok).any(|e| {
        std::fs::read_link(e.path())
            .ok()
            .and_then(|t| t.to_str().and_then(socket_inode))
            .is_some_and(|i| inodes.contains(&i))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: &str = "\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5001 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 5002 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:C350 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 5003 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:1F90 0100007F:C351 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000
   4: 0100007F:1F90 0100007F:C352 08 00000000:00000000 00:00000000 00000000  1000        0 5004 1 0000000000000000 20 4 30 10 -1
";

    const TCP6: &str = "\
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7001 1 0000000000000000 100 0 0 10 0
";

    #[test]
    fn socket_links() {
        assert_eq!(socket_inode("socket:[12345]"), Some(12345));
        assert_eq!(socket_inode("pipe:[12345]"), None);
        assert_eq!(socket_inode("/dev/null"), None);
        assert_eq!(socket_inode("socket:[]"), None);
    }

    #[test]
    fn rows_of_tcp_and_tcp6() {
        let rows: Vec<TcpEntry> = entries(TCP).collect();
        assert_eq!(rows.len(), 5, "header skipped");
        assert_eq!(
            rows[0],
            TcpEntry {
                local_port: 8080,
                state: LISTEN,
                inode: 5001
            }
        );
        assert_eq!((rows[2].local_port, rows[2].state), (50000, 1));
        assert_eq!((rows[3].state, rows[3].inode), (6, 0));
        let six: Vec<TcpEntry> = entries(TCP6).collect();
        assert_eq!(
            six,
            [TcpEntry {
                local_port: 80,
                state: LISTEN,
                inode: 7001
            }]
        );
    }

    #[test]
    fn states_of_owned_inodes_only() {
        let server: HashSet<u64> = [5001, 5002, 5004, 9999].into();
        let client: HashSet<u64> = [5003].into();
        let mut out = [TcpStates::default(); 2];
        count_states(TCP, &[&server, &client], &mut out);
        count_states(TCP6, &[&server, &client], &mut out);
        let want = TcpStates {
            listen: 1,
            established: 1,
            close_wait: 1,
            ..TcpStates::default()
        };
        assert_eq!(out[0], want);
        assert_eq!(
            out[1],
            TcpStates {
                established: 1,
                ..TcpStates::default()
            }
        );
    }

    #[test]
    fn listener_of_our_own_socket() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(listener_pid(port).unwrap(), Some(std::process::id()));
        drop(l);
        assert_eq!(listener_pid(port).unwrap(), None);
    }
}
