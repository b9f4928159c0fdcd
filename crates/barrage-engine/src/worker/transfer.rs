//! The worker's byte paths: read and decode, render and send, flush, and TLS in between.
//!
//! Reading goes through one worker-wide buffer (and, under TLS, one plaintext buffer); the
//! connection's codec sees slices of it. Sends are batched: everything a connection owes at one
//! moment (a pipeline refill, an open-loop backlog) is rendered into one buffer and written
//! with one `write`; a static message sent alone is written straight from its template.

use super::wire::{classify_tls, drain_in_order, write_to};
use super::{sched_of, Worker, WorkerEvent, READS_PER_TURN};
use crate::classify::classify;
use crate::clock::TimerKind;
use crate::conn::State;
use crate::exchange::{Exchange, OPENING};
use crate::message::Fill;
use crate::session::{Close, Msg, Out, Owed, Replies, Session};
use crate::transport::Transport;
use barrage_metrics::ErrorClass;
use std::io::{self, Read, Write};

impl<S: Session> Worker<S> {
    /// Read until the socket is drained or the turn's read budget is spent (then the rest is
    /// read in the next turn, see `READS_PER_TURN`). A short read means drained
    /// (edge-triggered epoll reports new data as a new event), except when the event also
    /// said the peer closed: then the FIN is already here and no further event will come, so
    /// read on to the EOF; and except on Windows, where only `WouldBlock` re-arms the socket
    /// (`os::net::SHORT_READ_DRAINS`).
    pub(super) fn read_ready(&mut self, idx: u32, now: u64, peer_closed: bool) {
        let mut rbuf = std::mem::take(&mut self.bufs.read);
        let mut budget = READS_PER_TURN;
        loop {
            let c = &mut self.conns[idx as usize];
            let Some(s) = c.stream.as_mut() else { break };
            if budget == 0 {
                if c.read_queued == 0 {
                    self.reads.push_back(idx);
                }
                c.read_queued = c.read_queued.max(1 + peer_closed as u8);
                break;
            }
            budget -= 1;
            match s.read(&mut rbuf) {
                Ok(0) => {
                    self.on_eof(idx, now);
                    break;
                }
                Ok(n) => {
                    c.heard = true;
                    self.rec.counters.reads += 1;
                    self.rec.counters.bytes_read += n as u64;
                    match c.transport {
                        Transport::Plain => self.deliver(idx, &rbuf[..n], now),
                        Transport::Tls(_) => self.tls_input(idx, &rbuf[..n], now),
                    }
                    if n < rbuf.len() && !peer_closed && crate::os::net::SHORT_READ_DRAINS {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail(idx, classify(&e), Some(&e), now);
                    break;
                }
            }
        }
        self.bufs.read = rbuf;
    }

    /// The next turn's share of a connection whose read budget ran out.
    pub(super) fn read_more(&mut self, idx: u32, now: u64) {
        let c = &mut self.conns[idx as usize];
        let peer_closed = std::mem::take(&mut c.read_queued) == 2;
        let live = matches!(
            c.state,
            State::Tls | State::Handshake | State::Login | State::Ready
        );
        if !live || c.stream.is_none() {
            return;
        }
        self.read_ready(idx, now, peer_closed);
        let c = &self.conns[idx as usize];
        if c.stream.is_some() && c.pending_write() {
            self.flush(idx, now);
        }
        self.after_io(idx, now);
    }

    /// The peer closed the connection (FIN, or TLS close_notify).
    fn on_eof(&mut self, idx: u32, now: u64) {
        let c = &mut self.conns[idx as usize];
        if c.stream.is_none() {
            return;
        }
        let mut r = Replies::new(
            &mut c.ex,
            c.verify.as_deref_mut(),
            &mut self.rec,
            now,
            &[],
            self.program.window().is_some(),
            &mut self.bufs.ctl,
            &mut self.rng,
        );
        r.user = Self::user_ctx(
            &self.plan,
            &mut self.users,
            idx as usize,
            self.skip_unmatched,
            self.wall_base_us,
        );
        let outcome = c.session.eof(&self.cfg, &mut r);
        self.bufs.ctl.clear();
        match outcome {
            Ok(true) => {
                self.rec.counters.closed_by_peer += 1;
                self.rec.conn_closed();
                self.close(idx, now, false, ErrorClass::ClosedByPeer);
            }
            Ok(false) => self.fail(idx, ErrorClass::ClosedByPeer, None, now),
            Err(e) => self.fail(idx, e.class, Some(&e.why), now),
        }
    }

    /// Ciphertext from the socket: through rustls, then the plaintext to the codec.
    fn tls_input(&mut self, idx: u32, mut data: &[u8], now: u64) {
        let mut pbuf = std::mem::take(&mut self.bufs.plain);
        while !data.is_empty() {
            let c = &mut self.conns[idx as usize];
            let Transport::Tls(tls) = &mut c.transport else {
                break;
            };
            if let Err(e) = tls.read_tls(&mut data) {
                self.fail(idx, ErrorClass::TlsOther, Some(&e), now);
                break;
            }
            if let Err(e) = tls.process_new_packets() {
                let class = classify_tls(&e);
                self.fail(idx, class, Some(&e), now);
                break;
            }
            if c.state == State::Tls && !tls.is_handshaking() {
                c.failures = 0; // a handshake is useful work: the backoff starts over
                self.rec.record_tls_handshake(now.saturating_sub(c.since));
                c.since = now;
                c.timeout_at = u64::MAX;
                self.transport_ready(idx, now);
            }
            loop {
                let c = &mut self.conns[idx as usize];
                let Transport::Tls(tls) = &mut c.transport else {
                    break;
                };
                match tls.reader().read(&mut pbuf) {
                    Ok(0) => {
                        self.on_eof(idx, now);
                        break;
                    }
                    Ok(m) => self.deliver(idx, &pbuf[..m], now),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        self.fail(idx, ErrorClass::TlsOther, Some(&e), now);
                        break;
                    }
                }
            }
        }
        self.bufs.plain = pbuf;
        let c = &mut self.conns[idx as usize];
        if let Err(e) = c.transport.flush(c.stream.as_mut(), &mut self.rec) {
            self.fail(idx, classify(&e), Some(&e), now);
        }
    }

    /// Decoded bytes of one connection through its session into completions.
    pub(super) fn deliver(&mut self, idx: u32, data: &[u8], now: u64) {
        let c = &mut self.conns[idx as usize];
        if c.stream.is_none() {
            return;
        }
        let opening = c.state == State::Login;
        let stat = !opening && self.plan.verify && self.plan.message.is_static();
        let mut r = Replies::new(
            &mut c.ex,
            c.verify.as_deref_mut(),
            &mut self.rec,
            now,
            if stat { self.plan.message.raw() } else { &[] },
            self.program.window().is_some(),
            &mut self.bufs.ctl,
            &mut self.rng,
        );
        r.user = Self::user_ctx(
            &self.plan,
            &mut self.users,
            idx as usize,
            self.skip_unmatched,
            self.wall_base_us,
        );
        let res = c.session.input(&self.cfg, data, &mut r);
        let (opening_done, freed, useful, handshake, close) =
            (r.opening_done, r.freed, r.useful, r.handshake, r.close);
        if useful {
            c.failures = 0; // useful work: the backoff starts over
        }
        c.owed += freed;
        if let Err(e) = res {
            self.bufs.ctl.clear();
            if e.tls_answer && self.rec.counters.completed == 0 && !self.told.misdirected {
                // A plain-text client at a TLS port: a mistake in the target, not a fault
                // of the server. Say so once, so the run stops with the remedy.
                self.told.misdirected = true;
                let detail = "the server answered with TLS: use https:// (or wss://)".into();
                let _ = self.tx.send(WorkerEvent::Misdirected { detail });
            } else if e.class == ErrorClass::Protocol
                && self.rec.counters.completed == 0
                && !self.told.misdirected
            {
                // Another protocol's answer (HTTP/2 frames to an HTTP/1.1 client, HTTP to
                // a redis client): the target's scheme is wrong, as for a TLS answer.
                if let Some(remedy) = super::sniff::misdirected(&self.plan.protocol, data) {
                    self.told.misdirected = true;
                    let detail = remedy.to_string();
                    let _ = self.tx.send(WorkerEvent::Misdirected { detail });
                }
            }
            return self.fail(idx, e.class, Some(&e.why), now);
        }
        let backlogged = c.backlogged();
        if let Some(o) = c.session.owed() {
            if !self.bufs.ctl.is_empty() && (backlogged || o.in_order()) && close.is_none() {
                // A peer that does not read what it is sent gets no more control answers
                // than fit: the latest pong is kept (one per connection) and written once the
                // socket drains (`flush`). A close answer goes out in any case: the
                // connection ends. HTTP/2's answers wait for the requests the replies free
                // (`send`), or for the end of the connection's events (`after_io`),
                // whichever comes first.
                o.owe(&self.bufs.ctl);
                self.bufs.ctl.clear();
            }
            if !self.bufs.ctl.is_empty() {
                let kept = o.take();
                if o.in_order() {
                    // What was kept goes first (HTTP/2 drops no control frame).
                    if let Some(k) = kept {
                        let mut all = k.into_vec();
                        all.extend_from_slice(&self.bufs.ctl);
                        self.bufs.ctl = all;
                    }
                } // else a newer answer supersedes one kept (a WebSocket pong)
            }
        }
        if !self.bufs.ctl.is_empty() {
            let res = write_to(c, &mut self.rec, &self.bufs.ctl);
            self.bufs.ctl.clear();
            if let Err(e) = res {
                if close.is_none() {
                    return self.fail(idx, classify(&e), Some(&e), now);
                }
            }
        }
        if let Some(consumed) = handshake {
            self.rec.handshake.record_ns(now.saturating_sub(c.since));
            self.become_ready(idx, now);
            if consumed < data.len() {
                self.deliver(idx, &data[consumed..], now);
            }
            return;
        }
        match close {
            Some(Close::Fail(class, why)) => return self.fail(idx, class, Some(&why), now),
            Some(c @ (Close::Graceful | Close::TurnedAway)) => {
                self.rec.counters.closed_by_peer += 1;
                self.rec.conn_closed();
                let backoff = c == Close::TurnedAway;
                return self.close(idx, now, backoff, ErrorClass::ClosedByPeer);
            }
            None => {}
        }
        if self.at_scenario_op(idx) {
            return self.user_after_input(idx, now);
        }
        self.after_replies(idx, now, opening_done);
    }

    /// What decoded replies leave to do: think times, the next step of the opening.
    pub(super) fn after_replies(&mut self, idx: u32, now: u64, opening_done: bool) {
        let c = &mut self.conns[idx as usize];
        if let (Some((_, think)), true) = (self.program.window(), c.owed > 0) {
            if think > 0 && c.state == State::Ready {
                let at = now + think;
                c.think_owed(at);
                self.schedule_wake(idx, at);
            }
        }
        if opening_done {
            let c = &mut self.conns[idx as usize];
            c.timeout_at = u64::MAX;
            c.pc += 1;
            self.run_opening(idx, now);
        }
    }

    /// Send `n` messages on a ready connection: the open-loop backlog from `sent_k`, or `n`
    /// closed-loop requests stamped now.
    pub(super) fn send(&mut self, idx: u32, n: u64, now: u64) {
        if n == 0 {
            return;
        }
        let c = &mut self.conns[idx as usize];
        let sched = sched_of(&self.program, &self.plan, c.gid);
        let ts_us = self.wall_base_us + now / 1000;
        // A request that is the same every time, sent alone, is written from its template.
        let stat = match n {
            1 => S::static_request(&self.cfg, Msg::Load, c.seq),
            _ => None,
        };
        self.bufs.scratch.clear();
        for _ in 0..n {
            let start = match &sched {
                Some(s) => {
                    let t = s.intended(c.sent_k);
                    c.sent_k += 1;
                    t
                }
                None => now,
            };
            let key = c.load_key();
            let r = match stat {
                Some((bytes, r)) => {
                    if self.on_write {
                        crate::session::Rendered {
                            len: bytes.len() as u32,
                            ..r
                        }
                    } else {
                        r
                    }
                }
                None => {
                    let fill = Fill {
                        conn: c.gid,
                        seq: c.seq,
                        ts_us,
                    };
                    let at = self.bufs.scratch.len();
                    let mut out = Out {
                        conn: c.gid,
                        buf: &mut self.bufs.scratch,
                        key,
                        rng: &mut self.rng,
                        keep: c.verify.as_deref_mut().map(|v| &mut v.pending),
                        streaming: false,
                    };
                    let r = c.session.render(&self.cfg, Msg::Load, fill, &mut out);
                    if self.on_write {
                        crate::session::Rendered {
                            len: (self.bufs.scratch.len() - at) as u32,
                            ..r
                        }
                    } else {
                        r
                    }
                }
            };
            c.seq += 1;
            if S::COMMANDS {
                self.rec.counters.commands.sent(r.step as usize);
            }
            c.ex.push(Exchange::new(key, start, now, r.len, r.step));
        }
        self.rec.counters.sent += n;
        self.rec.in_flight += n;
        if sched.is_some() {
            self.rec.backlog -= n;
        }
        if !self.on_write && c.timeout_at == u64::MAX {
            let at = now + self.plan.timeout.as_nanos() as u64;
            c.timeout_at = at;
            self.timers.push(at, idx, TimerKind::Timeout);
        }
        if let Some(e) = c.session.failed() {
            // A request could not be rendered (a script's error): what was opened fails.
            return self.fail(idx, e.class, Some(&e.why), now);
        }
        let data: &[u8] = match stat {
            Some((b, _)) => b,
            None => &self.bufs.scratch,
        };
        if !c.backlogged() {
            // Control answers kept for this write go first, in the same system call.
            self.bufs.joined.clear();
            drain_in_order(&mut c.session, &mut self.bufs.joined);
            if !self.bufs.joined.is_empty() {
                self.bufs.joined.extend_from_slice(data);
                let res = write_to(c, &mut self.rec, &self.bufs.joined);
                return self.wrote(idx, res, now);
            }
        }
        let res = write_to(c, &mut self.rec, data);
        self.wrote(idx, res, now);
    }

    /// Account for a write: completions under `--expect none`, or the connection's failure.
    pub(super) fn wrote(&mut self, idx: u32, res: io::Result<usize>, now: u64) {
        match res {
            Err(e) => self.fail(idx, classify(&e), Some(&e), now),
            Ok(m) if self.on_write => self.complete_written(idx, m, now),
            Ok(_) => {}
        }
    }

    /// `--expect none`: an exchange completes when its last byte is written.
    fn complete_written(&mut self, idx: u32, m: usize, now: u64) {
        let closed_loop = self.program.window().is_some();
        let c = &mut self.conns[idx as usize];
        let mut left = m as u64;
        while let Some(f) = c.ex.front() {
            if left < f.len as u64 {
                // Partly written: only then the head alone changes (`front_mut` splits a run).
                if let Some(f) = c.ex.front_mut() {
                    f.len -= left as u32;
                }
                break;
            }
            left -= f.len as u64;
            let done = c.ex.pop_front().map(|e| e.step);
            if done == Some(OPENING) {
                continue; // the opening's bytes complete no exchange
            }
            c.failures = 0;
            self.rec.counters.completed += 1;
            self.rec.in_flight -= 1;
            if closed_loop {
                c.owed += 1;
            }
        }
        if c.owed > 0 && c.state == State::Ready {
            match self.program.window() {
                Some((_, think)) if think > 0 => {
                    let at = now + think;
                    c.think_owed(at);
                    self.schedule_wake(idx, at);
                }
                _ if !c.ready_queued => {
                    // Not sent from here: a socket that always accepts would starve the others.
                    c.ready_queued = true;
                    self.ready.push_back(idx);
                }
                _ => {}
            }
        }
    }

    /// The socket is writable again: write what waited, then a control answer kept while it
    /// was backlogged.
    pub(super) fn flush(&mut self, idx: u32, now: u64) {
        self.flush_queued(idx, now);
        let c = &mut self.conns[idx as usize];
        if c.stream.is_none() || c.backlogged() {
            return;
        }
        if let Some(owed) = c.session.owed().and_then(|o| o.take()) {
            if let Err(e) = write_to(c, &mut self.rec, &owed) {
                self.fail(idx, classify(&e), Some(&e), now);
            }
        }
    }

    fn flush_queued(&mut self, idx: u32, now: u64) {
        let c = &mut self.conns[idx as usize];
        match c.transport.flush(c.stream.as_mut(), &mut self.rec) {
            Ok(true) => return, // TLS: its records are the queue
            Ok(false) => {}     // plain: the connection's write queue below
            Err(e) => return self.fail(idx, classify(&e), Some(&e), now),
        }
        let Some(s) = c.stream.as_mut() else { return };
        let mut total = 0;
        let res = loop {
            if c.wpos >= c.wbuf.len() {
                c.wbuf.clear();
                c.wpos = 0;
                break Ok(total);
            }
            match s.write(&c.wbuf[c.wpos..]) {
                Ok(0) => break Ok(total),
                Ok(m) => {
                    self.rec.counters.writes += 1;
                    self.rec.counters.bytes_written += m as u64;
                    c.wpos += m;
                    total += m;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(total),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.wrote(idx, res, now);
    }
}
