//! The kernel's floor under an open-loop load (issue 10): the least CPU per message any
//! generator on this machine can spend at a given rate, to set barrage's figure against.
//!
//! N connections, each sending one 19-byte line every `interval` (staggered evenly, like
//! barrage's `--interval`), messages due within `slack` of the first due one going out
//! together (barrage's `--timer-slack`); one thread, one mio poll. Per message it makes the
//! system calls no generator can avoid: one `write`, and one `read` per readable event (a read
//! shorter than the buffer drained the socket, so there is no second read for EAGAIN); one
//! `epoll_wait` per wake-up. No timing, no recording, no parsing beyond counting the bytes
//! back: what it spends is the kernel's TCP, wake-up and scheduling cost plus a few hundred
//! instructions.
//!
//! ```text
//! cargo run --release -p barrage-engine --example open_loop_floor -- \
//!     127.0.0.1:7392 1000 50ms 1ms 10s
//! ```
//!
//! Prints one JSON line: messages sent, bytes echoed back, system calls, and the process's
//! user and system CPU time (getrusage) per message. Loopback only: it refuses other targets.

use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

#[path = "floor/mod.rs"]
mod floor;

use mio::net::TcpStream;
use mio::{Events, Poll};

const MSG: &[u8] = b"hello from barrage\n";

fn main() {
    floor::main("open_loop_floor", run);
}

fn run() -> Result<(), String> {
    let floor::OpenLoopArgs {
        addr,
        conns,
        interval,
        slack,
        secs,
    } = floor::open_loop_args("open_loop_floor")?;
    let io = |e: std::io::Error| e.to_string();

    let mut poll = Poll::new().map_err(io)?;
    let mut streams = floor::connect(addr, conns, &poll)?;

    // Message k goes to connection k % conns, due at start + k * interval / conns.
    let step_ns = interval.as_nanos() as f64 / conns as f64;
    let start = Instant::now() + Duration::from_millis(100);
    let due = |k: u64| start + Duration::from_nanos((k as f64 * step_ns) as u64);
    let end = start + secs;
    let cpu0 = floor::cpu_time();
    let (mut k, mut writes, mut reads, mut polls, mut back) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; 64 * 1024];
    let mut read_ready = |events: &Events, streams: &mut [TcpStream], reads: &mut u64| {
        let mut got = 0;
        for ev in events.iter() {
            let s = &mut streams[ev.token().0];
            loop {
                *reads += 1;
                match s.read(&mut buf) {
                    Ok(n) => {
                        got += n as u64;
                        if n < buf.len() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("read: {e}"),
                }
            }
        }
        got
    };
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        if due(k) <= now {
            // The batch: everything due by now (a late wake-up sends what it owes at once, as
            // barrage does) plus the slack.
            let until = now + slack;
            while due(k) <= until && due(k) < end {
                let s = &mut streams[(k % conns as u64) as usize];
                writes += 1;
                match s.write(MSG) {
                    Ok(n) if n == MSG.len() => {}
                    other => return Err(format!("write: {other:?}")),
                }
                k += 1;
            }
        }
        let timeout = due(k).saturating_duration_since(Instant::now());
        polls += 1;
        poll.poll(&mut events, Some(timeout.min(end - now)))
            .map_err(io)?;
        back += read_ready(&events, &mut streams, &mut reads);
    }
    // The replies still under way.
    let drain_end = Instant::now() + Duration::from_secs(1);
    while back < k * MSG.len() as u64 && Instant::now() < drain_end {
        polls += 1;
        poll.poll(&mut events, Some(Duration::from_millis(50)))
            .map_err(io)?;
        back += read_ready(&events, &mut streams, &mut reads);
    }
    let cpu = floor::cpu_time() - cpu0;
    println!(
        "{{\"messages\":{k},\"replies\":{},\"writes\":{writes},\"reads\":{reads},\"polls\":{polls},\
         \"cpu_s\":{:.3},\"cpu_us_per_message\":{:.2}}}",
        back / MSG.len() as u64,
        cpu.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / k.max(1) as f64
    );
    Ok(())
}
