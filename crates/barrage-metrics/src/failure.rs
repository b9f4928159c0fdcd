//! Whether a run plainly failed, and the likeliest cause in one line.
//!
//! A run "plainly failed" when requests were tried after the warm-up and none completed, or
//! at least [`NEARLY_ALL`] of them failed: a summary with a 100 % error rate must not end
//! like a run that worked (the exit policy, `crates/barrage/src/run/ending.rs`). The cause is
//! the class most requests failed by, what its first error said (`totals.reasons`), and a
//! hint where the figures point at one (every response a 426: the server wants WebSocket).

use crate::aggregate::{Connections, Summary};
use crate::error::ErrorClass;
use crate::readiness::{Aspect, Grade, Row};

/// The share of failed requests at or above which a run failed (not merely had errors).
pub const NEARLY_ALL: f64 = 0.99;

/// Why the run failed, in one line, or `None` when it served (or tried nothing).
pub fn plainly_failed(s: &Summary) -> Option<String> {
    let failed = s.failed_requests.total();
    let tried = s.requests + failed;
    if tried == 0 || (s.requests > 0 && (failed as f64) < NEARLY_ALL * tried as f64) {
        return None;
    }
    let head = if s.requests == 0 {
        format!("no request completed: all {failed} failed")
    } else {
        format!(
            "{failed} of {tried} requests failed ({:.1} %)",
            failed as f64 * 100.0 / tried as f64
        )
    };
    let (top, n) = s
        .failed_requests
        .nonzero()
        .max_by_key(|(c, n)| (*n, std::cmp::Reverse(*c)))
        .expect("failed > 0");
    let mut line = format!("{head}, {n} as {top}");
    if let Some(r) = s.totals.reasons.first(top) {
        line += &format!(" ({r})");
    }
    if let Some(h) = hint(s, top) {
        line += &format!(": {h}");
    }
    Some(line)
}

/// The readiness aspects whose `FAIL` fails a run without `--threshold` (exit 3): what the
/// server got wrong. Performance, stability, resource use and memory judge capacity (and a
/// busy machine moves them), so they inform and do not gate.
pub const GATING: [Aspect; 3] = [Aspect::Errors, Aspect::Correctness, Aspect::Connections];

/// The gating readiness rows that failed, in one line, or `None`. The connections row
/// gates only when barrage attempted every planned connection: a generator too slow to open
/// them all (a starved machine, an emulator) is not the server's fault.
pub fn readiness_failed(rows: &[Row], c: &Connections) -> Option<String> {
    let all_tried = c.attempts >= c.target;
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| r.status == Grade::Fail && GATING.contains(&r.aspect))
        .filter(|r| r.aspect != Aspect::Connections || all_tried)
        .map(|r| format!("{}: {}", r.aspect.as_str(), r.figure))
        .collect();
    (!failed.is_empty()).then(|| format!("readiness FAIL, {}", failed.join("; ")))
}

/// What the figures say about a run whose requests failed mostly as `top`.
fn hint(s: &Summary, top: ErrorClass) -> Option<String> {
    let t = &s.totals;
    match top {
        ErrorClass::UnexpectedStatus => {
            let (code, _) = t.status.iter().max_by_key(|(c, n)| (*n, u16::MAX - c))?;
            Some(match code {
                426 => "the server answered 426 Upgrade Required: it wants a WebSocket \
                            (ws://) or another protocol on this port"
                    .to_string(),
                404 => "the server answered 404 Not Found: check the URL's path".into(),
                401 | 403 => format!(
                    "the server answered {code}: it wants credentials (-H 'Authorization: ...')"
                ),
                405 => "the server answered 405 Method Not Allowed: check --method".into(),
                505 => "the server answered 505: it does not speak this HTTP version".into(),
                c => format!("most responses were {c} (--expect-status accepts others)"),
            })
        }
        ErrorClass::Timeout if t.bytes_read == 0 => Some(
            "the server accepted the connections and never answered: is it the server this \
             protocol expects, or is it stuck?"
                .into(),
        ),
        ErrorClass::Timeout => {
            Some("replies did not come within --timeout: the server is too slow for it".into())
        }
        ErrorClass::ClosedByPeer | ErrorClass::Reset => Some(
            "the server closed the connections: does it speak this protocol on this port?".into(),
        ),
        ErrorClass::NotSent => Some(
            "the messages fell due faster than they could be sent: the server did not keep \
             up with --rate (or raise --connections)"
                .into(),
        ),
        ErrorClass::Mismatch => Some("the replies differed from what --verify expects".into()),
        ErrorClass::GrpcUnimplemented => Some(
            "the server does not serve this method: check the URL's package.Service/Method".into(),
        ),
        ErrorClass::GrpcUnauthenticated | ErrorClass::GrpcPermissionDenied => {
            Some("the server wants credentials (-H 'authorization: ...' as metadata)".into())
        }
        ErrorClass::GrpcInvalidArgument => {
            Some("the server refused the request message: check --data".into())
        }
        ErrorClass::ReplyError => {
            Some("the server answered every request with an error reply".into())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(completed: u64, failed: &[(ErrorClass, u64)]) -> Summary {
        let mut s = Summary {
            requests: completed,
            ..Summary::default()
        };
        for &(c, n) in failed {
            s.failed_requests.add(c, n);
        }
        s
    }

    #[test]
    fn a_run_fails_when_nothing_or_nearly_nothing_completed() {
        assert_eq!(plainly_failed(&summary(0, &[])), None);
        assert_eq!(plainly_failed(&summary(100, &[])), None);
        // 98 % failed: a bad run, not a failed one (the readiness verdict judges it).
        assert_eq!(
            plainly_failed(&summary(2, &[(ErrorClass::Timeout, 98)])),
            None
        );
        let line = plainly_failed(&summary(1, &[(ErrorClass::Timeout, 99)])).unwrap();
        assert!(
            line.starts_with("99 of 100 requests failed (99.0 %), 99 as timeout"),
            "{line}"
        );
        let mut s = summary(0, &[(ErrorClass::Protocol, 18), (ErrorClass::Reset, 2)]);
        s.totals
            .reasons
            .note(ErrorClass::Protocol, "malformed HTTP status line", 3);
        assert_eq!(
            plainly_failed(&s).unwrap(),
            "no request completed: all 20 failed, 18 as protocol (malformed HTTP status line)"
        );
    }

    #[test]
    fn only_what_the_server_got_wrong_gates_the_exit_code() {
        let row = |aspect, status| Row {
            aspect,
            status,
            figure: "40.0 %".into(),
            rule: String::new(),
        };
        let judged = |rows: Vec<Row>, attempts: u64| {
            let c = Connections {
                target: 10,
                attempts,
                ..Connections::default()
            };
            readiness_failed(&rows, &c)
        };
        let rows = vec![
            row(Aspect::Stability, Grade::Fail),
            row(Aspect::ResourceUse, Grade::Fail),
            row(Aspect::Errors, Grade::Warn),
        ];
        assert_eq!(judged(rows, 10), None);
        let rows = || {
            vec![
                row(Aspect::Performance, Grade::Fail),
                row(Aspect::Errors, Grade::Fail),
                row(Aspect::Connections, Grade::Fail),
            ]
        };
        assert_eq!(
            judged(rows(), 10).unwrap(),
            "readiness FAIL, errors: 40.0 %; connections: 40.0 %"
        );
        // barrage opened 4 of its 10 connections: the server was not asked for the rest.
        assert_eq!(judged(rows(), 4).unwrap(), "readiness FAIL, errors: 40.0 %");
    }

    #[test]
    fn statuses_and_silence_name_their_likely_cause() {
        let mut s = summary(0, &[(ErrorClass::UnexpectedStatus, 7)]);
        s.totals.status.add(426, 7);
        assert!(plainly_failed(&s).unwrap().contains("ws://"));
        let s = summary(0, &[(ErrorClass::Timeout, 7)]);
        assert!(plainly_failed(&s).unwrap().contains("never answered"));
    }
}
