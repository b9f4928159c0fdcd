//! TCP sockets on Windows: GetExtendedTcpTable lists every IPv4 and IPv6 socket with its state
//! and owning pid, so a process's sockets are the rows with its pid (or a pid of its tree).
//! TIME_WAIT rows have no owner (pid 0), as on Linux.

use std::collections::{HashMap, HashSet};
use std::io;

use barrage_metrics::TcpStates;
use windows_sys::Win32::Foundation::{ERROR_INSUFFICIENT_BUFFER, NO_ERROR};
use windows_sys::Win32::NetworkManagement::IpHelper::{
    GetExtendedTcpTable, MIB_TCP6ROW, MIB_TCP6ROW_OWNER_PID, MIB_TCP6TABLE,
    MIB_TCP6TABLE_OWNER_PID, MIB_TCPROW_LH, MIB_TCPROW_OWNER_PID, MIB_TCPTABLE,
    MIB_TCPTABLE_OWNER_PID, TCP_TABLE_BASIC_ALL, TCP_TABLE_CLASS, TCP_TABLE_OWNER_PID_ALL,
    TCP_TABLE_OWNER_PID_LISTENER,
};
use windows_sys::Win32::Networking::WinSock::{AF_INET, AF_INET6};

use super::{open, times};
use crate::os::{add_owned, state};
use crate::MonitorError;

/// One socket: its state (a Linux code, see `os::state`), local port and owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    pub state: u8,
    pub local_port: u16,
    pub pid: u32,
}

/// MIB_TCP_STATE (1 = CLOSED ... 12 = DELETE_TCB) as a Linux state code (0: none).
pub(crate) fn linux_state(mib: u32) -> u8 {
    match mib {
        1 => state::CLOSE,
        2 => state::LISTEN,
        3 => state::SYN_SENT,
        4 => state::SYN_RECV,
        5 => state::ESTABLISHED,
        6 => state::FIN_WAIT1,
        7 => state::FIN_WAIT2,
        8 => state::CLOSE_WAIT,
        9 => state::CLOSING,
        10 => state::LAST_ACK,
        11 => state::TIME_WAIT,
        // 12 DELETE_TCB: being deleted, in no state Linux names.
        _ => 0,
    }
}

/// A port as the tables keep it: network byte order in the low 16 bits of a u32.
fn port(dw: u32) -> u16 {
    u16::from_be(dw as u16)
}

/// Every IPv4 and IPv6 socket (listeners and connections), with its owner.
pub(crate) fn all_rows(buf: &mut Vec<u64>, out: &mut Vec<Row>) -> io::Result<()> {
    out.clear();
    rows(TCP_TABLE_OWNER_PID_ALL, buf, out)
}

/// Every IPv4 and IPv6 socket without its owner (`pid` 0): the cheap table, for counts.
pub(crate) fn rows_without_owners(buf: &mut Vec<u64>, out: &mut Vec<Row>) -> io::Result<()> {
    out.clear();
    let row = |state: u32, local_port: u32| Row {
        state: linux_state(state),
        local_port: port(local_port),
        pid: 0,
    };
    let v4 = table(AF_INET.into(), TCP_TABLE_BASIC_ALL, buf)?;
    // SAFETY: `table` wrote an IPv4 table of this class, `v4` bytes long.
    let v4_rows = unsafe { entries::<MIB_TCPTABLE, MIB_TCPROW_LH>(buf, v4) };
    // SAFETY: both members of the union are 32-bit integers: any bits are valid.
    out.extend(v4_rows.map(|r| row(unsafe { r.Anonymous.dwState }, r.dwLocalPort)));
    if let Ok(v6) = table(AF_INET6.into(), TCP_TABLE_BASIC_ALL, buf) {
        // SAFETY: `table` wrote an IPv6 table of this class, `v6` bytes long.
        let v6_rows = unsafe { entries::<MIB_TCP6TABLE, MIB_TCP6ROW>(buf, v6) };
        out.extend(v6_rows.map(|r| row(r.State as u32, r.dwLocalPort)));
    }
    Ok(())
}

fn rows(class: TCP_TABLE_CLASS, buf: &mut Vec<u64>, out: &mut Vec<Row>) -> io::Result<()> {
    let row = |state: u32, local_port: u32, pid: u32| Row {
        state: linux_state(state),
        local_port: port(local_port),
        pid,
    };
    let v4 = table(AF_INET.into(), class, buf)?;
    // SAFETY: `table` wrote an IPv4 table of an owner-pid class, `v4` bytes long.
    let v4_rows = unsafe { entries::<MIB_TCPTABLE_OWNER_PID, MIB_TCPROW_OWNER_PID>(buf, v4) };
    out.extend(v4_rows.map(|r| row(r.dwState, r.dwLocalPort, r.dwOwningPid)));
    // A system without IPv6 has no such table: only IPv4 then.
    if let Ok(v6) = table(AF_INET6.into(), class, buf) {
        // SAFETY: `table` wrote an IPv6 table of an owner-pid class, `v6` bytes long.
        let v6_rows = unsafe { entries::<MIB_TCP6TABLE_OWNER_PID, MIB_TCP6ROW_OWNER_PID>(buf, v6) };
        out.extend(v6_rows.map(|r| row(r.dwState, r.dwLocalPort, r.dwOwningPid)));
    }
    Ok(())
}

/// Fills `buf` with one table (the count, then the rows); returns the bytes written.
fn table(family: u32, class: TCP_TABLE_CLASS, buf: &mut Vec<u64>) -> io::Result<usize> {
    if buf.is_empty() {
        buf.resize(8 * 1024, 0);
    }
    for _ in 0..8 {
        let mut size = (buf.len() * 8).min(u32::MAX as usize) as u32;
        // SAFETY: buf is writable for `size` bytes; size is a writable u32.
        let err =
            unsafe { GetExtendedTcpTable(buf.as_mut_ptr().cast(), &mut size, 0, family, class, 0) };
        match err {
            NO_ERROR => return Ok((size as usize).min(buf.len() * 8)),
            ERROR_INSUFFICIENT_BUFFER => {
                // Sockets come and go between two calls: some room to spare.
                buf.resize((size as usize + 16 * 1024).div_ceil(8), 0);
            }
            e => return Err(io::Error::from_raw_os_error(e as i32)),
        }
    }
    Err(io::Error::other("the TCP table kept growing"))
}

/// The rows of a table `Tbl` (a u32 count, then `Row`s from offset_of(table)) in `buf`.
///
/// # Safety
/// `buf` must hold a table of that type written by GetExtendedTcpTable, `len` bytes long.
unsafe fn entries<Tbl, R: Copy>(buf: &[u64], len: usize) -> impl Iterator<Item = R> + '_ {
    let base = buf.as_ptr().cast::<u8>();
    // SAFETY: the caller's table starts with its u32 count.
    let count = if len >= 4 {
        unsafe { base.cast::<u32>().read_unaligned() as usize }
    } else {
        0
    };
    // Rows follow the count, 4-byte aligned (as `table` is placed in the struct).
    let first = size_of::<Tbl>() - size_of::<R>();
    let fits = len.saturating_sub(first) / size_of::<R>();
    (0..count.min(fits)).map(move |i| {
        // SAFETY: row i lies within the `len` bytes written (checked by `fits`).
        unsafe {
            base.add(first + i * size_of::<R>())
                .cast::<R>()
                .read_unaligned()
        }
    })
}

/// TCP states of the monitored processes, by the pids of their trees.
pub(crate) struct TcpCounter {
    buf: Vec<u64>,
    rows: Vec<Row>,
    /// The owner table names no owner: under wine (never asked: it names none, and each call
    /// costs up to seconds of this process's CPU on a busy machine), or it listed sockets
    /// without one (not asked again).
    no_owners: bool,
}

impl TcpCounter {
    pub fn new() -> Self {
        TcpCounter {
            buf: Vec::new(),
            rows: Vec::new(),
            no_owners: super::under_wine(),
        }
    }

    /// The states of each `(pid, pids of its tree)`; `None` (gone) and no pids read 0.
    pub fn count(&mut self, procs: &[(u32, Option<&HashSet<u64>>)]) -> Vec<TcpStates> {
        let mut out = vec![TcpStates::default(); procs.len()];
        if self.no_owners || procs.iter().all(|p| p.1.is_none_or(|s| s.is_empty())) {
            return out;
        }
        let empty = HashSet::new();
        let owned: Vec<&HashSet<u64>> = procs.iter().map(|p| p.1.unwrap_or(&empty)).collect();
        if all_rows(&mut self.buf, &mut self.rows).is_ok() {
            self.no_owners = !self.rows.is_empty() && self.rows.iter().all(|r| r.pid == 0);
            for r in &self.rows {
                add_owned(r.state, r.pid.into(), &owned, &mut out);
            }
        }
        out
    }
}

/// The process listening on `port` (see [`crate::listener_pid`]): the oldest owner of a
/// listening IPv4 or IPv6 socket on it. Pid 0 (no owner shown) and 4 (the System process:
/// http.sys) are not processes to monitor: `ListenerNotVisible`.
pub(crate) fn listener_pid(port_wanted: u16) -> Result<Option<u32>, MonitorError> {
    let (mut buf, mut found) = (Vec::new(), Vec::new());
    rows(TCP_TABLE_OWNER_PID_LISTENER, &mut buf, &mut found).map_err(|source| {
        MonitorError::Io {
            path: "GetExtendedTcpTable".into(),
            source,
        }
    })?;
    let owners: Vec<u32> = found
        .iter()
        .filter(|r| r.state == state::LISTEN && r.local_port == port_wanted)
        .map(|r| r.pid)
        .collect();
    if owners.is_empty() {
        return Ok(None);
    }
    let mut created: HashMap<u32, u64> = HashMap::new();
    for pid in owners.into_iter().filter(|&p| p > 4) {
        let born = open(pid).and_then(|h| times(&h)).map_or(u64::MAX, |t| t.0);
        created.insert(pid, born);
    }
    match created.into_iter().map(|(pid, born)| (born, pid)).min() {
        Some((_, pid)) => Ok(Some(pid)),
        None => Err(MonitorError::ListenerNotVisible { port: port_wanted }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_ports() {
        let codes: Vec<u8> = (0..=13).map(linux_state).collect();
        assert_eq!(codes, [0, 7, 10, 2, 3, 1, 4, 5, 8, 11, 9, 6, 0, 0]);
        assert_eq!(port(u32::from(8080u16.to_be())), 8080);
    }

    #[test]
    fn our_listener_is_in_the_table() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let p = l.local_addr().unwrap().port();
        let mut rows = Vec::new();
        all_rows(&mut Vec::new(), &mut rows).unwrap();
        assert!(
            rows.iter()
                .any(|r| r.local_port == p && r.state == state::LISTEN),
            "{rows:?}"
        );
    }
}
