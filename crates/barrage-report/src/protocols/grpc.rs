//! gRPC's part of the reports: calls by status, reply messages received.

use super::part::{table, Item, Part};
use crate::fmt::thousands;
use barrage_metrics::RunResult;

pub(super) fn part(r: &RunResult) -> Option<Part> {
    if r.summary.totals.grpc.is_empty() {
        return None;
    }
    Some(Part {
        title: "gRPC",
        lines: lines(r),
        doc: doc(r),
    })
}

/// gRPC: calls by status, messages received.
fn lines(r: &RunResult) -> Vec<String> {
    let g = &r.summary.totals.grpc;
    if g.is_empty() {
        return Vec::new();
    }
    let mut codes: Vec<String> = g
        .status
        .iter()
        .map(|(c, n)| {
            format!(
                "{} {}",
                barrage_metrics::grpc_code_name(u32::from(c)),
                thousands(n)
            )
        })
        .collect();
    if g.no_status > 0 {
        codes.push(format!("no grpc-status {}", thousands(g.no_status)));
    }
    vec![
        format!("calls by status: {}", codes.join(", ")),
        format!("{} reply messages received", thousands(g.messages_received)),
    ]
}

/// The document's table of calls by status.
fn doc(r: &RunResult) -> Vec<Item> {
    let g = &r.summary.totals.grpc;
    let mut out = Vec::new();
    let mut rows: Vec<[String; 3]> = g
        .status
        .iter()
        .map(|(c, n)| {
            [
                c.to_string(),
                barrage_metrics::grpc_code_name(u32::from(c)).to_string(),
                thousands(n),
            ]
        })
        .collect();
    if g.no_status > 0 {
        rows.push(["-".into(), "no grpc-status".into(), thousands(g.no_status)]);
    }
    out.push(table(["grpc-status", "name", "calls"], rows));
    out.push(Item::Para(format!(
        "{} reply messages received.",
        thousands(g.messages_received)
    )));
    out
}
