//! A step as the model holds it: the keys every step may give, then one table per protocol
//! ([`HttpKeys`], [`GrpcKeys`], [`MqttKeys`]), and [`KEY_TABLES`], where each protocol's keys
//! go (one row a protocol).
//!
//! Key design decision: the file keeps every key of a step at one level (`method = "POST"`,
//! not `http.method`), and serde cannot spread one level over several structs here: its
//! `flatten` buffers the values (losing `At`'s lines) and does not work with
//! `deny_unknown_fields`. So the file is read into `RawStep`, a flat struct private to this
//! module (its keys in the order an unknown key's error lists them), and each step is moved
//! into its tables right after. The schema comes from [`Step`] itself: schemars's `flatten`
//! only merges the tables' properties, as one object that denies unknown keys. A new
//! protocol's step keys cost a table struct (a field of [`Step`]), its keys in `RawStep`
//! and its row in [`KEY_TABLES`].

use super::{Broadcast, Capture, Expect, ServerTime};
use crate::at::At;
use crate::protocol::TargetKind;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;

/// One step of a user's list. A step does one thing: `send` (with an optional `expect` and
/// `capture`), an HTTP request (`method`/`path`...), `pause`, `think`, or a block of `steps`
/// under `repeat`/`every`. `every` and `repeat` also apply to a single send or request.
#[derive(Debug, Default, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Step {
    /// Name for per-step metrics (`steps.NAME.p99` in thresholds).
    pub name: Option<At<String>>,
    /// Message template to send (raw TCP, WebSocket, redis, memcached); `{var}` filled.
    pub send: Option<At<String>>,
    /// Raw TCP: the message as typed binary fields, as --fields reads them
    /// ("u8 1, len:u16be(u32be {seq}, str:u8 \"{name}\")"); `{var}` filled.
    pub fields: Option<At<String>>,
    /// What the reply must look like, and how long to wait for it.
    pub expect: Option<At<Expect>>,
    /// Values to take from the reply: `{name}` in later steps.
    #[schemars(default)]
    pub capture: BTreeMap<String, At<Capture>>,
    /// Wait this long (a duration, e.g. "2s").
    pub pause: Option<At<String>>,
    /// Wait a random time in a range ("1s..3s") or a fixed time, like a person reading.
    pub think: Option<At<String>>,
    /// Open loop: run this step (or block) every D, on a schedule that starts when the user
    /// is connected; without `repeat`, until the user departs.
    pub every: Option<At<String>>,
    /// Run this step (or block) N times.
    pub repeat: Option<At<u64>>,
    /// A block of steps for `repeat`/`every`.
    #[schemars(default)]
    pub steps: Vec<At<Step>>,
    /// Time allowed for this step's reply (default: `expect.timeout`, then `run.timeout`).
    pub timeout: Option<At<String>>,
    /// One-to-many delivery: this send is a message the server broadcasts to a group (a
    /// room); its `{stamp}` is found in what every user receives, and deliveries are counted
    /// against `expect` (see docs/scenarios.md, "Broadcast").
    pub broadcast: Option<At<Broadcast>>,
    /// A function of the file's `script` that makes the message sent: it is given the
    /// connection's state and the step's `send` rendered (placeholders, variables, `{stamp}`;
    /// empty without `send`), and returns the bytes to send.
    pub call: Option<At<String>>,
    /// A function of the file's `script` that judges the step's reply: given the connection's
    /// state and the reply, it returns nothing or true (the reply), false (not this step's
    /// reply: taken as a push, and the step waits on), or an error class's name (the step
    /// fails with it).
    pub check: Option<At<String>>,
    /// HTTP's keys (a request's).
    #[schemars(flatten)]
    pub http: HttpKeys,
    /// gRPC's keys (a call's).
    #[schemars(flatten)]
    pub grpc: GrpcKeys,
    /// MQTT's keys (a publish's, a subscription's).
    #[schemars(flatten)]
    pub mqtt: MqttKeys,
}

/// A step's HTTP keys: `path` makes the step a request.
#[derive(Debug, Default, JsonSchema)]
pub struct HttpKeys {
    /// HTTP: request method (default GET when `path` is given).
    pub method: Option<At<String>>,
    /// HTTP: request path and query, a template (`/users/{user_id}`).
    pub path: Option<At<String>>,
    /// HTTP: request headers 'Name: value', templates.
    #[schemars(default)]
    pub headers: Vec<At<String>>,
    /// HTTP: request body, a template.
    pub body: Option<At<String>>,
    /// HTTP: statuses that count as success: 200, 2xx, 200-299, lists with commas
    /// [default: 2xx,3xx].
    pub status: Option<At<String>>,
    /// HTTP: where the server reports its own time for this request, when not in a
    /// `Server-Timing` header: `{ header = "X-Response-Time" }` or `{ json = "/took_ms" }`; the
    /// value is milliseconds, or a number with a unit (`150us`, `1.5ms`, `0.002s`).
    pub server_time: Option<At<ServerTime>>,
}

/// A step's gRPC keys: `rpc` makes the step a call.
#[derive(Debug, Default, JsonSchema)]
pub struct GrpcKeys {
    /// gRPC: the method to call, "package.Service/Method" (a grpc:// target).
    pub rpc: Option<At<String>>,
    /// gRPC: the request message as data (a table, as JSON maps to protobuf), with
    /// `{var}` placeholders in its strings [default: the empty message].
    pub data: Option<At<serde_json::Value>>,
}

/// A step's MQTT keys: `subscribe` and `unsubscribe` make the step one; `topic` makes a send
/// (or fields) step a publish.
#[derive(Debug, Default, JsonSchema)]
pub struct MqttKeys {
    /// MQTT: the topic a send (or fields) step publishes its message to, a template
    /// ("room/{room}").
    pub topic: Option<At<String>>,
    /// MQTT: subscribe to this topic filter (a template; wildcards + and # allowed); the step
    /// awaits the SUBACK, and what the broker then delivers goes to `on` rules and broadcast
    /// counting.
    pub subscribe: Option<At<String>>,
    /// MQTT: unsubscribe from this topic filter; the step awaits the UNSUBACK.
    pub unsubscribe: Option<At<String>>,
    /// MQTT: the QoS of a publish (0: done when written; 1: PUBACK; 2: PUBCOMP) or of a
    /// subscription [default: 0].
    pub qos: Option<At<u8>>,
    /// MQTT: publish with the retain flag.
    pub retain: Option<At<bool>>,
}

/// The keys a step gives of one table, with their lines (a list's: its first item's), in the
/// table's order.
pub type Given = Vec<(&'static str, u32)>;

fn lines_of<const N: usize>(keys: [(&'static str, Option<u32>); N]) -> Given {
    keys.into_iter()
        .filter_map(|(k, line)| line.map(|l| (k, l)))
        .collect()
}

impl HttpKeys {
    /// The HTTP keys given.
    pub fn given(&self) -> Given {
        lines_of([
            ("method", self.method.as_ref().map(|v| v.line)),
            ("path", self.path.as_ref().map(|v| v.line)),
            ("body", self.body.as_ref().map(|v| v.line)),
            ("status", self.status.as_ref().map(|v| v.line)),
            ("server_time", self.server_time.as_ref().map(|v| v.line)),
            ("headers", self.headers.first().map(|v| v.line)),
        ])
    }
}

impl GrpcKeys {
    /// The gRPC keys given.
    pub fn given(&self) -> Given {
        lines_of([
            ("rpc", self.rpc.as_ref().map(|v| v.line)),
            ("data", self.data.as_ref().map(|v| v.line)),
        ])
    }
}

impl MqttKeys {
    /// The MQTT keys given.
    pub fn given(&self) -> Given {
        lines_of([
            ("topic", self.topic.as_ref().map(|v| v.line)),
            ("subscribe", self.subscribe.as_ref().map(|v| v.line)),
            ("unsubscribe", self.unsubscribe.as_ref().map(|v| v.line)),
            ("qos", self.qos.as_ref().map(|v| v.line)),
            ("retain", self.retain.as_ref().map(|v| v.line)),
        ])
    }
}

/// Where one protocol's step keys go: a row of [`KEY_TABLES`].
pub struct KeyTable {
    /// The keys a step gives of this protocol's table, with their lines.
    pub given: fn(&Step) -> Given,
    /// Whether the key fits this step on this target.
    pub fits: fn(&Step, &str, TargetKind) -> bool,
    /// What a key that does not fit is told.
    pub misplaced: &'static str,
}

/// Each protocol's step keys and where they go, checked in this order: HTTP's with a request
/// (`headers` with a gRPC call too, as its metadata), gRPC's with a call, MQTT's in an mqtt://
/// file. (Which target takes a request, a call, a subscription is the step kind's check.)
pub const KEY_TABLES: [KeyTable; 3] = [
    KeyTable {
        given: |s| s.http.given(),
        fits: |s, key, _| s.http.path.is_some() || (key == "headers" && s.grpc.rpc.is_some()),
        misplaced: "HTTP request keys go with path = \"/...\"",
    },
    KeyTable {
        given: |s| s.grpc.given(),
        fits: |s, _, _| s.grpc.rpc.is_some(),
        misplaced: "data is a gRPC call's message: it goes with rpc = \"package.Service/Method\"",
    },
    KeyTable {
        given: |s| s.mqtt.given(),
        fits: |_, _, target| target == TargetKind::Mqtt,
        misplaced: "is MQTT's: it goes in a file whose target is mqtt:// or mqtts://",
    },
];

/// A step as the file has it, every key at one level, in the order an unknown key's error
/// lists them ("expected one of `name`, `send`, ..."). Moved into a [`Step`] once read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "Step")]
struct RawStep {
    name: Option<At<String>>,
    send: Option<At<String>>,
    fields: Option<At<String>>,
    rpc: Option<At<String>>,
    data: Option<At<serde_json::Value>>,
    method: Option<At<String>>,
    path: Option<At<String>>,
    #[serde(default)]
    headers: Vec<At<String>>,
    body: Option<At<String>>,
    status: Option<At<String>>,
    expect: Option<At<Expect>>,
    #[serde(default)]
    capture: BTreeMap<String, At<Capture>>,
    pause: Option<At<String>>,
    think: Option<At<String>>,
    every: Option<At<String>>,
    repeat: Option<At<u64>>,
    #[serde(default)]
    steps: Vec<At<Step>>,
    timeout: Option<At<String>>,
    server_time: Option<At<ServerTime>>,
    broadcast: Option<At<Broadcast>>,
    topic: Option<At<String>>,
    subscribe: Option<At<String>>,
    unsubscribe: Option<At<String>>,
    qos: Option<At<u8>>,
    retain: Option<At<bool>>,
    call: Option<At<String>>,
    check: Option<At<String>>,
}

impl From<RawStep> for Step {
    fn from(r: RawStep) -> Step {
        let RawStep {
            name,
            send,
            fields,
            rpc,
            data,
            method,
            path,
            headers,
            body,
            status,
            expect,
            capture,
            pause,
            think,
            every,
            repeat,
            steps,
            timeout,
            server_time,
            broadcast,
            topic,
            subscribe,
            unsubscribe,
            qos,
            retain,
            call,
            check,
        } = r;
        Step {
            name,
            send,
            fields,
            expect,
            capture,
            pause,
            think,
            every,
            repeat,
            steps,
            timeout,
            broadcast,
            call,
            check,
            http: HttpKeys {
                method,
                path,
                headers,
                body,
                status,
                server_time,
            },
            grpc: GrpcKeys { rpc, data },
            mqtt: MqttKeys {
                topic,
                subscribe,
                unsubscribe,
                qos,
                retain,
            },
        }
    }
}

impl<'de> Deserialize<'de> for Step {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Step, D::Error> {
        RawStep::deserialize(d).map(Step::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The properties of a table's schema: the keys it holds.
    fn keys<T: JsonSchema>() -> Vec<String> {
        let schema = schemars::schema_for!(T);
        let props = schema.get("properties").and_then(|p| p.as_object());
        props.map_or_else(Vec::new, |p| p.keys().cloned().collect())
    }

    #[test]
    fn every_key_of_a_table_is_given_and_read_into_it() {
        let s: Step = toml::from_str(
            "method = 'GET'\npath = '/'\nheaders = ['A: b']\nbody = ''\nstatus = '2xx'\n\
             server_time = { header = 'X' }\nrpc = 'p.S/M'\ndata = {}\ntopic = 't'\n\
             subscribe = 't'\nunsubscribe = 't'\nqos = 1\nretain = true\n",
        )
        .unwrap();
        let mut given: Vec<String> = KEY_TABLES
            .iter()
            .flat_map(|t| (t.given)(&s))
            .map(|(k, _)| k.to_string())
            .collect();
        given.sort();
        let mut all = [keys::<HttpKeys>(), keys::<GrpcKeys>(), keys::<MqttKeys>()].concat();
        all.sort();
        assert_eq!(given, all);
        let common = keys::<Step>().into_iter().filter(|k| !all.contains(k));
        assert_eq!(common.count(), 14);
    }
}
