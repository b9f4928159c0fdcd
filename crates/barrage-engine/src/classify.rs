//! Mapping of I/O errors to error classes.

use barrage_metrics::ErrorClass;
use std::io;

/// The class of an error from connect, read or write.
pub fn classify(e: &io::Error) -> ErrorClass {
    if let Some(class) = e.raw_os_error().and_then(crate::os::net::os_error_class) {
        return class;
    }
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorClass::Refused,
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => ErrorClass::Reset,
        io::ErrorKind::TimedOut => ErrorClass::ConnectTimeout,
        _ => ErrorClass::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes themselves are `os::net`'s table; here, what is left to the error's kind.
    #[test]
    fn kinds_without_a_named_code() {
        let t = [
            (io::ErrorKind::ConnectionRefused, ErrorClass::Refused),
            (io::ErrorKind::ConnectionReset, ErrorClass::Reset),
            (io::ErrorKind::BrokenPipe, ErrorClass::Reset),
            (io::ErrorKind::TimedOut, ErrorClass::ConnectTimeout),
            (io::ErrorKind::Other, ErrorClass::Other),
        ];
        for (kind, class) in t {
            assert_eq!(classify(&io::Error::from(kind)), class);
        }
        #[cfg(unix)]
        assert_eq!(
            classify(&io::Error::from_raw_os_error(libc::ENETUNREACH)),
            ErrorClass::Other
        );
    }
}
