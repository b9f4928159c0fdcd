//! The compiled scenario ([`Program`]): its operations ([`Op`]), the steps they send
//! ([`StepDef`], [`StepMsg`]) and the `on` rules ([`OnRule`]), shared by every user.

use crate::capture::{Capture, Matcher, Vars};
use crate::http::status::StatusSet;
use crate::message::{Fill, Template};
use crate::users::stamp;

/// A compiled scenario: operations, the steps they send, and the `on` rules.
#[derive(Debug, Default)]
pub struct Program {
    pub ops: Box<[Op]>,
    /// The first operation of the departure (`leave` steps); `ops.len()` without any.
    pub leave_pc: u16,
    pub steps: Box<[StepDef]>,
    pub on: Box<[OnRule]>,
    /// Variable slots per user (captures and data columns).
    pub slots: usize,
    /// (data column, slot) filled from the user's row when it starts.
    pub row_slots: Box<[(usize, usize)]>,
    /// Loop counters per user.
    pub loops: usize,
    /// Some step or rule looks into replies: collect their bytes.
    pub collect: bool,
    /// Time the departure steps may take (their timeouts added up).
    pub leave_ns: u64,
    /// The variable slot `{stamp}` renders from (a scenario with broadcast steps).
    pub stamp_slot: Option<usize>,
    /// The form `{stamp}` renders and receivers look for.
    pub stamp_form: stamp::Form,
    /// This process's shard of a split run (its stamps say so; a stamp of another shard is a
    /// delivery from another process, counted, and timed only under `one_clock`). 0 for a
    /// whole run.
    pub shard: u8,
    /// Every shard reads the same clock (one host) and shares time zero: deliveries from
    /// other shards are timed like local ones.
    pub one_clock: bool,
}

impl Program {
    /// The op at `pc`; past the end, the last (a flag program's load op).
    #[inline]
    pub fn step(&self, pc: u16) -> &Op {
        &self.ops[(pc as usize).min(self.ops.len() - 1)]
    }

    /// Where a flag program's load op is (the ops before it are the opening).
    #[inline]
    pub fn load_pc(&self) -> u16 {
        self.ops.len().saturating_sub(1) as u16
    }

    /// The closed-loop window and think time of a flag program (`None`: not a closed loop).
    #[inline]
    pub fn window(&self) -> Option<(u32, u64)> {
        match self.ops.last() {
            Some(Op::Window { window, think_ns }) => Some((*window, *think_ns)),
            _ => None,
        }
    }

    /// The open-loop period of a flag program (`None`: not an open loop).
    #[inline]
    pub fn schedule_period(&self) -> Option<f64> {
        match self.ops.last() {
            Some(Op::Schedule { period_ns }) => Some(*period_ns),
            _ => None,
        }
    }

    /// The longest a user pauses after its arrival before its own pacing begins: the
    /// `think` pauses (at their longest) before the first operation that repeats (an `every`
    /// block, or the start of a `repeat`). 0 when nothing repeats. Replies awaited on the way
    /// (a login) are not counted: their time is measured, not planned. The analysis starts a
    /// scenario's steady state this long after the last user arrived.
    pub fn lead_in_ns(&self) -> u64 {
        let ops = &self.ops[..usize::from(self.leave_pc).min(self.ops.len())];
        let loop_start = ops
            .iter()
            .filter_map(|op| match op {
                Op::Loop { start, .. } => Some(usize::from(*start)),
                _ => None,
            })
            .min();
        let every = ops.iter().position(|op| matches!(op, Op::Every { .. }));
        let Some(first) = [loop_start, every].into_iter().flatten().min() else {
            return 0;
        };
        ops[..first]
            .iter()
            .map(|op| match op {
                Op::Pause { max_ns, .. } => *max_ns,
                _ => 0,
            })
            .sum()
    }
}

/// One step users send: its message, what its reply must be, what it captures.
#[derive(Debug)]
pub struct StepDef {
    pub name: String,
    pub msg: StepMsg,
    pub expect: Option<Matcher>,
    pub captures: Box<[(usize, Capture)]>,
    /// HTTP: (slot, header name in lower case).
    pub header_captures: Box<[(usize, Box<str>)]>,
    /// HTTP: statuses that count as success (`None`: the protocol's default).
    pub status: Option<StatusSet>,
    pub timeout_ns: u64,
    /// A reply is awaited (not `framing = "none"`).
    pub awaits: bool,
    /// Sent by an `every` block (latency from the intended send time).
    pub open_loop: bool,
    /// HTTP: where the response says the server's own time, besides `Server-Timing`.
    pub server_time: Option<ServerTimeFrom>,
    /// A broadcast step: its message carries a stamp; deliveries are expected per send.
    pub broadcast: Option<BroadcastDef>,
    /// gRPC: the reply's messages as JSON, for `expect` and captures (set when the step
    /// looks into its reply).
    pub decode: Option<crate::grpc::Decode>,
    /// The script's function that makes the message from the step's rendered `send`.
    pub call: Option<Box<str>>,
    /// The script's function that judges the step's reply.
    pub check: Option<Box<str>>,
}

/// What a broadcast step expects of each message.
#[derive(Debug)]
pub struct BroadcastDef {
    /// How many receive it (rendered with the user's variables, then read as a number).
    pub expect: Option<Template>,
    /// The sender receives its own copy (and it is expected).
    pub include_self: bool,
}

/// A response field holding the server's own time (milliseconds, or a number with a unit).
#[derive(Debug)]
pub enum ServerTimeFrom {
    /// A header, by its name in lower case.
    Header(Box<str>),
    /// A JSON pointer into the body.
    Json(crate::capture::Pointer),
}

/// `12.5` (milliseconds), `150us`, `1.5ms`, `0.002s`, as ns; `None` for anything else.
pub fn parse_server_time(v: &[u8]) -> Option<u64> {
    let t = std::str::from_utf8(v).ok()?.trim().trim_matches('"');
    let (num, scale) = if let Some(n) = t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = t.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1e9)
    } else {
        (t, 1e6)
    };
    let x: f64 = num.trim().parse().ok()?;
    (x.is_finite() && x >= 0.0).then(|| (x * scale).round() as u64)
}

/// What a step sends.
#[derive(Debug, Clone)]
pub enum StepMsg {
    /// A message payload (TCP bytes, a WebSocket message's payload, a redis inline command).
    Bytes(Template),
    /// An HTTP request: the head up to its last header line, and the body.
    Http {
        head: Template,
        body: Option<Template>,
    },
    /// A gRPC call as an HTTP/1.1 head (the session frames it as HTTP/2), then the prefixed
    /// protobuf message.
    Grpc {
        head: Template,
        /// One message; a client stream's in order.
        msg: Box<[crate::grpc::PbTemplate]>,
        /// Server streaming: any number of reply messages.
        streaming: bool,
    },
    /// An MQTT packet of the user's: PUBLISH, SUBSCRIBE or UNSUBSCRIBE, whole (its packet id
    /// is its exchange's: [`crate::mqtt::pid_of_key`]).
    Mqtt(Box<MqttStep>),
    /// The protocol's own load request (the run's `-m`, HTTP request or command mix).
    Load,
}

/// An MQTT step: what it sends, at which protocol version.
#[derive(Debug, Clone)]
pub struct MqttStep {
    pub version: u8,
    pub kind: MqttStepKind,
}

#[derive(Debug, Clone)]
pub enum MqttStepKind {
    Publish {
        topic: Template,
        payload: Template,
        qos: u8,
        retain: bool,
    },
    Subscribe {
        filter: Template,
        qos: u8,
    },
    Unsubscribe {
        filter: Template,
    },
}

impl MqttStep {
    /// Appends the packet for exchange `key`; returns the bytes an echo would have (the
    /// payload's, for a publish).
    pub fn render(&self, fill: Fill, vars: &Vars, key: u64, out: &mut Vec<u8>) -> u32 {
        let pid = crate::mqtt::pid_of_key(key);
        let v = self.version;
        match &self.kind {
            MqttStepKind::Publish {
                topic,
                payload,
                qos,
                retain,
            } => {
                let h = crate::mqtt::PublishHead {
                    version: v,
                    qos: *qos,
                    retain: *retain,
                    pid,
                };
                crate::mqtt::publish(
                    out,
                    h,
                    |o| {
                        topic.render_vars_into(fill, vars, o);
                    },
                    |o| {
                        payload.render_vars_into(fill, vars, o);
                    },
                ) as u32
            }
            MqttStepKind::Subscribe { filter, qos } => {
                crate::mqtt::subscribe(out, v, pid, *qos, |o| {
                    filter.render_vars_into(fill, vars, o);
                });
                0
            }
            MqttStepKind::Unsubscribe { filter } => {
                crate::mqtt::unsubscribe(out, v, pid, |o| {
                    filter.render_vars_into(fill, vars, o);
                });
                0
            }
        }
    }
}

impl StepMsg {
    /// What keeps this message from being sent for `fill` and `vars`, if anything: a length
    /// field its `{name}` values take below zero, an MQTT topic they make longer than 65,535
    /// bytes. Templates that cannot fail so (checked when compiled) cost a branch.
    pub fn fault(&self, fill: Fill, vars: &Vars) -> Option<String> {
        match self {
            StepMsg::Bytes(t) => t.len_fault(fill, vars),
            StepMsg::Mqtt(m) => match &m.kind {
                MqttStepKind::Publish { topic, payload, .. } => {
                    crate::mqtt::string_fault(topic, "the topic", fill, vars)
                        .or_else(|| payload.len_fault(fill, vars))
                }
                MqttStepKind::Subscribe { filter, .. } | MqttStepKind::Unsubscribe { filter } => {
                    crate::mqtt::string_fault(filter, "the topic filter", fill, vars)
                }
            },
            _ => None,
        }
    }

    /// Append the step's message (before the protocol frames it) to `out`; `tmp` is scratch
    /// space for an HTTP body (its length goes first).
    pub fn render(&self, fill: Fill, vars: &Vars, out: &mut Vec<u8>, tmp: &mut Vec<u8>) {
        match self {
            StepMsg::Bytes(t) => {
                t.render_vars_into(fill, vars, out);
            }
            StepMsg::Http { head, body } => {
                head.render_head_into(fill, vars, out);
                match body {
                    None => out.extend_from_slice(b"\r\n"),
                    Some(b) => {
                        tmp.clear();
                        b.render_vars_into(fill, vars, tmp);
                        out.extend_from_slice(b"Content-Length: ");
                        crate::message::push_u64(out, tmp.len() as u64);
                        out.extend_from_slice(b"\r\n\r\n");
                        out.extend_from_slice(tmp);
                    }
                }
            }
            StepMsg::Grpc { head, msg, .. } => {
                head.render_head_into(fill, vars, out);
                out.extend_from_slice(b"\r\n");
                for m in msg.iter() {
                    m.write_framed_vars(fill, vars, out);
                }
            }
            // Whole, with the packet id of the exchange this send opens (its key is the
            // connection's `seq << 1 | 1`, as `fill.seq` says).
            StepMsg::Mqtt(m) => {
                m.render(fill, vars, fill.seq << 1 | 1, out);
            }
            StepMsg::Load => {}
        }
    }

    /// A gRPC server-streaming call (its reply is any number of messages).
    pub fn streaming(&self) -> bool {
        matches!(
            self,
            StepMsg::Grpc {
                streaming: true,
                ..
            }
        )
    }
}

/// A rule for pushed messages: a match, a reply and captures.
#[derive(Debug)]
pub struct OnRule {
    pub name: String,
    pub matcher: Matcher,
    pub reply: Option<Template>,
    pub captures: Box<[(usize, Capture)]>,
    /// The script's function that makes the reply from `reply` rendered.
    pub call: Option<Box<str>>,
}

/// One operation of a program. A scenario's users run `Send` ... `End` (`worker/users.rs`);
/// the flag modes compile into `Opening`, `Window` and `Schedule` (`crate::modes`, run by
/// `worker/conn_io.rs`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// Send step `.0` and await its reply (or go on at once when it awaits none).
    Send(u16),
    /// Wait a time drawn uniformly from `[min_ns, max_ns]`.
    Pause { min_ns: u64, max_ns: u64 },
    /// Open loop: send the `Send` operations in `[first, end)` at every tick, `period_ns`
    /// apart from the moment the user reaches this operation, `times` ticks (`u64::MAX`:
    /// until the user departs); then go on at `end`.
    Every {
        period_ns: u64,
        times: u64,
        first: u16,
        end: u16,
    },
    /// The end of a `repeat` block: back to `start` until it ran `times` times.
    Loop { start: u16, times: u64, slot: u16 },
    /// The steps are done: stay connected until the departure.
    End,
    /// Send opening message `.0` (`--first-message`, RESP3's `HELLO 3`) and await its reply
    /// before the next op; run each time the connection opens, before the load.
    Opening(u16),
    /// Closed loop: keep `window` load requests in flight; a reply frees its slot, which is
    /// used again after `think_ns`. Runs until the load ends.
    Window { window: u32, think_ns: u64 },
    /// Open loop: send a load request at every tick of the connection's schedule (spread over
    /// all connections, see [`crate::plan::Plan::schedule`]), whatever the replies do.
    Schedule { period_ns: f64 },
}

impl Op {
    /// One of the flag modes' ops (`Opening`, `Window`, `Schedule`), run by
    /// `worker/conn_io.rs`; the others are a scenario's, run by `worker/users.rs`.
    #[inline]
    pub fn of_flags(&self) -> bool {
        matches!(
            self,
            Op::Opening(_) | Op::Window { .. } | Op::Schedule { .. }
        )
    }
}
