//! Counters and errors shared by every reference server.
//!
//! Key decision: each event-loop thread is the only writer of its own [`ThreadCounters`], so it
//! updates them with a relaxed load and store (no locked read-modify-write) right at the
//! syscall it counts, not once per loop iteration. That is what makes the numbers exact from a
//! client's point of view: a write is counted *before* the syscall that hands the bytes to the
//! kernel (and corrected if less went out), so a client that has received its echo and then asks
//! for [`ServerStats`] always finds those bytes counted. Counting after the syscall would leave a
//! window in which the kernel, waking the client on return from `write`, preempts the server.

use serde::{Deserialize, Serialize};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// What a server has done so far, summed over its threads.
///
/// The byte and syscall counters are exact once the client has seen the server's output;
/// `connections_open` drops when the server notices a close, one event-loop wakeup after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStats {
    /// Connections returned by `accept`.
    pub connections_accepted: u64,
    /// Connections accepted and not yet closed by either side.
    pub connections_open: u64,
    /// All bytes received from clients.
    pub bytes_read: u64,
    /// All bytes sent to clients.
    pub bytes_written: u64,
    /// Read syscalls that returned at least one byte.
    pub reads: u64,
    /// Write syscalls that sent at least one byte.
    pub writes: u64,
}

impl ServerStats {
    /// Adds `other` field by field (merging threads, processes or runs).
    pub fn merge(&mut self, other: &ServerStats) {
        self.connections_accepted += other.connections_accepted;
        self.connections_open += other.connections_open;
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.reads += other.reads;
        self.writes += other.writes;
    }
}

/// Why a server could not start. Every variant names the listen address.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The listening socket could not be created, bound or put into listen state
    /// (most often: the address is already in use, or it is not local to this machine).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    /// The configuration cannot work, e.g. zero threads.
    #[error("invalid configuration for the server on {addr}: {reason}")]
    Config { addr: SocketAddr, reason: String },
    /// The OS refused an event-loop resource (epoll instance, eventfd).
    #[error("cannot set up the event loop for the server on {addr}: {source}")]
    EventLoop {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    /// A server thread could not be spawned.
    #[error("cannot start thread {index} of the server on {addr}: {source}")]
    Spawn {
        addr: SocketAddr,
        index: usize,
        #[source]
        source: io::Error,
    },
}

/// One thread's counters. Read by anyone through [`ThreadCounters::snapshot`]; written only
/// through the thread's single [`CounterWriter`].
///
/// Aligned to two cache lines so that threads' counters never share one (no false sharing on
/// the hot path; the adjacent-line prefetcher works in pairs).
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct ThreadCounters {
    connections_accepted: AtomicU64,
    connections_open: AtomicU64,
    bytes_read: AtomicU64,
    bytes_written: AtomicU64,
    reads: AtomicU64,
    writes: AtomicU64,
}

impl ThreadCounters {
    /// A consistent-enough view: each field is exact, fields may be a few syscalls apart.
    pub(crate) fn snapshot(&self) -> ServerStats {
        ServerStats {
            connections_accepted: self.connections_accepted.load(Relaxed),
            connections_open: self.connections_open.load(Relaxed),
            bytes_read: self.bytes_read.load(Relaxed),
            bytes_written: self.bytes_written.load(Relaxed),
            reads: self.reads.load(Relaxed),
            writes: self.writes.load(Relaxed),
        }
    }
}

/// The write side of one thread's counters. Not `Clone`: owning it is what makes its thread
/// the only writer, which is what makes plain load + store updates correct.
#[derive(Debug)]
pub(crate) struct CounterWriter(Arc<ThreadCounters>);

/// Adds `n` with wrapping (a sole writer needs no atomic read-modify-write).
fn bump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
}

/// Subtracts `n`; used to correct an optimistic count.
fn unbump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed).wrapping_sub(n), Relaxed);
}

impl CounterWriter {
    /// A fresh writer and the shared counters it writes, for the handle to read.
    pub(crate) fn new() -> (CounterWriter, Arc<ThreadCounters>) {
        let shared = Arc::new(ThreadCounters::default());
        (CounterWriter(Arc::clone(&shared)), shared)
    }

    pub(crate) fn accepted(&self) {
        bump(&self.0.connections_accepted, 1);
        bump(&self.0.connections_open, 1);
    }

    pub(crate) fn closed(&self) {
        unbump(&self.0.connections_open, 1);
    }

    /// Counts a read syscall that returned `n > 0` bytes.
    pub(crate) fn read(&self, n: usize) {
        bump(&self.0.bytes_read, n as u64);
        bump(&self.0.reads, 1);
    }

    /// Runs one write syscall of `len` bytes, counted before it runs (see the module doc) and
    /// corrected afterwards to what it actually wrote.
    pub(crate) fn counted_write(
        &self,
        len: usize,
        write: impl FnOnce() -> io::Result<usize>,
    ) -> io::Result<usize> {
        bump(&self.0.bytes_written, len as u64);
        bump(&self.0.writes, 1);
        let result = write();
        let written = match result {
            Ok(n) => n.min(len),
            Err(_) => 0,
        };
        if written < len {
            unbump(&self.0.bytes_written, (len - written) as u64);
        }
        if written == 0 {
            unbump(&self.0.writes, 1);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_write_keeps_only_what_was_written() {
        let (writer, shared) = CounterWriter::new();
        writer.counted_write(10, || Ok(10)).expect("ok");
        writer.counted_write(10, || Ok(4)).expect("ok");
        let _ = writer.counted_write(10, || Err(io::ErrorKind::WouldBlock.into()));
        let _ = writer.counted_write(10, || Ok(0));
        let stats = shared.snapshot();
        assert_eq!(stats.bytes_written, 14);
        assert_eq!(stats.writes, 2);
    }

    #[test]
    fn connections_and_reads_are_counted() {
        let (writer, shared) = CounterWriter::new();
        writer.accepted();
        writer.accepted();
        writer.closed();
        writer.read(7);
        writer.read(1);
        let want = ServerStats {
            connections_accepted: 2,
            connections_open: 1,
            bytes_read: 8,
            reads: 2,
            ..ServerStats::default()
        };
        assert_eq!(shared.snapshot(), want);
    }

    #[test]
    fn stats_round_trip_through_json_with_stable_names() {
        let stats = ServerStats {
            connections_accepted: 1,
            bytes_written: 9,
            ..ServerStats::default()
        };
        let json = serde_json::to_string(&stats).expect("serialize");
        assert!(json.contains("\"connections_accepted\":1"), "{json}");
        assert!(json.contains("\"bytes_written\":9"), "{json}");
        let back: ServerStats = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, stats);
    }

    #[test]
    fn merge_adds_every_field() {
        let one = ServerStats {
            connections_accepted: 1,
            connections_open: 2,
            bytes_read: 3,
            bytes_written: 4,
            reads: 5,
            writes: 6,
        };
        let mut sum = one;
        sum.merge(&one);
        assert_eq!(sum.bytes_written, 8);
        assert_eq!(sum.writes, 12);
        assert_eq!(sum.connections_accepted, 2);
    }
}
