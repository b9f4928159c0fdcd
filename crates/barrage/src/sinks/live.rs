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
    let r = agg.running();
    let (avg, errors) = (r.avg_rps, r.errors);
    let latency = latency(t);
    let errors = if t.phase == Phase::Warmup {
        t.errors.total()
    } else {
        errors
    };
    Some(format!(
        "[{label}{:>5.1}s] conns {}/{} | rps {} (avg {}) | {latency} | errors {}",
        t.t,
        fmt::thousands(t.open),
        fmt::thousands(target),
        fmt::thousands(t.rps.round() as u64),
        fmt::thousands(avg.round() as u64),
        fmt::thousands(errors),
    ))
}

/// The second's latency as it was measured: the exchanges' p99 when some were timed, the
/// broadcast deliveries' p99 when some arrived (a scenario's messages are fire-and-forget, so
/// a chat run's exchanges time nothing), `p99 -` when nothing was, never a "0.0 µs" of
/// nothing. Results of earlier versions lack the count: a nonzero max stands in for it.
fn latency(t: &Tick) -> String {
    let l = &t.latency_us;
    let mut parts = Vec::new();
    if l.count > 0 || l.max > 0 {
        parts.push(format!("p99 {}", fmt::duration_us(l.p99 as f64)));
    }
    if t.deliveries > 0 {
        parts.push(format!(
            "delivery p99 {}",
            fmt::duration_us(t.delivery_p99_us as f64)
        ));
    }
    if parts.is_empty() {
        "p99 -".into()
    } else {
        parts.join(" | ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_of_fire_and_forget_messages_shows_its_deliveries_not_p99_0() {
        // Regression: every steady second of a chat run read "p99 0.0 µs".
        let mut t = Tick {
            deliveries: 3_000,
            delivery_p99_us: 1_500,
            ..Tick::default()
        };
        assert_eq!(latency(&t), "delivery p99 1.50 ms");
        t.deliveries = 0;
        assert_eq!(latency(&t), "p99 -");
        // A login completed in the same second: both.
        t.deliveries = 10;
        t.latency_us.count = 2;
        t.latency_us.p99 = 200;
        t.latency_us.max = 210;
        assert_eq!(latency(&t), "p99 200 µs | delivery p99 1.50 ms");
    }
}
