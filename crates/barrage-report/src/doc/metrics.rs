//! The core figures of a run: throughput, latency, errors, connections, exchanges and
//! network IO, as tables.

use super::{table, Block};
use crate::fmt::{bytes, duration_us, real, step_failures, step_figures, thousands};
use crate::protocols::Item;
use barrage_metrics::{LatencyBasis, LatencyStats, RunResult};

fn us(v: u64) -> String {
    duration_us(v as f64)
}

fn latency_row(name: &str, l: &LatencyStats) -> [String; 8] {
    [
        name.to_string(),
        thousands(l.count),
        us(l.p50),
        us(l.p90),
        us(l.p99),
        us(l.p999),
        us(l.max),
        duration_us(l.mean),
    ]
}

pub(super) fn metrics(r: &RunResult) -> Vec<Block> {
    let s = &r.summary;
    let h = barrage_metrics::figures::headline_rate(r, None);
    let mut rows = Vec::new();
    if let Some((from, to)) = h.steady {
        rows.push([
            "steady state (the headline)".to_string(),
            real(h.rps),
            format!("{from:.0} s to {to:.0} s"),
        ]);
    }
    rows.push([
        if h.steady.is_some() {
            "average, ramp included".to_string()
        } else {
            "average (the headline)".to_string()
        },
        real(s.rps.avg),
        format!(
            "the measured {}: {} requests",
            duration_us(s.duration_s * 1e6),
            thousands(s.requests)
        ),
    ]);
    rows.push([
        "best second".into(),
        real(s.rps.peak),
        "the best full second".into(),
    ]);
    rows.push([
        "last second".into(),
        real(s.rps.current),
        "the last full second".into(),
    ]);
    let mut out = vec![
        Block::Heading("Throughput".into()),
        table(["", "req/s", "window"], rows),
        Block::Heading("Latency".into()),
    ];
    let l = &s.latency_us;
    if l.count == 0 {
        out.push(Block::Para("No exchange completed.".into()));
    } else {
        let mut rows = vec![latency_row("exchange", l)];
        let extra = [
            ("first byte", s.ttfb_us.as_ref()),
            ("streamed message (from its call)", s.stream_msg_us.as_ref()),
            ("connect", Some(&s.connect_us)),
            ("TLS handshake", s.tls_us.as_ref()),
            (
                if !s.totals.mqtt.is_empty() {
                    "MQTT connect (CONNACK, SUBACK)"
                } else if s.totals.h2.is_empty() {
                    "upgrade"
                } else {
                    "h2 setup"
                },
                s.handshake_us.as_ref(),
            ),
        ];
        for (name, stats) in extra {
            if let Some(st) = stats.filter(|st| st.count > 0) {
                rows.push(latency_row(name, st));
            }
        }
        out.push(table(
            ["", "count", "p50", "p90", "p99", "p99.9", "max", "mean"],
            rows,
        ));
        out.push(Block::Para(
            match s.latency_basis {
                LatencyBasis::IntendedSend => {
                    "Latency is measured from the intended send time (open loop, corrected \
                     for coordinated omission)."
                }
                LatencyBasis::ActualSend => {
                    "Latency is service time, measured from the actual send (closed loop)."
                }
            }
            .to_string(),
        ));
    }
    out.push(Block::Heading("Errors".into()));
    if let Some(rate) = s.error_rate().filter(|r| *r > 0.0) {
        let failed = s.failed_requests.total();
        out.push(Block::Para(format!(
            "{} of {} requests did not complete ({:.3} %): the error rate.",
            thousands(failed),
            thousands(s.requests + failed),
            rate * 100.0
        )));
        let rows: Vec<[String; 2]> = s
            .failed_requests
            .nonzero()
            .map(|(c, n)| [c.as_str().to_string(), thousands(n)])
            .collect();
        out.push(table(["failed requests by reason", "count"], rows));
    }
    if s.errors.total() == 0 {
        out.push(Block::Para("No error events.".into()));
    } else {
        let mut rows: Vec<[String; 2]> = s
            .errors
            .nonzero()
            .map(|(c, n)| [c.as_str().to_string(), thousands(n)])
            .collect();
        rows.push(["total".into(), thousands(s.errors.total())]);
        out.push(table(["error events by class", "count"], rows));
    }
    if !s.totals.reasons.is_empty() {
        let rows = s
            .totals
            .reasons
            .iter()
            .map(|r| {
                [
                    r.class.as_str().to_string(),
                    r.reason.clone(),
                    format!("{:.3} s", r.first_ms as f64 / 1000.0),
                ]
            })
            .collect();
        out.push(table(["class", "what the error said", "first seen"], rows));
    }
    let t = &s.totals;
    if !t.status.is_empty() {
        out.push(Block::Heading("HTTP status codes".into()));
        let rows = t
            .status
            .iter()
            .map(|(c, n)| [c.to_string(), thousands(n)])
            .collect();
        out.push(table(["status", "count"], rows));
    }
    if !t.commands.is_empty() {
        out.push(Block::Heading("Commands".into()));
        let rows = t
            .commands
            .iter()
            .enumerate()
            .map(|(i, k)| {
                [
                    r.config.commands.get(i).cloned().unwrap_or_default(),
                    thousands(k.sent),
                    thousands(k.completed),
                    thousands(k.misses),
                    thousands(k.errors),
                ]
            })
            .collect();
        out.push(table(
            ["command", "sent", "completed", "misses", "error replies"],
            rows,
        ));
    }
    if !s.steps.is_empty() && r.config.users.is_some() {
        out.push(Block::Heading("Steps".into()));
        let rows: Vec<[String; 9]> = s
            .steps
            .iter()
            .map(|k| {
                let [sent, completed, failed, not_sent, p50, p99, max] = step_figures(k);
                let by = step_failures(k);
                [
                    format!("{}{}", k.name, if k.open_loop { " (every)" } else { "" }),
                    sent,
                    completed,
                    failed,
                    not_sent,
                    p50,
                    p99,
                    max,
                    if by.is_empty() {
                        "-".into()
                    } else {
                        by.join(", ")
                    },
                ]
            })
            .collect();
        out.push(table(
            [
                "step",
                "sent",
                "completed",
                "failed",
                "not sent",
                "p50",
                "p99",
                "max",
                "failed by",
            ],
            rows,
        ));
    }
    if s.steps.iter().any(|k| k.server_us.is_some()) || s.server_us.is_some() {
        out.push(Block::Heading(
            "Server time next to client time (Server-Timing)".into(),
        ));
        let us = |v: u64| duration_us(v as f64);
        let mut rows: Vec<[String; 7]> = Vec::new();
        if let (Some(sv), Some(g)) = (&s.server_us, &s.server_gap_us) {
            let l = &s.latency_us;
            rows.push([
                "all".into(),
                us(sv.p50),
                us(sv.p99),
                us(l.p50),
                us(l.p99),
                us(g.p50),
                us(g.p99),
            ]);
        }
        for k in &s.steps {
            if let (Some(sv), Some(l), Some(g)) = (&k.server_us, &k.latency_us, &k.server_gap_us) {
                rows.push([
                    k.name.clone(),
                    us(sv.p50),
                    us(sv.p99),
                    us(l.p50),
                    us(l.p99),
                    us(g.p50),
                    us(g.p99),
                ]);
            }
        }
        out.push(table(
            [
                "route / step",
                "server p50",
                "server p99",
                "client p50",
                "client p99",
                "difference p50",
                "difference p99",
            ],
            rows,
        ));
    }
    if let Some(b) = &s.broadcast {
        out.push(Block::Heading("Broadcast (one-to-many delivery)".into()));
        let c = &b.c;
        let lat = |l: &Option<barrage_metrics::LatencyStats>| {
            l.as_ref().map_or("-".to_string(), |l| {
                format!(
                    "p50 {}, p99 {}, max {}",
                    duration_us(l.p50 as f64),
                    duration_us(l.p99 as f64),
                    duration_us(l.max as f64)
                )
            })
        };
        out.push(table(
            ["figure", "value"],
            vec![
                ["messages sent".into(), thousands(c.sent)],
                ["deliveries expected".into(), thousands(c.expected)],
                ["deliveries received".into(), thousands(c.delivered)],
                [
                    "reach".into(),
                    b.reach
                        .map_or("-".into(), |x| format!("{:.2} %", x * 100.0)),
                ],
                [
                    "not received (expected - received)".into(),
                    thousands(b.missing),
                ],
                ["lost (gaps)".into(), thousands(b.lost)],
                ["late (reordered)".into(), thousands(c.late)],
                ["duplicates".into(), thousands(c.duplicates)],
                ["own copies".into(), thousands(c.own)],
                [
                    "rooms (users that heard each other)".into(),
                    b.rooms.as_ref().map_or("-".into(), |r| {
                        format!("{} of {} users", thousands(r.count), thousands(r.users))
                    }),
                ],
                [
                    "room sizes (rooms of each size)".into(),
                    b.rooms.as_ref().map_or("-".into(), crate::fmt::room_sizes),
                ],
                [
                    if b.remote_timed() {
                        "from other processes (timed: one host's clock)".into()
                    } else if b.remote_clock_us.is_some() {
                        "from other processes (timed on two clocks)".into()
                    } else {
                        "from other processes (counted, not timed)".into()
                    },
                    thousands(c.remote),
                ],
                ["latency to others".into(), lat(&b.peer_us)],
                [
                    match b.remote_clock_us {
                        Some(us) => format!(
                            "latency from other processes (two clocks, within {})",
                            duration_us(us as f64)
                        ),
                        None => "latency from other processes (not timed)".into(),
                    },
                    lat(&b.remote_us),
                ],
                ["latency of the own copy".into(), lat(&b.own_us)],
                ["per message: first recipient".into(), lat(&b.first_us)],
                ["per message: last recipient".into(), lat(&b.last_us)],
                [
                    "per message: spread (last - first)".into(),
                    lat(&b.spread_us),
                ],
            ],
        ));
    }
    // Each protocol's own counters (HTTP/2, gRPC, MQTT, ...): `crate::protocols`.
    for part in crate::protocols::parts(r) {
        out.push(Block::Heading(part.title.into()));
        if part.doc.is_empty() {
            out.extend(part.lines.into_iter().map(|l| Block::Para(format!("{l}."))));
        }
        for item in part.doc {
            out.push(match item {
                Item::Para(p) => Block::Para(p),
                Item::Table { head, rows } => Block::Table { head, rows },
            });
        }
    }
    if !t.ws_close.is_empty() {
        out.push(Block::Heading("WebSocket close codes".into()));
        let rows = t
            .ws_close
            .iter()
            .map(|(c, n)| [c.to_string(), thousands(n)])
            .collect();
        out.push(table(["code", "count"], rows));
    }
    let c = &s.connections;
    let x = &s.exchanges;
    out.push(Block::Heading("Connections".into()));
    out.push(table(
        [
            "target",
            "open at end",
            "peak",
            "attempts",
            "succeeded",
            "failed",
            "closed by peer",
        ],
        vec![[
            c.target,
            c.open,
            c.peak,
            c.attempts,
            c.succeeded,
            c.failed,
            c.closed_by_peer,
        ]
        .map(thousands)],
    ));
    out.push(Block::Heading("Exchanges (whole run)".into()));
    out.push(table(
        [
            "sent",
            "completed",
            "failed",
            "in flight at end",
            "not sent",
            "unexpected replies",
        ],
        vec![[
            x.sent,
            x.completed,
            x.failed,
            x.in_flight_at_end,
            x.not_sent,
            x.unexpected_replies,
        ]
        .map(thousands)],
    ));
    out
}

pub(super) fn network_io(r: &RunResult) -> Vec<Block> {
    let io = &r.summary.io;
    let t = &r.summary.totals;
    let per_io = |b: u64, n: u64| {
        if n == 0 {
            "-".to_string()
        } else {
            bytes(b as f64 / n as f64)
        }
    };
    let row = |name: &str, calls, calls_s, b, b_s, total_calls, total_b| {
        [
            name.to_string(),
            thousands(calls),
            real(calls_s),
            bytes(b as f64),
            bytes(b_s),
            per_io(b, calls),
            thousands(total_calls),
            bytes(total_b as f64),
        ]
    };
    vec![
        table(
            [
                "",
                "calls",
                "calls/s",
                "bytes",
                "bytes/s",
                "bytes per IO",
                "calls, whole run",
                "bytes, whole run",
            ],
            vec![
                row(
                    "reads",
                    io.reads,
                    io.reads_per_s,
                    io.bytes_read,
                    io.bytes_read_per_s,
                    t.reads,
                    t.bytes_read,
                ),
                row(
                    "writes",
                    io.writes,
                    io.writes_per_s,
                    io.bytes_written,
                    io.bytes_written_per_s,
                    t.writes,
                    t.bytes_written,
                ),
            ],
        ),
        Block::Para(
            "Calls, bytes and rates cover the measured window; the whole-run columns include \
             the warm-up and the drain."
                .into(),
        ),
    ]
}
