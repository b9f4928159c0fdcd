//! MQTT's step keys: `topic` (a send or fields step publishes to it), `subscribe`,
//! `unsubscribe`, `qos`, `retain`; checked against each other (against the target: by MQTT's
//! row of `model::KEY_TABLES`).

use super::{CheckResult, Part, StepsCheck};
use crate::at::At;
use crate::model::Step;
use crate::protocol::TargetKind;

impl StepsCheck<'_> {
    pub(super) fn mqtt(&mut self, s: &At<Step>, key: &str, kind: &str, part: Part) -> CheckResult {
        let cx = self.cx;
        if self.target != TargetKind::Mqtt {
            return Ok(());
        }
        let m = &s.mqtt;
        let publish = matches!(kind, "send" | "fields");
        if publish {
            let Some(t) = &m.topic else {
                return Err(cx.err(
                    s.line,
                    key,
                    format!("the target is mqtt://: a {kind} step publishes to a topic; add topic = \"room/{{room}}\""),
                ));
            };
            if t.is_empty() {
                return Err(cx.err(
                    t.line,
                    format!("{key}.topic"),
                    "is empty; a topic has at least one character",
                ));
            }
            if let Some(w) = t.chars().find(|c| matches!(c, '+' | '#')) {
                return Err(cx.err(
                    t.line,
                    format!("{key}.topic"),
                    format!("'{w}' is a wildcard: a publish names one topic (wildcards are for subscribe)"),
                ));
            }
            self.template(t, &format!("{key}.topic"), part)?;
        } else if let Some(t) = &m.topic {
            return Err(cx.err(
                t.line,
                format!("{key}.topic"),
                "goes with a send (or fields) step: the topic its message is published to",
            ));
        }
        for (k, f) in [("subscribe", &m.subscribe), ("unsubscribe", &m.unsubscribe)] {
            if let Some(f) = f {
                if f.is_empty() {
                    return Err(cx.err(
                        f.line,
                        format!("{key}.{k}"),
                        "is empty; give a topic filter",
                    ));
                }
                if let Some(why) = filter_fault(f) {
                    return Err(cx.err(f.line, format!("{key}.{k}"), why));
                }
                self.template(f, &format!("{key}.{k}"), part)?;
            }
        }
        if let Some(q) = &m.qos {
            if q.value > 2 {
                return Err(cx.err(
                    q.line,
                    format!("{key}.qos"),
                    format!("{}; MQTT's QoS is 0, 1 or 2", q.value),
                ));
            }
            if !(publish || kind == "subscribe") {
                return Err(cx.err(
                    q.line,
                    format!("{key}.qos"),
                    "goes with a publish (send with topic) or a subscribe step",
                ));
            }
        }
        if let (Some(r), false) = (&m.retain, publish) {
            return Err(cx.err(
                r.line,
                format!("{key}.retain"),
                "goes with a publish (send with topic)",
            ));
        }
        if matches!(kind, "send" | "fields" | "subscribe" | "unsubscribe") {
            let reply = [
                ("expect", s.expect.as_ref().map(|v| v.line)),
                ("capture", s.capture.values().next().map(|v| v.line)),
            ];
            if let Some((k, Some(line))) = reply.iter().find(|(_, l)| l.is_some()) {
                return Err(cx.err(
                    *line,
                    format!("{key}.{k}"),
                    "an MQTT acknowledgement carries nothing to look into: match what the broker delivers with [[on]] rules",
                ));
            }
        }
        Ok(())
    }
}

/// A topic filter's wildcards out of place: `+` must be a whole level, `#` a whole level and
/// the last (the engine's `mqtt::filter_fault`; this crate uses no engine code).
fn filter_fault(f: &str) -> Option<&'static str> {
    let levels: Vec<&str> = f.split('/').collect();
    for (i, l) in levels.iter().enumerate() {
        if l.contains('+') && *l != "+" {
            return Some("'+' stands for a whole level (a/+/b)");
        }
        if l.contains('#') && (*l != "#" || i + 1 != levels.len()) {
            return Some("'#' is a whole level and the last (a/b/#)");
        }
    }
    None
}
