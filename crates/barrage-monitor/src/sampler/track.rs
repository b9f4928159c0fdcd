//! One monitored process across samples: its previous reading, and readings -> rates.
//!
//! A process that exits (or whose pid now names another process) stops being read: its
//! samples so far are kept, nothing more is recorded, and nothing fails.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use barrage_metrics::{ProcSample, ProcessSeries, TcpStates};

use super::ScanPacer;
use crate::proc::{self, ProcReading};
use crate::MonitorError;

pub(super) struct Tracked {
    pub pid: u32,
    /// With the pid, tells this process from a later one that reuses the pid.
    starttime: u64,
    include_children: bool,
    /// The previous reading; `None` once the process is gone.
    prev: Option<Prev>,
    with_sockets: bool,
    /// The socket inodes of the last socket scan (one `readlink` per fd), and when the next is
    /// due.
    sockets: HashSet<u64>,
    pacer: ScanPacer,
    /// Highest RSS seen (VmHWM of the process, or the summed tree's highest sample).
    peak: u64,
    pub fds_readable: bool,
    command: String,
    pub samples: Vec<ProcSample>,
}

/// The cumulative counters that rates are computed from.
struct Prev {
    at: Instant,
    user_ticks: u64,
    sys_ticks: u64,
    ctx: HashMap<u32, (u64, u64)>,
}

impl Tracked {
    /// The first reading; an unknown or exited pid is an error.
    /// `with_sockets`: collect socket inodes for TCP states (one `readlink` per fd and sample,
    /// on the sampler's thread; barrage itself too, so its connections are counted, not 0).
    pub fn start(
        pid: u32,
        include_children: bool,
        with_sockets: bool,
        buf: &mut String,
    ) -> Result<Self, MonitorError> {
        let gone = || MonitorError::NoSuchProcess { pid };
        let stat = proc::read_stat(pid, buf).map_err(|_| gone())?;
        if stat.exited() {
            return Err(gone());
        }
        let command = proc::command(pid).unwrap_or_else(|_| format!("[{}]", stat.comm));
        let at = Instant::now();
        let mut r = proc::read_process(pid, stat.starttime, include_children, with_sockets, buf)
            .ok_or_else(gone)?;
        let mut pacer = ScanPacer::default();
        if with_sockets {
            pacer.scanned(at, Instant::now());
        }
        Ok(Tracked {
            pid,
            starttime: stat.starttime,
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
    pub fn read(&mut self, buf: &mut String) -> Option<(Instant, ProcReading)> {
        self.prev.as_ref()?;
        let at = Instant::now();
        let scan = self.with_sockets && self.pacer.due(at);
        match proc::read_process(self.pid, self.starttime, self.include_children, scan, buf) {
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
                None
            }
        }
    }

    /// Turns a reading into a sample: rates against the previous reading.
    pub fn record(
        &mut self,
        at: Instant,
        t: f64,
        mut r: ProcReading,
        tcp: TcpStates,
        ticks_per_s: f64,
        cores: f64,
    ) {
        self.sockets = std::mem::take(&mut r.sockets);
        let Some(prev) = self.prev.as_mut() else {
            return;
        };
        let dt = at.saturating_duration_since(prev.at).as_secs_f64();
        let pct = |ticks: u64| {
            if dt > 0.0 {
                ticks as f64 / ticks_per_s / dt * 100.0
            } else {
                0.0
            }
        };
        // A tree can shrink (a child reparented away): never a negative rate.
        let user = pct(r.user_ticks.saturating_sub(prev.user_ticks));
        let sys = pct(r.sys_ticks.saturating_sub(prev.sys_ticks));
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
            threads: r.threads,
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
            user_ticks: r.user_ticks,
            sys_ticks: r.sys_ticks,
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
            starttime: 0,
            include_children: false,
            with_sockets: true,
            sockets: HashSet::new(),
            pacer: ScanPacer::default(),
            prev: Some(Prev::new(
                at,
                ProcReading {
                    user_ticks: 1000,
                    sys_ticks: 500,
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
            user_ticks: 1150,
            sys_ticks: 550,
            rss_bytes: 4 << 20,
            hwm_bytes: 5 << 20,
            threads: 4,
            fds: 9,
            ctx: HashMap::from([(1, (25, 3))]),
            ..ProcReading::default()
        };
        // 150 user ticks and 50 system ticks at 100 Hz over 2 s: 75 % + 25 % of a core.
        t.record(
            at + Duration::from_secs(2),
            2.0,
            r,
            TcpStates::default(),
            100.0,
            4.0,
        );
        let s = &t.samples[0];
        assert!((s.cpu_user_pct - 75.0).abs() < 1e-9 && (s.cpu_sys_pct - 25.0).abs() < 1e-9);
        assert!((s.cpu_pct - 100.0).abs() < 1e-9 && (s.cpu_machine_pct - 25.0).abs() < 1e-9);
        assert_eq!((s.rss_bytes, s.rss_peak_bytes), (4 << 20, 5 << 20));
        assert_eq!(
            (s.ctx_voluntary, s.ctx_involuntary, s.threads, s.fds),
            (15, 2, 4, 9)
        );
        t.prev = None;
        t.record(
            at,
            3.0,
            ProcReading::default(),
            TcpStates::default(),
            100.0,
            4.0,
        );
        assert_eq!(t.samples.len(), 1, "nothing recorded once gone");
        assert_eq!(t.into_series().command, "server");
    }
}
