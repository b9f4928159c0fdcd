//! One second's figures as the push outputs send them (`--statsd`, `--otlp`), named once:
//! counters (a second's worth each, so a receiver's sums are the run's figures), the errors by
//! class, and gauges (the second's value; latency percentiles only for a second that timed
//! something).

use barrage_metrics::Tick;

/// A counter: its name, the unit OpenTelemetry gives it, its count in the second.
pub type Counter = (&'static str, &'static str, u64);

/// The second's counters.
pub fn counters(t: &Tick) -> [Counter; 6] {
    [
        ("exchanges.sent", "{exchange}", t.sent),
        ("exchanges.completed", "{exchange}", t.requests),
        ("exchanges.failed", "{exchange}", t.failed_requests),
        ("connects", "{connection}", t.connects),
        ("bytes.read", "By", t.bytes_read),
        ("bytes.written", "By", t.bytes_written),
    ]
}

/// A gauge's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(u64),
    Float(f64),
}

/// The second's gauges: name, unit, value.
pub fn gauges(t: &Tick) -> Vec<(&'static str, &'static str, Value)> {
    let mut g = vec![
        ("connections.open", "{connection}", Value::Int(t.open)),
        ("in_flight", "{exchange}", Value::Int(t.in_flight)),
        ("rps", "{exchange}/s", Value::Float(t.rps)),
    ];
    let l = &t.latency_us;
    if l.count > 0 {
        g.extend([
            ("latency.p50_us", "us", Value::Int(l.p50)),
            ("latency.p90_us", "us", Value::Int(l.p90)),
            ("latency.p99_us", "us", Value::Int(l.p99)),
            ("latency.max_us", "us", Value::Int(l.max)),
        ]);
    }
    g
}
