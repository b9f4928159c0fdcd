//! The http server over TLS: a self-signed certificate made by rcgen, a rustls client, the same
//! routes; and errors that name the file when the certificate or key is unusable.

use crate::common::http_client::{expected_body, read_response};
use crate::common::{self, connect, wait_for};
use barrage_servers::http::{self, HttpConfig, TlsFiles};
use barrage_servers::ServerError;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use std::io::{BufReader, Read, Write};
use std::path::Path;
use std::sync::Arc;

/// Writes a fresh self-signed certificate for `localhost` and its key into `dir`; returns the
/// files and the certificate (DER) for the client's trust store.
fn self_signed(dir: &Path) -> (TlsFiles, Vec<u8>) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
        .expect("generate a certificate");
    let files = TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
        client_ca: None,
    };
    std::fs::write(&files.cert, certified.cert.pem()).expect("write cert");
    std::fs::write(&files.key, certified.key_pair.serialize_pem()).expect("write key");
    (files, certified.cert.der().to_vec())
}

fn client_config(cert_der: Vec<u8>) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(cert_der.into()).expect("trust the certificate");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

fn tls_config(files: TlsFiles) -> HttpConfig {
    HttpConfig {
        listen: "127.0.0.1:0".parse().expect("valid address"),
        threads: 2,
        tls: Some(files),
        ..HttpConfig::default()
    }
}

#[test]
fn routes_over_tls_with_keep_alive_and_pipelining() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (files, cert) = self_signed(dir.path());
    let server = http::start(tls_config(files)).expect("https server starts");
    let config = client_config(cert);

    let name = ServerName::try_from("localhost").expect("server name");
    let tls = ClientConnection::new(config.clone(), name.clone()).expect("client session");
    let mut stream = BufReader::new(StreamOwned::new(tls, connect(server.local_addr())));
    let send = |stream: &mut BufReader<StreamOwned<ClientConnection, _>>, raw: &str| {
        stream.get_mut().write_all(raw.as_bytes()).expect("send");
        stream.get_mut().flush().expect("flush");
    };

    send(&mut stream, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let hello = read_response(&mut stream, false);
    assert_eq!(
        (hello.status, &hello.body[..]),
        (200, &b"hello from barrage\n"[..])
    );
    send(
        &mut stream,
        "GET /bytes/1048576 HTTP/1.1\r\n\r\nGET /chunked/10000 HTTP/1.1\r\n\r\n\
         HEAD /status/500 HTTP/1.1\r\n\r\nGET /status/204 HTTP/1.1\r\n\r\n",
    );
    let mib = read_response(&mut stream, false);
    assert!(
        mib.body == expected_body(1 << 20),
        "/bytes over TLS differs"
    );
    let chunked = read_response(&mut stream, false);
    assert!(chunked.chunked && chunked.body == expected_body(10_000));
    assert_eq!(read_response(&mut stream, true).status, 500);
    assert_eq!(read_response(&mut stream, false).status, 204);

    // Connection: close ends with close_notify and EOF, not an error.
    send(&mut stream, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(read_response(&mut stream, false).status, 200);
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).expect("clean TLS close");
    assert!(rest.is_empty());

    // A second session on another connection.
    let tls = ClientConnection::new(config, name).expect("client session");
    let mut again = BufReader::new(StreamOwned::new(tls, connect(server.local_addr())));
    send(&mut again, "GET /status/404 HTTP/1.1\r\n\r\n");
    assert_eq!(read_response(&mut again, false).status, 404);

    let http = server.stats().http.expect("http stats");
    assert_eq!(http.requests, 7);
    assert_eq!(http.tls_handshakes, 2);
    assert_eq!((http.responses_4xx, http.responses_5xx), (1, 1));
    assert_eq!(http.tls_errors, 0);
}

#[test]
fn plaintext_to_the_tls_port_is_dropped_and_counted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (files, _) = self_signed(dir.path());
    let server = http::start(tls_config(files)).expect("https server starts");
    let mut stream = connect(server.local_addr());
    stream
        .write_all(b"GET / HTTP/1.1\r\n\r\n")
        .expect("send plaintext");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer); // an alert, then the close (or a reset)
    assert!(!answer.starts_with(b"HTTP"), "answered plaintext over TLS");
    let stats = wait_for(&server, |s| s.connections_open == 0);
    let http = stats.http.expect("http stats");
    assert_eq!((http.tls_errors, http.requests), (1, 0));
}

#[test]
fn unusable_tls_files_are_errors_that_name_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (files, _) = self_signed(dir.path());
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not pem at all\n").expect("write");
    let missing = dir.path().join("missing.pem");
    let other_key = dir.path().join("other-key.pem");
    let other = rcgen::generate_simple_self_signed(vec!["x".to_owned()]).expect("cert");
    std::fs::write(&other_key, other.key_pair.serialize_pem()).expect("write");

    let cases = [
        (missing.clone(), files.key.clone(), &missing),
        (garbage.clone(), files.key.clone(), &garbage),
        (files.cert.clone(), garbage.clone(), &garbage),
        (files.key.clone(), files.key.clone(), &files.key),
        (files.cert.clone(), other_key.clone(), &other_key),
    ];
    for (cert, key, named) in cases {
        let err = http::start(tls_config(TlsFiles {
            cert,
            key,
            client_ca: None,
        }))
        .expect_err("unusable TLS files");
        assert!(matches!(err, ServerError::Tls { .. }), "{err:?}");
        let message = err.to_string();
        assert!(message.contains(&named.display().to_string()), "{message}");
    }
}

// ---------------------------------------------------------------------------------------------
// The echo server over TLS (raw TCP in TLS records). barrage has no client scheme for it
// (no `tcps://`), so a rustls client tests it here.

fn tls_echo(files: TlsFiles, delay: Option<std::time::Duration>) -> barrage_servers::ServerHandle {
    barrage_servers::echo::start(barrage_servers::echo::EchoConfig {
        tls: Some(files),
        delay,
        ..common::config(2)
    })
    .expect("echo server over TLS starts")
}

#[test]
fn echo_over_tls_returns_every_byte_in_order_and_counts_handshakes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (files, cert) = self_signed(dir.path());
    for delay in [None, Some(std::time::Duration::from_millis(5))] {
        let server = tls_echo(files.clone(), delay);
        let config = client_config(cert.clone());
        let name = ServerName::try_from("localhost").expect("server name");
        let mut sent_total = 0;
        for conn in 0..2u8 {
            let tls = ClientConnection::new(config.clone(), name.clone()).expect("session");
            let mut stream = StreamOwned::new(tls, connect(server.local_addr()));
            // Chunk by chunk, each read back whole: larger than one TLS record and than
            // rustls' 64 KiB buffer, so partial writes and records split across reads happen.
            for (i, len) in [1usize, 1000, 16_384, 100_000, 7].into_iter().enumerate() {
                let data = common::pattern(len, conn * 10 + i as u8);
                stream.write_all(&data).expect("send");
                stream.flush().expect("flush");
                let mut back = vec![0; len];
                stream.read_exact(&mut back).expect("read the whole echo");
                assert!(
                    back == data,
                    "echo of {len} bytes differs (delay {delay:?})"
                );
                sent_total += len;
            }
            // A clean close: our close_notify, the server's, then EOF without error.
            stream.conn.send_close_notify();
            stream.flush().expect("send close_notify");
            let mut rest = Vec::new();
            stream.read_to_end(&mut rest).expect("clean TLS close");
            assert!(rest.is_empty());
        }
        let stats = wait_for(&server, |s| s.connections_open == 0);
        let tls = stats.tls.expect("tls part");
        assert_eq!((tls.handshakes, tls.errors), (2, 0), "{stats:?}");
        // On the wire: every plaintext byte plus record overhead, never less.
        assert!(stats.bytes_read > sent_total as u64, "{stats:?}");
        assert_eq!(stats.http, None);
    }
}

#[test]
fn plaintext_to_the_tls_echo_port_is_dropped_and_counted_not_echoed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (files, _) = self_signed(dir.path());
    let server = tls_echo(files, None);
    let mut stream = connect(server.local_addr());
    stream.write_all(b"hello\n").expect("send plaintext");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer); // an alert, then the close (or a reset)
    assert!(!answer.starts_with(b"hello"), "echoed plaintext over TLS");
    let stats = wait_for(&server, |s| s.connections_open == 0);
    let tls = stats.tls.expect("tls part");
    assert_eq!((tls.handshakes, tls.errors), (0, 1));
}

#[test]
fn unusable_tls_files_for_echo_and_ws_are_errors_that_name_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (files, _) = self_signed(dir.path());
    let missing = dir.path().join("missing.pem");
    let bad = TlsFiles {
        cert: missing.clone(),
        key: files.key,
        client_ca: None,
    };
    let echo = barrage_servers::echo::start(barrage_servers::echo::EchoConfig {
        tls: Some(bad.clone()),
        ..common::config(1)
    })
    .expect_err("missing certificate");
    let ws = barrage_servers::ws::start(barrage_servers::ws::WsConfig {
        listen: "127.0.0.1:0".parse().expect("valid address"),
        threads: 1,
        tls: Some(bad),
        ..barrage_servers::ws::WsConfig::default()
    })
    .expect_err("missing certificate");
    for err in [echo, ws] {
        assert!(matches!(err, ServerError::Tls { .. }), "{err:?}");
        assert!(
            err.to_string().contains(&missing.display().to_string()),
            "{err}"
        );
    }
}
