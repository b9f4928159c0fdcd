//! The checks of what a step sends over HTTP and gRPC: its request, headers and call.

use super::{CheckResult, Part, StepsCheck};
use crate::at::At;
use crate::check::scope::MAX_HEADERS;
use crate::check::settings::header;
use crate::check::values::status;
use crate::model::Step;
use crate::protocol::TargetKind;

impl StepsCheck<'_> {
    pub(super) fn request(&mut self, s: &Step, key: &str, part: Part) -> CheckResult {
        let cx = self.cx;
        let path = s.http.path.as_ref().expect("kind path");
        if self.target != TargetKind::Http {
            return Err(cx.err(
                path.line,
                format!("{key}.path"),
                "path is for http:// and https:// targets; use send = \"...\"",
            ));
        }
        if !path.starts_with('/') {
            return Err(cx.err(
                path.line,
                format!("{key}.path"),
                format!("'{}': a path starts with /", path.escape_debug()),
            ));
        }
        self.template(path, &format!("{key}.path"), part)?;
        if let Some(m) = &s.http.method {
            if m.is_empty() || !m.bytes().all(|b| b.is_ascii_uppercase()) {
                return Err(cx.err(
                    m.line,
                    format!("{key}.method"),
                    format!(
                        "'{}': a method is upper case, e.g. GET, POST, PUT",
                        m.escape_debug()
                    ),
                ));
            }
        }
        self.headers(s, key, part)?;
        if let Some(b) = &s.http.body {
            self.template(b, &format!("{key}.body"), part)?;
        }
        if let Some(st) = &s.http.status {
            status(st).map_err(|e| cx.err(st.line, format!("{key}.status"), e))?;
        }
        if let Some(t) = &s.http.server_time {
            let k = format!("{key}.server_time");
            match (&t.header, &t.json) {
                (Some(h), None) if !h.trim().is_empty() => {}
                (None, Some(p)) => {
                    crate::check::values::pointer(p).map_err(|e| cx.err(t.line, &k, e))?;
                }
                _ => {
                    return Err(cx.err(
                        t.line,
                        &k,
                        "give one source: header = \"X-Response-Time\" or json = \"/took_ms\"",
                    ))
                }
            }
        }
        if let Some(f) = s.expect.as_ref().and_then(|e| e.framing.as_ref()) {
            return Err(cx.err(
                f.line,
                format!("{key}.expect.framing"),
                "HTTP frames its own replies; remove framing",
            ));
        }
        Ok(())
    }

    /// A request's or call's header lines, each a template.
    pub(super) fn headers(&mut self, s: &Step, key: &str, part: Part) -> CheckResult {
        if let Some(h) = s.http.headers.get(MAX_HEADERS) {
            return Err(self.cx.err(
                h.line,
                format!("{key}.headers"),
                format!("more than {} headers", MAX_HEADERS),
            ));
        }
        for (i, h) in s.http.headers.iter().enumerate() {
            let k = format!("{key}.headers[{i}]");
            header(self.cx, h, &k)?;
            self.template(h, &k, part)?;
        }
        Ok(())
    }

    /// A gRPC call: its method's form, its metadata, and every string of its data as a
    /// template (the method itself, and the data's fit to its message, are judged by the
    /// binary against the .proto).
    pub(super) fn call(&mut self, s: &Step, key: &str, part: Part) -> CheckResult {
        let cx = self.cx;
        let rpc = s.grpc.rpc.as_ref().expect("kind rpc");
        if self.target != TargetKind::Grpc {
            return Err(cx.err(
                rpc.line,
                format!("{key}.rpc"),
                "rpc is for grpc:// and grpcs:// targets",
            ));
        }
        crate::protocol::grpc_method(rpc).map_err(|e| cx.err(rpc.line, format!("{key}.rpc"), e))?;
        self.headers(s, key, part)?;
        if let Some(d) = &s.grpc.data {
            let tables = d
                .as_array()
                .is_some_and(|a| a.iter().all(serde_json::Value::is_object));
            if !d.is_object() && !tables {
                return Err(cx.err(
                    d.line,
                    format!("{key}.data"),
                    "the request message is a table: data = { field = \"value\", ... } (a \
                     client stream's: a list of tables)",
                ));
            }
            let mut strings = Vec::new();
            json_strings(d, &mut strings);
            for t in strings {
                self.template(&At::new(t, d.line), &format!("{key}.data"), part)?;
            }
        }
        if let Some(f) = s.expect.as_ref().and_then(|e| e.framing.as_ref()) {
            return Err(cx.err(
                f.line,
                format!("{key}.expect.framing"),
                "gRPC frames its own replies; remove framing",
            ));
        }
        Ok(())
    }
}

/// The strings of a JSON value (keys too: a placeholder in a key is refused by the binary).
fn json_strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| json_strings(x, out)),
        serde_json::Value::Object(o) => o.iter().for_each(|(k, x)| {
            out.push(k.clone());
            json_strings(x, out)
        }),
        _ => {}
    }
}
