//! `spawn_server` with servers that start and stop cleanly, ignore SIGTERM, fail to start,
//! never become ready, or find their port taken; and dropping a handle kills the server.
use std::net::{SocketAddr, TcpListener};
use std::thread::sleep;
use std::time::{Duration, Instant};

use barrage_monitor::{listener_pid, spawn_server, SpawnError};

const S: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

/// A Python server on the port in argv[1]; `ON_TERM` is what SIGTERM does.
fn server(on_term: &str, port: u16) -> String {
    let script = format!(
        "import signal, socket, sys\n\
         signal.signal(signal.SIGTERM, {on_term})\n\
         s = socket.socket()\n\
         s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
         s.bind((\"127.0.0.1\", int(sys.argv[1])))\n\
         s.listen(16)\n\
         while True:\n\
         \x20   c, _ = s.accept()\n\
         \x20   c.close()\n"
    );
    format!("python3 -c '{script}' {port}")
}

/// A port nothing listens on, below the kernel's ephemeral range (32768 and up), so no
/// client socket of a parallel test takes it before the spawned server binds it.
fn free_addr() -> SocketAddr {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let seed = std::process::id()
        .wrapping_mul(2_654_435_761)
        .wrapping_add(NEXT.fetch_add(7_919, Ordering::Relaxed));
    for i in 0..2_000u32 {
        let port = 20_000 + (seed.wrapping_add(i.wrapping_mul(101)) % 12_000) as u16;
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
            return l.local_addr().unwrap();
        }
    }
    panic!("no free port in 20000-31999")
}

/// `spawn_server` on a free port, the command built for it by `cmd`. Choosing a free port
/// and having another process bind it is a race no test can close, so a port found taken
/// between the two is retried with another (at most five times), saying who holds it.
fn spawn_on_free_port(
    cmd: impl Fn(u16) -> String,
    ready: Duration,
) -> (SocketAddr, Result<barrage_monitor::Spawned, SpawnError>) {
    for _ in 0..5 {
        let addr = free_addr();
        match spawn_server(&cmd(addr.port()), addr, ready) {
            Err(SpawnError::PortInUse { .. }) => {
                println!(
                    "{addr} was taken after it was chosen (listener {:?}); trying another",
                    listener_pid(addr.port())
                );
            }
            r => return (addr, r),
        }
    }
    panic!("five free ports in a row were taken before the server started")
}

/// Not running: no such process, or a zombie (an orphan waits for init to reap it, which
/// may take seconds in a container).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat[stat.rfind(')').unwrap() + 2..].starts_with('Z'),
        Err(_) => true,
    }
}

#[test]
fn a_server_that_exits_on_sigterm_stops_cleanly() {
    let (addr, s) = spawn_on_free_port(
        |port| format!("exec {}", server("lambda *a: sys.exit(0)", port)),
        10 * S,
    );
    let s = s.unwrap();
    let pid = s.pid();
    println!("ready after {:?}", s.ready_after());
    assert!(s.ready_after() < 10 * S);
    assert_eq!(
        listener_pid(addr.port()).unwrap(),
        Some(pid),
        "exec: sh became python"
    );
    let report = s.stop(2 * S);
    println!("clean stop: {report:?}");
    assert!(report.exited_cleanly && !report.killed, "{report:?}");
    assert_eq!((report.exit_code, report.signal), (Some(0), None));
    assert!(gone(pid));
}

#[test]
fn a_server_behind_a_shell_dying_of_sigterm_is_clean_too() {
    // `cd / &&` keeps sh in between: SIGTERM must reach python through the process group.
    let (addr, s) = spawn_on_free_port(
        |port| format!("cd / && python3 -m http.server --bind 127.0.0.1 {port}"),
        10 * S,
    );
    let s = s.unwrap();
    let python = listener_pid(addr.port()).unwrap().unwrap();
    assert_ne!(python, s.pid(), "sh forked python");
    let report = s.stop(2 * S);
    println!("http.server behind sh: {report:?}");
    assert!(report.exited_cleanly && !report.killed, "{report:?}");
    sleep(50 * MS);
    assert!(gone(python));
}

#[test]
fn a_server_ignoring_sigterm_is_killed_after_the_grace_period() {
    let (_, s) = spawn_on_free_port(
        |port| format!("exec {}", server("signal.SIG_IGN", port)),
        10 * S,
    );
    let s = s.unwrap();
    let python = s.pid();
    let report = s.stop(300 * MS);
    println!("ignores SIGTERM: {report:?}");
    assert!(report.killed && !report.exited_cleanly, "{report:?}");
    assert!(report.took >= 300 * MS, "{:?}", report.took);
    assert_eq!((report.exit_code, report.signal), (None, Some(9)));
    sleep(50 * MS);
    assert!(gone(python), "no orphan");
}

#[test]
fn a_command_that_fails_reports_its_status_and_stderr_quickly() {
    let addr = free_addr();
    let began = Instant::now();
    let err = spawn_server("echo 'bind: boom' >&2; exit 3", addr, 10 * S)
        .err()
        .unwrap();
    println!("{err}");
    // Reported when it exits, not at the 10 s ready timeout.
    assert!(began.elapsed() < 5 * S, "{:?}", began.elapsed());
    match err {
        SpawnError::Exited {
            code, stderr_tail, ..
        } => {
            assert_eq!(code, Some(3));
            assert_eq!(stderr_tail, "bind: boom");
        }
        other => panic!("{other:?}"),
    }
    let err = spawn_server("no-such-server-command-xyz --port 1", addr, 10 * S)
        .err()
        .unwrap();
    println!("{err}");
    match err {
        SpawnError::Exited {
            code, stderr_tail, ..
        } => {
            assert_eq!(code, Some(127));
            assert!(stderr_tail.contains("not found"), "{stderr_tail}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_server_that_never_listens_times_out_and_is_killed() {
    let addr = free_addr();
    let began = Instant::now();
    let err = spawn_server("echo starting >&2; sleep 30", addr, 300 * MS)
        .err()
        .unwrap();
    println!("{err}");
    // At the 300 ms ready timeout, not after the command's 30 s.
    assert!(began.elapsed() < 10 * S, "{:?}", began.elapsed());
    assert!(
        matches!(&err, SpawnError::Timeout { stderr_tail, .. } if stderr_tail == "starting"),
        "{err:?}"
    );
}

#[test]
fn a_port_already_taken_is_an_error() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let err = spawn_server("sleep 30", addr, S).err().unwrap();
    assert!(matches!(err, SpawnError::PortInUse { .. }), "{err:?}");
}

#[test]
fn dropping_the_handle_kills_the_whole_group() {
    let (addr, s) = spawn_on_free_port(
        |port| format!("cd / && {}", server("signal.SIG_IGN", port)),
        10 * S,
    );
    let mut s = s.unwrap();
    assert!(s.is_running());
    let (sh, python) = (s.pid(), listener_pid(addr.port()).unwrap().unwrap());
    drop(s);
    sleep(50 * MS);
    assert!(gone(sh) && gone(python), "no orphan");
}
