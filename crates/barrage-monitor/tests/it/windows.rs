//! The monitor on Windows, against this test process and copies of it started in a known mode
//! (`helper`: burn CPU, sleep, start a child, serve a port). Where wine cannot show a counter
//! (see the crate docs, "What wine cannot show"), the assertion says what wine gives instead.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::thread::sleep;
use std::time::{Duration, Instant};

use barrage_metrics::{MonitorSeries, ProcSample, TcpStates};
use barrage_monitor::{
    listener_pid, spawn_server, Monitor, MonitorConfig, MonitorError, SpawnError,
};

const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);

/// Tests that count this process's sockets (or open some) run one at a time.
static SOCKETS: Mutex<()> = Mutex::new(());

fn sockets() -> MutexGuard<'static, ()> {
    SOCKETS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Not a test of its own: with an argument `helper-mode=MODE` (see [`Helper::start`]) this
/// process is a helper; without one it returns at once.
#[test]
fn helper() {
    let args: Vec<String> = std::env::args().collect();
    let Some(mode) = args.iter().find_map(|a| a.strip_prefix("helper-mode=")) else {
        return;
    };
    match mode.split_once(':').unwrap_or((mode, "")) {
        ("burn", _) => {
            burn(400 * MS);
            println!("helper: done");
        }
        ("parent", _) => {
            // Killed by its pid by the test (this process is killed without unwinding).
            let kid = Helper::start("sleep");
            println!("helper: {}", kid.pid());
            sleep(60 * S);
        }
        ("listen", port) => {
            let l = TcpListener::bind(("127.0.0.1", port.parse().unwrap())).unwrap();
            for c in l.incoming() {
                drop(c);
            }
        }
        _ => println!("helper: ready"),
    }
    sleep(60 * S);
}

/// Keeps a core busy for `d` of wall time.
fn burn(d: Duration) {
    let t = Instant::now();
    let mut x = 0u64;
    while t.elapsed() < d {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

/// A copy of this test binary in a helper mode, killed (by its handle) when dropped.
struct Helper {
    child: Child,
    stdout: BufReader<ChildStdout>,
}

impl Helper {
    fn start(mode: &str) -> Helper {
        // Under wine on a busy machine a process start can fail at once with ERROR_INTERNAL_ERROR
        // (1359, seen once beside two busy loops): tried again, a few times.
        let mut tries = 0;
        let mut child = loop {
            let spawned = Command::new(std::env::current_exe().unwrap())
                .args(helper_args(mode))
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .spawn();
            match spawned {
                Ok(c) => break c,
                Err(e) if tries < 5 && e.raw_os_error() == Some(1359) => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
                Err(e) => panic!("cannot start a helper ({mode}): {e}"),
            }
        };
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Helper { child, stdout }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next thing it said (`helper: ...`; the harness's own output may share the line).
    fn line(&mut self) -> String {
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "helper exited"
            );
            if let Some((_, said)) = line.split_once("helper: ") {
                return said.trim().to_string();
            }
        }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn helper_args(mode: &str) -> [String; 5] {
    [
        "windows::helper".into(),
        "--exact".into(),
        "--nocapture".into(),
        "--test-threads=1".into(),
        format!("helper-mode={mode}"),
    ]
}

/// The monitors' clock: every test's samples are on it.
fn base() -> Instant {
    static BASE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

fn start(pids: Vec<u32>, include_children: bool) -> Monitor {
    Monitor::start(MonitorConfig {
        pids,
        include_children,
        interval: 50 * MS,
        base: base(),
        include_self: false,
        self_children: false,
        sockets: true,
    })
    .unwrap()
}

/// Waits (up to 60 s: under wine a first TCP table may take seconds) for a sample of every
/// process taken after now.
fn wait_for_sample(m: &Monitor) {
    let after = base().elapsed().as_secs_f64();
    let give_up = Instant::now() + 60 * S;
    while m
        .latest()
        .is_none_or(|l| l.t <= after || l.processes.iter().any(|p| p.running && p.sample.is_none()))
    {
        assert!(Instant::now() < give_up, "no sample");
        sleep(10 * MS);
    }
}

/// CPU seconds the samples add up to, and the span they cover.
fn cpu_seconds(s: &[ProcSample], interval: f64) -> (f64, f64) {
    let mut prev = None;
    let (mut used, mut span) = (0.0, 0.0);
    for x in s {
        let dt = prev.map_or(interval, |p| x.t - p);
        used += x.cpu_pct / 100.0 * dt;
        span += dt;
        prev = Some(x.t);
    }
    (used, span)
}

fn cores() -> f64 {
    std::thread::available_parallelism().unwrap().get() as f64
}

fn check_cpu(series: &MonitorSeries, what: &str) -> f64 {
    let s = &series.processes[0].samples;
    let (used, span) = cpu_seconds(s, series.interval_s);
    println!(
        "{what}: {used:.3} s of CPU over {span:.3} s in {} samples",
        s.len()
    );
    assert!(used > 0.0, "{what}: no CPU seen");
    // Each rate divides by the time between its readings; the samples' `t`s are a little
    // apart from those, hence some slack.
    assert!(
        used <= span * cores() * 1.1 + 0.05,
        "{what}: {used} s in {span} s"
    );
    for x in s {
        assert!((x.cpu_user_pct + x.cpu_sys_pct - x.cpu_pct).abs() < 1e-9);
    }
    used
}

#[test]
fn cpu_memory_handles_and_threads_of_this_process() {
    let m = start(vec![std::process::id()], false);
    wait_for_sample(&m);
    burn(300 * MS);
    wait_for_sample(&m);
    let series = m.stop();
    check_cpu(&series, "this process");
    assert!(!series.processes[0].command.is_empty());
    let last = series.processes[0].samples.last().unwrap().clone();
    println!("this process: {last:?}");
    assert!(last.rss_bytes > 0 && last.rss_peak_bytes >= last.rss_bytes);
    assert!(last.private_bytes > 0 && last.fds > 0 && last.threads >= 2);
    let switches: u64 = series.processes[0]
        .samples
        .iter()
        .map(|x| x.ctx_voluntary)
        .sum();
    if barrage_monitor::under_wine() {
        // wine lists threads without their context switches.
        assert_eq!(switches, 0);
    } else {
        assert!(switches > 0);
    }
    assert!(series.processes[0]
        .samples
        .iter()
        .all(|x| x.ctx_involuntary == 0));
}

#[test]
fn another_process_until_it_exits() {
    let mut h = Helper::start("burn");
    let m = start(vec![h.pid()], false);
    assert_eq!(h.line(), "done");
    wait_for_sample(&m);
    let before = m.latest().unwrap();
    assert!(before.processes[0].running);
    h.child.kill().unwrap();
    h.child.wait().unwrap();
    let give_up = Instant::now() + 30 * S;
    while m.latest().unwrap().processes[0].running {
        assert!(Instant::now() < give_up, "the exit was not seen");
        sleep(10 * MS);
    }
    let n = m.latest().unwrap().processes[0]
        .sample
        .as_ref()
        .map(|s| s.t);
    sleep(200 * MS);
    let series = m.stop();
    let s = &series.processes[0].samples;
    assert_eq!(s.last().map(|s| s.t), n, "no sample after the exit");
    check_cpu(&series, "a helper that burned 0.4 s");
    assert!(s
        .iter()
        .all(|x| x.rss_bytes > 0 && x.fds > 0 && x.threads >= 1));
}

#[test]
fn children_are_summed_in_when_asked() {
    let mut parent = Helper::start("parent");
    let child: u32 = parent.line().parse().unwrap();
    let (alone, tree) = (
        start(vec![parent.pid()], false),
        start(vec![parent.pid()], true),
    );
    wait_for_sample(&alone);
    wait_for_sample(&tree);
    let (alone, tree) = (alone.stop(), tree.stop());
    kill(child);
    let a = alone.processes[0].samples.last().unwrap();
    let t = tree.processes[0].samples.last().unwrap();
    println!("alone {a:?}\nwith children {t:?}");
    assert!(t.rss_bytes > a.rss_bytes && t.threads > a.threads && t.fds > a.fds);
}

fn kill(pid: u32) {
    use windows_sys::Win32::Foundation::CloseHandle;
    use windows_sys::Win32::System::Threading::{OpenProcess, TerminateProcess, PROCESS_TERMINATE};
    // SAFETY: OpenProcess has no memory-safety preconditions; the handle is closed once.
    unsafe {
        let h = OpenProcess(PROCESS_TERMINATE, 0, pid);
        if !h.is_null() {
            TerminateProcess(h, 1);
            CloseHandle(h);
        }
    }
}

#[test]
fn tcp_states_of_connections_held_in_this_process() {
    let _g = sockets();
    const N: u64 = 5;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let clients: Vec<TcpStream> = (0..N).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let servers: Vec<TcpStream> = (0..N).map(|_| l.accept().unwrap().0).collect();
    let m = start(vec![std::process::id()], false);
    wait_for_sample(&m);
    let tcp = m.latest().unwrap().processes[0]
        .sample
        .as_ref()
        .unwrap()
        .tcp;
    drop(m);
    println!("{N} connections, both ends here: {tcp:?}");
    if barrage_monitor::under_wine() {
        // wine's socket tables name no owner (pid 0): no process shows sockets.
        assert_eq!(tcp, TcpStates::default());
    } else {
        // Both ends of each connection are ours: 2N established, and the listener.
        let want = TcpStates {
            established: 2 * N,
            listen: 1,
            ..TcpStates::default()
        };
        assert_eq!(tcp, want);
    }
    drop((clients, servers));
}

#[test]
fn listener_pid_of_our_listener_and_of_nobody() {
    let _g = sockets();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let found = listener_pid(port);
    if barrage_monitor::under_wine() {
        // The listener is in the table, but without an owner.
        assert!(
            matches!(found, Err(MonitorError::ListenerNotVisible { .. })),
            "{found:?}"
        );
    } else {
        assert_eq!(found.unwrap(), Some(std::process::id()));
    }
    drop(l);
    assert_eq!(listener_pid(port).unwrap(), None);
}

/// A port nothing listens on (just released by the system).
fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn server_command(addr: SocketAddr) -> String {
    let exe = std::env::current_exe().unwrap();
    let args = helper_args(&format!("listen:{}", addr.port())).join(" ");
    format!("\"{}\" {args}", exe.display())
}

#[test]
fn a_spawned_server_is_ready_then_stopped_with_its_tree() {
    let _g = sockets();
    let addr = free_addr();
    let mut s = spawn_server(&server_command(addr), addr, 60 * S).unwrap();
    println!("ready after {:?}, cmd pid {}", s.ready_after(), s.pid());
    assert!(s.is_running());
    let report = s.stop(5 * S);
    println!("stopped: {report:?}");
    assert_eq!(report.signal, None);
    assert!(report.exited_cleanly != report.killed, "{report:?}");
    assert!(
        TcpStream::connect_timeout(&addr, S).is_err(),
        "the server is gone"
    );
}

#[test]
fn dropping_a_spawned_server_ends_its_tree() {
    let _g = sockets();
    let addr = free_addr();
    let s = spawn_server(&server_command(addr), addr, 60 * S).unwrap();
    drop(s);
    assert!(
        TcpStream::connect_timeout(&addr, S).is_err(),
        "the server is gone"
    );
}

#[test]
fn a_command_that_fails_reports_its_exit_code_and_stderr() {
    let _g = sockets();
    let addr = free_addr();
    let err = spawn_server("echo no luck 1>&2 & exit 3", addr, 30 * S)
        .err()
        .unwrap();
    println!("{err}");
    match err {
        SpawnError::Exited {
            code, stderr_tail, ..
        } => {
            assert_eq!(code, Some(3));
            assert_eq!(stderr_tail.trim(), "no luck");
        }
        other => panic!("{other:?}"),
    }
}
