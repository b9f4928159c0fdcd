//! The echo server through its public API: echo correctness, exact counters, backpressure,
//! closes and resets, bind errors. Fault-knob timing lives in `tests/it/faults.rs`, thread
//! accounting in `tests/it/shutdown.rs`.

use crate::common::{self, config, connect, exchange, pattern, start, wait_for};
use barrage_servers::echo::{self, EchoConfig};
use barrage_servers::{ServerError, ServerStats};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener};
use std::thread;
use std::time::Duration;

#[test]
fn echoes_sizes_from_one_byte_to_one_mib() {
    let server = start(config(2));
    let mut stream = connect(server.local_addr());
    let sizes = [1, 7, 1000, 65_535, 65_536, 65_537, 300_000, 1 << 20];
    for (i, &size) in sizes.iter().enumerate() {
        let data = pattern(size, i as u8);
        assert!(
            exchange(&mut stream, &data) == data,
            "echo of {size} bytes differs"
        );
    }
    let total: u64 = sizes.iter().map(|&s| s as u64).sum();
    let stats = server.stats();
    assert_eq!(stats.bytes_read, total);
    assert_eq!(stats.bytes_written, total);
    assert!(stats.reads >= sizes.len() as u64 && stats.writes >= sizes.len() as u64);
    // One read of at most 64 KiB is echoed per write unless the kernel refused part of it.
    assert!(stats.reads >= total / (64 * 1024), "{stats:?}");
}

#[test]
fn two_hundred_concurrent_connections_reconcile_exactly() {
    const CLIENT_THREADS: usize = 8;
    const CONNS_PER_THREAD: usize = 25;
    const ROUNDS: usize = 20;
    let server = start(config(4));
    let addr = server.local_addr();
    let sent: u64 = thread::scope(|scope| {
        let clients: Vec<_> = (0..CLIENT_THREADS)
            .map(|t| {
                scope.spawn(move || {
                    let mut conns: Vec<_> = (0..CONNS_PER_THREAD).map(|_| connect(addr)).collect();
                    let mut sent = 0u64;
                    for round in 0..ROUNDS {
                        // All of this thread's connections have a request in flight at once.
                        let sizes: Vec<usize> = (0..conns.len())
                            .map(|c| 1 + (t * 7919 + c * 104_729 + round * 31) % 4096)
                            .collect();
                        for (conn, &size) in conns.iter_mut().zip(&sizes) {
                            conn.write_all(&pattern(size, round as u8)).expect("send");
                        }
                        for (conn, &size) in conns.iter_mut().zip(&sizes) {
                            let mut back = vec![0; size];
                            conn.read_exact(&mut back).expect("echo");
                            assert!(back == pattern(size, round as u8), "echo differs");
                            sent += size as u64;
                        }
                    }
                    (sent, conns)
                })
            })
            .collect();
        let mut all_conns = Vec::new();
        let mut sent = 0;
        for client in clients {
            let (n, conns) = client.join().expect("client thread");
            sent += n;
            all_conns.extend(conns);
        }
        // Every echo has been received: the counters must already say so, exactly.
        let stats = server.stats();
        assert_eq!(stats.connections_accepted, 200);
        assert_eq!(stats.connections_open, 200);
        assert_eq!(stats.bytes_read, sent);
        assert_eq!(stats.bytes_written, sent);
        sent
    });
    let stats = wait_for(&server, |s| s.connections_open == 0);
    let expected_reads_at_least = (CLIENT_THREADS * CONNS_PER_THREAD * ROUNDS) as u64;
    assert!(stats.reads >= expected_reads_at_least, "{stats:?}");
    assert!(stats.writes >= expected_reads_at_least, "{stats:?}");
    let last = server.shutdown();
    assert_eq!(
        last,
        ServerStats {
            connections_accepted: 200,
            connections_open: 0,
            bytes_read: sent,
            bytes_written: sent,
            ..stats
        }
    );
}

#[test]
fn port_zero_reports_the_real_port() {
    let server = start(config(3));
    assert_ne!(server.local_addr().port(), 0);
    assert!(server.local_addr().ip().is_loopback());
    let mut stream = connect(server.local_addr());
    assert_eq!(exchange(&mut stream, b"ping"), b"ping");
}

#[test]
fn bind_failure_names_the_address() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind a port to take");
    let addr = taken.local_addr().expect("its address");
    let err = echo::start(EchoConfig {
        listen: addr,
        ..config(2)
    })
    .expect_err("the port is taken");
    assert!(matches!(err, ServerError::InUse { .. }), "{err:?}");
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
    // Asked to share, it still cannot join a listener that does not share.
    let err = echo::start(EchoConfig {
        listen: addr,
        reuse_port: true,
        ..config(2)
    })
    .expect_err("the port is taken");
    assert!(matches!(err, ServerError::Bind { .. }), "{err:?}");
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
}

/// Issue 24: every listener had SO_REUSEPORT from the start, so a second server on a port the
/// first one listened on joined its group and silently took part of its connections.
#[test]
fn a_second_server_on_a_listening_port_is_refused_unless_it_asks_to_share() {
    let first = start(config(2));
    let addr = first.local_addr();
    let err = echo::start(EchoConfig {
        listen: addr,
        ..config(1)
    })
    .expect_err("the port has a server");
    assert!(
        matches!(err, ServerError::InUse { addr: a } if a == addr),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("another server listens on {addr} already")
    );
    let err = barrage_servers::chat::start(barrage_servers::chat::ChatConfig {
        listen: addr,
        ..Default::default()
    })
    .expect_err("the port has a server");
    assert!(matches!(err, ServerError::InUse { .. }), "{err:?}");
    // Asked to share, it joins: between them the two servers accept every connection.
    let second = echo::start(EchoConfig {
        listen: addr,
        reuse_port: true,
        ..config(1)
    })
    .expect("sharing the port was asked for");
    let conns: Vec<_> = (0..64).map(|_| connect(addr)).collect();
    let deadline = std::time::Instant::now() + common::IO_TIMEOUT;
    let accepted = || first.stats().connections_accepted + second.stats().connections_accepted;
    while accepted() < 64 && std::time::Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(accepted(), 64);
    drop(conns);
}

#[test]
fn zero_threads_is_a_config_error() {
    let err = echo::start(config(0)).expect_err("zero threads");
    assert!(matches!(err, ServerError::Config { .. }), "{err:?}");
    assert!(err.to_string().contains("threads"), "{err}");
}

#[test]
fn slow_reader_is_held_back_not_buffered() {
    const TOTAL: usize = 64 << 20;
    let server = start(config(1));
    let mut stream = connect(server.local_addr());
    let mut writer = stream.try_clone().expect("clone");
    let data = pattern(TOTAL, 3);
    thread::scope(|scope| {
        let sending = scope.spawn(|| writer.write_all(&data));
        // Not reading: once the socket buffers are full the server must stop reading too,
        // instead of holding what it cannot write.
        thread::sleep(Duration::from_millis(300));
        let before = server.stats();
        thread::sleep(Duration::from_millis(200));
        let after = server.stats();
        assert_eq!(
            before.bytes_read, after.bytes_read,
            "still reading: {after:?}"
        );
        assert!(
            after.bytes_read < TOTAL as u64 / 2,
            "buffered too much: {after:?}"
        );
        assert!(
            after.bytes_read - after.bytes_written <= 64 * 1024,
            "{after:?}"
        );
        let mut back = vec![0; TOTAL];
        stream.read_exact(&mut back).expect("everything comes back");
        sending.join().expect("writer").expect("write all");
        assert!(back == data, "echo differs");
    });
    let stats = server.stats();
    assert_eq!(
        (stats.bytes_read, stats.bytes_written),
        (TOTAL as u64, TOTAL as u64)
    );
}

#[test]
fn reset_connections_are_dropped_and_the_server_keeps_serving() {
    let server = start(config(2));
    for _ in 0..20 {
        let stream = connect(server.local_addr());
        (&stream).write_all(&pattern(10_000, 1)).expect("send");
        // Linger 0: close sends RST instead of FIN.
        socket2::SockRef::from(&stream)
            .set_linger(Some(Duration::ZERO))
            .expect("linger 0");
        drop(stream);
    }
    wait_for(&server, |s| {
        s.connections_accepted == 20 && s.connections_open == 0
    });
    let mut stream = connect(server.local_addr());
    assert_eq!(exchange(&mut stream, b"still here"), b"still here");
}

#[test]
fn half_closed_client_gets_its_echo_then_eof() {
    let server = start(config(1));
    let mut stream = connect(server.local_addr());
    let data = pattern(200_000, 9);
    stream.write_all(&data).expect("send");
    stream.shutdown(Shutdown::Write).expect("half close");
    let mut back = Vec::new();
    stream
        .read_to_end(&mut back)
        .expect("echo, then the server's FIN");
    assert!(back == data, "echo differs");
    wait_for(&server, |s| s.connections_open == 0);
}

#[test]
fn client_close_is_counted() {
    let server = start(config(2));
    let conns: Vec<_> = (0..10).map(|_| connect(server.local_addr())).collect();
    wait_for(&server, |s| s.connections_open == 10);
    drop(conns);
    let stats = wait_for(&server, |s| s.connections_open == 0);
    assert_eq!(stats.connections_accepted, 10);
    assert_eq!((stats.bytes_read, stats.reads, stats.writes), (0, 0, 0));
}
