//! Helpers for the black-box CLI tests: the binary, a reference echo server owned by the test,
//! a port nothing listens on, and bounded waits for background processes.
//!
//! Every process started here is a child of the test and is killed by its handle when the
//! guard that owns it drops, so a failing assertion never leaves a server running. All traffic
//! goes to 127.0.0.1.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command as StdCommand, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

#[path = "../../../../../tests/skip.rs"]
mod skip;
pub use skip::{asked, available, browser, missing};

/// Longest any single CLI invocation may take before the test calls it hung.
pub const CMD_TIMEOUT: Duration = Duration::from_secs(20);

pub fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("barrage")
}

/// `barrage` with a timeout, so that a bug cannot hang the suite.
pub fn barrage() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::new(bin());
    c.timeout(CMD_TIMEOUT);
    c
}

/// A loopback port with nothing listening on it: bind port 0, note the port, close it.
/// A port on 127.0.0.1 that nothing listens on now, for a server the test starts by name.
/// Chosen below the kernel's ephemeral range (32768 and up here), so no client socket of a
/// parallel test takes it meanwhile, from a start that differs per process and call.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let seed = std::process::id()
        .wrapping_mul(2_654_435_761)
        .wrapping_add(NEXT.fetch_add(7_919, Ordering::Relaxed));
    for i in 0..2_000u32 {
        let port = 20_000 + (seed.wrapping_add(i.wrapping_mul(101)) % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in 20000-31999")
}

/// Whether `name` is an executable on PATH (or in /usr/sbin, where Debian puts daemons).
pub fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        || Path::new("/usr/sbin").join(name).is_file()
}

/// A wall-clock instant `secs` from now, as `--start-at @UNIX` wants it: every shard of a
/// test starts together.
pub fn start_in(secs: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    format!("@{}", now + secs)
}

pub fn refused_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local addr").port()
}

pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not valid JSON ({e}):\n{text}", path.display()))
}

/// The line every command says on stderr for a file it wrote: `wrote PATH (SIZE)`.
pub fn wrote(path: &Path) -> String {
    let size = std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()))
        .len();
    format!(
        "wrote {} ({})",
        path.display(),
        barrage_report::fmt::bytes(size as f64)
    )
}

/// `kill -SIG PID` through the `kill` program (the tests have no libc).
pub fn send_signal(pid: u32, sig: &str) {
    let st = StdCommand::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(st.success(), "kill -{sig} {pid} failed");
}

/// Waits for `child` at most `limit`; None if it is still running then.
pub fn wait_at_most(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            return Some(st);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A background process that is killed (by its handle) and reaped when dropped.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// `barrage serve echo` on 127.0.0.1:0 with one thread, `--stats` into a temporary directory,
/// and `--exit-after 60s` as a backstop.
pub struct EchoServer {
    /// Declared before `stdout` so the process is gone before its pipe closes.
    child: Guard,
    /// Kept open for the server's whole life: it prints its counts on exit, and a closed pipe
    /// there would be a test artefact, not what we test.
    stdout: BufReader<ChildStdout>,
    pub port: u16,
    url: String,
    pub stats: PathBuf,
    _dir: tempfile::TempDir,
}

impl EchoServer {
    pub fn start(extra: &[&str]) -> EchoServer {
        Self::serve("echo", extra)
    }

    /// `barrage serve KIND` (any kind of `barrage serve --help`) the same way; `url()` uses the kind's scheme.
    pub fn serve(kind: &str, extra: &[&str]) -> EchoServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let stats = dir.path().join("server-stats.json");
        let mut child = signals_at_default(StdCommand::new(bin()))
            .args([
                "serve",
                kind,
                "--listen",
                "127.0.0.1:0",
                "--threads",
                "1",
                "--exit-after",
                "60s",
                "--stats",
            ])
            .arg(&stats)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn barrage serve echo");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let child = Guard(child);
        let mut first = String::new();
        stdout.read_line(&mut first).expect("read server banner");
        // "barrage echo server listening on 127.0.0.1:PORT (1 threads)"
        let port = first
            .split_once("listening on 127.0.0.1:")
            .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected server banner: {first:?}"));
        EchoServer {
            child,
            stdout,
            port,
            url: match kind {
                "echo" | "chat" | "frames" => format!("tcp://127.0.0.1:{port}"),
                "h2" => format!("h2c://127.0.0.1:{port}/"),
                other => format!("{other}://127.0.0.1:{port}/"),
            },
            stats,
            _dir: dir,
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn pid(&self) -> u32 {
        self.child.0.id()
    }

    /// SIGTERM, wait for a clean exit, and return the `--stats` JSON.
    pub fn stop(mut self) -> Value {
        send_signal(self.pid(), "TERM");
        let st = wait_at_most(&mut self.child.0, Duration::from_secs(5))
            .expect("echo server did not exit within 5 s of SIGTERM");
        assert!(st.success(), "echo server exited with {st}");
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut self.stdout, &mut rest);
        assert!(rest.contains("served:"), "server's last words: {rest:?}");
        read_json(&self.stats)
    }
}

/// The lines of `text` that are live status lines ("[  1.0s] conns ...").
pub fn status_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.starts_with('[')).collect()
}

/// `v[path]` for a dotted path, panicking with the path when a field is missing.
pub fn field<'a>(v: &'a Value, path: &str) -> &'a Value {
    let mut cur = v;
    for key in path.split('.') {
        cur = cur
            .get(key)
            .unwrap_or_else(|| panic!("JSON has no field '{path}' (missing '{key}')"));
    }
    cur
}

pub fn u(v: &Value, path: &str) -> u64 {
    field(v, path)
        .as_u64()
        .unwrap_or_else(|| panic!("'{path}' is not an unsigned integer: {}", field(v, path)))
}

pub fn f(v: &Value, path: &str) -> f64 {
    field(v, path)
        .as_f64()
        .unwrap_or_else(|| panic!("'{path}' is not a number: {}", field(v, path)))
}

pub fn s<'a>(v: &'a Value, path: &str) -> &'a str {
    field(v, path)
        .as_str()
        .unwrap_or_else(|| panic!("'{path}' is not a string: {}", field(v, path)))
}

/// Waits until something accepts on 127.0.0.1:`port`, or the child exits, or 5 s pass.
pub fn wait_listening(child: &mut Child, port: u16) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(5) {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Runs barrage with `args` (plus `-q --json FILE`) and `env`; it must exit 0. The result.
pub fn run_result(args: &[&str], env: &[(&str, &str)]) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("result.json");
    let out = barrage()
        .envs(env.iter().copied())
        .args(args)
        .args(["-q", "--json"])
        .arg(&json)
        .output()
        .expect("run barrage");
    assert_eq!(
        out.status.code(),
        Some(0),
        "barrage {args:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    read_json(&json)
}

/// A copy of `examples/NAME` in `dir` without its thresholds (and with the files it names
/// copied beside it): the examples' latency limits are for a quiet machine, and a test on a
/// busy one asserts counts, not wall-clock figures.
pub fn example_without_thresholds(name: &str, dir: &Path) -> PathBuf {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let text = std::fs::read_to_string(examples.join(name)).unwrap();
    let mut out = String::new();
    let mut in_block = false;
    for line in text.lines() {
        let t = line.trim_start();
        if in_block && t.starts_with("- ") {
            continue;
        }
        in_block = false;
        if t.starts_with("thresholds") {
            in_block = t.trim_end().ends_with(':');
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    for data in ["users.csv", "mqtt-rooms.csv", "game.lua"] {
        if text.contains(data) {
            std::fs::copy(examples.join(data), dir.join(data)).unwrap();
        }
    }
    let p = dir.join(name);
    std::fs::write(&p, out).unwrap();
    p
}

/// A two-node Slurm cluster on this host (`deploy/slurm/slurm-local.sh start DIR`), stopped
/// by the PIDs it recorded however the test ends, waiting for the daemons to exit (the next
/// test's cluster needs their ports).
/// One at a time in this test binary: the cluster listens on fixed ports (`dist`, `slurm`).
static ONE_CLUSTER_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A Slurm cluster of this host (`deploy/slurm/slurm-local.sh`), stopped on drop. It holds
/// `ONE_CLUSTER_AT_A_TIME` from start to drop.
pub struct SlurmCluster {
    dir: PathBuf,
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl SlurmCluster {
    pub fn script() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/slurm/slurm-local.sh")
    }

    /// Starts it with its state in `state`; the test fails if it does not start.
    pub fn start(state: &Path) -> SlurmCluster {
        // A test that failed with the lock held poisons it; the next cluster may still start.
        let guard = ONE_CLUSTER_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let started = StdCommand::new(Self::script())
            .arg("start")
            .arg(state)
            .output()
            .unwrap();
        let cluster = SlurmCluster {
            dir: state.to_path_buf(),
            _one_at_a_time: guard,
        };
        assert!(
            started.status.success(),
            "the cluster starts: {}{}",
            String::from_utf8_lossy(&started.stdout),
            String::from_utf8_lossy(&started.stderr)
        );
        cluster
    }

    pub fn conf(&self) -> PathBuf {
        self.dir.join("slurm.conf")
    }
}

impl Drop for SlurmCluster {
    /// SIGTERM to the daemons, SIGKILL to what is left after 10 s, and SIGKILL to this
    /// cluster's job steps (`slurmstepd` outlives its `slurmd`): a daemon or step left behind
    /// would hold the fixed ports and take the next test's jobs (seen once: a stale `slurmd`
    /// ran the next cluster's batch job and `sbatch --wait` returned before it ended).
    fn drop(&mut self) {
        let pids: Vec<i32> = ["slurmctld.pid", "slurmd-n1.pid", "slurmd-n2.pid"]
            .iter()
            .filter_map(|f| std::fs::read_to_string(self.dir.join(f)).ok())
            .filter_map(|p| p.trim().parse().ok())
            .collect();
        let steps = self.steps();
        let _ = StdCommand::new(Self::script())
            .arg("stop")
            .arg(&self.dir)
            .status();
        let alive = |p: &i32| Path::new("/proc").join(p.to_string()).exists();
        let wait = |pids: &[i32], limit: Duration| {
            let deadline = std::time::Instant::now() + limit;
            while pids.iter().any(alive) && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
        };
        wait(&pids, Duration::from_secs(10));
        let mut left: Vec<i32> = pids.into_iter().filter(alive).collect();
        left.extend(steps.iter().copied().filter(alive));
        for p in &left {
            // SAFETY: a plain kill of a daemon or job step this test started.
            unsafe {
                libc::kill(*p, libc::SIGKILL);
            }
        }
        wait(&left, Duration::from_secs(5));
    }
}

impl SlurmCluster {
    /// The job steps of this cluster: `slurmstepd` processes whose environment names its
    /// configuration.
    fn steps(&self) -> Vec<i32> {
        let conf = format!("SLURM_CONF={}", self.conf().display());
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
                cmd.starts_with(b"slurmstepd")
                    && env.split(|b| *b == 0).any(|v| v == conf.as_bytes())
            })
            .collect()
    }
}

/// GET http://127.0.0.1:port/path; (status, body), or `None` if nothing answered.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n")?.1.to_string();
    Some((status, body))
}

/// `cmd` with SIGINT, SIGTERM and SIGHUP at their default dispositions in the child. barrage
/// leaves a signal that was ignored at start ignored (as `nohup` wants), and a test run from a
/// background job inherits an ignored SIGINT: a test that stops barrage by a signal starts it
/// with this so the signal means what it means in a terminal.
pub fn signals_at_default(mut cmd: StdCommand) -> StdCommand {
    // SAFETY: signal() is async-signal-safe; the child only resets three dispositions.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    cmd
}

/// barrage with `args` plus `-q --json FILE`, which must exit 0 or 3 (a failed threshold): the
/// result.
pub fn run_json(args: &[&str], json: &Path) -> Value {
    let out = barrage()
        .args(args)
        .args(["-q", "--json"])
        .arg(json)
        .output()
        .expect("run barrage");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "barrage {args:?}:\n{stderr}"
    );
    read_json(json)
}

/// `summary.steps[]` named `name` (a scenario's step).
pub fn step<'a>(v: &'a Value, name: &str) -> &'a Value {
    field(v, "summary.steps")
        .as_array()
        .expect("summary.steps")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no step {name}"))
}

/// sent = completed + failed, and nothing in flight at the end of a `-n` run.
pub fn conserved(v: &Value) {
    let e = field(v, "summary.exchanges");
    assert_eq!(
        u(v, "summary.exchanges.sent"),
        u(v, "summary.exchanges.completed") + u(v, "summary.exchanges.failed"),
        "{e}"
    );
    assert_eq!(u(v, "summary.exchanges.in_flight_at_end"), 0, "{e}");
}
