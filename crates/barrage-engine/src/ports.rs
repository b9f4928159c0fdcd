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

    /// The system's ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`).
    pub fn system_range() -> Option<(u16, u16)> {
        let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
        let mut it = text.split_whitespace().map(|p| p.parse::<u16>().ok());
        Some((it.next()??, it.next()??))
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
        let any = match to.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        for _ in 0..MAX_TRIES {
            let addr = SocketAddr::new(any, self.next_port());
            match sock.bind(&addr.into()) {
                Ok(()) => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }
}

/// A non-blocking TCP connect to `to`, from an explicit local port when `ports` has one.
pub fn connect(to: SocketAddr, ports: Option<&mut PortCursor>) -> io::Result<mio::net::TcpStream> {
    use socket2::{Domain, Protocol, Socket, Type};
    let sock = Socket::new(Domain::for_address(to), Type::STREAM, Some(Protocol::TCP))?;
    sock.set_nonblocking(true)?;
    if let Some(p) = ports {
        p.bind(&sock, to)?;
    }
    match sock.connect(&to.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(mio::net::TcpStream::from_std(sock.into()))
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
        let held = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        let port = held.local_addr().unwrap().port();
        let mut c = PortCursor::new(port, port.saturating_add(50), 0, 1).unwrap();
        let sock =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        assert!(c.bind(&sock, "127.0.0.1:9".parse().unwrap()).unwrap());
        let got = sock.local_addr().unwrap().as_socket().unwrap().port();
        assert_ne!(got, port, "the held port was skipped");
    }
}
