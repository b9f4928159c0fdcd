//! Raw TCP: the message as given, replies framed by `--expect` (see [`crate::framing`]); or,
//! with `--script`, what the script's functions say (see [`crate::hook`]): `init` a login,
//! `request` each request's bytes, `frame` where replies end, `response` whether one is right.
//!
//! Without a script, or with one that leaves replies alone (no `frame`, no `response`, no
//! `init`), replies go through the framing decoder as they come, nothing buffered, and a
//! connection carries nothing for the script (its state is boxed, made only for a script). A
//! script's `frame` sees the bytes received and not yet framed, kept in the connection's
//! buffer (never more than `--max-frame`); a script's `response` sees each reply's bytes
//! (collected while the framing decodes it, at most `--max-frame` of them). A scenario's
//! replies are judged by its steps' `check`s, not by `response`.

use super::{Msg, Out, ProtoError, Rendered, Replies, Session};
use crate::exchange::OPENING;
use crate::framing::{Decoder, Framing, Sink};
use crate::hook::{Frame, HookError, HookFns};
use crate::message::{Fill, Template};
use crate::plan::{Plan, ScriptPlan};
use barrage_metrics::ErrorClass;

pub struct Cfg {
    message: Template,
    first: Option<Template>,
    framing: Framing,
    script: Option<ScriptPlan>,
    fns: HookFns,
}

impl Cfg {
    /// The script looks at replies: they are collected (or framed by it), not only counted.
    fn judges(&self) -> bool {
        self.fns.frame || self.fns.response || self.fns.init
    }
}

pub struct Tcp {
    dec: Decoder,
    /// What a script keeps per connection (`None` without a script).
    st: Option<Box<Scripted>>,
}

/// A connection's state for its script.
#[derive(Default)]
struct Scripted {
    /// The connection's number (the script's `conn`), once it opened.
    conn: u64,
    opened: bool,
    /// With `frame`, the bytes received and not yet framed; else the reply being collected
    /// for `response`.
    buf: Vec<u8>,
    /// `frame` said the next reply is this long (0: not asked yet).
    want: usize,
    /// `init` sent a login: its reply is awaited (the handshake).
    login: Option<u32>,
    failed: Option<ProtoError>,
}

/// What `frame` is shown first: most framings need only a header, so a read of many small
/// replies does not copy all that is left of it for each one.
const FRAME_PEEK: usize = 256;

fn script_error(e: HookError) -> ProtoError {
    ProtoError::of(ErrorClass::ScriptError, e)
}

impl Session for Tcp {
    type Cfg = Cfg;

    fn config(plan: &Plan) -> Cfg {
        Cfg {
            message: plan.message.clone(),
            first: plan.first_message.clone(),
            framing: plan.framing.clone(),
            fns: plan
                .script
                .as_ref()
                .map(|s| s.hook.fns())
                .unwrap_or_default(),
            script: plan.script.clone(),
        }
    }

    fn new(cfg: &Cfg) -> Self {
        Self {
            dec: Decoder::default(),
            st: cfg.script.as_ref().map(|_| Box::default()),
        }
    }

    fn reset(&mut self, cfg: &Cfg) {
        self.dec.reset();
        if let (Some(st), Some(s)) = (self.st.as_deref_mut(), &cfg.script) {
            st.buf.clear();
            if st.buf.capacity() > 1 << 16 {
                st.buf.shrink_to(1 << 12);
            }
            st.want = 0;
            st.login = None;
            st.failed = None;
            if std::mem::take(&mut st.opened) {
                s.hook.close(st.conn);
            }
        }
    }

    fn open(&mut self, cfg: &Cfg, out: &mut Out) -> Result<bool, ProtoError> {
        let (Some(st), Some(s)) = (self.st.as_deref_mut(), &cfg.script) else {
            return Ok(false);
        };
        st.conn = out.conn;
        st.opened = true;
        let at = out.buf.len();
        if !s.hook.init(out.conn, out.buf).map_err(script_error)? {
            return Ok(false);
        }
        st.login = Some((out.buf.len() - at) as u32);
        Ok(true)
    }

    #[inline]
    fn render(&mut self, cfg: &Cfg, msg: Msg, fill: Fill, out: &mut Out) -> Rendered {
        let at = out.buf.len();
        if let (Some(st), Some(s), true, Msg::Load) =
            (self.st.as_deref_mut(), &cfg.script, cfg.fns.request, msg)
        {
            // After a failure the rest of the batch is not rendered: the connection fails.
            if st.failed.is_none() {
                match s.hook.request(st.conn, fill.seq, out.buf) {
                    Ok(()) if out.buf.len() == at => {
                        st.failed = Some(script_error(HookError(format!(
                            "{}: request() returned an empty string: a request has at least \
                             one byte",
                            s.hook.name()
                        ))));
                    }
                    Ok(()) => {}
                    Err(e) => {
                        out.buf.truncate(at);
                        st.failed = Some(script_error(e));
                    }
                }
            }
            return Rendered::command(out.buf.len() - at, 0);
        }
        let t = match (msg, &cfg.first) {
            (Msg::Opening(_), Some(f)) => f,
            _ => &cfg.message,
        };
        let len = t.render_into(fill, out.buf);
        if !t.is_static() || matches!(msg, Msg::Opening(_)) {
            out.keep(at..at + len);
        }
        Rendered::command(len, 0)
    }

    fn failed(&mut self) -> Option<ProtoError> {
        self.st.as_deref_mut()?.failed.take()
    }

    fn static_request(cfg: &Cfg, msg: Msg, _seq: u64) -> Option<(&[u8], Rendered)> {
        let raw = cfg.message.raw();
        let scripted = cfg.fns.request;
        (msg == Msg::Load && cfg.message.is_static() && !scripted)
            .then_some((raw, Rendered::command(raw.len(), 0)))
    }

    #[inline]
    fn input(&mut self, cfg: &Cfg, data: &[u8], r: &mut Replies) -> Result<(), ProtoError> {
        match (self.st.as_deref_mut(), &cfg.script) {
            (Some(st), Some(s)) if cfg.judges() => {
                if cfg.fns.frame {
                    st.scripted_frames(cfg, s, data, r)
                } else {
                    st.judged_frames(&mut self.dec, cfg, s, data, r)
                }
            }
            _ => self
                .dec
                .feed(&cfg.framing, data, r)
                .map_err(ProtoError::new),
        }
    }

    fn completes_on_write(cfg: &Cfg) -> bool {
        cfg.framing == Framing::None && !cfg.judges()
    }
}

/// Whether `response` judges the reply at the front: not an opening's (`--first-message`),
/// not a scenario user's (its steps' `check`s do).
fn responds(cfg: &Cfg, r: &Replies) -> bool {
    cfg.fns.response && !r.scenario_user() && r.ex.front().is_none_or(|e| e.step != OPENING)
}

impl Scripted {
    /// Replies framed by the script's `frame`, each judged by `response`.
    fn scripted_frames(
        &mut self,
        cfg: &Cfg,
        s: &ScriptPlan,
        data: &[u8],
        r: &mut Replies,
    ) -> Result<(), ProtoError> {
        let before = self.buf.len();
        let mut buf = std::mem::take(&mut self.buf);
        buf.extend_from_slice(data);
        let mut pos = 0;
        let res = loop {
            let avail = buf.len() - pos;
            if avail == 0 {
                break Ok(());
            }
            if self.want == 0 {
                let mut said = s
                    .hook
                    .frame(self.conn, &buf[pos..pos + avail.min(FRAME_PEEK)]);
                if avail > FRAME_PEEK && said == Ok(Frame::More) {
                    said = s.hook.frame(self.conn, &buf[pos..]);
                }
                match said {
                    Err(e) => break Err(script_error(e)),
                    Ok(Frame::More) if avail as u64 > s.max_frame => {
                        break Err(ProtoError::new(format!(
                            "{avail} bytes and frame() has not found a whole reply in them: \
                             over --max-frame ({})",
                            s.max_frame
                        )))
                    }
                    Ok(Frame::More) => break Ok(()),
                    Ok(Frame::Len(0)) => {
                        break Err(script_error(HookError(format!(
                            "{}: frame() returned 0: a reply is at least 1 byte (return nil \
                             while there is no whole reply yet)",
                            s.hook.name()
                        ))))
                    }
                    Ok(Frame::Len(n)) if n as u64 > s.max_frame => {
                        break Err(ProtoError::new(format!(
                            "frame() says the next reply is {n} bytes: over --max-frame ({})",
                            s.max_frame
                        )))
                    }
                    Ok(Frame::Len(n)) => self.want = n,
                }
            }
            if avail < self.want {
                break Ok(());
            }
            let reply = &buf[pos..pos + self.want];
            pos += self.want;
            self.want = 0;
            if self.login.is_some() {
                // The login's reply: the handshake is done with the bytes up to its end (the
                // worker hands the rest of this input back as the load's).
                self.login = None;
                let res = self.judge_login(cfg, s, reply);
                if res.is_ok() {
                    r.handshake_done(pos.saturating_sub(before));
                }
                buf.clear();
                pos = 0;
                break res;
            }
            r.body(reply);
            let bad = match responds(cfg, r) {
                true => s
                    .hook
                    .response(self.conn, reply)
                    .unwrap_or(Some(ErrorClass::ScriptError)),
                false => None,
            };
            r.complete(bad);
        };
        buf.drain(..pos);
        if buf.is_empty() && buf.capacity() > 1 << 16 {
            buf.shrink_to(1 << 12);
        }
        self.buf = buf;
        res
    }

    /// Replies framed by `--expect`, each judged by `response` (its bytes collected).
    fn judged_frames(
        &mut self,
        dec: &mut Decoder,
        cfg: &Cfg,
        s: &ScriptPlan,
        data: &[u8],
        r: &mut Replies,
    ) -> Result<(), ProtoError> {
        let Some(len) = self.login else {
            let judge = responds(cfg, r);
            let mut sink = Judged {
                r,
                buf: &mut self.buf,
                login: None,
                done: false,
                over: false,
                max: s.max_frame,
                judge: judge.then_some((s, self.conn)),
            };
            let fed = dec.feed(&cfg.framing, data, &mut sink);
            let over = sink.over;
            fed.map_err(ProtoError::new)?;
            return match over {
                true => Err(too_long(s)),
                false => Ok(()),
            };
        };
        // Byte by byte until the login's reply is framed, so that its end is known.
        let mut sink = Judged {
            r: &mut *r,
            buf: &mut self.buf,
            login: Some(len),
            done: false,
            over: false,
            max: s.max_frame,
            judge: None,
        };
        let mut used = 0;
        while used < data.len() && !sink.done && !sink.over {
            dec.feed(&cfg.framing, &data[used..=used], &mut sink)
                .map_err(ProtoError::new)?;
            used += 1;
        }
        if sink.over {
            return Err(too_long(s));
        }
        if !sink.done {
            return Ok(());
        }
        self.login = None;
        let reply = std::mem::take(&mut self.buf);
        let res = self.judge_login(cfg, s, &reply);
        self.buf = reply;
        self.buf.clear();
        res?;
        r.handshake_done(used);
        Ok(())
    }

    /// The login's reply: a wrong one fails the connection with the class `response` names.
    fn judge_login(&self, cfg: &Cfg, s: &ScriptPlan, reply: &[u8]) -> Result<(), ProtoError> {
        if !cfg.fns.response {
            return Ok(());
        }
        match s.hook.response(self.conn, reply) {
            Ok(None) => Ok(()),
            Ok(Some(class)) => Err(ProtoError::of(
                class,
                format!("the reply to init()'s login was judged {class} by response()"),
            )),
            Err(e) => Err(script_error(e)),
        }
    }
}

fn too_long(s: &ScriptPlan) -> ProtoError {
    ProtoError::new(format!(
        "a reply longer than --max-frame ({}) for the script to see",
        s.max_frame
    ))
}

/// The framing's sink while a script judges replies: a reply's bytes are collected (at most
/// `max`), and at its end `response` judges it and its exchange completes (the login's:
/// `done` is set).
struct Judged<'a, 'r> {
    r: &'a mut Replies<'r>,
    buf: &'a mut Vec<u8>,
    /// The login's length (echo framing), while its reply is awaited.
    login: Option<u32>,
    done: bool,
    /// A reply passed `max` bytes: the connection fails.
    over: bool,
    max: u64,
    /// The script and the connection, when `response` judges these replies.
    judge: Option<(&'a ScriptPlan, u64)>,
}

impl Sink for Judged<'_, '_> {
    fn expect_len(&mut self) -> Option<u64> {
        match self.login {
            Some(n) => Some(u64::from(n)),
            None => self.r.ex.front().map(|f| f.len as u64),
        }
    }

    fn body(&mut self, bytes: &[u8]) {
        if self.login.is_none() {
            self.r.body(bytes);
            if self.judge.is_none() {
                return; // nobody reads the collected reply (a scenario's steps check theirs)
            }
        }
        if (self.buf.len() + bytes.len()) as u64 > self.max {
            self.over = true;
            return;
        }
        self.buf.extend_from_slice(bytes);
    }

    fn collecting(&self) -> bool {
        true
    }

    fn frame(&mut self) {
        if self.login.is_some() {
            self.done = true;
            return;
        }
        let bad = match self.judge {
            Some((s, conn)) if !self.over => s
                .hook
                .response(conn, self.buf)
                .unwrap_or(Some(ErrorClass::ScriptError)),
            _ => None,
        };
        self.buf.clear();
        self.r.complete(bad);
    }

    fn unexpected(&mut self, _bytes: &[u8]) {
        self.r.rec.counters.unexpected += 1;
    }
}

impl crate::framing::Sink for Replies<'_> {
    fn expect_len(&mut self) -> Option<u64> {
        self.ex.front().map(|f| f.len as u64)
    }

    fn body(&mut self, bytes: &[u8]) {
        Replies::body(self, bytes);
    }

    fn collecting(&self) -> bool {
        self.user.as_ref().is_some_and(|u| u.prog.collect)
    }

    fn frame(&mut self) {
        self.complete(None);
    }

    fn unexpected(&mut self, _bytes: &[u8]) {
        self.rec.counters.unexpected += 1;
    }
}
