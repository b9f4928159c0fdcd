//! A scenario user's replies judged against its step: `on` rules and pushes, broadcast
//! deliveries (stamps timed from their send), matches, captures and the step's counts.

use super::Replies;
use crate::exchange::Exchange;
use barrage_metrics::ErrorClass;

impl Replies<'_> {
    /// A user's message is complete: an `on` rule's push, a reply that does not match the
    /// awaited step (message protocols: a push, and the step waits on), or the reply of the
    /// exchange at the front, matched and captured from.
    pub(super) fn complete_user(&mut self, bad: Option<ErrorClass>) -> Option<Exchange> {
        self.rec.counters.replies += 1;
        let u = self.user.as_mut().expect("a user");
        let msg = std::mem::take(&mut u.st.reply);
        let out = self.judge_user(&msg, bad);
        let u = self.user.as_mut().expect("a user");
        u.st.reply = msg;
        u.st.reply.clear();
        // A server time goes with the reply that carried it, whether or not it completed an
        // exchange (a push, an unasked reply): never into the next one.
        self.server_ns = None;
        out
    }

    /// A message the server pushed out of band (RESP3 `>` pushes: pub/sub messages and
    /// subscribe confirmations), never a reply: for a user, its stamps are deliveries and its
    /// `on` rules apply; otherwise it is ignored, as before.
    pub fn push(&mut self) {
        let Some(u) = self.user.as_mut() else { return };
        let msg = std::mem::take(&mut u.st.reply);
        self.deliveries(&msg);
        let u = self.user.as_mut().expect("a user");
        for (i, rule) in u.prog.on.iter().enumerate() {
            if rule.matcher.matches(&msg) {
                for (slot, c) in rule.captures.iter() {
                    u.st.vars.capture(*slot, c, &msg);
                }
                if rule.reply.is_some() {
                    u.st.pushes.push(i as u16);
                }
                // Counted as what an `on` rule took (a delivery no rule matched is not).
                self.rec.counters.pushed += 1;
                break;
            }
        }
        let u = self.user.as_mut().expect("a user");
        u.st.reply = msg;
        u.st.reply.clear();
    }

    /// Broadcast: every stamp in a message a user received is a delivery (counted once per
    /// stamp and receiver, timed from its send). Returns whether there was one.
    pub(super) fn deliveries(&mut self, msg: &[u8]) -> bool {
        let u = self.user.as_mut().expect("a user");
        if u.prog.stamp_slot.is_none() {
            return false;
        }
        let now_us = u.wall_base_us + self.now / 1000;
        let (gid, rec) = (u.gid, &mut *self.rec);
        let windows = &mut u.st.windows;
        let mut any = false;
        crate::users::stamp::scan_form(u.prog.stamp_form, msg, |s| {
            any = true;
            use crate::users::stamp::Arrival;
            let arrival = windows.arrive(s.user, s.seq);
            if arrival == Arrival::First {
                // Once per sender a receiver hears: the two are in one room.
                rec.heard(s.user, gid as u32);
            }
            let b = &mut rec.counters.broadcast;
            let first = match arrival {
                Arrival::First => true,
                Arrival::InOrder { gap } => {
                    b.gaps += u64::from(gap);
                    true
                }
                Arrival::Late => {
                    b.late += 1;
                    true
                }
                Arrival::BeforeStart => {
                    // Counted as the gap it fills, so that `lost` (gaps not filled) holds.
                    b.gaps += 1;
                    b.late += 1;
                    true
                }
                Arrival::TooOld => {
                    b.too_old += 1;
                    true
                }
                Arrival::Duplicate => {
                    b.duplicates += 1;
                    false
                }
            };
            let remote = s.shard != u.prog.shard;
            if first && remote && !u.prog.one_clock {
                // From another process (a shard of a split run), whose clock is not known to
                // agree with this one: counted, and timed apart on the two clocks; a merge
                // shows that time only if the clocks are known to agree closely enough.
                b.delivered += 1;
                b.remote += 1;
                let us = now_us.saturating_sub(s.ts_us & ((1 << 56) - 1));
                rec.bcast_remote.record_ns(us.saturating_mul(1000));
            } else if first {
                if remote {
                    b.remote += 1;
                }
                b.delivered += 1;
                let own = u64::from(s.user) == gid & 0xffff_ffff;
                if own {
                    b.own += 1;
                }
                let us = now_us.saturating_sub(s.ts_us & ((1 << 56) - 1));
                rec.msg_delivered((u64::from(s.user) << 32) | u64::from(s.seq), us);
                if own {
                    rec.bcast_own.record_ns(us.saturating_mul(1000));
                } else {
                    rec.bcast_peer.record_ns(us.saturating_mul(1000));
                }
            }
        });
        any
    }

    pub(super) fn judge_user(&mut self, msg: &[u8], bad: Option<ErrorClass>) -> Option<Exchange> {
        let stamped = self.deliveries(msg);
        let u = self.user.as_mut().expect("a user");
        let prog = u.prog;
        for (i, rule) in prog.on.iter().enumerate() {
            if rule.matcher.matches(msg) {
                for (slot, c) in rule.captures.iter() {
                    u.st.vars.capture(*slot, c, msg);
                }
                if rule.reply.is_some() {
                    u.st.pushes.push(i as u16);
                }
                self.rec.counters.pushed += 1;
                return None;
            }
        }
        // A delivery nobody awaits is not an unexpected reply.
        let unasked = u64::from(!stamped);
        let Some(front) = self.ex.front().copied() else {
            self.rec.counters.unexpected += unasked;
            return None;
        };
        let Some(step) = prog.steps.get(front.step as usize) else {
            self.rec.counters.unexpected += unasked;
            return None;
        };
        let mut bad = bad;
        // A gRPC call's reply is looked into as JSON, decoded with its method's descriptors;
        // one that does not decode as the method's output is not what the step expects.
        let decoded;
        let msg: &[u8] = match (&step.decode, bad) {
            (Some(d), None) => match (d.0)(msg) {
                Ok(json) => {
                    decoded = json;
                    &decoded
                }
                Err(_) => {
                    bad = Some(ErrorClass::Mismatch);
                    msg
                }
            },
            _ => msg,
        };
        if bad.is_none() {
            if let Some(m) = &step.expect {
                if !m.matches(msg) {
                    if u.skip_unmatched {
                        self.rec.counters.unexpected += unasked;
                        return None;
                    }
                    bad = Some(ErrorClass::Mismatch);
                }
            }
        }
        if let (None, Some(f), Some(h)) = (bad, &step.check, u.hook) {
            use crate::hook::Check;
            match h.check(f, u.gid, msg) {
                Ok(Check::Right) => {}
                // Not this step's reply: a push, as for `expect` (the step waits on).
                Ok(Check::NotThis) if u.skip_unmatched => {
                    self.rec.counters.unexpected += unasked;
                    return None;
                }
                Ok(Check::NotThis) => bad = Some(ErrorClass::Mismatch),
                Ok(Check::Fail(class)) => bad = Some(class),
                Err(_) => bad = Some(ErrorClass::ScriptError),
            }
        }
        if let Some(crate::users::ServerTimeFrom::Json(p)) = &step.server_time {
            if let Some(ns) = p
                .find(msg)
                .and_then(|(s, e)| crate::users::parse_server_time(&msg[s..e]))
            {
                self.server_ns = Some(ns);
            }
        }
        if bad.is_none() {
            for (slot, c) in step.captures.iter() {
                if !u.st.vars.capture(*slot, c, msg) {
                    self.rec.steps.capture_miss(front.step as usize);
                }
            }
        }
        if u.st.await_key == front.key {
            u.st.step_done = true;
        }
        let ex = self.ex.pop_front()?;
        self.finish(&ex, bad);
        Some(ex)
    }
}
