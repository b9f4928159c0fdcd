//! Raw TCP: the message as given, replies framed by `--expect` (see [`crate::framing`]); or,
//! with `--script`, what the script's functions say (see [`crate::hook`]): `init` a login,
//! `request` each request's bytes, `frame` where replies end, `response` whether one is right.
//!
//! Without a script, or with one that leaves replies alone (no `frame`, no `response`, no
//! `init`), replies go through the framing decoder as they come, nothing buffered. A script's
//! `frame` sees the bytes received and not yet framed, kept in the connection's buffer (never
//! longer than the reply `frame` announced, at most `--max-frame`); a script's `response` sees
//! each reply's bytes (collected while the framing decodes it).

use super::{Msg, Out, ProtoError, Rendered, Replies, Session};
use crate::framing::{Decoder, Framing, Sink};
use crate::hook::{Frame, HookFns};
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
    /// The connection's number (the script's `conn`), once it opened.
    conn: u64,
    opened: bool,
    /// A script's replies: with `frame`, the bytes received and not yet framed; else the
    /// reply being collected for `response`.
    buf: Vec<u8>,
    /// `frame` said the next reply is this long (0: not asked yet).
    want: usize,
    /// `init` sent a login: its reply is awaited (the handshake).
    login: Option<u32>,
    failed: Option<ProtoError>,
}

fn script_error(e: crate::hook::HookError) -> ProtoError {
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

    fn new(_cfg: &Cfg) -> Self {
        Self {
            dec: Decoder::default(),
            conn: 0,
            opened: false,
            buf: Vec::new(),
            want: 0,
            login: None,
            failed: None,
        }
    }

    fn reset(&mut self, cfg: &Cfg) {
        self.dec.reset();
        self.buf.clear();
        self.want = 0;
        self.login = None;
        self.failed = None;
        if let (Some(s), true) = (&cfg.script, std::mem::take(&mut self.opened)) {
            s.hook.close(self.conn);
        }
    }

    fn open(&mut self, cfg: &Cfg, out: &mut Out) -> Result<bool, ProtoError> {
        self.conn = out.conn;
        self.opened = true;
        let Some(s) = &cfg.script else {
            return Ok(false);
        };
        let at = out.buf.len();
        if !s.hook.init(out.conn, out.buf).map_err(script_error)? {
            return Ok(false);
        }
        self.login = Some((out.buf.len() - at) as u32);
        Ok(true)
    }

    #[inline]
    fn render(&mut self, cfg: &Cfg, msg: Msg, fill: Fill, out: &mut Out) -> Rendered {
        let at = out.buf.len();
        if let (Some(s), true, Msg::Load) = (&cfg.script, cfg.fns.request, msg) {
            if let Err(e) = s.hook.request(self.conn, fill.seq, out.buf) {
                out.buf.truncate(at);
                self.failed.get_or_insert(script_error(e));
            }
            let len = out.buf.len() - at;
            out.keep(at..at + len);
            return Rendered::command(len, 0);
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
        self.failed.take()
    }

    fn static_request(cfg: &Cfg, msg: Msg, _seq: u64) -> Option<(&[u8], Rendered)> {
        let raw = cfg.message.raw();
        let scripted = cfg.fns.request;
        (msg == Msg::Load && cfg.message.is_static() && !scripted)
            .then_some((raw, Rendered::command(raw.len(), 0)))
    }

    #[inline]
    fn input(&mut self, cfg: &Cfg, data: &[u8], r: &mut Replies) -> Result<(), ProtoError> {
        match &cfg.script {
            Some(s) if cfg.judges() => {
                if cfg.fns.frame {
                    self.scripted_frames(cfg, s, data, r)
                } else {
                    self.judged_frames(cfg, s, data, r)
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

impl Tcp {
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
                match s.hook.frame(self.conn, &buf[pos..]) {
                    Err(e) => break Err(script_error(e)),
                    Ok(Frame::More) if avail as u64 > s.max_frame => {
                        break Err(ProtoError::new(format!(
                            "{} bytes and frame() has not found a whole reply in them: over \
                             --max-frame ({})",
                            avail, s.max_frame
                        )))
                    }
                    Ok(Frame::More) => break Ok(()),
                    Ok(Frame::Len(0)) => {
                        break Err(script_error(crate::hook::HookError(format!(
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
            self.judge(cfg, s, reply, r);
        };
        buf.drain(..pos);
        self.buf = buf;
        res
    }

    /// Replies framed by `--expect`, each judged by `response` (its bytes collected).
    fn judged_frames(
        &mut self,
        cfg: &Cfg,
        s: &ScriptPlan,
        data: &[u8],
        r: &mut Replies,
    ) -> Result<(), ProtoError> {
        let Some(len) = self.login else {
            let mut sink = Judged {
                r,
                buf: &mut self.buf,
                login: None,
                done: false,
                judge: cfg.fns.response.then_some((s, self.conn)),
            };
            return self
                .dec
                .feed(&cfg.framing, data, &mut sink)
                .map_err(ProtoError::new);
        };
        // Byte by byte until the login's reply is framed, so that its end is known.
        let mut sink = Judged {
            r: &mut *r,
            buf: &mut self.buf,
            login: Some(len),
            done: false,
            judge: None,
        };
        let mut used = 0;
        while used < data.len() && !sink.done {
            self.dec
                .feed(&cfg.framing, &data[used..=used], &mut sink)
                .map_err(ProtoError::new)?;
            used += 1;
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

    /// What `response` says of a reply: `None` when it is right.
    fn response(&self, cfg: &Cfg, s: &ScriptPlan, reply: &[u8]) -> Option<ErrorClass> {
        if !cfg.fns.response {
            return None;
        }
        s.hook
            .response(self.conn, reply)
            .unwrap_or(Some(ErrorClass::ScriptError))
    }

    /// A load reply: judged, and its exchange completed.
    fn judge(&self, cfg: &Cfg, s: &ScriptPlan, reply: &[u8], r: &mut Replies) {
        r.body(reply);
        let bad = self.response(cfg, s, reply);
        r.complete(bad);
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

/// The framing's sink while a script judges replies: a reply's bytes are collected, and at
/// its end `response` judges it and its exchange completes (the login's: `done` is set).
struct Judged<'a, 'r> {
    r: &'a mut Replies<'r>,
    buf: &'a mut Vec<u8>,
    /// The login's length (echo framing), while its reply is awaited.
    login: Option<u32>,
    done: bool,
    /// The script and the connection, when the script has `response`.
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
        self.buf.extend_from_slice(bytes);
        if self.login.is_none() {
            self.r.body(bytes);
        }
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
            Some((s, conn)) => s
                .hook
                .response(conn, self.buf)
                .unwrap_or(Some(ErrorClass::ScriptError)),
            None => None,
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
