//! Mapping of I/O errors to error classes.

use barrage_metrics::ErrorClass;
use std::io;

/// The class of an error from connect, read or write.
pub fn classify(e: &io::Error) -> ErrorClass {
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => ErrorClass::Refused,
        Some(libc::ETIMEDOUT) => ErrorClass::ConnectTimeout,
        Some(libc::ECONNRESET) | Some(libc::EPIPE) | Some(libc::ECONNABORTED) => ErrorClass::Reset,
        Some(libc::EMFILE) | Some(libc::ENFILE) => ErrorClass::LocalFdExhausted,
        Some(libc::EADDRNOTAVAIL) | Some(libc::EADDRINUSE) => ErrorClass::LocalPortExhausted,
        _ => match e.kind() {
            io::ErrorKind::ConnectionRefused => ErrorClass::Refused,
            io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe => ErrorClass::Reset,
            io::ErrorKind::TimedOut => ErrorClass::ConnectTimeout,
            _ => ErrorClass::Other,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_table() {
        let t = [
            (libc::ECONNREFUSED, ErrorClass::Refused),
            (libc::ETIMEDOUT, ErrorClass::ConnectTimeout),
            (libc::ECONNRESET, ErrorClass::Reset),
            (libc::EPIPE, ErrorClass::Reset),
            (libc::EMFILE, ErrorClass::LocalFdExhausted),
            (libc::ENFILE, ErrorClass::LocalFdExhausted),
            (libc::EADDRNOTAVAIL, ErrorClass::LocalPortExhausted),
            (libc::ENETUNREACH, ErrorClass::Other),
        ];
        for (errno, class) in t {
            assert_eq!(classify(&io::Error::from_raw_os_error(errno)), class);
        }
    }
}
