//! A checked scenario -> a [`Program`] and its [`Users`]: templates compiled with their
//! variables resolved to slots, matchers and captures compiled, blocks laid out as flat
//! operations. The scenario crate has already checked the file (every reference, every key,
//! the limits); what can still fail here is what only the engine's compilers judge (a
//! template's `{seq%N}`, a regex's size), and each failure is one line naming the key.

mod messages;

use super::{Depart, OnRule, Op, Program, StepDef, StepMsg, Users};
use crate::capture::{Anchor, Capture, Matcher};
use crate::message::{fill_secrets, unescape, SecretLookup, Template};
use crate::plan::StatusSet;
use barrage_scenario::model::{self, Step};
use barrage_scenario::{At, Checked};
use std::path::Path;
use std::time::Duration;

/// What the scenario cannot be compiled for: the key and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {why}")]
pub struct CompileError {
    pub key: String,
    pub why: String,
}

fn err(key: impl Into<String>, why: impl std::fmt::Display) -> CompileError {
    CompileError {
        key: key.into(),
        why: why.to_string(),
    }
}

/// What the compiler needs from the run around the scenario.
pub struct Context<'a> {
    /// The scenario's folder (`users.data` is relative to it).
    pub dir: &'a Path,
    /// HTTP targets: the Host header, and headers every request carries (the protocol's).
    pub host_header: &'a str,
    pub headers: &'a [(String, String)],
    pub http: bool,
    /// The protocol's framing sends no reply (`none`).
    pub no_replies: bool,
    /// The run's timeout (a step's default).
    pub timeout: Duration,
    /// `{secret:NAME}`'s value (the environment's), filled into templates and data cells as
    /// literal bytes.
    pub secret: SecretLookup<'a>,
    /// gRPC: the `rpc` steps' calls, resolved by the binary against the .proto.
    pub rpc: &'a [crate::grpc::StepCall],
    /// MQTT targets: the protocol version (steps are PUBLISH, SUBSCRIBE, UNSUBSCRIBE).
    pub mqtt: Option<u8>,
}

/// Compile `c` for the engine.
pub fn compile(c: &Checked, cx: &Context) -> Result<Users, CompileError> {
    let f = &c.file;
    let mut b = Builder {
        cx,
        slots: Vec::new(),
        steps: Vec::new(),
        ops: Vec::new(),
        collect: false,
    };
    // Slots: captures in file order, then the data columns.
    b.slots.extend(c.captures.iter().cloned());
    let mut row_slots = Vec::new();
    if let Some(t) = &c.data {
        for (col, name) in t.columns.iter().enumerate() {
            row_slots.push((col, b.slots.len()));
            b.slots.push(format!("row.{name}"));
        }
    }
    let stamps = has_broadcast(&f.steps) || has_broadcast(&f.leave);
    let stamp_slot = stamps.then(|| {
        b.slots.push("stamp".into());
        b.slots.len() - 1
    });
    b.list(&f.steps, "steps", false)?;
    b.ops.push(Op::End);
    let leave_pc = b.ops.len();
    let mut leave_ns = 0u64;
    b.list(&f.leave, "leave", true)?;
    for op in &b.ops[leave_pc..] {
        leave_ns = leave_ns.saturating_add(match op {
            Op::Send(s) => b.steps[*s as usize].timeout_ns,
            Op::Pause { max_ns, .. } => *max_ns,
            _ => 0,
        });
    }
    let on =
        f.on.iter()
            .enumerate()
            .map(|(i, r)| b.on_rule(r, &format!("on[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
    if b.ops.len() > u16::MAX as usize || b.steps.len() >= u16::MAX as usize {
        return Err(err("steps", "more than 65,000 steps; split the scenario"));
    }
    let rows = match (&f.users.value.data, &c.data) {
        (Some(path), Some(t)) => {
            let rows = barrage_scenario::data::read_rows(&cx.dir.join(&path.value))
                .map_err(|e| err("users.data", e))?;
            fill_rows(rows, &t.columns, &path.value, cx.secret)?
        }
        _ => Vec::new(),
    };
    let loops = b
        .ops
        .iter()
        .filter(|o| matches!(o, Op::Loop { .. }))
        .count();
    let program = Program {
        ops: b.ops.into(),
        leave_pc: leave_pc as u16,
        steps: b.steps.into(),
        on: on.into(),
        slots: b.slots.len(),
        row_slots: row_slots.into(),
        loops,
        collect: b.collect || !f.on.is_empty() || stamps,
        leave_ns,
        stamp_slot,
        stamp_form: stamp_form(&f.steps)
            .or_else(|| stamp_form(&f.leave))
            .unwrap_or_default(),
        shard: 0,
        one_clock: false,
    };
    let arrive = match &c.shape {
        barrage_scenario::Shape::Rate(r) => crate::shape::Shape::constant(*r),
        barrage_scenario::Shape::Stages(s) => {
            crate::shape::Shape::stages(s).map_err(|e| err("users.arrive", e))?
        }
    };
    Ok(Users {
        count: c.users,
        arrive,
        hold_ns: c
            .hold
            .map_or(0, |h| h.as_nanos().min(u64::MAX as u128) as u64),
        depart: match c.depart {
            barrage_scenario::Depart::AtEnd => Depart::AtEnd,
            barrage_scenario::Depart::Rate(r) => Depart::Rate(r),
        },
        program: std::sync::Arc::new(program),
        rows,
        stages: None,
    })
}

/// A data row: its cells' bytes, by column.
type Row = Box<[Box<[u8]>]>;

/// The data rows as bytes, each `{secret:NAME}` of a cell filled (a cell is a value, never a
/// template: the filled value is kept as it is).
fn fill_rows(
    rows: Vec<Vec<String>>,
    columns: &[String],
    file: &str,
    secret: SecretLookup,
) -> Result<Vec<Row>, CompileError> {
    rows.into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.into_iter()
                .enumerate()
                .map(|(c, cell)| {
                    if !cell.contains("{secret:") {
                        return Ok(cell.into_bytes().into());
                    }
                    let column = columns.get(c).map_or("?", String::as_str);
                    fill_secrets(cell.as_bytes(), &mut |n| secret(n))
                        .map(Into::into)
                        .map_err(|e| {
                            err(
                                format!("users.data: {file} row {}, column {column}", i + 1),
                                e,
                            )
                        })
                })
                .collect()
        })
        .collect()
}

struct Builder<'a> {
    cx: &'a Context<'a>,
    /// Variable names by slot.
    slots: Vec<String>,
    steps: Vec<StepDef>,
    ops: Vec<Op>,
    collect: bool,
}

/// The stamp form of the first broadcast step (the checker made every one agree).
fn stamp_form(steps: &[At<Step>]) -> Option<super::stamp::Form> {
    steps.iter().find_map(|s| {
        let form = s.value.broadcast.as_ref().map(|b| {
            match b.value.stamp.as_ref().map(|f| f.value.as_str()) {
                Some("binary") => super::stamp::Form::Binary,
                _ => super::stamp::Form::Text,
            }
        });
        form.or_else(|| stamp_form(&s.value.steps))
    })
}

fn has_broadcast(steps: &[At<Step>]) -> bool {
    steps
        .iter()
        .any(|s| s.value.broadcast.is_some() || has_broadcast(&s.value.steps))
}

fn dur(v: &str, key: &str) -> Result<u64, CompileError> {
    barrage_scenario::units::duration(v)
        .map(|d| d.as_nanos().min(u64::MAX as u128) as u64)
        .map_err(|e| err(key, e))
}

impl Builder<'_> {
    fn list(&mut self, steps: &[At<Step>], key: &str, leave: bool) -> Result<(), CompileError> {
        for (i, s) in steps.iter().enumerate() {
            self.step(&s.value, &format!("{key}[{i}]"), leave)?;
        }
        Ok(())
    }

    fn step(&mut self, s: &Step, key: &str, leave: bool) -> Result<(), CompileError> {
        if let Some(p) = &s.pause {
            let d = dur(&p.value, &format!("{key}.pause"))?;
            self.ops.push(Op::Pause {
                min_ns: d,
                max_ns: d,
            });
            return Ok(());
        }
        if let Some(t) = &s.think {
            let k = format!("{key}.think");
            let (lo, hi) = match t.value.split_once("..") {
                Some((a, b)) => (dur(a, &k)?, dur(b, &k)?),
                None => {
                    let d = dur(&t.value, &k)?;
                    (d, d)
                }
            };
            self.ops.push(Op::Pause {
                min_ns: lo,
                max_ns: hi,
            });
            return Ok(());
        }
        if let Some(e) = &s.every {
            let period_ns = dur(&e.value, &format!("{key}.every"))?.max(1);
            let times = s.repeat.as_ref().map_or(u64::MAX, |r| r.value);
            let at = self.ops.len();
            self.ops.push(Op::End); // replaced below
            let first = self.ops.len();
            if s.steps.is_empty() {
                let st = self.exchange(s, key, true)?;
                self.ops.push(Op::Send(st));
            } else {
                for (i, inner) in s.steps.iter().enumerate() {
                    let k = format!("{key}.steps[{i}]");
                    let inner = &inner.value;
                    if inner.send.is_none()
                        && inner.fields.is_none()
                        && inner.http.path.is_none()
                        && inner.grpc.rpc.is_none()
                        && inner.mqtt.subscribe.is_none()
                        && inner.mqtt.unsubscribe.is_none()
                    {
                        return Err(err(k, "an every block holds only send, request or rpc steps (it sends them all at each tick); put pauses outside it"));
                    }
                    if inner.every.is_some() || inner.repeat.is_some() {
                        return Err(err(k, "an every block cannot hold every or repeat"));
                    }
                    let st = self.exchange(inner, &k, true)?;
                    self.ops.push(Op::Send(st));
                }
            }
            let end = self.ops.len();
            self.ops[at] = Op::Every {
                period_ns,
                times,
                first: first as u16,
                end: end as u16,
            };
            return Ok(());
        }
        if let Some(r) = &s.repeat {
            let start = self.ops.len();
            if s.steps.is_empty() {
                let st = self.exchange(s, key, false)?;
                self.ops.push(Op::Send(st));
            } else {
                self.list(&s.steps, &format!("{key}.steps"), leave)?;
            }
            if r.value == 0 {
                self.ops.truncate(start);
                return Ok(());
            }
            let slot = self
                .ops
                .iter()
                .filter(|o| matches!(o, Op::Loop { .. }))
                .count() as u16;
            self.ops.push(Op::Loop {
                start: start as u16,
                times: r.value,
                slot,
            });
            return Ok(());
        }
        if !s.steps.is_empty() {
            return self.list(&s.steps, &format!("{key}.steps"), leave);
        }
        let st = self.exchange(s, key, false)?;
        self.ops.push(Op::Send(st));
        Ok(())
    }

    fn resolve(&self) -> impl Fn(&str) -> Option<usize> + '_ {
        move |name| self.slots.iter().position(|s| s == name)
    }

    fn template(&self, text: &str, key: &str) -> Result<Template, CompileError> {
        let raw = unescape(text).map_err(|e| err(key, format!("'{text}': {e}")))?;
        Template::with_vars_and_secrets(raw, self.resolve(), self.cx.secret)
            .map_err(|e| err(key, e))
    }

    /// A send or request step: its definition; returns its index.
    fn exchange(&mut self, s: &Step, key: &str, open_loop: bool) -> Result<u16, CompileError> {
        let index = self.steps.len();
        let name = s
            .name
            .as_ref()
            .map_or_else(|| format!("step {}", index + 1), |n| n.value.clone());
        let mut call = None;
        let msg = match (&s.send, &s.http.path, &s.grpc.rpc) {
            _ if self.cx.mqtt.is_some() => self.mqtt(s, key)?,
            (Some(t), _, _) => StepMsg::Bytes(self.template(&t.value, &format!("{key}.send"))?),
            (None, None, None) if s.fields.is_some() => {
                let f = s.fields.as_ref().expect("fields");
                StepMsg::Bytes(
                    crate::message::binary::compile(
                        &f.value,
                        Some(&self.resolve()),
                        Some(self.cx.secret),
                    )
                    .map_err(|e| err(format!("{key}.fields"), e))?,
                )
            }
            (None, Some(p), _) => self.request(s, &p.value, key)?,
            (None, None, Some(_)) => {
                let c = self.cx.rpc.iter().find(|c| c.key == key).ok_or_else(|| {
                    err(
                        format!("{key}.rpc"),
                        "the call was not resolved against a .proto (give protocol.proto or \
                         protocol.reflect = true)",
                    )
                })?;
                call = Some(c);
                self.call(s, c, key)?
            }
            // A script's `call` makes the message from nothing.
            (None, None, None) if s.call.is_some() => StepMsg::Bytes(Template::new(Vec::new())),
            (None, None, None) => return Err(err(key, "a step needs send, path or rpc")),
        };
        let expect = s.expect.as_ref().map(|e| &e.value);
        let mut awaits = match &msg {
            // A publish at QoS 0 is done when written; the rest await their acknowledgement.
            StepMsg::Mqtt(m) => !matches!(m.kind, super::MqttStepKind::Publish { qos: 0, .. }),
            _ => !self.cx.no_replies,
        };
        if let Some(f) = expect.and_then(|e| e.framing.as_ref()) {
            if f.value.trim() == "none" {
                awaits = false;
            } else {
                return Err(err(
                    format!("{key}.expect.framing"),
                    "a framing per step is not supported yet; set it for all steps in [protocol] framing",
                ));
            }
        }
        let matcher = match expect {
            Some(e) => self.matcher(
                e.json.as_ref().map(|v| v.value.as_str()),
                e.equals.as_ref().map(|v| &v.value),
                e.regex.as_ref().map(|v| v.value.as_str()),
                e.prefix.as_ref().map(|v| v.value.as_str()),
                e.at.as_ref()
                    .zip(e.type_.as_ref())
                    .map(|(a, t)| (a.value, t.value.as_str())),
                &format!("{key}.expect"),
            )?,
            None => None,
        };
        let mut captures = Vec::new();
        let mut header_captures = Vec::new();
        for (name, c) in &s.capture {
            let slot = self.resolve()(name)
                .ok_or_else(|| err(format!("{key}.capture.{name}"), "unknown capture"))?;
            let k = format!("{key}.capture.{name}");
            match &c.value.header {
                Some(h) => header_captures.push((slot, h.to_ascii_lowercase().into())),
                None => captures.push((slot, capture(&c.value, &k)?)),
            }
        }
        let timeout = s
            .timeout
            .as_ref()
            .or(expect.and_then(|e| e.timeout.as_ref()));
        let timeout_ns = match timeout {
            Some(t) => dur(&t.value, &format!("{key}.timeout"))?,
            None => self.cx.timeout.as_nanos().min(u64::MAX as u128) as u64,
        };
        let status = match &s.http.status {
            Some(st) => {
                Some(StatusSet::parse(&st.value).map_err(|e| err(format!("{key}.status"), e))?)
            }
            None => None,
        };
        let server_time = match &s.http.server_time {
            None => None,
            Some(t) => Some(match (&t.value.header, &t.value.json) {
                (Some(h), _) => super::ServerTimeFrom::Header(h.trim().to_ascii_lowercase().into()),
                (None, Some(p)) => super::ServerTimeFrom::Json(
                    crate::capture::Pointer::parse(p)
                        .map_err(|e| err(format!("{key}.server_time"), e))?,
                ),
                (None, None) => {
                    return Err(err(format!("{key}.server_time"), "give header or json"))
                }
            }),
        };
        let looks = matcher.is_some()
            || s.check.is_some()
            || !captures.is_empty()
            || matches!(server_time, Some(super::ServerTimeFrom::Json(_)));
        self.collect |= looks;
        let decode = match call {
            Some(c) if looks => Some(c.decode.clone().ok_or_else(|| {
                err(
                    format!("{key}.capture"),
                    "a call's reply is read with its method's descriptors, which this run \
                     does not have (a spec read back carries none): run the scenario file \
                     with its .proto or reflect = true",
                )
            })?),
            _ => None,
        };
        let broadcast = match &s.broadcast {
            None => None,
            Some(b) => Some(super::BroadcastDef {
                expect: match &b.value.expect {
                    Some(e) => Some(self.template(&e.value, &format!("{key}.broadcast.expect"))?),
                    None => None,
                },
                include_self: b.value.self_.unwrap_or(true),
            }),
        };
        self.steps.push(StepDef {
            name,
            msg,
            expect: matcher,
            captures: captures.into(),
            header_captures: header_captures.into(),
            status,
            timeout_ns,
            awaits,
            open_loop,
            server_time,
            broadcast,
            decode,
            call: s.call.as_ref().map(|c| c.value.as_str().into()),
            check: s.check.as_ref().map(|c| c.value.as_str().into()),
        });
        Ok(index as u16)
    }

    fn matcher(
        &self,
        json: Option<&str>,
        equals: Option<&serde_json::Value>,
        regex: Option<&str>,
        prefix: Option<&str>,
        int: Option<(u32, &str)>,
        key: &str,
    ) -> Result<Option<Matcher>, CompileError> {
        if let Some((at, kind)) = int {
            return Matcher::int(at as usize, kind, equals)
                .map(Some)
                .map_err(|e| err(key, e));
        }
        let m = match (json, regex, prefix) {
            (Some(p), _, _) => match equals {
                Some(v) => Matcher::json(p, v.clone()),
                None => Matcher::json_exists(p),
            },
            (None, Some(r), _) => Matcher::regex(r),
            (None, None, Some(p)) => {
                let raw = unescape(p).map_err(|e| err(format!("{key}.prefix"), e))?;
                Ok(Matcher::prefix(&raw))
            }
            (None, None, None) => return Ok(None),
        };
        m.map(Some).map_err(|e| err(key, e))
    }

    fn on_rule(&mut self, r: &At<model::OnRule>, key: &str) -> Result<OnRule, CompileError> {
        let r = &r.value;
        let m = &r.matches.value;
        let matcher = self
            .matcher(
                m.json.as_ref().map(|v| v.value.as_str()),
                m.equals.as_ref().map(|v| &v.value),
                m.regex.as_ref().map(|v| v.value.as_str()),
                m.prefix.as_ref().map(|v| v.value.as_str()),
                m.at.as_ref()
                    .zip(m.type_.as_ref())
                    .map(|(a, t)| (a.value, t.value.as_str())),
                &format!("{key}.match"),
            )?
            .ok_or_else(|| err(format!("{key}.match"), "give json, regex, prefix or at"))?;
        let reply = match &r.reply {
            Some(t) => Some(self.template(&t.value, &format!("{key}.reply"))?),
            None => None,
        };
        let mut captures = Vec::new();
        for (name, c) in &r.capture {
            let k = format!("{key}.capture.{name}");
            let slot = self.resolve()(name).ok_or_else(|| err(&k, "unknown capture"))?;
            captures.push((slot, capture(&c.value, &k)?));
        }
        Ok(OnRule {
            name: r
                .name
                .as_ref()
                .map_or_else(|| key.to_string(), |n| n.value.clone()),
            matcher,
            reply,
            captures: captures.into(),
            call: r.call.as_ref().map(|c| c.value.as_str().into()),
        })
    }
}

fn capture(c: &model::Capture, key: &str) -> Result<Capture, CompileError> {
    let r = if let Some(p) = &c.json {
        Capture::json(p)
    } else if let Some(re) = &c.regex {
        Capture::regex(re, c.group.map(|g| g.to_string()).as_deref())
    } else if let Some(sep) = &c.split {
        let sep = unescape(sep).map_err(|e| err(key, e))?;
        Capture::split(&sep, c.field.unwrap_or(1) as usize, Anchor::Whole)
    } else if let Some(b) = &c.bytes {
        Capture::bytes(b)
    } else if let (Some(at), Some(t)) = (c.at, &c.type_) {
        Capture::int(at as usize, t)
    } else {
        return Err(err(key, "give json, regex, split or bytes"));
    };
    r.map_err(|e| err(key, e))
}
