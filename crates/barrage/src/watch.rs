//! Watching the server under test: `--monitor PID|auto`, `--spawn CMD`, `--recovery D`.
//!
//! The sampling itself is `barrage-monitor`'s (its own thread, off the hot path). This module
//! resolves what to watch before the load (a PID that does not exist or an `auto` that finds
//! no listener is a usage error, a server that fails to start stops the run before any load),
//! starts the sampler on the run's clock, keeps it running through the recovery window, and
//! stops a spawned server afterwards.

use crate::cli::RunArgs;
use crate::config::Usage;
use barrage_metrics::{MonitorSeries, SpawnRecord};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a spawned server may take to accept connections, and to stop after SIGTERM.
const READY_TIMEOUT: Duration = Duration::from_secs(15);
const STOP_GRACE: Duration = Duration::from_secs(5);

/// What to watch, resolved from the command line.
pub struct WatchPlan {
    pids: Vec<u32>,
    spawn: Option<String>,
    interval: Duration,
    recovery: Duration,
    target: SocketAddr,
}

/// `None` when nothing is to be watched.
pub fn plan(a: &RunArgs, target: SocketAddr) -> Result<Option<WatchPlan>, Usage> {
    if a.monitor.is_empty() && a.spawn.is_none() {
        if a.recovery.is_some() {
            return Err(Usage(
                "--recovery watches the server after the load: add --monitor PID|auto or --spawn CMD"
                    .into(),
            ));
        }
        return Ok(None);
    }
    if !cfg!(target_os = "linux") {
        return Err(Usage("--monitor and --spawn need Linux (/proc)".into()));
    }
    let mut pids = Vec::new();
    for m in &a.monitor {
        if m == "auto" {
            if a.spawn.is_some() {
                return Err(Usage(
                    "--monitor auto and --spawn: the spawned server is watched anyway; drop --monitor auto"
                        .into(),
                ));
            }
            let pid = barrage_monitor::listener_pid(target.port()).ok_or_else(|| {
                Usage(format!(
                    "--monitor auto: no process on this machine listens on port {} (or it belongs to another user); give --monitor PID",
                    target.port()
                ))
            })?;
            pids.push(pid);
        } else {
            let pid: u32 = m
                .parse()
                .map_err(|_| Usage(format!("--monitor {m}: give a process id or `auto`")))?;
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                return Err(Usage(format!("--monitor {pid}: no such process")));
            }
            pids.push(pid);
        }
    }
    Ok(Some(WatchPlan {
        pids,
        spawn: a.spawn.clone(),
        interval: a.monitor_interval,
        recovery: a.recovery.unwrap_or(Duration::from_secs(10)),
        target,
    }))
}

pub struct Watch {
    monitor: barrage_monitor::Monitor,
    spawned: Option<(barrage_monitor::Spawned, String, f64)>,
    recovery: Duration,
}

impl WatchPlan {
    /// Start the server (with `--spawn`) and the sampler; the returned instant is the run's
    /// clock origin, to be taken just before the load starts.
    pub fn start(mut self) -> anyhow::Result<(Watch, Instant)> {
        let mut spawned = None;
        if let Some(cmd) = self.spawn.take() {
            let t = Instant::now();
            let s = barrage_monitor::spawn_server(&cmd, self.target, READY_TIMEOUT)
                .map_err(|e| anyhow::anyhow!("--spawn '{cmd}': {e}"))?;
            self.pids.push(s.pid());
            spawned = Some((s, cmd, t.elapsed().as_secs_f64() * 1e3));
        }
        let base = Instant::now();
        let monitor = barrage_monitor::Monitor::start(barrage_monitor::MonitorConfig {
            pids: self.pids,
            include_children: true,
            interval: self.interval,
            base,
            include_self: true,
        })?;
        Ok((
            Watch {
                monitor,
                spawned,
                recovery: self.recovery,
            },
            base,
        ))
    }
}

impl Watch {
    /// After the load: sample through the recovery window (a signal cuts it short), stop the
    /// sampler and the spawned server.
    pub fn finish(self, stop: &Arc<AtomicBool>, quiet: bool) -> (MonitorSeries, Option<SpawnRecord>) {
        // After an interrupt the user wants out: no recovery window.
        if !self.recovery.is_zero() && !stop.load(Ordering::Relaxed) {
            if !quiet {
                eprintln!(
                    "[recovery] watching the server for {:.0} s after the load",
                    self.recovery.as_secs_f64()
                );
            }
            let end = Instant::now() + self.recovery;
            while Instant::now() < end && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let series = self.monitor.stop();
        let record = self.spawned.map(|(s, command, ready_ms)| {
            let pid = s.pid();
            let r = s.stop(STOP_GRACE);
            SpawnRecord {
                command,
                pid,
                ready_after_ms: ready_ms,
                exited_cleanly: r.exited_cleanly,
                exit_code: r.exit_code,
                signal: r.signal,
                stop_took_ms: r.took.as_secs_f64() * 1e3,
                killed: r.killed,
            }
        });
        (series, record)
    }
}
