//! A worker: one thread, one event loop (mio/epoll), one share of the plan.
//!
//! Every mode runs through the same loop: what differs is only which values feed it (a
//! schedule for open-loop modes, a pipeline depth and an optional think time for closed-loop
//! modes, an optional request quota, a stop time). Connections are state machines driven by
//! readiness events and by timers; recording goes to the worker's own `Recorder`, handed to
//! the aggregator as one `Delta` per timeline segment.
//!
//! Time comes from one [`TimeSource`] the worker is given (`self.now()`, read nowhere else).
//! On real time the loop sleeps in `poll` until an event or the timerfd alarm armed at the
//! next deadline (segment end, timer, drain end). On virtual time (tests) that same deadline
//! is the seam (`wait_until`): when the worker awaits nothing from the network (no connect,
//! handshake, reply or write outstanding) the clock jumps to the deadline at once; when it
//! does, the loop first polls for a quiet moment of real time (`VIRTUAL_QUIET`), and jumps
//! only if nothing came (`idle_until`). So a run against a loopback server spends no virtual
//! time on anything the server does, and backoff, timeouts, reconnects, think times,
//! schedules and the drain happen at exact virtual times: a test counts them exactly. It
//! holds for one worker (`threads = 1`) and servers that answer within the quiet moment; a
//! silent server costs a quiet moment per deadline, one that never lets the loop be quiet
//! stops virtual time.

use crate::classify::classify;
use crate::clock::{Alarm, TimeSource, TimerKind, Timers};
use crate::conn::{Conn, State};
use crate::pacer::{Rng, Schedule};
use crate::plan::{Plan, Share};
use crate::session::{KeepAlive, Out, Owed, Session, Streams};
use crate::transport::Transport;
use crate::users::Program;
use barrage_metrics::{Delta, ErrorClass, Recorder, DRAIN_KEY};
use connects::{Connects, WORKER};
use mio::{Events, Poll, Token, Waker};
use parts::{Bufs, Segments, Told};
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

pub(crate) const WAKER: Token = Token(usize::MAX - 1);
const ALARM: Token = Token(usize::MAX - 2);
/// Reads of one connection per turn of the loop (1 MiB): a server that sends faster than its
/// replies are decoded must not keep the loop from its clock, its timers and the stop flag.
/// What is left is read in the next turn (the connection waits in the read queue, since
/// edge-triggered epoll will not report those bytes again).
const READS_PER_TURN: u32 = 16;
/// Virtual time: how long (real time) the loop waits for an event it awaits before it takes
/// the network to be silent and moves the clock to its next deadline.
const VIRTUAL_QUIET: std::time::Duration = std::time::Duration::from_millis(250);

/// What a worker tells the coordinator.
pub enum WorkerEvent {
    Delta(Box<Delta>),
    /// The first connection of this worker got through (connected, its handshakes done and
    /// its opening answered).
    Connected,
    /// Several connects failed and none ever succeeded.
    Unreachable {
        detail: String,
    },
    /// The target answers in another protocol than the one asked for (e.g. TLS to http://):
    /// a mistake in the command, so the run stops whatever else connected.
    Misdirected {
        detail: String,
    },
    /// The worker could not start (setup error).
    Failed(String),
}

/// Which part of the run the worker is in: sending load, or draining the replies in flight
/// until `until` (ns on the worker's clock).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Period {
    Load,
    Drain { until: u64 },
}

pub struct Worker<S: Session> {
    id: u32,
    plan: Arc<Plan>,
    /// The protocol's shared part, and the run's program (the flags' or the scenario's),
    /// shared by every connection; a connection keeps its place in it (`Conn::pc`).
    cfg: S::Cfg,
    program: Arc<Program>,
    /// Exchanges complete when written (`--expect none`).
    on_write: bool,
    share: Share,
    poll: Poll,
    alarm: Alarm,
    timers: Timers,
    conns: Vec<Conn<S>>,
    rec: Recorder,
    /// The buffers every connection reads, renders and answers through (`worker/parts.rs`).
    bufs: Bufs,
    /// Connect pacing: the queue, the in-flight bound, the rate, the turn's budget, the
    /// dialer (`worker/connects.rs`).
    connects: Connects,
    /// Connections to service in the next turn (`--expect none` refills of a closed loop).
    ready: VecDeque<u32>,
    /// Connections whose read budget ran out with bytes left in the socket.
    reads: VecDeque<u32>,
    /// Requests this share may still start (`-n`): quota - completed - in flight.
    allowance: Option<u64>,
    rng: Rng,
    period: Period,
    /// The segment of the timeline under way (`worker/parts.rs`).
    segs: Segments,
    /// The one clock this worker reads (see the module docs).
    time: TimeSource,
    wall_base_us: u64,
    /// What was told the coordinator once: connected, unreachable, misdirected.
    told: Told,
    /// Scenario runs: each connection's user (empty otherwise).
    users: Vec<crate::users::UserState>,
    /// Connections that have not left for good: a scenario's user departs, a connection of
    /// the flag modes stays until the load ends. The load is over when none is left.
    staying: u64,
    /// A script's `call` failed while a user's messages were made (`worker/users.rs`).
    script_fail: Option<crate::hook::HookError>,
    /// A scenario step's message its values made unsayable (`StepMsg::fault`): the
    /// connection fails with it once the batch is made.
    step_fail: Option<String>,
    /// A user's reply that does not match its step is a push (message protocols, not HTTP).
    skip_unmatched: bool,
    stop: Arc<AtomicBool>,
    tx: Sender<WorkerEvent>,
}

impl<S: Session> Worker<S> {
    /// `slot`: this worker's place among the process's workers (what the aggregator counts
    /// by); `share.index` is its place in the whole run.
    pub fn new(
        plan: Arc<Plan>,
        share: Share,
        slot: usize,
        time: TimeSource,
        wall_base_us: u64,
        stop: Arc<AtomicBool>,
        tx: Sender<WorkerEvent>,
    ) -> io::Result<(Self, Arc<Waker>)> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let mut alarm = Alarm::new(time.base_ns())?;
        alarm.register(poll.registry(), ALARM)?;
        let cfg = S::config(&plan);
        let conns = (0..share.connections)
            .map(|k| Conn::new(share.global_id(k), S::new(&cfg), plan.verify))
            .collect();
        let program = match &plan.users {
            Some(u) => Arc::clone(&u.program),
            None => Arc::new(crate::modes::compile(&plan)),
        };
        let dialer = crate::ports::Dialer::new(
            &plan.target.dial_addrs(),
            &plan.target.sources,
            share.index,
            share.count,
            std::process::id().wrapping_mul(7919),
        );
        let bufs = Bufs::new(plan.tls.is_some());
        let segs = Segments::new(plan.timeline());
        use crate::plan::Protocol as P;
        let skip_unmatched = !matches!(plan.protocol, P::Http(_) | P::H2(_) | P::HttpAuto(_));
        let mut w = Self {
            id: slot as u32,
            on_write: S::completes_on_write(&cfg),
            cfg,
            program,
            allowance: share.requests,
            rng: Rng::new(0xB4A2_2A6E ^ share.index as u64),
            connects: Connects::new(share.connections as u32, dialer),
            plan,
            poll,
            alarm,
            timers: Timers::default(),
            conns,
            rec: Recorder::new(),
            bufs,
            ready: VecDeque::new(),
            reads: VecDeque::new(),
            period: Period::Load,
            segs,
            time,
            wall_base_us,
            told: Told::default(),
            staying: share.connections,
            share,
            users: Vec::new(),
            script_fail: None,
            step_fail: None,
            skip_unmatched,
            stop,
            tx,
        };
        if let Some(users) = w.plan.users.clone() {
            w.user_init(&users);
        }
        Ok((w, waker))
    }

    /// Whether connection `idx` is at a scenario's op (run by `worker/users.rs`) rather than
    /// a flag mode's (`Opening`, `Window`, `Schedule`, run by `worker/conn_io.rs`): the one
    /// dispatch between the two interpreters, by the op the connection is at.
    #[inline]
    fn at_scenario_op(&self, idx: u32) -> bool {
        !self.program.step(self.conns[idx as usize].pc).of_flags()
    }

    #[inline]
    fn now(&self) -> u64 {
        self.time.now()
    }

    /// The poll timeout until `next`: the alarm on real time; on virtual time a quiet moment
    /// while something is awaited from the network, else none (the clock jumps at once).
    fn wait_until(&mut self, next: u64, now: u64) -> Option<std::time::Duration> {
        if self.time.is_virtual() {
            let awaited = self.conns.iter_mut().any(|c| {
                c.pending_write()
                    || !c.ex.is_empty()
                    || matches!(
                        c.state,
                        State::Connecting | State::Proxy | State::Tls | State::Handshake
                    )
                    || (c.stream.is_some()
                        && c.session.keepalive().is_some_and(|k| k.awaits_answer()))
            });
            return Some(if awaited {
                VIRTUAL_QUIET
            } else {
                std::time::Duration::ZERO
            });
        }
        self.alarm.arm(next, now)
    }

    /// Run until the share is done; every outcome is reported through the channel.
    pub fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        // A script's call that runs when the load ends is cut short (`hook::ending`).
        crate::hook::watch(Some(crate::hook::Watch {
            stop: Arc::clone(&self.stop),
            time: self.time.clone(),
            until: self.plan.load_end_ns().unwrap_or(u64::MAX),
            load: true,
        }));
        // Every connection's first look: an open-loop schedule's first wake, a user's
        // arrival (a closed loop's connection waits for its connect, queued already).
        let now = self.now();
        for i in 0..self.conns.len() as u32 {
            self.service(i, now);
        }
        loop {
            let now = self.now();
            self.connects.new_turn();
            self.advance_segments(now);
            if self.check_phase(now) {
                break;
            }
            self.pump_connects(now);
            while let Some((at, idx, kind)) = self.timers.pop_due(now) {
                self.rec.lag_max_ns = self.rec.lag_max_ns.max(now - at);
                self.on_timer(at, idx, kind, now);
            }
            // One pass over the connections queued before this turn: a connection queues
            // itself again for the next turn, never for this one, so a socket that always
            // accepts (`--expect none` into a server that discards) or always has bytes (a
            // flood) cannot keep the loop from its clock, its timers and the stop flag.
            for _ in 0..self.ready.len() {
                let Some(idx) = self.ready.pop_front() else {
                    break;
                };
                self.conns[idx as usize].ready_queued = false;
                self.service(idx, self.now());
            }
            for _ in 0..self.reads.len() {
                let Some(idx) = self.reads.pop_front() else {
                    break;
                };
                self.read_more(idx, self.now());
            }
            // Timers above may have queued reconnects: start them now, not at the next wake.
            self.pump_connects(self.now());
            let mut next = self.segs.end;
            if let Some(t) = self.timers.next() {
                next = next.min(t);
            }
            if let Period::Drain { until } = self.period {
                next = next.min(until);
            }
            let now = self.now();
            let busy = !self.ready.is_empty() || !self.reads.is_empty();
            let idle = !(busy || self.connects.more || next <= now);
            let timeout = if idle {
                self.wait_until(next, now)
            } else {
                Some(std::time::Duration::ZERO)
            };
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    let _ = self.tx.send(WorkerEvent::Failed(format!("poll: {e}")));
                    break;
                }
            }
            if idle && events.is_empty() {
                self.time.idle_until(next);
            }
            for ev in events.iter() {
                match ev.token() {
                    WAKER => {}
                    ALARM => self.alarm.fired(),
                    Token(i) => self.on_event(i as u32, ev, self.now()),
                }
            }
        }
        self.finish();
        crate::hook::watch(None);
    }

    /// Close finished segments, handing their deltas to the aggregator.
    fn advance_segments(&mut self, now: u64) {
        if now >= self.segs.end && !self.segs.over() {
            // The boundary is a deadline too: how late it is handled measures the loop's lag
            // in every mode, also when no other timer is due.
            self.rec.lag_max_ns = self.rec.lag_max_ns.max(now - self.segs.end);
        }
        while let Some((start, end)) = self.segs.pass(now) {
            let d = self.rec.take(self.id, start, start, end);
            let _ = self.tx.send(WorkerEvent::Delta(Box::new(d)));
        }
    }

    /// Move from load to drain and from drain to done. Returns true when the worker is done.
    fn check_phase(&mut self, now: u64) -> bool {
        match self.period {
            Period::Load => {
                let stopped = self.stop.load(Ordering::Relaxed);
                let out_of_time = self.segs.over();
                let quota_done = self.allowance == Some(0) && self.rec.in_flight == 0;
                let all_gone = self.staying == 0;
                // (By the mode, not the program: a `--conn-stages` ramp of an open loop too.)
                if out_of_time && !stopped && self.plan.mode.is_open_loop() {
                    // Messages that fell due before the end while the loop was busy go out
                    // now (late, and timed from their intended send): only what cannot be
                    // sent at all (connection down, socket full) ends as not sent.
                    for i in 0..self.conns.len() as u32 {
                        if self.conns[i as usize].state == State::Ready {
                            self.service(i, now);
                        }
                    }
                }
                if stopped || out_of_time || quota_done || all_gone {
                    self.enter_drain(now, quota_done);
                    return self.rec.in_flight == 0;
                }
                false
            }
            Period::Drain { until } => {
                self.rec.in_flight == 0 || now >= until || crate::stop::hurried()
            }
        }
    }

    fn enter_drain(&mut self, now: u64, quota_done: bool) {
        if !self.segs.over() {
            // Stopped early (signal or request count): close the current segment now.
            let d = self
                .rec
                .take(self.id, self.segs.start, self.segs.start, now);
            let _ = self.tx.send(WorkerEvent::Delta(Box::new(d)));
        }
        self.segs.drain(now);
        let until = now + self.plan.drain.min(self.plan.timeout).as_nanos() as u64;
        self.period = Period::Drain { until };
        crate::hook::rewatch(until, false);
        // Every message due by now that never went out is accounted for as not sent: the
        // backlogs seen at each connection's last look, and what fell due since (a starved
        // loop may not have looked for a while). Once the request count is reached, messages
        // still scheduled were never part of the plan.
        self.rec.backlog = 0;
        let at = now.min(self.plan.load_end_ns().unwrap_or(u64::MAX));
        for c in &mut self.conns {
            let Some(sched) = sched_of(&self.program, &self.plan, c.gid).filter(|_| c.started())
            else {
                continue;
            };
            let due = sched.due(at).max(c.due_k);
            self.rec.counters.scheduled += due - c.due_k;
            if !quota_done {
                self.rec.not_sent(due - c.sent_k);
            }
            c.due_k = due;
        }
        for i in 0..self.users.len() {
            self.user_every_unsent(i, at);
        }
        self.connects.queue.clear();
        for c in &mut self.conns {
            c.owed = 0;
            if let Some(t) = c.thinking.as_deref_mut() {
                t.clear();
            }
            c.due_k = c.sent_k;
            if matches!(c.state, State::Connecting | State::Proxy | State::Waiting) {
                c.stream = None;
                c.state = State::Closed;
            }
        }
    }

    /// Close every connection and deliver the final (drain) delta. WebSocket connections get
    /// a close frame with code 1000 first (best effort: the socket may be full or gone).
    fn finish(mut self) {
        let now = self.now();
        for i in 0..self.conns.len() {
            let c = &mut self.conns[i];
            if matches!(
                c.state,
                State::Tls | State::Handshake | State::Login | State::Ready
            ) {
                self.rec.conn_closed();
            }
            if c.state == State::Ready && c.stream.is_some() {
                self.bufs.scratch.clear();
                let mut out = Out {
                    conn: c.gid,
                    buf: &mut self.bufs.scratch,
                    key: 0,
                    rng: &mut self.rng,
                    keep: None,
                    streaming: false,
                };
                c.session.goodbye(&self.cfg, &mut out);
                if !self.bufs.scratch.is_empty() {
                    let _ = wire::write_to(c, &mut self.rec, &self.bufs.scratch);
                }
            }
            c.session.counts(&mut self.rec);
            c.transport.close(c.stream.as_mut(), &mut self.rec);
            c.stream = None;
            c.transport = Transport::Plain;
            c.state = State::Closed;
        }
        // Exchanges still in flight stay counted in the `in_flight` gauge.
        let d = self.rec.take(self.id, DRAIN_KEY, self.segs.start, now);
        let _ = self.tx.send(WorkerEvent::Delta(Box::new(d)));
    }

    fn schedule_wake(&mut self, idx: u32, at: u64) {
        let c = &mut self.conns[idx as usize];
        if at < c.wake_at {
            c.wake_at = at;
            self.timers.push(at, idx, TimerKind::Wake);
        }
    }

    fn arm_timeout(&mut self, idx: u32, at: u64) {
        let c = &mut self.conns[idx as usize];
        if c.timeout_at == u64::MAX {
            c.timeout_at = at;
            self.timers.push(at, idx, TimerKind::Timeout);
        }
    }

    fn on_timer(&mut self, at: u64, idx: u32, kind: TimerKind, now: u64) {
        if idx == WORKER {
            return; // connect pacing: pump_connects runs every iteration
        }
        let c = &mut self.conns[idx as usize];
        match kind {
            TimerKind::Wake if c.wake_at == at => {
                c.wake_at = u64::MAX;
                self.service(idx, now);
            }
            TimerKind::Timeout if c.timeout_at == at => {
                c.timeout_at = u64::MAX;
                self.check_timeout(idx, now);
            }
            TimerKind::Tick => {
                if let Some(k) = c.session.keepalive().filter(|k| k.at() == at) {
                    k.set_at(u64::MAX);
                    self.keepalive(idx, now);
                }
            }
            _ => {} // superseded entry
        }
    }

    /// Arm the session's keep-alive tick (`KeepAlive::every_ns`) from now.
    fn arm_tick(&mut self, idx: u32, now: u64) {
        let Some(k) = self.conns[idx as usize].session.keepalive() else {
            return;
        };
        if let Some(period) = k.every_ns() {
            let at = now + period.max(1);
            k.set_at(at);
            self.timers.push(at, idx, TimerKind::Tick);
        }
    }

    /// A keep-alive tick of a connection that is up: what the session writes goes out as
    /// control bytes; a session that says the connection is dead fails it as `timeout`.
    fn keepalive(&mut self, idx: u32, now: u64) {
        let c = &mut self.conns[idx as usize];
        if c.stream.is_none() || !matches!(c.state, State::Login | State::Ready) {
            return;
        }
        self.bufs.scratch.clear();
        let ticked = c
            .session
            .keepalive()
            .map(|k| k.tick(&mut self.bufs.scratch, &mut self.rec));
        if let Some(Err(why)) = ticked {
            return self.fail(idx, ErrorClass::Timeout, Some(&why), now);
        }
        if !self.bufs.scratch.is_empty() {
            if let Err(e) = wire::write_to(c, &mut self.rec, &self.bufs.scratch) {
                return self.fail(idx, classify(&e), Some(&e), now);
            }
        }
        self.arm_tick(idx, now);
    }

    /// How long an exchange of this step may wait for its reply: the step's own timeout in a
    /// scenario, the run's otherwise.
    fn timeout_of(&self, step: u16) -> u64 {
        let run = self.plan.timeout.as_nanos() as u64;
        self.program
            .steps
            .get(step as usize)
            .map_or(run, |s| s.timeout_ns)
    }

    fn check_timeout(&mut self, idx: u32, now: u64) {
        const SILENT: &str = "no byte since the connect: the server never answered this \
            connection (one that stopped accepting, e.g. out of open files, looks like this)";
        let cancels = self.conns[idx as usize]
            .session
            .streams()
            .is_some_and(|s| s.cancels());
        let c = &self.conns[idx as usize];
        let ct = self.plan.connect_timeout.as_nanos() as u64;
        let (deadline, class) = match c.state {
            State::Connecting | State::Proxy => (c.since + ct, ErrorClass::ConnectTimeout),
            State::Tls => (c.since + ct, ErrorClass::TlsHandshakeTimeout),
            State::Handshake => (
                c.since + self.plan.timeout.as_nanos() as u64,
                ErrorClass::Timeout,
            ),
            State::Ready if cancels && !self.at_scenario_op(idx) => {
                return self.cancel_late(idx, now);
            }
            State::Login | State::Ready => match c.ex.front() {
                Some(f) => (f.sent + self.timeout_of(f.step), ErrorClass::Timeout),
                None => return,
            },
            _ => return,
        };
        if deadline <= now {
            // No byte since the connect: say so, it tells a server that stopped accepting
            // (out of open files, its backlog full: the kernel completed the connect) from
            // one that answers slowly (issue 43).
            let silent = class == ErrorClass::Timeout && !c.heard;
            self.fail(idx, class, silent.then_some(&SILENT as _), now);
        } else {
            self.arm_timeout(idx, deadline);
        }
    }

    /// A connection that can give up on one exchange alone (HTTP/2's streams): each exchange
    /// past its deadline fails as `timeout` on its own (cancelled, RST_STREAM), the others
    /// carry on, and a closed loop sends as many anew.
    fn cancel_late(&mut self, idx: u32, now: u64) {
        let mut ctl = std::mem::take(&mut self.bufs.ctl);
        ctl.clear();
        let closed_loop = self.program.window().is_some();
        let (mut n, mut done) = (0, false);
        loop {
            let c = &self.conns[idx as usize];
            let Some(f) = c.ex.front() else { break };
            let due = f.sent + self.timeout_of(f.step);
            if due > now {
                self.conns[idx as usize].timeout_at = u64::MAX;
                self.arm_timeout(idx, due);
                break;
            }
            let c = &mut self.conns[idx as usize];
            let Some(ex) = c.ex.pop_front() else { break };
            done |= c
                .session
                .streams()
                .is_some_and(|s| s.cancel(ex.key, &mut ctl));
            n += 1;
        }
        if n > 0 {
            self.rec.exchanges_failed(ErrorClass::Timeout, n);
            self.rec.counters.error(ErrorClass::Timeout, n);
            self.rec.in_flight -= n;
            if let Some(a) = self.allowance.as_mut() {
                *a += n; // as for a connection that failed: they may be sent again
            }
            if closed_loop {
                self.conns[idx as usize].owed += n as u32;
            }
        }
        // The cancels go out after what the socket still owes, in order (as `deliver` sends
        // its control answers), or wait behind it.
        let c = &mut self.conns[idx as usize];
        let mut res = Ok(0);
        if !ctl.is_empty() {
            if c.backlogged() {
                if let Some(o) = c.session.owed() {
                    o.owe(&ctl);
                }
            } else {
                self.bufs.joined.clear();
                if let Some(o) = c.session.owed() {
                    o.drain(&mut self.bufs.joined);
                }
                self.bufs.joined.extend_from_slice(&ctl);
                res = wire::write_to(c, &mut self.rec, &self.bufs.joined);
            }
        }
        ctl.clear();
        self.bufs.ctl = ctl;
        if let Err(e) = res {
            return self.fail(idx, classify(&e), Some(&e), now);
        }
        if done {
            // Its last stream after a GOAWAY: the server's close, as when a reply ends it.
            self.rec.counters.closed_by_peer += 1;
            self.rec.conn_closed();
            return self.close(idx, now, false, ErrorClass::ClosedByPeer);
        }
        if n > 0 {
            // Think time and the rest, as for slots freed by replies.
            self.after_replies(idx, now, false);
            self.service(idx, now);
        }
    }

    /// Start queued connects while the in-flight bound and the connect rate allow, at most
    /// a turn's budget of them (`Connects::take`): connections already up are served between
    /// batches, so a ramp of thousands of connects does not stall their schedules.
    fn pump_connects(&mut self, now: u64) {
        if self.period != Period::Load {
            return;
        }
        while let Some(idx) = self
            .connects
            .take(now, &self.time, &self.share, &mut self.timers)
        {
            self.start_connect(idx, now);
        }
    }
}

/// The send schedule of global connection `gid` when the program is an open loop.
#[inline]
fn sched_of(program: &Program, plan: &Plan, gid: u64) -> Option<Schedule> {
    let period_ns = program.schedule_period()?;
    let slack = plan.timer_slack.as_nanos().min(u64::MAX as u128) as u64;
    let s = match &plan.rate_shape {
        Some(shape) => Schedule::shaped(gid, plan.connections, shape.clone(), plan.load_end_ns()),
        None => Schedule::spread(gid, plan.connections, period_ns, plan.load_end_ns()),
    };
    Some(s.with_slack(slack))
}

mod conn_io;
mod connects;
mod parts;
mod proxy;
mod sniff;
mod transfer;
mod users;
mod wire;
pub use wire::classify_tls;
