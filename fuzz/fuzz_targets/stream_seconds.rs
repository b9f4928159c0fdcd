//! Arbitrary bytes as a stream's `seconds.jsonl` (what `barrage merge` and `barrage report
//! DIR` read), a line at a time, through the line decoder and the order check, with the first
//! two bytes choosing the run's timeline: nothing may panic; a second that decodes is within
//! the count bound and reads back equal from its own JSON; and every sequence the checks
//! accept goes through the aggregator (as two shards, pushed as merge pushes them) without a
//! panic, its totals the sums of what was accepted.
#![no_main]

use barrage_metrics::{Aggregator, Delta, LatencyBasis, Timeline, DRAIN_KEY, SECOND_NS};
use barrage_report::stream::{decode_second, Order, MAX_COUNT};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [a, b, rest @ ..] = data else { return };
    let timeline = Timeline {
        warmup_ns: u64::from(*a % 4) * SECOND_NS / 2,
        load_end_ns: (*b != 0).then(|| u64::from(*b % 16) * SECOND_NS / 2 + SECOND_NS),
    };
    let text = String::from_utf8_lossy(rest);
    // Two shards of one run: odd lines are shard 1's.
    let mut orders = [Order::new(timeline), Order::new(timeline)];
    let mut accepted: [Vec<Delta>; 2] = [Vec::new(), Vec::new()];
    let mut refused = [false, false];
    for (i, line) in text.lines().enumerate() {
        let w = i % 2;
        if refused[w] {
            continue;
        }
        let Ok(d) = decode_second(line) else {
            refused[w] = true;
            continue;
        };
        assert!(d.counters.sent <= MAX_COUNT && d.counters.completed <= MAX_COUNT);
        let again = serde_json::to_string(&d).expect("a second serializes");
        let back = decode_second(&again).expect("a decoded second decodes again");
        assert_eq!(back.key, d.key);
        assert_eq!(back.counters, d.counters);
        if orders[w].check(&d).is_err() {
            refused[w] = true;
            continue;
        }
        accepted[w].push(d);
    }
    // As merge does: each shard's seconds in time order, a drain pushed as it comes, an
    // ended shard ended at once.
    let mut agg = Aggregator::new(timeline, 2);
    let mut completed = 0u64;
    let mut streams = accepted.map(|v| v.into_iter().peekable());
    loop {
        let next = (0..2)
            .filter_map(|w| streams[w].peek().map(|d| (d.key, w)))
            .min();
        let Some((_, w)) = next else { break };
        let mut d = streams[w].next().expect("peeked");
        completed += d.counters.completed;
        d.worker = w as u32;
        let drain = d.key == DRAIN_KEY;
        agg.push(d);
        if drain || streams[w].peek().is_none() {
            agg.end_worker(w);
        }
    }
    for w in 0..2 {
        agg.end_worker(w);
    }
    let out = agg.finish(2, LatencyBasis::IntendedSend);
    let ticks: u64 = out.timeseries.iter().map(|t| t.requests).sum();
    assert_eq!(ticks, completed);
});
