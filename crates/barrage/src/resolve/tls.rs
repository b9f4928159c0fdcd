//! TLS for every TLS target (`https://`, `h2`, `grpcs://`, `wss://`, `mqtts://`): the client
//! configuration (verification on unless `--insecure`; Mozilla's roots plus `--cacert`; the
//! name checked, the target's host or `--servername`; a client certificate for mutual TLS with
//! `--cert`/`--key`). Its pre-flight handshake, which stops a run whose target fails
//! verification or refuses the client's certificate before any load, is `probe/tls.rs`.
//!
//! Pinning: a `--cacert` certificate that is byte for byte the server's own certificate is
//! accepted even when it says CA:TRUE (what `openssl req -x509` makes by default, and what curl
//! accepts), instead of webpki's `CaUsedAsEndEntity`. Everything else is still checked: the host
//! name, the validity period (webpki checks it before the CA flag, and a test pins that order)
//! and the handshake signature by the certificate's key; a certificate that is not pinned goes
//! through the full chain verification unchanged.
//!
//! The client's key is read here and kept in the TLS configuration only: no output names more
//! of it than its file's path.

use crate::probe::tls::is_ca_used_as_end_entity;
use crate::resolve::cli::TlsArgs;
use crate::resolve::url::Url;
use crate::usage::Usage;
use barrage_engine::TlsPlan;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::Path;
use std::sync::Arc;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client's TLS: verification and identity as `tls` asks; for `https://`, ALPN offering
/// what `version` allows (`h2`, `http/1.1`, or both, `h2` first).
pub fn plan(
    url: &Url,
    tls: &TlsArgs,
    version: barrage_engine::HttpVersion,
) -> Result<TlsPlan, Usage> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Usage::new("TLS setup", e))?;
    let verifier: Arc<dyn ServerCertVerifier> = if tls.insecure {
        Arc::new(NoVerification(provider()))
    } else {
        verifier(tls.cacert.as_deref())?
    };
    let wants = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match identity(tls)? {
        Some((certs, key, key_file)) => wants.with_client_auth_cert(certs, key).map_err(|e| {
            Usage::value(
                if tls.key.is_some() { "--key" } else { "--cert" },
                key_file.display(),
                format!("the key does not fit the certificate in --cert: {e}"),
            )
        })?,
        None => wants.with_no_client_auth(),
    };
    if url.scheme.is(&barrage_scenario::protocol::GRPC) {
        config.alpn_protocols = vec![b"h2".to_vec()];
    } else if url.scheme.is(&barrage_scenario::protocol::HTTP) {
        use barrage_engine::HttpVersion as V;
        config.alpn_protocols = match version {
            V::H1 => vec![b"http/1.1".to_vec()],
            V::H2 => vec![b"h2".to_vec()],
            V::Auto => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        };
    }
    let server_name = match &tls.servername {
        Some(n) => ServerName::try_from(n.clone()).map_err(|_| {
            Usage::value(
                "--servername",
                n,
                "not a valid TLS server name (a DNS name or an IP address)",
            )
        })?,
        None => ServerName::try_from(url.host.clone()).map_err(|_| {
            Usage::says(
                "target",
                format!(
                    "'{}': '{}' is not a valid TLS server name",
                    url.host, url.host
                ),
            )
        })?,
    };
    Ok(TlsPlan {
        config: Arc::new(config),
        server_name,
    })
}

/// The usual verification against Mozilla's roots and the `--cacert` certificates, which are
/// also pinned ([`PinningVerifier`]).
fn verifier(cacert: Option<&Path>) -> Result<Arc<dyn ServerCertVerifier>, Usage> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let mut pinned = Vec::new();
    if let Some(path) = cacert {
        let certs = certificates(path, "--cacert")?;
        for c in certs {
            roots
                .add(c.clone())
                .map_err(|e| Usage::value("--cacert", path.display(), e))?;
            pinned.push(c);
        }
    }
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .map_err(|e| Usage::new("TLS setup", e))?;
    Ok(Arc::new(PinningVerifier { webpki, pinned }))
}

/// The PEM certificates in `path` (at least one), or a line naming `flag` and the file.
fn certificates(path: &Path, flag: &str) -> Result<Vec<CertificateDer<'static>>, Usage> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| Usage::value(flag, path.display(), e))?
        .collect::<Result<_, _>>()
        .map_err(|e| Usage::value(flag, path.display(), e))?;
    if certs.is_empty() {
        return Err(Usage::value(
            flag,
            path.display(),
            "no PEM certificate (BEGIN CERTIFICATE) in the file",
        ));
    }
    Ok(certs)
}

/// The client's certificate chain and key for mutual TLS (`--cert`, `--key`; the key may be in
/// the `--cert` file), and the file the key came from; `None` without `--cert`.
#[allow(clippy::type_complexity)]
fn identity(
    tls: &TlsArgs,
) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>, &Path)>, Usage> {
    let Some(cert) = tls.cert.as_deref() else {
        return Ok(None);
    };
    let certs = certificates(cert, "--cert")?;
    let (file, flag) = match tls.key.as_deref() {
        Some(k) => (k, "--key"),
        None => (cert, "--cert"),
    };
    let key = PrivateKeyDer::from_pem_file(file).map_err(|e| {
        let why = match e {
            rustls::pki_types::pem::Error::NoItemsFound if tls.key.is_none() => {
                "no private key in the file: pass it with --key FILE".to_string()
            }
            rustls::pki_types::pem::Error::NoItemsFound => {
                "no PEM private key (BEGIN PRIVATE KEY, RSA or EC) in the file".to_string()
            }
            e => e.to_string(),
        };
        Usage::value(flag, file.display(), why)
    })?;
    Ok(Some((certs, key, file)))
}

/// The usual verification, plus: a server certificate that is exactly one of the `--cacert`
/// certificates is accepted although it is a CA certificate, once its name is checked.
#[derive(Debug)]
struct PinningVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    /// The `--cacert` certificates (DER), also in the root store.
    pinned: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for PinningVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let err =
            match self
                .webpki
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
            {
                Ok(verified) => return Ok(verified),
                Err(err) => err,
            };
        // webpki reports CaUsedAsEndEntity only after the validity period passed, so an
        // expired or not-yet-valid pinned certificate never gets here.
        let pinned = self
            .pinned
            .iter()
            .any(|c| c.as_ref() == end_entity.as_ref());
        if !pinned || !is_ca_used_as_end_entity(&err) {
            return Err(err);
        }
        let parsed = ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_name(&parsed, server_name)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// `--insecure`: accept any certificate, still check the handshake's signatures.
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
