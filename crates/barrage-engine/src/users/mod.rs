//! Users: a scenario compiled for the engine. User g is one connection that arrives at a time
//! that is a pure function of g and the arrival shape, runs a compiled list of operations
//! (send and await a reply, pause, an open-loop `every` block, a `repeat` loop), answers
//! pushed messages by its `on` rules, and departs at its departure time, running its `leave`
//! steps first.
//!
//! Key design decision: a scenario is compiled once ([`compile()`]) into a flat [`Program`] of
//! [`Op`]s and per-step definitions shared by every user; a user's own state
//! ([`UserState`]) is its program counter, loop counters, variables and the reply being
//! collected, so no interpreter or tree is walked per user. The worker runs the program
//! (`worker/users.rs`); replies are judged in [`crate::session::Replies`] as they complete.

pub mod compile;
mod program;
pub mod stamp;

use crate::capture::Vars;

pub use compile::{compile, CompileError};
pub use program::{
    parse_server_time, BroadcastDef, MqttStep, MqttStepKind, OnRule, Op, Program, ServerTimeFrom,
    StepDef, StepMsg,
};

pub use crate::capture::MAX_REPLY;
use crate::pacer::Mode;

/// The users of a run.
#[derive(Debug)]
pub struct Users {
    pub count: u64,
    pub arrive: crate::shape::Shape,
    pub hold_ns: u64,
    pub depart: Depart,
    pub program: std::sync::Arc<Program>,
    /// `users.data`: row g feeds user g (cells by column).
    pub rows: Vec<Box<[Box<[u8]>]>>,
    /// `--conn-stages`: connection g is open while the planned count exceeds g (arrival and
    /// departure come from the ramp, not from `arrive`, `hold` and `depart`).
    pub stages: Option<ConnStages>,
}

/// A planned number of open connections over time: points (seconds, connections), linear
/// between them, constant after the last. Connection g (0-based) opens when the count first
/// reaches g + 1 and closes when it next falls below g + 1 (once: it does not reopen).
#[derive(Debug, Clone, PartialEq)]
pub struct ConnStages {
    pub points: Vec<(f64, f64)>,
}

impl ConnStages {
    /// The first time (s) at or after `from` when the count is at least `level` (`open`) or
    /// below it (not `open`); `None`: never.
    fn crossing(&self, level: f64, from: f64, open: bool) -> Option<f64> {
        // A tolerance for the float arithmetic of the line (a count of 28.999999999999996 at
        // the time it reaches 29 is 29).
        let eps = 1e-9 * level.max(1.0);
        let at = |c: f64| {
            if open {
                c >= level - eps
            } else {
                c < level - eps
            }
        };
        let p = &self.points;
        for (i, &(t0, c0)) in p.iter().enumerate() {
            let (t1, c1) = p.get(i + 1).copied().unwrap_or((f64::INFINITY, c0));
            if t1 < from {
                continue;
            }
            let start = t0.max(from);
            let c_start = if t1.is_finite() && t1 > t0 {
                c0 + (c1 - c0) * (start - t0) / (t1 - t0)
            } else {
                c0
            };
            if at(c_start) {
                return Some(start);
            }
            if at(c1) && t1.is_finite() {
                // Linear in between: where the line meets the level (for `not open`, the count
                // is below it just after; the crossing itself is the close time).
                let t = if (c1 - c_start).abs() > 0.0 {
                    start + (level - c_start) / (c1 - c_start) * (t1 - start)
                } else {
                    t1
                };
                return Some(t.clamp(start, t1));
            }
        }
        None
    }

    /// When connection `g` opens, in ns (`u64::MAX`: never).
    pub fn open_ns(&self, g: u64) -> u64 {
        self.crossing(g as f64 + 1.0, 0.0, true)
            .map_or(u64::MAX, |t| (t * 1e9).round() as u64)
    }

    /// When connection `g` closes (after it opened), in ns (`u64::MAX`: not before the end).
    pub fn close_ns(&self, g: u64) -> u64 {
        let Some(open) = self.crossing(g as f64 + 1.0, 0.0, true) else {
            return u64::MAX;
        };
        self.crossing(g as f64 + 1.0, open, false)
            .map_or(u64::MAX, |t| (t * 1e9).round() as u64)
    }

    /// The most connections ever open.
    pub fn peak(&self) -> u64 {
        self.points.iter().map(|p| p.1).fold(0.0, f64::max).floor() as u64
    }

    /// The planned count at `t` seconds.
    pub fn count_at(&self, t: f64) -> f64 {
        let p = &self.points;
        for (i, &(t0, c0)) in p.iter().enumerate() {
            let (t1, c1) = p.get(i + 1).copied().unwrap_or((f64::INFINITY, c0));
            if t < t1 || !t1.is_finite() {
                return if t1.is_finite() && t1 > t0 {
                    c0 + (c1 - c0) * (t.max(t0) - t0) / (t1 - t0)
                } else {
                    c0
                };
            }
        }
        0.0
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Depart {
    /// All together, `hold` after the last arrival.
    AtEnd,
    /// This many per second from `hold` after the last arrival, in arrival order.
    Rate(f64),
}

impl Users {
    /// When user `g` arrives, in ns from the start (`u64::MAX`: never).
    pub fn arrival_ns(&self, g: u64) -> u64 {
        if let Some(s) = &self.stages {
            return s.open_ns(g);
        }
        self.arrive.due_ns(g).unwrap_or(u64::MAX)
    }

    pub fn last_arrival_ns(&self) -> u64 {
        self.arrival_ns(self.count.saturating_sub(1))
    }

    /// When user `g` departs.
    pub fn departure_ns(&self, g: u64) -> u64 {
        if let Some(s) = &self.stages {
            return s.close_ns(g).min(self.stages_end_ns());
        }
        let base = self.last_arrival_ns().saturating_add(self.hold_ns);
        match self.depart {
            Depart::AtEnd => base,
            Depart::Rate(r) => base.saturating_add((g as f64 / r * 1e9).round() as u64),
        }
    }

    /// With `--conn-stages`: the time of the last point (connections still open then close).
    fn stages_end_ns(&self) -> u64 {
        self.stages
            .as_ref()
            .and_then(|s| s.points.last())
            .map_or(0, |p| (p.0 * 1e9).round() as u64)
    }

    /// Connections ramped by `stages`, each running the plan's mode as a one-step program
    /// (`awaits`: a message has a reply to wait for).
    pub fn for_load(
        mode: Mode,
        timeout: std::time::Duration,
        awaits: bool,
        stages: ConnStages,
    ) -> Users {
        let connections = stages.peak().max(1);
        let timeout_ns = timeout.as_nanos().min(u64::MAX as u128) as u64;
        let (ops, open_loop) = match mode {
            Mode::PingPong => (
                vec![
                    Op::Send(0),
                    Op::Loop {
                        start: 0,
                        times: u64::MAX,
                        slot: 0,
                    },
                ],
                false,
            ),
            Mode::Think(d) => {
                let d = d.as_nanos().min(u64::MAX as u128) as u64;
                (
                    vec![
                        Op::Send(0),
                        Op::Pause {
                            min_ns: d,
                            max_ns: d,
                        },
                        Op::Loop {
                            start: 0,
                            times: u64::MAX,
                            slot: 0,
                        },
                    ],
                    false,
                )
            }
            Mode::Interval(_) | Mode::Rate(_) => {
                let period_ns = match mode {
                    Mode::Interval(d) => d.as_nanos().min(u64::MAX as u128) as u64,
                    Mode::Rate(r) => (connections as f64 * 1e9 / r).round() as u64,
                    _ => unreachable!(),
                };
                (
                    vec![
                        Op::Every {
                            period_ns: period_ns.max(1),
                            times: u64::MAX,
                            first: 1,
                            end: 2,
                        },
                        Op::Send(0),
                    ],
                    true,
                )
            }
        };
        let loops = ops.iter().filter(|o| matches!(o, Op::Loop { .. })).count();
        let mut ops = ops;
        ops.push(Op::End);
        let leave_pc = ops.len() as u16;
        Users {
            count: connections,
            arrive: crate::shape::Shape::constant(1.0),
            hold_ns: 0,
            depart: Depart::AtEnd,
            program: std::sync::Arc::new(Program {
                ops: ops.into(),
                leave_pc,
                steps: vec![StepDef {
                    name: "request".into(),
                    msg: StepMsg::Load,
                    expect: None,
                    captures: Box::default(),
                    header_captures: Box::default(),
                    status: None,
                    timeout_ns,
                    awaits,
                    open_loop,
                    server_time: None,
                    broadcast: None,
                    decode: None,
                    call: None,
                    check: None,
                }]
                .into(),
                on: Box::default(),
                slots: 0,
                row_slots: Box::default(),
                loops,
                collect: false,
                leave_ns: 0,
                stamp_slot: None,
                stamp_form: stamp::Form::Text,
                shard: 0,
                one_clock: false,
            }),
            rows: Vec::new(),
            stages: Some(stages),
        }
    }

    /// When the load ends: the last departure, plus the time its `leave` steps may take.
    pub fn end_ns(&self) -> u64 {
        if self.stages.is_some() {
            return self.stages_end_ns();
        }
        self.departure_ns(self.count.saturating_sub(1))
            .saturating_add(self.program.leave_ns)
    }

    /// Users in `[t0, t1)` ns: how many arrive (for tests and the report).
    pub fn arrivals_between(&self, t0: u64, t1: u64) -> u64 {
        let by = |t: u64| {
            if t == 0 {
                return 0;
            }
            self.arrive
                .due_by((t - 1) as f64 / 1e9, self.count)
                .min(self.count)
        };
        by(t1) - by(t0)
    }
}

/// Where a user is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Life {
    /// Before its arrival, or connecting (again).
    Arriving,
    Running,
    /// Running its `leave` steps.
    Leaving,
    /// Departed: its connection is closed for good.
    Gone,
}

/// One user's own state.
#[derive(Debug)]
pub struct UserState {
    /// The user's number (global).
    pub gid: u64,
    pub phase: Life,
    /// The key of the awaited exchange (`u64::MAX`: none awaited).
    pub await_key: u64,
    /// The end of the current pause (`u64::MAX`: none).
    pub wait_until: u64,
    /// The current `every` block: when its tick 0 was, ticks due and ticks sent.
    /// `every_sent` counts ticks started (their first step sent).
    pub every_t0: u64,
    pub every_due: u64,
    pub every_sent: u64,
    /// The started tick's next step (an op index; 0: no tick under way), and when that step
    /// could be sent, which its latency is timed from: the tick's intended time for its first
    /// step, the previous awaited step's reply for the others.
    pub every_op: u16,
    pub every_from: u64,
    /// The `every` op the schedule belongs to, and whether that schedule is suspended: the
    /// user's connection broke while it ran, and it resumes (the ticks due meanwhile not
    /// sent) when the user, reconnected, reaches the block again.
    pub every_pc: u16,
    pub every_resume: bool,
    pub depart_at: u64,
    pub vars: Vars,
    /// The reply being collected, and its HTTP status.
    pub reply: Vec<u8>,
    pub status: u16,
    pub loops: Box<[u64]>,
    /// `on` rules whose reply is to be sent after this input.
    pub pushes: Vec<u16>,
    /// The awaited exchange completed (set while decoding input).
    pub step_done: bool,
    /// Connected and ready at least once.
    pub started: bool,
    /// Broadcast: this user's stamped sends so far, and what it received per sender.
    pub stamp_seq: u32,
    pub windows: stamp::Windows,
}

impl UserState {
    pub fn new(p: &Program, depart_at: u64, gid: u64) -> Self {
        Self {
            gid,
            phase: Life::Arriving,
            await_key: u64::MAX,
            wait_until: u64::MAX,
            every_t0: u64::MAX,
            every_due: 0,
            every_sent: 0,
            every_op: 0,
            every_from: 0,
            every_pc: 0,
            every_resume: false,
            depart_at,
            vars: Vars::new(p.slots),
            reply: Vec::new(),
            status: 0,
            loops: vec![0; p.loops].into(),
            pushes: Vec::new(),
            step_done: false,
            started: false,
            stamp_seq: 0,
            windows: stamp::Windows::default(),
        }
    }

    /// Start the steps over (a new connection of the same user; its `Conn::pc` goes back to
    /// 0): variables are kept.
    pub fn restart(&mut self) {
        self.await_key = u64::MAX;
        self.wait_until = u64::MAX;
        if !self.every_resume {
            self.every_t0 = u64::MAX;
            self.every_due = 0;
            self.every_sent = 0;
        }
        self.every_op = 0;
        self.reply.clear();
        self.status = 0;
        self.loops.iter_mut().for_each(|l| *l = 0);
        self.pushes.clear();
        self.step_done = false;
    }
}

/// What [`crate::session::Replies`] needs to judge a user's replies.
pub struct UserCtx<'a> {
    pub prog: &'a Program,
    pub st: &'a mut UserState,
    /// A reply that does not match its step's `expect` is a pushed message and the step
    /// waits on (message protocols); false for HTTP, where every response answers a request.
    pub skip_unmatched: bool,
    /// The user's number (its stamps' sender id) and the wall clock at the run's time zero,
    /// in µs (stamps carry wall-clock send times).
    pub gid: u64,
    pub wall_base_us: u64,
    /// The run's script, whose functions steps' `check`s name.
    pub hook: Option<&'a crate::hook::HookRef>,
}

#[cfg(test)]
mod tests;
