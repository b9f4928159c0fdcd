//! The worker's user paths (scenario runs): arrival, the program of operations, replies that
//! advance it, `on` rules' answers, departure.
//!
//! A user is a connection whose reconnect time starts as its arrival time, so arrival reuses
//! the connect machinery (pacing, backoff, the in-flight bound). Once its transport and
//! protocol handshake are up, [`Worker::user_begin`] starts its operations; a user whose
//! connection breaks reconnects and runs them again from the first (its variables kept). At its
//! departure time it runs its `leave` steps, waits for what is in flight, and closes for good.

use super::wire::write_to;
use super::{Period, Worker};
use crate::classify::classify;
use crate::conn::State;
use crate::exchange::Exchange;
use crate::message::Fill;
use crate::session::{Msg, Out, Session};
use crate::users::{Life, Op, UserCtx, UserState, Users};
use barrage_metrics::ErrorClass;
use std::sync::Arc;

impl<S: Session> Worker<S> {
    /// Arrivals: every user waits for its arrival time (instead of connecting at once).
    pub(super) fn user_init(&mut self, users: &Users) {
        self.connects.queue.clear();
        self.users = self
            .conns
            .iter_mut()
            .map(|c| {
                c.retry_at = users.arrival_ns(c.gid);
                UserState::new(&users.program, users.departure_ns(c.gid), c.gid)
            })
            .collect();
    }

    /// The run's program (a handle, so that the worker can be borrowed while it is read).
    fn program_arc(&self) -> Arc<crate::users::Program> {
        Arc::clone(&self.program)
    }

    /// A wake-up of a user: connect when it is due, depart when it is time, go on with its
    /// operations.
    pub(super) fn user_service(&mut self, idx: u32, now: u64) {
        let i = idx as usize;
        if self.users[i].phase == Life::Gone || self.period != Period::Load {
            return;
        }
        if now >= self.users[i].depart_at && self.users[i].phase != Life::Leaving {
            return self.user_depart(idx, now);
        }
        match self.conns[i].state {
            State::Waiting => {
                let r = self.conns[i].retry_at;
                if r <= now {
                    self.connects.queue.push_back(idx);
                    self.conns[i].retry_at = u64::MAX;
                } else if r != u64::MAX {
                    self.schedule_wake(idx, r);
                }
                let d = self.users[i].depart_at;
                self.schedule_wake(idx, d);
            }
            State::Ready => self.user_run(idx, now),
            _ => {
                let d = self.users[i].depart_at;
                self.schedule_wake(idx, d);
            }
        }
    }

    /// The user's connection is up (transport and protocol handshake): start its steps.
    pub(super) fn user_begin(&mut self, idx: u32, now: u64) {
        let (plan, program) = (Arc::clone(&self.plan), self.program_arc());
        let users = plan.users.as_deref().expect("a scenario");
        let i = idx as usize;
        let c = &mut self.conns[i];
        c.state = State::Ready;
        c.timeout_at = u64::MAX;
        let st = &mut self.users[i];
        if !st.started {
            st.started = true;
            self.rec.conn_first_ready(now);
        }
        if st.phase == Life::Arriving {
            st.phase = Life::Running;
        }
        st.restart();
        c.pc = 0;
        if let Some(row) = users.rows.get(c.gid as usize) {
            for &(col, slot) in program.row_slots.iter() {
                if let Some(v) = row.get(col) {
                    st.vars.set(slot, v);
                }
            }
        }
        self.user_run(idx, now);
    }

    /// Run the user's operations from where it is until it must wait (a reply, a pause, the
    /// next tick of an `every` block, the departure); send what they produced in one write.
    pub(super) fn user_run(&mut self, idx: u32, now: u64) {
        if self.period != Period::Load {
            // The load is over: what is in flight drains, nothing new is sent (an `every`
            // schedule ended by the drain must not start again on a late reply or a push).
            return;
        }
        let prog = self.program_arc();
        let i = idx as usize;
        self.bufs.scratch.clear();
        let mut wake = u64::MAX;
        loop {
            if self.step_fail.is_some() {
                break; // the connection fails with it below: nothing more is made
            }
            let c = &self.conns[i];
            if c.state != State::Ready || c.stream.is_none() {
                return;
            }
            let st = &mut self.users[i];
            if st.phase == Life::Gone {
                return;
            }
            let pc = c.pc as usize;
            let Some(&op) = prog.ops.get(pc) else {
                // The departure steps are done: close once nothing is in flight.
                if c.ex.is_empty() && self.bufs.scratch.is_empty() {
                    return self.user_gone(idx, now);
                }
                break;
            };
            match op {
                Op::Send(s) => {
                    if st.await_key != u64::MAX || c.pending_write() {
                        break;
                    }
                    let key = self.user_send(idx, s, now, now);
                    let st = &mut self.users[i];
                    if prog.steps[s as usize].awaits {
                        st.await_key = key;
                        break;
                    }
                    self.conns[i].pc += 1;
                }
                Op::Pause { min_ns, max_ns } => {
                    if st.wait_until == u64::MAX {
                        let span = max_ns - min_ns;
                        let r = if span == 0 {
                            0
                        } else {
                            (self.rng.next_f64() * span as f64) as u64
                        };
                        st.wait_until = now + min_ns + r;
                    }
                    if now < st.wait_until {
                        wake = st.wait_until;
                        break;
                    }
                    st.wait_until = u64::MAX;
                    self.conns[i].pc += 1;
                }
                Op::Every {
                    period_ns,
                    times,
                    first,
                    end,
                } => {
                    if st.every_t0 != u64::MAX && st.every_pc != self.conns[i].pc {
                        // A suspended schedule of another block (its ticks were accounted
                        // when the connection broke).
                        st.every_t0 = u64::MAX;
                        st.every_resume = false;
                    }
                    if st.every_t0 == u64::MAX {
                        st.every_t0 = now;
                        st.every_due = 0;
                        st.every_sent = 0;
                        st.every_op = 0;
                        st.every_pc = self.conns[i].pc;
                    } else if st.every_resume {
                        // Back after a broken connection: the ticks that fell due while the
                        // user had none were not sent; the schedule goes on from here.
                        st.every_resume = false;
                        self.every_skip(i, now.saturating_sub(1));
                    }
                    let st = &mut self.users[i];
                    let t0 = st.every_t0;
                    // Ticks at or after the departure are not this user's load.
                    let horizon = now.min(st.depart_at.saturating_sub(1));
                    let due = if horizon < t0 {
                        st.every_due
                    } else {
                        ((horizon - t0) / period_ns)
                            .saturating_add(1)
                            .min(times)
                            .max(st.every_due)
                    };
                    let per_tick = u64::from(end - first);
                    self.rec.counters.scheduled += (due - st.every_due) * per_tick;
                    st.every_due = due;
                    let backlog = st.every_due - st.every_sent;
                    if backlog > self.plan.max_backlog {
                        let drop = backlog - self.plan.max_backlog;
                        st.every_sent += drop;
                        self.rec.not_sent(drop * per_tick);
                        for op in &prog.ops[first as usize..end as usize] {
                            if let Op::Send(s) = op {
                                self.rec.steps.not_sent(*s as usize, drop);
                            }
                        }
                    }
                    // A tick's steps go out in order, each awaited step holding the next
                    // until its reply: on one connection a step sent behind another would
                    // wait for it (HTTP/1.1 answers in order), and the slowest route's time
                    // would be every route's. The first step of a tick is timed from the
                    // tick's intended time, the others from the reply before them.
                    while !self.conns[i].pending_write() {
                        let st = &mut self.users[i];
                        if st.await_key != u64::MAX {
                            break;
                        }
                        if st.every_op == 0 {
                            if st.every_sent >= st.every_due {
                                break;
                            }
                            st.every_op = first;
                            st.every_from = t0 + st.every_sent * period_ns;
                            st.every_sent += 1;
                        }
                        let op = st.every_op;
                        if op >= end {
                            st.every_op = 0; // the tick is done
                            continue;
                        }
                        st.every_op += 1;
                        if let Op::Send(s) = prog.ops[op as usize] {
                            let from = st.every_from;
                            let key = self.user_send(idx, s, from, now);
                            if prog.steps[s as usize].awaits {
                                self.users[i].await_key = key;
                            }
                        }
                    }
                    let st = &mut self.users[i];
                    if st.every_sent >= times && st.every_op == 0 && st.await_key == u64::MAX {
                        st.every_t0 = u64::MAX;
                        self.conns[i].pc = end;
                        continue;
                    }
                    if st.every_due < times {
                        wake = t0.saturating_add(st.every_due.saturating_mul(period_ns));
                    }
                    break;
                }
                Op::Loop { start, times, slot } => {
                    let n = &mut st.loops[slot as usize];
                    *n += 1;
                    if *n < times {
                        self.conns[i].pc = start;
                    } else {
                        *n = 0;
                        self.conns[i].pc += 1;
                    }
                }
                // The flag modes' ops are never in a scenario's program (`worker/conn_io.rs`
                // runs them).
                Op::End | Op::Opening(_) | Op::Window { .. } | Op::Schedule { .. } => break,
            }
        }
        if let Some(e) = self.script_fail.take() {
            // A step's message could not be made: what it opened fails with the connection.
            self.bufs.scratch.clear();
            return self.fail(idx, barrage_metrics::ErrorClass::ScriptError, Some(&e), now);
        }
        if let Some(e) = self.step_fail.take() {
            // Its values made a message that cannot be said (a length below zero, a topic
            // over 65,535 bytes): the same, as `other` with the reason.
            self.bufs.scratch.clear();
            return self.fail(idx, barrage_metrics::ErrorClass::Other, Some(&e), now);
        }
        if let Some(e) = self.conns[i].session.failed() {
            // A request the session could not render (`--conn-stages` with a script).
            self.bufs.scratch.clear();
            return self.fail(idx, e.class, Some(&e.why), now);
        }
        if !self.bufs.scratch.is_empty() {
            let c = &mut self.conns[i];
            let res = write_to(c, &mut self.rec, &self.bufs.scratch);
            self.bufs.scratch.clear();
            self.wrote(idx, res, now);
        }
        let st = &self.users[i];
        if st.phase == Life::Running {
            wake = wake.min(st.depart_at);
        }
        if wake != u64::MAX && self.conns[i].stream.is_some() {
            self.schedule_wake(idx, wake);
        }
    }

    /// Render step `s` into the send buffer and open its exchange; returns the exchange key.
    fn user_send(&mut self, idx: u32, s: u16, intended: u64, now: u64) -> u64 {
        let program = self.program_arc();
        let step = &program.steps[s as usize];
        let i = idx as usize;
        let c = &mut self.conns[i];
        let fill = Fill {
            conn: c.gid,
            seq: c.seq,
            ts_us: self.wall_base_us + now / 1000,
        };
        if let Some(b) = &step.broadcast {
            let st = &mut self.users[i];
            st.stamp_seq = st.stamp_seq.wrapping_add(1);
            let stamp = crate::users::stamp::Stamp {
                shard: program.shard,
                user: c.gid as u32,
                seq: st.stamp_seq,
                ts_us: fill.ts_us,
            };
            if let Some(slot) = program.stamp_slot {
                match program.stamp_form {
                    crate::users::stamp::Form::Text => st.vars.set(slot, &stamp.encode()),
                    crate::users::stamp::Form::Binary => st.vars.set(slot, &stamp.encode_binary()),
                }
            }
            self.rec.counters.broadcast.sent += 1;
            if let Some(t) = &b.expect {
                self.bufs.step.clear();
                t.render_vars_into(fill, &st.vars, &mut self.bufs.step);
                let n = std::str::from_utf8(&self.bufs.step)
                    .ok()
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .unwrap_or(0);
                let expected = if b.include_self {
                    n
                } else {
                    n.saturating_sub(1)
                };
                self.rec.counters.broadcast.expected += expected;
                let key = (u64::from(stamp.user) << 32) | u64::from(stamp.seq);
                self.rec
                    .msg_sent(key, expected.min(u64::from(u32::MAX)) as u32);
            }
        }
        // A message its values make unsayable is opened as awaited (so that it fails with
        // the connection, below, even when the step awaits nothing) and never written.
        let fault = step.msg.fault(fill, &self.users[i].vars);
        let awaits = step.awaits || fault.is_some();
        if let Some(why) = fault {
            self.step_fail.get_or_insert(why);
        }
        let at = self.bufs.scratch.len();
        step.msg.render(
            fill,
            &self.users[i].vars,
            &mut self.bufs.scratch,
            &mut self.bufs.step,
        );
        if let Some(f) = &step.call {
            let gid = c.gid;
            self.script_call(f, gid, at);
        }
        let c = &mut self.conns[i];
        let key = c.load_key();
        let mut out = Out {
            conn: c.gid,
            buf: &mut self.bufs.scratch,
            key,
            rng: &mut self.rng,
            keep: None,
            streaming: step.msg.streaming(),
        };
        let len = match step.msg {
            // The exchange records the user's step, not a command of a mix: a ramped run has
            // no per-command counts.
            crate::users::StepMsg::Load => {
                c.session.render(&self.cfg, Msg::Load, fill, &mut out).len
            }
            // Framed as the protocol sends a message (an MQTT step's packet is whole already:
            // its session only notes that the connection sent, for the keep-alive).
            _ => c.session.frame_step(&self.cfg, &mut out, at),
        };
        c.seq += 1;
        self.rec.counters.sent += 1;
        self.rec.steps.sent(s as usize, 1);
        if !step.open_loop {
            // Every user send is scheduled: `every` ticks when due, the others when reached.
            self.rec.counters.scheduled += 1;
        }
        if awaits {
            c.ex.push(Exchange::new(key, intended, now, len, s));
            self.rec.in_flight += 1;
            self.arm_timeout(idx, now.saturating_add(step.timeout_ns));
        } else {
            // No reply: done once handed to the connection.
            self.rec.counters.completed += 1;
            self.rec
                .steps
                .completed(s as usize, now.saturating_sub(intended));
        }
        key
    }

    /// After a batch of input: answer pushed messages by their `on` rules, and go on when the
    /// awaited reply came.
    pub(super) fn user_after_input(&mut self, idx: u32, now: u64) {
        let i = idx as usize;
        if !self.users[i].pushes.is_empty() {
            let program = self.program_arc();
            let pushes = std::mem::take(&mut self.users[i].pushes);
            self.bufs.scratch.clear();
            for &r in &pushes {
                let Some(t) = program.on[r as usize].reply.as_ref() else {
                    continue;
                };
                let c = &mut self.conns[i];
                let fill = Fill {
                    conn: c.gid,
                    seq: c.seq,
                    ts_us: self.wall_base_us + now / 1000,
                };
                let at = self.bufs.scratch.len();
                t.render_vars_into(fill, &self.users[i].vars, &mut self.bufs.scratch);
                if let Some(f) = &program.on[r as usize].call {
                    let gid = c.gid;
                    self.script_call(f, gid, at);
                }
                let c = &mut self.conns[i];
                let mut out = Out {
                    conn: c.gid,
                    buf: &mut self.bufs.scratch,
                    key: 0,
                    rng: &mut self.rng,
                    keep: None,
                    streaming: false,
                };
                c.session.frame_step(&self.cfg, &mut out, at);
            }
            let mut pushes = pushes;
            pushes.clear();
            self.users[i].pushes = pushes;
            if let Some(e) = self.script_fail.take() {
                self.bufs.scratch.clear();
                return self.fail(idx, barrage_metrics::ErrorClass::ScriptError, Some(&e), now);
            }
            if !self.bufs.scratch.is_empty() {
                let c = &mut self.conns[i];
                let res = write_to(c, &mut self.rec, &self.bufs.scratch);
                self.bufs.scratch.clear();
                if let Err(e) = res {
                    return self.fail(idx, classify(&e), Some(&e), now);
                }
            }
        }
        let st = &mut self.users[i];
        if st.step_done {
            st.step_done = false;
            st.await_key = u64::MAX;
            let st = &mut self.users[i];
            if matches!(
                self.program.ops.get(self.conns[i].pc as usize),
                Some(Op::Every { .. })
            ) {
                // A step of an `every` tick: the tick's next step could be sent from now.
                st.every_from = now;
            } else {
                self.conns[i].pc += 1;
            }
            self.conns[i].timeout_at = u64::MAX;
        }
        if self.conns[i].state == State::Ready {
            self.user_run(idx, now);
        }
    }

    /// Departure time: run the `leave` steps on a ready connection, or leave at once.
    pub(super) fn user_depart(&mut self, idx: u32, now: u64) {
        let leave_pc = self.program.leave_pc;
        let i = idx as usize;
        // Ticks due before the departure go out (late) if the connection can take them.
        let c = &self.conns[i];
        if c.state == State::Ready && c.stream.is_some() && !c.pending_write() {
            self.user_run(idx, now);
        }
        let d = self.users[i].depart_at;
        self.user_every_unsent(i, now.min(d.saturating_sub(1)));
        if self.users[i].phase == Life::Gone {
            return;
        }
        let st = &mut self.users[i];
        st.phase = Life::Leaving;
        let c = &self.conns[i];
        if c.state == State::Ready && c.stream.is_some() {
            self.conns[i].pc = leave_pc;
            st.await_key = u64::MAX;
            st.wait_until = u64::MAX;
            self.user_run(idx, now);
        } else {
            self.user_gone(idx, now);
        }
    }

    /// An `every` block is cut short (departure, the end of the run): the ticks due and
    /// never sent are accounted as not sent.
    pub(super) fn user_every_unsent(&mut self, i: usize, now: u64) {
        self.every_skip(i, now);
        let st = &mut self.users[i];
        st.every_t0 = u64::MAX;
        st.every_resume = false;
    }

    /// The ticks of the user's `every` schedule due by `now` and not sent are not sent (the
    /// steps of a tick under way too); the schedule itself is kept.
    fn every_skip(&mut self, i: usize, now: u64) {
        let program = self.program_arc();
        let st = &mut self.users[i];
        if st.every_t0 == u64::MAX {
            return;
        }
        let Some(&Op::Every {
            period_ns,
            times,
            first,
            end,
        }) = program.ops.get(st.every_pc as usize)
        else {
            st.every_t0 = u64::MAX;
            return;
        };
        let at = now
            .min(self.plan.load_end_ns().unwrap_or(u64::MAX))
            .min(st.depart_at.saturating_sub(1));
        let due = if at < st.every_t0 {
            st.every_due
        } else {
            ((at - st.every_t0) / period_ns)
                .saturating_add(1)
                .min(times)
                .max(st.every_due)
        };
        let per_tick = u64::from(end - first);
        self.rec.counters.scheduled += (due - st.every_due) * per_tick;
        let unsent = due - st.every_sent;
        self.rec.not_sent(unsent * per_tick);
        for op in &program.ops[first as usize..end as usize] {
            if let Op::Send(s) = op {
                self.rec.steps.not_sent(*s as usize, unsent);
            }
        }
        // The tick under way: its steps not sent yet.
        if st.every_op != 0 {
            for op in &program.ops[(st.every_op.min(end)) as usize..end as usize] {
                if let Op::Send(s) = op {
                    self.rec.not_sent(1);
                    self.rec.steps.not_sent(*s as usize, 1);
                }
            }
        }
        st.every_due = due;
        st.every_sent = due;
        st.every_op = 0;
    }

    /// The user leaves for good: its connection closes (a WebSocket says goodbye first).
    pub(super) fn user_gone(&mut self, idx: u32, now: u64) {
        let i = idx as usize;
        if self.users[i].phase == Life::Gone {
            return;
        }
        self.users[i].phase = Life::Gone;
        self.staying -= 1;
        let c = &mut self.conns[i];
        match c.state {
            State::Ready if c.stream.is_some() => {
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
                    let _ = write_to(c, &mut self.rec, &self.bufs.scratch);
                    self.bufs.scratch.clear();
                }
                self.rec.conn_closed();
            }
            State::Tls | State::Handshake | State::Login | State::Ready => self.rec.conn_closed(),
            State::Connecting | State::Proxy => self.connects.connecting -= 1,
            State::Waiting if c.retry_at == u64::MAX => {
                self.connects.queue.retain(|&q| q != idx);
            }
            _ => {}
        }
        self.close(idx, now, false, ErrorClass::ClosedByPeer);
    }

    /// The exchanges in flight on a closing connection fail with `class`, each under its
    /// step: the program's steps (a flag mode's program has none, and no per-step counts).
    pub(super) fn steps_failed(&mut self, i: usize, class: ErrorClass) {
        let steps = self.program.steps.len();
        if steps == 0 {
            return;
        }
        for e in self.conns[i].ex.iter() {
            if (e.step as usize) < steps {
                self.rec.steps.failed(e.step as usize, class, 1);
            }
        }
    }

    /// What a broken connection means for its user: gone when it was leaving (or past its
    /// departure); otherwise it will reconnect and start over. Returns whether it is gone.
    pub(super) fn user_lost(&mut self, i: usize, now: u64) -> bool {
        // The schedule of an `every` block under way is suspended, not ended: the ticks that
        // fall due until the user is back on it are counted as not sent.
        self.every_skip(i, now);
        let st = &mut self.users[i];
        st.every_resume = st.every_t0 != u64::MAX;
        st.await_key = u64::MAX;
        st.wait_until = u64::MAX;
        st.pushes.clear();
        st.reply.clear();
        if st.phase == Life::Gone {
            st.every_t0 = u64::MAX;
            st.every_resume = false;
            return true;
        }
        if st.phase == Life::Leaving || now >= st.depart_at {
            st.phase = Life::Gone;
            st.every_t0 = u64::MAX;
            st.every_resume = false;
            self.staying -= 1;
            return true;
        }
        false
    }

    /// A user's replies are judged with its program and state.
    pub(super) fn user_ctx<'a>(
        plan: &'a crate::plan::Plan,
        states: &'a mut [UserState],
        i: usize,
        skip_unmatched: bool,
        wall_base_us: u64,
    ) -> Option<UserCtx<'a>> {
        let u = plan.users.as_deref()?;
        let st = &mut states[i];
        Some(UserCtx {
            prog: &u.program,
            gid: st.gid,
            st,
            skip_unmatched,
            wall_base_us,
            hook: plan.script.as_ref().map(|s| &s.hook),
        })
    }

    /// A script's `call` on the message rendered at `scratch[at..]` (`Bufs::call`); a script
    /// error is kept for the caller to fail the connection with.
    fn script_call(&mut self, func: &str, gid: u64, at: usize) {
        let Some(s) = self.plan.script.as_ref() else {
            return;
        };
        if let Err(e) = self.bufs.call(&s.hook, func, gid, at) {
            self.script_fail.get_or_insert(e);
        }
    }
}
