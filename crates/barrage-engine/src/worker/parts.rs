//! The worker's smaller named parts: its buffers, its place on the timeline, and the news it
//! tells the coordinator once. (Connect pacing is `worker/connects.rs`.)

use crate::hook::{HookError, HookRef};
use barrage_metrics::{Timeline, DRAIN_KEY};

const READ_BUF: usize = 64 * 1024;

/// The worker's buffers, shared by all its connections and reused, so that a request or a
/// reply allocates nothing.
pub(super) struct Bufs {
    /// What a read takes from a socket.
    pub(super) read: Box<[u8]>,
    /// TLS plaintext, decrypted out of `read`'s ciphertext (empty without TLS).
    pub(super) plain: Box<[u8]>,
    /// What is rendered to be written: requests, a user's steps, goodbyes, keep-alives.
    pub(super) scratch: Vec<u8>,
    /// HTTP/2: control answers kept by the session, and the requests written with them.
    pub(super) joined: Vec<u8>,
    /// Control bytes a session answers with while decoding (pongs, close answers).
    pub(super) ctl: Vec<u8>,
    /// Scratch space for a scenario step: a body's values, a script `call`'s input.
    pub(super) step: Vec<u8>,
}

impl Bufs {
    /// `tls`: whether connections decrypt (then `plain` is as large as `read`).
    pub(super) fn new(tls: bool) -> Self {
        Self {
            read: vec![0u8; READ_BUF].into_boxed_slice(),
            plain: if tls {
                vec![0u8; READ_BUF].into_boxed_slice()
            } else {
                Box::default()
            },
            scratch: Vec::with_capacity(4096),
            joined: Vec::new(),
            ctl: Vec::new(),
            step: Vec::new(),
        }
    }

    /// A script's `call`: the message rendered at `scratch[at..]` replaced by what function
    /// `func` makes of it (on a script error, by nothing).
    pub(super) fn call(
        &mut self,
        hook: &HookRef,
        func: &str,
        gid: u64,
        at: usize,
    ) -> Result<(), HookError> {
        self.step.clear();
        self.step.extend_from_slice(&self.scratch[at..]);
        self.scratch.truncate(at);
        let res = hook.call(func, gid, &self.step, &mut self.scratch);
        if res.is_err() {
            self.scratch.truncate(at);
        }
        res
    }
}

/// The worker's place on the run's timeline: the segment under way, whose delta goes to the
/// aggregator when it ends (the drain is the last, `end == DRAIN_KEY`).
pub(super) struct Segments {
    timeline: Timeline,
    pub(super) start: u64,
    pub(super) end: u64,
}

impl Segments {
    pub(super) fn new(timeline: Timeline) -> Self {
        Self {
            start: 0,
            end: timeline.next_boundary(0),
            timeline,
        }
    }

    /// Whether the load's segments are over: its time is up, or the drain began.
    pub(super) fn over(&self) -> bool {
        self.end == DRAIN_KEY
    }

    /// The next segment ended by `now`, `(start, end)`, moving on past it.
    pub(super) fn pass(&mut self, now: u64) -> Option<(u64, u64)> {
        if now < self.end || self.over() {
            return None;
        }
        let done = (self.start, self.end);
        self.start = self.end;
        self.end = self.timeline.next_boundary(self.start);
        Some(done)
    }

    /// The drain's segment starts at `now`.
    pub(super) fn drain(&mut self, now: u64) {
        self.start = now;
        self.end = DRAIN_KEY;
    }
}

/// What this worker tells the coordinator once: its first connection through (`Connected`),
/// the fail-fast stop when none ever got through (`Unreachable`, at the third failure), and a
/// target that answers in another protocol (`Misdirected`).
#[derive(Default)]
pub(super) struct Told {
    pub(super) connected: bool,
    /// Connections that failed while none had got through.
    fails_unconnected: u32,
    /// The remedy for a misdirected target ("use https://") was sent.
    pub(super) misdirected: bool,
}

impl Told {
    /// A connection got through: true the first time (to be told).
    pub(super) fn connect(&mut self) -> bool {
        !std::mem::replace(&mut self.connected, true)
    }

    /// A connection failed: true when that makes the target unreachable (to be told), the
    /// third failure with none ever through.
    pub(super) fn fail(&mut self) -> bool {
        if self.connected {
            return false;
        }
        self.fails_unconnected += 1;
        self.fails_unconnected == 3
    }
}
