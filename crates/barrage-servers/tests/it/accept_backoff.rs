//! Accepting while the process is out of file descriptors: the server backs off instead of
//! spinning on a listener that stays readable, and accepts what queued up once descriptors are
//! free again (edge-triggered: no new edge would come for those connections by itself).
//!
//! Runs alone in a child process of the test binary (`common::alone`), because it lowers this
//! process's descriptor limit and fills the descriptor table.

use crate::common::{self, connect, exchange, start, wait_for};
use socket2::{Domain, Socket, Type};
use std::fs::File;
use std::net::TcpStream;
use std::thread;
use std::time::Duration;

fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |dir| dir.count() as u64)
}

/// User plus system CPU time of the whole process.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct we hand it.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, &mut usage), 0);
        usage
    };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

fn set_soft_fd_limit(soft: u64) -> libc::rlimit {
    // SAFETY: plain libc calls on a local struct.
    unsafe {
        let mut old: libc::rlimit = std::mem::zeroed();
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut old), 0);
        let new = libc::rlimit {
            rlim_cur: soft.min(old.rlim_max),
            rlim_max: old.rlim_max,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &new), 0);
        old
    }
}

#[test]
fn out_of_descriptors_backs_off_then_accepts_the_backlog() {
    if !common::alone(
        module_path!(),
        "out_of_descriptors_backs_off_then_accepts_the_backlog",
    ) {
        return;
    }
    const QUEUED: usize = 5;
    let server = start(common::config(1));
    let addr = server.local_addr();
    let old_limit = set_soft_fd_limit(open_fds() + 64);

    // Client sockets made now, connected later: connect needs no new descriptor.
    let sockets: Vec<Socket> = (0..QUEUED)
        .map(|_| Socket::new(Domain::IPV4, Type::STREAM, None).expect("client socket"))
        .collect();
    let mut filler = Vec::new();
    while let Ok(file) = File::open("/dev/null") {
        filler.push(file);
        assert!(filler.len() < 10_000, "the descriptor limit did not apply");
    }
    for socket in &sockets {
        // The kernel completes the handshake from the backlog; the server's accept fails.
        socket
            .connect(&addr.into())
            .expect("connect into the backlog");
    }
    thread::sleep(Duration::from_millis(50));
    let cpu_before = cpu_time();
    thread::sleep(Duration::from_millis(300));
    let cpu_spent = cpu_time() - cpu_before;
    assert_eq!(server.stats().connections_accepted, 0);
    // Spinning on EMFILE would burn the whole 300 ms; retrying every 10 ms costs next to none.
    assert!(
        cpu_spent < Duration::from_millis(150),
        "spinning: {cpu_spent:?} of CPU"
    );

    drop(filler);
    wait_for(&server, |s| s.connections_accepted == QUEUED as u64);
    for socket in sockets {
        let mut stream = TcpStream::from(socket);
        stream
            .set_read_timeout(Some(common::IO_TIMEOUT))
            .expect("timeout");
        assert_eq!(exchange(&mut stream, b"queued"), b"queued");
    }
    let mut fresh = connect(addr);
    assert_eq!(exchange(&mut fresh, b"fresh"), b"fresh");

    // SAFETY: restores the limit read above.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &old_limit) };
}
