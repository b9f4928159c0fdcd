//! One monitored process across samples: its previous reading, and readings -> rates.
//!
//! A process that exits (or whose pid now names another process) stops being read: its
//! samples so far are kept, nothing more is recorded, and nothing fails.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use barrage_metrics::{ProcSample, ProcessSeries, TcpStates};

use crate::os::{ProcReading, Process, Scratch};
use crate::MonitorError;

pub(super) struct Tracked {
    pub pid: u32,
    /// The process (which tells it from a later one that reuses the pid); `None` once gone.
    process: Option<Process>,
    include_children: bool,
    /// The previous reading; `None` once the process is gone.
    prev: Option<Prev>,
    with_sockets: bool,
    /// The socket keys of the last socket scan (Linux: one `readlink` per fd), and when the
    /// next is due.
    sockets: HashSet<u64>,
    pacer: ScanPacer,
    /// Highest RSS seen (the process's own peak, or the summed tree's highest sample).
    peak: u64,
    pub fds_readable: bool,
    command: String,
    pub samples: Vec<ProcSample>,
}

/// The cumulative counters that rates are computed from.
struct Prev {
    at: Instant,
    user_ns: u64,
    sys_ns: u64,
    ctx: HashMap<u32, (u64, u64)>,
}

impl Tracked {
    /// The first reading; an unknown or exited pid is an error.
    /// `with_sockets`: collect socket keys for TCP states (Linux: one `readlink` per fd and
    /// sample, on the sampler's thread; barrage itself too, so its connections are counted,
    /// not 0).
    pub fn start(
        pid: u32,
        include_children: bool,
        with_sockets: bool,
        buf: &mut Scratch,
    ) -> Result<Self, MonitorError> {
        let gone = || MonitorError::NoSuchProcess { pid };
        let mut process = Process::open(pid, buf).ok_or_else(gone)?;
        let command = process.command(buf);
        let at = Instant::now();
        let mut r = process
            .read(include_children, with_sockets, buf)
            .ok_or_else(gone)?;
        let mut pacer = ScanPacer::default();
        if with_sockets {
            pacer.scanned(at, Instant::now());
        }
        Ok(Tracked {
            pid,
            process: Some(process),
            include_children,
            with_sockets,
            sockets: std::mem::take(&mut r.sockets),
            pacer,
            peak: r.hwm_bytes.max(r.rss_bytes),
            fds_readable: r.fds_readable,
            prev: Some(Prev::new(at, r)),
            command,
            samples: Vec::new(),
        })
    }

    pub fn running(&self) -> bool {
        self.prev.is_some()
    }

    /// A reading now, while the process lives; the first failure marks it gone for good. Its
    /// `sockets` are those of the last socket scan ([`ScanPacer`]) until [`Tracked::record`]
    /// hands them back.
    pub fn read(&mut self, buf: &mut Scratch) -> Option<(Instant, ProcReading)> {
        self.prev.as_ref()?;
        let process = self.process.as_mut()?;
        let at = Instant::now();
        let scan = self.with_sockets && self.pacer.due(at);
        match process.read(self.include_children, scan, buf) {
            Some(mut r) => {
                if scan {
                    self.pacer.scanned(at, Instant::now());
                } else {
                    r.sockets = std::mem::take(&mut self.sockets);
                }
                Some((at, r))
            }
            None => {
                self.prev = None;
                self.process = None;
                None
            }
        }
    }

    /// Turns a reading into a sample: rates against the previous reading.
    pub fn record(&mut self, at: Instant, t: f64, mut r: ProcReading, tcp: TcpStates, cores: f64) {
        self.sockets = std::mem::take(&mut r.sockets);
        let Some(prev) = self.prev.as_mut() else {
            return;
        };
        let dt = at.saturating_duration_since(prev.at).as_secs_f64();
        let pct = |ns: u64| {
            if dt > 0.0 {
                ns as f64 / 1e9 / dt * 100.0
            } else {
                0.0
            }
        };
        // A tree can shrink (a child reparented away): never a negative rate.
        let user = pct(r.user_ns.saturating_sub(prev.user_ns));
        let sys = pct(r.sys_ns.saturating_sub(prev.sys_ns));
        let (ctx_voluntary, ctx_involuntary) = ctx_delta(&prev.ctx, &r.ctx);
        self.peak = self.peak.max(r.hwm_bytes).max(r.rss_bytes);
        self.samples.push(ProcSample {
            t,
            cpu_pct: user + sys,
            cpu_user_pct: user,
            cpu_sys_pct: sys,
            cpu_machine_pct: (user + sys) / cores.max(1.0),
            rss_bytes: r.rss_bytes,
            rss_peak_bytes: self.peak,
            private_bytes: r.private_bytes,
            threads: r.threads,
            children: r.children,
            fds: r.fds,
            ctx_voluntary,
            ctx_involuntary,
            tcp,
        });
        *prev = Prev::new(at, r);
    }

    pub fn into_series(self) -> ProcessSeries {
        ProcessSeries {
            pid: self.pid,
            command: self.command,
            samples: self.samples,
        }
    }
}

impl Prev {
    fn new(at: Instant, r: ProcReading) -> Self {
        Prev {
            at,
            user_ns: r.user_ns,
            sys_ns: r.sys_ns,
            ctx: r.ctx,
        }
    }
}

/// Context switches between two per-thread readings: a thread seen for the first time counts
/// whole (it was born in the interval); a thread that exited loses only its last interval.
fn ctx_delta(prev: &HashMap<u32, (u64, u64)>, cur: &HashMap<u32, (u64, u64)>) -> (u64, u64) {
    cur.iter().fold((0, 0), |(v, n), (tid, &(cv, cn))| {
        let (pv, pn) = prev.get(tid).copied().unwrap_or((0, 0));
        (v + cv.saturating_sub(pv), n + cn.saturating_sub(pn))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn context_switches_per_thread() {
        let prev = HashMap::from([(1, (100, 10)), (2, (50, 5)), (3, (7, 7))]);
        // Thread 3 exited, 4 is new, 2's counters went back (tid reused): never negative.
        let cur = HashMap::from([(1, (130, 12)), (2, (40, 6)), (4, (9, 1))]);
        assert_eq!(ctx_delta(&prev, &cur), (30 + 9, 2 + 1 + 1));
    }

    #[test]
    fn rates_from_two_readings() {
        let at = Instant::now();
        let mut t = Tracked {
            pid: 1,
            process: None,
            include_children: false,
            with_sockets: true,
            sockets: HashSet::new(),
            pacer: ScanPacer::default(),
            prev: Some(Prev::new(
                at,
                ProcReading {
                    user_ns: 10_000_000_000,
                    sys_ns: 5_000_000_000,
                    ctx: HashMap::from([(1, (10, 1))]),
                    ..ProcReading::default()
                },
            )),
            peak: 0,
            fds_readable: true,
            command: "server".into(),
            samples: Vec::new(),
        };
        let r = ProcReading {
            user_ns: 11_500_000_000,
            sys_ns: 5_500_000_000,
            rss_bytes: 4 << 20,
            hwm_bytes: 5 << 20,
            private_bytes: 3 << 20,
            threads: 4,
            fds: 9,
            ctx: HashMap::from([(1, (25, 3))]),
            ..ProcReading::default()
        };
        // 1.5 s of user time and 0.5 s of system time over 2 s: 75 % + 25 % of a core.
        t.record(
            at + Duration::from_secs(2),
            2.0,
            r,
            TcpStates::default(),
            4.0,
        );
        let s = &t.samples[0];
        assert!((s.cpu_user_pct - 75.0).abs() < 1e-9 && (s.cpu_sys_pct - 25.0).abs() < 1e-9);
        assert!((s.cpu_pct - 100.0).abs() < 1e-9 && (s.cpu_machine_pct - 25.0).abs() < 1e-9);
        assert_eq!(
            (s.rss_bytes, s.rss_peak_bytes, s.private_bytes),
            (4 << 20, 5 << 20, 3 << 20)
        );
        assert_eq!(
            (s.ctx_voluntary, s.ctx_involuntary, s.threads, s.fds),
            (15, 2, 4, 9)
        );
        t.prev = None;
        t.record(at, 3.0, ProcReading::default(), TcpStates::default(), 4.0);
        assert_eq!(t.samples.len(), 1, "nothing recorded once gone");
        assert_eq!(t.into_series().command, "server");
    }
}

/// When a paced scan is due again: [`SCAN_BUDGET`] times the cost of the last one after it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ScanPacer {
    next: Option<Instant>,
}

impl ScanPacer {
    pub(super) fn due(&self, now: Instant) -> bool {
        self.next.is_none_or(|n| now >= n)
    }

    /// A scan that ran from `start` to `end`.
    pub(super) fn scanned(&mut self, start: Instant, end: Instant) {
        let cost = end.saturating_duration_since(start);
        self.next = Some(end + cost * (SCAN_BUDGET - 1));
    }
}

/// Pacing of the costly parts of a sample, by their own cost: tying sockets to a process (one
/// `readlink` per open fd, ~3-6 µs each: ~1 s for 200,000 fds) and walking the machine's TCP
/// sockets for their states (sock_diag, ~2 µs per socket). Done every sample at 100,000
/// connections on each side, they took longer than the interval: the monitor fell behind (a
/// sample every 2-13 s) and took most of a core, counted as barrage's. Each is due again after
/// [`SCAN_BUDGET`] times its last cost (each at most ~5 % of a core), so at a few thousand
/// sockets every sample has both; between them a sample carries the last TCP states, and a
/// socket opened since a process's last scan is counted from its next. Measured with 15,000 idle
/// connections watched on both sides: barrage's CPU 24.6 % of a core before, 12.7 % after.
pub(super) const SCAN_BUDGET: u32 = 20;
