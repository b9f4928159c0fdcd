//! The worker's byte paths: read and decode, render and send, flush, and TLS in between.
//!
//! Reading goes through one worker-wide buffer (and, under TLS, one plaintext buffer); the
//! connection's codec sees slices of it. Sends are batched: everything a connection owes at one
//! moment (a pipeline refill, an open-loop backlog) is rendered into one buffer and written
//! with one `write`; a static message sent alone is written straight from its template.

use super::wire::{flush_tls, write_to};
use super::*;
use crate::conn::Codec;
use crate::sinks::{HttpReplies, WsReplies};

impl Worker {
    /// Read until the socket is drained. A short read means drained (edge-triggered epoll
    /// reports new data as a new event), except when the event also said the peer closed:
    /// then the FIN is already here and no further event will come, so read on to the EOF.
    pub(super) fn read_ready(&mut self, idx: u32, now: u64, peer_closed: bool) {
        let mut rbuf = std::mem::take(&mut self.rbuf);
        loop {
            let c = &mut self.conns[idx as usize];
            let Some(s) = c.stream.as_mut() else { break };
            match s.read(&mut rbuf) {
                Ok(0) => {
                    self.on_eof(idx, now);
                    break;
                }
                Ok(n) => {
                    self.rec.c.reads += 1;
                    self.rec.c.bytes_read += n as u64;
                    if c.tls.is_some() {
                        self.tls_input(idx, &rbuf[..n], now);
                    } else {
                        self.deliver(idx, &rbuf[..n], now);
                    }
                    if n < rbuf.len() && !peer_closed {
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
        self.rbuf = rbuf;
    }

    /// The peer closed the connection (FIN, or TLS close_notify).
    fn on_eof(&mut self, idx: u32, now: u64) {
        let c = &mut self.conns[idx as usize];
        if c.stream.is_none() {
            return;
        }
        let mut codec = std::mem::replace(&mut c.codec, Codec::Tcp(Default::default()));
        let outcome = match &mut codec {
            Codec::Http(d) => {
                let expect = match &self.plan.protocol {
                    Protocol::Http(h) => &h.expect_status,
                    _ => unreachable!("HTTP codec on a non-HTTP plan"),
                };
                let mut sink = HttpReplies {
                    r: replies(c, &mut self.rec, now, &self.plan, false),
                    expect,
                };
                d.eof(&mut sink).map_err(|e| e.to_string())
            }
            Codec::Ws { .. } => {
                self.rec.c.ws_close.add(1006, 1);
                Ok(())
            }
            Codec::Tcp(_) => Ok(()),
        };
        c.codec = codec;
        match outcome {
            // A body that ran until the close completed: a graceful close.
            Ok(()) if c.server_closes => {
                self.rec.c.closed_by_peer += 1;
                self.rec.conn_closed();
                self.close(idx, now, false, ErrorClass::ClosedByPeer);
            }
            Ok(()) => self.fail(idx, ErrorClass::ClosedByPeer, None, now),
            Err(e) => self.fail(idx, ErrorClass::Protocol, Some(&e), now),
        }
    }

    /// Ciphertext from the socket: through rustls, then the plaintext to the codec.
    fn tls_input(&mut self, idx: u32, mut data: &[u8], now: u64) {
        let mut pbuf = std::mem::take(&mut self.pbuf);
        while !data.is_empty() {
            let c = &mut self.conns[idx as usize];
            let Some(tls) = c.tls.as_mut() else { break };
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
                self.rec.tls.record_ns(now.saturating_sub(c.opened_at));
                c.opened_at = now;
                c.timeout_at = u64::MAX;
                self.transport_ready(idx, now);
            }
            loop {
                let c = &mut self.conns[idx as usize];
                let Some(tls) = c.tls.as_mut() else { break };
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
        self.pbuf = pbuf;
        let c = &mut self.conns[idx as usize];
        if c.tls.is_some() {
            if let Err(e) = flush_tls(c, &mut self.rec) {
                self.fail(idx, classify(&e), Some(&e), now);
            }
        }
    }

    /// Decoded bytes of one connection through its codec into completions.
    pub(super) fn deliver(&mut self, idx: u32, data: &[u8], now: u64) {
        let c = &mut self.conns[idx as usize];
        if c.stream.is_none() {
            return;
        }
        let mut codec = std::mem::replace(&mut c.codec, Codec::Tcp(Default::default()));
        let mut upgraded = None;
        let mut tls_answer = false;
        let mut r = replies(c, &mut self.rec, now, &self.plan, c.state == State::Login);
        let res: Result<(), String> = match &mut codec {
            Codec::Tcp(d) => {
                d.feed(&self.plan.framing, data, &mut r);
                Ok(())
            }
            Codec::Http(d) => {
                let expect = match &self.plan.protocol {
                    Protocol::Http(h) => &h.expect_status,
                    _ => unreachable!("HTTP codec on a non-HTTP plan"),
                };
                let mut sink = HttpReplies { r, expect };
                let res = d.feed(data, &mut sink).map_err(|e| {
                    tls_answer = e == crate::http::HttpError::TlsOnPlainPort;
                    e.to_string()
                });
                r = sink.r;
                res
            }
            Codec::Ws { upgrade, frames } => match upgrade {
                Some(hs) => match hs.feed(data) {
                    Ok(crate::ws::Handshake::Incomplete) => Ok(()),
                    Ok(crate::ws::Handshake::Done { consumed }) => {
                        upgraded = Some(consumed);
                        Ok(())
                    }
                    Err(e) => Err(e.to_string()),
                },
                None => {
                    let mut sink = WsReplies { r };
                    let res = frames.feed(data, &mut sink).map_err(|e| e.to_string());
                    r = sink.r;
                    res
                }
            },
        };
        let login_done = r.login_done;
        if let (Some(_), Codec::Ws { upgrade, .. }) = (upgraded, &mut codec) {
            *upgrade = None;
        }
        let c = &mut self.conns[idx as usize];
        c.codec = codec;
        if let Err(e) = res {
            if tls_answer && self.rec.c.completed == 0 && !self.told_tls {
                // A plain-text client at a TLS port: a mistake in the target, not a fault
                // of the server. Say so once, so the run stops with the remedy.
                self.told_tls = true;
                let detail = "the server answered with TLS: use https:// (or wss://)".into();
                let _ = self.tx.send(WorkerEvent::Misdirected { detail });
            }
            return self.fail(idx, ErrorClass::Protocol, Some(&e), now);
        }
        if let Some(consumed) = upgraded {
            c.failures = 0; // a handshake is useful work: the backoff starts over
            self.rec
                .handshake
                .record_ns(now.saturating_sub(c.opened_at));
            self.become_ready(idx, now);
            if consumed < data.len() {
                self.deliver(idx, &data[consumed..], now);
            }
            return;
        }
        self.after_replies(idx, now, login_done);
    }

    /// What decoded replies leave to do: think times, login completion, pongs, closes.
    fn after_replies(&mut self, idx: u32, now: u64, login_done: bool) {
        let c = &mut self.conns[idx as usize];
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
        if let Some(payload) = c.pong.take() {
            // Pings are rare: the payload's allocation is not worth keeping.
            self.scratch.clear();
            let mask = (self.rng.next_u64() as u32).to_le_bytes();
            crate::ws::encode_frame(crate::ws::OpCode::Pong, &payload, mask, &mut self.scratch);
            let c = &mut self.conns[idx as usize];
            let res = write_to(c, &mut self.rec, &self.scratch);
            if let Err(e) = res {
                return self.fail(idx, classify(&e), Some(&e), now);
            }
        }
        let c = &mut self.conns[idx as usize];
        if let Some(code) = c.peer_close.take() {
            let code_or = code.unwrap_or(1005);
            self.rec.c.ws_close.add(code_or, 1);
            // Answer the close (echoing its code, as RFC 6455 asks), then drop the connection.
            self.scratch.clear();
            let mask = (self.rng.next_u64() as u32).to_le_bytes();
            crate::ws::close_frame(code.unwrap_or(1000), mask, &mut self.scratch);
            let c = &mut self.conns[idx as usize];
            let _ = write_to(c, &mut self.rec, &self.scratch);
            let class = match code {
                None | Some(1000) | Some(1001) => ErrorClass::ClosedByPeer,
                Some(_) => ErrorClass::WsClose,
            };
            return self.fail(idx, class, Some(&format!("close code {code_or}")), now);
        }
        if c.server_closes && c.inflight.is_empty() {
            // HTTP `Connection: close` (or HTTP/1.0): a graceful end, reconnect at once.
            self.rec.c.closed_by_peer += 1;
            self.rec.conn_closed();
            return self.close(idx, now, false, ErrorClass::ClosedByPeer);
        }
        if let Some(at) = think_until {
            self.schedule_wake(idx, at);
        }
        if login_done {
            self.start_mode(idx, now);
        }
    }

    /// Send `n` messages on a ready connection: the open-loop backlog from `sent_k`, or `n`
    /// closed-loop requests stamped now.
    pub(super) fn send(&mut self, idx: u32, n: u64, now: u64) {
        if n == 0 {
            return;
        }
        let plan = &*self.plan;
        let c = &mut self.conns[idx as usize];
        let sched = plan.schedule(c.gid);
        let ts_us = self.wall_base_us + now / 1000;
        let stat = static_request(plan);
        let zero_copy = stat.is_some() && n == 1;
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
            let len = match (&plan.protocol, zero_copy) {
                (_, true) => stat.map_or(0, <[u8]>::len),
                (Protocol::Tcp, _) => plan.message.render_into(fill, &mut self.scratch),
                (Protocol::Http(h), _) => h.request.render_into(fill, &mut self.scratch),
                (Protocol::Ws(w), _) => {
                    let at = self.scratch.len();
                    let len = plan.message.render_into(fill, &mut self.scratch);
                    if plan.verify && !plan.message.is_static() {
                        c.vbuf.extend(&self.scratch[at..]);
                    }
                    let op = if w.binary {
                        crate::ws::OpCode::Binary
                    } else {
                        crate::ws::OpCode::Text
                    };
                    let mask = (self.rng.next_u64() as u32).to_le_bytes();
                    crate::ws::frame_in_place(op, &mut self.scratch, at, mask);
                    len
                }
            };
            if plan.verify && !plan.message.is_static() && !matches!(plan.protocol, Protocol::Ws(_))
            {
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
        let data: &[u8] = match (zero_copy, stat) {
            (true, Some(b)) => b,
            _ => &self.scratch,
        };
        let res = write_to(c, &mut self.rec, data);
        self.wrote(idx, res, now);
    }

    /// Account for a write: completions under `--expect none`, or the connection's failure.
    pub(super) fn wrote(&mut self, idx: u32, res: io::Result<usize>, now: u64) {
        match res {
            Err(e) => self.fail(idx, classify(&e), Some(&e), now),
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
            c.failures = 0;
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
        if c.tls.is_some() {
            if let Err(e) = flush_tls(c, &mut self.rec) {
                self.fail(idx, classify(&e), Some(&e), now);
            }
            return;
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
}

/// The sink state for one batch of decoded bytes.
fn replies<'a>(
    c: &'a mut Conn,
    rec: &'a mut Recorder,
    now: u64,
    plan: &'a Plan,
    login: bool,
) -> Replies<'a> {
    // The login reply is checked against the bytes kept in `vbuf`.
    let stat = plan.verify && !login && plan.message.is_static();
    Replies {
        conn: c,
        rec,
        now,
        verify_static: if stat { plan.message.raw() } else { &[] },
        verify_dynamic: plan.verify && !stat,
        closed_loop: !plan.mode.is_open_loop(),
        login_done: false,
    }
}

/// The bytes of a request that is the same every time, if it is.
fn static_request(plan: &Plan) -> Option<&[u8]> {
    match &plan.protocol {
        Protocol::Tcp => plan.message.is_static().then(|| plan.message.raw()),
        Protocol::Http(h) => h.request.is_static().then(|| h.request.static_bytes()),
        Protocol::Ws(_) => None, // every frame has its own mask
    }
}
