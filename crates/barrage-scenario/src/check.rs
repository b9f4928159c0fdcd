//! Validation: the parsed model -> a [`Checked`] scenario, or the first mistake as one line
//! naming the file, the line and the key. Values are checked with the CLI's own grammar
//! ([`crate::units`]); the steps, `on` rules and departure steps, with their `{var}`
//! references and captures, in `check/steps.rs`; the preflight of limits (counts, rates, the
//! arrival shape against the run's length) here.
//!
//! Key design decision: one pass in file order that carries what is defined so far, so "a
//! capture defined earlier in the step list" is checked by construction, and every capture's
//! use is known at the end of the pass.

mod layout;
mod locate;
mod scope;
mod settings;
mod steps;
mod values;

pub(crate) use locate::key_at;
use scope::{secs, FileScope};
pub use scope::{SecretUse, StepCount};
use settings::{protocol, run};

use crate::at::At;
use crate::model::{Arrive, File};
use crate::shape::Shape;
use crate::{data, units, ScenarioError};
use std::path::Path;

use std::time::Duration;

/// The most users one scenario may declare (the engine holds a few hundred bytes per user).
pub const MAX_USERS: u64 = 10_000_000;

/// The longest arrival a scenario may plan (the last user's arrival time).
pub const MAX_ARRIVALS: Duration = Duration::from_secs(30 * 86_400);

use crate::protocol::ProtocolInfo;
pub use crate::protocol::TargetKind;

/// How users leave.
#[derive(Debug, Clone, PartialEq)]
pub enum Depart {
    /// All together when the run ends.
    AtEnd,
    /// This many per second after the hold.
    Rate(f64),
}

/// A scenario that passed every check, with its values resolved.
#[derive(Debug)]
pub struct Checked {
    /// The file as written.
    pub file: File,
    pub target: TargetKind,
    pub users: u64,
    pub shape: Shape,
    pub hold: Option<Duration>,
    pub depart: Depart,
    /// `users.data`, when given: its columns and row count.
    pub data: Option<data::Table>,
    pub count: StepCount,
    /// Named steps, in file order.
    pub named: Vec<String>,
    /// Captured values, in file order.
    pub captures: Vec<String>,
    /// Every `{secret:NAME}` the run fills from the environment (the target, headers, the
    /// steps' templates, `users.data` cells, `run.spawn`), in file order: `barrage validate`
    /// and `run` refuse the file while one of them is unset.
    pub secrets: Vec<SecretUse>,
}

/// The `{secret:NAME}`s of a value that the run fills.
fn secret_uses(v: &At<String>, key: &str, out: &mut Vec<SecretUse>) {
    for (_, r) in crate::vars::refs(v) {
        if let crate::vars::Ref::Secret(name) = r {
            out.push(SecretUse {
                name: name.to_string(),
                line: v.line,
                key: key.to_string(),
            });
        }
    }
}

impl Checked {
    /// One line for `barrage validate`: users, arrival, steps.
    pub fn summary(&self) -> String {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let last = self
            .shape
            .arrival(self.users - 1)
            .map_or(String::new(), |t| format!(", last at {}", secs(t)));
        let hold = self
            .hold
            .map_or(String::new(), |h| format!(", hold {}", secs(h)));
        let depart = match self.depart {
            Depart::AtEnd => "depart at end".to_string(),
            Depart::Rate(r) => format!("depart {r}/s"),
        };
        let named = if self.named.is_empty() {
            String::new()
        } else {
            format!("; named: {}", self.named.join(", "))
        };
        // Steps are counted as the run's header and Steps table count them: those that send.
        let c = self.count;
        let leaving = match c.leave_sends {
            0 => String::new(),
            n => format!(" ({n} on leaving)"),
        };
        format!(
            "{} ({}{last}{hold}, {depart}), {}{leaving}, {}, {}, {}{named}",
            plural(self.users as usize, "user", "users"),
            self.arrive_text(),
            plural(c.sends, "step that sends", "steps that send"),
            plural(c.pauses, "pause", "pauses"),
            plural(c.on, "on rule", "on rules"),
            plural(self.captures.len(), "capture", "captures"),
        )
    }

    /// The command line's overrides (`--users`, `--hold`, `--arrive`), checked as the file's
    /// own values are: the error names the flag.
    pub fn override_users(
        &mut self,
        users: Option<u64>,
        hold: Option<Duration>,
        arrive: Option<f64>,
    ) -> Result<(), String> {
        if let Some(r) = arrive {
            if !(r.is_finite() && r > 0.0) {
                return Err(format!(
                    "--arrive {r}: give users per second above 0, e.g. 50"
                ));
            }
            self.shape = Shape::Rate(r);
        }
        if let Some(h) = hold {
            self.hold = Some(h);
        }
        if let Some(n) = users {
            if n == 0 || n > MAX_USERS {
                return Err(format!("--users {n}: give 1 to {MAX_USERS} users"));
            }
            if let Some(t) = &self.data {
                if t.rows < n {
                    return Err(format!(
                        "--users {n}: users.data has {} rows (row g feeds user g); add rows or lower --users",
                        t.rows
                    ));
                }
            }
            self.users = n;
        }
        if let Some(cap) = self.shape.capacity() {
            if cap < self.users {
                return Err(format!(
                    "--users {}: the arrival stages bring {cap} users; lengthen them or lower --users",
                    self.users
                ));
            }
        }
        Ok(())
    }

    fn arrive_text(&self) -> String {
        match &self.shape {
            Shape::Rate(r) => format!("arrive {r}/s"),
            Shape::Stages(s) => format!("arrive in {} stages", s.len()),
        }
    }
}

pub(crate) fn check(mut file: File, name: &str, dir: &Path) -> Result<Checked, ScenarioError> {
    let cx = FileScope {
        file: name,
        dir: dir.to_path_buf(),
    };
    layout::resolve(&mut file, &cx)?;
    let proto = target_protocol(&cx, &file.target)?;
    let target = proto.steps;
    if let Some(p) = &file.protocol {
        protocol(&cx, p, target)?;
    }
    let u = &file.users;
    if *u.count == 0 || *u.count > MAX_USERS {
        return Err(cx.err(
            u.count.line,
            "users.count",
            format!("{} users; give 1 to {MAX_USERS}", *u.count),
        ));
    }
    let users = *u.count;
    let shape = arrival(&cx, &u.arrive, users)?;
    let hold = u
        .hold
        .as_ref()
        .map(|h| cx.duration(h, "users.hold", false))
        .transpose()?;
    let depart = match &u.depart {
        None => Depart::AtEnd,
        Some(d) if d.trim() == "at_end" => Depart::AtEnd,
        Some(d) => Depart::Rate(units::rate(d).map_err(|e| {
            cx.err(
                d.line,
                "users.depart",
                format!("{e}; or write \"at_end\" (all leave when the run ends)"),
            )
        })?),
    };
    let data = match &u.data {
        None => None,
        Some(p) => {
            let t = data::read(&cx.path(p)).map_err(|e| cx.err(p.line, "users.data", e))?;
            if t.rows < users {
                return Err(cx.err(
                    p.line,
                    "users.data",
                    format!("{} has {} rows for {users} users (row g feeds user g); add rows or lower users.count", p.value, t.rows),
                ));
            }
            Some(t)
        }
    };
    if let Some(sc) = &file.script {
        if target != TargetKind::Tcp {
            return Err(cx.err(
                sc.line,
                "script",
                "is for tcp:// targets (a script speaks raw TCP)",
            ));
        }
        if let Err(e) = std::fs::File::open(cx.path(sc)) {
            let why = match e.kind() {
                std::io::ErrorKind::NotFound => "no such file".to_string(),
                _ => e.to_string(),
            };
            return Err(cx.err(sc.line, "script", format!("{}: {why}", sc.value)));
        }
    }
    let framing_none = file
        .protocol
        .as_ref()
        .and_then(|p| p.framing.as_ref())
        .is_some_and(|f| f.trim() == "none");
    let walk = steps::check_all(
        &cx,
        &file,
        target,
        proto.pushes,
        framing_none,
        data.as_ref(),
        users,
    )?;
    if let Some(r) = &file.run {
        run(&cx, r, &walk.named, &shape, users)?;
    }
    let mut secrets = Vec::new();
    secret_uses(&file.target, "target", &mut secrets);
    for (i, u) in file.urls.iter().enumerate() {
        secret_uses(u, &format!("urls[{i}]"), &mut secrets);
    }
    for (i, h) in file
        .protocol
        .iter()
        .flat_map(|p| p.headers.iter())
        .enumerate()
    {
        secret_uses(h, &format!("protocol.headers[{i}]"), &mut secrets);
    }
    secrets.extend(walk.secrets);
    if let (Some(t), Some(p)) = (&data, &u.data) {
        for (row, column, name) in &t.secrets {
            secrets.push(SecretUse {
                name: name.clone(),
                line: p.line,
                key: format!("users.data: {} row {row}, column {column}", p.value),
            });
        }
    }
    if let Some(spawn) = file.run.as_ref().and_then(|r| r.spawn.as_ref()) {
        secret_uses(spawn, "run.spawn", &mut secrets);
    }
    Ok(Checked {
        target,
        users,
        shape,
        hold,
        depart,
        data,
        count: walk.count,
        named: walk.named,
        captures: walk.captures,
        secrets,
        file,
    })
}

/// The protocol of the file's target URL, from its scheme.
fn target_protocol(cx: &FileScope, t: &At<String>) -> Result<&'static ProtocolInfo, ScenarioError> {
    match crate::protocol::of_url(t) {
        Some((p, _)) => Ok(p),
        None => Err(cx.err(
            t.line,
            "target",
            format!(
                "'{}': write a URL with one of {}",
                t.escape_debug(),
                crate::protocol::supported()
            ),
        )),
    }
}

fn arrival(cx: &FileScope, a: &At<Arrive>, users: u64) -> Result<Shape, ScenarioError> {
    let shape =
        match &a.value {
            Arrive::Rate(r) => {
                Shape::Rate(units::rate(r).map_err(|e| cx.err(a.line, "users.arrive", e))?)
            }
            Arrive::Stages(st) if st.is_empty() => return Err(cx.err(
                a.line,
                "users.arrive",
                "no stages; give a rate like \"50/s\" or stages [{rate = \"10/s\", for = \"1m\"}]",
            )),
            Arrive::Stages(st) => {
                let mut v = Vec::with_capacity(st.len());
                for (i, s) in st.iter().enumerate() {
                    let r = units::rate(&s.rate)
                        .map_err(|e| cx.err(s.rate.line, format!("users.arrive[{i}].rate"), e))?;
                    let d = units::positive_duration(&s.for_)
                        .map_err(|e| cx.err(s.for_.line, format!("users.arrive[{i}].for"), e))?;
                    v.push((r, d));
                }
                Shape::Stages(v)
            }
        };
    // A rate like 1e-9/s is a valid rate but not a run anyone waits for.
    match shape.arrival(users - 1) {
        Some(last) if last <= MAX_ARRIVALS => {}
        _ if shape.capacity().is_some_and(|c| c < users) => {}
        _ => {
            return Err(cx.err(a.line, "users.arrive", format!("the last of {users} users would arrive after more than 30 days; raise the rate")));
        }
    }
    if let Some(cap) = shape.capacity() {
        if cap < users {
            return Err(cx.err(
                a.line,
                "users.arrive",
                format!("the stages bring {cap} users, fewer than users.count = {users}; lengthen a stage or lower the count"),
            ));
        }
    }
    Ok(shape)
}
