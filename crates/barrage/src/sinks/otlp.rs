//! `--otlp URL`: each second's figures pushed as OpenTelemetry metrics while the run goes
//! (OTLP over HTTP, its JSON encoding, to a collector's `/v1/metrics`), for any backend the
//! collector feeds.
//!
//! One resource (`service.name` barrage, `barrage.run`, `barrage.target`, `barrage.shard`),
//! and per second: delta sums (monotonic, the second as their interval) of exchanges sent,
//! completed and failed, errors by `error.class`, connects and bytes read and written; gauges
//! of open connections, in flight and the rate, and of the latency percentiles (µs) for a
//! second that timed something. Summed over the run, each sum is the result's figure (what the
//! test checks through a real OpenTelemetry Collector).
//!
//! Key decision: the JSON encoding (no protobuf code in barrage), written by hand as the
//! coordinator formats a second, and POSTed by the push writer ([`crate::sinks::push`]).

use crate::sinks::push::{Endpoint, Pusher};
use crate::usage::Usage;
use barrage_metrics::Tick;
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// The collector's metrics endpoint.
#[derive(Clone, Debug)]
pub struct OtlpTarget(Endpoint);

impl OtlpTarget {
    /// `--otlp URL`: `http://HOST:4318/v1/metrics`.
    pub fn parse(url: &str) -> Result<OtlpTarget, Usage> {
        let mut e = Endpoint::parse("--otlp", url, "http://HOST:4318/v1/metrics")?;
        e.content_type = "application/json";
        Ok(OtlpTarget(e))
    }
}

/// A run's metrics, queued for the writer.
pub struct Otlp {
    pusher: Pusher,
    base_ns: u128,
    /// The resource's attributes, as JSON.
    resource: String,
}

impl Otlp {
    /// Starts the writer; `t0` is the wall-clock time of the run's t = 0.
    pub fn start(target: OtlpTarget, tags: crate::sinks::influx::RunTags, t0: SystemTime) -> Otlp {
        let attr = |k: &str, v: &str| {
            format!(
                r#"{{"key":{},"value":{{"stringValue":{}}}}}"#,
                json(k),
                json(v)
            )
        };
        let resource = [
            attr("service.name", "barrage"),
            attr("barrage.run", &tags.run),
            attr("barrage.target", &tags.target),
            attr("barrage.shard", &tags.shard),
        ]
        .join(",");
        Otlp {
            pusher: Pusher::start(target.0),
            base_ns: t0.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()),
            resource,
        }
    }

    /// A second became final: its metrics, queued.
    pub fn tick(&self, t: &Tick) {
        let end = self.base_ns + (t.t * 1e9) as u128;
        let start = end.saturating_sub((t.dt * 1e9) as u128);
        self.pusher.send(body(t, &self.resource, start, end));
    }

    pub fn finish(self) {
        self.pusher.finish();
    }
}

/// A JSON string.
fn json(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// One second as an OTLP `ExportMetricsServiceRequest`, in JSON.
fn body(t: &Tick, resource: &str, start: u128, end: u128) -> String {
    let mut metrics: Vec<String> = Vec::with_capacity(16);
    let sum = |name: &str, unit: &str, points: &[(Option<(&str, &str)>, u64)]| {
        let points: Vec<String> = points
            .iter()
            .map(|(attr, v)| {
                let attrs = attr.map_or(String::new(), |(k, a)| {
                    format!(
                        r#","attributes":[{{"key":{},"value":{{"stringValue":{}}}}}]"#,
                        json(k),
                        json(a)
                    )
                });
                format!(
                    r#"{{"startTimeUnixNano":"{start}","timeUnixNano":"{end}","asInt":"{v}"{attrs}}}"#
                )
            })
            .collect();
        format!(
            r#"{{"name":"{name}","unit":"{unit}","sum":{{"dataPoints":[{}],"aggregationTemporality":1,"isMonotonic":true}}}}"#,
            points.join(",")
        )
    };
    for (name, unit, n) in crate::sinks::second::counters(t) {
        metrics.push(sum(&format!("barrage.{name}"), unit, &[(None, n)]));
    }
    let errors: Vec<(Option<(&str, &str)>, u64)> = t
        .errors
        .nonzero()
        .map(|(c, n)| (Some(("error.class", c.as_str())), n))
        .collect();
    if !errors.is_empty() {
        metrics.push(sum("barrage.errors", "{error}", &errors));
    }
    for (name, unit, v) in crate::sinks::second::gauges(t) {
        let v = match v {
            crate::sinks::second::Value::Int(n) => format!(r#""asInt":"{n}""#),
            crate::sinks::second::Value::Float(x) => format!(r#""asDouble":{x}"#),
        };
        metrics.push(format!(
            r#"{{"name":"barrage.{name}","unit":"{unit}","gauge":{{"dataPoints":[{{"timeUnixNano":"{end}",{v}}}]}}}}"#
        ));
    }
    let mut out = String::with_capacity(4096);
    let _ = write!(
        out,
        r#"{{"resourceMetrics":[{{"resource":{{"attributes":[{resource}]}},"scopeMetrics":[{{"scope":{{"name":"barrage","version":"{}"}},"metrics":[{}]}}]}}]}}"#,
        env!("CARGO_PKG_VERSION"),
        metrics.join(",")
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::ErrorClass;

    #[test]
    fn a_second_is_valid_json_with_delta_sums_and_gauges() {
        let mut t = Tick {
            t: 2.0,
            dt: 1.0,
            requests: 10,
            sent: 11,
            ..Tick::default()
        };
        t.errors.add(ErrorClass::Timeout, 1);
        let b = body(
            &t,
            r#"{"key":"k","value":{"stringValue":"v"}}"#,
            1_000,
            2_000,
        );
        let v: serde_json::Value = serde_json::from_str(&b).expect("valid JSON");
        let metrics = &v["resourceMetrics"][0]["scopeMetrics"][0]["metrics"];
        let find = |n: &str| {
            metrics
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["name"] == n)
                .cloned()
                .unwrap()
        };
        let c = find("barrage.exchanges.completed");
        assert_eq!(c["sum"]["dataPoints"][0]["asInt"], "10");
        assert_eq!(c["sum"]["dataPoints"][0]["startTimeUnixNano"], "1000");
        assert_eq!(c["sum"]["aggregationTemporality"], 1);
        let e = find("barrage.errors");
        assert_eq!(
            e["sum"]["dataPoints"][0]["attributes"][0]["value"]["stringValue"],
            "timeout"
        );
        assert!(metrics
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["name"] != "barrage.latency.p99"));
    }
}
