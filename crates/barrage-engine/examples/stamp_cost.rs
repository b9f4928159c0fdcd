//! The receiving side's cost per broadcast delivery, in user space: what a user does with a
//! stamped message beyond receiving it (scan for the stamp, the sender's window, the latency
//! histogram, the per-message span), against the same messages without a stamp (the scan
//! finds nothing). Run by `bench/stamp-cost.sh`; prints ns per delivery for both.
//!
//!   cargo run --release -p barrage-engine --example stamp_cost [DELIVERIES]

use barrage_engine::users::stamp::{scan, Arrival, Stamp, Windows};
use barrage_metrics::Recorder;
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000_000);
    // A room of 6: each receiver hears 6 senders; messages as serve chat relays them.
    let senders = 6u32;
    let msgs: Vec<Vec<u8>> = (0..1024u32)
        .map(|i| {
            let s = Stamp {
                shard: 0,
                user: 1000 + i % senders,
                seq: 1 + i / senders,
                ts_us: 1_763_870_000_000_000 + u64::from(i) * 250,
            };
            let mut m = b"{\"op\":\"msg\",\"room\":17,\"from\":\"u1003\",\"text\":\"".to_vec();
            m.extend_from_slice(&s.encode());
            m.extend_from_slice(b"\"}");
            m
        })
        .collect();
    let plain: Vec<Vec<u8>> = msgs
        .iter()
        .map(|m| {
            m.iter()
                .map(|&b| if b == b'~' { b'x' } else { b })
                .collect()
        })
        .collect();
    let run = |set: &[Vec<u8>]| {
        let mut windows = Windows::default();
        let mut rec = Recorder::new();
        let now_us = 1_763_870_000_500_000u64;
        let t = Instant::now();
        let mut found = 0u64;
        for k in 0..n {
            // Sequences keep growing across laps, as a long run's do.
            let lap = (k / set.len() as u64) as u32;
            let msg = &set[(k % set.len() as u64) as usize];
            scan(black_box(msg), |s| {
                found += 1;
                let seq = s.seq + lap * (1024 / senders + 1);
                if !matches!(windows.arrive(s.user, seq), Arrival::Duplicate) {
                    let us = now_us.saturating_sub(s.ts_us);
                    rec.msg_delivered((u64::from(s.user) << 32) | u64::from(seq), us);
                    rec.bcast_peer.record_ns(us * 1000);
                }
            });
            if k % 250_000 == 0 {
                // A segment boundary: the spans go to the aggregator.
                black_box(rec.msg_spans.drain().count());
            }
        }
        (t.elapsed().as_nanos() as f64 / n as f64, found)
    };
    let (with, found) = run(&msgs);
    let (without, none) = run(&plain);
    assert_eq!((found, none), (n, 0));
    println!("deliveries {n}: with stamps {with:.1} ns each, without {without:.1} ns each, added {:.1} ns", with - without);
}
