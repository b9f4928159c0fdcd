//! The pre-flight TLS handshake ([`preflight`]): one blocking handshake before the load, so
//! that a target whose certificate fails verification, which refuses the protocols offered by
//! ALPN or the client's certificate (mutual TLS), or which answers in plain text stops the run
//! with the reason, before any load.

use barrage_engine::TlsPlan;
use rustls::pki_types::ServerName;
use rustls::{CertificateError, ClientConfig};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

/// One blocking handshake before the load. `Ok(())` also when the target cannot be reached
/// (the run itself reports that); `Err` with the verification failure otherwise.
///
/// A server that answers the hello in plain text (an HTTP server on an `https://` target's
/// port) is named as such: `plain` is the scheme to use instead (`http`, `ws`).
///
/// Through a proxy (`via`: its CONNECT request), `addr` is the proxy's and the handshake goes
/// through its tunnel; a proxy that refuses the tunnel is named as such.
pub fn preflight(
    addr: std::net::SocketAddr,
    via: Option<&[u8]>,
    tls: &TlsPlan,
    plain: &str,
    timeout: Duration,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<(), String> {
    let offered = &tls.config.alpn_protocols;
    let to = Dial { addr, via };
    match handshake(to, &tls.config, &tls.server_name, plain, timeout, stop)? {
        Shook::Done(alpn) if offered.len() == 1 && alpn.as_ref() != Some(&offered[0]) => {
            Err(alpn_refused(offered, plain))
        }
        Shook::Dropped if offered.len() == 1 => {
            // Some servers drop a client whose ALPN they refuse without a word: offer both
            // versions once, and if that goes through, it was the protocol.
            let mut both = (*tls.config).clone();
            both.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            let both = Arc::new(both);
            match handshake(to, &both, &tls.server_name, plain, timeout, stop) {
                Ok(Shook::Done(Some(p))) if p != offered[0] => Err(alpn_refused(offered, plain)),
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// How a pre-flight handshake ended, when it did not fail with a reason to give.
enum Shook {
    /// Done: the protocol the server chose by ALPN.
    Done(Option<Vec<u8>>),
    /// The server closed or reset the connection during the handshake.
    Dropped,
    /// Unreachable, silent, or stopped: the run will see it.
    Unknown,
}

/// Where the handshake goes: an address, or a proxy's tunnel (its CONNECT request).
#[derive(Clone, Copy)]
struct Dial<'a> {
    addr: std::net::SocketAddr,
    via: Option<&'a [u8]>,
}

fn handshake(
    to: Dial,
    config: &Arc<ClientConfig>,
    server_name: &ServerName<'static>,
    plain: &str,
    timeout: Duration,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Shook, String> {
    use std::io::ErrorKind;
    use std::sync::atomic::Ordering;
    // Waits in slices so that a stop signal is seen within a slice, whatever the server does.
    const SLICE: Duration = Duration::from_millis(100);
    let deadline = std::time::Instant::now() + timeout;
    let Ok(mut sock) = TcpStream::connect_timeout(&to.addr, timeout.min(Duration::from_secs(1)))
    else {
        return Ok(Shook::Unknown); // the run will classify it
    };
    let _ = sock.set_read_timeout(Some(SLICE));
    let _ = sock.set_write_timeout(Some(SLICE));
    if let Some(connect) = to.via {
        if !tunnel(&mut sock, connect, deadline, stop)? {
            return Ok(Shook::Unknown);
        }
    }
    let mut conn = rustls::ClientConnection::new(config.clone(), server_name.clone())
        .map_err(|e| e.to_string())?;
    let mut sock = Peek::new(sock);
    while conn.is_handshaking() {
        match conn.complete_io(&mut sock) {
            Ok((0, 0)) if conn.is_handshaking() => return Ok(Shook::Dropped),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if stop.load(Ordering::Relaxed) || std::time::Instant::now() >= deadline {
                    return Ok(Shook::Unknown); // stopped, or a silent server
                }
            }
            Err(e) => {
                let inner = e
                    .get_ref()
                    .and_then(|i| i.downcast_ref::<rustls::Error>())
                    .cloned();
                return match inner {
                    Some(rustls::Error::AlertReceived(
                        rustls::AlertDescription::NoApplicationProtocol,
                    )) => Err(alpn_refused(&config.alpn_protocols, plain)),
                    Some(te) => Err(match plaintext(sock.first()) {
                        Some(said) => format!(
                            "the server answered the TLS hello in plain text ({said}), not TLS: \
                             use {plain}://, or the server's TLS port"
                        ),
                        None => describe(&te),
                    }),
                    None if matches!(
                        e.kind(),
                        ErrorKind::UnexpectedEof
                            | ErrorKind::ConnectionReset
                            | ErrorKind::ConnectionAborted
                    ) =>
                    {
                        Ok(Shook::Dropped)
                    }
                    None => Ok(Shook::Unknown), // a network problem: the run will classify it
                };
            }
        }
    }
    // TLS 1.3: a server that wants a client certificate, or refuses the one sent, says so
    // only after the client's last flight; read its next records (a session ticket, or that
    // alert) for a slice.
    while conn.wants_write() {
        if conn.write_tls(&mut sock).is_err() {
            break;
        }
    }
    if let Ok(n) = conn.read_tls(&mut sock) {
        if n > 0 {
            if let Err(e @ rustls::Error::AlertReceived(_)) = conn.process_new_packets() {
                return Err(describe(&e));
            }
        }
    }
    let alpn = conn.alpn_protocol().map(<[u8]>::to_vec);
    conn.send_close_notify();
    let _ = conn.complete_io(&mut sock);
    let _ = sock.flush();
    let _ = sock.read(&mut [0u8; 1]);
    Ok(Shook::Done(alpn))
}

/// Asks the proxy on `sock` for its tunnel: `Ok(true)` once open, `Ok(false)` when it said
/// nothing in time (or the run was stopped), `Err` when it refused, with its status line.
fn tunnel(
    sock: &mut TcpStream,
    connect: &[u8],
    deadline: std::time::Instant,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<bool, String> {
    use std::io::ErrorKind;
    if sock.write_all(connect).is_err() {
        return Ok(false);
    }
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    // A byte at a time: nothing past the head may be taken from what TLS reads next.
    loop {
        match sock.read(&mut byte) {
            Ok(0) => return Ok(false),
            Ok(_) => head.push(byte[0]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if stop.load(std::sync::atomic::Ordering::Relaxed)
                    || std::time::Instant::now() >= deadline
                {
                    return Ok(false);
                }
            }
            Err(_) => return Ok(false),
        }
        if head.ends_with(b"\r\n\r\n") {
            break;
        }
        if head.len() > 16 * 1024 {
            return Err("the proxy's answer to CONNECT has no end".into());
        }
    }
    let line = head.split(|b| *b == b'\r').next().unwrap_or(&[]);
    let line = String::from_utf8_lossy(line).into_owned();
    let code = line.split(' ').nth(1).unwrap_or("");
    if line.starts_with("HTTP/1.") && code.starts_with('2') {
        return Ok(true);
    }
    let hint = if code == "407" {
        ": it wants credentials, --proxy http://USER:PASSWORD@HOST:PORT"
    } else {
        ""
    };
    Err(format!("the proxy refused the tunnel ({line}){hint}"))
}

/// The server took none of the protocols offered by ALPN: which flag asked for them.
fn alpn_refused(offered: &[Vec<u8>], plain: &str) -> String {
    let names: Vec<String> = offered
        .iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let fix = match names.first().map(String::as_str) {
        Some("h2") if plain == "grpc" => {
            "; gRPC needs HTTP/2, which it does not speak over TLS here"
        }
        Some("h2") if names.len() == 1 => "; it does not speak HTTP/2 over TLS: drop --http2",
        Some("http/1.1") if names.len() == 1 => "; it speaks only HTTP/2 here: drop --http1.1",
        _ => "",
    };
    format!(
        "the server agreed to none of the protocols offered by ALPN ({}){fix}",
        names.join(", ")
    )
}

/// A socket that keeps the first bytes the server sent, to say what a server that does not
/// speak TLS answered.
struct Peek {
    sock: TcpStream,
    first: [u8; 64],
    len: usize,
}

impl Peek {
    fn new(sock: TcpStream) -> Self {
        Peek {
            sock,
            first: [0; 64],
            len: 0,
        }
    }

    fn first(&self) -> &[u8] {
        &self.first[..self.len]
    }
}

impl Read for Peek {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.sock.read(buf)?;
        let keep = n.min(self.first.len() - self.len);
        self.first[self.len..self.len + keep].copy_from_slice(&buf[..keep]);
        self.len += keep;
        Ok(n)
    }
}

impl Write for Peek {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.sock.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.sock.flush()
    }
}

/// What a server answered in plain text instead of a TLS record (its first line, as
/// `'HTTP/1.1 400 Bad Request'`), or `None` when its first bytes are not printable text (a TLS
/// record starts with a byte below 0x20).
fn plaintext(first: &[u8]) -> Option<String> {
    let line = first.split(|b| *b == b'\r' || *b == b'\n').next()?;
    let text = line.len() >= 3 && line.iter().all(|b| (0x20..0x7f).contains(b));
    text.then(|| format!("'{}'", String::from_utf8_lossy(line)))
}

fn describe(e: &rustls::Error) -> String {
    use rustls::AlertDescription as A;
    match e {
        rustls::Error::AlertReceived(A::CertificateRequired) => {
            return format!(
                "the server asks for a client certificate ({e}); pass --cert FILE (and --key \
                 FILE) for mutual TLS"
            )
        }
        rustls::Error::AlertReceived(
            A::BadCertificate
            | A::UnsupportedCertificate
            | A::CertificateRevoked
            | A::CertificateExpired
            | A::CertificateUnknown
            | A::UnknownCA
            | A::AccessDenied,
        ) => {
            return format!(
                "the server refused the client certificate ({e}); check that --cert is valid \
                 and signed by a CA the server trusts"
            )
        }
        _ => {}
    }
    let class = barrage_engine::classify_tls(e);
    let (what, fix) = match class.as_str() {
        "tls_expired" => (
            "the certificate has expired or is not valid yet",
            "renew it, or pass --insecure to skip verification",
        ),
        "tls_unknown_ca" => (
            "the certificate is not signed by a trusted CA",
            "pass --cacert FILE to trust its CA, or --insecure to skip verification",
        ),
        "tls_bad_name" => (
            "the certificate is not valid for this host name",
            "use a host name the certificate lists, or --insecure to skip verification",
        ),
        _ if is_ca_used_as_end_entity(e) => (
            "the server presents a CA certificate as its own",
            "pass that very certificate with --cacert to pin it, or --insecure to skip verification",
        ),
        _ => (
            "the TLS handshake failed",
            "check the server's TLS setup, or pass --insecure to skip verification",
        ),
    };
    format!("{what} ({e}); {fix}")
}

/// rustls passes webpki's `CaUsedAsEndEntity` through as an opaque `Other` error, which holds
/// webpki's typed error.
pub(crate) fn is_ca_used_as_end_entity(err: &rustls::Error) -> bool {
    matches!(
        err,
        rustls::Error::InvalidCertificate(CertificateError::Other(other))
            if matches!(
                other.0.downcast_ref::<webpki::Error>(),
                Some(webpki::Error::CaUsedAsEndEntity)
            )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_text_answer_is_shown_by_its_first_line() {
        assert_eq!(
            plaintext(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n"),
            Some("'HTTP/1.1 400 Bad Request'".into())
        );
        assert_eq!(
            plaintext(b"-ERR unknown command\r\n"),
            Some("'-ERR unknown command'".into())
        );
        // A TLS record (an alert, a ServerHello) or too little to tell: no claim.
        assert_eq!(plaintext(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]), None);
        assert_eq!(plaintext(&[0x16, 0x03, 0x03]), None);
        assert_eq!(plaintext(b"OK"), None);
        assert_eq!(plaintext(b""), None);
    }
}
