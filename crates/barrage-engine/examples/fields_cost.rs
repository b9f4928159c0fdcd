//! What rendering a binary message costs (issue 29: a 4-field message well under 100 ns):
//! `u8 1, len:u16be(u32be {seq}, str:u8 "room-{conn}", u64be {ts_us})` rendered into a
//! reused buffer the way a worker renders `-m` (the bounded writer), and through the growing
//! writer a scenario's templates use; a text message with the same placeholders beside them.
//! Prints ns per message for each.
//!
//!   cargo run --release -p barrage-engine --example fields_cost [MESSAGES]

use barrage_engine::message::binary;
use barrage_engine::{Fill, Template};
use std::hint::black_box;
use std::time::Instant;

fn per_message(t: &Template, n: u64, bounded: bool) -> f64 {
    let mut buf = Vec::with_capacity(4096);
    let mut bytes = 0usize;
    let start = Instant::now();
    for i in 0..n {
        let fill = Fill {
            conn: i % 1000,
            seq: i,
            ts_us: 1_763_870_000_000_000 + i,
        };
        buf.clear();
        if bounded {
            let bound = t.bound().expect("a bound");
            let mut room = barrage_engine::message::Reserved::open(&mut buf, bound);
            t.write(black_box(fill), &mut room);
            bytes += room.close();
        } else {
            bytes += t.render_into(black_box(fill), &mut buf);
        }
        black_box(&buf);
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    assert!(bytes > 0);
    ns
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000_000);
    let fields = binary::compile(
        r#"u8 1, len:u16be(u32be {seq}, str:u8 "room-{conn}", u64be {ts_us})"#,
        None,
        None,
    )
    .expect("the fields compile");
    let text = Template::try_new(b"1 {seq} room-{conn} {ts_us}\n".to_vec()).expect("compiles");
    println!(
        "fields, bounded writer: {:.1} ns/message",
        per_message(&fields, n, true)
    );
    println!(
        "fields, growing writer: {:.1} ns/message",
        per_message(&fields, n, false)
    );
    println!(
        "text with the same placeholders: {:.1} ns/message",
        per_message(&text, n, true)
    );
}
