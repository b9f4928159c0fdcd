//! Helpers shared by the servers' integration tests: blocking std clients with timeouts,
//! so that a server bug fails a test instead of hanging the suite.

mod alone;
pub mod h2_raw;
pub mod http_client;
pub mod ws_client;

pub use alone::alone;

use barrage_servers::echo::{self, EchoConfig};
use barrage_servers::{ServerHandle, ServerStats};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

/// Longest any single blocking read or write may take before the test fails.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// An echo config on 127.0.0.1 port 0 with `threads` threads and no faults.
pub fn config(threads: usize) -> EchoConfig {
    EchoConfig {
        listen: "127.0.0.1:0".parse().expect("valid address"),
        threads,
        ..EchoConfig::default()
    }
}

pub fn start(cfg: EchoConfig) -> ServerHandle {
    echo::start(cfg).expect("echo server starts")
}

pub fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect to the server");
    stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .expect("read timeout");
    stream
        .set_write_timeout(Some(IO_TIMEOUT))
        .expect("write timeout");
    stream.set_nodelay(true).expect("nodelay");
    stream
}

/// `len` bytes that differ with `seed` and position, so a misordered echo is caught.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Sends `data` and reads back as many bytes, writing from a second thread so that data larger
/// than the socket buffers cannot deadlock the test.
pub fn exchange(stream: &mut TcpStream, data: &[u8]) -> Vec<u8> {
    let mut back = vec![0; data.len()];
    let mut writer = stream.try_clone().expect("clone stream");
    thread::scope(|scope| {
        let sending = scope.spawn(move || writer.write_all(data));
        stream.read_exact(&mut back).expect("read the whole echo");
        sending.join().expect("writer thread").expect("write all");
    });
    back
}

/// Polls `stats` until `done` holds, failing after 10 s.
pub fn wait_for(handle: &ServerHandle, done: impl Fn(&ServerStats) -> bool) -> ServerStats {
    let deadline = Instant::now() + IO_TIMEOUT;
    loop {
        let stats = handle.stats();
        if done(&stats) {
            return stats;
        }
        assert!(
            Instant::now() < deadline,
            "stats never got there: {stats:?}"
        );
        thread::sleep(Duration::from_millis(2));
    }
}
