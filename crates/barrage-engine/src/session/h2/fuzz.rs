//! The fuzz harness's entry ([`fuzz_feed`], for `fuzz/fuzz_targets/h2_frames.rs`): a
//! session past its handshake fed what a server might send, with the invariants checked.

use super::{Cfg, H2};
use crate::h2::frame::{self, kind};
use crate::h2::H2Request;
use crate::message::Fill;
use crate::plan::{GrpcMode, StatusSet};
use crate::session::{Msg, Out, Owed, Replies, Session};
use barrage_metrics::Recorder;

/// What [`fuzz_feed`] sets up: `n` requests in flight, gRPC calls (server-streaming or not)
/// with `grpc`, else GETs, or POSTs of `upload` bytes when not 0 (bodies that wait for the
/// server's windows and go out as its WINDOW_UPDATEs and SETTINGS open them); with `owe`,
/// every answer is kept as owed (as when the socket is full), drained after every other
/// part.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct FuzzCase {
    pub n: usize,
    pub grpc: Option<bool>,
    pub upload: usize,
    pub owe: bool,
}

/// For the fuzz target (`fuzz/fuzz_targets/h2_frames.rs`): a session past its handshake
/// (the server's SETTINGS allowed `n` streams) with the case's requests in flight, fed
/// `parts` of what a server sent. Returns the exchanges (completed, failed, still in
/// flight) and the request body bytes written in DATA frames, or the protocol error; every
/// exchange must be in exactly one of the three, and no more body than the requests' goes
/// out (checked here: a panic).
#[doc(hidden)]
pub fn fuzz_feed(parts: &[&[u8]], case: FuzzCase) -> Result<(u64, u64, u64, u64), String> {
    let FuzzCase {
        n,
        grpc,
        upload,
        owe,
    } = case;
    let body = vec![b'u'; upload];
    use crate::exchange::{Exchange, Exchanges};
    use crate::pacer::Rng;
    let mut request = H2Request::new(&crate::h2::H2RequestSpec {
        method: if grpc.is_some() || upload > 0 {
            "POST"
        } else {
            "GET"
        },
        scheme: "http",
        path: "/",
        authority: "fuzz",
        headers: &[],
        body: (upload > 0 && grpc.is_none()).then_some(&body[..]),
        content_type: grpc.map(|_| "application/grpc"),
        te_trailers: grpc.is_some(),
    })
    .map_err(|e| e.to_string())?;
    if grpc.is_some() {
        request =
            request.with_grpc_messages(vec![crate::grpc::PbTemplate::bytes(vec![8, 1])], false);
    }
    let cfg = Cfg {
        request,
        expect: StatusSet::default(),
        streams: n as u32,
        grpc: grpc.map(|streaming| GrpcMode {
            streaming,
            gzip: false,
        }),
        settings: crate::h2::H2Settings::default(),
    };
    let mut s = H2::new(&cfg);
    let (mut ex, mut rec, mut rng, mut ctl) = (
        Exchanges::default(),
        Recorder::new(),
        Rng::new(1),
        Vec::new(),
    );
    let mut settings = Vec::new();
    frame::put_settings(
        &mut settings,
        &[(frame::setting::MAX_CONCURRENT_STREAMS, n as u32)],
    );
    let mut buf = Vec::new();
    let mut data_out = 0u64;
    let mut feed = |s: &mut H2, ex: &mut Exchanges, rec: &mut Recorder, data: &[u8]| {
        let mut r = Replies::new(ex, None, rec, 1_000_000, &[], true, &mut ctl, &mut rng);
        let res = s.input(&cfg, data, &mut r).map_err(|e| e.why);
        data_out += data_bytes(&ctl);
        if owe && res.is_ok() {
            s.owe(&ctl);
            assert!(s.st.owed_data <= s.st.owed.len());
        }
        ctl.clear();
        res
    };
    feed(&mut s, &mut ex, &mut rec, &settings)?;
    let mut rng = Rng::new(2);
    for k in 0..n as u64 {
        let key = 2 * k + 1;
        let mut out = Out {
            conn: 0,
            buf: &mut buf,
            key,
            rng: &mut rng,
            keep: None,
            streaming: false,
        };
        s.render(
            &cfg,
            Msg::Load,
            Fill {
                conn: 0,
                seq: k,
                ts_us: 0,
            },
            &mut out,
        );
        ex.push(Exchange::new(key, 0, 0, 0, 0));
        rec.in_flight += 1;
    }
    let mut drained = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        feed(&mut s, &mut ex, &mut rec, p)?;
        if owe && k % 2 == 1 {
            drained.clear();
            s.drain(&mut drained);
        }
    }
    let data_out = data_out + data_bytes(&buf);
    // Each body at most twice: once more after REFUSED_STREAM. A gRPC call's is its one
    // message (2 bytes and the 5-byte prefix).
    let each = if grpc.is_some() { 7 } else { upload };
    assert!(
        data_out <= 2 * (n * each) as u64,
        "more body than the requests'"
    );
    let c = &rec.counters;
    let failed = c.failed_by.total();
    Ok((c.completed, failed, rec.in_flight, data_out))
}

/// The payload bytes of the DATA frames in `b` (whole frames, as this side writes them).
fn data_bytes(b: &[u8]) -> u64 {
    let (mut at, mut n) = (0, 0);
    while at + frame::HEAD <= b.len() {
        let len = u32::from_be_bytes([0, b[at], b[at + 1], b[at + 2]]) as usize;
        if b[at + 3] == kind::DATA {
            n += len as u64;
        }
        at += frame::HEAD + len;
    }
    n
}
