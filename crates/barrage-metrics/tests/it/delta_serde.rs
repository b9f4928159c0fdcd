//! A share in another process streams its deltas as JSON: what the aggregator makes of them
//! must be exactly what it makes of the deltas that never left the process.

use barrage_metrics::{
    Aggregator, Delta, ErrorClass, LatencyBasis, Recorder, Timeline, DRAIN_KEY, SECOND_NS as S,
};

/// Deltas of `workers` workers over a 2 s load with a 1 s warm-up and a drain, every kind of
/// record populated (errors, codes, every histogram, gauges), different on every worker.
fn deltas(workers: u32) -> Vec<Delta> {
    let mut out = Vec::new();
    for w in 0..workers {
        let mut r = Recorder::new();
        let k = u64::from(w) + 1;
        let seg = |r: &mut Recorder, key: u64, start: u64, end: u64, n: u64| {
            r.conn_opened();
            r.counters.sent += n + 2;
            r.counters.completed += n;
            r.counters.replies += n;
            r.counters.bytes_read += 64 * n;
            r.counters.bytes_written += 70 * n;
            r.counters.reads += n / 2 + 1;
            r.counters.writes += n / 3 + 1;
            r.counters.connect_attempts += 2;
            r.counters.connects += 1;
            r.counters.connect_failures += 1;
            r.counters.scheduled += n + 5;
            r.counters.error(ErrorClass::Refused, 1);
            r.exchanges_failed(ErrorClass::Timeout, 2);
            r.not_sent(3);
            r.counters.status.add(200, n);
            r.counters.status.add(503, k);
            r.counters.ws_close.add(1006, 1);
            r.conn_first_ready(start + 1_000 * k);
            for i in 0..n {
                r.latency.record_us(50 + 37 * i * k);
                r.ttfb.record_ns(20_000 + 1_000 * i);
            }
            r.latency.record_us(barrage_metrics::histogram::MAX_US + 1);
            r.connect.record_ns(300_000 * k);
            r.tls.record_ns(900_000 + k);
            r.handshake.record_ns(1_200_000 * k);
            r.in_flight = k;
            r.backlog = 2 * k;
            r.lag_max_ns = 40_000 * k;
            r.take(w, key, start, end)
        };
        out.push(seg(&mut r, 0, 0, S, 10 * k));
        out.push(seg(&mut r, S, S, 2 * S, 20 * k));
        out.push(seg(&mut r, 2 * S, 2 * S, 3 * S, 30 * k));
        out.push(seg(&mut r, DRAIN_KEY, 3 * S, 3 * S + S / 2, k));
    }
    out
}

fn aggregate(deltas: Vec<Delta>, workers: usize) -> barrage_metrics::Outcome {
    let tl = Timeline {
        warmup_ns: S,
        load_end_ns: Some(3 * S),
    };
    let mut a = Aggregator::new(tl, workers);
    // Workers deliver in timeline order each, interleaved with one another.
    let mut sorted = deltas;
    sorted.sort_by_key(|d| (d.key, d.worker));
    for d in sorted {
        a.push(d);
    }
    assert!(a.complete());
    a.finish(6, LatencyBasis::default())
}

#[test]
fn a_delta_round_trip_through_json_merges_to_the_same_summary() {
    let original = deltas(3);
    let wire: Vec<String> = original
        .iter()
        .map(|d| serde_json::to_string(d).unwrap())
        .collect();
    let back: Vec<Delta> = wire
        .iter()
        .map(|s| serde_json::from_str(s).unwrap())
        .collect();
    assert_eq!(back, original, "every field survives the trip");
    let (a, b) = (aggregate(original, 3), aggregate(back, 3));
    assert!(a.summary.requests > 0 && a.summary.latency_us.overflow == 9);
    assert_eq!(a.summary, b.summary);
    assert_eq!(a.warmup, b.warmup);
    assert_eq!(a.timeseries, b.timeseries);
    assert_eq!(a.latency, b.latency);
    assert_eq!(a.connect, b.connect);
    assert_eq!(a.ttfb, b.ttfb);
    assert_eq!(a.tls, b.tls);
    assert_eq!(a.handshake, b.handshake);
}

#[test]
fn a_delta_without_optional_histograms_round_trips() {
    let d = Recorder::new().take(0, 0, 0, S);
    let json = serde_json::to_string(&d).unwrap();
    assert!(json.contains(r#""tls":null"#), "{json}");
    let back: Delta = serde_json::from_str(&json).unwrap();
    assert_eq!(back, d);
}

#[test]
fn a_tick_round_trips() {
    let out = aggregate(deltas(2), 2);
    for t in &out.timeseries {
        let back: barrage_metrics::Tick =
            serde_json::from_str(&serde_json::to_string(t).unwrap()).unwrap();
        assert_eq!(&back, t);
    }
}
