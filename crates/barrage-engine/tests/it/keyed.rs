//! A protocol defined outside the engine, through the seam alone: each request carries the
//! key of its exchange, the server answers every batch in reverse order, and every exchange
//! completes by its key (`Replies::complete_key`), none by position. This is the shape of
//! request-id protocols and HTTP/2 streams; `run_session` runs any `Session`.

use crate::common::*;
use barrage_engine::session::{Msg, Out, ProtoError, Rendered, Replies, Session};
use barrage_engine::{run_session, End, Fill, Mode, Plan};
use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// `KEY ping\n` out, `KEY pong\n` back, in any order.
struct Keyed {
    line: Vec<u8>,
}

impl Session for Keyed {
    type Cfg = ();

    fn config(_plan: &Plan) {}

    fn new(_cfg: &()) -> Self {
        Keyed { line: Vec::new() }
    }

    fn reset(&mut self, _cfg: &()) {
        self.line.clear();
    }

    fn render(&mut self, _cfg: &(), _msg: Msg, _fill: Fill, out: &mut Out) -> Rendered {
        let req = format!("{} ping\n", out.key);
        out.buf.extend_from_slice(req.as_bytes());
        Rendered {
            len: req.len() as u32,
            step: 0,
        }
    }

    fn input(&mut self, _cfg: &(), data: &[u8], r: &mut Replies) -> Result<(), ProtoError> {
        for &b in data {
            if b != b'\n' {
                self.line.push(b);
                continue;
            }
            let text = String::from_utf8_lossy(&self.line).into_owned();
            self.line.clear();
            let key = text
                .split(' ')
                .next()
                .and_then(|k| k.parse().ok())
                .ok_or_else(|| ProtoError::new(format!("no key in {text:?}")))?;
            if r.complete_key(key, None).map(|e| e.key) != Some(key) {
                return Err(ProtoError::new(format!("no exchange {key} in flight")));
            }
        }
        Ok(())
    }
}

#[test]
fn a_session_outside_the_engine_completes_exchanges_by_key_out_of_order() {
    const WINDOW: usize = 4;
    let answered = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&answered);
    let server = TestServer::start(move |s| {
        let mut w = s.try_clone().unwrap();
        let mut r = BufReader::new(s);
        let mut batch: Vec<String> = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => batch.push(line.replace("ping", "pong")),
            }
            if batch.len() == WINDOW {
                let reply: String = batch.drain(..).rev().collect();
                // Counted before it is written: the client may complete the batch and end its
                // run before this thread would count it after the write (seen under load).
                counter.fetch_add(WINDOW as u64, Ordering::Relaxed);
                if w.write_all(reply.as_bytes()).is_err() {
                    return;
                }
            }
        }
    });
    let mut p = plan(server.addr, 3, Mode::PingPong, 0.5);
    p.pipeline = WINDOW as u32;
    let o = run_session::<Keyed>(p, Arc::new(AtomicBool::new(false)), |_, _| {}).unwrap();
    let s = &o.outcome.summary;
    assert_eq!(o.end, End::Completed);
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.exchanges.unexpected_replies, 0, "every key matched");
    assert_eq!(s.exchanges.in_flight_at_end, 0);
    assert!(s.exchanges.completed >= WINDOW as u64, "{:?}", s.exchanges);
    assert_eq!(s.exchanges.completed, answered.load(Ordering::Relaxed));
    assert_eq!(s.latency_us.count, s.exchanges.completed);
    assert!(s.exchanges.balanced(), "{:?}", s.exchanges);
}
