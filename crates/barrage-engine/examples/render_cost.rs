//! User-space cost per pipelined redis request, in isolation: rendering `--command` templates
//! into a batch buffer the way a worker does (16 requests, then the buffer is "written"), whole
//! and from each connection's last request, and decoding a batch of replies. Prints ns per
//! request for each case; run it before and after a change to the render or decode paths
//! (medians of a few runs: the machines are noisy).
//!
//!   cargo run --release -p barrage-engine --example render_cost [REQUESTS]

use barrage_engine::redis::{Commands, Last, RespDecoder, RespReply, RespSink};
use barrage_engine::Fill;
use std::hint::black_box;
use std::time::Instant;

const BATCH: u64 = 16;

/// ns per request; `next`: each connection renders from its last request
/// ([`Commands::render_next`], as the sessions do), else every request whole.
fn render(spec: &str, n: u64, next: bool) -> f64 {
    let cmds = Commands::redis(&[spec.to_string()]).expect("command compiles");
    let mut buf = Vec::with_capacity(4096);
    let mut bytes = 0usize;
    let t = Instant::now();
    // 50 connections taking turns, each rendering a batch of its own seqs (as a worker does).
    let mut seqs = [0u64; 50];
    let mut lasts: Vec<Last> = (0..50).map(|_| Last::default()).collect();
    let mut done = 0u64;
    while done < n {
        let conn = (done / BATCH) % 50;
        let seq = &mut seqs[conn as usize];
        buf.clear();
        for _ in 0..BATCH {
            let fill = Fill {
                conn,
                seq: *seq,
                ts_us: 1_763_870_000_000_000 + done,
            };
            let (len, i) = if next {
                cmds.render_next(black_box(fill), &mut buf, &mut lasts[conn as usize])
            } else {
                cmds.render(black_box(fill), &mut buf)
            };
            black_box((len, i));
            *seq += 1;
        }
        done += BATCH;
        bytes += black_box(&buf).len();
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    black_box(bytes);
    ns
}

struct Count(u64);
impl RespSink for Count {
    fn push(&mut self) {}
    fn reply(&mut self, r: RespReply) {
        self.0 += u64::from(r != RespReply::Error);
    }
}

fn decode(reply: &[u8], n: u64) -> f64 {
    let batch: Vec<u8> = reply.repeat(BATCH as usize);
    let mut dec = RespDecoder::default();
    let mut sink = Count(0);
    let t = Instant::now();
    for _ in 0..n / BATCH {
        dec.feed(black_box(&batch), &mut sink)
            .expect("replies decode");
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    assert_eq!(sink.0, n / BATCH * BATCH);
    ns
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000_000);
    for spec in [
        "SET key:{seq} {conn}",
        "GET key:{seq}",
        "SET key:{rand%100000} xxx",
        "SET key:1 1",
    ] {
        println!(
            "render {:28} {:6.1} ns/request whole, {:6.1} from the last",
            spec,
            render(spec, n, false),
            render(spec, n, true)
        );
    }
    for (name, reply) in [
        ("+OK", &b"+OK\r\n"[..]),
        ("$-1 (nil)", b"$-1\r\n"),
        ("$3 bulk", b"$3\r\nxxx\r\n"),
    ] {
        println!("decode {:28} {:6.1} ns/reply", name, decode(reply, n));
    }
}
