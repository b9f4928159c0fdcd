//! Watching the server under test: `--monitor PID|auto`, `--spawn CMD`, `--recovery D`.
//!
//! The sampling itself is `barrage-monitor`'s (its own thread, off the hot path). This module
//! resolves what to watch before the load (a PID that does not exist or an `auto` that finds
//! no listener is a usage error, a server that fails to start stops the run before any load),
//! starts the sampler on the run's clock, keeps it running through the recovery window, and
//! stops a spawned server afterwards.
//!
//! Every other run is watched too, unasked ([`unasked`]): barrage's own CPU and the machine's,
//! once a second on the monitor's thread (no TCP states, no idle baseline to wait for), so
//! the stability and saturation rules can tell a busy generator machine. Nothing of it is
//! shown live or streamed; the summary shows one line when other processes took a material
//! share (`MonitorSeries::unasked`).

use crate::resolve::cli::RunArgs;
use crate::usage::Usage;
use barrage_metrics::{MonitorSeries, SpawnRecord};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How long a spawned server may take to accept connections, and to stop after SIGTERM.
const READY_TIMEOUT: Duration = Duration::from_secs(15);
const STOP_GRACE: Duration = Duration::from_secs(5);

/// What to watch, resolved from the command line.
pub struct WatchPlan {
    pids: Vec<u32>,
    /// The server command as written (what is shown and recorded) and with its
    /// `{secret:NAME}`s filled (what runs).
    spawn: Option<(String, String)>,
    /// The filled secrets, scrubbed from what the watch records (the server's command line as
    /// /proc shows it, its errors).
    secrets: crate::resolve::redact::Secrets,
    interval: Duration,
    recovery: Duration,
    target: SocketAddr,
    /// barrage's own samples include its children (the shards of `--processes`).
    self_children: bool,
    /// Not asked for ([`unasked`]).
    unasked: bool,
}

impl WatchPlan {
    /// Nothing but barrage itself (and its children): the generator's CPU and the other
    /// processes', for the saturation verdict of a `--processes` run.
    pub fn generator_only(interval: Duration) -> WatchPlan {
        WatchPlan {
            pids: Vec::new(),
            spawn: None,
            secrets: Default::default(),
            interval,
            recovery: Duration::ZERO,
            target: SocketAddr::from(([127, 0, 0, 1], 0)),
            self_children: true,
            unasked: false,
        }
    }

    /// Whether the run asked for it (`--monitor`, `--spawn`; `--processes` watches anyway).
    pub fn asked(&self) -> bool {
        !self.unasked
    }

    /// barrage's own samples include its children.
    pub fn with_children_of_self(mut self) -> WatchPlan {
        self.self_children = true;
        self
    }
}

/// `None` when nothing is to be watched.
pub fn plan(a: &RunArgs, target: SocketAddr) -> Result<Option<WatchPlan>, Usage> {
    if a.watch.monitor.is_empty() && a.watch.spawn.is_none() {
        if a.watch.recovery.is_some() {
            return Err(Usage::says(
                "--recovery",
                "watches the server after the load: add --monitor PID|auto or --spawn CMD",
            ));
        }
        return Ok(unasked(a, target));
    }
    if !barrage_monitor::SUPPORTED {
        return Err(Usage::says(
            "--monitor and --spawn",
            format!("need Linux or Windows; this is {}", std::env::consts::OS),
        ));
    }
    let mut pids = Vec::new();
    for m in &a.watch.monitor {
        if m == "auto" {
            if a.watch.spawn.is_some() {
                return Err(Usage::new(
                    "--monitor auto and --spawn",
                    "the spawned server is watched anyway; drop --monitor auto",
                ));
            }
            let found = barrage_monitor::listener_pid(target.port())
                .map_err(|e| Usage::value("--monitor", "auto", e))?;
            let pid = found.ok_or_else(|| {
                Usage::value(
                    "--monitor",
                    "auto",
                    format!(
                        "no process on this machine listens on port {} (or it belongs to another user); give --monitor PID",
                        target.port()
                    ),
                )
            })?;
            pids.push(pid);
        } else {
            let pid: u32 = m
                .parse()
                .map_err(|_| Usage::value("--monitor", m, "give a process id or `auto`"))?;
            if !barrage_monitor::process_exists(pid) {
                return Err(Usage::value("--monitor", pid, "no such process"));
            }
            pids.push(pid);
        }
    }
    let mut secrets = crate::resolve::redact::Secrets::default();
    let spawn = match &a.watch.spawn {
        Some(cmd) => Some((cmd.clone(), secrets.fill_str(cmd, "--spawn")?)),
        None => None,
    };
    Ok(Some(WatchPlan {
        pids,
        spawn,
        secrets,
        interval: a.watch.monitor_interval,
        recovery: a.watch.recovery.unwrap_or(Duration::from_secs(10)),
        target,
        self_children: false,
        unasked: false,
    }))
}

/// The watch of a run that asked for none: barrage and its machine, once a second, for the
/// stability and saturation rules. A loopback target's listener is sampled too when it can
/// be found (a process of this user), only so that its CPU is not counted as other
/// processes'. `None` where the monitor cannot read the machine (not Linux or Windows), and
/// in a shard (the parent of `--processes` watches its children; separate shards are
/// merged without their monitors).
fn unasked(a: &RunArgs, target: SocketAddr) -> Option<WatchPlan> {
    if !barrage_monitor::SUPPORTED || a.output.shard.is_some() || a.output.process_of_parent {
        return None;
    }
    // (Under wine the socket owners read 0 and their table takes seconds: not looked for.)
    let listener = (target.ip().is_loopback() && !barrage_monitor::under_wine())
        .then(|| barrage_monitor::listener_pid(target.port()).ok().flatten())
        .flatten()
        .filter(|&pid| pid != std::process::id());
    Some(WatchPlan {
        pids: listener.into_iter().collect(),
        spawn: None,
        secrets: Default::default(),
        interval: a.watch.monitor_interval,
        recovery: Duration::ZERO,
        target,
        self_children: false,
        unasked: true,
    })
}

pub struct Watch {
    monitor: barrage_monitor::Monitor,
    /// The watched processes, in the monitor's order.
    pids: Vec<u32>,
    /// The sampler's clock runs this much ahead of the run's (the idle baseline interval, or
    /// more when the run starts later: `run_starts_at`).
    lead_s: f64,
    /// Between two samples.
    interval: Duration,
    spawned: Option<(barrage_monitor::Spawned, String, f64)>,
    secrets: crate::resolve::redact::Secrets,
    recovery: Duration,
    /// When the sampler's clock started.
    base: Instant,
    unasked: bool,
}

impl WatchPlan {
    /// Start the server (with `--spawn`) and the sampler, whose clock starts now: just before
    /// the load (its first sample, at t = 0, is the idle baseline). `None`: an unasked watch
    /// that could not start (the run goes on without it).
    pub fn start(mut self) -> anyhow::Result<Option<Watch>> {
        let mut spawned = None;
        if let Some((cmd, filled)) = self.spawn.take() {
            let t = Instant::now();
            let s = barrage_monitor::spawn_server(&filled, self.target, READY_TIMEOUT).map_err(
                |e| anyhow::anyhow!("{}", self.secrets.scrub(&format!("--spawn '{cmd}': {e}"))),
            )?;
            self.pids.push(s.pid());
            spawned = Some((s, cmd, t.elapsed().as_secs_f64() * 1e3));
        }
        // One interval of the idle server before the load: its sample (t = 0 on the run's
        // clock) is the baseline that recovery and leak verdicts compare against.
        let base = Instant::now();
        let pids = self.pids.clone();
        let monitor = barrage_monitor::Monitor::start(barrage_monitor::MonitorConfig {
            pids: self.pids,
            include_children: true,
            interval: self.interval,
            base,
            include_self: true,
            self_children: self.self_children,
            sockets: !self.unasked,
        });
        let monitor = match monitor {
            Ok(m) => m,
            // Unasked: a run goes on without it (a listener gone since it was found).
            Err(_) if self.unasked => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        // Unasked: no idle baseline (nothing compares against it), no second's wait.
        let lead = if self.unasked {
            Duration::ZERO
        } else {
            std::thread::sleep(self.interval);
            self.interval
        };
        Ok(Some(Watch {
            monitor,
            pids,
            spawned,
            secrets: self.secrets,
            recovery: self.recovery,
            lead_s: lead.as_secs_f64(),
            interval: self.interval,
            base,
            unasked: self.unasked,
        }))
    }
}

impl Watch {
    /// The watch the run asked for (`None` for an unasked one: nothing of it is live or in
    /// the stream).
    pub fn asked(w: Option<&Watch>) -> Option<&Watch> {
        w.filter(|w| !w.unasked)
    }

    /// The latest sample of the (first) monitored server, for the live dashboard: a copy
    /// taken once per second, off the engine's threads.
    pub fn latest_server(&self) -> Option<crate::sinks::tui::ServerSample> {
        let latest = self.monitor.latest()?;
        let s = latest.processes.first()?.sample.as_ref()?;
        Some(crate::sinks::tui::ServerSample {
            cpu_pct: Some(s.cpu_pct),
            rss_bytes: Some(s.rss_bytes),
        })
    }

    /// The latest sample of the machine's network interfaces (bytes/s in and out) and its
    /// time on the sampler's clock (a new sample has a new time), for the live page.
    pub fn latest_net(&self) -> Option<(f64, Vec<barrage_metrics::NetIfSample>)> {
        let host = self.monitor.latest()?.host?;
        Some((host.t, host.net))
    }

    /// What the durable stream needs to rebuild the monitor's series.
    pub fn stream_header(&self) -> barrage_report::stream::MonitorHeader {
        let processes = self
            .pids
            .iter()
            .map(|&pid| {
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let words: Vec<String> = cmd
                    .split(|&b| b == 0)
                    .filter(|w| !w.is_empty())
                    .map(|w| String::from_utf8_lossy(w).into_owned())
                    .collect();
                (pid, self.secrets.scrub(&words.join(" ")))
            })
            .collect();
        barrage_report::stream::MonitorHeader {
            interval_s: self.interval.as_secs_f64(),
            lead_s: self.lead_s,
            processes,
        }
    }

    /// The monitor's first samples (the idle baseline, t = 0 of its series), for the
    /// durable stream.
    pub fn stream_baseline(&self) -> Option<barrage_report::stream::MonitorLine> {
        Self::line_of(self.monitor.first()?)
    }

    /// The monitor's newest samples, for the durable stream.
    pub fn stream_line(&self) -> Option<barrage_report::stream::MonitorLine> {
        Self::line_of(self.monitor.latest()?)
    }

    fn line_of(l: barrage_monitor::Latest) -> Option<barrage_report::stream::MonitorLine> {
        Some(barrage_report::stream::MonitorLine {
            t: l.t,
            processes: l.processes.into_iter().map(|p| p.sample).collect(),
            host: l.host,
            generator: l.generator,
        })
    }

    /// The run's time zero is `at` (not the end of the idle baseline, as for a run in this
    /// process): the shards of `--processes` start at a common instant.
    pub fn run_starts_at(&mut self, at: Instant) {
        self.lead_s = at.saturating_duration_since(self.base).as_secs_f64();
    }

    pub fn recovery_s(&self) -> f64 {
        self.recovery.as_secs_f64()
    }

    /// After the load: sample through the recovery window (cut short as soon as `cut` says
    /// so: a signal, a second `q`), stop the sampler and the spawned server.
    pub fn finish(
        self,
        cut: impl Fn() -> bool,
        quiet: bool,
    ) -> (MonitorSeries, Option<SpawnRecord>) {
        // After an interrupt the user wants out: no recovery window.
        if !self.recovery.is_zero() && !cut() {
            if !quiet {
                crate::sys::err_line(format_args!(
                    "[recovery] watching the server for {:.0} s after the load",
                    self.recovery.as_secs_f64()
                ));
            }
            let end = Instant::now() + self.recovery;
            while Instant::now() < end && !cut() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let mut series = self.monitor.stop();
        series.unasked = self.unasked;
        if self.unasked {
            // Nothing reads the interfaces of an unasked series: not kept (the bulk of a
            // host sample, a second's worth per interface).
            series.host.iter_mut().for_each(|h| h.net = Vec::new());
        }
        series.to_run_clock(self.lead_s);
        for p in &mut series.processes {
            p.command = self.secrets.scrub(&p.command);
        }
        let record = self.spawned.map(|(s, command, _)| {
            let (pid, ready) = (s.pid(), s.ready_after());
            s.stop(STOP_GRACE).record(&command, pid, ready)
        });
        (series, record)
    }
}

/// `--server-metrics URL --server-metric SELECTOR`, resolved.
pub struct MetricsPlan {
    pub urls: Vec<barrage_monitor::MetricsUrl>,
    pub selectors: Vec<barrage_monitor::Selector>,
    pub interval: Duration,
}

impl MetricsPlan {
    /// The names thresholds may use (`server.metric.NAME.STAT`).
    pub fn names(&self) -> Vec<String> {
        self.selectors.iter().map(|s| s.alias.clone()).collect()
    }

    /// Scraping from now; times are seconds since `base`.
    pub fn start(self, base: Instant) -> barrage_monitor::Scraper {
        barrage_monitor::Scraper::start(self.urls, self.selectors, self.interval, base)
    }
}

/// `None` without `--server-metrics`.
pub fn metrics_plan(a: &RunArgs) -> Result<Option<MetricsPlan>, Usage> {
    match (
        a.watch.server_metrics.is_empty(),
        a.watch.server_metric.is_empty(),
    ) {
        (true, true) => return Ok(None),
        (true, false) => {
            return Err(Usage::says(
                "--server-metric",
                "picks from the server's metrics: add --server-metrics URL",
            ))
        }
        (false, true) => {
            return Err(Usage::says(
                "--server-metrics",
                "needs --server-metric NAME for what to keep (e.g. --server-metric queue_depth)",
            ))
        }
        (false, false) => {}
    }
    let mut urls = Vec::new();
    for u in &a.watch.server_metrics {
        let url =
            barrage_monitor::MetricsUrl::parse(u).map_err(|e| Usage::new("--server-metrics", e))?;
        if !a.output.listen_any && !url.is_loopback() {
            return Err(Usage::value(
                "--server-metrics",
                u,
                "not on loopback: add --listen-any to read metrics from another machine",
            ));
        }
        urls.push(url);
    }
    let mut selectors: Vec<barrage_monitor::Selector> = Vec::new();
    for s in &a.watch.server_metric {
        let sel =
            barrage_monitor::Selector::parse(s).map_err(|e| Usage::new("--server-metric", e))?;
        if selectors.iter().any(|o| o.alias == sel.alias) {
            return Err(Usage::value(
                "--server-metric",
                s,
                format!(
                    "a second series named {}: name one ALIAS=SELECTOR",
                    sel.alias
                ),
            ));
        }
        selectors.push(sel);
    }
    Ok(Some(MetricsPlan {
        urls,
        selectors,
        interval: a.watch.monitor_interval,
    }))
}
