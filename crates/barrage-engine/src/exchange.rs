//! Exchanges in flight on one connection, matched by key.
//!
//! Every request a connection sends opens an [`Exchange`]: its key, when it was meant to go
//! out (latency counts from there in open-loop modes), when it was written (timeouts count
//! from there), its length and the step of the script that sent it. A session completes an
//! exchange by its key; ordered protocols (TCP framing, HTTP/1.1, RESP, memcached) complete
//! the oldest one, which is the fast path. Keys grow in send order, so a completion out of
//! order (request ids, HTTP/2 streams, deliveries) is a binary search that leaves a tombstone,
//! swept when it reaches the front.
//!
//! Memory: the oldest exchange is stored inline and the rest in a queue that allocates only
//! when more than one exchange is in flight, so an idle connection or a ping-pong connection
//! costs no heap here.

use std::collections::VecDeque;

/// The step of a request sent by the connection's opening script (a login message): its
/// reply completes the opening, not an exchange of the load.
pub const OPENING: u16 = u16::MAX;

const NONE: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exchange {
    pub key: u64,
    /// Latency is measured from here: the actual send (closed loop) or the intended one.
    pub start: u64,
    /// When it was actually written; timeouts count from here.
    pub sent: u64,
    /// Request bytes (what echo framing expects back).
    pub len: u32,
    /// What sent it: a command index of the session's mix, or [`OPENING`].
    pub step: u16,
    done: bool,
}

impl Exchange {
    pub fn new(key: u64, start: u64, sent: u64, len: u32, step: u16) -> Self {
        Self {
            key,
            start,
            sent,
            len,
            step,
            done: false,
        }
    }

    const EMPTY: Self = Self {
        key: NONE,
        start: 0,
        sent: 0,
        len: 0,
        step: 0,
        done: false,
    };
}

/// The exchanges in flight, oldest first.
#[derive(Debug)]
pub struct Exchanges {
    /// The oldest exchange still open (`key == NONE`: nothing in flight). Never a tombstone.
    head: Exchange,
    /// The younger ones, in key order; may hold tombstones (completed out of order).
    rest: VecDeque<Exchange>,
    tombs: u32,
    /// Open exchanges sent by the opening (they are not part of the load).
    openings: u32,
}

impl Default for Exchanges {
    fn default() -> Self {
        Self {
            head: Exchange::EMPTY,
            rest: VecDeque::new(),
            tombs: 0,
            openings: 0,
        }
    }
}

impl Exchanges {
    /// Open an exchange. Keys must grow in the order exchanges are opened.
    #[inline]
    pub fn push(&mut self, ex: Exchange) {
        debug_assert!(ex.key != NONE);
        self.openings += u32::from(ex.step == OPENING);
        if self.head.key == NONE {
            self.head = ex;
        } else {
            debug_assert!(self.rest.back().map_or(self.head.key, |b| b.key) < ex.key);
            self.rest.push_back(ex);
        }
    }

    /// The oldest exchange still open.
    #[inline]
    pub fn front(&self) -> Option<&Exchange> {
        (self.head.key != NONE).then_some(&self.head)
    }

    /// The oldest exchange still open, to update (bytes written under `--expect none`).
    #[inline]
    pub fn front_mut(&mut self) -> Option<&mut Exchange> {
        (self.head.key != NONE).then_some(&mut self.head)
    }

    /// Open exchanges of the load (the opening's requests left out).
    #[inline]
    pub fn counted(&self) -> usize {
        self.len() - self.openings as usize
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head.key == NONE
    }

    /// Exchanges still open.
    #[inline]
    pub fn len(&self) -> usize {
        if self.head.key == NONE {
            0
        } else {
            1 + self.rest.len() - self.tombs as usize
        }
    }

    /// Complete the oldest exchange (ordered protocols).
    #[inline]
    pub fn pop_front(&mut self) -> Option<Exchange> {
        if self.head.key == NONE {
            return None;
        }
        let ex = self.head;
        self.openings -= u32::from(ex.step == OPENING);
        self.advance();
        Some(ex)
    }

    /// Complete the exchange with this key, wherever it is; `None` if no such exchange is
    /// open (a duplicate or unknown key).
    pub fn complete(&mut self, key: u64) -> Option<Exchange> {
        if self.head.key == key && key != NONE {
            return self.pop_front();
        }
        let i = self.rest.binary_search_by_key(&key, |e| e.key).ok()?;
        let e = &mut self.rest[i];
        if e.done {
            return None;
        }
        e.done = true;
        self.tombs += 1;
        self.openings -= u32::from(e.step == OPENING);
        Some(*e)
    }

    /// The open exchanges, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Exchange> + '_ {
        self.front()
            .into_iter()
            .chain(self.rest.iter().filter(|e| !e.done))
    }

    /// Forget everything (the connection broke).
    pub fn clear(&mut self) {
        self.head = Exchange::EMPTY;
        self.rest.clear();
        self.tombs = 0;
        self.openings = 0;
    }

    /// The next open exchange becomes the head; tombstones on the way are swept.
    fn advance(&mut self) {
        loop {
            match self.rest.pop_front() {
                None => {
                    self.head = Exchange::EMPTY;
                    return;
                }
                Some(e) if e.done => self.tombs -= 1,
                Some(e) => {
                    self.head = e;
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(key: u64) -> Exchange {
        Exchange::new(key, key * 10, key * 10, 1, 0)
    }

    #[test]
    fn ordered_completion_is_fifo() {
        let mut q = Exchanges::default();
        assert!(q.is_empty() && q.front().is_none() && q.pop_front().is_none());
        for k in 0..5 {
            q.push(ex(k));
        }
        assert_eq!(q.len(), 5);
        for k in 0..5 {
            assert_eq!(q.front().unwrap().key, k);
            assert_eq!(q.pop_front().unwrap().key, k);
        }
        assert!(q.is_empty());
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn completion_by_key_out_of_order_sweeps_tombstones() {
        let mut q = Exchanges::default();
        for k in 1..=5 {
            q.push(ex(k));
        }
        assert_eq!(q.complete(3).unwrap().start, 30);
        assert_eq!(q.complete(3), None, "a key completes once");
        assert_eq!(q.complete(9), None, "unknown key");
        assert_eq!(q.len(), 4);
        assert_eq!(q.complete(1).unwrap().key, 1);
        // 2 is the oldest open one now; 3 is a tombstone behind it.
        assert_eq!(q.front().unwrap().key, 2);
        assert_eq!(q.pop_front().unwrap().key, 2);
        assert_eq!(q.front().unwrap().key, 4, "the tombstone of 3 was swept");
        assert_eq!(q.len(), 2);
        assert_eq!(q.complete(5).unwrap().key, 5);
        assert_eq!(q.complete(4).unwrap().key, 4);
        assert!(q.is_empty());
        q.push(ex(6));
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn opening_requests_are_not_counted_as_load() {
        let mut q = Exchanges::default();
        q.push(Exchange::new(2, 0, 0, 5, OPENING));
        q.push(ex(3));
        q.push(ex(5));
        assert_eq!((q.len(), q.counted()), (3, 2));
        assert_eq!(q.pop_front().unwrap().step, OPENING);
        assert_eq!((q.len(), q.counted()), (2, 2));
        q.push(Exchange::new(6, 0, 0, 5, OPENING));
        q.complete(6);
        assert_eq!((q.len(), q.counted()), (2, 2));
        q.clear();
        assert_eq!((q.len(), q.counted()), (0, 0));
    }

    #[test]
    fn one_exchange_in_flight_needs_no_heap() {
        let mut q = Exchanges::default();
        for k in 0..100 {
            q.push(ex(k));
            q.pop_front();
        }
        assert_eq!(q.rest.capacity(), 0);
    }
}
