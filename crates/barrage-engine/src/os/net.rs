//! Socket details that differ by platform: the error codes a connect, read or write can fail
//! with, and binding a source address while leaving the port to `connect`.

use barrage_metrics::ErrorClass;
use std::io;

/// The class of an operating-system error code, when the code is one the engine names.
pub fn os_error_class(code: i32) -> Option<ErrorClass> {
    imp::class(code)
}

/// A non-blocking connect that has started and will finish later (not an error).
pub fn connect_in_progress(e: &io::Error) -> bool {
    e.raw_os_error() == Some(imp::IN_PROGRESS) || e.kind() == io::ErrorKind::WouldBlock
}

/// The 4-tuple (or the source address itself) is not available: in use by another
/// connection, or not an address of this machine.
pub fn addr_not_available(e: &io::Error) -> bool {
    e.raw_os_error() == Some(imp::ADDR_NOT_AVAILABLE)
}

/// Whether a read that returns less than it asked for leaves the socket drained as far as the
/// poll is concerned, so the read that would say `WouldBlock` can be saved: on Unix (epoll,
/// kqueue) new data raises a new edge. Not on Windows, where mio re-arms a socket's readiness
/// only once an operation said `WouldBlock`: a loop stopping at a short read would never hear
/// of the socket again.
pub const SHORT_READ_DRAINS: bool = cfg!(unix);

/// The same for writes: on Unix a short write means the send buffer is full and a writable
/// edge follows; on Windows the write is tried again until it says `WouldBlock`.
pub const SHORT_WRITE_FILLS: bool = cfg!(unix);

/// A bind to (address, 0) that leaves the port to `connect`, which then picks one free for the
/// 4-tuple instead of one free for every destination (Linux' `IP_BIND_ADDRESS_NO_PORT`).
/// Elsewhere the bind picks the port, which only matters past about 28,000 connections per
/// source address.
pub fn no_port_bind(sock: &socket2::Socket) {
    imp::no_port_bind(sock)
}

/// The system's ephemeral port range (inclusive), where the system says it.
pub fn ephemeral_range() -> Option<(u16, u16)> {
    imp::ephemeral_range()
}

/// How to widen the ephemeral port range on this system, for the preflight's advice.
pub const WIDEN_PORTS: &str = imp::WIDEN_PORTS;

#[cfg(unix)]
mod imp {
    use barrage_metrics::ErrorClass;

    pub const IN_PROGRESS: i32 = libc::EINPROGRESS;
    pub const WIDEN_PORTS: &str = "sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"";

    /// `/proc/sys/net/ipv4/ip_local_port_range` (Linux).
    pub fn ephemeral_range() -> Option<(u16, u16)> {
        let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
        let mut it = text.split_whitespace().map(|p| p.parse::<u16>().ok());
        Some((it.next()??, it.next()??))
    }
    pub const ADDR_NOT_AVAILABLE: i32 = libc::EADDRNOTAVAIL;

    pub fn class(code: i32) -> Option<ErrorClass> {
        Some(match code {
            libc::ECONNREFUSED => ErrorClass::Refused,
            libc::ETIMEDOUT => ErrorClass::ConnectTimeout,
            libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED => ErrorClass::Reset,
            libc::EMFILE | libc::ENFILE => ErrorClass::LocalFdExhausted,
            libc::EADDRNOTAVAIL | libc::EADDRINUSE => ErrorClass::LocalPortExhausted,
            _ => return None,
        })
    }

    pub fn no_port_bind(sock: &socket2::Socket) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let on: libc::c_int = 1;
            // SAFETY: a valid socket and a c_int option of the right size.
            unsafe {
                libc::setsockopt(
                    sock.as_raw_fd(),
                    libc::IPPROTO_IP,
                    libc::IP_BIND_ADDRESS_NO_PORT,
                    (&on as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                );
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = sock;
    }
}

#[cfg(windows)]
mod imp {
    use barrage_metrics::ErrorClass;
    use windows_sys::Win32::Networking::WinSock as ws;

    pub const IN_PROGRESS: i32 = ws::WSAEWOULDBLOCK;
    pub const WIDEN_PORTS: &str =
        "netsh int ipv4 set dynamicport tcp start=10000 num=55535 (as Administrator)";

    /// Windows keeps its dynamic port range where only `netsh` shows it: its two numbers
    /// (start, count) whatever the language of the labels. Windows' default, 49152-65535,
    /// when netsh does not answer (as under wine).
    pub fn ephemeral_range() -> Option<(u16, u16)> {
        let out = std::process::Command::new("netsh")
            .args(["int", "ipv4", "show", "dynamicport", "tcp"])
            .stderr(std::process::Stdio::null())
            .output();
        let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        Some(super::netsh_range(&text.unwrap_or_default()).unwrap_or((49152, 65535)))
    }
    pub const ADDR_NOT_AVAILABLE: i32 = ws::WSAEADDRNOTAVAIL;

    /// Winsock's codes. Out of ephemeral ports shows as WSAENOBUFS or WSAEADDRINUSE on a
    /// connect (the dynamic port range, `netsh int ipv4 show dynamicport tcp`).
    pub fn class(code: i32) -> Option<ErrorClass> {
        Some(match code {
            ws::WSAECONNREFUSED => ErrorClass::Refused,
            ws::WSAETIMEDOUT => ErrorClass::ConnectTimeout,
            ws::WSAECONNRESET | ws::WSAECONNABORTED | ws::WSAESHUTDOWN => ErrorClass::Reset,
            ws::WSAEMFILE => ErrorClass::LocalFdExhausted,
            ws::WSAEADDRNOTAVAIL | ws::WSAEADDRINUSE | ws::WSAENOBUFS => {
                ErrorClass::LocalPortExhausted
            }
            _ => return None,
        })
    }

    pub fn no_port_bind(_sock: &socket2::Socket) {}
}

/// The range from `netsh int ipv4 show dynamicport tcp`: the numbers after the first two
/// colons are the start port and the number of ports.
#[cfg_attr(not(windows), allow(dead_code))]
fn netsh_range(text: &str) -> Option<(u16, u16)> {
    let mut nums = text
        .lines()
        .filter_map(|l| l.split_once(':')?.1.trim().parse::<u32>().ok());
    let (start, count) = (nums.next()?, nums.next()?);
    let end = (start + count).checked_sub(1)?;
    Some((
        u16::try_from(start).ok()?,
        u16::try_from(end.min(65535)).ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netsh_gives_the_range_in_any_language() {
        let en = "\nProtocol tcp Dynamic Port Range\n---------------------------------\n\
                  Start Port      : 49152\nNumber of Ports : 16384\n";
        assert_eq!(netsh_range(en), Some((49152, 65535)));
        let de = "Protokoll tcp Dynamischer Portbereich\n-----\nStartport      : 10000\n\
                  Anzahl Ports   : 55536\n";
        assert_eq!(netsh_range(de), Some((10000, 65535)));
        assert_eq!(netsh_range(""), None);
        assert_eq!(netsh_range("Start Port : 49152\n"), None);
    }

    #[test]
    fn the_named_codes_have_their_classes() {
        #[cfg(unix)]
        let table = [
            (libc::ECONNREFUSED, ErrorClass::Refused),
            (libc::ETIMEDOUT, ErrorClass::ConnectTimeout),
            (libc::ECONNRESET, ErrorClass::Reset),
            (libc::EPIPE, ErrorClass::Reset),
            (libc::EMFILE, ErrorClass::LocalFdExhausted),
            (libc::ENFILE, ErrorClass::LocalFdExhausted),
            (libc::EADDRNOTAVAIL, ErrorClass::LocalPortExhausted),
        ];
        #[cfg(windows)]
        let table = {
            use windows_sys::Win32::Networking::WinSock as ws;
            [
                (ws::WSAECONNREFUSED, ErrorClass::Refused),
                (ws::WSAETIMEDOUT, ErrorClass::ConnectTimeout),
                (ws::WSAECONNRESET, ErrorClass::Reset),
                (ws::WSAECONNABORTED, ErrorClass::Reset),
                (ws::WSAEMFILE, ErrorClass::LocalFdExhausted),
                (ws::WSAENOBUFS, ErrorClass::LocalPortExhausted),
                (ws::WSAEADDRNOTAVAIL, ErrorClass::LocalPortExhausted),
            ]
        };
        for (code, class) in table {
            assert_eq!(os_error_class(code), Some(class), "{code}");
        }
        assert_eq!(os_error_class(0), None);
        assert!(connect_in_progress(&io::Error::from_raw_os_error(
            imp::IN_PROGRESS
        )));
        assert!(addr_not_available(&io::Error::from_raw_os_error(
            imp::ADDR_NOT_AVAILABLE
        )));
    }
}
