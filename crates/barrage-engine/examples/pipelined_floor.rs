//! The kernel's floor under pipelined redis load (issue 9): the least CPU per request any
//! client on this machine can spend, to set barrage's and redis-benchmark's figures against.
//!
//! N connections, each keeping `pipeline` `SET key:1 1` commands in flight (a batch written
//! with one `write` when the previous batch's replies are all in, like redis-benchmark `-P`);
//! one thread, one mio poll; replies are counted by their `\n`, nothing is parsed or timed. The
//! system calls are those no client can avoid: one `write` per batch, one `read` per readable
//! event (a short read drained the socket), one `epoll_wait` per wake-up.
//!
//! ```text
//! cargo run --release -p barrage-engine --example pipelined_floor -- 127.0.0.1:6379 50 16 2000000
//! ```
//!
//! Prints one JSON line: requests, replies, system calls, and the process's user and system
//! CPU time (getrusage) per request. Loopback only: it refuses other targets.

use std::io::{ErrorKind, Read, Write};
use std::time::Duration;

#[path = "floor/mod.rs"]
mod floor;

use mio::{Events, Poll};

const CMD: &[u8] = b"*3\r\n$3\r\nSET\r\n$5\r\nkey:1\r\n$1\r\n1\r\n";

fn main() {
    floor::main("pipelined_floor", run);
}

fn run() -> Result<(), String> {
    let floor::PipelinedArgs {
        addr,
        conns,
        pipeline,
        total,
    } = floor::pipelined_args("pipelined_floor")?;
    let io = |e: std::io::Error| e.to_string();
    let batch: Vec<u8> = CMD.repeat(pipeline as usize);

    let mut poll = Poll::new().map_err(io)?;
    let mut streams = floor::connect(addr, conns, &poll)?;
    let cpu0 = floor::cpu_time();
    let (mut sent, mut replies, mut writes, mut reads, mut polls) = (0u64, 0u64, 0u64, 0u64, 0u64);
    // Replies still due on each connection's batch.
    let mut owed = vec![0u64; conns];
    for (s, owed) in streams.iter_mut().zip(&mut owed) {
        if sent < total {
            writes += 1;
            s.write_all(&batch).map_err(io)?;
            sent += pipeline;
            *owed = pipeline;
        }
    }
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; 64 * 1024];
    while replies < sent {
        polls += 1;
        poll.poll(&mut events, Some(Duration::from_secs(5)))
            .map_err(io)?;
        if events.is_empty() {
            return Err(format!("no reply for 5 s ({replies} of {sent})"));
        }
        for ev in events.iter() {
            let i = ev.token().0;
            let s = &mut streams[i];
            loop {
                reads += 1;
                match s.read(&mut buf) {
                    Ok(0) => return Err("the server closed a connection".into()),
                    Ok(n) => {
                        let got = memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
                        replies += got;
                        owed[i] -= got;
                        if n < buf.len() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => return Err(format!("read: {e}")),
                }
            }
            if owed[i] == 0 && sent < total {
                writes += 1;
                s.write_all(&batch).map_err(io)?;
                sent += pipeline;
                owed[i] = pipeline;
            }
        }
    }
    let cpu = floor::cpu_time() - cpu0;
    println!(
        "{{\"requests\":{sent},\"replies\":{replies},\"writes\":{writes},\"reads\":{reads},\
         \"polls\":{polls},\"cpu_s\":{:.3},\"cpu_us_per_request\":{:.3}}}",
        cpu.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / sent.max(1) as f64
    );
    Ok(())
}
