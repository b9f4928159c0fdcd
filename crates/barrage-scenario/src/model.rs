//! The scenario file as the user writes it (TOML or YAML, one schema): strings for durations,
//! rates and templates, exactly as written, each with its line ([`At`]). Nothing here is
//! checked beyond its shape; `check.rs` turns it into a [`crate::Checked`] scenario.
//! A step's keys are [`Step`]'s (`model/step.rs`): those of every step, then a table per
//! protocol, with [`KEY_TABLES`] saying where each protocol's keys go (the checker applies it).
//!
//! Every table denies unknown keys, so a typo is an error with its line, not a silently
//! ignored setting. Doc comments are the JSON Schema's descriptions (`docs/scenario.schema.json`).

mod step;

pub use step::{GrpcKeys, HttpKeys, KeyTable, MqttKeys, Step, KEY_TABLES};

use crate::at::At;
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;

/// A barrage scenario: a target, users who arrive, run a list of steps and leave, and the
/// run's settings (each mirrors a `barrage run` flag, which overrides it).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct File {
    /// The target URL: tcp://, http(s)://, ws(s)://, redis://, memcache:// (as `barrage run URL`).
    pub target: At<String>,
    /// More addresses of the same server (--url): connections are spread over the target
    /// and these, round robin (e.g. the ports of a server in several processes).
    #[serde(default)]
    pub urls: Vec<At<String>>,
    /// Options of the target's protocol (framing, headers, TLS, WebSocket subprotocol...).
    #[serde(default)]
    pub protocol: Option<Protocol>,
    /// Who connects, when they arrive and leave.
    pub users: At<Users>,
    /// What each user does once connected, in order.
    #[serde(default)]
    pub steps: Vec<At<Step>>,
    /// Rules for messages the server pushes that are not replies to a step.
    #[serde(default)]
    pub on: Vec<At<OnRule>>,
    /// Steps each user runs when it departs (e.g. a goodbye message).
    #[serde(default)]
    pub leave: Vec<At<Step>>,
    /// The run's settings: the flags of `barrage run` that make sense in a file.
    #[serde(default)]
    pub run: Option<At<Run>>,
    /// A Lua script (tcp:// targets; a path relative to this file), as `barrage run --script`:
    /// its `init`, `frame` and `request` work as for a URL, and steps name its functions
    /// (`call`, `check`; docs/scenarios.md, "Scripts").
    pub script: Option<At<String>>,
}

/// Protocol options (the `barrage run` flags of the same names).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Protocol {
    /// Reply framing for raw TCP (--expect): echo, bytes:N, line, delim:TEXT,
    /// len:u16be|u16le|u32be|u32le, none; WebSocket: echo or none.
    pub framing: Option<At<String>>,
    /// Headers sent with every request (HTTP) or the handshake (WebSocket): 'Name: value'.
    #[serde(default)]
    pub headers: Vec<At<String>>,
    /// WebSocket subprotocol to request.
    pub subprotocol: Option<At<String>>,
    /// WebSocket: send binary frames.
    pub binary: Option<bool>,
    /// redis://: speak RESP3.
    pub resp3: Option<bool>,
    /// Skip TLS certificate verification.
    pub insecure: Option<bool>,
    /// Also trust the CA certificates in this PEM file (relative to the scenario file).
    pub cacert: Option<At<String>>,
    /// Mutual TLS: the client certificate chain to present, a PEM file (relative to the
    /// scenario file; --cert).
    pub cert: Option<At<String>>,
    /// The PEM private key of `cert`, when not in its file (relative to the scenario file;
    /// --key).
    pub key: Option<At<String>>,
    /// The name the server's certificate is checked against and sent as SNI, instead of the
    /// target's host (--servername).
    pub servername: Option<At<String>>,
    /// gRPC: the .proto file that defines the methods the steps call (relative to the
    /// scenario file; --proto).
    pub proto: Option<At<String>>,
    /// gRPC: directories the .proto's imports are found in (relative to the scenario file;
    /// --import-path).
    #[serde(default)]
    pub import_path: Vec<At<String>>,
    /// gRPC: take the methods' descriptors from the server (server reflection; --reflect).
    pub reflect: Option<At<bool>>,
    /// Binary replies: the layout of their header, fixed-width fields from byte 0, named so
    /// that `expect`, `match` and captures can say `layout = "room"` instead of an offset and
    /// a type: "kind:u8, len:u16be, room:u32be" (`bytes:N` skips N unnamed bytes).
    pub layout: Option<At<String>>,
}

/// The users of the run: user g (0-based) arrives at a time that is a pure function of g and
/// the arrival shape, connects, runs the steps, and departs.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Users {
    /// How many users in all (--users).
    pub count: At<u64>,
    /// Arrival: a rate like "50/s", or stages `[{rate = "10/s", for = "1m"}, ...]` (the rate
    /// is constant within a stage).
    pub arrive: At<Arrive>,
    /// How long users stay after the last one arrived (--hold), e.g. "60s".
    pub hold: Option<At<String>>,
    /// Departure: a rate like "20/s" (after the hold), or "at_end" (all together at the end).
    pub depart: Option<At<String>>,
    /// A CSV file whose row g (after the header) feeds user g: `{row.COLUMN}`.
    pub data: Option<At<String>>,
}

/// A rate ("50/s") or a list of stages.
#[derive(Debug, Clone, PartialEq)]
pub enum Arrive {
    Rate(String),
    Stages(Vec<Stage>),
}

/// One stage of an arrival shape: `rate` for `for`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// Users per second during this stage, e.g. "10/s".
    pub rate: At<String>,
    /// How long the stage lasts, e.g. "1m".
    #[serde(rename = "for")]
    pub for_: At<String>,
}

/// What a broadcast step expects.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Broadcast {
    /// How many receive each message: a number or a template such as "{room_size}" (a value
    /// captured from the server, kept current by `on` rules). Without it, deliveries are
    /// counted but reach is not.
    pub expect: Option<At<String>>,
    /// The sender gets its own message too (counted in `expect`) [default: true].
    #[serde(rename = "self")]
    pub self_: Option<bool>,
    /// The form of `{stamp}`: "text" (35 text-safe bytes, for servers that relay text) or
    /// "binary" (20 bytes, for binary-safe protocols) [default: "text"]. Every broadcast step
    /// of a file uses the same form.
    pub stamp: Option<At<String>>,
}

/// Where a response says the server's own time (one of header or json).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerTime {
    /// A response header, e.g. "X-Response-Time".
    pub header: Option<String>,
    /// A JSON pointer into the response body, e.g. "/took_ms".
    pub json: Option<String>,
}

/// A reply's framing and what it must match (at most one of json/regex/prefix).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Framing of this reply, as `protocol.framing` (default: the protocol's).
    pub framing: Option<At<String>>,
    /// A JSON pointer into the reply (HTTP: the body), e.g. "/op"; with `equals`, its value
    /// must equal that; alone, it must exist.
    pub json: Option<At<String>>,
    /// The value the JSON pointer must hold.
    pub equals: Option<At<serde_json::Value>>,
    /// A regular expression the reply must match.
    pub regex: Option<At<String>>,
    /// Bytes the reply must start with (escapes \r \n \t \\ \0 \xHH).
    pub prefix: Option<At<String>>,
    /// Binary replies: the offset of an integer field (with `type`); with `equals`, its value
    /// must equal that; alone, the reply must hold it.
    pub at: Option<At<u32>>,
    /// Binary replies: the integer field's type at `at` (u8, u16be, ..., varint, mqtt_varint).
    #[serde(rename = "type")]
    pub type_: Option<At<String>>,
    /// Binary replies: a field of `protocol.layout` by name, instead of `at` and `type`.
    pub layout: Option<At<String>>,
    /// Time allowed for the reply, e.g. "2s".
    pub timeout: Option<At<String>>,
}

/// What a pushed message must match for an `on` rule (one of json/regex/prefix).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// A JSON pointer; with `equals`, its value must equal that; alone, it must exist.
    pub json: Option<At<String>>,
    /// The value the JSON pointer must hold.
    pub equals: Option<At<serde_json::Value>>,
    /// A regular expression the message must match.
    pub regex: Option<At<String>>,
    /// Bytes the message must start with.
    pub prefix: Option<At<String>>,
    /// Binary messages: the offset of an integer field (with `type`, and `equals`).
    pub at: Option<At<u32>>,
    /// Binary messages: the integer field's type at `at`.
    #[serde(rename = "type")]
    pub type_: Option<At<String>>,
    /// Binary messages: a field of `protocol.layout` by name, instead of `at` and `type`.
    pub layout: Option<At<String>>,
}

/// Where a captured value comes from: exactly one source.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Capture {
    /// A JSON pointer into the reply (HTTP: the body), e.g. "/token".
    pub json: Option<String>,
    /// A regular expression; the value is its capture group `group` (default 1).
    pub regex: Option<String>,
    /// The regex group to take (0 = the whole match).
    pub group: Option<u32>,
    /// A delimiter: the value is field `field` (counted from 1) of the reply split on it.
    pub split: Option<String>,
    /// The field to take with `split`.
    pub field: Option<u32>,
    /// A byte range of the reply, "START..END" (END excluded; "START.." to the end).
    pub bytes: Option<String>,
    /// HTTP: the value of this response header.
    pub header: Option<String>,
    /// Binary replies: the offset of an integer field; its value as decimal text (with
    /// `type`).
    pub at: Option<u32>,
    /// Binary replies: the integer field's type at `at` (u8, u16be, ..., varint, mqtt_varint).
    #[serde(rename = "type")]
    pub type_: Option<String>,
    /// Binary replies: a field of `protocol.layout` by name, instead of `at` and `type`.
    pub layout: Option<String>,
}

/// A rule for pushed messages: when one matches, reply and/or capture.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OnRule {
    /// Name for per-rule counts.
    pub name: Option<At<String>>,
    /// What the message must match.
    #[serde(rename = "match")]
    pub matches: At<Match>,
    /// A message template to send back (e.g. Engine.IO: match prefix "2", reply "3").
    pub reply: Option<At<String>>,
    /// A function of the file's `script` that makes the reply sent back from `reply`
    /// rendered (as a step's `call`).
    pub call: Option<At<String>>,
    /// Values to take from the message (usable in `on` replies and `leave` steps).
    #[serde(default)]
    pub capture: BTreeMap<String, At<Capture>>,
}

/// The run's settings; each has a `barrage run` flag of the same name that overrides it.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// How long to apply load after the warm-up (-d).
    pub duration: Option<At<String>>,
    /// Load before measuring (--warmup).
    pub warmup: Option<At<String>>,
    /// A step not answered after this is a timeout (--timeout).
    pub timeout: Option<At<String>>,
    /// A connect not complete after this is a connect_timeout (--connect-timeout).
    pub connect_timeout: Option<At<String>>,
    /// Worker threads (-t).
    pub threads: Option<At<u64>>,
    /// Pass/fail rules, e.g. 'steps.join.p99 < 1s' (--threshold).
    #[serde(default)]
    pub thresholds: Vec<At<String>>,
    /// Write the result as JSON to this path (--json).
    pub json: Option<At<String>>,
    /// Write a report: FILE.html or FILE.md (--report).
    pub report: Option<At<String>>,
    /// Watch server processes: PIDs or "auto" (--monitor).
    #[serde(default)]
    pub monitor: Vec<At<String>>,
    /// Start the server with this command (--spawn).
    pub spawn: Option<At<String>>,
    /// Keep sampling this long after the load (--recovery).
    pub recovery: Option<At<String>>,
    /// More header or query-parameter names to redact (--redact).
    #[serde(default)]
    pub redact: Vec<At<String>>,
    /// Run as this many local processes, or "auto" from the open-file limit (--processes).
    pub processes: Option<At<Processes>>,
    /// Local addresses to connect from, or "auto" (--source-ip).
    pub source_ip: Option<At<String>>,
}

/// `processes`: a count, or "auto".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Processes {
    Auto,
    Count(u64),
}

impl<'de> Deserialize<'de> for Processes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Processes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(r#"a number of processes (1 or more) or "auto""#)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Processes, E> {
                if v == 0 {
                    return Err(E::custom(r#"give 1 or more processes, or "auto""#));
                }
                Ok(Processes::Count(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Processes, E> {
                self.visit_u64(
                    u64::try_from(v)
                        .map_err(|_| E::custom(r#"give 1 or more processes, or "auto""#))?,
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Processes, E> {
                match v.trim() {
                    "auto" => Ok(Processes::Auto),
                    n => self.visit_u64(
                        n.parse()
                            .map_err(|_| E::custom(r#"give a number of processes or "auto""#))?,
                    ),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Processes {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Processes".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A number of processes, or \"auto\" (from the open-file limit).",
            "oneOf": [
                { "type": "integer", "minimum": 1 },
                { "const": "auto" }
            ]
        })
    }
}

// `Arrive` is a string or a list: parsed by hand (an untagged enum would lose the line and
// say only "did not match any variant").
impl<'de> Deserialize<'de> for Arrive {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Arrive;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(r#"a rate like "50/s" or stages like [{rate = "10/s", for = "1m"}]"#)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Arrive, E> {
                Ok(Arrive::Rate(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Arrive, E> {
                Ok(Arrive::Rate(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Arrive, E> {
                Ok(Arrive::Rate(v.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Arrive, E> {
                Ok(Arrive::Rate(v.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut s: A) -> Result<Arrive, A::Error> {
                let mut stages = Vec::new();
                while let Some(st) = s.next_element::<Stage>()? {
                    stages.push(st);
                }
                Ok(Arrive::Stages(stages))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Arrive {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Arrive".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let stage = g.subschema_for::<Stage>();
        schemars::json_schema!({
            "description": "A rate like \"50/s\", or stages (the rate is constant within a stage).",
            "oneOf": [
                { "type": "string", "pattern": "^\\s*[0-9.]+[kKM]?(/s)?\\s*$" },
                { "type": "number", "exclusiveMinimum": 0 },
                { "type": "array", "items": stage, "minItems": 1 }
            ]
        })
    }
}
