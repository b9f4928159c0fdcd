//! TLS for every reference server: loading a certificate chain and key from PEM files into a
//! rustls server config, and the [`Transport`] a connection reads and writes plaintext through
//! (the socket itself, or rustls on top of it). The echo, http and ws services all use it, so
//! `serve echo|http|ws --tls-cert --tls-key` share one implementation.
//!
//! Key decision: rustls is driven by hand on the non-blocking socket (`read_tls` /
//! `process_new_packets` / `write_tls`) through the same counted socket view as plain
//! connections, so the byte and syscall counters mean "on the wire" either way. rustls' own
//! buffer limit (64 KiB) bounds what a connection holds encrypted; a full buffer is
//! backpressure like a full socket.

use crate::sock::Sock;
use crate::stats::{CounterWriter, ServerError, Tls};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};
use std::io::{self, IoSlice, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// PEM files for TLS: the certificate chain (leaf first) and its private key (PKCS#8, PKCS#1
/// or SEC1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Mutual TLS: every client must present a certificate signed by a CA in this PEM file
    /// (`--tls-client-ca`); a handshake without one, or with another, fails and is counted.
    pub client_ca: Option<PathBuf>,
}

/// What one read gave.
pub(crate) enum Input {
    /// Plaintext in the thread buffer.
    Data(usize),
    /// The client is done sending.
    Eof,
    /// Bytes were read but no plaintext is ready yet (TLS records, handshake).
    Progress,
    /// Nothing to read now.
    Nothing,
}

/// Reads both files and builds the server config (ring provider, TLS 1.2 and 1.3, the given
/// ALPN protocols: `http/1.1` for http and ws, none for raw TCP). Every error names the file to
/// fix.
pub(crate) fn load(
    files: &TlsFiles,
    addr: SocketAddr,
    alpn: &[&[u8]],
) -> Result<Arc<ServerConfig>, ServerError> {
    let fail = |path: &Path, reason: String| ServerError::Tls {
        addr,
        path: path.to_owned(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|err| fail(&files.cert, pem_reason(err, "certificate")))?;
    if certs.is_empty() {
        return Err(fail(
            &files.cert,
            "no PEM certificate (BEGIN CERTIFICATE) in the file".to_owned(),
        ));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|err| fail(&files.key, pem_reason(err, "private key")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|err| fail(&files.cert, err.to_string()))?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            let cas = CertificateDer::pem_file_iter(ca)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|err| fail(ca, pem_reason(err, "certificate")))?;
            if cas.is_empty() {
                return Err(fail(
                    ca,
                    "no PEM certificate (BEGIN CERTIFICATE) in the file".to_owned(),
                ));
            }
            for c in cas {
                roots.add(c).map_err(|err| fail(ca, err.to_string()))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .map_err(|err| fail(ca, err.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(certs, key).map_err(|err| {
        fail(
            &files.key,
            format!(
                "does not fit the certificate in {}: {err}",
                files.cert.display()
            ),
        )
    })?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    // Check once here what every accepted connection will do, so that it cannot fail later.
    ServerConnection::new(Arc::new(config.clone()))
        .map_err(|err| fail(&files.cert, err.to_string()))?;
    Ok(Arc::new(config))
}

fn pem_reason(err: rustls::pki_types::pem::Error, what: &str) -> String {
    use rustls::pki_types::pem::Error;
    match err {
        Error::Io(err) => format!("cannot read it: {err}"),
        Error::NoItemsFound => format!("no PEM {what} in the file"),
        other => format!("not a valid PEM {what}: {other:?}"),
    }
}

/// A connection's byte stream: the socket itself, or rustls on top of it.
pub(crate) enum Transport {
    Plain(Sock),
    Tls {
        sock: Sock,
        tls: Box<ServerConnection>,
        /// The handshake completed and was counted.
        established: bool,
        /// Our close_notify is queued.
        closing: bool,
    },
}

impl Transport {
    /// A transport for a new connection: TLS when `config` is given.
    pub(crate) fn new(sock: Sock, config: Option<&Arc<ServerConfig>>) -> io::Result<Transport> {
        let Some(config) = config else {
            return Ok(Transport::Plain(sock));
        };
        let tls = ServerConnection::new(Arc::clone(config)).map_err(io::Error::other)?;
        Ok(Transport::Tls {
            sock,
            tls: Box::new(tls),
            established: false,
            closing: false,
        })
    }

    pub(crate) fn sock_mut(&mut self) -> &mut Sock {
        match self {
            Transport::Plain(sock) | Transport::Tls { sock, .. } => sock,
        }
    }

    /// Encrypted bytes are waiting for the socket.
    pub(crate) fn wants_write(&self) -> bool {
        match self {
            Transport::Plain(_) => false,
            Transport::Tls { tls, .. } => tls.wants_write(),
        }
    }

    /// One read step: plaintext into `buf`, or a socket read that may or may not yield some.
    pub(crate) fn read(&mut self, buf: &mut [u8], counters: &CounterWriter) -> io::Result<Input> {
        let (sock, tls, established) = match self {
            Transport::Plain(sock) => {
                return match sock.counted(counters).read(buf) {
                    Ok(0) => Ok(Input::Eof),
                    Ok(n) => Ok(Input::Data(n)),
                    Err(err) if err.kind() == io::ErrorKind::WouldBlock => Ok(Input::Nothing),
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => Ok(Input::Progress),
                    Err(err) => Err(err),
                };
            }
            Transport::Tls {
                sock,
                tls,
                established,
                ..
            } => (sock, tls, established),
        };
        // Plaintext already decrypted first: a record can hold more than `buf` takes.
        match tls.reader().read(buf) {
            Ok(0) => return Ok(Input::Eof), // close_notify
            Ok(n) => return Ok(Input::Data(n)),
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
            Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => return Ok(Input::Eof),
            Err(err) => return Err(err),
        }
        match tls.read_tls(&mut sock.counted(counters)) {
            Ok(0) => return Ok(Input::Eof),
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => return Ok(Input::Nothing),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => return Ok(Input::Progress),
            Err(err) => return Err(err),
        }
        if let Err(err) = tls.process_new_packets() {
            counters.tls(Tls::Errors);
            // Best effort: tell the client why (the alert rustls queued), then close.
            let _ = flush_tls(sock, tls, counters);
            return Err(io::Error::other(err));
        }
        if !*established && !tls.is_handshaking() {
            *established = true;
            counters.tls(Tls::Handshakes);
        }
        Ok(Input::Progress)
    }

    /// Takes plaintext from `iov` and sends what it can; returns how much was taken (0: the
    /// socket is full, a writable edge will come).
    pub(crate) fn write(
        &mut self,
        iov: &[IoSlice<'_>],
        counters: &CounterWriter,
    ) -> io::Result<usize> {
        match self {
            Transport::Plain(sock) => sock.counted(counters).write_vectored(iov),
            Transport::Tls { sock, tls, .. } => {
                let mut taken = tls.writer().write_vectored(iov)?;
                let drained = flush_tls(sock, tls, counters)?;
                if taken == 0 && drained {
                    // rustls' buffer was full and is empty now: it takes more.
                    taken = tls.writer().write_vectored(iov)?;
                    flush_tls(sock, tls, counters)?;
                }
                Ok(taken)
            }
        }
    }

    /// Sends whatever rustls has encrypted; true when nothing is left.
    pub(crate) fn flush(&mut self, counters: &CounterWriter) -> io::Result<bool> {
        match self {
            Transport::Plain(_) => Ok(true),
            Transport::Tls { sock, tls, .. } => flush_tls(sock, tls, counters),
        }
    }

    /// Queues a TLS close_notify the first time; true if it was queued now (flush, then
    /// come back), false when there is none to send (plain, or already sent).
    pub(crate) fn close_notify(&mut self) -> bool {
        match self {
            Transport::Tls { tls, closing, .. } if !*closing => {
                *closing = true;
                tls.send_close_notify();
                true
            }
            _ => false,
        }
    }
}

fn flush_tls(
    sock: &mut Sock,
    tls: &mut ServerConnection,
    counters: &CounterWriter,
) -> io::Result<bool> {
    while tls.wants_write() {
        match tls.write_tls(&mut sock.counted(counters)) {
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(true)
}
