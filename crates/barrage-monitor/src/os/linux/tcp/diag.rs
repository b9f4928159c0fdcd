//! TCP sockets of our own network namespace through NETLINK_SOCK_DIAG, the interface `ss`
//! uses: the fast path for the state counts.
//!
//! /proc/net/tcp formats a text line for every socket, TIME_WAIT ones included, and a load
//! test leaves tens of thousands of those (18,000 lines cost 35 ms to read here). The dump
//! below asks the kernel for every state but TIME_WAIT (which no process owns) in binary, and
//! keeps only the state and inode of each socket: 4x cheaper with live sockets, 16x with
//! TIME_WAIT ones. The kernel still walks its whole socket hash per dump, so the old
//! (TCPDIAG_GETSOCK) request comes first, which covers IPv4 and IPv6 in one walk; a kernel
//! that refuses it gets one request per family. Other namespaces are read from
//! `/proc/<pid>/net/tcp` (a netlink socket only sees the namespace it was created in).

use std::io;

/// nlmsghdr: len u32, type u16, flags u16, seq u32, pid u32.
const NLMSG_HDR: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// The old request type: both families in one dump (`inet_diag_req`).
const TCPDIAG_GETSOCK: u16 = 18;
/// The current one: one family per dump (`inet_diag_req_v2`).
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
/// inet_diag_msg: family, state, timer, retrans, sockid (48 bytes), expires, rqueue, wqueue,
/// uid, inode (u32 each).
const DIAG_MSG: usize = 72;
const INODE_AT: usize = 68;
/// States 1..=11 but TIME_WAIT (6).
const STATES: u32 = 0x1FFE & !(1 << 6);
// Linux's numbers (this path runs on Linux only).
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
const ENOENT: i32 = 2;
const EAFNOSUPPORT: i32 = 97;

/// One dump: both families at once (the old request), or one family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Query {
    Both,
    Family(u8),
}

/// The request for every TCP socket of `query` in any state but TIME_WAIT.
pub(crate) fn request(query: Query, seq: u32) -> Vec<u8> {
    // Both bodies are zero but for the states (an all-zero sockid filters nothing).
    let (kind, body) = match query {
        // inet_diag_req: family, src_len, dst_len, ext, sockid (48), states, dbs.
        Query::Both => {
            let mut b = vec![0u8; 60];
            b[52..56].copy_from_slice(&STATES.to_ne_bytes());
            (TCPDIAG_GETSOCK, b)
        }
        // inet_diag_req_v2: family, protocol, ext, pad, states, sockid (48).
        Query::Family(family) => {
            let mut b = vec![0u8; 56];
            b[0] = family;
            b[1] = 6; // IPPROTO_TCP
            b[4..8].copy_from_slice(&STATES.to_ne_bytes());
            (SOCK_DIAG_BY_FAMILY, b)
        }
    };
    let mut req = Vec::with_capacity(NLMSG_HDR + body.len());
    req.extend_from_slice(&((NLMSG_HDR + body.len()) as u32).to_ne_bytes());
    req.extend_from_slice(&kind.to_ne_bytes());
    req.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    req.extend_from_slice(&seq.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes());
    req.extend_from_slice(&body);
    req
}

/// Walks one datagram of a dump, calling `f(state, inode)` per socket. `Ok(true)`: the dump
/// is complete.
pub(crate) fn parse(mut data: &[u8], f: &mut impl FnMut(u8, u64)) -> io::Result<bool> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "bad sock_diag message");
    while data.len() >= NLMSG_HDR {
        let len = u32::from_ne_bytes(data[0..4].try_into().map_err(|_| bad())?) as usize;
        let kind = u16::from_ne_bytes([data[4], data[5]]);
        if len < NLMSG_HDR || len > data.len() {
            return Err(bad());
        }
        let body = &data[NLMSG_HDR..len];
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let code = body.get(0..4).ok_or_else(bad)?;
                let code = i32::from_ne_bytes(code.try_into().map_err(|_| bad())?);
                if code != 0 {
                    return Err(io::Error::from_raw_os_error(-code));
                }
            }
            TCPDIAG_GETSOCK | SOCK_DIAG_BY_FAMILY if body.len() >= DIAG_MSG => {
                let inode = &body[INODE_AT..INODE_AT + 4];
                let inode = u32::from_ne_bytes(inode.try_into().map_err(|_| bad())?);
                f(body[1], u64::from(inode));
            }
            _ => {}
        }
        // Messages are 4-byte aligned.
        data = &data[len.next_multiple_of(4).min(data.len())..];
    }
    Ok(false)
}

/// An open NETLINK_SOCK_DIAG socket, reused for every sample.
pub(crate) struct Diag {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
    buf: Vec<u8>,
    seq: u32,
    /// Whether the one-walk (old) request works here; cleared on its first refusal.
    one_walk: bool,
}

impl Diag {
    #[cfg(target_os = "linux")]
    pub fn open() -> io::Result<Diag> {
        use std::os::fd::FromRawFd;
        // SAFETY: plain socket(2); the result is checked before it is owned.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                libc::NETLINK_SOCK_DIAG,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Diag {
            // SAFETY: fd is a fresh descriptor nobody else owns.
            fd: unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) },
            // A dump datagram is at most 32 KiB.
            buf: vec![0; 64 * 1024],
            seq: 0,
            one_walk: true,
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn open() -> io::Result<Diag> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "no sock_diag"))
    }

    /// Calls `f(state, inode)` for every IPv4 and IPv6 TCP socket but those in TIME_WAIT.
    pub fn for_each(&mut self, mut f: impl FnMut(u8, u64)) -> io::Result<()> {
        if self.one_walk {
            let mut seen = 0u64;
            match self.dump(Query::Both, &mut |s, i| {
                seen += 1;
                f(s, i)
            }) {
                Ok(()) => return Ok(()),
                // Refused up front: per family from now on.
                Err(_) if seen == 0 => self.one_walk = false,
                Err(e) => return Err(e),
            }
        }
        self.dump(Query::Family(AF_INET), &mut f)?;
        // A kernel without IPv6 refuses the second dump: no IPv6 sockets then.
        match self.dump(Query::Family(AF_INET6), &mut f) {
            Err(e) if matches!(e.raw_os_error(), Some(ENOENT | EAFNOSUPPORT)) => Ok(()),
            other => other,
        }
    }

    #[cfg(target_os = "linux")]
    fn dump(&mut self, query: Query, f: &mut impl FnMut(u8, u64)) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        self.seq = self.seq.wrapping_add(1);
        let req = request(query, self.seq);
        // SAFETY: an all-zero sockaddr_nl is valid (pid 0: the kernel).
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        let fd = self.fd.as_raw_fd();
        // SAFETY: req and kernel are valid for the lengths given.
        let sent = unsafe {
            libc::sendto(
                fd,
                req.as_ptr().cast(),
                req.len(),
                0,
                (&kernel as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        loop {
            // SAFETY: buf is valid for writes of its length.
            let n = unsafe { libc::recv(fd, self.buf.as_mut_ptr().cast(), self.buf.len(), 0) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 || parse(&self.buf[..n as usize], f)? {
                return Ok(());
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn dump(&mut self, _query: Query, _f: &mut impl FnMut(u8, u64)) -> io::Result<()> {
        let _ = (&self.buf, self.seq);
        Err(io::Error::new(io::ErrorKind::Unsupported, "no sock_diag"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u16, body: &[u8]) -> Vec<u8> {
        let len = (NLMSG_HDR + body.len()) as u32;
        let mut m = Vec::new();
        m.extend_from_slice(&len.to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        m.extend_from_slice(body);
        while m.len() % 4 != 0 {
            m.push(0);
        }
        m
    }

    fn socket(state: u8, inode: u32) -> Vec<u8> {
        let mut body = vec![0u8; DIAG_MSG];
        body[0] = 2;
        body[1] = state;
        body[INODE_AT..].copy_from_slice(&inode.to_ne_bytes());
        message(SOCK_DIAG_BY_FAMILY, &body)
    }

    #[test]
    fn a_dump_in_two_datagrams() {
        let mut seen = Vec::new();
        let mut f = |s, i| seen.push((s, i));
        let first = [socket(10, 5001), socket(1, 5002)].concat();
        assert!(!parse(&first, &mut f).unwrap());
        let second = [socket(8, 5003), message(NLMSG_DONE, &[0; 4])].concat();
        assert!(parse(&second, &mut f).unwrap());
        assert_eq!(seen, [(10, 5001), (1, 5002), (8, 5003)]);
    }

    #[test]
    fn errors_and_junk() {
        let mut f = |_, _| {};
        let err = message(NLMSG_ERROR, &(-1i32).to_ne_bytes());
        assert_eq!(parse(&err, &mut f).unwrap_err().raw_os_error(), Some(1));
        let ack = message(NLMSG_ERROR, &0i32.to_ne_bytes());
        assert!(!parse(&ack, &mut f).unwrap());
        let mut short = socket(1, 1);
        short[0] = 200;
        assert!(parse(&short, &mut f).is_err(), "length beyond the datagram");
    }

    #[test]
    fn requests_ask_for_all_tcp_states_but_time_wait() {
        let states_ok = |states: u32| {
            states & (1 << 6) == 0 && (1..=11).filter(|&s| s != 6).all(|s| states & (1 << s) != 0)
        };
        let word = |r: &[u8], at: usize| u32::from_ne_bytes(r[at..at + 4].try_into().unwrap());
        let v2 = request(Query::Family(AF_INET6), 7);
        assert_eq!((v2.len(), word(&v2, 0) as usize), (72, 72));
        assert_eq!(u16::from_ne_bytes([v2[4], v2[5]]), SOCK_DIAG_BY_FAMILY);
        assert_eq!((v2[16], v2[17], word(&v2, 8)), (AF_INET6, 6, 7));
        assert!(states_ok(word(&v2, 20)));
        let old = request(Query::Both, 8);
        assert_eq!((old.len(), word(&old, 0) as usize), (76, 76));
        assert_eq!(u16::from_ne_bytes([old[4], old[5]]), TCPDIAG_GETSOCK);
        assert!(states_ok(word(&old, 16 + 52)));
    }

    /// The inode of one of our sockets.
    fn inode_of(fd: &impl std::os::fd::AsRawFd) -> u64 {
        let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
        crate::os::linux::tcp::socket_inode(link.to_str().unwrap()).unwrap()
    }

    #[test]
    fn one_walk_and_per_family_dumps_see_ipv4_and_ipv6() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let v4 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let v6 = std::net::TcpListener::bind("[::1]:0").ok();
        let mut want = vec![(10, inode_of(&v4))];
        want.extend(v6.iter().map(|l| (10, inode_of(l))));
        let mut diag = Diag::open().unwrap();
        for one_walk in [true, false] {
            diag.one_walk = one_walk;
            let mut seen = Vec::new();
            diag.for_each(|s, i| seen.push((s, i))).unwrap();
            assert!(
                want.iter().all(|w| seen.contains(w)),
                "{one_walk}: {want:?}"
            );
            assert!(seen.iter().all(|x| x.0 != 6), "no TIME_WAIT");
        }
    }

    #[test]
    fn agrees_with_proc_net_tcp() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let mut ours = std::collections::HashSet::new();
        crate::os::linux::proc::scan_fds(std::process::id(), Some(&mut ours)).unwrap();
        let mut via_diag = barrage_metrics::TcpStates::default();
        let mut diag = Diag::open().unwrap();
        diag.for_each(|state, inode| {
            crate::os::add_owned(state, inode, &[&ours], std::slice::from_mut(&mut via_diag));
        })
        .unwrap();
        let mut bufs = [String::new(), String::new()];
        crate::os::linux::tcp::read_tables(None, &mut bufs).unwrap();
        let mut via_proc = [barrage_metrics::TcpStates::default()];
        for t in &bufs {
            crate::os::linux::tcp::count_states(t, &[&ours], &mut via_proc);
        }
        // Other tests' sockets come and go meanwhile: compare ours at least.
        assert!(
            via_diag.established >= 2 && via_diag.listen >= 1,
            "{via_diag:?}"
        );
        assert!(via_proc[0].established >= 2 && via_proc[0].listen >= 1);
        drop((c, s));
    }
}
