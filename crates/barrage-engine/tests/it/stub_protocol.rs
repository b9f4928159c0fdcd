//! The recipe of docs/protocol-recipe.md, proven by a throw-away protocol: a descriptor row
//! and a `Session`, both written here, outside the engine and the table's crate. The row is
//! read by the same lookups URL parsing, the scenario checker and `barrage dist` use (over a
//! table that adds it to [`PROTOCOLS`]); the session runs through the engine's seam
//! (`run_session`), ordered like redis and memcached. The engine's and the binary's tables
//! (`protocols.rs`, `plan.rs`, `resolve/config/protocol.rs`) are not wired here:
//! `docs/protocol-stub.patch` wires them for real, in the ten files the recipe lists.

use crate::common::*;
use barrage_engine::session::{Msg, Out, ProtoError, Rendered, Replies, Session};
use barrage_engine::{run_session, End, Fill, Mode, Plan};
use barrage_scenario::protocol::{
    by_scheme_in, supported_in, ProtocolInfo, TargetKind, H2, HTTP, MEMCACHE, PROTOCOLS, REDIS,
    TCP, WS,
};
use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The stub's row: `stub://HOST[:7777]`, a step is a command, no pushes.
const STUB: ProtocolInfo = ProtocolInfo {
    name: "stub",
    aliases: &["stubbed"],
    tls_scheme: None,
    port: Some(7777),
    tls_port: None,
    path: false,
    steps: TargetKind::Kv,
    pushes: false,
};

/// The table with the stub's row added: what editing `PROTOCOLS` would give.
const TABLE: &[ProtocolInfo] = &[TCP, HTTP, H2, WS, REDIS, MEMCACHE, STUB];

/// `STUB <seq>\n` out, `OK <seq>\n` back, in order.
struct Stub {
    line: Vec<u8>,
    expect: u64,
}

impl Session for Stub {
    type Cfg = ();

    fn config(_plan: &Plan) {}

    fn new(_cfg: &()) -> Self {
        Stub {
            line: Vec::new(),
            expect: 0,
        }
    }

    fn reset(&mut self, _cfg: &()) {
        self.line.clear();
        self.expect = 0;
    }

    fn render(&mut self, _cfg: &(), _msg: Msg, fill: Fill, out: &mut Out) -> Rendered {
        let at = out.buf.len();
        writeln!(out.buf, "STUB {}", fill.seq).unwrap();
        Rendered {
            len: (out.buf.len() - at) as u32,
            step: 0,
        }
    }

    fn input(&mut self, _cfg: &(), data: &[u8], r: &mut Replies) -> Result<(), ProtoError> {
        for &b in data {
            if b != b'\n' {
                self.line.push(b);
                continue;
            }
            let ok = self.line.starts_with(b"OK ");
            self.line.clear();
            if !ok {
                return Err(ProtoError::new("a stub reply starts with OK"));
            }
            r.complete(None);
        }
        Ok(())
    }
}

#[test]
fn a_stub_row_is_found_by_the_lookups_every_reader_uses() {
    assert_eq!(by_scheme_in(TABLE, "STUBBED"), Some((&STUB, false)));
    assert_eq!(
        by_scheme_in(PROTOCOLS, "stub"),
        None,
        "not in the real table"
    );
    assert_eq!(
        supported_in(TABLE),
        "tcp://, http://, https://, h2c://, ws://, wss://, redis://, memcache://, stub://"
    );
    let (p, tls) = by_scheme_in(TABLE, "stub").unwrap();
    assert_eq!((p.scheme(tls), p.default_port(tls)), ("stub", Some(7777)));
    assert!(!p.path && !p.pushes && p.steps == TargetKind::Kv);
}

#[test]
fn a_stub_session_runs_on_the_engine_through_the_seam_alone() {
    let answered = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&answered);
    let server = TestServer::start(move |s| {
        let mut w = s.try_clone().unwrap();
        let mut r = BufReader::new(s);
        let mut line = String::new();
        loop {
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let seq = line.trim_end().strip_prefix("STUB ").unwrap_or("?");
            // Counted before the answer goes out: once the client has it, the count is there
            // (counted after, the test could read it before the server thread got to it).
            counter.fetch_add(1, Ordering::Relaxed);
            if w.write_all(format!("OK {seq}\n").as_bytes()).is_err() {
                return;
            }
        }
    });
    // Ends by its count; the duration is only a guard.
    let mut p = plan(server.addr, 2, Mode::PingPong, 60.0);
    p.requests = Some(200);
    let o = run_session::<Stub>(p, Arc::new(AtomicBool::new(false)), |_, _| {}).unwrap();
    let s = &o.outcome.summary;
    assert_eq!(o.end, End::Completed);
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.exchanges.completed, 200, "{:?}", s.exchanges);
    assert_eq!(answered.load(Ordering::Relaxed), 200);
    assert_eq!(s.exchanges.in_flight_at_end, 0);
    assert!(s.exchanges.balanced(), "{:?}", s.exchanges);
}
