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

use crate::proc::{numeric_entries, read_into, read_stat};
use crate::MonitorError;
pub(crate) use diag::Diag;

pub(crate) const LISTEN: u8 = 0x0A;

/// The inode in a `/proc/<pid>/fd` link such as `socket:[12345]`.
pub(crate) fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

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

/// Counts one socket in its state (codes of include/net/tcp_states.h).
pub(crate) fn add_state(s: &mut TcpStates, state: u8) {
    let slot = match state {
        0x01 => &mut s.established,
        0x02 => &mut s.syn_sent,
        0x03 => &mut s.syn_recv,
        0x04 => &mut s.fin_wait1,
        0x05 => &mut s.fin_wait2,
        0x06 => &mut s.time_wait,
        0x07 => &mut s.close,
        0x08 => &mut s.close_wait,
        0x09 => &mut s.last_ack,
        LISTEN => &mut s.listen,
        0x0B => &mut s.closing,
        // 0x0C NEW_SYN_RECV: request sockets, never shown with an owner.
        _ => return,
    };
    *slot += 1;
}

/// Counts a socket in `out[i]` for every i whose `owned[i]` holds its inode.
pub(crate) fn add_owned(state: u8, inode: u64, owned: &[&HashSet<u64>], out: &mut [TcpStates]) {
    if inode == 0 {
        return;
    }
    for (set, states) in owned.iter().zip(out.iter_mut()) {
        if set.contains(&inode) {
            add_state(states, state);
        }
    }
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
pub fn listener_pid(port: u16) -> Result<Option<u32>, MonitorError> {
    if !cfg!(target_os = "linux") {
        return Err(MonitorError::unsupported());
    }
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
    fn every_state_code() {
        let mut s = TcpStates::default();
        for code in 0..=0x0D {
            add_state(&mut s, code);
        }
        let ones = [
            s.established,
            s.syn_sent,
            s.syn_recv,
            s.fin_wait1,
            s.fin_wait2,
            s.time_wait,
            s.close,
            s.close_wait,
            s.last_ack,
            s.listen,
            s.closing,
        ];
        assert_eq!(ones, [1; 11]);
    }

    #[test]
    fn listener_of_our_own_socket() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(listener_pid(port).unwrap(), Some(std::process::id()));
        drop(l);
        assert_eq!(listener_pid(port).unwrap(), None);
    }
}
