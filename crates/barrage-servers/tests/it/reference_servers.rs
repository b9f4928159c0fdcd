//! Issue 42, item 6 ("the reference servers"): `serve h2` and `serve grpc` against hostile
//! clients started by the tests, written frame by frame (common::h2_raw).
//!
//! - HPACK amplification: a header block of one-byte references to a 4 KiB dynamic-table
//!   entry decodes to 4,000 times its size. The servers advertise and enforce
//!   SETTINGS_MAX_HEADER_LIST_SIZE, so such a block is refused (431 and a reset of its stream)
//!   or ends the connection (GOAWAY ENHANCE_YOUR_CALM), and a fresh client beside the attacker
//!   is answered every time.
//! - An invalid connection preface on clear text gets a GOAWAY (PROTOCOL_ERROR), then the
//!   close, not a TCP reset (h2spec 3.5/2).

use crate::common::h2_raw::*;
use barrage_servers::http2::{self, H2Config};
use barrage_servers::ServerHandle;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn start(grpc: bool) -> ServerHandle {
    http2::start(H2Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        tls: None,
        delay: None,
        server_timing: false,
        max_streams: None,
        goaway_after: None,
        window: None,
        reuse_port: false,
        grpc: grpc.then(barrage_servers::grpc::GrpcKnobs::default),
    })
    .expect("the h2 server starts")
}

/// The dynamic-table entry the attacker references: `x-big` with a value that makes the
/// entry fill a table of `table` bytes (an entry's size is its name, its value and 32).
fn big_entry(table: usize) -> Vec<u8> {
    let mut b = get_root();
    indexed_literal(&mut b, b"x-big", &vec![b'a'; table - 32 - 5]);
    b
}

/// A request whose block holds `refs` references to the newest dynamic-table entry (index 62):
/// `refs` + 14 bytes on the wire.
fn amplified(refs: usize) -> Vec<u8> {
    let mut b = get_root();
    b.extend(std::iter::repeat_n(0xbe, refs));
    b
}

/// The hostile client, until `stop`: connections that put a table-filling entry in the
/// server's table, then send requests of `refs` references to it as fast as the socket takes
/// them, reading and dropping what the server answers. When the server ends a connection,
/// another. Counts (connections, requests sent).
fn attack(addr: SocketAddr, refs: usize, stop: &AtomicBool) -> (u64, u64) {
    let (mut conns, sent) = (0, AtomicU64::new(0));
    while !stop.load(Ordering::Relaxed) {
        let Ok(s) = std::net::TcpStream::connect(addr) else {
            continue;
        };
        conns += 1;
        let mut reader = s.try_clone().unwrap();
        let drain = std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            while matches!(std::io::Read::read(&mut reader, &mut buf), Ok(n) if n > 0) {}
        });
        let mut w = std::io::BufWriter::with_capacity(1 << 16, s);
        let mut go = || -> std::io::Result<()> {
            use std::io::Write;
            w.write_all(PREFACE)?;
            w.write_all(&frame(SETTINGS, 0, 0, &[]))?;
            w.write_all(&frame(SETTINGS, ACK, 0, &[]))?;
            w.write_all(&frame(HEADERS, END_HEADERS | END_STREAM, 1, &big_entry(4096)))?;
            let block = frame(HEADERS, END_HEADERS | END_STREAM, 0, &amplified(refs));
            let mut id = 3u32;
            while !stop.load(Ordering::Relaxed) && id < 0x7fff_0000 {
                let mut f = block.clone();
                f[5..9].copy_from_slice(&id.to_be_bytes());
                w.write_all(&f)?;
                sent.fetch_add(1, Ordering::Relaxed);
                id += 2;
            }
            w.flush()
        };
        let _ = go();
        if let Ok(s) = w.into_inner() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        let _ = drain.join();
    }
    (conns, sent.load(Ordering::Relaxed))
}

/// By hand: the attacker against a running server, for measuring a fresh client beside it
/// (notes/servers.md). `BARRAGE_HOSTILE_ADDR=127.0.0.1:8443 BARRAGE_HOSTILE_REFS=3000
/// BARRAGE_HOSTILE_SECS=20 cargo test --release -p barrage-servers --test it
/// reference_servers_attacker_by_hand -- --ignored --nocapture`
#[test]
#[ignore = "by hand: runs against BARRAGE_HOSTILE_ADDR"]
fn reference_servers_attacker_by_hand() {
    let env = |k: &str| std::env::var(k).ok();
    let addr: SocketAddr = env("BARRAGE_HOSTILE_ADDR")
        .expect("BARRAGE_HOSTILE_ADDR")
        .parse()
        .unwrap();
    let refs = env("BARRAGE_HOSTILE_REFS").map_or(3000, |v| v.parse().unwrap());
    let secs = env("BARRAGE_HOSTILE_SECS").map_or(20, |v| v.parse().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let s2 = Arc::clone(&stop);
    let h = std::thread::spawn(move || attack(addr, refs, &s2));
    std::thread::sleep(Duration::from_secs(secs));
    stop.store(true, Ordering::Relaxed);
    let (conns, sent) = h.join().unwrap();
    println!(
        "attacker: {conns} connections, {sent} requests of {refs} references in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

#[test]
#[ignore = "experiment"]
fn reference_servers_experiment() {
    let server = start(false);
    let addr = server.local_addr();
    let refs = std::env::var("REFS").map_or(3, |v| v.parse().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = Arc::clone(&stop);
    let h = std::thread::spawn(move || attack(addr, refs, &s2));
    std::thread::sleep(Duration::from_millis(500));
    let mut fresh = Raw::connect(addr);
    fresh.server_settings();
    let t0 = Instant::now();
    for i in 0..200u32 {
        fresh.request(2 * i + 1, &get_root());
        let (first, _) = fresh.response(2 * i + 1);
        assert_eq!(first, 0x88);
    }
    println!("fresh: 200 requests in {:?}", t0.elapsed());
    stop.store(true, Ordering::Relaxed);
    println!("{:?}", h.join().unwrap());
    println!("{:?}", server.shutdown());
}
