//! One echo connection: its socket, the bytes it still owes its peer and what it knows about
//! its readiness.
//!
//! Key decision: backpressure, not buffering. Without a delay, a connection stops reading as
//! soon as the kernel refuses part of an echo, and reads again only once that rest is flushed,
//! so it never holds more than one read's worth; with a delay it stops at [`HOLD_LIMIT`] bytes
//! owed. Readiness is edge-triggered (mio), so each connection remembers whether it may still
//! have unread data (`read_ready`) or be unable to write (`write_blocked`): no new edge comes
//! for readiness we have not consumed.

use super::delay::DelayQueue;
use crate::driver::{Key, Turn};
use crate::faults::after;
use crate::stats::CounterWriter;
use mio::event::Event;
use mio::net::TcpStream;
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

/// Bytes a connection may owe its peer in delay mode (held in the delay queue or refused by
/// the kernel) before it stops reading. Bounds memory per connection.
pub(crate) const HOLD_LIMIT: usize = 256 * 1024;
/// Read syscalls per turn before a connection yields, so one fast peer cannot starve the rest.
const READS_PER_TURN: usize = 16;
/// A flushed pending buffer bigger than this is freed rather than kept for next time.
const RETAIN_PENDING: usize = 128 * 1024;

/// Where read bytes go in delay mode instead of straight back to the peer.
pub(crate) struct Hold<'a> {
    pub queue: &'a mut DelayQueue,
    pub delay: Duration,
    /// The connection the bytes belong to.
    pub key: Key,
}

pub(crate) struct Conn {
    stream: TcpStream,
    /// Echo bytes the kernel refused, `pending[sent..]`; allocated on first use only.
    pending: Vec<u8>,
    sent: usize,
    /// Bytes of this connection waiting in the delay queue.
    pub delayed: usize,
    /// An edge said "readable" and we have not yet read until empty.
    read_ready: bool,
    /// The peer's FIN (or a hangup) was reported: a short read no longer means "drained",
    /// we must read on until the 0 that tells us to close.
    read_closed: bool,
    /// A write hit `WouldBlock`; only a writable edge clears it.
    write_blocked: bool,
    /// We read the peer's FIN but still owe it bytes: close once they are written.
    eof: bool,
}

impl Conn {
    pub(crate) fn new(stream: TcpStream) -> Conn {
        Conn {
            stream,
            pending: Vec::new(),
            sent: 0,
            delayed: 0,
            read_ready: false,
            read_closed: false,
            write_blocked: false,
            eof: false,
        }
    }

    /// Records what an edge reported. Errors and hangups count as readable: the next read
    /// surfaces them.
    pub(crate) fn note(&mut self, event: &Event) {
        if event.is_readable() || event.is_read_closed() || event.is_error() {
            self.read_ready = true;
        }
        if event.is_read_closed() || event.is_error() {
            self.read_closed = true;
        }
        if event.is_writable() || event.is_error() {
            self.write_blocked = false;
        }
    }

    /// Bytes owed to the peer: not yet accepted by the kernel or still held for the delay.
    fn owed(&self) -> usize {
        self.pending.len() - self.sent + self.delayed
    }

    /// Flushes what is pending, then reads and echoes (or holds) until the socket is drained,
    /// the connection owes too much, or its read budget is used.
    pub(crate) fn pump(
        &mut self,
        buf: &mut [u8],
        counters: &CounterWriter,
        mut hold: Option<Hold<'_>>,
    ) -> Turn {
        if !self.flush(counters) {
            return Turn::Closed;
        }
        let limit = if hold.is_some() { HOLD_LIMIT } else { 1 };
        let mut reads = 0;
        while self.read_ready && !self.eof && self.owed() < limit {
            if reads == READS_PER_TURN {
                return Turn::Yielded;
            }
            match self.stream.read(buf) {
                Ok(0) => {
                    self.eof = true;
                    self.read_ready = false;
                }
                Ok(n) => {
                    reads += 1;
                    counters.read(n);
                    // Linux epoll: a read that did not fill the buffer emptied the socket, and
                    // new data will raise a new edge; saves the read that would say WouldBlock.
                    if n < buf.len() && !self.read_closed {
                        self.read_ready = false;
                    }
                    let data = &buf[..n];
                    match hold.as_mut() {
                        Some(hold) => {
                            // The clock is read per read, not per loop turn: data that arrived
                            // while this turn ran must not come back early.
                            let due = after(Instant::now(), hold.delay);
                            hold.queue.push(due, hold.key.slot, hold.key.id, data);
                            self.delayed += n;
                        }
                        None => {
                            if !self.send(data, counters) {
                                return Turn::Closed;
                            }
                        }
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => self.read_ready = false,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Turn::Closed,
            }
        }
        if self.eof && self.owed() == 0 {
            return Turn::Closed;
        }
        Turn::Idle
    }

    /// Echoes `data` now: written directly when nothing is pending (the common case, no copy),
    /// else queued behind the pending bytes to keep the order. False if the socket failed.
    pub(crate) fn send(&mut self, data: &[u8], counters: &CounterWriter) -> bool {
        if self.sent < self.pending.len() {
            self.pending.extend_from_slice(data);
            return true;
        }
        match write_some(&mut self.stream, data, counters) {
            Ok(n) if n == data.len() => true,
            Ok(n) => {
                self.write_blocked = true;
                self.pending.extend_from_slice(&data[n..]);
                true
            }
            Err(_) => false,
        }
    }

    /// Writes pending bytes unless the socket is known to be full. False if the socket failed.
    fn flush(&mut self, counters: &CounterWriter) -> bool {
        if self.write_blocked || self.sent == self.pending.len() {
            return true;
        }
        match write_some(&mut self.stream, &self.pending[self.sent..], counters) {
            Ok(n) => {
                self.sent += n;
                if self.sent == self.pending.len() {
                    self.sent = 0;
                    self.pending.clear();
                    if self.pending.capacity() > RETAIN_PENDING {
                        self.pending = Vec::new();
                    }
                } else {
                    self.write_blocked = true;
                }
                true
            }
            Err(_) => false,
        }
    }
}

/// Writes as much of `data` as the kernel takes; returns how much that was. Stops early only at
/// `WouldBlock`, which guarantees a writable edge later.
fn write_some(stream: &mut TcpStream, data: &[u8], counters: &CounterWriter) -> io::Result<usize> {
    let mut done = 0;
    while done < data.len() {
        let rest = &data[done..];
        match counters.counted_write(rest.len(), || stream.write(rest)) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => break,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(done)
}
