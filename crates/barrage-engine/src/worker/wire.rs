//! Moving bytes between a connection and its socket: plain writes with the short-write
//! queue, TLS records through rustls, and the classes of TLS failures.

use super::*;

/// Write `data`, or queue it behind bytes already waiting; a short write queues the rest.
/// Returns the bytes accepted now (under TLS: taken into the session).
pub(super) fn write_to<S>(c: &mut Conn<S>, rec: &mut Recorder, data: &[u8]) -> io::Result<usize> {
    if let Some(tls) = c.tls.as_mut() {
        tls.writer().write_all(data)?;
        flush_tls(c, rec)?;
        return Ok(data.len());
    }
    if c.pending_write() {
        c.wbuf.extend_from_slice(data);
        return Ok(0);
    }
    let Some(s) = c.stream.as_mut() else {
        return Ok(0);
    };
    loop {
        match s.write(data) {
            Ok(m) => {
                if m > 0 {
                    rec.c.writes += 1;
                    rec.c.bytes_written += m as u64;
                }
                if m < data.len() {
                    c.wbuf.clear();
                    c.wpos = 0;
                    c.wbuf.extend_from_slice(&data[m..]);
                }
                return Ok(m);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                c.wbuf.clear();
                c.wpos = 0;
                c.wbuf.extend_from_slice(data);
                return Ok(0);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Move TLS records from the session to the socket until it would block.
pub(super) fn flush_tls<S>(c: &mut Conn<S>, rec: &mut Recorder) -> io::Result<()> {
    let (Some(tls), Some(s)) = (c.tls.as_mut(), c.stream.as_mut()) else {
        return Ok(());
    };
    while tls.wants_write() {
        match tls.write_tls(s) {
            Ok(0) => break,
            Ok(m) => {
                rec.c.writes += 1;
                rec.c.bytes_written += m as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The error class of a TLS failure.
pub fn classify_tls(e: &rustls::Error) -> ErrorClass {
    use rustls::CertificateError as C;
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            C::Expired | C::NotValidYet => ErrorClass::TlsExpired,
            C::UnknownIssuer => ErrorClass::TlsUnknownCa,
            C::NotValidForName => ErrorClass::TlsBadName,
            _ => match format!("{c:?}") {
                s if s.starts_with("Expired") || s.starts_with("NotValidYet") => {
                    ErrorClass::TlsExpired
                }
                s if s.starts_with("NotValidForName") => ErrorClass::TlsBadName,
                _ => ErrorClass::TlsOther,
            },
        },
        _ => ErrorClass::TlsOther,
    }
}
