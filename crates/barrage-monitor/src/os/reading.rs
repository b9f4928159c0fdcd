//! What every backend reads into, under the same names on every platform: a process's
//! [`ProcReading`], the machine's [`HostLevels`], TCP [`state`] codes and their counting.

use barrage_metrics::TcpStates;
use std::collections::{HashMap, HashSet};

/// Cumulative counters of one process (and its descendants, when asked) at one instant; the
/// sampler turns two of them into rates.
#[derive(Clone, Debug, Default)]
pub(crate) struct ProcReading {
    /// CPU time in user mode, ns, all threads (with children: see the backend's docs).
    pub user_ns: u64,
    /// CPU time in kernel mode, ns.
    pub sys_ns: u64,
    pub rss_bytes: u64,
    /// The monitored process's own peak RSS (children's peaks are not summed: they peak apart).
    pub hwm_bytes: u64,
    /// Private committed memory (Windows' "private bytes"); 0 where it is not read (Linux).
    pub private_bytes: u64,
    pub threads: u64,
    /// Descendants summed in (with children; 0: the process alone).
    pub children: u64,
    /// Open file descriptors (Linux) or handles (Windows).
    pub fds: u64,
    /// False if some process's descriptors were not ours to read (then fds and TCP states
    /// undercount).
    pub fds_readable: bool,
    /// (voluntary, involuntary) context switches per thread id, across the tree.
    pub ctx: HashMap<u32, (u64, u64)>,
    /// What ties TCP sockets to this reading for `TcpCounter`: socket inodes on Linux, the
    /// pids of the process tree on Windows (sockets there are listed with their owner's pid).
    pub sockets: HashSet<u64>,
}

/// The machine's levels at a sample (not counters: no rate is made of them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HostLevels {
    pub mem_total: u64,
    pub mem_available: u64,
    /// TCP sockets in use (TIME_WAIT excluded) and in TIME_WAIT, machine-wide.
    pub tcp_inuse: u64,
    pub tcp_time_wait: u64,
}

/// TCP state codes as Linux numbers them (include/net/tcp_states.h); other backends translate
/// theirs to these.
#[cfg_attr(not(any(target_os = "linux", windows)), allow(dead_code))]
pub(crate) mod state {
    pub const ESTABLISHED: u8 = 0x01;
    pub const SYN_SENT: u8 = 0x02;
    pub const SYN_RECV: u8 = 0x03;
    pub const FIN_WAIT1: u8 = 0x04;
    pub const FIN_WAIT2: u8 = 0x05;
    pub const TIME_WAIT: u8 = 0x06;
    pub const CLOSE: u8 = 0x07;
    pub const CLOSE_WAIT: u8 = 0x08;
    pub const LAST_ACK: u8 = 0x09;
    pub const LISTEN: u8 = 0x0A;
    pub const CLOSING: u8 = 0x0B;
}

/// Counts one socket in its state (a [`state`] code; others are ignored).
#[cfg_attr(not(any(target_os = "linux", windows)), allow(dead_code))]
pub(crate) fn add_state(s: &mut TcpStates, code: u8) {
    let slot = match code {
        state::ESTABLISHED => &mut s.established,
        state::SYN_SENT => &mut s.syn_sent,
        state::SYN_RECV => &mut s.syn_recv,
        state::FIN_WAIT1 => &mut s.fin_wait1,
        state::FIN_WAIT2 => &mut s.fin_wait2,
        state::TIME_WAIT => &mut s.time_wait,
        state::CLOSE => &mut s.close,
        state::CLOSE_WAIT => &mut s.close_wait,
        state::LAST_ACK => &mut s.last_ack,
        state::LISTEN => &mut s.listen,
        state::CLOSING => &mut s.closing,
        // 0x0C NEW_SYN_RECV: request sockets, never shown with an owner.
        _ => return,
    };
    *slot += 1;
}

/// Counts a socket in `out[i]` for every i whose `owned[i]` holds its key (an inode, or a
/// pid); key 0 belongs to nobody (TIME_WAIT).
#[cfg_attr(not(any(target_os = "linux", windows)), allow(dead_code))]
pub(crate) fn add_owned(code: u8, key: u64, owned: &[&HashSet<u64>], out: &mut [TcpStates]) {
    if key == 0 {
        return;
    }
    for (set, states) in owned.iter().zip(out.iter_mut()) {
        if set.contains(&key) {
            add_state(states, code);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn owned_keys_only_and_never_key_0() {
        let a: HashSet<u64> = [7, 9].into();
        let b: HashSet<u64> = [9].into();
        let mut out = [TcpStates::default(); 2];
        add_owned(state::ESTABLISHED, 9, &[&a, &b], &mut out);
        add_owned(state::LISTEN, 7, &[&a, &b], &mut out);
        add_owned(state::TIME_WAIT, 0, &[&a, &b], &mut out);
        assert_eq!(
            (out[0].established, out[0].listen, out[0].time_wait),
            (1, 1, 0)
        );
        assert_eq!((out[1].established, out[1].listen), (1, 0));
    }
}
