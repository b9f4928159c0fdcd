//! MQTT's part of the reports: the same lines in the text summary and the documents.

use super::part::Part;
use crate::fmt::{bytes, thousands};
use barrage_metrics::RunResult;

pub(super) fn part(r: &RunResult) -> Option<Part> {
    if r.summary.totals.mqtt.is_empty() {
        return None;
    }
    Some(Part {
        title: "MQTT",
        lines: lines(r),
        doc: Vec::new(),
    })
}

/// MQTT: CONNACK codes, subscriptions, acknowledgements, deliveries, keep-alives (none for
/// other protocols). The HTML and Markdown reports show the same lines.
fn lines(r: &RunResult) -> Vec<String> {
    let m = &r.summary.totals.mqtt;
    if m.is_empty() {
        return Vec::new();
    }
    let codes = |c: &barrage_metrics::codes::CodeCounts| -> String {
        c.iter()
            .filter(|(code, _)| *code != 0 || !std::ptr::eq(c, &m.connack))
            .map(|(code, n)| format!("0x{code:02x} {}", thousands(n)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let accepted = m.connack.get(0);
    let mut connack = format!("CONNACK accepted {}", thousands(accepted));
    let refused = m.connack.total() - accepted;
    if refused > 0 {
        connack += &format!(", refused {} ({})", thousands(refused), codes(&m.connack));
    }
    let mut lines = vec![connack];
    if m.subscribed + m.sub_refused > 0 {
        lines.push(format!(
            "subscriptions granted {}, refused {}",
            thousands(m.subscribed),
            thousands(m.sub_refused)
        ));
    }
    if m.puback + m.pubrec + m.pubcomp > 0 {
        let mut acks = Vec::new();
        for (name, n) in [
            ("PUBACK", m.puback),
            ("PUBREC", m.pubrec),
            ("PUBCOMP", m.pubcomp),
        ] {
            if n > 0 {
                acks.push(format!("{name} {}", thousands(n)));
            }
        }
        let mut line = format!("acknowledged: {}", acks.join(", "));
        if !m.refused.is_empty() {
            line += &format!("; refusing reason codes {}", codes(&m.refused));
        }
        lines.push(line);
    }
    let got = m.received_total();
    if got > 0 {
        lines.push(format!(
            "delivered by the broker: {} messages (QoS 0 {}, 1 {}, 2 {}), {} of payload",
            thousands(got),
            thousands(m.received[0]),
            thousands(m.received[1]),
            thousands(m.received[2]),
            bytes(m.received_bytes as f64)
        ));
    }
    if m.receive_max_waits > 0 {
        lines.push(format!(
            "waited for the broker's Receive Maximum: {} messages fell due with it all in flight",
            thousands(m.receive_max_waits)
        ));
    }
    if m.pings + m.pongs > 0 {
        lines.push(format!(
            "keep-alive: {} PINGREQ sent, {} PINGRESP received",
            thousands(m.pings),
            thousands(m.pongs)
        ));
    }
    if !m.disconnects.is_empty() {
        lines.push(format!(
            "DISCONNECT from the broker: {}",
            codes(&m.disconnects)
        ));
    }
    lines
}
