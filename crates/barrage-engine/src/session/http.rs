//! HTTP/1.1: one request template, responses decoded by [`crate::http::ResponseDecoder`];
//! a response completes the oldest request (HTTP/1.1 answers in order) and its status
//! decides success.

use super::{Close, Msg, Out, ProtoError, Rendered, Replies, Session};
use crate::http::{HttpError, Limits, RequestTemplate, ResponseDecoder, ResponseSink};
use crate::message::Fill;
use crate::plan::{Plan, Protocol, StatusSet};
use barrage_metrics::ErrorClass;

pub struct Cfg {
    request: RequestTemplate,
    expect: StatusSet,
}

pub struct Http {
    dec: ResponseDecoder,
    /// The server announced it closes the connection after the current response.
    server_closes: bool,
}

impl Session for Http {
    type Cfg = Cfg;

    fn config(plan: &Plan) -> Cfg {
        match &plan.protocol {
            Protocol::Http(h) => Cfg {
                request: h.request.clone(),
                expect: h.expect_status.clone(),
            },
            other => unreachable!("HTTP session for a {} plan", other.name()),
        }
    }

    fn new(cfg: &Cfg) -> Self {
        Self {
            dec: ResponseDecoder::new(Limits::default(), cfg.request.is_head()),
            server_closes: false,
        }
    }

    fn reset(&mut self, _cfg: &Cfg) {
        self.dec.reset();
        self.server_closes = false;
    }

    #[inline]
    fn render(&mut self, cfg: &Cfg, _msg: Msg, fill: Fill, out: &mut Out) -> Rendered {
        let len = cfg.request.render_into(fill, out.buf);
        Rendered {
            len: len as u32,
            step: 0,
        }
    }

    fn static_request(cfg: &Cfg, _msg: Msg, _seq: u64) -> Option<(&[u8], Rendered)> {
        let bytes = cfg.request.static_bytes();
        let r = Rendered {
            len: bytes.len() as u32,
            step: 0,
        };
        cfg.request.is_static().then_some((bytes, r))
    }

    #[inline]
    fn input(&mut self, cfg: &Cfg, data: &[u8], r: &mut Replies) -> Result<(), ProtoError> {
        let mut sink = Sink {
            r,
            expect: &cfg.expect,
            server_closes: &mut self.server_closes,
        };
        self.dec.feed(data, &mut sink).map_err(|e| ProtoError {
            tls_answer: e == HttpError::TlsOnPlainPort,
            why: e.to_string(),
        })?;
        if self.server_closes && r.ex.is_empty() {
            // `Connection: close` (or HTTP/1.0): a graceful end, reconnect at once.
            r.close = Some(Close::Graceful);
        }
        Ok(())
    }

    fn eof(&mut self, cfg: &Cfg, r: &mut Replies) -> Result<bool, ProtoError> {
        let mut sink = Sink {
            r,
            expect: &cfg.expect,
            server_closes: &mut self.server_closes,
        };
        self.dec.eof(&mut sink).map_err(ProtoError::new)?;
        // A body that ran until the close completed: a graceful close.
        Ok(self.server_closes)
    }
}

struct Sink<'r, 'a, 'b> {
    r: &'r mut Replies<'a>,
    expect: &'b StatusSet,
    server_closes: &'b mut bool,
}

impl ResponseSink for Sink<'_, '_, '_> {
    fn head(&mut self, _status: u16) {
        if let Some(f) = self.r.ex.front() {
            let t = self.r.now.saturating_sub(f.start);
            self.r.rec.ttfb.record_ns(t);
        }
    }

    fn server_time(&mut self, ns: u64) {
        // A header named by the user's step (seen first) wins over Server-Timing.
        self.r.server_ns.get_or_insert(ns);
    }

    fn wants_headers(&self) -> bool {
        self.r.is_user()
    }

    fn header(&mut self, name: &[u8], value: &[u8]) {
        self.r.header(name, value);
    }

    fn body(&mut self, bytes: &[u8]) {
        self.r.body(bytes);
    }

    fn complete(&mut self, status: u16, keep_alive: bool) {
        self.r.rec.c.status.add(status, 1);
        let ok = self.r.status_ok(status, self.expect);
        let bad = (!ok).then_some(ErrorClass::UnexpectedStatus);
        self.r.complete(bad);
        if !keep_alive {
            *self.server_closes = true;
        }
    }
}
