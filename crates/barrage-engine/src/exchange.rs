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
//! costs no heap here. A pipelined batch (requests written together: the same start, send
//! time, length and step, consecutive keys) is the head and a count of the exchanges behind
//! it, not queue entries: its replies complete by counting down, and the queue is not touched
//! (taking an exchange from it was a cache miss per reply under pipelined load).

use std::collections::VecDeque;

/// The step of a request sent by the connection's opening script (a login message): its
/// reply completes the opening, not an exchange of the load.
pub const OPENING: u16 = u16::MAX;

const NONE: u64 = u64::MAX;

/// How far apart the keys of consecutive load requests are (a connection's load keys are
/// `seq << 1 | 1`, [`crate::conn::Conn::load_key`]): the keys of a run.
pub const RUN_STEP: u64 = 2;

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
    /// The run behind the head: this many exchanges that differ from it only in their keys,
    /// `head.key + RUN_STEP * j` for j in `1..=run` (never an opening's). It grows only while `rest` is
    /// empty, so everything in `rest` comes after it.
    run: u16,
    /// Open exchanges sent by the opening (they are not part of the load).
    openings: u16,
    tombs: u32,
    /// The younger ones, in key order; may hold tombstones (completed out of order).
    rest: VecDeque<Exchange>,
}

impl Default for Exchanges {
    fn default() -> Self {
        Self {
            head: Exchange::EMPTY,
            run: 0,
            openings: 0,
            tombs: 0,
            rest: VecDeque::new(),
        }
    }
}

impl Exchanges {
    /// Open an exchange. Keys must grow in the order exchanges are opened.
    #[inline]
    pub fn push(&mut self, ex: Exchange) {
        debug_assert!(ex.key != NONE);
        self.openings += u16::from(ex.step == OPENING);
        let h = &self.head;
        if h.key == NONE {
            self.head = ex;
        } else if self.rest.is_empty()
            && self.run < u16::MAX
            && ex.key == h.key + RUN_STEP * (u64::from(self.run) + 1)
            && (ex.start, ex.sent, ex.len, ex.step) == (h.start, h.sent, h.len, h.step)
            && ex.step != OPENING
        {
            self.run += 1;
        } else {
            let last = h.key + RUN_STEP * u64::from(self.run);
            debug_assert!(self.rest.back().map_or(last, |b| b.key) < ex.key);
            self.rest.push_back(ex);
        }
    }

    /// The oldest exchange still open.
    #[inline]
    pub fn front(&self) -> Option<&Exchange> {
        (self.head.key != NONE).then_some(&self.head)
    }

    /// The oldest exchange still open, to update (bytes written under `--expect none`): a run
    /// behind it becomes queue entries first, so the change is the head's alone.
    #[inline]
    pub fn front_mut(&mut self) -> Option<&mut Exchange> {
        if self.head.key == NONE {
            return None;
        }
        self.unroll();
        Some(&mut self.head)
    }

    /// The run's exchanges as queue entries, in key order, in front of the (empty) queue.
    fn unroll(&mut self) {
        for j in (1..=u64::from(self.run)).rev() {
            self.rest.push_front(Exchange {
                key: self.head.key + RUN_STEP * j,
                ..self.head
            });
        }
        self.run = 0;
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
            1 + self.run as usize + self.rest.len() - self.tombs as usize
        }
    }

    /// Complete the oldest exchange (ordered protocols).
    #[inline]
    pub fn pop_front(&mut self) -> Option<Exchange> {
        if self.head.key == NONE {
            return None;
        }
        let ex = self.head;
        self.openings -= u16::from(ex.step == OPENING);
        if self.run > 0 {
            self.run -= 1;
            self.head.key += RUN_STEP;
        } else {
            self.advance();
        }
        Some(ex)
    }

    /// Remove up to `max` (≥ 1) exchanges from the front at once, all alike but for their
    /// keys: the head and as much of its run as asked for. Returns the head as it was and how
    /// many went (at least 1); `None` when nothing is in flight or `max` is 0. The same as
    /// that many [`Exchanges::pop_front`] calls, which a pipelined batch of replies would
    /// make. A run forms only while nothing is queued behind it (see [`Exchanges::push`]):
    /// batches written while an earlier one is partly answered are taken one at a time.
    #[inline]
    pub fn pop_run(&mut self, max: u32) -> Option<(Exchange, u32)> {
        if self.head.key == NONE || max == 0 {
            return None;
        }
        let ex = self.head;
        let k = max.min(u32::from(self.run) + 1);
        if k <= u32::from(self.run) {
            self.run -= k as u16;
            self.head.key += RUN_STEP * u64::from(k);
        } else {
            self.run = 0;
            self.openings -= u16::from(ex.step == OPENING);
            self.advance();
        }
        Some((ex, k))
    }

    /// The open exchange with this key, wherever it is.
    pub fn get(&mut self, key: u64) -> Option<&Exchange> {
        if self.head.key == key && key != NONE {
            return Some(&self.head);
        }
        self.unroll();
        let i = self.rest.binary_search_by_key(&key, |e| e.key).ok()?;
        Some(&self.rest[i]).filter(|e| !e.done)
    }

    /// Complete the exchange with this key, wherever it is; `None` if no such exchange is
    /// open (a duplicate or unknown key).
    pub fn complete(&mut self, key: u64) -> Option<Exchange> {
        if self.head.key == key && key != NONE {
            return self.pop_front();
        }
        self.unroll();
        let i = self.rest.binary_search_by_key(&key, |e| e.key).ok()?;
        let e = &mut self.rest[i];
        if e.done {
            return None;
        }
        e.done = true;
        self.tombs += 1;
        self.openings -= u16::from(e.step == OPENING);
        Some(*e)
    }

    /// The open exchanges, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = Exchange> + '_ {
        let head = self.front().copied();
        let run = head.into_iter().flat_map(move |h| {
            (0..=u64::from(self.run)).map(move |j| Exchange {
                key: h.key + RUN_STEP * j,
                ..h
            })
        });
        run.chain(self.rest.iter().filter(|e| !e.done).copied())
    }

    /// Forget everything (the connection broke).
    pub fn clear(&mut self) {
        self.head = Exchange::EMPTY;
        self.run = 0;
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
    fn a_batch_of_replies_takes_the_run_at_once() {
        let mut q = Exchanges::default();
        let key = |seq: u64| seq << 1 | 1;
        for seq in 0..16 {
            q.push(Exchange::new(key(seq), 7, 8, 30, 1));
        }
        q.push(Exchange::new(key(16), 9, 9, 30, 1)); // another batch
        assert_eq!(q.pop_run(0), None);
        let head = |seq| Exchange::new(key(seq), 7, 8, 30, 1);
        assert_eq!(q.pop_run(5), Some((head(0), 5)));
        assert_eq!(
            q.pop_run(100),
            Some((head(5), 11)),
            "no further than the run"
        );
        assert_eq!(
            q.pop_run(100),
            Some((Exchange::new(key(16), 9, 9, 30, 1), 1))
        );
        assert_eq!(q.pop_run(1), None);
        assert!(q.is_empty());
    }

    #[test]
    fn a_pipelined_batch_is_a_run_that_needs_no_queue() {
        let mut q = Exchanges::default();
        let key = |seq: u64| seq << 1 | 1; // as a connection's load keys
        for seq in 10..26 {
            q.push(Exchange::new(key(seq), 7, 8, 30, 1));
        }
        assert_eq!((q.len(), q.run, q.rest.capacity()), (16, 15, 0));
        for seq in 10..26 {
            assert_eq!(q.pop_front(), Some(Exchange::new(key(seq), 7, 8, 30, 1)));
        }
        assert!(q.is_empty());
        assert_eq!(q.rest.capacity(), 0);
    }

    /// Every operation, in random order, against a plain list of exchanges: the same
    /// exchanges come out, in the same order, whatever became a run.
    #[test]
    fn runs_and_queue_behave_exactly_like_a_plain_list() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        for _ in 0..200 {
            let mut q = Exchanges::default();
            let mut model: Vec<Exchange> = Vec::new();
            let mut key = 1u64;
            for _ in 0..200 {
                match next(6) {
                    0 | 1 => {
                        // A batch: alike but for the keys, sometimes with a differing one.
                        let (start, len) = (next(3), 1 + next(2) as u32);
                        let step = if next(8) == 0 {
                            OPENING
                        } else {
                            next(2) as u16
                        };
                        for _ in 0..1 + next(20) {
                            let odd = next(10) == 0;
                            let e =
                                Exchange::new(key, start, start + 1, len + u32::from(odd), step);
                            // Mostly a run's step; sometimes a gap or a smaller step.
                            key += match next(8) {
                                0 => 1,
                                1 => 3,
                                _ => RUN_STEP,
                            };
                            q.push(e);
                            model.push(e);
                        }
                    }
                    2 => {
                        let want = (!model.is_empty()).then(|| model.remove(0));
                        assert_eq!(q.pop_front(), want);
                    }
                    3 => {
                        // Out of order: an open key, or one that is not.
                        if !model.is_empty() && next(4) > 0 {
                            let i = next(model.len() as u64) as usize;
                            let e = model.remove(i);
                            let done = q.complete(e.key).map(|x| Exchange { done: false, ..x });
                            assert_eq!(done, Some(e));
                        } else {
                            let k = key + next(3);
                            assert_eq!(q.complete(k), None);
                        }
                    }
                    4 => {
                        if let Some(f) = q.front_mut() {
                            f.len += 100;
                            model[0].len += 100;
                        }
                    }
                    _ => {
                        // A batch of replies: as many pops as the run allows, at once.
                        let max = 1 + next(20) as u32;
                        match q.pop_run(max) {
                            None => assert!(model.is_empty()),
                            Some((h, k)) => {
                                assert!((1..=max).contains(&k));
                                for j in 0..u64::from(k) {
                                    let e = Exchange {
                                        key: h.key + RUN_STEP * j,
                                        ..h
                                    };
                                    assert_eq!(e, model.remove(0));
                                }
                            }
                        }
                    }
                }
                assert_eq!(q.len(), model.len());
                let openings = model.iter().filter(|e| e.step == OPENING).count();
                assert_eq!(q.counted(), model.len() - openings);
                assert_eq!(q.front().copied(), model.first().copied());
                assert!(q.iter().eq(model.iter().copied()));
            }
            q.clear();
            assert!(q.is_empty() && q.iter().next().is_none());
        }
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
