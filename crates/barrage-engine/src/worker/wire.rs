//! Moving bytes between a connection and its socket: plain writes with the short-write
//! queue (TLS takes them through its [`Transport`](crate::transport::Transport)), and the
//! classes of TLS failures; the control answers a session keeps go out with a write.

use crate::conn::Conn;
use crate::session::{Owed, Session};
use barrage_metrics::{ErrorClass, Recorder};
use std::io::{self, Write};

/// Append the control answers `s` keeps in order (HTTP/2's, MQTT's: [`Owed::in_order`]) to
/// `out`, to go out with the next write; one that keeps only the latest (a WebSocket pong,
/// written when the socket drains) or none appends nothing.
pub(super) fn drain_in_order<S: Session>(s: &mut S, out: &mut Vec<u8>) {
    if let Some(o) = s.owed().filter(|o| o.in_order()) {
        o.drain(out);
    }
}

/// Write `data`, or queue it behind bytes already waiting; a short write queues the rest (on
/// Windows only once a write said `WouldBlock`: `os::net::SHORT_WRITE_FILLS`).
/// Returns the bytes accepted now (under TLS: taken into the session).
pub(super) fn write_to<S>(c: &mut Conn<S>, rec: &mut Recorder, data: &[u8]) -> io::Result<usize> {
    if c.transport.send(c.stream.as_mut(), rec, data)? {
        return Ok(data.len());
    }
    if c.pending_write() {
        c.wbuf.extend_from_slice(data);
        return Ok(0);
    }
    let Some(s) = c.stream.as_mut() else {
        return Ok(0);
    };
    let mut sent = 0;
    loop {
        match s.write(&data[sent..]) {
            Ok(m) => {
                if m > 0 {
                    rec.counters.writes += 1;
                    rec.counters.bytes_written += m as u64;
                }
                sent += m;
                if sent < data.len() && m > 0 && !crate::os::net::SHORT_WRITE_FILLS {
                    continue;
                }
                if sent < data.len() {
                    c.wbuf.clear();
                    c.wpos = 0;
                    c.wbuf.extend_from_slice(&data[sent..]);
                }
                return Ok(sent);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                c.wbuf.clear();
                c.wpos = 0;
                c.wbuf.extend_from_slice(&data[sent..]);
                return Ok(sent);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The error class of a TLS failure, from rustls' typed error (never its text). The
/// `*Context` variants are the same failures with details (rustls 0.23 reports those); an
/// expired revocation list counts as expired, as its name always did here.
pub fn classify_tls(e: &rustls::Error) -> ErrorClass {
    use rustls::CertificateError as C;
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            C::Expired
            | C::ExpiredContext { .. }
            | C::NotValidYet
            | C::NotValidYetContext { .. }
            | C::ExpiredRevocationList
            | C::ExpiredRevocationListContext { .. } => ErrorClass::TlsExpired,
            C::UnknownIssuer => ErrorClass::TlsUnknownCa,
            C::NotValidForName | C::NotValidForNameContext { .. } => ErrorClass::TlsBadName,
            _ => ErrorClass::TlsOther,
        },
        _ => ErrorClass::TlsOther,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::{ServerName, UnixTime};
    use rustls::CertificateError as C;

    /// Each class comes from the typed error, the `*Context` variants rustls 0.23 reports
    /// included (they once fell through to a match on their Debug text).
    #[test]
    fn tls_failures_are_classified_from_rustls_typed_errors() {
        let t = UnixTime::since_unix_epoch(std::time::Duration::from_secs(1));
        let name = ServerName::try_from("example.com").unwrap();
        let cases = [
            (C::Expired, ErrorClass::TlsExpired),
            (
                C::ExpiredContext {
                    time: t,
                    not_after: t,
                },
                ErrorClass::TlsExpired,
            ),
            (C::NotValidYet, ErrorClass::TlsExpired),
            (
                C::NotValidYetContext {
                    time: t,
                    not_before: t,
                },
                ErrorClass::TlsExpired,
            ),
            (C::ExpiredRevocationList, ErrorClass::TlsExpired),
            (C::UnknownIssuer, ErrorClass::TlsUnknownCa),
            (C::NotValidForName, ErrorClass::TlsBadName),
            (
                C::NotValidForNameContext {
                    expected: name,
                    presented: vec!["other.example".into()],
                },
                ErrorClass::TlsBadName,
            ),
            (C::BadSignature, ErrorClass::TlsOther),
            (C::Revoked, ErrorClass::TlsOther),
        ];
        for (c, want) in cases {
            let e = rustls::Error::InvalidCertificate(c.clone());
            assert_eq!(classify_tls(&e), want, "{c:?}");
        }
        assert_eq!(
            classify_tls(&rustls::Error::DecryptError),
            ErrorClass::TlsOther
        );
    }
}
