//! The worker's per-connection paths: connect, read, write, send, fail and service.
//!
//! Sends are batched: everything a connection owes at one moment (a pipeline refill, an
//! open-loop backlog) is rendered into one buffer and written with one `write`. A message
//! without placeholders sent alone is written straight from the template, with no copy.

use super::*;

impl Worker {
    pub(super) fn start_connect(&mut self, idx: u32, now: u64) {
        self.rec.c.connect_attempts += 1;
        let c = &mut self.conns[idx as usize];
        let stream = TcpStream::connect(self.plan.target.addr).and_then(|mut s| {
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
                c.state = State::Connecting;
                c.connect_started = now;
                self.connecting += 1;
                let ct = self.plan.connect_timeout.as_nanos() as u64;
                self.arm_timeout(idx, now + ct);
            }
            Err(e) => {
                c.state = State::Connecting;
                self.connecting += 1;
                self.fail(idx, classify(&e), Some(e), now);
            }
        }
    }

    pub(super) fn on_event(&mut self, idx: u32, ev: &mio::event::Event, now: u64) {
        let Some(c) = self.conns.get(idx as usize) else {
            return;
        };
        match c.state {
            State::Connecting => self.on_connect_event(idx, now),
            State::Login | State::Ready => {
                if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                    self.read_ready(idx, now);
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
            return self.fail(idx, classify(&e), Some(e), now);
        }
        self.connecting -= 1;
        self.rec.c.connects += 1;
        self.rec.connect.record_ns(now - c.connect_started);
        self.rec.conn_opened();
        c.timeout_at = u64::MAX;
        c.failures = 0;
        if !self.ever_connected {
            self.ever_connected = true;
            let _ = self.tx.send(WorkerEvent::Connected);
        }
        if let Some(first) = self.plan.first_message.as_ref() {
            c.state = State::Login;
            self.scratch.clear();
            let fill = Fill {
                conn: c.gid,
                seq: 0,
                ts_us: self.wall_base_us + now / 1000,
            };
            let len = first.render_into(fill, &mut self.scratch) as u32;
            if self.plan.framing != Framing::None {
                c.inflight.push_back(Inflight {
                    start: now,
                    sent: now,
                    len,
                });
                if self.plan.verify {
                    c.vbuf.extend(&self.scratch);
                }
            }
            let res = write_to(c, &mut self.rec, &self.scratch);
            if self.plan.framing == Framing::None {
                // The login is not an exchange: its unwritten bytes must not complete one.
                if let Ok(m) = res {
                    c.skip = (len as usize - m) as u64;
                }
            }
            if let Err(e) = res {
                return self.fail(idx, classify(&e), Some(e), now);
            }
            if self.plan.framing == Framing::None && self.conns[idx as usize].stream.is_some() {
                self.conns[idx as usize].state = State::Ready;
                self.start_mode(idx, now);
            } else {
                self.arm_timeout(idx, now + self.plan.timeout.as_nanos() as u64);
            }
        } else {
            c.state = State::Ready;
            self.start_mode(idx, now);
        }
        self.pump_connects(now);
    }

    /// A connection became ready for load: owe the pipeline (closed loop) or catch up with the
    /// schedule (open loop).
    fn start_mode(&mut self, idx: u32, now: u64) {
        if !self.plan.mode.is_open_loop() {
            self.conns[idx as usize].owed = self.plan.pipeline;
        }
        self.service(idx, now);
    }

    fn read_ready(&mut self, idx: u32, now: u64) {
        let closed_loop = !self.plan.mode.is_open_loop();
        loop {
            let c = &mut self.conns[idx as usize];
            let Some(s) = c.stream.as_mut() else { return };
            match s.read(&mut self.rbuf) {
                Ok(0) => return self.fail(idx, ErrorClass::ClosedByPeer, None, now),
                Ok(n) => {
                    self.rec.c.reads += 1;
                    self.rec.c.bytes_read += n as u64;
                    // The login reply is checked against the bytes kept in `vbuf`.
                    let login = c.state == State::Login;
                    let verify = self.plan.verify;
                    let stat = verify && !login && self.plan.message.is_static();
                    let mut dec = std::mem::take(&mut c.decoder);
                    let mut sink = Replies {
                        conn: c,
                        rec: &mut self.rec,
                        now,
                        verify_static: if stat { self.plan.message.raw() } else { &[] },
                        verify_dynamic: verify && !stat,
                        closed_loop,
                        login_done: false,
                    };
                    dec.feed(&self.plan.framing, &self.rbuf[..n], &mut sink);
                    let login_done = sink.login_done;
                    c.decoder = dec;
                    let mut think_until = None;
                    if let (Mode::Think(d), true) = (self.plan.mode, c.owed > 0) {
                        let at = now + d.as_nanos() as u64;
                        for _ in 0..std::mem::take(&mut c.owed) {
                            c.thinking.push_back(at);
                        }
                        think_until = Some(at);
                    }
                    if login_done {
                        c.timeout_at = u64::MAX;
                    }
                    if let Some(at) = think_until {
                        self.schedule_wake(idx, at);
                    }
                    if login_done {
                        self.start_mode(idx, now);
                    }
                    if n < self.rbuf.len() {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail(idx, classify(&e), Some(e), now),
            }
        }
    }

    /// After reading or flushing: send what is owed, keep the timeout armed.
    fn after_io(&mut self, idx: u32, now: u64) {
        let c = &self.conns[idx as usize];
        if c.stream.is_none() {
            return;
        }
        if c.owed > 0 || (self.plan.mode.is_open_loop() && c.due_k > c.sent_k) {
            self.service(idx, now);
        }
        let c = &self.conns[idx as usize];
        if let Some(f) = c.inflight.front() {
            if c.timeout_at == u64::MAX {
                let at = f.sent + self.plan.timeout.as_nanos() as u64;
                self.arm_timeout(idx, at);
            }
        }
    }

    /// Do what is due for a connection now, and arrange to be woken for what is due later.
    pub(super) fn service(&mut self, idx: u32, now: u64) {
        let load = self.phase == Phase::Load;
        let i = idx as usize;
        let mut wake = u64::MAX;
        let state = self.conns[i].state;
        if state == State::Waiting && load {
            if self.conns[i].retry_at <= now {
                // retry_at = MAX marks "queued to connect".
                self.connect_queue.push_back(idx);
                self.conns[i].retry_at = u64::MAX;
            } else if self.conns[i].retry_at != u64::MAX {
                wake = self.conns[i].retry_at;
            }
        }
        if let (Some(sched), true) = (self.plan.schedule(self.conns[i].gid), load) {
            // Open loop: count what is due, bound the backlog, send if the connection can.
            let c = &mut self.conns[i];
            let due = sched.due(now);
            let before = c.due_k - c.sent_k;
            c.due_k = due;
            let mut backlog = c.due_k - c.sent_k;
            if backlog > self.plan.max_backlog {
                let drop = backlog - self.plan.max_backlog;
                self.rec.c.error(ErrorClass::NotSent, drop);
                c.sent_k += drop;
                backlog = self.plan.max_backlog;
            }
            self.rec.backlog = self.rec.backlog + backlog - before;
            if state == State::Ready && !c.pending_write() && backlog > 0 {
                let n = self.allow(backlog);
                self.send(idx, n, now);
            }
            if let crate::pacer::Pace::Wait(w) = sched.pace(now, self.conns[i].due_k) {
                wake = wake.min(now + w);
            }
        } else if state == State::Ready && load {
            let c = &mut self.conns[i];
            while c.thinking.front().is_some_and(|&t| t <= now) {
                c.thinking.pop_front();
                c.owed += 1;
            }
            if let Some(&t) = c.thinking.front() {
                wake = wake.min(t);
            }
            if c.owed > 0 && !c.pending_write() {
                let n = self.allow(self.conns[i].owed as u64);
                self.conns[i].owed -= n as u32;
                self.send(idx, n, now);
            }
        }
        if wake != u64::MAX {
            self.schedule_wake(idx, wake);
        }
    }

    /// How many of `want` requests the `-n` quota still allows (and take them).
    fn allow(&mut self, want: u64) -> u64 {
        match self.allowance.as_mut() {
            None => want,
            Some(a) => {
                let n = want.min(*a);
                *a -= n;
                n
            }
        }
    }

    /// Send `n` messages on a ready connection: the open-loop backlog from `sent_k`, or `n`
    /// closed-loop requests stamped now.
    fn send(&mut self, idx: u32, n: u64, now: u64) {
        if n == 0 {
            return;
        }
        let plan = &*self.plan;
        let c = &mut self.conns[idx as usize];
        let sched = plan.schedule(c.gid);
        let ts_us = self.wall_base_us + now / 1000;
        let zero_copy = plan.message.is_static() && n == 1;
        self.scratch.clear();
        for _ in 0..n {
            let start = match &sched {
                Some(s) => {
                    let t = s.intended(c.sent_k);
                    c.sent_k += 1;
                    t
                }
                None => now,
            };
            let fill = Fill {
                conn: c.gid,
                seq: c.seq,
                ts_us,
            };
            c.seq += 1;
            let len = if zero_copy {
                plan.message.raw().len()
            } else {
                plan.message.render_into(fill, &mut self.scratch)
            };
            if plan.verify && !plan.message.is_static() {
                let from = self.scratch.len() - len;
                c.vbuf.extend(&self.scratch[from..]);
            }
            c.inflight.push_back(Inflight {
                start,
                sent: now,
                len: len as u32,
            });
        }
        self.rec.c.sent += n;
        self.rec.in_flight += n;
        if sched.is_some() {
            self.rec.backlog -= n;
        }
        if plan.framing != Framing::None && c.timeout_at == u64::MAX {
            let at = now + plan.timeout.as_nanos() as u64;
            c.timeout_at = at;
            self.timers.push(at, idx, T_TIMEOUT);
        }
        let data: &[u8] = if zero_copy {
            plan.message.raw()
        } else {
            &self.scratch
        };
        let res = write_to(c, &mut self.rec, data);
        self.wrote(idx, res, now);
    }

    /// Account for a write: completions under `--expect none`, or the connection's failure.
    pub(super) fn wrote(&mut self, idx: u32, res: io::Result<usize>, now: u64) {
        match res {
            Err(e) => self.fail(idx, classify(&e), Some(e), now),
            Ok(m) if self.plan.framing == Framing::None => self.complete_written(idx, m, now),
            Ok(_) => {}
        }
    }

    /// `--expect none`: an exchange completes when its last byte is written.
    fn complete_written(&mut self, idx: u32, m: usize, now: u64) {
        let closed_loop = !self.plan.mode.is_open_loop();
        let c = &mut self.conns[idx as usize];
        let skip = c.skip.min(m as u64);
        c.skip -= skip;
        let mut left = c.written_front + m as u64 - skip;
        while let Some(f) = c.inflight.front() {
            if left < f.len as u64 {
                break;
            }
            left -= f.len as u64;
            c.inflight.pop_front();
            self.rec.c.completed += 1;
            self.rec.in_flight -= 1;
            if closed_loop {
                c.owed += 1;
            }
        }
        c.written_front = left;
        if c.owed > 0 {
            if let Mode::Think(d) = self.plan.mode {
                let at = now + d.as_nanos() as u64;
                for _ in 0..std::mem::take(&mut c.owed) {
                    c.thinking.push_back(at);
                }
                self.schedule_wake(idx, at);
            } else if !c.ready_queued {
                // Not sent from here: a socket that always accepts would starve the others.
                c.ready_queued = true;
                self.ready.push_back(idx);
            }
        }
    }

    /// The socket is writable again: write what waited.
    pub(super) fn flush(&mut self, idx: u32, now: u64) {
        let c = &mut self.conns[idx as usize];
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
                    self.rec.c.writes += 1;
                    self.rec.c.bytes_written += m as u64;
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

    /// The connection failed: count it, fail what was in flight, and plan the reconnect.
    pub(super) fn fail(&mut self, idx: u32, class: ErrorClass, err: Option<io::Error>, now: u64) {
        let c = &mut self.conns[idx as usize];
        match c.state {
            State::Connecting => {
                self.connecting -= 1;
                self.rec.c.connect_failures += 1;
                if !self.ever_connected {
                    self.fails_unconnected += 1;
                    if self.fails_unconnected == 3 {
                        let detail = err.map_or_else(|| class.to_string(), |e| e.to_string());
                        let _ = self.tx.send(WorkerEvent::Unreachable { detail });
                    }
                }
            }
            State::Login | State::Ready => {
                self.rec.conn_closed();
                if matches!(class, ErrorClass::ClosedByPeer | ErrorClass::Reset) {
                    self.rec.c.closed_by_peer += 1;
                }
            }
            State::Waiting | State::Closed => {}
        }
        self.rec.c.error(class, 1);
        let lost = c.counted_in_flight();
        self.rec.c.failed += lost;
        self.rec.in_flight -= lost;
        if let Some(a) = self.allowance.as_mut() {
            *a += lost; // those requests may be retried
        }
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.reset_io();
        if self.phase == Phase::Load {
            c.failures += 1;
            c.state = State::Waiting;
            c.retry_at = now + backoff_ns(c.failures, self.rng.next_f64());
            let at = c.retry_at;
            self.schedule_wake(idx, at);
        } else {
            c.state = State::Closed;
        }
    }
}

/// Write `data`, or queue it behind bytes already waiting; a short write queues the rest.
/// Returns the bytes written now.
pub(super) fn write_to(c: &mut Conn, rec: &mut Recorder, data: &[u8]) -> io::Result<usize> {
    if c.pending_write() {
        c.wbuf.extend_from_slice(data);
        return Ok(0);
    }
    let Some(s) = c.stream.as_mut() else {
        return Ok(0);
    };
    loop {
        match s.write(data) {
            Ok(m) => {
                if m > 0 {
                    rec.c.writes += 1;
                    rec.c.bytes_written += m as u64;
                }
                if m < data.len() {
                    c.wbuf.clear();
                    c.wpos = 0;
                    c.wbuf.extend_from_slice(&data[m..]);
                }
                return Ok(m);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                c.wbuf.clear();
                c.wpos = 0;
                c.wbuf.extend_from_slice(data);
                return Ok(0);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
