//! Stopping a server: `shutdown` and drop both join every thread and close every socket.
//!
//! Runs alone in a child process of the test binary (`common::alone`), because it counts this
//! process's server threads and no other server may run beside it.

use crate::common::{self, config, connect, exchange, start};
use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Threads of this process whose name marks them as echo server threads (Linux: /proc).
fn echo_threads() -> usize {
    let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task");
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("barrage-echo-"))
        .count()
}

/// Waits until exactly `n` echo threads exist. Polls because a new thread names itself only once
/// it runs, and a joined thread's /proc entry goes away a moment after `join` returns.
fn wait_for_echo_threads(n: usize, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while echo_threads() != n {
        assert!(
            Instant::now() < deadline,
            "{what}: {} echo threads, want {n}",
            echo_threads()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn shutdown_and_drop_join_every_thread_and_close_every_socket() {
    if !common::alone(
        module_path!(),
        "shutdown_and_drop_join_every_thread_and_close_every_socket",
    ) {
        return;
    }
    assert_eq!(echo_threads(), 0);

    let server = start(config(3));
    let addr = server.local_addr();
    wait_for_echo_threads(3, "after start");
    let mut stream = connect(addr);
    assert_eq!(exchange(&mut stream, b"hello"), b"hello");
    let idle = connect(addr);
    common::wait_for(&server, |s| s.connections_open == 2);

    let last = server.shutdown();
    wait_for_echo_threads(0, "after shutdown");
    assert_eq!(last.connections_accepted, 2);
    assert_eq!(last.connections_open, 0, "{last:?}");
    assert_eq!((last.bytes_read, last.bytes_written), (5, 5));
    // The server closed both connections and its listeners.
    for mut conn in [stream, idle] {
        let mut buf = [0; 8];
        assert!(
            matches!(conn.read(&mut buf), Ok(0) | Err(_)),
            "connection left open"
        );
    }
    assert!(
        TcpStream::connect(addr).is_err(),
        "still listening on {addr}"
    );

    let dropped = start(config(2));
    let _conn = connect(dropped.local_addr());
    wait_for_echo_threads(2, "after start");
    drop(dropped);
    wait_for_echo_threads(0, "after drop");
}
