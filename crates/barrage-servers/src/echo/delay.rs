//! The echo server's delay queue: echo bytes held until their due time.
//!
//! Key decision: the delay is the same for every byte, so echoes fall due in the order the data
//! was read and a FIFO is a priority queue; the event loop only ever looks at its front (as the
//! poll timeout) and pops from it. It touches no socket, so it is tested here with made-up
//! instants.

use std::collections::VecDeque;
use std::time::Instant;

/// Echo bytes waiting for their due time.
#[derive(Debug)]
pub(crate) struct Held {
    pub due: Instant,
    /// Slot of the connection the bytes belong to.
    pub slot: usize,
    /// Connection id, so bytes of a closed connection are not sent to a new one in its slot.
    pub conn_id: u64,
    pub bytes: Vec<u8>,
}

/// How many spare byte buffers the queue keeps for reuse.
const SPARE_BUFFERS: usize = 64;

/// FIFO of held echoes, ordered by due time because every echo is delayed by the same amount.
#[derive(Debug, Default)]
pub(crate) struct DelayQueue {
    held: VecDeque<Held>,
    /// Buffers of released entries, reused so steady delayed traffic stops allocating.
    spare: Vec<Vec<u8>>,
}

impl DelayQueue {
    /// Holds `data` of connection (`slot`, `conn_id`) until `due`, which must not be earlier
    /// than any due time pushed before (true for a constant delay and a monotonic clock).
    pub(crate) fn push(&mut self, due: Instant, slot: usize, conn_id: u64, data: &[u8]) {
        debug_assert!(self.held.back().is_none_or(|last| last.due <= due));
        let mut bytes = self.spare.pop().unwrap_or_default();
        bytes.extend_from_slice(data);
        self.held.push_back(Held {
            due,
            slot,
            conn_id,
            bytes,
        });
    }

    /// The earliest due time, if anything is held.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.held.front().map(|held| held.due)
    }

    /// The front entry if it is due at `now`.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<Held> {
        if self.held.front()?.due <= now {
            self.held.pop_front()
        } else {
            None
        }
    }

    /// Gives a released entry's buffer back for reuse.
    pub(crate) fn recycle(&mut self, mut bytes: Vec<u8>) {
        // Keep only ordinary-sized buffers: one huge burst should not pin its memory forever.
        if self.spare.len() < SPARE_BUFFERS && bytes.capacity() <= 256 * 1024 {
            bytes.clear();
            self.spare.push(bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn delay_queue_releases_in_order_only_when_due() {
        let t0 = Instant::now();
        let mut queue = DelayQueue::default();
        queue.push(t0 + 10 * MS, 0, 1, b"a");
        queue.push(t0 + 12 * MS, 1, 2, b"b");
        assert_eq!(queue.next_due(), Some(t0 + 10 * MS));
        assert!(queue.pop_due(t0 + 9 * MS).is_none());
        let first = queue.pop_due(t0 + 11 * MS).expect("due");
        assert_eq!(
            (first.slot, first.conn_id, &first.bytes[..]),
            (0, 1, &b"a"[..])
        );
        assert!(queue.pop_due(t0 + 11 * MS).is_none());
        let second = queue.pop_due(t0 + 12 * MS).expect("due");
        assert_eq!(&second.bytes[..], b"b");
        assert_eq!(queue.next_due(), None);
    }

    #[test]
    fn delay_queue_reuses_released_buffers() {
        let t0 = Instant::now();
        let mut queue = DelayQueue::default();
        queue.push(t0, 0, 1, &[7; 100]);
        let held = queue.pop_due(t0).expect("due");
        let ptr = held.bytes.as_ptr();
        queue.recycle(held.bytes);
        queue.push(t0, 0, 2, b"z");
        let again = queue.pop_due(t0).expect("due");
        assert_eq!(again.bytes.as_ptr(), ptr);
        assert_eq!(&again.bytes[..], b"z");
    }
}
