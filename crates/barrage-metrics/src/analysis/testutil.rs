//! Test helpers: seeded noise and synthetic ticks, samples and results.
//!
//! Ticks and results are built through the aggregator, not as struct literals, so that fields
//! added to the record types later do not break these tests.

use crate::aggregate::{Aggregator, LatencyBasis, Tick};
use crate::monitor::ProcSample;
use crate::recorder::Delta;
use crate::result::{Environment, RunConfig, RunResult, Status};
use crate::timeline::{Phase, Timeline, DRAIN_KEY, SECOND_NS};
use std::sync::OnceLock;

pub const MIB: f64 = 1024.0 * 1024.0;

/// xorshift64: deterministic noise without a `rand` dependency.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Approximately standard normal (sum of 12 uniforms, Irwin-Hall).
    pub fn gauss(&mut self) -> f64 {
        (0..12).map(|_| self.uniform()).sum::<f64>() - 6.0
    }
}

/// A one-second tick ending at `t`, with every other field zero.
pub fn tick(t: f64, phase: Phase, requests: u64, open: u64) -> Tick {
    static TEMPLATE: OnceLock<Tick> = OnceLock::new();
    let mut tk = TEMPLATE.get_or_init(template).clone();
    tk.t = t;
    tk.dt = 1.0;
    tk.phase = phase;
    tk.requests = requests;
    tk.rps = requests as f64;
    tk.open = open;
    tk.open_peak = open;
    tk
}

/// An all-zero tick, made by the aggregator (building one per call is slow in debug builds).
fn template() -> Tick {
    let mut a = Aggregator::new(
        Timeline {
            warmup_ns: 0,
            load_end_ns: None,
        },
        1,
    );
    let d = Delta {
        key: 0,
        start_ns: 0,
        end_ns: SECOND_NS,
        ..Default::default()
    };
    a.push(d).pop().expect("one worker: the tick is final")
}

/// Measured one-second ticks at t = 1..=n with the given rates and `open` connections.
pub fn measured(rates: &[f64], open: u64) -> Vec<Tick> {
    rates
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut tk = tick(i as f64 + 1.0, Phase::Measured, r.round() as u64, open);
            tk.rps = *r;
            tk
        })
        .collect()
}

pub fn proc(t: f64, rss: f64) -> ProcSample {
    ProcSample {
        t,
        rss_bytes: rss.max(0.0).round() as u64,
        ..Default::default()
    }
}

/// A completed run of `secs` one-second measured segments with `per_s` exchanges of 100 µs
/// each and `errors_per_s` timeouts, `conns` connections.
pub fn result(secs: u64, per_s: u64, errors_per_s: u64, conns: u64) -> RunResult {
    let tl = Timeline {
        warmup_ns: 0,
        load_end_ns: Some(secs * SECOND_NS),
    };
    let mut a = Aggregator::new(tl, 1);
    for s in 0..secs {
        let mut d = Delta {
            key: s * SECOND_NS,
            start_ns: s * SECOND_NS,
            end_ns: (s + 1) * SECOND_NS,
            open: conns,
            open_peak: conns,
            ..Default::default()
        };
        if s == 0 {
            d.counters.first_ready = conns; // every connection up in the first second
        }
        d.counters.sent = per_s + errors_per_s;
        d.counters.completed = per_s;
        d.counters.failed = errors_per_s;
        d.counters
            .errors
            .add(crate::error::ErrorClass::Timeout, errors_per_s);
        d.counters
            .failed_by
            .add(crate::error::ErrorClass::Timeout, errors_per_s);
        for _ in 0..per_s {
            d.latency.record_us(100);
        }
        a.push(d);
    }
    a.push(Delta {
        key: DRAIN_KEY,
        start_ns: secs * SECOND_NS,
        end_ns: secs * SECOND_NS,
        ..Default::default()
    });
    let o = a.finish(conns, LatencyBasis::ActualSend);
    RunResult::new(
        Status::Completed,
        None,
        vec![],
        String::new(),
        RunConfig {
            connections: conns,
            threads: 2,
            ..Default::default()
        },
        Environment {
            cores: 4,
            ..Default::default()
        },
        o,
    )
}
