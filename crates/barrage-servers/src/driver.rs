//! The event loop that every reference server runs on each of its threads.
//!
//! Key decision: the loop owns what is the same for every protocol (accepting with backoff,
//! the connection slot table, the one-time stall, a second turn for connections that used
//! their read budget, timers as the poll timeout) and a [`Service`] owns what differs: the
//! state of one connection and what one turn of it does. A server is then a `Service` impl
//! plus its connection type; echo, http and ws share this loop rather than three copies of it.
//!
//! Readiness is edge-triggered (mio): a connection is registered once for reading and writing
//! and must remember readiness it has not consumed (see each service's connection type).

use crate::faults::Stall;
use crate::runtime::{LoopParts, FIRST_CONN, LISTENER, WAKER};
use crate::stats::CounterWriter;
use mio::event::Event;
use mio::net::TcpStream;
use mio::{Events, Interest, Token};
use std::io;
use std::time::{Duration, Instant};

/// Events taken per `poll`.
const EVENTS: usize = 1024;
/// Pause after an accept error such as `EMFILE`: the listener stays readable while the
/// process is out of descriptors, so retrying at once would spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// Identifies one connection of a thread: its slot and an id unique per thread, so a timer or
/// held data of a closed connection never reaches a later connection in the same slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Key {
    pub slot: usize,
    pub id: u64,
}

/// What a connection's turn ended with.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Nothing more to do until the next event or timer.
    Idle,
    /// It used its read budget and may have more data: give it another turn soon.
    Yielded,
    /// The peer closed, the socket failed or the protocol is done: drop the connection.
    Closed,
}

/// One protocol on top of the shared loop. One value per thread, owning that thread's scratch
/// buffers and timers; the loop owns the connections and lends them out for each call.
pub(crate) trait Service {
    type Conn;
    /// What a due timer carries (echo: the held bytes; http and ws: nothing).
    type Timer;

    /// State for a freshly accepted (and already registered) connection.
    fn open(&mut self, stream: TcpStream, key: Key) -> Self::Conn;
    /// Records what a readiness edge reported.
    fn note(conn: &mut Self::Conn, event: &Event);
    /// One turn: flush, read, answer, until drained, blocked or out of budget.
    fn pump(&mut self, key: Key, conn: &mut Self::Conn, counters: &CounterWriter) -> Turn;
    /// The earliest timer, if any.
    fn next_due(&self) -> Option<Instant>;
    /// The earliest timer if it is due at `now`, with the connection it was armed for.
    fn pop_due(&mut self, now: Instant) -> Option<(Key, Self::Timer)>;
    /// Acts on a due timer. `conn` is `None` when that connection is gone (the slot is empty
    /// or holds a newer connection); the returned turn is then ignored.
    fn fire(
        &mut self,
        key: Key,
        timer: Self::Timer,
        conn: Option<&mut Self::Conn>,
        counters: &CounterWriter,
    ) -> Turn;
}

/// Runs `service` on this thread until the handle says stop, then closes every connection.
pub(crate) fn run<S: Service>(parts: LoopParts, service: S, stall: Option<Stall>) {
    Driver {
        parts,
        service,
        conns: Slots::default(),
        last_id: 0,
        stall,
        was_stalled: false,
        again: Vec::new(),
        accept_backoff: None,
        accept_error_logged: false,
    }
    .run();
}

/// A connection as the loop keeps it.
struct Entry<C> {
    conn: C,
    id: u64,
    /// Already in the "give it another turn" list.
    queued: bool,
}

/// One thread's event loop and everything it owns.
struct Driver<S: Service> {
    parts: LoopParts,
    service: S,
    conns: Slots<Entry<S::Conn>>,
    /// Id of the last accepted connection.
    last_id: u64,
    stall: Option<Stall>,
    /// The previous turn ran inside the stall: the next one outside must resume everyone.
    was_stalled: bool,
    /// Connections that used their read budget and get another turn after this poll.
    again: Vec<usize>,
    /// Accepting pauses until then after an accept error.
    accept_backoff: Option<Instant>,
    /// Accept errors are logged once per thread, not once per retry.
    accept_error_logged: bool,
}

impl<S: Service> Driver<S> {
    fn run(mut self) {
        let mut events = Events::with_capacity(EVENTS);
        while !self.parts.should_stop() {
            let timeout = self.timeout(Instant::now());
            if let Err(err) = self.parts.poll.poll(&mut events, timeout) {
                if err.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                eprintln!(
                    "barrage {} server on {}: poll failed, this thread stops: {err}",
                    self.parts.kind.name(),
                    self.parts.addr
                );
                break;
            }
            if self.parts.should_stop() {
                break;
            }
            self.turn(&events, Instant::now());
        }
        // Stop listening before closing the connections, as a killed process does: a client
        // that reconnects the moment its connection closes is refused, not queued on a
        // listener that is about to go (and its queued connections are reset now).
        let _ = socket2::SockRef::from(&self.parts.listener).shutdown(std::net::Shutdown::Both);
        for slot in 0..self.conns.capacity() {
            self.close(slot);
        }
    }

    /// How long `poll` may sleep: until the next accept retry, stall edge or timer.
    fn timeout(&self, now: Instant) -> Option<Duration> {
        let stalled = self.is_stalled(now);
        if !stalled && (self.was_stalled || !self.again.is_empty()) {
            return Some(Duration::ZERO);
        }
        let mut deadline = self.accept_backoff;
        let mut consider = |at: Option<Instant>| {
            if let Some(at) = at {
                deadline = Some(deadline.map_or(at, |d| d.min(at)));
            }
        };
        consider(self.stall.and_then(|stall| stall.next_edge(now)));
        if !stalled {
            consider(self.service.next_due());
        }
        deadline.map(|at| at.saturating_duration_since(now))
    }

    fn is_stalled(&self, now: Instant) -> bool {
        self.stall.is_some_and(|stall| stall.is_active(now))
    }

    /// Handles one poll's events, then the timers.
    fn turn(&mut self, events: &Events, now: Instant) {
        let stalled = self.is_stalled(now);
        for event in events.iter() {
            match event.token() {
                LISTENER => self.accept(),
                WAKER => {}
                Token(token) => self.on_conn_event(token - FIRST_CONN, event, stalled),
            }
        }
        if self.accept_backoff.is_some_and(|until| now >= until) {
            self.accept();
        }
        if stalled {
            self.was_stalled = true;
            return;
        }
        if self.was_stalled {
            // Nobody got an edge for what arrived during the stall: everyone gets a turn.
            self.was_stalled = false;
            for slot in 0..self.conns.capacity() {
                self.pump_slot(slot);
            }
        }
        self.fire_due(now);
        self.run_again();
    }

    fn on_conn_event(&mut self, slot: usize, event: &Event, stalled: bool) {
        let Some(entry) = self.conns.get_mut(slot) else {
            return; // closed earlier in this same batch of events
        };
        S::note(&mut entry.conn, event);
        if !stalled {
            self.pump_slot(slot);
        }
    }

    /// Gives one connection a turn and acts on how it ended.
    fn pump_slot(&mut self, slot: usize) {
        let Some(entry) = self.conns.get_mut(slot) else {
            return;
        };
        let key = Key { slot, id: entry.id };
        let turn = self
            .service
            .pump(key, &mut entry.conn, &self.parts.counters);
        self.after_turn(slot, turn);
    }

    fn after_turn(&mut self, slot: usize, turn: Turn) {
        match turn {
            Turn::Idle => {}
            Turn::Yielded => {
                if let Some(entry) = self.conns.get_mut(slot) {
                    if !entry.queued {
                        entry.queued = true;
                        self.again.push(slot);
                    }
                }
            }
            Turn::Closed => self.close(slot),
        }
    }

    /// Another turn for connections that used their read budget.
    fn run_again(&mut self) {
        let mut batch = std::mem::take(&mut self.again);
        for &slot in &batch {
            if let Some(entry) = self.conns.get_mut(slot) {
                entry.queued = false;
                self.pump_slot(slot);
            }
        }
        if self.again.is_empty() {
            batch.clear();
            self.again = batch; // keep the allocation
        }
    }

    /// Fires every due timer; those of connections closed meanwhile only clean up.
    fn fire_due(&mut self, now: Instant) {
        while let Some((key, timer)) = self.service.pop_due(now) {
            let conn = match self.conns.get_mut(key.slot) {
                Some(entry) if entry.id == key.id => Some(&mut entry.conn),
                _ => None,
            };
            let alive = conn.is_some();
            let turn = self.service.fire(key, timer, conn, &self.parts.counters);
            if alive {
                self.after_turn(key.slot, turn);
            }
        }
    }

    /// Accepts until the listener's queue is empty (edge-triggered: no second notice).
    fn accept(&mut self) {
        if let Some(until) = self.accept_backoff {
            if Instant::now() < until {
                return;
            }
            self.accept_backoff = None;
        }
        loop {
            match self.parts.listener.accept() {
                Ok((stream, _peer)) => self.add_conn(stream),
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return,
                // Failures of one queued connection, not of the listener: take the next.
                Err(err)
                    if matches!(
                        err.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) => {}
                Err(err) => {
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM: wait for resources instead of spinning.
                    self.warn_once(format_args!("accept failed, retrying every 10 ms: {err}"));
                    self.accept_backoff = Some(Instant::now() + ACCEPT_BACKOFF);
                    return;
                }
            }
        }
    }

    fn add_conn(&mut self, mut stream: TcpStream) {
        self.parts.counters.accepted();
        // Answers are small and clients measure latency: never let Nagle hold one back.
        let _ = stream.set_nodelay(true);
        let slot = self.conns.vacant();
        // Both interests once, for good: edge-triggered writable edges only come after a
        // write hit a full buffer, so this costs nothing and saves re-registering.
        let interest = Interest::READABLE | Interest::WRITABLE;
        let registry = self.parts.poll.registry();
        if let Err(err) = registry.register(&mut stream, Token(slot + FIRST_CONN), interest) {
            self.warn_once(format_args!(
                "cannot watch a new connection, closing it: {err}"
            ));
            self.conns.release(slot);
            self.parts.counters.closed();
            return;
        }
        self.last_id += 1;
        let key = Key {
            slot,
            id: self.last_id,
        };
        let conn = self.service.open(stream, key);
        self.conns.fill(
            slot,
            Entry {
                conn,
                id: key.id,
                queued: false,
            },
        );
    }

    fn close(&mut self, slot: usize) {
        // Dropping the stream closes its only descriptor, which also removes it from the epoll
        // set: an explicit deregister would be one more syscall per connection.
        if self.conns.remove(slot).is_some() {
            self.parts.counters.closed();
        }
    }

    fn warn_once(&mut self, message: std::fmt::Arguments<'_>) {
        if !self.accept_error_logged {
            self.accept_error_logged = true;
            eprintln!(
                "barrage {} server on {}: {message} (logged once)",
                self.parts.kind.name(),
                self.parts.addr
            );
        }
    }
}

/// Connections by slot; slot `i` has mio token `i + FIRST_CONN`. Freed slots are reused, so
/// the table stays as large as the peak number of open connections.
struct Slots<T> {
    slots: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slots<T> {
    /// A free slot number; the caller fills it with [`Slots::fill`] or gives it back with
    /// [`Slots::release`].
    fn vacant(&mut self) -> usize {
        self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        })
    }

    fn fill(&mut self, slot: usize, value: T) {
        self.slots[slot] = Some(value);
    }

    fn release(&mut self, slot: usize) {
        self.free.push(slot);
    }

    fn get_mut(&mut self, slot: usize) -> Option<&mut T> {
        self.slots.get_mut(slot).and_then(Option::as_mut)
    }

    /// Takes the value out of its slot and frees the slot.
    fn remove(&mut self, slot: usize) -> Option<T> {
        let value = self.slots.get_mut(slot).and_then(Option::take)?;
        self.free.push(slot);
        Some(value)
    }

    /// One past the highest slot ever used.
    fn capacity(&self) -> usize {
        self.slots.len()
    }
}
