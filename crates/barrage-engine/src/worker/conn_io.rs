//! The worker's per-connection paths: connect, read, write, send, fail and service.
//!
//! Sends are batched: everything a connection owes at one moment (a pipeline refill, an
//! open-loop backlog) is rendered into one buffer and written with one `write`. A message
//! without placeholders sent alone is written straight from the template, with no copy.

use super::wire::{drain_in_order, write_to};
use super::{sched_of, Period, Worker, WorkerEvent};
use crate::classify::classify;
use crate::conn::State;
use crate::exchange::{Exchange, OPENING};
use crate::message::Fill;
use crate::pacer::backoff_ns;
use crate::session::{Msg, Out, Session, Streams};
use crate::transport::Transport;
use crate::users::Op;
use barrage_metrics::ErrorClass;
use mio::{Interest, Token};
use std::io;

impl<S: Session> Worker<S> {
    pub(super) fn start_connect(&mut self, idx: u32, now: u64) {
        self.rec.counters.connect_attempts += 1;
        let c = &mut self.conns[idx as usize];
        let stream = self.connects.dialer.connect(c.gid).and_then(|mut s| {
            let _ = s.set_nodelay(true);
            self.poll.registry().register(
                &mut s,
                Token(idx as usize),
                Interest::READABLE | Interest::WRITABLE,
            )?;
            Ok(s)
        });
        match stream {
            Ok(s) => {
                c.stream = Some(s);
                c.heard = false;
                c.state = State::Connecting;
                c.since = now;
                self.connects.connecting += 1;
                let ct = self.plan.connect_timeout.as_nanos() as u64;
                self.arm_timeout(idx, now + ct);
            }
            Err(e) => {
                c.state = State::Connecting;
                self.connects.connecting += 1;
                self.fail(idx, classify(&e), Some(&e), now);
            }
        }
    }

    pub(super) fn on_event(&mut self, idx: u32, ev: &mio::event::Event, now: u64) {
        let Some(c) = self.conns.get(idx as usize) else {
            return;
        };
        match c.state {
            State::Connecting => self.on_connect_event(idx, now),
            State::Proxy => {
                if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                    self.on_proxy_answer(idx, now);
                }
                let c = &self.conns[idx as usize];
                if ev.is_writable() && c.stream.is_some() && c.pending_write() {
                    self.flush(idx, now);
                }
            }
            State::Tls | State::Handshake | State::Login | State::Ready => {
                if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                    self.read_ready(idx, now, ev.is_read_closed() || ev.is_error());
                }
                let c = &self.conns[idx as usize];
                if ev.is_writable() && c.stream.is_some() && c.pending_write() {
                    self.flush(idx, now);
                }
                self.after_io(idx, now);
            }
            _ => {}
        }
    }

    fn on_connect_event(&mut self, idx: u32, now: u64) {
        let c = &mut self.conns[idx as usize];
        let Some(s) = c.stream.as_ref() else { return };
        let err = match s.take_error() {
            Ok(Some(e)) | Err(e) => Some(e),
            Ok(None) => match s.peer_addr() {
                Ok(_) => None,
                Err(e) if e.kind() == io::ErrorKind::NotConnected => return, // not yet
                Err(e) => Some(e),
            },
        };
        if let Some(e) = err {
            return self.fail(idx, classify(&e), Some(&e), now);
        }
        if let Some(p) = &self.plan.target.proxy {
            // Through a proxy: the tunnel first (its answer is read by `on_proxy_answer`).
            // The connect is still under way (counted, timed) until the tunnel opens, within
            // the one connect timeout.
            c.state = State::Proxy;
            self.connects.proxy_done(idx); // what an earlier attempt left
            if let Err(e) = write_to(c, &mut self.rec, &p.connect) {
                self.fail(idx, classify(&e), Some(&e), now);
            }
        } else {
            self.reached(idx, now);
            self.start_transport(idx, now);
        }
        self.pump_connects(now);
    }

    /// The connection reaches the target (TCP up, or the proxy's tunnel open): counted and
    /// timed as a connect.
    pub(super) fn reached(&mut self, idx: u32, now: u64) {
        let c = &mut self.conns[idx as usize];
        self.connects.connecting -= 1;
        self.rec.counters.connects += 1;
        self.rec.connect.record_ns(now - c.since);
        self.rec.conn_opened();
        c.timeout_at = u64::MAX;
        c.since = now;
    }

    /// The connection reaches the target (directly, or through the proxy's tunnel): TLS's
    /// handshake, or the protocol's own.
    pub(super) fn start_transport(&mut self, idx: u32, now: u64) {
        let c = &mut self.conns[idx as usize];
        if let Some(tls) = &self.plan.tls {
            match rustls::ClientConnection::new(tls.config.clone(), tls.server_name.clone()) {
                Ok(mut t) => {
                    t.set_buffer_limit(None); // our pipeline and backlog bound what is queued
                    c.transport = Transport::Tls(Box::new(t));
                    c.state = State::Tls;
                    let at = now + self.plan.connect_timeout.as_nanos() as u64;
                    self.arm_timeout(idx, at);
                    let c = &mut self.conns[idx as usize];
                    if let Err(e) = c.transport.flush(c.stream.as_mut(), &mut self.rec) {
                        self.fail(idx, classify(&e), Some(&e), now);
                    }
                }
                Err(e) => self.fail(idx, ErrorClass::TlsOther, Some(&e), now),
            }
        } else {
            self.transport_ready(idx, now);
        }
    }

    /// TCP (and TLS) is up: start the protocol's own handshake, or the script.
    pub(super) fn transport_ready(&mut self, idx: u32, now: u64) {
        let c = &mut self.conns[idx as usize];
        // Under TLS without ALPN the protocol is "none": an empty name.
        let tls = matches!(c.transport, Transport::Tls(_));
        let alpn = c.transport.alpn().or(tls.then_some(&[][..]));
        if let Err(e) = c.session.negotiated(&self.cfg, alpn, &mut self.rec) {
            return self.fail(idx, e.class, Some(&e.why), now);
        }
        let c = &mut self.conns[idx as usize];
        self.bufs.scratch.clear();
        let mut out = Out {
            conn: c.gid,
            buf: &mut self.bufs.scratch,
            key: 0,
            rng: &mut self.rng,
            keep: None,
            streaming: false,
        };
        let awaited = match c.session.open(&self.cfg, &mut out) {
            Ok(a) => a,
            Err(e) => {
                // Connected (counted so above): the failure is the handshake's.
                self.conns[idx as usize].state = State::Handshake;
                return self.fail(idx, e.class, Some(&e.why), now);
            }
        };
        if !awaited {
            return self.become_ready(idx, now);
        }
        c.state = State::Handshake;
        c.timeout_at = u64::MAX;
        let res = write_to(c, &mut self.rec, &self.bufs.scratch);
        if let Err(e) = res {
            return self.fail(idx, classify(&e), Some(&e), now);
        }
        let at = now + self.plan.timeout.as_nanos() as u64;
        self.arm_timeout(idx, at)
    }

    /// Run the script's opening from step `pc`: send its next request and await the reply,
    /// or (the opening done) start the load.
    pub(super) fn run_opening(&mut self, idx: u32, now: u64) {
        let c = &mut self.conns[idx as usize];
        let msg = match self.program.step(c.pc) {
            Op::Opening(i) => Msg::Opening(*i),
            _ => return self.start_mode(idx, now),
        };
        c.state = State::Login;
        self.bufs.scratch.clear();
        let fill = Fill {
            conn: c.gid,
            seq: 0,
            ts_us: self.wall_base_us + now / 1000,
        };
        let key = c.opening_key();
        let mut out = Out {
            conn: c.gid,
            buf: &mut self.bufs.scratch,
            key,
            rng: &mut self.rng,
            keep: c.verify.as_deref_mut().map(|v| &mut v.pending),
            streaming: false,
        };
        let r = c.session.render(&self.cfg, msg, fill, &mut out);
        // Under `--expect none` an exchange is its wire bytes, done when they are written.
        let len = if self.on_write {
            self.bufs.scratch.len() as u32
        } else {
            r.len
        };
        c.ex.push(Exchange::new(key, now, now, len, OPENING));
        if let Some(e) = c.session.failed() {
            return self.fail(idx, e.class, Some(&e.why), now);
        }
        let res = write_to(c, &mut self.rec, &self.bufs.scratch);
        if self.on_write {
            // Nothing to await: the opening goes on (its bytes complete no exchange).
            c.pc += 1;
            self.wrote(idx, res, now);
            if self.conns[idx as usize].stream.is_some() {
                self.run_opening(idx, now);
            }
            return;
        }
        if let Err(e) = res {
            return self.fail(idx, classify(&e), Some(&e), now);
        }
        self.arm_timeout(idx, now + self.plan.timeout.as_nanos() as u64);
    }

    /// Handshakes done: the connection takes load.
    pub(super) fn become_ready(&mut self, idx: u32, now: u64) {
        let c = &mut self.conns[idx as usize];
        // The backoff is not reset here: a server that accepts and resets at once must not
        // turn reconnects into a busy loop. Useful work (a handshake, a completed exchange)
        // resets it.
        c.timeout_at = u64::MAX;
        self.arm_tick(idx, now);
        if !self.program.step(0).of_flags() {
            self.connected();
            return self.user_begin(idx, now);
        }
        let c = &mut self.conns[idx as usize];
        c.pc = 0;
        self.run_opening(idx, now);
    }

    /// A connection became ready for load: owe the pipeline (closed loop) or catch up with the
    /// schedule (open loop).
    ///
    /// The first time a connection is ready its load starts: an open-loop schedule begins
    /// with the first message due after this moment (like wrk2), so the connection ramp never
    /// turns into a catch-up burst or into latency. A reconnect keeps the schedule.
    pub(super) fn start_mode(&mut self, idx: u32, now: u64) {
        self.connected();
        let c = &mut self.conns[idx as usize];
        c.state = State::Ready;
        c.pc = self.program.load_pc();
        c.timeout_at = u64::MAX;
        if !c.started() {
            let k0 = sched_of(&self.program, &self.plan, c.gid).map_or(0, |s| s.due(now));
            c.k0 = k0;
            c.sent_k = k0;
            c.due_k = k0;
            self.rec.conn_first_ready(now);
        }
        if let Some((window, _)) = self.program.window() {
            self.conns[idx as usize].owed = window;
        }
        self.service(idx, now);
    }

    /// A connection got through: connected, its handshakes done and its opening answered
    /// (RESP3's `HELLO 3`). Until the first one does, failures count towards the fail-fast
    /// stop (`Unreachable`): a server that refuses the opening on every connection stops the
    /// run with its reason, as one that refuses connections does.
    fn connected(&mut self) {
        if self.told.connect() {
            let _ = self.tx.send(WorkerEvent::Connected);
        }
    }

    /// After reading or flushing: send what is owed, keep the timeout armed.
    pub(super) fn after_io(&mut self, idx: u32, now: u64) {
        let c = &self.conns[idx as usize];
        if c.stream.is_none() {
            return;
        }
        if self.at_scenario_op(idx) {
            if c.state == State::Ready && !c.pending_write() {
                self.user_run(idx, now);
            }
        } else if c.owed > 0 || (self.program.schedule_period().is_some() && c.due_k > c.sent_k) {
            self.service(idx, now);
        }
        // HTTP/2 control answers no request took along: out now.
        let c = &mut self.conns[idx as usize];
        if c.stream.is_some() && !c.backlogged() {
            self.bufs.joined.clear();
            drain_in_order(&mut c.session, &mut self.bufs.joined);
            if !self.bufs.joined.is_empty() {
                if let Err(e) = write_to(c, &mut self.rec, &self.bufs.joined) {
                    return self.fail(idx, classify(&e), Some(&e), now);
                }
            }
        }
        let c = &self.conns[idx as usize];
        if let (Some(f), true) = (c.ex.front(), c.timeout_at == u64::MAX) {
            let at = f.sent + self.timeout_of(f.step);
            self.arm_timeout(idx, at);
        }
    }

    /// Do what is due for a connection now, and arrange to be woken for what is due later.
    pub(super) fn service(&mut self, idx: u32, now: u64) {
        if self.at_scenario_op(idx) {
            return self.user_service(idx, now);
        }
        let load = self.period == Period::Load;
        let i = idx as usize;
        let mut wake = u64::MAX;
        let state = self.conns[i].state;
        if state == State::Waiting && load {
            if self.conns[i].retry_at <= now {
                // retry_at = MAX marks "queued to connect".
                self.connects.queue.push_back(idx);
                self.conns[i].retry_at = u64::MAX;
            } else if self.conns[i].retry_at != u64::MAX {
                wake = self.conns[i].retry_at;
            }
        }
        if let Some(sched) = sched_of(&self.program, &self.plan, self.conns[i].gid) {
            if !(load && self.conns[i].started()) {
                // Not ready yet for the first time: its schedule has not begun.
                if wake != u64::MAX {
                    self.schedule_wake(idx, wake);
                }
                return;
            }
            // Open loop: count what is due, bound the backlog, send if the connection can.
            let c = &mut self.conns[i];
            let due = sched.due(now).max(c.due_k);
            let before = c.due_k - c.sent_k;
            let new_due = due - c.due_k;
            self.rec.counters.scheduled += new_due;
            c.due_k = due;
            let mut backlog = c.due_k - c.sent_k;
            if backlog > self.plan.max_backlog {
                let drop = backlog - self.plan.max_backlog;
                self.rec.not_sent(drop);
                c.sent_k += drop;
                backlog = self.plan.max_backlog;
            }
            self.rec.backlog = self.rec.backlog + backlog - before;
            if state == State::Ready && !c.pending_write() && backlog > 0 {
                // What waits for a stream (HTTP/2) stays due: its latency counts the wait.
                let room = self.room(i);
                if room < backlog {
                    // Messages that fell due with no stream free: the server's limit showing.
                    if let Some(s) = self.conns[i].session.streams() {
                        s.waited(&mut self.rec, new_due.min(backlog - room));
                    }
                }
                let n = self.allow(backlog.min(room));
                self.send(idx, n, now);
            }
            if let crate::pacer::Pace::Wait(w) = sched.pace(now, self.conns[i].due_k) {
                wake = wake.min(now + w);
            }
        } else if state == State::Ready && load {
            let c = &mut self.conns[i];
            if let Some(thinking) = c.thinking.as_deref_mut() {
                while thinking.front().is_some_and(|&t| t <= now) {
                    thinking.pop_front();
                    c.owed += 1;
                }
                if let Some(&t) = thinking.front() {
                    wake = wake.min(t);
                }
            }
            if c.owed > 0 && !c.pending_write() {
                let want = (c.owed as u64).min(self.room(i));
                let n = self.allow(want);
                self.conns[i].owed -= n as u32;
                self.send(idx, n, now);
            }
        }
        if wake != u64::MAX {
            self.schedule_wake(idx, wake);
        }
    }

    /// How many more exchanges connection `i` can open now: what its session's streams allow
    /// (`Streams::room`; no limit without) and, for a protocol whose request ids come from the
    /// keys in a ring (`Session::KEY_RING`), no more than keeps the newest id clear of the
    /// oldest still in flight.
    fn room(&mut self, i: usize) -> u64 {
        let c = &mut self.conns[i];
        let room = c.session.streams().map_or(u64::MAX, |s| s.room());
        match (S::KEY_RING, c.ex.front()) {
            (0, _) | (_, None) => room,
            (ring, Some(f)) => {
                let span = c.load_key().saturating_sub(f.key) >> 1;
                room.min(ring.saturating_sub(span))
            }
        }
    }

    /// How many of `want` requests the `-n` quota still allows (and take them).
    pub(super) fn allow(&mut self, want: u64) -> u64 {
        match self.allowance.as_mut() {
            None => want,
            Some(a) => {
                let n = want.min(*a);
                *a -= n;
                n
            }
        }
    }

    /// The connection failed: count it, fail what was in flight, and plan the reconnect.
    /// `why` is kept among the class's first few reasons (formatted a bounded number of
    /// times per second) and names the fail-fast message when nothing ever got through.
    pub(super) fn fail(
        &mut self,
        idx: u32,
        class: ErrorClass,
        why: Option<&dyn std::fmt::Display>,
        now: u64,
    ) {
        let c = &mut self.conns[idx as usize];
        match c.state {
            State::Connecting | State::Proxy => {
                self.connects.connecting -= 1;
                self.rec.counters.connect_failures += 1;
                self.connects.proxy_done(idx);
            }
            State::Tls | State::Handshake | State::Login | State::Ready => {
                self.rec.conn_closed();
                if matches!(class, ErrorClass::ClosedByPeer | ErrorClass::Reset) {
                    self.rec.counters.closed_by_peer += 1;
                }
            }
            State::Waiting | State::Closed => {}
        }
        if !matches!(c.state, State::Waiting | State::Closed) && self.told.fail() {
            let detail = why.map_or_else(|| class.to_string(), |w| w.to_string());
            let _ = self.tx.send(WorkerEvent::Unreachable { detail });
        }
        if let Some(w) = why {
            self.rec.reason(class, now, w);
        }
        self.rec.counters.error(class, 1);
        self.close(idx, now, true, class);
    }

    /// Drop the connection: what was in flight fails as `class` (each exchange counts in the
    /// error rate under the reason its connection ended), and (during the load) it is
    /// reopened, after a backoff when `backoff` (a failure), at once otherwise (a graceful
    /// close, e.g. HTTP `Connection: close`).
    pub(super) fn close(&mut self, idx: u32, now: u64, backoff: bool, class: ErrorClass) {
        self.steps_failed(idx as usize, class);
        let c = &mut self.conns[idx as usize];
        let lost = c.counted_in_flight();
        self.rec.exchanges_failed(class, lost);
        self.rec.in_flight -= lost;
        if let Some(a) = self.allowance.as_mut() {
            *a += lost; // those requests may be retried
        }
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.session.counts(&mut self.rec);
        c.reset_io(&self.cfg);
        if self.at_scenario_op(idx) && self.user_lost(idx as usize, now) {
            let c = &mut self.conns[idx as usize];
            c.state = State::Closed;
            c.retry_at = u64::MAX;
            return;
        }
        let c = &mut self.conns[idx as usize];
        if self.period == Period::Load {
            c.state = State::Waiting;
            if backoff {
                c.failures += 1;
                c.retry_at = now + backoff_ns(c.failures, self.rng.next_f64());
            } else {
                c.retry_at = now;
            }
            let at = c.retry_at;
            self.schedule_wake(idx, at);
        } else {
            c.state = State::Closed;
        }
    }
}
