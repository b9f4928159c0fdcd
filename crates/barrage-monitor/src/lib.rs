//! barrage-monitor: samples the server under test, the machine and barrage itself while a load
//! test runs, and starts (and stops) a server for a run.
//!
//! It produces the plain records of `barrage_metrics::monitor` ([`ProcSample`], [`HostSample`],
//! [`MonitorSeries`]) on the run's timeline. Everything comes from `/proc`, read by a few
//! hand-written parsers (pure functions over the text, unit-tested on fixed samples) rather than
//! a general /proc crate: the monitor reads about ten files, and the parsers stay small. The
//! one exception is the socket table of barrage's own network namespace, which comes from a
//! sock_diag netlink dump (`tcp/diag.rs`): /proc/net/tcp costs milliseconds per thousand
//! sockets, TIME_WAIT included, and a load test leaves plenty of those.
//!
//! * [`Monitor`]: one sampling thread, off the hot path; the engine never touches it.
//! * [`listener_pid`]: which process listens on a port (`--monitor auto`).
//! * [`spawn_server`]: run a server command, wait until its port accepts, stop it by its
//!   process group.
//!
//! Linux only for the monitor: elsewhere [`Monitor::start`] and [`listener_pid`] return
//! [`MonitorError::Unsupported`]. [`spawn_server`] works on any Unix.
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
    /// Not Linux: there is no /proc to read.
    #[error("monitoring needs Linux (it reads /proc); this is {os}")]
    Unsupported { os: &'static str },
    /// A pid given to monitor does not exist (or is already a zombie).
    #[error("no process with pid {pid} to monitor")]
    NoSuchProcess { pid: u32 },
    /// Something listens on the port, but in a process whose file descriptors we may not read.
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
