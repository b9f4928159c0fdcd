//! The file's settings outside the step list: `[protocol]` (framing, headers, TLS and
//! WebSocket options, each only for the targets it applies to) and `[run]` (the flags that
//! make sense in a file; thresholds that name steps must name real ones).

use super::scope::{secs, FileScope, MAX_HEADERS};
use crate::at::At;
use crate::model::{Protocol, Run};
use crate::protocol::TargetKind;
use crate::shape::Shape;
use crate::ScenarioError;

/// `--expect`'s grammar: echo, bytes:N, line, delim:TEXT, len:u16be|u16le|u32be|u32le,
/// `field:OFFSET:TYPE[:ADJUST[:STRIP]]`, mqtt, none (a field's parts are judged by the engine's
/// parser when the run is planned).
pub(crate) fn framing(s: &str) -> Result<(), String> {
    let ok = match s.trim() {
        "echo" | "line" | "none" | "mqtt" => true,
        t if t.starts_with("field:") => {
            let parts: Vec<&str> = t[6..].split(':').collect();
            (2..=4).contains(&parts.len()) && parts[0].parse::<u8>().is_ok()
        }
        t if t.starts_with("bytes:") => t[6..].parse::<u64>().is_ok_and(|n| n > 0),
        t if t.starts_with("delim:") => t.len() > 6,
        "len:u16be" | "len:u16le" | "len:u32be" | "len:u32le" => true,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "'{s}' is not a framing; use echo, line, none, bytes:N, delim:TEXT, len:u16be|u16le|u32be|u32le, field:OFFSET:TYPE[:ADJUST[:STRIP]] or mqtt"
        ))
    }
}

pub(super) fn protocol(
    cx: &FileScope,
    p: &Protocol,
    target: TargetKind,
) -> Result<(), ScenarioError> {
    if let Some(f) = &p.framing {
        framing(f).map_err(|e| cx.err(f.line, "protocol.framing", e))?;
        if matches!(target, TargetKind::Http | TargetKind::Mqtt)
            || (target == TargetKind::Ws && !matches!(f.trim(), "echo" | "none"))
        {
            return Err(cx.err(
                f.line,
                "protocol.framing",
                "framing applies to tcp:// (ws://: echo or none); HTTP and MQTT frame their own replies",
            ));
        }
    }
    if let Some(h) = p.headers.get(MAX_HEADERS) {
        return Err(cx.err(
            h.line,
            "protocol.headers",
            format!("more than {} headers", MAX_HEADERS),
        ));
    }
    for (i, h) in p.headers.iter().enumerate() {
        header(cx, h, &format!("protocol.headers[{i}]"))?;
        if !matches!(target, TargetKind::Http | TargetKind::Ws | TargetKind::Grpc) {
            return Err(cx.err(
                h.line,
                format!("protocol.headers[{i}]"),
                "headers apply to http://, ws:// and grpc:// targets (metadata)",
            ));
        }
    }
    if let Some(s) = &p.subprotocol {
        if target != TargetKind::Ws || s.trim().is_empty() {
            return Err(cx.err(
                s.line,
                "protocol.subprotocol",
                "a WebSocket subprotocol name, for ws:// and wss:// targets",
            ));
        }
    }
    if p.binary.is_some() && target != TargetKind::Ws {
        return Err(cx.err(
            0,
            "protocol.binary",
            "binary applies to ws:// and wss:// targets",
        ));
    }
    if let Some(l) = &p.layout {
        if !matches!(target, TargetKind::Tcp | TargetKind::Ws | TargetKind::Mqtt) {
            return Err(cx.err(
                l.line,
                "protocol.layout",
                "a binary reply's layout, for tcp://, ws:// and mqtt:// targets",
            ));
        }
    }
    if p.resp3.is_some() && target != TargetKind::Kv {
        return Err(cx.err(0, "protocol.resp3", "resp3 applies to redis:// targets"));
    }
    let grpc_keys = [
        ("proto", p.proto.as_ref().map(|v| v.line)),
        ("import_path", p.import_path.first().map(|v| v.line)),
        ("reflect", p.reflect.as_ref().map(|v| v.line)),
    ];
    for (k, line) in grpc_keys {
        if let (Some(line), false) = (line, target == TargetKind::Grpc) {
            return Err(cx.err(
                line,
                format!("protocol.{k}"),
                format!("{k} applies to grpc:// and grpcs:// targets"),
            ));
        }
    }
    if let (Some(f), Some(true)) = (&p.proto, p.reflect.as_ref().map(|r| r.value)) {
        return Err(cx.err(
            f.line,
            "protocol.proto",
            "give proto or reflect = true, not both",
        ));
    }
    if let Some(f) = &p.proto {
        if !cx.path(f).is_file() {
            return Err(cx.err(
                f.line,
                "protocol.proto",
                format!(
                    "{} is not a file (paths are relative to the scenario file)",
                    f.value
                ),
            ));
        }
    }
    for (i, d) in p.import_path.iter().enumerate() {
        if !cx.path(d).is_dir() {
            return Err(cx.err(
                d.line,
                format!("protocol.import_path[{i}]"),
                format!(
                    "{} is not a directory (paths are relative to the scenario file)",
                    d.value
                ),
            ));
        }
    }
    for (key, file) in [("cacert", &p.cacert), ("cert", &p.cert), ("key", &p.key)] {
        let Some(c) = file else { continue };
        if !cx.path(c).is_file() {
            return Err(cx.err(
                c.line,
                format!("protocol.{key}"),
                format!(
                    "{} is not a file (paths are relative to the scenario file)",
                    c.value
                ),
            ));
        }
    }
    if let (Some(k), None) = (&p.key, &p.cert) {
        return Err(cx.err(
            k.line,
            "protocol.key",
            "is the key of a client certificate: give `cert` too",
        ));
    }
    Ok(())
}

/// A header line `Name: value` with a token name.
pub(crate) fn header(cx: &FileScope, h: &At<String>, key: &str) -> Result<(), ScenarioError> {
    let ok = h.split_once(':').is_some_and(|(n, _)| {
        !n.is_empty()
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    }) && !h.contains(['\r', '\n']);
    if ok {
        Ok(())
    } else {
        Err(cx.err(
            h.line,
            key,
            format!(
                "'{}' is not a header; write 'Name: value' on one line",
                h.escape_debug()
            ),
        ))
    }
}

pub(super) fn run(
    cx: &FileScope,
    r: &At<Run>,
    named: &[String],
    shape: &Shape,
    users: u64,
) -> Result<(), ScenarioError> {
    // `{secret:NAME}` is filled where a value goes to the server (and in `spawn`, the
    // server's own command); a file name or a threshold holding one is a mistake.
    let mut plain: Vec<(&At<String>, String)> = [
        (&r.duration, "run.duration"),
        (&r.warmup, "run.warmup"),
        (&r.timeout, "run.timeout"),
        (&r.connect_timeout, "run.connect_timeout"),
        (&r.recovery, "run.recovery"),
        (&r.json, "run.json"),
        (&r.report, "run.report"),
        (&r.source_ip, "run.source_ip"),
    ]
    .into_iter()
    .filter_map(|(v, k)| v.as_ref().map(|v| (v, k.to_string())))
    .collect();
    for (list, k) in [
        (&r.thresholds, "run.thresholds"),
        (&r.monitor, "run.monitor"),
        (&r.redact, "run.redact"),
    ] {
        plain.extend(
            list.iter()
                .enumerate()
                .map(|(i, v)| (v, format!("{k}[{i}]"))),
        );
    }
    for (v, k) in plain {
        if let Some((text, _)) = crate::vars::refs(v)
            .into_iter()
            .find(|(_, r)| matches!(r, crate::vars::Ref::Secret(_)))
        {
            return Err(cx.err(
                v.line,
                k,
                format!("{text} is filled only in what is sent (the target, headers, steps, users.data) and in run.spawn; write the value here"),
            ));
        }
    }
    if let Some(d) = &r.duration {
        let len = cx.duration(d, "run.duration", true)?;
        if let Some(last) = shape.arrival(users - 1) {
            if last >= len {
                return Err(cx.err(
                    d.line,
                    "run.duration",
                    format!("{} ends before the last of {users} users arrives (at {}); raise it or lower users.count", d.value, secs(last)),
                ));
            }
        }
    }
    if let Some(w) = &r.warmup {
        cx.duration(w, "run.warmup", false)?;
    }
    for (v, k) in [
        (&r.timeout, "run.timeout"),
        (&r.connect_timeout, "run.connect_timeout"),
    ] {
        if let Some(v) = v {
            cx.duration(v, k, true)?;
        }
    }
    if let Some(rec) = &r.recovery {
        cx.duration(rec, "run.recovery", false)?;
    }
    if let Some(t) = &r.threads {
        if !(1..=4096).contains(&t.value) {
            return Err(cx.err(
                t.line,
                "run.threads",
                format!("{} threads; give 1 to 4096", t.value),
            ));
        }
    }
    for (i, t) in r.thresholds.iter().enumerate() {
        let key = format!("run.thresholds[{i}]");
        if t.trim().is_empty() {
            return Err(cx.err(
                t.line,
                key,
                "empty; write e.g. 'p99 < 20ms' or 'steps.join.p99 < 1s'",
            ));
        }
        if let Some(rest) = t.trim().strip_prefix("steps.") {
            let step = rest.split('.').next().unwrap_or("");
            if !named.iter().any(|n| n == step) {
                let known = if named.is_empty() {
                    "none".to_string()
                } else {
                    named.join(", ")
                };
                return Err(cx.err(t.line, key, format!("'{step}' is not a named step (named steps: {known}); name one with name = \"{step}\"")));
            }
        }
    }
    for (i, m) in r.monitor.iter().enumerate() {
        if m.trim() != "auto" && !m.trim().parse::<u32>().is_ok_and(|p| p > 0) {
            return Err(cx.err(
                m.line,
                format!("run.monitor[{i}]"),
                format!("'{}': give a PID or \"auto\"", m.value),
            ));
        }
    }
    let nonempty = [
        (&r.json, "run.json"),
        (&r.report, "run.report"),
        (&r.spawn, "run.spawn"),
    ];
    for (v, k) in nonempty {
        if let Some(v) = v {
            if v.trim().is_empty() {
                return Err(cx.err(v.line, k, "empty; remove the key or give a value"));
            }
        }
    }
    for (i, n) in r.redact.iter().enumerate() {
        if n.trim().is_empty() {
            return Err(cx.err(
                n.line,
                format!("run.redact[{i}]"),
                "empty; give a header or query-parameter name",
            ));
        }
    }
    Ok(())
}
