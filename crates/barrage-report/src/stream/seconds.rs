//! A stream's seconds as they are read back (`report DIR`, `merge`): each line decoded and
//! checked on its own ([`decode_second`]), and the lines checked as a sequence ([`Order`]).
//!
//! Key decision: what a process wrote can be trusted to be in order and in range, but a file
//! can be edited, copied over, cut or mixed with another run's, and a merge must not sum
//! such a file into a result that says `completed`. A second is refused, naming its line and
//! time, when a count in it is beyond what any second can hold (a wrapped, negative count),
//! or when it does not follow the one before on the run's timeline (repeated, reversed,
//! skipped, after the drain). The checks cost a JSON value per line, nothing per exchange.

use barrage_metrics::{Delta, Timeline, DRAIN_KEY};
use std::fmt;

/// The most one second of one process can count of anything (exchanges, bytes, calls):
/// 2^40, about 1.1 x 10^12, well beyond any machine, far below where sums over a long run
/// of many shards could wrap a u64.
pub const MAX_COUNT: u64 = 1 << 40;

/// Why a line of a stream's seconds is refused.
#[derive(Debug)]
pub enum SecondError {
    /// Not a second's JSON.
    Json(serde_json::Error),
    /// A count beyond [`MAX_COUNT`] (`field` is its path in the line), in the second with
    /// `key` (when it says).
    Wrapped {
        field: String,
        value: u64,
        key: Option<u64>,
    },
    /// Out of place on the timeline.
    Order(String),
}

impl fmt::Display for SecondError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecondError::Json(e) => write!(f, "not a recorded second ({e})"),
            SecondError::Wrapped { field, value, .. } => write!(
                f,
                "{field} is {value}, more than one second of one process can count \
                 (at most 2^40): a wrapped (negative) or corrupted count"
            ),
            SecondError::Order(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for SecondError {}

impl SecondError {
    /// The second the refused line says it is, when that much could be read.
    pub fn key(&self) -> Option<u64> {
        match self {
            SecondError::Wrapped { key, .. } => *key,
            _ => None,
        }
    }
}

/// One line of `seconds.jsonl` (or one embedded second), decoded and checked on its own.
pub fn decode_second(line: &str) -> Result<Delta, SecondError> {
    let v: serde_json::Value = serde_json::from_str(line).map_err(SecondError::Json)?;
    if let Some((field, value)) = too_big(&v, &mut String::new()) {
        let key = v.get("key").and_then(serde_json::Value::as_u64);
        return Err(SecondError::Wrapped { field, value, key });
    }
    serde_json::from_value(v).map_err(SecondError::Json)
}

/// The first count beyond [`MAX_COUNT`] in `v`, with its path. Times (`key`, `*_ns`) are
/// not counts: the order checks bound them. Per-message spans (raw message keys) are left
/// to their own decoding; a kept second has none.
fn too_big(v: &serde_json::Value, path: &mut String) -> Option<(String, u64)> {
    match v {
        serde_json::Value::Number(n) => match n.as_u64() {
            Some(x) if x > MAX_COUNT => Some((path.clone(), x)),
            _ => None,
        },
        serde_json::Value::Array(items) => items.iter().enumerate().find_map(|(i, x)| {
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            let found = too_big(x, path);
            path.truncate(len);
            found
        }),
        serde_json::Value::Object(map) => map.iter().find_map(|(k, x)| {
            let time = (path.is_empty() && k == "key") || k.ends_with("_ns");
            if time || k == "msg_spans" {
                return None;
            }
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(k);
            let found = too_big(x, path);
            path.truncate(len);
            found
        }),
        _ => None,
    }
}

/// The order a stream's seconds come in: the segment at 0, then each at the timeline's next
/// boundary after the one before (whole seconds, the warm-up's end, the load's end), then the
/// drain, last. A run that stopped early (a request count, a signal) goes to its drain from
/// any second.
#[derive(Clone, Debug)]
pub struct Order {
    timeline: Timeline,
    /// The key the next non-drain second must have; `None` once the drain came.
    next: Option<u64>,
    /// The key of the last second, if any.
    last: Option<u64>,
    /// How many seconds were checked.
    pub count: u64,
    /// The end of the latest second (ns since the run's start).
    pub end_ns: u64,
}

impl Order {
    pub fn new(timeline: Timeline) -> Order {
        Order {
            timeline,
            next: Some(0),
            last: None,
            count: 0,
            end_ns: 0,
        }
    }

    /// Whether the drain (the last second of a run that ended) came.
    pub fn drained(&self) -> bool {
        self.next.is_none()
    }

    /// Checks the next second of the stream.
    pub fn check(&mut self, d: &Delta) -> Result<(), SecondError> {
        let bad = |why: String| Err(SecondError::Order(why));
        let Some(want) = self.next else {
            return bad("a second after the drain, which is the stream's last".into());
        };
        if d.end_ns < d.start_ns {
            return bad(format!(
                "ends ({} ns) before it starts ({} ns)",
                d.end_ns, d.start_ns
            ));
        }
        if d.key == DRAIN_KEY {
            self.next = None;
        } else if d.key != want {
            return match self.last {
                Some(last) if d.key == last => bad(format!("{} again", at(d.key))),
                Some(last) if d.key < last => {
                    bad(format!("{} comes after {}", at(d.key), at(last)))
                }
                _ if want == DRAIN_KEY => bad(format!(
                    "{} is after the load's end: only the drain can follow {}",
                    at(d.key),
                    self.last.map_or("the start".into(), at)
                )),
                _ => bad(format!(
                    "{} comes where {} should: the seconds between are missing",
                    at(d.key),
                    at(want)
                )),
            };
        } else {
            let next = self.timeline.next_boundary(d.key);
            if d.start_ns != d.key || d.end_ns > next {
                return bad(format!(
                    "spans {} to {} ns, not its own segment ({} to {} ns)",
                    d.start_ns, d.end_ns, d.key, next
                ));
            }
            // A segment that would start at the load's end is the drain.
            let load_over = self.timeline.load_end_ns.is_some_and(|e| next >= e);
            self.next = Some(if load_over { DRAIN_KEY } else { next });
        }
        self.last = Some(d.key);
        self.count += 1;
        self.end_ns = self.end_ns.max(d.end_ns.min(u64::MAX / 2));
        Ok(())
    }
}

/// A second's key as it reads: `second 12 (12.0 s)`, `the drain`.
pub fn at(key: u64) -> String {
    if key == DRAIN_KEY {
        "the drain".to_string()
    } else {
        format!("the second at {}", clock(key))
    }
}

/// `11h02m05s`, `2m05s`, `5.2s`.
pub fn clock(ns: u64) -> String {
    let s = ns / 1_000_000_000;
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, _) => format!("{:.1}s", ns as f64 / 1e9),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn sec(key: u64, start: u64, end: u64) -> Delta {
        Delta {
            key,
            start_ns: start,
            end_ns: end,
            ..Delta::default()
        }
    }

    fn run(timeline: Timeline, seconds: &[Delta]) -> Result<Order, String> {
        let mut o = Order::new(timeline);
        for d in seconds {
            o.check(d).map_err(|e| e.to_string())?;
        }
        Ok(o)
    }

    const TL: Timeline = Timeline {
        warmup_ns: 1_500_000_000,
        load_end_ns: Some(3 * S),
    };

    #[test]
    fn a_stream_in_order_passes_through_warmup_and_load_end_to_its_drain() {
        let o = run(
            TL,
            &[
                sec(0, 0, S),
                sec(S, S, 1_500_000_000),
                sec(1_500_000_000, 1_500_000_000, 2 * S),
                sec(2 * S, 2 * S, 3 * S),
                sec(DRAIN_KEY, 3 * S, 3 * S + 5),
            ],
        )
        .unwrap();
        assert!(o.drained());
        assert_eq!(o.count, 5);
        // A run stopped early goes to its drain from any second.
        let o = run(TL, &[sec(0, 0, 700), sec(DRAIN_KEY, 700, 900)]).unwrap();
        assert!(o.drained());
    }

    #[test]
    fn repeated_reversed_skipped_and_late_seconds_are_refused_naming_the_second() {
        let tl = Timeline {
            warmup_ns: 0,
            load_end_ns: Some(3 * S),
        };
        let cases: [(&[Delta], &str); 7] = [
            (&[sec(0, 0, S), sec(0, 0, S)], "the second at 0.0s again"),
            (
                &[sec(0, 0, S), sec(S, S, 2 * S), sec(0, 0, S)],
                "the second at 0.0s comes after the second at 1.0s",
            ),
            (
                &[sec(0, 0, S), sec(2 * S, 2 * S, 3 * S)],
                "the second at 2.0s comes where the second at 1.0s should",
            ),
            (&[sec(S, S, 2 * S)], "where the second at 0.0s should"),
            (
                &[sec(DRAIN_KEY, 0, 1), sec(0, 0, S)],
                "a second after the drain",
            ),
            (&[sec(0, 0, 2 * S)], "not its own segment"),
            (&[sec(0, S, 0)], "ends (0 ns) before it starts"),
        ];
        for (seconds, want) in cases {
            let e = run(tl, seconds).unwrap_err();
            assert!(e.contains(want), "{want}: {e}");
        }
        let e = run(
            tl,
            &[
                sec(0, 0, S),
                sec(S, S, 2 * S),
                sec(2 * S, 2 * S, 3 * S),
                sec(3 * S, 3 * S, 4 * S),
            ],
        )
        .unwrap_err();
        assert!(e.contains("after the load's end"), "{e}");
    }

    #[test]
    fn a_wrapped_count_is_refused_naming_its_field() {
        let mut d = sec(0, 0, S);
        d.counters.sent = 5;
        d.lag_max_ns = u64::MAX / 4; // a time, not a count
        let line = serde_json::to_string(&d).unwrap();
        assert_eq!(decode_second(&line).unwrap(), d);
        // 0 - 4, wrapped.
        d.counters
            .errors
            .add(barrage_metrics::ErrorClass::Reset, u64::MAX - 3);
        let line = serde_json::to_string(&d).unwrap();
        let e = decode_second(&line).unwrap_err().to_string();
        assert!(
            e.starts_with("counters.errors.reset is 18446744073709551612"),
            "{e}"
        );
        let e = decode_second("{\"key\": 0").unwrap_err().to_string();
        assert!(e.starts_with("not a recorded second"), "{e}");
    }
}
