//! Local ports for outgoing connections, chosen by the worker instead of by the kernel.
//!
//! When a process holds thousands of connections to one destination, the kernel's own choice
//! of an ephemeral port in `connect()` scans the port range for a free 4-tuple
//! (`__inet_hash_connect`): at 19,000 connections it took 70 % of a worker's CPU and stalled
//! its event loop for a second at a time, which showed up as latency of the connections that
//! were already up. Binding an explicit port first makes `connect()` O(1). Each worker takes a
//! disjoint stride of the range (share `i` of `n` takes `lo + i`, `lo + i + n`, ...), so
//! workers never race for a port; a port that is taken (by another socket, or in TIME_WAIT) is
//! skipped, and after a run of taken ports the kernel chooses as before.
//!
//! A [`Dialer`] spreads connections over several source addresses (`--source-ip`) and several
//! target addresses (`--url`), with one cursor per (source, target) pair, so one machine
//! holds sources × targets × ports connections: a port bound on one source address is free
//! on the next, and with several targets ports are shared between them (`SO_REUSEADDR`;
//! `connect` refuses a 4-tuple in use with `EADDRNOTAVAIL`, and the next port is tried). When
//! a pair's cursor finds only taken ports, the kernel chooses the port at `connect` for the
//! 4-tuple (`IP_BIND_ADDRESS_NO_PORT`), still from the chosen source address.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Consecutive taken ports after which one connect falls back to the kernel's choice.
const MAX_TRIES: u32 = 64;

/// One worker's cursor over its stride of the local port range.
#[derive(Clone, Debug)]
pub struct PortCursor {
    lo: u16,
    hi: u16,
    stride: u16,
    next: u32,
}

impl PortCursor {
    /// Share `index` of `count` over the inclusive range `lo..=hi`; `None` when the stride is
    /// empty (more workers than ports).
    pub fn new(lo: u16, hi: u16, index: usize, count: usize) -> Option<Self> {
        let first = u32::from(lo) + index as u32;
        let fits = lo <= hi && first <= u32::from(hi) && count >= 1 && count <= u16::MAX as usize;
        fits.then_some(Self {
            lo,
            hi,
            stride: count as u16,
            next: first,
        })
    }

    /// The system's ephemeral range ([`crate::os::net::ephemeral_range`]).
    pub fn system_range() -> Option<(u16, u16)> {
        crate::os::net::ephemeral_range()
    }

    /// Start `steps` ports into the stride (another process's workers start elsewhere, so
    /// two barrage processes seldom try the same ports).
    pub fn skip(mut self, steps: u32) -> Self {
        let len = (u32::from(self.hi) - self.next) / u32::from(self.stride) + 1;
        let first = self.next;
        self.next = first + (steps % len) * u32::from(self.stride);
        self
    }

    /// The next port of this stride, wrapping around.
    pub fn next_port(&mut self) -> u16 {
        let port = self.next as u16;
        self.next += u32::from(self.stride);
        if self.next > u32::from(self.hi) {
            self.next =
                u32::from(self.lo) + (self.next - u32::from(self.lo)) % u32::from(self.stride);
        }
        port
    }

    /// Bind `sock` to the next free port of the stride for a connection to `to`; `false` when
    /// every try found the port taken (the caller lets the kernel choose).
    pub fn bind(&mut self, sock: &socket2::Socket, to: SocketAddr) -> io::Result<bool> {
        self.bind_from(sock, unspecified(to), MAX_TRIES)
    }

    /// Bind `sock` to `ip` and the next free port of the stride, trying at most `tries` ports.
    fn bind_from(&mut self, sock: &socket2::Socket, ip: IpAddr, tries: u32) -> io::Result<bool> {
        for _ in 0..tries {
            let addr = SocketAddr::new(ip, self.next_port());
            match sock.bind(&addr.into()) {
                Ok(()) => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }
}

fn unspecified(to: SocketAddr) -> IpAddr {
    match to.ip() {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

fn socket_for(to: SocketAddr) -> io::Result<socket2::Socket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let sock = Socket::new(Domain::for_address(to), Type::STREAM, Some(Protocol::TCP))?;
    sock.set_nonblocking(true)?;
    Ok(sock)
}

/// Starts the connect; on failure the socket comes back with the error.
fn start(
    sock: socket2::Socket,
    to: SocketAddr,
) -> Result<mio::net::TcpStream, (socket2::Socket, io::Error)> {
    match sock.connect(&to.into()) {
        Ok(()) => {}
        Err(e) if crate::os::net::connect_in_progress(&e) => {}
        Err(e) => return Err((sock, e)),
    }
    Ok(mio::net::TcpStream::from_std(sock.into()))
}

/// Where one worker's connections go from and to. The worker's k-th connection (global id
/// `g`, `k = g div shares`) goes to target `k mod T` from source `(k div T) mod S`, so every
/// (source, target) pair carries an equal part of every worker's connections (a mapping on
/// `g` itself would follow the workers' stride: with two shares and two sources, each worker
/// would use one source only).
#[derive(Debug)]
pub struct Dialer {
    targets: Box<[SocketAddr]>,
    /// Empty: the kernel chooses the source address.
    sources: Box<[IpAddr]>,
    /// One cursor per (source, target) pair, `s * T + t`; empty when the port range is unknown.
    cursors: Vec<PortCursor>,
    /// How many shares the run has (connection ids go by this stride).
    shares: u64,
}

impl Dialer {
    /// `targets` is never empty; `share` of `shares` picks this worker's stride of every
    /// pair's ports, `skip` where in it to start.
    pub fn new(
        targets: &[SocketAddr],
        sources: &[IpAddr],
        share: usize,
        shares: usize,
        skip: u32,
    ) -> Self {
        Self::over(
            PortCursor::system_range(),
            targets,
            sources,
            share,
            shares,
            skip,
        )
    }

    /// As [`Dialer::new`], over the local port range `range` (`None`: the kernel chooses).
    pub fn over(
        range: Option<(u16, u16)>,
        targets: &[SocketAddr],
        sources: &[IpAddr],
        share: usize,
        shares: usize,
        skip: u32,
    ) -> Self {
        assert!(!targets.is_empty(), "a dialer needs a target");
        let pairs = targets.len() * sources.len().max(1);
        let cursors = range
            .and_then(|(lo, hi)| PortCursor::new(lo, hi, share, shares))
            .map(|c| {
                (0..pairs)
                    .map(|i| c.clone().skip(skip.wrapping_add(i as u32 * 7)))
                    .collect()
            })
            .unwrap_or_default();
        Self {
            targets: targets.into(),
            sources: sources.into(),
            cursors,
            shares: shares.max(1) as u64,
        }
    }

    /// The (source, target) pair of connection `gid`: indices into the lists.
    pub fn pair_of(&self, gid: u64) -> (usize, usize) {
        let k = gid / self.shares;
        let t = self.targets.len() as u64;
        let s = self.sources.len().max(1) as u64;
        (((k / t) % s) as usize, (k % t) as usize)
    }

    /// The address connection `gid` connects to.
    pub fn target_of(&self, gid: u64) -> SocketAddr {
        self.targets[self.pair_of(gid).1]
    }

    /// A non-blocking connect for connection `gid`.
    pub fn connect(&mut self, gid: u64) -> io::Result<mio::net::TcpStream> {
        let (s, t) = self.pair_of(gid);
        let to = self.targets[t];
        let from = self.sources.get(s).copied();
        // Several targets share ports; given sources rebind ports in TIME_WAIT (a 4-tuple
        // still in use is refused by connect, and the next port is tried).
        let shared = self.targets.len() > 1 || !self.sources.is_empty();
        let pair = s * self.targets.len() + t;
        if let Some(cursor) = self.cursors.get_mut(pair) {
            let ip = from.unwrap_or_else(|| unspecified(to));
            let mut unbound = None;
            for _ in 0..MAX_TRIES {
                let sock = match unbound.take() {
                    Some(sock) => sock,
                    None => {
                        let sock = socket_for(to)?;
                        if shared {
                            sock.set_reuse_address(true)?;
                        }
                        sock
                    }
                };
                if !cursor.bind_from(&sock, ip, 1)? {
                    unbound = Some(sock);
                    continue;
                }
                match start(sock, to) {
                    Ok(stream) => return Ok(stream),
                    // This 4-tuple is in use (another target's, or in TIME_WAIT).
                    Err((_, e)) if shared && crate::os::net::addr_not_available(&e) => {}
                    Err((_, e)) => return Err(e),
                }
            }
        }
        let sock = socket_for(to)?;
        if let Some(ip) = from {
            crate::os::net::no_port_bind(&sock);
            sock.bind(&SocketAddr::new(ip, 0).into())?;
        }
        start(sock, to).map_err(|(_, e)| e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_are_disjoint_cover_the_range_and_wrap() {
        let (lo, hi) = (1000u16, 1009u16);
        let mut seen = Vec::new();
        for i in 0..3 {
            let mut c = PortCursor::new(lo, hi, i, 3).unwrap();
            let mine: Vec<u16> = (0..4).map(|_| c.next_port()).collect();
            // 4 draws from a stride of 3 or 4 ports: the first wraps back to the start.
            let stride: Vec<u16> = (lo..=hi).filter(|p| (p - lo) as usize % 3 == i).collect();
            assert_eq!(&mine[..stride.len()], &stride[..], "share {i}");
            if stride.len() < 4 {
                assert_eq!(mine[3], stride[0], "share {i} wraps");
            }
            seen.extend(stride);
        }
        seen.sort();
        assert_eq!(seen, (lo..=hi).collect::<Vec<_>>());
        assert!(
            PortCursor::new(lo, hi, 10, 11).is_none(),
            "more shares than ports"
        );
        let mut c = PortCursor::new(lo, hi, 1, 3).unwrap().skip(2);
        assert_eq!([c.next_port(), c.next_port()], [1007, 1001]);
        let mut c = PortCursor::new(lo, hi, 0, 3).unwrap().skip(4 + 1);
        assert_eq!(c.next_port(), 1003, "skips wrap within the stride");
        assert!(PortCursor::new(5, 4, 0, 1).is_none());
    }

    #[test]
    fn a_taken_port_is_skipped() {
        // Below the ephemeral range (32768-60999 by default): after a suite of connections the
        // 50 ports past an ephemeral one were all in TIME_WAIT once, and none could be bound.
        let held = (20_000..30_000)
            .step_by(97)
            .find_map(|p| std::net::TcpListener::bind(("0.0.0.0", p)).ok())
            .expect("a free port below the ephemeral range");
        let port = held.local_addr().unwrap().port();
        let mut c = PortCursor::new(port, port.saturating_add(50), 0, 1).unwrap();
        let sock =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        assert!(c.bind(&sock, "127.0.0.1:9".parse().unwrap()).unwrap());
        let got = sock.local_addr().unwrap().as_socket().unwrap().port();
        assert_ne!(got, port, "the held port was skipped");
    }

    /// Waits until the connect of `s` is done and returns (local, peer).
    fn established(s: &mio::net::TcpStream) -> (SocketAddr, SocketAddr) {
        for _ in 0..2000 {
            if let Ok(peer) = s.peer_addr() {
                return (s.local_addr().unwrap(), peer);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        panic!("no connect");
    }

    #[test]
    fn connections_spread_over_sources_and_targets_by_global_id() {
        let l1 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let l2 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let targets = [l1.local_addr().unwrap(), l2.local_addr().unwrap()];
        let sources: Vec<IpAddr> = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let mut d = Dialer::new(&targets, &sources, 0, 1, 0);
        let mut seen = Vec::new();
        for gid in 0..12u64 {
            let s = d.connect(gid).unwrap();
            let (local, peer) = established(&s);
            assert_eq!(peer, targets[gid as usize % 2], "gid {gid}");
            assert_eq!(local.ip(), sources[(gid as usize / 2) % 3], "gid {gid}");
            assert_eq!(d.target_of(gid), peer);
            seen.push(s);
        }
        // Share 1 of 2 (ids 1, 3, 5, ...) spreads over every pair too, not over the odd ones.
        let d = Dialer::new(&targets, &sources, 1, 2, 0);
        let mut count = std::collections::BTreeMap::new();
        for k in 0..12u64 {
            *count.entry(d.pair_of(1 + 2 * k)).or_insert(0) += 1;
        }
        assert_eq!(count.len(), 6, "{count:?}");
        assert!(count.values().all(|&n| n == 2), "{count:?}");
    }

    #[test]
    fn two_targets_share_each_local_port() {
        // Four free ports below the ephemeral range, for the cursor alone.
        let lo = (20_000u16..31_990)
            .step_by(37)
            .map(|p| p + (std::process::id() % 30) as u16)
            .find(|&p| (p..p + 4).all(|q| std::net::TcpListener::bind(("127.0.0.1", q)).is_ok()))
            .unwrap();
        let l1 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let l2 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let targets = [l1.local_addr().unwrap(), l2.local_addr().unwrap()];
        let src: IpAddr = "127.0.0.5".parse().unwrap();
        let mut d = Dialer::over(Some((lo, lo + 3)), &targets, &[src], 0, 1, 0);
        let mut held = Vec::new();
        let mut pairs = std::collections::BTreeSet::new();
        for gid in 0..8u64 {
            let s = d.connect(gid).unwrap();
            let (local, peer) = established(&s);
            assert_eq!(local.ip(), src);
            assert!(
                (lo..lo + 4).contains(&local.port()),
                "{local} from the range"
            );
            pairs.insert((local.port(), peer));
            held.push(s);
        }
        // Eight connections from four ports: each port once to each target.
        assert_eq!(pairs.len(), 8);
        // A ninth finds every 4-tuple of the range taken and leaves the port to the kernel.
        let s = d.connect(8).unwrap();
        let (local, _) = established(&s);
        assert_eq!(local.ip(), src);
        assert!(!(lo..lo + 4).contains(&local.port()), "{local}");
    }
}
