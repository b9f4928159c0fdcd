//! Test certificates made with rcgen: a CA and server certificates signed by it (for the
//! right name, another name, or already expired), written as PEM files to a temporary
//! directory for `--cacert`, `serve http --tls-cert/--tls-key` and other TLS servers.

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use std::path::PathBuf;

struct Ca {
    cert: Certificate,
    key: KeyPair,
}

fn ca() -> Ca {
    named_ca("barrage test CA")
}

fn named_ca(name: &str) -> Ca {
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    p.distinguished_name.push(DnType::CommonName, name);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().expect("CA key");
    let cert = p.self_signed(&key).expect("self-sign the CA");
    Ca { cert, key }
}

#[derive(Clone, Copy, Debug)]
pub enum Validity {
    Now,
    Expired,
}

/// A server certificate for `names` (DNS names or IP addresses) signed by `ca`:
/// (certificate PEM, key PEM).
fn leaf(ca: &Ca, names: &[&str], validity: Validity) -> (String, String) {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let mut p = CertificateParams::new(names).expect("leaf params");
    p.distinguished_name
        .push(DnType::CommonName, "barrage test server");
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    if let Validity::Expired = validity {
        p.not_before = rcgen::date_time_ymd(2020, 1, 1);
        p.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let key = KeyPair::generate().expect("leaf key");
    let cert = p.signed_by(&key, &ca.cert, &ca.key).expect("sign the leaf");
    (cert.pem(), key.serialize_pem())
}

/// A temporary directory with `ca.pem`, `server.pem` and `server.key`.
pub struct Pki {
    pub dir: tempfile::TempDir,
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// A self-signed server certificate with CA:TRUE and the given SANs, as
/// `openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -addext subjectAltName=...`
/// makes it: `ca` and `cert` are the same file (pass it with `--cacert` to pin it).
pub fn self_signed(names: &[&str], validity: Validity) -> Pki {
    let dir = tempfile::tempdir().expect("tempdir");
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let mut p = CertificateParams::new(names).expect("self-signed params");
    p.distinguished_name.push(DnType::CommonName, "localhost");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    if let Validity::Expired = validity {
        p.not_before = rcgen::date_time_ymd(2020, 1, 1);
        p.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let key = KeyPair::generate().expect("key");
    let cert = p.self_signed(&key).expect("self-sign");
    let cert_path = dir.path().join("server.pem");
    let key_path = dir.path().join("server.key");
    std::fs::write(&cert_path, cert.pem()).expect("write PEM");
    std::fs::write(&key_path, key.serialize_pem()).expect("write PEM");
    Pki {
        ca: cert_path.clone(),
        cert: cert_path,
        key: key_path,
        dir,
    }
}

pub fn pki(names: &[&str], validity: Validity) -> Pki {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = self::ca();
    let (cert, key) = leaf(&ca, names, validity);
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("write PEM");
        p
    };
    let (ca, cert, key) = (
        write("ca.pem", &ca.cert.pem()),
        write("server.pem", &cert),
        write("server.key", &key),
    );
    Pki { dir, ca, cert, key }
}

/// Mutual TLS: a server PKI plus client certificates (`clientAuth`) signed by its CA, one
/// with its key in the same file, and a stranger's certificate signed by another CA.
pub struct Mtls {
    pub pki: Pki,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    /// The client's certificate and key in one PEM file (`--cert` alone).
    pub client_both: PathBuf,
    pub stranger_cert: PathBuf,
    pub stranger_key: PathBuf,
}

fn client_leaf(ca: &Ca) -> (String, String) {
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("client params");
    p.distinguished_name
        .push(DnType::CommonName, "barrage test client");
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    let key = KeyPair::generate().expect("client key");
    let cert = p
        .signed_by(&key, &ca.cert, &ca.key)
        .expect("sign the client");
    (cert.pem(), key.serialize_pem())
}

pub fn mtls(names: &[&str]) -> Mtls {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = self::ca();
    let (cert, key) = leaf(&ca, names, Validity::Now);
    let (ccert, ckey) = client_leaf(&ca);
    let (scert, skey) = client_leaf(&named_ca("another CA"));
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("write PEM");
        p
    };
    let (ca, cert, key) = (
        write("ca.pem", &ca.cert.pem()),
        write("server.pem", &cert),
        write("server.key", &key),
    );
    let client_cert = write("client.pem", &ccert);
    let client_key = write("client.key", &ckey);
    let client_both = write("client-both.pem", &format!("{ccert}{ckey}"));
    let stranger_cert = write("stranger.pem", &scert);
    let stranger_key = write("stranger.key", &skey);
    Mtls {
        pki: Pki { dir, ca, cert, key },
        client_cert,
        client_key,
        client_both,
        stranger_cert,
        stranger_key,
    }
}
