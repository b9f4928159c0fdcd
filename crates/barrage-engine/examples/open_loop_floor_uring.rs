//! `open_loop_floor`'s io_uring twin (issue 30, the go/no-go): the same open-loop load and the
//! same unavoidable work, with io_uring instead of epoll. Each message due is a `Send`
//! submitted with the others of its batch; replies are taken by one multishot `Recv` per
//! connection from a registered provided-buffer ring (no call per read); the wait for the
//! next due message is the same `io_uring_enter` that submits the batch (its timeout an
//! `EXT_ARG`), so a wake-up is one kernel entry, not an `epoll_wait` plus a read per ready
//! socket. The sockets are registered with the ring.
//!
//! ```text
//! cargo run --release -p barrage-engine --example open_loop_floor_uring -- \
//!     127.0.0.1:7392 1000 50ms 1ms 10s
//! ```
//!
//! Prints one JSON line as `open_loop_floor` does, with `enters` (the kernel entries: what
//! `polls` + `reads` + `writes` are for epoll). Loopback only.

#[cfg(target_os = "linux")]
#[path = "floor/mod.rs"]
#[allow(dead_code)] // the epoll twins' connect: this one makes its own
mod floor;
#[cfg(target_os = "linux")]
#[path = "floor/uring.rs"]
mod floor_uring;

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("open_loop_floor_uring: io_uring is Linux's");
    std::process::exit(2);
}

#[cfg(target_os = "linux")]
fn main() {
    floor::main("open_loop_floor_uring", uring::run);
}

#[cfg(target_os = "linux")]
mod uring {
    use super::floor;
    use super::floor_uring::{self, RECV, SEND};
    use io_uring::{cqueue, squeue, types};
    use std::time::{Duration, Instant};

    const MSG: &[u8] = b"hello from barrage\n";
    const BUF: usize = 4 * 1024;
    const GROUP: u16 = 7;

    pub fn run() -> Result<(), String> {
        let floor::OpenLoopArgs {
            addr,
            conns,
            interval,
            slack,
            secs,
        } = floor::open_loop_args("open_loop_floor_uring")?;
        let io = |e: std::io::Error| e.to_string();

        let entries = (2 * conns + 64).next_power_of_two() as u32;
        let mut ring = floor_uring::ring(entries)?;
        let streams = floor_uring::connect(&ring, addr, conns)?;
        let nbufs = (conns / 2).clamp(64, 4096).next_power_of_two() as u16;
        let mut bufs = floor_uring::BufRing::new(&ring, nbufs, BUF, GROUP)?;

        // Message k goes to connection k % conns, due at start + k * interval / conns.
        let step_ns = interval.as_nanos() as f64 / conns as f64;
        let start = Instant::now() + Duration::from_millis(100);
        let due = |k: u64| start + Duration::from_nanos((k as f64 * step_ns) as u64);
        let end = start + secs;
        let cpu0 = floor::cpu_time();
        let (mut k, mut enters, mut back) = (0u64, 0u64, 0u64);
        let mut sq: Vec<squeue::Entry> = Vec::with_capacity(entries as usize);
        for i in 0..conns {
            sq.push(floor_uring::recv(i, GROUP));
        }
        let mut done: Vec<(u64, i32, u32)> = Vec::with_capacity(2 * entries as usize);
        let mut draining = None;
        loop {
            let now = Instant::now();
            let stop = match draining {
                None if now >= end => {
                    draining = Some(now + Duration::from_secs(1));
                    continue;
                }
                None => end,
                Some(d) if now >= d || back >= k * MSG.len() as u64 => break,
                Some(d) => d,
            };
            if draining.is_none() && due(k) <= now {
                // The batch: everything due by now plus the slack, as the epoll twin sends it.
                let until = now + slack;
                while due(k) <= until && due(k) < end {
                    let i = (k % conns as u64) as usize;
                    sq.push(floor_uring::send(i, MSG));
                    k += 1;
                }
            }
            {
                let mut q = ring.submission();
                // SAFETY: every buffer an entry points at (MSG, the buffer ring) outlives the
                // ring's use of it: MSG is static, the buffer ring is dropped after the ring.
                unsafe { q.push_multiple(&sq) }.map_err(|_| "submission queue full")?;
            }
            sq.clear();
            bufs.publish();
            let wake = if draining.is_none() {
                due(k).min(stop)
            } else {
                stop
            };
            let wait = wake.saturating_duration_since(Instant::now());
            let ts = types::Timespec::from(wait);
            let args = types::SubmitArgs::new().timespec(&ts);
            enters += 1;
            match ring.submitter().submit_with_args(1, &args) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ETIME) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => return Err(io(e)),
            }
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
                    back += bufs.data(bid, res as usize).len() as u64;
                    bufs.give_back(bid);
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
            "{{\"messages\":{k},\"replies\":{},\"enters\":{enters},\
             \"cpu_s\":{:.3},\"cpu_us_per_message\":{:.2}}}",
            back / MSG.len() as u64,
            cpu.as_secs_f64(),
            cpu.as_secs_f64() * 1e6 / k.max(1) as f64
        );
        Ok(())
    }
}
