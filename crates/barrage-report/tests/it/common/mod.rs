//! Fixed, realistic run results for the renderer tests.
//!
//! Each fixture is produced the way the binary produces one: per-worker deltas for every
//! timeline segment go through the real `Aggregator`, whose outcome becomes a `RunResult`. So
//! the summary, time series, warm-up and histograms agree with each other by construction, and
//! conservation holds because `sent` is derived from it. Latencies come from a seeded integer
//! generator: the same numbers on every machine.

use barrage_metrics::{
    Aggregator, Delta, Environment, ErrorClass, LatencyBasis, LatencyHistogram, RunConfig,
    RunResult, Status, Timeline, DRAIN_KEY, SECOND_NS as S,
};

#[path = "../../../../../tests/skip.rs"]
mod skip;
pub use skip::browser;

pub mod page;

/// xorshift64*: tiny, seeded, integer-only.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// A latency shape: `base + U(0, jitter)`, one value in `slow_every` up to `slow` more, one in
/// `tail_every` up to `tail` more.
#[derive(Clone, Copy)]
pub struct Shape {
    pub base: u64,
    pub jitter: u64,
    pub slow_every: u64,
    pub slow: u64,
    pub tail_every: u64,
    pub tail: u64,
}

impl Shape {
    pub fn record(&self, rng: &mut Rng, h: &mut LatencyHistogram, n: u64) {
        for _ in 0..n {
            let mut v = self.base + rng.below(self.jitter);
            if rng.below(self.slow_every) == 0 {
                v += rng.below(self.slow);
            }
            if rng.below(self.tail_every) == 0 {
                v += rng.below(self.tail);
            }
            h.record_us(v);
        }
    }
}

/// Runs segments through the aggregator. `fill(worker, segment index, delta, rng)` sets what the
/// worker did (completed, failed, errors, in_flight, connections, latencies); gauges carry over
/// from the worker's previous segment, as in a `Recorder`. The IO counters
/// and `sent` are derived here: one write per sent message, one read per reply (plus one in
/// forty split across two reads), `message_bytes` each way.
pub fn aggregate(
    workers: u32,
    timeline: Timeline,
    segments: &[(u64, u64)],
    message_bytes: u64,
    target: u64,
    basis: LatencyBasis,
    mut fill: impl FnMut(u32, usize, &mut Delta, &mut Rng),
) -> barrage_metrics::Outcome {
    let mut rng = Rng::new(0x5eed);
    let mut agg = Aggregator::new(timeline, workers as usize);
    let mut in_flight = vec![0u64; workers as usize];
    let mut ready = vec![0u64; workers as usize];
    let keys: Vec<u64> = segments
        .iter()
        .enumerate()
        .map(|(i, &(start, _))| {
            if i == segments.len() - 1 {
                DRAIN_KEY
            } else {
                start
            }
        })
        .collect();
    for (i, &(start, end)) in segments.iter().enumerate() {
        for w in 0..workers {
            let mut d = Delta {
                worker: w,
                key: keys[i],
                start_ns: start,
                end_ns: end,
                in_flight: in_flight[w as usize],
                ..Default::default()
            };
            fill(w, i, &mut d, &mut rng);
            // Synthetic: each error event is one failed request; a connection is first ready
            // when the worker's open count reaches a new high.
            if d.counters.failed_by.total() == 0 {
                use barrage_metrics::ErrorClass as E;
                for (class, n) in d.counters.errors.nonzero() {
                    if !matches!(class, E::Refused | E::ConnectTimeout) {
                        d.counters.failed_by.add(class, n);
                    }
                }
            }
            let high = d.open_peak.max(d.open);
            if high > ready[w as usize] {
                d.counters.first_ready = high - ready[w as usize];
                ready[w as usize] = high;
                d.ready_last_ns = end;
            }
            let c = &mut d.counters;
            let prev = std::mem::replace(&mut in_flight[w as usize], d.in_flight);
            c.sent = (c.completed + c.failed + d.in_flight).saturating_sub(prev);
            c.writes = c.sent;
            c.bytes_written = c.sent * message_bytes;
            c.reads = c.completed + c.completed / 40;
            c.bytes_read = c.completed * message_bytes;
            agg.push(d);
        }
    }
    assert!(agg.complete(), "fixture must deliver every segment");
    agg.finish(target, basis)
}

fn environment() -> Environment {
    Environment {
        barrage_version: "0.1.0".into(),
        os: "linux".into(),
        kernel: "6.1.0-18-amd64".into(),
        cpu_model: "AMD EPYC 7B13".into(),
        cores: 2,
        hostname: "bench-1".into(),
        clocks: Vec::new(),
    }
}

fn config(mode: &str, connections: u64) -> RunConfig {
    RunConfig {
        target: "127.0.0.1:7000".into(),
        protocol: "tcp".into(),
        connections,
        threads: 2,
        duration_s: None,
        requests: None,
        warmup_s: 0.0,
        mode: mode.into(),
        pipeline: 1,
        think_ms: None,
        interval_ms: None,
        rate: None,
        connect_rate: None,
        timeout_ms: 5_000.0,
        connect_timeout_ms: 2_000.0,
        max_backlog: 16,
        message: "barrage says hello, please echo\\n".into(),
        message_bytes: 32,
        first_message: None,
        expect: "echo".into(),
        verify: false,
        ..RunConfig::default()
    }
}

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn seconds(n: u64) -> Vec<(u64, u64)> {
    (0..n).map(|i| (i * S, (i + 1) * S)).collect()
}

/// Open `n` connections in this segment, with their connect times.
fn connect(d: &mut Delta, rng: &mut Rng, n: u64) {
    d.counters.connect_attempts += n;
    d.counters.connects += n;
    for _ in 0..n {
        d.connect
            .record_us(90 + rng.below(220) + rng.below(40) * rng.below(8));
    }
}

/// 64 connections, 2 threads, ping-pong for 5 s; 32 exchanges in flight per worker at the end
/// complete during the drain.
pub fn ping_pong_completed() -> RunResult {
    let per_s = [
        [9_871, 10_020, 10_114, 10_062, 9_990],
        [9_802, 10_075, 10_093, 10_121, 10_037],
    ];
    let shape = Shape {
        base: 2_400,
        jitter: 1_400,
        slow_every: 20,
        slow: 2_500,
        tail_every: 2_000,
        tail: 14_000,
    };
    let mut segs = seconds(5);
    segs.push((5 * S, 5 * S + 3_800_000));
    let tl = Timeline {
        warmup_ns: 0,
        load_end_ns: Some(5 * S),
    };
    let outcome = aggregate(
        2,
        tl,
        &segs,
        32,
        64,
        LatencyBasis::ActualSend,
        |w, i, d, rng| {
            if i == 0 {
                connect(d, rng, 32);
            }
            let n = if i < 5 { per_s[w as usize][i] } else { 32 };
            d.counters.completed = n;
            shape.record(rng, &mut d.latency, n);
            d.open = 32;
            d.open_peak = 32;
            d.in_flight = if i < 5 { 32 } else { 0 };
        },
    );
    let mut c = config("ping-pong", 64);
    c.duration_s = Some(5.0);
    RunResult::new(
        Status::Completed,
        None,
        args("barrage tcp://127.0.0.1:7000 -c 64 -t 2 -d 5s"),
        "2025-05-14T09:30:00Z".into(),
        c,
        environment(),
        outcome,
    )
}

/// 100 connections sending every 50 ms (2,000/s), 2 s warm-up then 5 s measured. A server stall
/// in the fourth measured second: timeouts, a full backlog (not sent), latency from the
/// intended send time shows the queueing. Two resets and reconnects, one stray reply.
pub fn open_loop_with_errors() -> RunResult {
    let calm = Shape {
        base: 180,
        jitter: 260,
        slow_every: 25,
        slow: 900,
        tail_every: 1_000,
        tail: 6_000,
    };
    let cold = Shape {
        base: 350,
        jitter: 900,
        slow_every: 8,
        slow: 4_000,
        ..calm
    };
    let stall = Shape {
        base: 200,
        jitter: 400,
        slow_every: 6,
        slow: 180_000,
        tail_every: 40,
        tail: 700_000,
    };
    let mut segs = seconds(7);
    segs.push((7 * S, 7 * S + 1_000_000_000));
    let tl = Timeline {
        warmup_ns: 2 * S,
        load_end_ns: Some(7 * S),
    };
    let outcome = aggregate(
        2,
        tl,
        &segs,
        32,
        100,
        LatencyBasis::IntendedSend,
        |w, i, d, rng| {
            let prev = d.in_flight;
            let c = &mut d.counters;
            d.open = 50;
            d.open_peak = 50;
            d.in_flight = 1 + rng.below(2);
            let (n, shape) = match i {
                0 => (962 + w as u64 * 9, cold),
                1 => (998, calm),
                5 => (948 - w as u64 * 11, stall),
                7 => (0, calm),
                _ => (999 + rng.below(3), calm),
            };
            c.completed = n;
            shape.record(rng, &mut d.latency, n);
            match (i, w) {
                (0, _) => {
                    connect(d, rng, 50);
                    d.counters.error(ErrorClass::Timeout, 1);
                    d.counters.failed = 1;
                }
                (5, 0) => {
                    d.counters.error(ErrorClass::Timeout, 5);
                    d.counters.error(ErrorClass::NotSent, 31);
                    d.counters.failed = 5;
                    d.backlog = 16;
                }
                (5, 1) => {
                    d.counters.error(ErrorClass::Timeout, 2);
                    d.counters.error(ErrorClass::NotSent, 9);
                    d.counters.failed = 2;
                }
                (6, 1) => {
                    d.counters.error(ErrorClass::Reset, 2);
                    d.counters.closed_by_peer = 2;
                    d.counters.failed = 2;
                    d.counters.unexpected = 1;
                    connect(d, rng, 2);
                    d.open_peak = 50;
                }
                (7, _) => {
                    // Drain: what was in flight completes, except one reply that times out.
                    let failed = u64::from(w == 0);
                    d.counters.completed = prev - failed;
                    calm.record(rng, &mut d.latency, prev - failed);
                    d.counters.failed = failed;
                    d.counters.error(ErrorClass::Timeout, failed);
                    d.in_flight = 0;
                }
                _ => {}
            }
        },
    );
    let mut c = config("interval", 100);
    c.duration_s = Some(5.0);
    c.warmup_s = 2.0;
    c.interval_ms = Some(50.0);
    c.timeout_ms = 1_000.0;
    c.verify = true;
    RunResult::new(
        Status::Completed,
        None,
        args("barrage tcp://127.0.0.1:7000 -c 100 -t 2 --interval 50ms -d 5s --warmup 2s --verify"),
        "2025-05-14T09:41:12Z".into(),
        c,
        environment(),
        outcome,
    )
}

/// 50 connections with 10 ms think time, bounded by 1,000,000 requests, stopped by SIGINT at
/// 3.4 s; the drain was skipped, so 3 exchanges were still in flight.
pub fn interrupted() -> RunResult {
    let shape = Shape {
        base: 110,
        jitter: 150,
        slow_every: 30,
        slow: 600,
        tail_every: 5_000,
        tail: 3_000,
    };
    let mut segs = seconds(3);
    segs.push((3 * S, 3 * S + 400_000_000));
    segs.push((3 * S + 400_000_000, 3 * S + 400_000_000));
    let tl = Timeline {
        warmup_ns: 0,
        load_end_ns: None,
    };
    let outcome = aggregate(
        2,
        tl,
        &segs,
        32,
        50,
        LatencyBasis::ActualSend,
        |w, i, d, rng| {
            if i == 0 {
                connect(d, rng, 25);
            }
            let n = match i {
                0 => 2_391 + w as u64 * 7,
                3 => 981 - w as u64 * 4,
                4 => 0,
                _ => 2_440 + rng.below(12),
            };
            d.counters.completed = n;
            shape.record(rng, &mut d.latency, n);
            d.open = 25;
            d.open_peak = 25;
            d.in_flight = match (i, w) {
                (4, 0) => 2,
                (4, 1) => 1,
                _ => rng.below(2),
            };
        },
    );
    let mut c = config("think", 50);
    c.requests = Some(1_000_000);
    c.think_ms = Some(10.0);
    RunResult::new(
        Status::Interrupted,
        Some("stopped by SIGINT at 3.40 s".into()),
        args("barrage tcp://127.0.0.1:7000 -c 50 -t 2 --think 10ms -n 1000000"),
        "2025-05-14T10:02:47Z".into(),
        c,
        environment(),
        outcome,
    )
}

/// Nothing listens on the target: every connect is refused, no exchange ever happens.
pub fn failed_refused() -> RunResult {
    let segs = vec![(0, 250_000_000), (250_000_000, 250_000_000)];
    let tl = Timeline {
        warmup_ns: 0,
        load_end_ns: Some(10 * S),
    };
    let outcome = aggregate(
        1,
        tl,
        &segs,
        32,
        8,
        LatencyBasis::ActualSend,
        |_, i, d, _| {
            if i == 0 {
                d.counters.connect_attempts = 8;
                d.counters.connect_failures = 8;
                d.counters.error(ErrorClass::Refused, 8);
            }
        },
    );
    let mut c = config("ping-pong", 8);
    c.threads = 1;
    c.duration_s = Some(10.0);
    RunResult::new(
        Status::Failed,
        Some("no connection could be established: 8 of 8 refused".into()),
        args("barrage tcp://127.0.0.1:7000 -c 8 -t 1 -d 10s"),
        "2025-05-14T10:15:03Z".into(),
        c,
        environment(),
        outcome,
    )
}

/// HTTP keep-alive against a server that answers 1 % of requests with 503: status codes and
/// classes, time to first byte, TLS handshakes.
pub fn https_with_statuses() -> RunResult {
    let shape = Shape {
        base: 300,
        jitter: 200,
        slow_every: 50,
        slow: 900,
        tail_every: 5_000,
        tail: 9_000,
    };
    let mut segs = seconds(3);
    segs.push((3 * S, 3 * S + 1_000_000));
    let tl = Timeline {
        warmup_ns: 0,
        load_end_ns: Some(3 * S),
    };
    let outcome = aggregate(
        1,
        tl,
        &segs,
        180,
        20,
        LatencyBasis::ActualSend,
        |_, i, d, rng| {
            if i == 0 {
                connect(d, rng, 20);
                for _ in 0..20 {
                    d.tls.record_ns(1_200_000 + rng.below(300_000));
                }
            }
            let (ok, bad) = if i < 3 { (29_700, 300) } else { (20, 0) };
            d.counters.completed = ok;
            d.counters.failed = bad;
            d.counters
                .error(barrage_metrics::ErrorClass::UnexpectedStatus, bad);
            d.counters.status.add(200, ok);
            d.counters.status.add(503, bad);
            d.counters.replies = ok + bad;
            shape.record(rng, &mut d.latency, ok);
            for _ in 0..ok {
                d.ttfb.record_ns((250 + rng.below(150)) * 1000);
            }
            d.open = 20;
            d.open_peak = 20;
            d.in_flight = if i < 3 { 20 } else { 0 };
        },
    );
    let mut c = config("ping-pong", 20);
    c.target = "https://localhost:8443/api".into();
    c.protocol = "https".into();
    c.duration_s = Some(3.0);
    c.threads = 1;
    c.expect = "http response".into();
    c.http = Some("GET /api".into());
    c.tls = Some("verified".into());
    RunResult::new(
        Status::Completed,
        None,
        args("barrage https://localhost:8443/api -c 20 -t 1 -d 3s -H Authorization:_[redacted]"),
        "2025-05-14T09:30:00Z".into(),
        c,
        environment(),
        outcome,
    )
}

/// Ping-pong for 10 s against a monitored server, with a 3 s recovery watch, two thresholds
/// (one passing, one failing) and the full analysis and readiness from `RunResult::conclude`.
/// The generator ran at its CPU limit in seconds 6 and 7 (a saturation warning); the server's
/// memory grows under load and comes back afterwards.
pub fn monitored_with_verdicts() -> RunResult {
    use barrage_metrics::{HostSample, MonitorSeries, NetIfSample, ProcSample, ProcessSeries};
    const MIB: u64 = 1024 * 1024;
    let shape = Shape {
        base: 2_100,
        jitter: 1_200,
        slow_every: 25,
        slow: 2_000,
        tail_every: 3_000,
        tail: 9_000,
    };
    let mut segs = seconds(10);
    segs.push((10 * S, 10 * S + 2_500_000));
    let tl = Timeline {
        warmup_ns: 0,
        load_end_ns: Some(10 * S),
    };
    let outcome = aggregate(
        2,
        tl,
        &segs,
        64,
        64,
        LatencyBasis::ActualSend,
        |_, i, d, rng| {
            if i == 0 {
                connect(d, rng, 32);
            }
            let n = if i < 10 { 10_000 + rng.below(300) } else { 32 };
            d.counters.completed = n;
            shape.record(rng, &mut d.latency, n);
            if i == 4 {
                d.counters.error(ErrorClass::Timeout, 3);
                d.counters.failed = 3;
            }
            d.open = 32;
            d.open_peak = 32;
            d.in_flight = if i < 10 { 32 } else { 0 };
        },
    );
    let mut c = config("ping-pong", 64);
    c.duration_s = Some(10.0);
    c.message_bytes = 64;
    let mut r = RunResult::new(
        Status::Completed,
        None,
        args("barrage tcp://127.0.0.1:7000 -c 64 -t 2 -d 10s --monitor-pid 4242 --recovery 3s"),
        "2025-05-14T11:00:00Z".into(),
        c,
        environment(),
        outcome,
    );
    let server = (-2..=13)
        .map(|t| {
            let loaded = (1..=10).contains(&t);
            let rss = if loaded { 40 + t as u64 } else { 38 };
            ProcSample {
                t: t as f64,
                cpu_pct: if loaded {
                    70.0 + (t % 3) as f64 * 4.0
                } else {
                    0.5
                },
                cpu_user_pct: if loaded { 45.0 } else { 0.3 },
                cpu_sys_pct: if loaded { 25.0 } else { 0.2 },
                cpu_machine_pct: if loaded { 36.0 } else { 0.25 },
                rss_bytes: rss * MIB,
                rss_peak_bytes: 50 * MIB,
                threads: 4,
                fds: if loaded { 70 } else { 6 },
                ..ProcSample::default()
            }
        })
        .collect();
    let generator = (1..=10)
        .map(|t| ProcSample {
            t: t as f64,
            cpu_pct: if t == 6 || t == 7 {
                192.0
            } else {
                120.0 + t as f64
            },
            rss_bytes: 12 * MIB,
            threads: 3,
            fds: 70,
            ..ProcSample::default()
        })
        .collect();
    let host = (-2..=13)
        .map(|t| HostSample {
            t: t as f64,
            cpu_pct: if (1..=10).contains(&t) { 96.0 } else { 2.0 },
            per_core_pct: vec![],
            mem_used_bytes: 1_900 * MIB,
            mem_total_bytes: 7_900 * MIB,
            // Under load (1..=10 s): lo carries 2.1 to 3.0 MB/s each way, eth0 the
            // whitepaper's 150 Mbit/s in and 444 Mbit/s out; idle traffic must not count.
            net: {
                let load = (1..=10).contains(&t);
                let lo = if load {
                    2_000_000.0 + 100_000.0 * t as f64
                } else {
                    7.0
                };
                vec![
                    NetIfSample {
                        name: "lo".into(),
                        rx_bytes_per_s: lo,
                        tx_bytes_per_s: lo,
                        ..NetIfSample::default()
                    },
                    NetIfSample {
                        name: "eth0".into(),
                        rx_bytes_per_s: if load { 18_750_000.0 } else { 1.0 },
                        tx_bytes_per_s: if load { 55_500_000.0 } else { 1.0 },
                        ..NetIfSample::default()
                    },
                ]
            },
            tcp_inuse: 70,
            tcp_time_wait: 0,
        })
        .collect();
    r.monitor = Some(MonitorSeries {
        unasked: false,
        interval_s: 1.0,
        processes: vec![ProcessSeries {
            pid: 4242,
            command: "./echo-server --port 7000".into(),
            samples: server,
        }],
        host,
        generator,
    });
    let thresholds = ["p99 < 20ms", "rps.avg > 25000"]
        .map(|t| barrage_metrics::thresholds::parse(t).expect("valid threshold"));
    r.conclude(&thresholds, Some(3.0));
    r
}

/// A scenario run of two users' worth of steps: a named closed-loop step, an `every` step
/// with failures of two classes and capture misses, and a step with a name too long for the
/// text summary's label column.
pub fn scenario_with_steps() -> RunResult {
    use barrage_metrics::result::{ConfigStep, ConfigUsers};
    use barrage_metrics::steps::{StepCount, StepSummary};
    let mut r = ping_pong_completed();
    r.config.users = Some(ConfigUsers {
        count: 200,
        arrive: "linear".into(),
        last_arrival_s: 2.0,
        hold_s: 10.0,
        pacing_after_s: 0.0,
        depart: "at_end".into(),
        scenario: "chat.toml".into(),
    });
    let lat = r.summary.latency_us;
    let mut step = |name: &str, open_loop: bool, c: StepCount, timed: bool| {
        r.config.steps.push(ConfigStep {
            name: name.into(),
            open_loop,
            awaits: true,
        });
        StepSummary {
            name: name.into(),
            error_rate: None,
            latency_us: timed.then_some(lat),
            open_loop,
            server_us: None,
            server_gap_us: None,
            c,
        }
    };
    let mut failed_by = barrage_metrics::ErrorCounts::default();
    failed_by.add(barrage_metrics::ErrorClass::Timeout, 3);
    failed_by.add(barrage_metrics::ErrorClass::Reset, 1);
    let steps = vec![
        step(
            "login",
            false,
            StepCount {
                sent: 200,
                completed: 200,
                ..Default::default()
            },
            true,
        ),
        step(
            "say",
            true,
            StepCount {
                sent: 12_004,
                completed: 12_000,
                failed: 4,
                failed_by,
                not_sent: 7,
                capture_misses: 2,
            },
            true,
        ),
        step(
            "a_step_with_a_long_name",
            false,
            StepCount {
                sent: 200,
                ..Default::default()
            },
            false,
        ),
    ];
    r.summary.steps = steps;
    r
}
