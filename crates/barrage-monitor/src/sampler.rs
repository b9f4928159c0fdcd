//! The monitor: one sampling thread, off the hot path, that reads the monitored processes, the
//! machine and (optionally) barrage itself every interval, on the run's timeline.
//!
//! Samples are due at `base + k * interval` (the run's clock, so they line up with the ticks);
//! a sample that comes late does not shift the ones after it, and slots missed while a sample
//! overran are skipped, not caught up. Rates divide by the measured time between two readings,
//! not by the nominal interval. The full series lives in the thread and comes back from
//! [`Monitor::stop`]; a live view reads [`Monitor::latest`], a copy behind a mutex that the
//! thread replaces once per sample (the engine never touches either).
//!
//! The readings come from the platform's backend (`os`); this part is platform-free.
//!
//! Cost per sample on Linux: a few small /proc files per process, one status file per thread,
//! the open fd count (one `stat` of `/proc/<pid>/fd` on Linux ≥ 6.2, a listing before), and
//! four host files; and, paced by their own cost
//! ([`ScanPacer`]), one readlink per open fd to tie sockets to a process (~3-6 µs each) and one
//! sock_diag walk of the socket table per network namespace for their TCP states. Measured
//! here: well under 1 ms for an idle server; ~25 ms for a server holding 4,000 connections
//! when both paced parts run (every sample at that size). On Windows: one system process list
//! and a few calls on an open handle per process, and the machine's TCP tables (paced alike).

mod track;

use track::ScanPacer;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use barrage_metrics::{HostSample, MonitorSeries, ProcSample, TcpStates};

use crate::host::{self, HostReading};
use crate::os::{self, ProcReading, Scratch, TcpCounter};
use crate::MonitorError;
use track::Tracked;

/// The shortest interval the monitor accepts (below it /proc's 10 ms CPU ticks are noise).
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// What to monitor, and on which clock.
#[derive(Clone, Debug)]
pub struct MonitorConfig {
    /// Processes to sample (the server under test).
    pub pids: Vec<u32>,
    /// Sum each process's descendants (CPU, RSS, threads, fds, sockets) into its samples.
    pub include_children: bool,
    pub interval: Duration,
    /// The run's start: a sample's `t` is seconds since then, like the ticks'.
    pub base: Instant,
    /// Also sample barrage's own process (`MonitorSeries::generator`).
    pub include_self: bool,
    /// With `include_self`: barrage's children too (the shard processes of `--processes`).
    pub self_children: bool,
    /// TCP states per process (tying sockets to processes: one `readlink` per open fd and a
    /// walk of the socket table, paced by their cost). Without them a sample reads a few small
    /// files per process and the host's counters: what every unasked run takes.
    pub sockets: bool,
}

/// The most recent sample of everything, for a live view.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Latest {
    pub t: f64,
    /// In the order of `MonitorConfig::pids`.
    pub processes: Vec<LatestProcess>,
    pub host: Option<HostSample>,
    pub generator: Option<ProcSample>,
}

/// One monitored process in [`Latest`].
#[derive(Clone, Debug, PartialEq)]
pub struct LatestProcess {
    pub pid: u32,
    /// False once it exited: `sample` is then its last one.
    pub running: bool,
    pub sample: Option<ProcSample>,
}

/// A running monitor; [`Monitor::stop`] (or dropping it) ends the sampling thread.
pub struct Monitor {
    /// Dropping it tells the thread to stop (it waits on the receiver between samples).
    stop: Option<Sender<()>>,
    /// Returns the whole series when joined; taken by `stop` or `drop`.
    thread: Option<JoinHandle<MonitorSeries>>,
    /// Written by the thread once per sample, read by `latest` and the overhead getters.
    shared: Arc<Shared>,
    interval: Duration,
    warnings: Vec<String>,
}

#[derive(Default)]
struct Shared {
    latest: Mutex<Option<Latest>>,
    /// The first sample of everything (the idle baseline), kept.
    first: Mutex<Option<Latest>>,
    /// CPU time the sampling thread has used so far, in ns.
    cpu_ns: AtomicU64,
    /// The sampling thread's kernel (Linux) or Win32 (Windows) id (0 until it runs).
    tid: AtomicU32,
}

impl Monitor {
    /// Takes a first reading of every process (an unknown pid is an error) and of the machine,
    /// then starts the sampling thread. The first sample is the first slot at least half an
    /// interval away, so its rates cover a meaningful span.
    pub fn start(config: MonitorConfig) -> Result<Monitor, MonitorError> {
        if !os::SUPPORTED {
            return Err(MonitorError::unsupported());
        }
        if config.interval < MIN_INTERVAL {
            return Err(MonitorError::IntervalTooShort {
                interval: config.interval,
                min: MIN_INTERVAL,
            });
        }
        let mut buf = Scratch::default();
        let mut warnings = Vec::new();
        let mut tracked = Vec::new();
        let own = config
            .include_self
            .then_some((std::process::id(), config.self_children, true))
            .into_iter();
        let wanted = config
            .pids
            .iter()
            .map(|&p| (p, config.include_children, true));
        for (pid, children, sockets) in wanted.chain(own) {
            let t = Tracked::start(pid, children, sockets && config.sockets, &mut buf)?;
            if !t.fds_readable {
                warnings.push(os::fds_warning(pid));
            }
            tracked.push(t);
        }
        let host = os::read_host(&mut buf)
            .map_err(|e| {
                let from = os::HOST_SOURCE;
                warnings.push(format!("no host samples: cannot read {from}: {e}"))
            })
            .ok();
        let shared = Arc::new(Shared::default());
        let sampler = Sampler {
            base: config.base,
            interval: config.interval,
            with_self: config.include_self,
            sockets: config.sockets,
            tracked,
            host,
            host_samples: Vec::new(),
            cores: os::online_cores() as f64,
            buf,
            tcp_counter: TcpCounter::new(),
            tcp: Vec::new(),
            tcp_pacer: ScanPacer::default(),
            shared: Arc::clone(&shared),
        };
        let (tx, rx) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("barrage-monitor".into())
            .spawn(move || sampler.run(rx))
            .map_err(MonitorError::Thread)?;
        Ok(Monitor {
            stop: Some(tx),
            thread: Some(thread),
            shared,
            interval: config.interval,
            warnings,
        })
    }

    /// The first samples of everything, once every process has one (the idle baseline;
    /// `None` before it).
    pub fn first(&self) -> Option<Latest> {
        let first = self.shared.first.lock();
        first.unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The latest sample of everything (`None` before the first one).
    pub fn latest(&self) -> Option<Latest> {
        let latest = self.shared.latest.lock();
        latest.unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// What the monitor cannot see (unreadable fds, no host counters), for the user.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// CPU time the sampling thread has used so far: the monitor's own overhead.
    pub fn sampler_cpu_time(&self) -> Duration {
        Duration::from_nanos(self.shared.cpu_ns.load(Ordering::Relaxed))
    }

    /// The sampling thread's id (Linux: `/proc/self/task/<tid>`; Windows: its thread id),
    /// once it runs.
    pub fn sampler_tid(&self) -> Option<u32> {
        Some(self.shared.tid.load(Ordering::Relaxed)).filter(|&t| t != 0)
    }

    /// Stops the sampling thread and returns every sample taken.
    pub fn stop(mut self) -> MonitorSeries {
        self.finish()
    }

    fn finish(&mut self) -> MonitorSeries {
        drop(self.stop.take());
        let lost = || MonitorSeries {
            interval_s: self.interval.as_secs_f64(),
            ..MonitorSeries::default()
        };
        match self.thread.take() {
            // A panic in the thread was already reported by the hook; keep the run going.
            Some(thread) => thread.join().unwrap_or_else(|_| lost()),
            None => lost(),
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.finish();
        }
    }
}

/// The sampling thread's state; owned by the thread.
struct Sampler {
    base: Instant,
    interval: Duration,
    /// The last of `tracked` is barrage itself.
    with_self: bool,
    /// TCP states are counted (`MonitorConfig::sockets`).
    sockets: bool,
    tracked: Vec<Tracked>,
    /// The previous host reading (`None`: its CPU counters unreadable, no host samples).
    host: Option<HostReading>,
    host_samples: Vec<HostSample>,
    cores: f64,
    buf: Scratch,
    tcp_counter: TcpCounter,
    /// The TCP states of the last walk, per tracked process, and when the next is due.
    tcp: Vec<TcpStates>,
    tcp_pacer: ScanPacer,
    shared: Arc<Shared>,
}

impl Sampler {
    fn run(mut self, stop: Receiver<()>) -> MonitorSeries {
        self.shared.tid.store(os::thread_id(), Ordering::Relaxed);
        let base = self.base;
        let elapsed = |now: Instant| now.saturating_duration_since(base);
        let mut k = next_slot(elapsed(Instant::now()), self.interval, self.interval / 2);
        loop {
            let due = self.base + slot_time(k, self.interval);
            match stop.recv_timeout(due.saturating_duration_since(Instant::now())) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
            }
            self.sample();
            let cpu = os::thread_cpu_time().as_nanos() as u64;
            self.shared.cpu_ns.store(cpu, Ordering::Relaxed);
            let next = next_slot(
                elapsed(Instant::now()),
                self.interval,
                Duration::from_nanos(1),
            );
            k = next.max(k + 1);
        }
        self.into_series()
    }

    fn sample(&mut self) {
        let now = Instant::now();
        let t = now.saturating_duration_since(self.base).as_secs_f64();
        let readings: Vec<Option<(Instant, ProcReading)>> = self
            .tracked
            .iter_mut()
            .map(|p| p.read(&mut self.buf))
            .collect();
        let start = Instant::now();
        if self.sockets && self.tcp_pacer.due(start) {
            self.tcp = self.tcp_states(&readings);
            self.tcp_pacer.scanned(start, Instant::now());
        }
        for (i, (p, r)) in self.tracked.iter_mut().zip(readings).enumerate() {
            let tcp = self.tcp.get(i).copied().unwrap_or_default();
            if let Some((at, r)) = r {
                p.record(at, t, r, tcp, self.cores);
            }
        }
        if let Some(prev) = &self.host {
            if let Ok(cur) = os::read_host(&mut self.buf) {
                let levels = os::host_levels(&mut self.buf);
                self.host_samples.push(host::sample(prev, &cur, t, levels));
                self.host = Some(cur);
            }
        }
        self.publish(t);
    }

    /// TCP states of each reading's sockets (listed by the backend once per sample).
    fn tcp_states(&mut self, readings: &[Option<(Instant, ProcReading)>]) -> Vec<TcpStates> {
        let procs: Vec<(u32, Option<&HashSet<u64>>)> = self
            .tracked
            .iter()
            .zip(readings)
            .map(|(p, r)| (p.pid, r.as_ref().map(|(_, r)| &r.sockets)))
            .collect();
        self.tcp_counter.count(&procs)
    }

    fn publish(&self, t: f64) {
        let (servers, own) = self.split();
        let latest = Latest {
            t,
            processes: servers
                .iter()
                .map(|p| LatestProcess {
                    pid: p.pid,
                    running: p.running(),
                    sample: p.samples.last().cloned(),
                })
                .collect(),
            host: self.host_samples.last().cloned(),
            generator: own.and_then(|p| p.samples.last().cloned()),
        };
        let mut first = self
            .shared
            .first
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // The first with a sample of every process (a process's first reading only sets the
        // base of its rates): the series' first samples, t = 0 on the run's clock.
        if first.is_none() && latest.processes.iter().all(|p| p.sample.is_some()) {
            *first = Some(latest.clone());
        }
        drop(first);
        *self
            .shared
            .latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(latest);
    }

    /// (monitored processes, barrage itself)
    fn split(&self) -> (&[Tracked], Option<&Tracked>) {
        match self.tracked.split_last() {
            Some((own, servers)) if self.with_self => (servers, Some(own)),
            _ => (&self.tracked, None),
        }
    }

    fn into_series(mut self) -> MonitorSeries {
        let generator = if self.with_self {
            self.tracked.pop().map(|p| p.samples).unwrap_or_default()
        } else {
            Vec::new()
        };
        MonitorSeries {
            interval_s: self.interval.as_secs_f64(),
            processes: self.tracked.into_iter().map(Tracked::into_series).collect(),
            host: self.host_samples,
            generator,
            unasked: false,
        }
    }
}

/// The first slot `k >= 1` due at least `min_gap` after `elapsed` (slot k is due at
/// `k * interval` after the base).
fn next_slot(elapsed: Duration, interval: Duration, min_gap: Duration) -> u64 {
    let step = interval.as_nanos().max(1);
    let k = (elapsed + min_gap).as_nanos().div_ceil(step);
    k.clamp(1, u64::MAX as u128) as u64
}

fn slot_time(k: u64, interval: Duration) -> Duration {
    let ns = interval.as_nanos().saturating_mul(k as u128);
    Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_are_scanned_again_after_twenty_times_their_cost() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut p = ScanPacer::default();
        assert!(p.due(t0), "the first scan is due at once");
        // A 2 ms scan (a few hundred fds): due again 38 ms after it, every 1 s sample scans.
        p.scanned(t0, t0 + ms(2));
        assert!(!p.due(t0 + ms(39)));
        assert!(p.due(t0 + ms(40)));
        // A 1.2 s scan (200,000 fds): the next 22.8 s later, so ~5 % of a core.
        p.scanned(t0, t0 + ms(1200));
        assert!(!p.due(t0 + ms(23_999)));
        assert!(p.due(t0 + ms(24_000)));
    }

    const S: Duration = Duration::from_secs(1);
    const MS: Duration = Duration::from_millis(1);
    const NS: Duration = Duration::from_nanos(1);

    #[test]
    fn slots_are_aligned_on_the_base() {
        assert_eq!(next_slot(Duration::ZERO, S, NS), 1);
        assert_eq!(
            next_slot(S, S, NS),
            2,
            "a sample taken exactly at a slot waits for the next"
        );
        assert_eq!(next_slot(1500 * MS, S, NS), 2);
        assert_eq!(next_slot(3700 * MS, S, NS), 4, "missed slots are skipped");
        assert_eq!(slot_time(4, 250 * MS), S);
    }

    #[test]
    fn the_first_slot_is_at_least_half_an_interval_away() {
        assert_eq!(next_slot(Duration::ZERO, S, S / 2), 1);
        assert_eq!(next_slot(400 * MS, S, S / 2), 1);
        assert_eq!(next_slot(600 * MS, S, S / 2), 2);
        assert_eq!(next_slot(2950 * MS, S, S / 2), 4);
    }

    #[test]
    fn start_refuses_unknown_pids_and_tiny_intervals() {
        if !os::SUPPORTED {
            let cfg = config(vec![], S);
            assert!(matches!(
                Monitor::start(cfg),
                Err(MonitorError::Unsupported { .. })
            ));
            return;
        }
        let err = Monitor::start(config(vec![u32::MAX - 1], S)).err().unwrap();
        assert!(matches!(err, MonitorError::NoSuchProcess { pid } if pid == u32::MAX - 1));
        let err = Monitor::start(config(vec![], MS)).err().unwrap();
        assert!(matches!(err, MonitorError::IntervalTooShort { .. }));
    }

    #[test]
    fn samples_self_and_host_and_stops_promptly() {
        if !os::SUPPORTED {
            return;
        }
        let mut cfg = config(vec![std::process::id()], 20 * MS);
        cfg.include_self = true;
        let m = Monitor::start(cfg).unwrap();
        let began = Instant::now();
        // (Generous: under wine the first sample's TCP table takes seconds.)
        while m.latest().is_none_or(|l| l.host.is_none()) {
            assert!(began.elapsed() < 30 * S, "no sample");
            thread::sleep(5 * MS);
        }
        let latest = m.latest().unwrap();
        assert_eq!(latest.processes.len(), 1);
        assert!(latest.processes[0].running && latest.generator.is_some());
        assert!(m.sampler_tid().is_some());
        let stopping = Instant::now();
        let series = m.stop();
        assert!(stopping.elapsed() < S, "stop waits for no slot");
        assert_eq!(series.interval_s, 0.02);
        assert_eq!(series.processes[0].pid, std::process::id());
        assert!(!series.processes[0].command.is_empty());
        let s = &series.processes[0].samples;
        assert!(!s.is_empty() && s.len() == series.generator.len() && !series.host.is_empty());
        assert!(s.windows(2).all(|w| w[0].t < w[1].t));
        assert!(s[0].rss_bytes > 0 && s[0].threads >= 2 && s[0].fds >= 3);
    }

    fn config(pids: Vec<u32>, interval: Duration) -> MonitorConfig {
        MonitorConfig {
            pids,
            include_children: false,
            interval,
            base: Instant::now(),
            include_self: false,
            self_children: false,
            sockets: true,
        }
    }
}
