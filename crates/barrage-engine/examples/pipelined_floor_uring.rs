//! `pipelined_floor`'s io_uring twin (issue 30, the go/no-go): the same load and the same
//! unavoidable work, with io_uring instead of epoll: each batch a `Send` submitted with the
//! others of its turn, replies taken by one multishot `Recv` per connection from a registered
//! provided-buffer ring (no call per read; a buffer given back is a store, not a submission),
//! the sockets registered with the ring, every submission and wait one `io_uring_enter`
//! (`IORING_SETUP_SINGLE_ISSUER`, `DEFER_TASKRUN`, `COOP_TASKRUN` when the kernel has them).
//!
//! ```text
//! cargo run --release -p barrage-engine --example pipelined_floor_uring -- 127.0.0.1:6379 50 16 2000000
//! ```
//!
//! Prints one JSON line as `pipelined_floor` does: requests, replies, the kernel entries
//! (`enters`: what `polls` + `reads` + `writes` are for epoll), and the process's user and
//! system CPU time per request. Loopback only.

#[cfg(target_os = "linux")]
#[path = "floor/mod.rs"]
#[allow(dead_code)] // the epoll twins' connect: this one makes its own
mod floor;
#[cfg(target_os = "linux")]
#[path = "floor/uring.rs"]
mod floor_uring;

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("pipelined_floor_uring: io_uring is Linux's");
    std::process::exit(2);
}

#[cfg(target_os = "linux")]
fn main() {
    floor::main("pipelined_floor_uring", uring::run);
}

#[cfg(target_os = "linux")]
mod uring {
    use super::floor;
    use super::floor_uring::{self, RECV, SEND};
    use io_uring::{cqueue, squeue};

    const CMD: &[u8] = b"*3\r\n$3\r\nSET\r\n$5\r\nkey:1\r\n$1\r\n1\r\n";
    /// Provided buffers of this size, one group for every connection.
    const BUF: usize = 16 * 1024;
    const GROUP: u16 = 7;

    pub fn run() -> Result<(), String> {
        let floor::PipelinedArgs {
            addr,
            conns,
            pipeline,
            total,
        } = floor::pipelined_args("pipelined_floor_uring")?;
        let io = |e: std::io::Error| e.to_string();
        let batch: Vec<u8> = CMD.repeat(pipeline as usize);

        let entries = (4 * conns + 64).next_power_of_two() as u32;
        let mut ring = floor_uring::ring(entries)?;
        let streams = floor_uring::connect(&ring, addr, conns)?;
        let nbufs = (2 * conns).clamp(16, 4096).next_power_of_two() as u16;
        let mut bufs = floor_uring::BufRing::new(&ring, nbufs, BUF, GROUP)?;

        let cpu0 = floor::cpu_time();
        let (mut sent, mut replies, mut enters) = (0u64, 0u64, 0u64);
        let mut owed = vec![0u64; conns];
        let mut sq: Vec<squeue::Entry> = Vec::with_capacity(entries as usize);
        for (i, owed) in owed.iter_mut().enumerate() {
            sq.push(floor_uring::recv(i, GROUP));
            if sent < total {
                sq.push(floor_uring::send(i, &batch));
                sent += pipeline;
                *owed = pipeline;
            }
        }
        let mut done: Vec<(u64, i32, u32)> = Vec::with_capacity(entries as usize);
        while replies < sent {
            {
                let mut q = ring.submission();
                // SAFETY: every buffer an entry points at (the batch, the buffer ring) outlives
                // the ring's use of it: both are dropped after the ring.
                unsafe { q.push_multiple(&sq) }.map_err(|_| "submission queue full")?;
            }
            sq.clear();
            bufs.publish();
            enters += 1;
            ring.submit_and_wait(1).map_err(io)?;
            done.clear();
            done.extend(
                ring.completion()
                    .map(|c| (c.user_data(), c.result(), c.flags())),
            );
            for &(data, res, flags) in &done {
                let (i, kind) = floor_uring::of(data);
                if kind == SEND {
                    // Sends post a completion only when they fail.
                    return Err(format!("send: {res}"));
                }
                if kind != RECV {
                    continue;
                }
                if let Some(bid) = floor_uring::received(res, flags)? {
                    let got =
                        memchr::memchr_iter(b'\n', bufs.data(bid, res as usize)).count() as u64;
                    replies += got;
                    owed[i] -= got;
                    bufs.give_back(bid);
                    if owed[i] == 0 && sent < total {
                        sq.push(floor_uring::send(i, &batch));
                        sent += pipeline;
                        owed[i] = pipeline;
                    }
                }
                if !cqueue::more(flags) {
                    sq.push(floor_uring::recv(i, GROUP));
                }
            }
        }
        let cpu = floor::cpu_time() - cpu0;
        drop(ring);
        drop((bufs, streams));
        println!(
            "{{\"requests\":{sent},\"replies\":{replies},\"enters\":{enters},\"cpu_s\":{:.3},\
             \"cpu_us_per_request\":{:.3}}}",
            cpu.as_secs_f64(),
            cpu.as_secs_f64() * 1e6 / sent.max(1) as f64
        );
        Ok(())
    }
}
