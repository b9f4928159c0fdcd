//! The live status line: one line per second on stderr while a run goes on.

use barrage_metrics::{Aggregator, Phase, Tick};
use barrage_report::fmt;

/// Format the status line for a tick (None for the drain tick).
pub fn line(t: &Tick, agg: &Aggregator, target: u64) -> Option<String> {
    let label = match t.phase {
        Phase::Warmup => "warm-up ",
        Phase::Measured => "",
        Phase::Drain => return None,
    };
    // Rates and p99 of the last second; average and errors since the warm-up ended.
    let (_, avg, _, errors) = agg.running();
    let p99 = t.latency_us.p99;
    let errors = if t.phase == Phase::Warmup {
        t.errors.total()
    } else {
        errors
    };
    Some(format!(
        "[{label}{:>5.1}s] conns {}/{} | rps {} (avg {}) | p99 {} | errors {}",
        t.t,
        fmt::thousands(t.open),
        fmt::thousands(target),
        fmt::thousands(t.rps.round() as u64),
        fmt::thousands(avg.round() as u64),
        fmt::duration_us(p99 as f64),
        fmt::thousands(errors),
    ))
}
