//! The echo server's fault knobs, measured from a client. Lower bounds are exact (the server
//! must never answer early); upper bounds are generous because CI machines are noisy.

use crate::common::{config, connect, exchange, pattern, start, wait_for};
use barrage_servers::echo::EchoConfig;
use std::io::{ErrorKind, Read, Write};
use std::thread;
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);
/// Scheduling slack allowed on top of any expected time.
/// A liveness bound for "promptly" (a repeated stall would take `stall_for`, 2 s), far above any
/// loopback round trip on a loaded machine: not a measurement.
const MARGIN: Duration = Duration::from_millis(1000);

#[test]
fn delay_holds_every_echo_for_the_delay() {
    let delay = 50 * MS;
    let server = start(EchoConfig {
        delay: Some(delay),
        ..config(2)
    });
    let mut stream = connect(server.local_addr());
    let mut rtts = Vec::new();
    for i in 0..5 {
        let sent = Instant::now();
        assert_eq!(exchange(&mut stream, &[i]), [i]);
        rtts.push(sent.elapsed());
    }
    for rtt in &rtts {
        assert!(*rtt >= delay && *rtt < delay + MARGIN, "rtts {rtts:?}");
    }
}

/// Each byte is held for the delay from its own arrival: bytes that keep coming after it
/// never hold it back. A writer sends a byte every 20 ms (a fifth of the delay) until the first
/// one has come back; a server that held bytes to travel together, or restarted the delay on
/// each arrival, would return nothing while the writer goes on, and the writer gives up after
/// 10 s. No upper bound on the delay is asserted: a busy machine only makes it later.
#[test]
fn delay_applies_per_byte_not_per_connection() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let delay = 100 * MS;
    let server = start(EchoConfig {
        delay: Some(delay),
        ..config(1)
    });
    let mut stream = connect(server.local_addr());
    let mut writer = stream.try_clone().expect("clone");
    let first_sent = Instant::now();
    stream.write_all(b"a").expect("send a");
    let back = Arc::new(AtomicBool::new(false));
    let gave_up = {
        let back = Arc::clone(&back);
        thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(10);
            while !back.load(Ordering::Relaxed) {
                if Instant::now() >= until {
                    return true;
                }
                thread::sleep(20 * MS);
                writer.write_all(b"b").expect("send b");
            }
            false
        })
    };
    let mut byte = [0];
    stream.read_exact(&mut byte).expect("echo a");
    let first_back = Instant::now();
    back.store(true, Ordering::Relaxed);
    assert_eq!(&byte, b"a");
    assert!(first_back >= first_sent + delay, "a came back early");
    assert!(
        !gave_up.join().unwrap(),
        "a came back only once the bytes after it stopped"
    );
}

#[test]
fn delay_passes_large_messages_intact() {
    // Larger than what a connection may hold, so reading must pause and resume.
    let delay = 20 * MS;
    let server = start(EchoConfig {
        delay: Some(delay),
        ..config(1)
    });
    let mut stream = connect(server.local_addr());
    let data = pattern(1 << 20, 5);
    let sent = Instant::now();
    assert!(exchange(&mut stream, &data) == data, "echo differs");
    assert!(sent.elapsed() >= delay);
    let stats = server.stats();
    assert_eq!((stats.bytes_read, stats.bytes_written), (1 << 20, 1 << 20));
}

#[test]
fn held_bytes_of_a_reset_connection_are_not_sent_to_its_successor() {
    let delay = 150 * MS;
    let server = start(EchoConfig {
        delay: Some(delay),
        ..config(1)
    });
    let victim = connect(server.local_addr());
    (&victim).write_all(b"stale").expect("send");
    wait_for(&server, |s| s.bytes_read == 5);
    socket2::SockRef::from(&victim)
        .set_linger(Some(Duration::ZERO))
        .expect("linger 0");
    drop(victim); // RST: the server drops the connection while its echo is still held
    wait_for(&server, |s| s.connections_open == 0);
    // Same thread, so the successor reuses the victim's slot.
    let mut successor = connect(server.local_addr());
    assert_eq!(exchange(&mut successor, b"fresh"), b"fresh");
    successor
        .set_read_timeout(Some(2 * delay))
        .expect("read timeout");
    let mut extra = [0; 16];
    match successor.read(&mut extra) {
        Err(err) if matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("successor got more than its own echo: {other:?}"),
    }
}

#[test]
fn stall_holds_requests_until_it_ends() {
    let (stall_at, stall_for) = (1000 * MS, 2000 * MS);
    let t0 = Instant::now();
    let server = start(EchoConfig {
        stall_at: Some(stall_at),
        stall_for,
        ..config(2)
    });
    let stall_end = t0 + stall_at + stall_for; // the server started after t0: no earlier
    let mut early = connect(server.local_addr());
    assert_eq!(exchange(&mut early, b"before"), b"before");
    assert!(t0.elapsed() < stall_at, "too slow to test before the stall");

    thread::sleep((t0 + stall_at + 100 * MS).saturating_duration_since(Instant::now()));
    let mut late = connect(server.local_addr());
    let during_stall = server.stats();
    early.write_all(b"during").expect("send during the stall");
    late.write_all(b"new")
        .expect("send on a connection made during the stall");
    let mut back = [0; 6];
    early.read_exact(&mut back).expect("echo after the stall");
    assert!(Instant::now() >= stall_end, "answered during the stall");
    assert_eq!(&back, b"during");
    let mut back = [0; 3];
    late.read_exact(&mut back).expect("echo after the stall");
    assert!(Instant::now() < stall_end + MARGIN, "stall lasted too long");
    assert_eq!(&back, b"new");
    assert_eq!(during_stall.bytes_written, 6, "{during_stall:?}");

    // Only once: afterwards echoes are immediate again.
    let sent = Instant::now();
    assert_eq!(exchange(&mut early, b"after"), b"after");
    assert!(sent.elapsed() < MARGIN);
}
