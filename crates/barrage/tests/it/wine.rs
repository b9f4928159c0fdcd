//! barrage.exe, the Windows build (`x86_64-pc-windows-gnu`, linked by Debian's mingw-w64), run
//! under wine: the Windows subset of the suite. Windows code paths (IOCP through mio, console
//! control events, the job object, the monitor's Win32 readings) run for real here; what wine
//! cannot show is listed in README.md ("Windows").
//!
//! The first test to need it builds barrage.exe (the test profile: its dependencies are then
//! shared with the Windows unit tests) into `target/wine` with the cargo that runs the tests,
//! so the exe is never older than the source, and makes one wine prefix under the test
//! binary's temporary directory. Wine 8 (Debian 12) lacks `bcryptprimitives.dll`, which Rust's
//! standard library needs: a stand-in built from `tests/wine/bcryptprimitives.c` goes into the
//! prefix's system32 (never shipped). The Windows unit tests of the engine, the servers and
//! the monitor run under wine too, with wine as cargo's runner for the target (by hand: an
//! ignored test, see `the_windows_tests_pass_under_wine`).
//!
//! Each wine process is a child of the test, stopped by its PID: wine's SIGINT handler turns
//! the signal into a Ctrl-C console event for the Windows process, which is how these tests
//! press Ctrl-C. The wine server started for the prefix exits by itself 20 s after its last
//! process. They run when asked (`cargo xtask test --wine`, which sets `BARRAGE_WINE=1`) or
//! under CI; without wine, mingw-w64 or the Rust target they are then skipped (failing under CI).

use crate::common::*;
use crate::interop::Nginx;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

const TARGET: &str = "x86_64-pc-windows-gnu";

struct Wine {
    exe: PathBuf,
    prefix: PathBuf,
}

/// barrage.exe and a wine prefix, once per test binary; `None` (skipped) when this machine
/// cannot build or run it.
fn wine() -> Option<&'static Wine> {
    // Minutes of a Windows build: a newcomer's `cargo xtask test` leaves it out (asked per
    // test, so each test left out is listed).
    if !crate::common::asked("--wine", "BARRAGE_WINE", "the Windows build under wine") {
        return None;
    }
    static WINE: OnceLock<Option<Wine>> = OnceLock::new();
    WINE.get_or_init(|| {
        let target_installed = StdCommand::new("rustup")
            .args(["target", "list", "--installed"])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(TARGET));
        let parts = [
            ("wine", on_path("wine")),
            (
                "mingw-w64 (x86_64-w64-mingw32-gcc)",
                on_path("x86_64-w64-mingw32-gcc"),
            ),
            ("the Rust target x86_64-pc-windows-gnu", target_installed),
        ];
        if !crate::common::available(&crate::common::missing(&parts), parts.iter().all(|p| p.1)) {
            return None;
        }
        Some(Wine {
            exe: build_exe(),
            prefix: make_prefix(),
        })
    })
    .as_ref()
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("../wine")
}

fn cargo() -> StdCommand {
    let mut cmd = StdCommand::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(workspace()).env_remove("CARGO_TARGET_DIR");
    cmd
}

/// `cargo build --target x86_64-pc-windows-gnu -p barrage` into `target/wine`.
fn build_exe() -> PathBuf {
    let st = cargo()
        .args([
            "build",
            "--locked",
            "--target",
            TARGET,
            "-p",
            "barrage",
            // Without `serve h2` (tokio and the h2 crate, not tested under wine): CI's time.
            "--no-default-features",
            "--target-dir",
        ])
        .arg(target_dir())
        .stdout(Stdio::null())
        .status()
        .expect("run cargo build for Windows");
    assert!(st.success(), "cargo build of barrage.exe failed");
    target_dir().join(TARGET).join("debug/barrage.exe")
}

/// A fresh wine prefix (made by `wineboot`) with the `bcryptprimitives.dll` stand-in in its
/// system32, and a wine server that stays up between the tests' processes and ends 300 s
/// after the last. Not 20 s: the Windows unit tests compile for over a minute with no wine
/// process, the server then exited, and the next client raced its exit ("wine client error:0:
/// recvmsg: Connection reset by peer", seen once in CI's shape on a fresh clone).
fn make_prefix() -> PathBuf {
    let prefix = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wine-prefix");
    let _ = std::fs::remove_dir_all(&prefix);
    std::fs::create_dir_all(&prefix).expect("make the wine prefix's directory");
    let st = env(StdCommand::new("wineserver"), &prefix)
        .arg("-p300")
        .status()
        .expect("start wineserver");
    assert!(st.success(), "wineserver -p300 failed");
    let st = env(StdCommand::new("wineboot"), &prefix)
        .arg("--init")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run wineboot");
    assert!(st.success(), "wineboot --init failed");
    let src = workspace().join("tests/wine/bcryptprimitives.c");
    let st = StdCommand::new("x86_64-w64-mingw32-gcc")
        .args(["-O2", "-shared", "-o"])
        .arg(prefix.join("drive_c/windows/system32/bcryptprimitives.dll"))
        .arg(&src)
        .arg(src.with_extension("def"))
        .arg("-ladvapi32")
        .status()
        .expect("run x86_64-w64-mingw32-gcc");
    assert!(st.success(), "building bcryptprimitives.dll failed");
    prefix
}

/// Quiet wine, in `prefix`, without the Mono and Gecko installers' prompts.
fn env(mut cmd: StdCommand, prefix: &Path) -> StdCommand {
    cmd.env("WINEPREFIX", prefix)
        .env("WINEDEBUG", "-all")
        .env("WINEDLLOVERRIDES", "mscoree=;mshtml=")
        .env_remove("DISPLAY");
    cmd
}

impl Wine {
    /// `wine barrage.exe ARGS`, with the stop signals at their defaults.
    fn barrage(&self, args: &[&str]) -> StdCommand {
        let mut cmd = signals_at_default(env(StdCommand::new("wine"), &self.prefix));
        cmd.arg(&self.exe).args(args).stdin(Stdio::null());
        cmd
    }

    /// `barrage.exe ARGS -q --json FILE` to the end: exit 0, and the result.
    fn run_json(&self, args: &[&str], dir: &Path) -> Value {
        let json = dir.join("r.json");
        let out = self
            .barrage(args)
            .args(["-q", "--no-tui", "--json"])
            .arg(&json)
            .output()
            .expect("run barrage.exe");
        assert_eq!(
            out.status.code(),
            Some(0),
            "barrage.exe {args:?}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        read_json(&json)
    }

    /// `barrage.exe serve echo` on a free port of 127.0.0.1 with `threads` threads.
    fn echo_server(&self, threads: &str, dir: &Path) -> WinServer {
        self.server("echo", &["--threads", threads], dir)
    }

    /// `barrage.exe serve KIND EXTRA` on a free port of 127.0.0.1; `url` has the kind's scheme.
    fn server(&self, kind: &str, extra: &[&str], dir: &Path) -> WinServer {
        let stats = dir.join(format!("{kind}-stats.json"));
        let mut child = self
            .barrage(&["serve", kind, "--listen", "127.0.0.1:0"])
            .args(extra)
            .args(["--exit-after", "120s", "--stats"])
            .arg(&stats)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn barrage.exe serve echo");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let child = Guard(child);
        let mut first = String::new();
        stdout.read_line(&mut first).expect("read server banner");
        // "barrage echo server listening on 127.0.0.1:PORT (2 threads, pid PID)": the pid is
        // the Windows one, which the monitor needs (wine's process ids are its own).
        let number_after = |key: &str| -> u32 {
            first
                .split_once(key)
                .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| panic!("unexpected server banner: {first:?}"))
        };
        let port = number_after("listening on 127.0.0.1:");
        WinServer {
            pid: number_after("pid "),
            child,
            stdout,
            url: match kind {
                "echo" | "chat" => format!("tcp://127.0.0.1:{port}"),
                other => format!("{other}://127.0.0.1:{port}/"),
            },
            stats,
        }
    }
}

/// A Windows echo server under wine; stopped by Ctrl-C (SIGINT to wine).
struct WinServer {
    /// Its Windows process id.
    pid: u32,
    child: Guard,
    stdout: BufReader<std::process::ChildStdout>,
    url: String,
    stats: PathBuf,
}

impl WinServer {
    /// Ctrl-C, a clean exit, and the `--stats` it wrote.
    fn stop(mut self) -> Value {
        send_signal(self.child.0.id(), "INT");
        let st = wait_at_most(&mut self.child.0, Duration::from_secs(20))
            .expect("barrage.exe serve did not exit within 20 s of Ctrl-C");
        assert!(st.success(), "barrage.exe serve exited with {st}");
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut self.stdout, &mut rest);
        assert!(rest.contains("served:"), "server's last words: {rest:?}");
        read_json(&self.stats)
    }
}

fn conserved(r: &Value) {
    let ex = |k: &str| u(r, &format!("summary.exchanges.{k}"));
    assert_eq!(
        ex("sent"),
        ex("completed") + ex("failed") + ex("in_flight_at_end"),
        "{}",
        field(r, "summary.exchanges")
    );
}

/// The README's test command for Windows, `cargo xtask test --target x86_64-pc-windows-gnu`,
/// with wine as cargo's runner for the target: the unit tests of the engine and the servers,
/// and the monitor's with its Windows integration tests (xtask's `WINDOWS`). Ignored in the
/// suite (its Windows compile takes minutes) and run by `.ci/test` as a phase of its own; by
/// hand: `BARRAGE_WINE=1 cargo test -p barrage --test it wine::the_windows_tests -- --ignored`.
#[test]
#[ignore = "run by .ci/test as its own phase (minutes of Windows compile): -- --ignored"]
fn the_windows_tests_pass_under_wine() {
    let Some(w) = wine() else { return };
    let out = env(cargo(), &w.prefix)
        .args(["run", "--locked", "--quiet", "-p", "xtask", "--target-dir"])
        .arg(target_dir())
        .args(["--", "test", "--locked", "--target", TARGET, "--target-dir"])
        .arg(target_dir())
        .env("CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER", "wine")
        // insta finds the snapshots from here (it cannot run `cargo metadata` under wine).
        .env("INSTA_WORKSPACE_ROOT", workspace())
        .output()
        .expect("run cargo xtask test for Windows");
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "cargo xtask test under wine:\n{text}\n{err}"
    );
    let oks = text.matches("test result: ok").count();
    assert!(
        oks >= 4,
        "the engine, servers, barrage and monitor binaries ran: {text}"
    );
}

#[test]
fn the_demo_runs_under_wine() {
    let Some(w) = wine() else { return };
    let out = w.barrage(&["demo"]).output().expect("run barrage.exe demo");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("Answer") && text.contains("Readiness"),
        "{text}"
    );
    // "Exchanges     sent N = completed C + failed F + in flight I at end", per test.
    let mut seen = 0;
    for line in text.lines().filter(|l| l.starts_with("Exchanges")) {
        let n: Vec<u64> = line
            .split(|c: char| !c.is_ascii_digit() && c != ',')
            .filter_map(|x| x.replace(',', "").parse().ok())
            .collect();
        assert!(n.len() >= 4 && n[0] == n[1] + n[2] + n[3], "{line}");
        seen += 1;
    }
    assert!(seen >= 2, "two tests, each with its exchanges: {text}");
    assert!(text.contains("the echo server served"), "{text}");
}

#[test]
fn an_echo_run_against_the_windows_echo_server_reconciles_exactly() {
    let Some(w) = wine() else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = w.echo_server("2", dir.path());
    let d = dir.path().to_str().unwrap();
    let (report, csv, hdr, out) = (
        format!("{d}/r.html"),
        format!("{d}/r.csv"),
        format!("{d}/r.hdr"),
        format!("{d}/out"),
    );
    let r = w.run_json(
        &[
            &server.url,
            "-c",
            "20",
            "-t",
            "2",
            "-n",
            "3000",
            "-m",
            "hello {seq}",
            "--report",
            &report,
            "--csv",
            &csv,
            "--hdr-log",
            &hdr,
            "--out",
            &out,
        ],
        dir.path(),
    );
    let st = server.stop();
    conserved(&r);
    for f in [&report, &csv, &hdr] {
        let len = std::fs::metadata(f).map_or(0, |m| m.len());
        assert!(len > 0, "{f} written");
    }
    let streamed = read_json(&Path::new(&out).join("result.json"));
    assert_eq!(
        field(&streamed, "summary.exchanges"),
        field(&r, "summary.exchanges")
    );
    assert_eq!(u(&r, "summary.exchanges.completed"), 3000);
    assert_eq!(u(&r, "summary.exchanges.failed"), 0);
    assert_eq!(u(&st, "connections_accepted"), 20);
    assert_eq!(u(&st, "bytes_read"), u(&r, "summary.io.bytes_written"));
    assert_eq!(u(&st, "bytes_written"), u(&r, "summary.io.bytes_read"));
    assert!(
        s(&r, "environment.kernel").starts_with("Windows")
            && s(&r, "environment.kernel").contains("wine"),
        "the result says where it ran: {}",
        s(&r, "environment.kernel")
    );
}

#[test]
fn http_against_linux_nginx_reconciles_with_its_stub_status() {
    let Some(w) = wine() else { return };
    let Some(ngx) = Nginx::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let before = ngx.status();
    let r = w.run_json(
        &[&ngx.url("/"), "-c", "5", "-t", "1", "-n", "1000"],
        dir.path(),
    );
    let (accepts, requests) = crate::interop::nginx_delta(before, ngx.status());
    conserved(&r);
    assert_eq!(u(&r, "summary.exchanges.completed"), 1000);
    assert_eq!(u(&r, "summary.exchanges.failed"), 0);
    assert_eq!(accepts, 5, "connections nginx accepted");
    assert_eq!(requests, 1000, "requests nginx served");
}

#[test]
fn ctrl_c_ends_a_windows_run_with_its_results_written() {
    let Some(w) = wine() else { return };
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut child = w
        .barrage(&[
            server.url(),
            "-c",
            "4",
            "-t",
            "1",
            "-d",
            "60s",
            "--no-tui",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn barrage.exe");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut child = Guard(child);
    // The first status line: the run is under way.
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "barrage.exe ended early"
        );
        if line.starts_with('[') {
            break;
        }
    }
    send_signal(child.0.id(), "INT");
    let status =
        wait_at_most(&mut child.0, Duration::from_secs(30)).expect("barrage.exe ends after Ctrl-C");
    assert_eq!(status.code(), Some(130), "{status}");
    let r = read_json(&json);
    assert_eq!(s(&r, "status"), "interrupted");
    conserved(&r);
    assert!(u(&r, "summary.exchanges.completed") > 0);
    let st = server.stop();
    assert_eq!(u(&st, "bytes_read"), u(&r, "summary.io.bytes_written"));
}

/// The monitor of barrage.exe reads a Windows process (the echo server, by its Windows pid)
/// and the machine under wine: CPU, working set, private bytes, handles and threads, every
/// second, and the readiness rows that need them are judged, not "n/a". (What wine does not
/// give, socket owners and context switches, is listed in README.md.)
#[test]
fn the_monitor_reads_a_windows_server_under_wine() {
    let Some(w) = wine() else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = w.echo_server("2", dir.path());
    let pid = server.pid.to_string();
    let r = w.run_json(
        &[
            &server.url,
            "-c",
            "50",
            "-t",
            "1",
            "--rate",
            "2000",
            "-d",
            "6s",
            "--monitor",
            &pid,
            "--recovery",
            "1s",
        ],
        dir.path(),
    );
    let st = server.stop();
    conserved(&r);
    assert_eq!(u(&st, "bytes_read"), u(&r, "summary.io.bytes_written"));
    let procs = field(&r, "monitor.processes").as_array().unwrap();
    assert_eq!(procs.len(), 1, "{procs:?}");
    assert_eq!(u(&procs[0], "pid").to_string(), pid);
    // Wine gives the image's path, not the command line.
    assert!(
        s(&procs[0], "command").contains("barrage.exe"),
        "{}",
        procs[0]
    );
    let samples = field(&procs[0], "samples").as_array().unwrap();
    assert!(samples.len() >= 2, "{samples:?}");
    let any = |k: &str| samples.iter().any(|x| f(x, k) > 0.0);
    let all = |k: &str| samples.iter().all(|x| f(x, k) > 0.0);
    assert!(
        any("cpu_pct"),
        "the server's CPU while it echoed: {samples:?}"
    );
    assert!(
        all("rss_bytes") && all("private_bytes") && all("fds"),
        "{samples:?}"
    );
    assert!(
        samples.iter().all(|x| u(x, "threads") >= 3),
        "main and two loops: {samples:?}"
    );
    let host = field(&r, "monitor.host").as_array().unwrap();
    assert!(!host.is_empty());
    assert!(host.iter().all(|h| f(h, "mem_total_bytes") > 0.0));
    let cores = u(&r, "environment.cores") as usize;
    assert!(host
        .iter()
        .all(|h| field(h, "per_core_pct").as_array().unwrap().len() == cores));
    let generator = field(&r, "monitor.generator").as_array().unwrap();
    assert!(
        generator.iter().any(|x| f(x, "cpu_pct") > 0.0),
        "barrage.exe's own CPU"
    );
}

/// `--processes 2` on Windows: two children in their own process groups (and the parent's
/// job), their streams in a locked temporary directory, merged exactly; both read one host's
/// clock (the boot id), and the temporary directory is gone afterwards.
#[test]
fn processes_split_and_merge_exactly_under_wine() {
    let Some(w) = wine() else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = w.echo_server("2", dir.path());
    let r = w.run_json(
        &[
            &server.url,
            "-c",
            "10",
            "-t",
            "1",
            "-n",
            "4000",
            "--processes",
            "2",
        ],
        dir.path(),
    );
    let st = server.stop();
    conserved(&r);
    assert_eq!(s(&r, "message"), "2 processes merged");
    assert_eq!(u(&r, "summary.exchanges.completed"), 4000);
    assert_eq!(u(&st, "connections_accepted"), 10);
    assert_eq!(u(&st, "bytes_read"), u(&r, "summary.io.bytes_written"));
    let clocks = field(&r, "environment.clocks").as_array().unwrap();
    let boot = s(&clocks[0], "boot_id");
    assert!(boot.starts_with("windows-boot-"), "{clocks:?}");
    assert!(clocks.iter().all(|c| s(c, "boot_id") == boot), "{clocks:?}");
    let temp = w.prefix.join("drive_c/users");
    let left: Vec<_> = walk(&temp)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("barrage-shards-"))
        .collect();
    assert!(
        left.is_empty(),
        "the shards' temporary directory is removed: {left:?}"
    );
}

/// Every path under `dir` (the prefix's user folders, where Windows' temporary directory is).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir() && !t.is_symlink()) {
                todo.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}

/// The other reference servers as Windows servers, driven by barrage.exe: HTTP keep-alive
/// against `serve http`, WebSocket echo against `serve ws`, and a scenario of 120 chat users
/// in rooms over WebSocket against `serve chat`, whose deliveries reconcile exactly.
#[test]
fn http_websocket_and_chat_rooms_against_the_windows_servers() {
    let Some(w) = wine() else { return };
    let dir = tempfile::tempdir().unwrap();
    let http = w.server("http", &["--threads", "1"], dir.path());
    let r = w.run_json(&[&http.url, "-c", "5", "-t", "1", "-n", "1000"], dir.path());
    let st = http.stop();
    conserved(&r);
    assert_eq!(u(&r, "summary.exchanges.completed"), 1000);
    assert_eq!(u(&st, "http.requests"), 1000);

    let ws = w.server("ws", &["--threads", "1"], dir.path());
    let r = w.run_json(
        &[
            &ws.url, "-c", "5", "-t", "1", "-n", "1000", "-m", "hi {seq}",
        ],
        dir.path(),
    );
    let st = ws.stop();
    conserved(&r);
    assert_eq!(u(&r, "summary.exchanges.completed"), 1000);
    assert_eq!(u(&st, "ws.messages_in"), 1000, "{st}");

    let example = example_without_thresholds("chat-ws.toml", dir.path());
    let chat = w.server("chat", &["--threads", "1", "--seed", "3"], dir.path());
    let target = chat.url.replace("tcp://", "ws://") + "/chat";
    let example = example.to_str().unwrap();
    let v = w.run_json(
        &[
            "run", example, "--target", &target, "--users", "120", "--arrive", "1000", "--hold",
            "4s",
        ],
        dir.path(),
    );
    let stats = chat.stop();
    let (c, b) = (&stats["chat"], &v["summary"]["broadcast"]);
    let n = |x: &Value, k: &str| x[k].as_u64().unwrap();
    assert_eq!((n(c, "logins"), n(c, "leaves")), (120, 120));
    assert_eq!(n(b, "sent"), n(c, "messages_in"));
    assert_eq!(n(b, "delivered"), n(c, "deliveries_out"));
    // Every expected delivery arrived or is owed at the end (a message sent as the users
    // depart, on a loaded machine, may reach fewer than the room it saw); none was lost in a
    // gap or came twice.
    assert_eq!(n(b, "delivered") + n(b, "missing"), n(b, "expected"));
    assert_eq!((n(b, "lost"), n(b, "duplicates")), (0, 0));
}

/// TLS on Windows: `wss://` from barrage.exe to `barrage.exe serve ws --tls-cert` (rustls with
/// ring, built by mingw-w64), the certificate verified against the test's CA; counts
/// reconciled, and another CA of the same name refused (the signature does not verify).
#[test]
fn wss_between_the_windows_builds_verifies_and_reconciles() {
    use crate::pki::{pki, Validity};
    let Some(w) = wine() else { return };
    let pki = pki(&["localhost", "127.0.0.1"], Validity::Now);
    let (cert, key) = (pki.cert.to_str().unwrap(), pki.key.to_str().unwrap());
    let ws = w.server(
        "ws",
        &["--threads", "1", "--tls-cert", cert, "--tls-key", key],
        pki.dir.path(),
    );
    let url = ws.url.replace("ws://127.0.0.1", "wss://localhost");
    let ca = pki.ca.to_str().unwrap();
    let r = w.run_json(
        &[&url, "-c", "4", "-t", "1", "-n", "800", "--cacert", ca],
        pki.dir.path(),
    );
    // The CA of another PKI: refused before any load.
    let other = crate::pki::pki(&["localhost"], Validity::Now);
    let out = w
        .barrage(&[
            &url,
            "-c",
            "1",
            "-n",
            "1",
            "--cacert",
            other.ca.to_str().unwrap(),
        ])
        .arg("--no-tui")
        .output()
        .unwrap();
    let st = ws.stop();
    conserved(&r);
    assert_eq!(u(&r, "summary.exchanges.completed"), 800);
    assert_eq!(u(&st, "ws.messages_in"), 800, "{st}");
    assert_eq!(u(&st, "ws.protocol_errors"), 0, "{st}");
    assert_ne!(out.status.code(), Some(0));
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    // The other CA has the same name as the server's issuer: its signature does not verify.
    assert!(text.contains("invalid peer certificate"), "{text}");
}
