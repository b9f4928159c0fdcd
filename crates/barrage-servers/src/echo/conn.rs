//! One echo connection: its socket, the bytes it still owes its peer and what it knows about
//! its readiness.
//!
//! Key decision: backpressure, not buffering. Without a delay, a connection stops reading as
//! soon as the kernel refuses part of an echo, and reads again only once that rest is flushed,
//! so it never holds more than one read's worth; with a delay it stops at [`HOLD_LIMIT`] bytes
//! owed. Readiness is edge-triggered (mio): the connection's [`crate::sock::Sock`] remembers
//! whether it may still have unread data or be unable to write, since no new edge comes for
//! readiness we have not consumed. With TLS the same logic runs over rustls ([`Transport`]).

use super::delay::DelayQueue;
use crate::driver::{Key, Turn};
use crate::faults::after;
use crate::stats::CounterWriter;
use crate::tls::{Input, Transport};
use mio::event::Event;
use std::io::{self, IoSlice};
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
    /// The socket (with its readiness flags), or rustls on it.
    transport: Transport,
    /// Echo bytes the transport refused, `pending[sent..]`; allocated on first use only.
    pending: Vec<u8>,
    sent: usize,
    /// Bytes of this connection waiting in the delay queue.
    pub delayed: usize,
    /// We read the peer's end (FIN, or its TLS close_notify) but may still owe it bytes:
    /// close once they are written.
    eof: bool,
}

impl Conn {
    pub(crate) fn new(transport: Transport) -> Conn {
        Conn {
            transport,
            pending: Vec::new(),
            sent: 0,
            delayed: 0,
            eof: false,
        }
    }

    /// Records what an edge reported (see [`crate::sock::Sock::note`]).
    pub(crate) fn note(&mut self, event: &Event) {
        self.transport.sock_mut().note(event);
    }

    /// Bytes owed to the peer: not yet accepted by the transport or still held for the delay.
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
        while !self.eof && self.owed() < limit {
            if reads == READS_PER_TURN {
                return Turn::Yielded;
            }
            match self.transport.read(buf, counters) {
                Ok(Input::Eof) => self.eof = true,
                Ok(Input::Nothing) => break,
                Ok(Input::Progress) => {
                    reads += 1;
                    // A TLS handshake step may have queued records to send.
                    if self.transport.flush(counters).is_err() {
                        return Turn::Closed;
                    }
                }
                Ok(Input::Data(n)) => {
                    reads += 1;
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
                Err(_) => return Turn::Closed,
            }
        }
        if self.eof && self.owed() == 0 {
            // TLS: our close_notify goes out after the last echo; records rustls still holds
            // for a full socket are sent on the next writable edge before the close.
            if self.transport.close_notify() && self.transport.flush(counters).is_err() {
                return Turn::Closed;
            }
            if !self.transport.wants_write() {
                return Turn::Closed;
            }
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
        match write_some(&mut self.transport, data, counters) {
            Ok(n) if n == data.len() => true,
            Ok(n) => {
                self.pending.extend_from_slice(&data[n..]);
                true
            }
            Err(_) => false,
        }
    }

    /// Writes what rustls holds and the pending bytes, unless the socket is known to be full
    /// (the socket view answers `WouldBlock` without a syscall then). False if it failed.
    fn flush(&mut self, counters: &CounterWriter) -> bool {
        if self.transport.flush(counters).is_err() {
            return false;
        }
        if self.sent == self.pending.len() {
            return true;
        }
        match write_some(&mut self.transport, &self.pending[self.sent..], counters) {
            Ok(n) => {
                self.sent += n;
                if self.sent == self.pending.len() {
                    self.sent = 0;
                    self.pending.clear();
                    if self.pending.capacity() > RETAIN_PENDING {
                        self.pending = Vec::new();
                    }
                }
                true
            }
            Err(_) => false,
        }
    }
}

/// Writes as much of `data` as the transport takes; returns how much that was. Stops early
/// only when the socket (or rustls' buffer in front of a full socket) is full, which
/// guarantees a writable edge later.
fn write_some(
    transport: &mut Transport,
    data: &[u8],
    counters: &CounterWriter,
) -> io::Result<usize> {
    let mut done = 0;
    while done < data.len() {
        let rest = [IoSlice::new(&data[done..])];
        match transport.write(&rest, counters) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => break,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(done)
}
