//! barrage-monitor: samples the server under test, the machine and barrage itself while a load
//! test runs, and starts (and stops) a server for a run.
//!
//! It produces the plain records of `barrage_metrics::monitor` ([`ProcSample`], [`HostSample`],
//! [`MonitorSeries`]) on the run's timeline. The sampler is platform-free; what it reads comes
//! from one platform boundary (`os/`), with a backend per system:
//!
//! * Linux: `/proc`, read by a few hand-written parsers (pure functions over the text,
//!   unit-tested on fixed samples) rather than a general /proc crate; the socket table of
//!   barrage's own network namespace comes from a sock_diag netlink dump: /proc/net/tcp costs
//!   milliseconds per thousand sockets, TIME_WAIT included, and a load test leaves plenty.
//! * Windows: the Win32 and NT APIs (windows-sys). A process is held by an open handle; its
//!   counters come from the system's process list (NtQuerySystemInformation): CPU, working set
//!   as `rss_bytes` (peak working set as `rss_peak_bytes`), commit charge as `private_bytes`,
//!   handles as `fds`, threads, and every context switch in `ctx_voluntary`
//!   (`ctx_involuntary` is 0: Windows does not split them). Children are found by creator pid
//!   and creation time. TCP states and [`listener_pid`] come from GetExtendedTcpTable by
//!   owning pid; the host from SystemProcessorPerformanceInformation, GlobalMemoryStatusEx,
//!   GetIfTable2 and the TCP table. [`spawn_server`] runs `cmd /S /C "CMD"` in a new process
//!   group and a kill-on-close job object; stopping sends CTRL_BREAK (which reaches it only if
//!   barrage has a console; otherwise it is killed at once), then terminates the job.
//! * Elsewhere (macOS): [`Monitor::start`] and [`listener_pid`] return
//!   [`MonitorError::Unsupported`]; [`spawn_server`] works on any Unix.
//!
//! * [`Monitor`]: one sampling thread, off the hot path; the engine never touches it.
//! * [`listener_pid`]: which process listens on a port (`--monitor auto`).
//! * [`spawn_server`]: run a server command, wait until its port accepts, stop it with
//!   everything it started.
//!
//! # What wine cannot show
//!
//! The Windows backend's tests run under wine 8.0 here; measured there (and asserted as such
//! in `tests/it/windows.rs`, which tells wine by ntdll's `wine_get_version`):
//! * Socket owners: GetExtendedTcpTable lists the sockets (wine reads the Linux host's tables)
//!   but every owning pid is 0, so a process's TCP states read 0 and [`listener_pid`] returns
//!   [`MonitorError::ListenerNotVisible`] for a port that does listen. The owner-pid table
//!   cost 2-3 s per call in one measurement (~4,000 rows) and seconds more on a busy machine,
//!   so the sampler does not ask for it under wine (per-process TCP states read 0 either way);
//!   host TCP counts use the table without owners (15-40 ms).
//! * Context switches: the process list shows each thread with 0 switches.
//! * GetProcessTimes and GetProcessHandleCount of another process: the first returned the
//!   calling process's times, the second 0 (hence the process list, which is right under wine,
//!   as the source); PROCESS_MEMORY_COUNTERS_EX.PrivateUsage is 0 (PagefileUsage is used).
//! * CTRL_BREAK: a test process under wine has no console, so `Spawned::stop` kills the job
//!   at once (`killed`, exit code 1) instead of asking first.
//! * Rust's std needs bcryptprimitives.dll, which wine 8.0 lacks: the tests ran with a
//!   one-function stand-in (ProcessPrng over BCryptGenRandom) in the prefix's system32.
//!
//! [`ProcSample`]: barrage_metrics::ProcSample
//! [`HostSample`]: barrage_metrics::HostSample
//! [`MonitorSeries`]: barrage_metrics::MonitorSeries

mod expo;
mod host;
mod os;
mod sampler;
mod scrape;
mod spawn;

pub use expo::{Exposition, Selector};
pub use sampler::{Latest, LatestProcess, Monitor, MonitorConfig, MIN_INTERVAL};
pub use scrape::{Scraper, Url as MetricsUrl};
pub use spawn::{spawn_server, SpawnError, Spawned, StopReport};

use std::io;
use std::time::Duration;

/// Whether this platform can be monitored (Linux and Windows; elsewhere [`Monitor::start`]
/// returns [`MonitorError::Unsupported`]).
pub const SUPPORTED: bool = os::SUPPORTED;

/// Whether this process runs under wine (Windows builds only; its ntdll exports
/// `wine_get_version`): what wine cannot show is then left out, see the crate docs.
pub fn under_wine() -> bool {
    os::under_wine()
}

/// Whether a live process with this id exists for the monitor (a zombie does not; on Windows
/// a process this user may not open does not either).
pub fn process_exists(pid: u32) -> bool {
    os::Process::open(pid, &mut Default::default()).is_some()
}

/// The process that owns a socket listening on `port` (any address, IPv4 or IPv6), for
/// `--monitor auto`. When several hold it (a pre-forked server: master and workers share the
/// listening socket; or SO_REUSEPORT), the oldest wins, which is the one that opened it.
///
/// `Ok(None)`: nothing listens on the port. [`MonitorError::ListenerNotVisible`]: something
/// does, but no process we may inspect holds it (Linux: whose file descriptors we may read;
/// Windows: the table names no owner, or the System process). Processes we may not inspect
/// are skipped.
pub fn listener_pid(port: u16) -> Result<Option<u32>, MonitorError> {
    os::listener_pid(port)
}

/// Why monitoring could not start (or a port's owner could not be found).
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// Neither Linux nor Windows: no backend to read processes with.
    #[error("monitoring needs Linux or Windows; this is {os}")]
    Unsupported { os: &'static str },
    /// A pid given to monitor does not exist (or is already a zombie).
    #[error("no process with pid {pid} to monitor")]
    NoSuchProcess { pid: u32 },
    /// Something listens on the port, but in a process whose file descriptors we may not read
    /// (Windows: the socket table names no owner, or the System process).
    #[error(
        "a process listens on port {port}, but it is not ours to inspect \
         (run barrage as the same user or as root, or give --monitor PID)"
    )]
    ListenerNotVisible { port: u16 },
    #[error("monitor interval {interval:?} is too short (at least {min:?})")]
    IntervalTooShort { interval: Duration, min: Duration },
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot start the monitor thread: {0}")]
    Thread(#[source] io::Error),
}

impl MonitorError {
    fn unsupported() -> Self {
        MonitorError::Unsupported {
            os: std::env::consts::OS,
        }
    }
}
