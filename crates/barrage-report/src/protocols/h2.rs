//! HTTP/2's part of the reports: connections by protocol, streams asked for and allowed,
//! header compression, frames, resets and GOAWAYs by code.

use super::part::{table, Item, Part};
use crate::fmt::{bytes, thousands};
use barrage_metrics::RunResult;

pub(super) fn part(r: &RunResult) -> Option<Part> {
    let h = &r.summary.totals.h2;
    if h.is_empty() {
        return None;
    }
    Some(Part {
        title: "HTTP/2",
        lines: lines(r),
        doc: doc(r),
    })
}

/// HTTP/2: the connections by protocol, the streams asked for and allowed, header
/// compression, frames, resets and GOAWAYs by code (none for other protocols).
fn lines(r: &RunResult) -> Vec<String> {
    let h = &r.summary.totals.h2;
    if h.is_empty() {
        return Vec::new();
    }
    let mut lines = Vec::new();
    let mut conns = format!("{} connections", thousands(h.connections));
    if h.http1_connections > 0 {
        conns += &format!(
            " ({} more chose HTTP/1.1 by ALPN)",
            thousands(h.http1_connections)
        );
    }
    let asked = match r.config.streams.unwrap_or(1) {
        0 => "streams per connection as the server allows".to_string(),
        n => format!("streams {} per connection", thousands(u64::from(n))),
    };
    let granted = match h.streams_granted {
        0 => "no limit from the server".to_string(),
        n => format!("the server allows {}", thousands(n)),
    };
    lines.push(format!("{conns}; {asked}, {granted}"));
    if h.header_bytes > 0 {
        lines.push(format!(
            "response headers {} as sent (HPACK), {} as HTTP/1.1 would write them ({:.1}x); frames {} read, {} written",
            bytes(h.header_bytes as f64),
            bytes(h.header_bytes_plain as f64),
            h.header_bytes_plain as f64 / h.header_bytes as f64,
            thousands(h.frames_read),
            thousands(h.frames_written)
        ));
    }
    let codes = |c: &barrage_metrics::CodeCounts| -> Vec<String> {
        c.iter()
            .map(|(k, n)| {
                let name = barrage_metrics::h2_code_name(u32::from(k));
                format!("{name} {}", thousands(n))
            })
            .collect()
    };
    if !h.resets.is_empty() {
        let mut l = format!("streams reset: {}", codes(&h.resets).join(", "));
        if h.refused_retried > 0 {
            l += &format!(" ({} refused sent again)", thousands(h.refused_retried));
        }
        lines.push(l);
    }
    if !h.goaways.is_empty() {
        lines.push(format!("GOAWAY: {}", codes(&h.goaways).join(", ")));
    }
    if h.stream_waits > 0 {
        lines.push(format!(
            "waited for a stream: {} messages fell due with every allowed stream in flight",
            thousands(h.stream_waits)
        ));
    }
    lines
}

/// The document's tables: one row of figures, and the codes of resets and GOAWAYs.
fn doc(r: &RunResult) -> Vec<Item> {
    let h = &r.summary.totals.h2;
    let mut out = Vec::new();
    let granted = match h.streams_granted {
        0 => "no limit".to_string(),
        n => thousands(n),
    };
    let ratio = if h.header_bytes > 0 {
        format!(
            "{:.1}x",
            h.header_bytes_plain as f64 / h.header_bytes as f64
        )
    } else {
        "-".into()
    };
    out.push(table(
        [
            "HTTP/2 connections",
            "chose HTTP/1.1",
            "streams per connection",
            "server allows",
            "response headers (HPACK)",
            "as HTTP/1.1",
            "compression",
            "frames read",
            "frames written",
        ],
        vec![[
            thousands(h.connections),
            thousands(h.http1_connections),
            match r.config.streams.unwrap_or(1) {
                0 => "as the server allows".to_string(),
                n => n.to_string(),
            },
            granted,
            thousands(h.header_bytes),
            thousands(h.header_bytes_plain),
            ratio,
            thousands(h.frames_read),
            thousands(h.frames_written),
        ]],
    ));
    let mut codes: Vec<u16> = h
        .resets
        .iter()
        .chain(h.goaways.iter())
        .map(|(c, _)| c)
        .collect();
    codes.sort_unstable();
    codes.dedup();
    if !codes.is_empty() {
        let rows = codes
            .into_iter()
            .map(|c| {
                [
                    barrage_metrics::h2_code_name(u32::from(c)).to_string(),
                    thousands(h.resets.get(c)),
                    thousands(h.goaways.get(c)),
                ]
            })
            .collect();
        out.push(table(["error code", "streams reset", "GOAWAY"], rows));
    }
    if h.stream_waits > 0 {
        out.push(Item::Para(format!(
            "Waited for a stream: {} messages fell due with every stream the server allows \
             in flight (their latency counts the wait).",
            thousands(h.stream_waits)
        )));
    }
    if h.refused_retried > 0 {
        out.push(Item::Para(format!(
            "{} refused streams were sent again once.",
            thousands(h.refused_retried)
        )));
    }
    out
}
