//! The worker's connect pacing: which connections wait to connect, how many connects are under
//! way, the connect rate's next slot, each turn's budget of connects, and the dialer that
//! starts them.

use crate::clock::{TimeSource, TimerKind, Timers};
use crate::plan::Share;
use crate::ports::Dialer;
use std::collections::VecDeque;

/// The timer owner of the connect rate's wake (no connection's index).
pub(super) const WORKER: u32 = u32::MAX;
/// Connects started per turn of the event loop (see [`Connects::take`]).
const CONNECTS_PER_TURN: u32 = 64;
/// Time a turn of the loop may spend starting connects: when the kernel's port search is slow
/// (a port range crowded with TIME_WAIT), fewer connects start per turn instead of the loop
/// stalling for hundreds of milliseconds.
const CONNECT_TIME_PER_TURN_NS: u64 = 2_000_000;

/// Connect pacing: the queue of connections to connect, the in-flight bound's count, the
/// connect rate's schedule and the turn's budget.
pub(super) struct Connects {
    /// Connections waiting to connect, in order.
    pub(super) queue: VecDeque<u32>,
    /// Connects under way (bounded by `Share::max_connecting`).
    pub(super) connecting: u32,
    /// The connect rate's next slot (ns), and the slot its timer is armed for.
    next: u64,
    timer: u64,
    /// Connects this turn of the loop may still start, and whether [`Connects::take`]
    /// stopped at that budget with connects still waiting.
    budget: u32,
    pub(super) more: bool,
    /// When this turn started connecting (`u64::MAX`: not yet).
    turn_start: u64,
    /// Where connections go from and to, with this worker's stride of local ports.
    pub(super) dialer: Dialer,
    /// Through a proxy: what it answered to CONNECT so far, per connection waiting for its
    /// tunnel (a few at a time; kept here, not on every connection).
    pub(super) proxy_heads: Vec<(u32, Vec<u8>)>,
}

impl Connects {
    /// Every one of the share's `n` connections queued to connect.
    pub(super) fn new(n: u32, dialer: Dialer) -> Self {
        Self {
            queue: (0..n).collect(),
            connecting: 0,
            next: 0,
            timer: u64::MAX,
            budget: CONNECTS_PER_TURN,
            more: false,
            turn_start: u64::MAX,
            dialer,
            proxy_heads: Vec::new(),
        }
    }

    /// Connection `idx`'s proxy answer so far (a new, empty one when it has none).
    pub(super) fn proxy_head(&mut self, idx: u32) -> &mut Vec<u8> {
        let i = match self.proxy_heads.iter().position(|(k, _)| *k == idx) {
            Some(i) => i,
            None => {
                self.proxy_heads.push((idx, Vec::new()));
                self.proxy_heads.len() - 1
            }
        };
        &mut self.proxy_heads[i].1
    }

    /// Forget connection `idx`'s proxy answer (its tunnel opened, or it failed or starts over).
    pub(super) fn proxy_done(&mut self, idx: u32) -> Vec<u8> {
        match self.proxy_heads.iter().position(|(k, _)| *k == idx) {
            Some(i) => self.proxy_heads.swap_remove(i).1,
            None => Vec::new(),
        }
    }

    /// A new turn of the loop: its budget is whole again.
    pub(super) fn new_turn(&mut self) {
        self.budget = CONNECTS_PER_TURN;
        self.turn_start = u64::MAX;
        self.more = false;
    }

    /// The next connection to connect now, if the in-flight bound, the connect rate and the
    /// turn's budget (`CONNECTS_PER_TURN`, `CONNECT_TIME_PER_TURN_NS`) allow one: taken off
    /// the queue and counted against the budget. When the rate holds it back, its timer is
    /// armed (once per slot); when the budget does, `more` says connects still wait.
    pub(super) fn take(
        &mut self,
        now: u64,
        time: &TimeSource,
        share: &Share,
        timers: &mut Timers,
    ) -> Option<u32> {
        if self.connecting >= share.max_connecting {
            return None;
        }
        let spent = match self.turn_start {
            u64::MAX => 0,
            t => time.now().saturating_sub(t),
        };
        if self.budget == 0 || spent >= CONNECT_TIME_PER_TURN_NS {
            self.more = !self.queue.is_empty();
            return None;
        }
        let &idx = self.queue.front()?;
        if let Some(rate) = share.connect_rate {
            let period = (1e9 / rate) as u64;
            if self.next > now {
                if self.timer != self.next {
                    self.timer = self.next;
                    timers.push(self.next, WORKER, TimerKind::Connect);
                }
                return None;
            }
            self.next = self.next.max(now.saturating_sub(period)) + period;
        }
        self.queue.pop_front();
        if self.turn_start == u64::MAX {
            self.turn_start = time.now();
        }
        self.budget -= 1;
        Some(idx)
    }
}
