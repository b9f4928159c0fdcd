//! TCP states of a monitored server and `listener_pid`, against a Python server on loopback
//! that accepts connections and holds them without reading.

use std::net::{TcpListener, TcpStream};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::common::Py;
use barrage_metrics::TcpStates;
use barrage_monitor::{listener_pid, Monitor, MonitorConfig};

const HOLDER: &str = "import socket\n\
    s = socket.socket()\n\
    s.bind(('127.0.0.1', 0))\n\
    s.listen(128)\n\
    print(s.getsockname()[1], flush=True)\n\
    held = []\n\
    while True:\n\
    \x20   c, _ = s.accept()\n\
    \x20   held.append(c)\n";

/// Waits (up to 5 s) until the server's latest sample satisfies `ok`; returns it.
fn server_states(m: &Monitor, ok: impl Fn(&TcpStates) -> bool) -> TcpStates {
    let began = Instant::now();
    loop {
        let tcp = m
            .latest()
            .and_then(|l| l.processes[0].sample.clone())
            .map(|s| s.tcp)
            .unwrap_or_default();
        if ok(&tcp) || began.elapsed() > Duration::from_secs(5) {
            return tcp;
        }
        sleep(Duration::from_millis(20));
    }
}

#[test]
fn states_of_a_server_holding_20_connections() {
    let mut py = Py::start(HOLDER);
    let port: u16 = py.line().parse().unwrap();
    assert_eq!(listener_pid(port).unwrap(), Some(py.pid()));
    let mut clients: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    let m = Monitor::start(MonitorConfig {
        pids: vec![py.pid()],
        include_children: false,
        interval: Duration::from_millis(50),
        base: Instant::now(),
        include_self: true,
        self_children: false,
        sockets: true,
    })
    .unwrap();
    let tcp = server_states(&m, |t| t.established == 20);
    println!("server with 20 clients: {tcp:?}");
    assert_eq!(
        tcp,
        TcpStates {
            established: 20,
            listen: 1,
            ..TcpStates::default()
        }
    );
    // barrage's own sockets are counted by state too (they used to read 0 in every sample).
    let own = m.latest().unwrap().generator.unwrap();
    assert!(own.fds >= 20, "the client ends are ours: {own:?}");
    assert_eq!(own.tcp.established, 20, "{own:?}");
    // Closing 10 clients leaves the server's ends in CLOSE_WAIT (it never reads or closes).
    clients.truncate(10);
    let tcp = server_states(&m, |t| t.close_wait == 10);
    println!("after 10 clients closed: {tcp:?}");
    assert_eq!((tcp.established, tcp.close_wait, tcp.listen), (10, 10, 1));
    let series = m.stop();
    let last = series.generator.last().unwrap();
    assert!(last.fds >= 10);
}

#[test]
fn listener_pid_of_ipv6_and_of_nobody() {
    if let Ok(l) = TcpListener::bind("[::1]:0") {
        let port = l.local_addr().unwrap().port();
        assert_eq!(listener_pid(port).unwrap(), Some(std::process::id()));
    }
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    assert_eq!(listener_pid(port).unwrap(), None);
}
