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
    /// The server's own time from a head whose response is not complete yet: it is carried
    /// from read to read until the response ends (head and body often come in separate
    /// reads: a server that writes the head first, nginx's `sendfile`, chunked bodies).
    server_ns: Option<u64>,
}

impl Cfg {
    pub(crate) fn of(h: &crate::plan::HttpPlan) -> Self {
        Cfg {
            request: h.request.clone(),
            expect: h.expect_status.clone(),
        }
    }
}

impl Session for Http {
    type Cfg = Cfg;

    fn config(plan: &Plan) -> Cfg {
        match &plan.protocol {
            Protocol::Http(h) => Cfg::of(h),
            other => unreachable!("HTTP session for a {} plan", other.name()),
        }
    }

    fn new(cfg: &Cfg) -> Self {
        Self {
            dec: ResponseDecoder::new(Limits::default(), cfg.request.is_head()),
            server_closes: false,
            server_ns: None,
        }
    }

    fn reset(&mut self, _cfg: &Cfg) {
        self.dec.reset();
        self.server_closes = false;
        self.server_ns = None;
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
        r.server_ns = self.server_ns.take();
        let mut sink = Sink {
            r,
            expect: &cfg.expect,
            server_closes: &mut self.server_closes,
        };
        let fed = self.dec.feed(data, &mut sink);
        // A response whose head came and whose end did not: its server time waits for it.
        self.server_ns = r.server_ns.take();
        fed.map_err(|e| ProtoError {
            tls_answer: e == HttpError::TlsOnPlainPort,
            ..ProtoError::new(e)
        })?;
        if self.server_closes && r.ex.is_empty() {
            // `Connection: close` (or HTTP/1.0): a graceful end, reconnect at once.
            r.close = Some(Close::Graceful);
        }
        Ok(())
    }

    fn eof(&mut self, cfg: &Cfg, r: &mut Replies) -> Result<bool, ProtoError> {
        r.server_ns = self.server_ns.take();
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
        self.r.rec.counters.status.add(status, 1);
        let ok = self.r.status_ok(status, self.expect);
        let bad = (!ok).then_some(ErrorClass::UnexpectedStatus);
        self.r.complete(bad);
        if !keep_alive {
            *self.server_closes = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::RequestSpec;
    use crate::session::tests::Conn;

    fn cfg() -> Cfg {
        Cfg {
            request: RequestTemplate::new(&RequestSpec {
                method: "GET",
                path: "/",
                host_header: "127.0.0.1",
                headers: &[],
                body: None,
                keep_alive: true,
            })
            .unwrap(),
            expect: StatusSet::default(),
        }
    }

    /// `input` fed in parts cut at `cuts`: (responses completed, server times recorded, their
    /// sum in µs, client-minus-server gaps recorded).
    fn fed(input: &[u8], cuts: &[usize], n: usize) -> (u64, u64, u64, u64) {
        let cfg = cfg();
        let mut s = Http::new(&cfg);
        let mut c = Conn::new(&[(1_000, n, 0)]);
        let mut at = 0;
        for &cut in cuts.iter().chain([input.len()].iter()) {
            let part = &input[at..cut];
            c.input(|r| s.input(&cfg, part, r).unwrap());
            at = cut;
        }
        let d = c.rec.take(0, 0, 0, 1);
        let server = d
            .server
            .get()
            .map_or((0, 0), |h| (h.count(), h.sum_us() as u64));
        let gap = d.server_gap.get().map_or(0, |h| h.count());
        (d.counters.completed, server.0, server.1, gap)
    }

    /// Regression: a response's `Server-Timing` was recorded only when its head and body came
    /// in one read (86 of 4,914 responses of a server writing head then body; none of 12,467
    /// of nginx's static files). Every response carrying it is recorded, however the reads
    /// split: two responses (a fixed-length body, a chunked one) cut at every point, and fed a
    /// byte at a time.
    #[test]
    fn server_time_is_recorded_however_the_reads_split() {
        let input: &[u8] =
            b"HTTP/1.1 200 OK\r\nServer-Timing: app;dur=3\r\nContent-Length: 5\r\n\r\nhello\
HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nServer-Timing: total;dur=7, db;dur=1\r\n\r\n\
3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let whole = fed(input, &[], 2);
        assert_eq!((whole.0, whole.1, whole.3), (2, 2, 2), "in one read");
        assert!(
            (9_990..=10_010).contains(&whole.2),
            "3 ms + 7 ms: {whole:?}"
        );
        for i in 0..=input.len() {
            assert_eq!(fed(input, &[i], 2), whole, "cut at {i}");
        }
        // And a byte at a time.
        let every: Vec<usize> = (1..input.len()).collect();
        assert_eq!(fed(input, &every, 2), whole, "a byte at a time");
    }

    /// An unasked response's server time (nothing in flight) is not carried into the next
    /// response, which has none of its own.
    #[test]
    fn an_unasked_responses_server_time_is_no_ones() {
        let cfg = cfg();
        let mut s = Http::new(&cfg);
        let mut c = Conn::new(&[]);
        let unasked: &[u8] =
            b"HTTP/1.1 200 OK\r\nServer-Timing: app;dur=3\r\nContent-Length: 2\r\n\r\nhi";
        c.input(|r| s.input(&cfg, unasked, r).unwrap());
        let mut c2 = Conn::new(&[(1_000, 1, 0)]);
        let plain: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nho";
        c2.input(|r| s.input(&cfg, plain, r).unwrap());
        let d = c2.rec.take(0, 0, 0, 1);
        assert_eq!(d.counters.completed, 1);
        assert!(
            d.server.get().is_none(),
            "the unasked response's server time was carried"
        );
    }

    /// A response without the header records no server time, even when the one before had it
    /// and the reads split in between.
    #[test]
    fn server_time_does_not_carry_into_the_next_response() {
        let input: &[u8] =
            b"HTTP/1.1 200 OK\r\nServer-Timing: app;dur=3\r\nContent-Length: 2\r\n\r\nhi\
HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nho";
        let whole = fed(input, &[], 2);
        assert_eq!((whole.0, whole.1, whole.3), (2, 1, 1), "in one read");
        for i in 0..=input.len() {
            assert_eq!(fed(input, &[i], 2), whole, "cut at {i}");
        }
    }
}
