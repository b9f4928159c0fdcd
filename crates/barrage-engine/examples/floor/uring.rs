//! What the io_uring floor twins share (issue 30): the ring, set up as a backend would
//! (`SINGLE_ISSUER`, `DEFER_TASKRUN`, `COOP_TASKRUN` when the kernel has them), the sockets
//! registered with it, and a registered provided-buffer ring (`IORING_REGISTER_PBUF_RING`):
//! a buffer given back is a store into shared memory, not a submission.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types::BufRingEntry;
use io_uring::{cqueue, opcode, squeue, types, IoUring};

/// What a completion is for, in its user data's low bits (the connection above them).
pub const SEND: u64 = 0;
pub const RECV: u64 = 1;

/// The user data of connection `conn`'s operation of `kind`.
pub fn ud(conn: usize, kind: u64) -> u64 {
    (conn as u64) << 2 | kind
}

/// A completion's connection and kind, from its user data.
pub fn of(data: u64) -> (usize, u64) {
    ((data >> 2) as usize, data & 3)
}

/// A receive's completion: the buffer it filled, or `None` when the buffer ring ran dry
/// (`-ENOBUFS`: the multishot ended, to be armed again), or what went wrong.
pub fn received(res: i32, flags: u32) -> Result<Option<u16>, String> {
    match res {
        r if r == -libc::ENOBUFS => Ok(None),
        r if r < 0 => Err(format!("recv: {r}")),
        0 => Err("the server closed a connection".into()),
        _ => cqueue::buffer_select(flags)
            .map(Some)
            .ok_or_else(|| "a recv without a buffer".into()),
    }
}

/// Connection `conn`'s (fixed file `conn`) multishot receive from buffer group `group`.
pub fn recv(conn: usize, group: u16) -> squeue::Entry {
    opcode::RecvMulti::new(types::Fixed(conn as u32), group)
        .build()
        .user_data(ud(conn, RECV))
}

/// Connection `conn`'s send of `bytes`, which must outlive the operation: whole
/// (`MSG_WAITALL`: the ring sends the rest of a short send itself), posting a completion only
/// when it fails.
pub fn send(conn: usize, bytes: &[u8]) -> squeue::Entry {
    opcode::Send::new(
        types::Fixed(conn as u32),
        bytes.as_ptr(),
        bytes.len() as u32,
    )
    .flags(libc::MSG_WAITALL)
    .build()
    .flags(squeue::Flags::SKIP_SUCCESS)
    .user_data(ud(conn, SEND))
}

/// A ring of `entries` submission slots, set up as a backend would.
pub fn ring(entries: u32) -> Result<IoUring, String> {
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_coop_taskrun()
        .build(entries)
        .or_else(|_| IoUring::new(entries))
        .map_err(|e| format!("io_uring: {e}"))
}

/// `n` connections to `addr` (TCP_NODELAY), registered with `ring` as fixed files 0..n.
pub fn connect(ring: &IoUring, addr: SocketAddr, n: usize) -> Result<Vec<TcpStream>, String> {
    let io = |e: std::io::Error| e.to_string();
    let streams: Vec<TcpStream> = (0..n)
        .map(|_| {
            let s = TcpStream::connect(addr)?;
            s.set_nodelay(true)?;
            Ok(s)
        })
        .collect::<std::io::Result<_>>()
        .map_err(io)?;
    let fds: Vec<i32> = streams.iter().map(|s| s.as_raw_fd()).collect();
    ring.submitter().register_files(&fds).map_err(io)?;
    Ok(streams)
}

/// A provided-buffer ring: `count` buffers of `size` bytes in group `group`, all given to the
/// kernel at the start; [`BufRing::give_back`] returns one after its data is read.
pub struct BufRing {
    ring: *mut BufRingEntry,
    layout: Layout,
    mask: u16,
    tail: u16,
    bufs: Vec<u8>,
    size: usize,
}

impl BufRing {
    pub fn new(uring: &IoUring, count: u16, size: usize, group: u16) -> Result<Self, String> {
        if !count.is_power_of_two() {
            return Err(format!(
                "buffer ring: {count} entries is not a power of two"
            ));
        }
        let layout = Layout::from_size_align(count as usize * size_of::<BufRingEntry>(), 4096)
            .map_err(|e| e.to_string())?;
        // SAFETY: the layout has a non-zero size; the memory is freed in Drop.
        let ring = unsafe { alloc_zeroed(layout) } as *mut BufRingEntry;
        if ring.is_null() {
            return Err("buffer ring: out of memory".into());
        }
        let mut me = BufRing {
            ring,
            layout,
            mask: count - 1,
            tail: 0,
            bufs: vec![0u8; count as usize * size],
            size,
        };
        // SAFETY: the ring is page-aligned, `count` entries long, and lives until Drop, which
        // the caller runs only after the io_uring that uses it is gone (see `Drop`).
        unsafe {
            uring
                .submitter()
                .register_buf_ring_with_flags(ring as u64, count, group, 0)
                .map_err(|e| format!("buffer ring: {e}"))?;
        }
        for bid in 0..count {
            me.push(bid);
        }
        me.publish();
        Ok(me)
    }

    /// Buffer `bid`'s first `len` bytes, as a completion left them.
    pub fn data(&self, bid: u16, len: usize) -> &[u8] {
        let at = bid as usize * self.size;
        &self.bufs[at..at + len]
    }

    /// Gives buffer `bid` back to the kernel (seen at the next [`BufRing::publish`]).
    pub fn give_back(&mut self, bid: u16) {
        self.push(bid);
    }

    /// Makes the buffers given back since the last call visible to the kernel.
    pub fn publish(&mut self) {
        // SAFETY: the tail is entry 0's reserved field, in memory this ring owns; the kernel
        // reads it with acquire ordering.
        let tail = unsafe { &*(BufRingEntry::tail(self.ring) as *const AtomicU16) };
        tail.store(self.tail, Ordering::Release);
    }

    fn push(&mut self, bid: u16) {
        // SAFETY: the index is masked into the ring's `count` entries.
        let e = unsafe { &mut *self.ring.add((self.tail & self.mask) as usize) };
        e.set_addr(self.bufs[bid as usize * self.size..].as_ptr() as u64);
        e.set_len(self.size as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout. The examples drop their io_uring first.
        unsafe { dealloc(self.ring as *mut u8, self.layout) };
    }
}
