//! The step list, `on` rules and departure steps, walked in file order with the captures
//! defined so far: every `{var}` must resolve where it is used (a capture made earlier, a
//! `users.data` column, a built-in), and every capture must be used somewhere after it.
//!
//! Visibility: a capture from the step list is visible to later steps and to `leave` steps; a
//! capture from an `on` rule (which may fire at any time) to that rule's own reply and to
//! `leave` steps, since nothing orders it with the step list.

mod mqtt;
mod refs;
mod request;
mod script;

use super::scope::{FileScope, SecretUse, StepCount};
use super::settings::framing;
use super::values::{pointer, regex, think};
use crate::at::At;
use crate::model::{Expect, File, Match, Step, KEY_TABLES};
use crate::protocol::TargetKind;
use crate::{data, units, ScenarioError};

pub(super) struct Walk {
    pub count: StepCount,
    pub named: Vec<String>,
    pub captures: Vec<String>,
    pub secrets: Vec<SecretUse>,
}

/// Where a capture was made and who may see it.
struct Def {
    name: String,
    key: String,
    line: u32,
    used: bool,
    /// `None`: the step list; `Some(i)`: `on[i]`.
    rule: Option<usize>,
}

#[derive(Clone, Copy, PartialEq)]
enum Part {
    Steps,
    On(usize),
    Leave,
}

struct StepsCheck<'a> {
    cx: &'a FileScope<'a>,
    target: TargetKind,
    framing_none: bool,
    columns: Option<&'a [String]>,
    users: u64,
    defs: Vec<Def>,
    named: Vec<(String, String)>,
    count: StepCount,
    /// The stamp form of the first broadcast step and its key (every one must agree).
    stamp: Option<(String, String)>,
    /// The `{secret:NAME}`s of the templates, in file order.
    secrets: Vec<SecretUse>,
    /// The file names a script (`script = "FILE.lua"`).
    script: bool,
}

type CheckResult = Result<(), ScenarioError>;

pub(super) fn check_all(
    cx: &FileScope,
    file: &File,
    target: TargetKind,
    pushes: bool,
    framing_none: bool,
    data: Option<&data::Table>,
    users: u64,
) -> Result<Walk, ScenarioError> {
    let mut w = StepsCheck {
        cx,
        target,
        framing_none,
        columns: data.map(|t| t.columns.as_slice()),
        users,
        defs: Vec::new(),
        named: Vec::new(),
        count: StepCount::default(),
        stamp: None,
        secrets: Vec::new(),
        script: file.script.is_some(),
    };
    if file.steps.is_empty() {
        return Err(cx.err(
            0,
            "steps",
            "no steps; a user needs at least one step, e.g. [[steps]] send = \"hello\"",
        ));
    }
    // `on` captures first: a step that uses one then hears why it may not.
    for (i, rule) in file.on.iter().enumerate() {
        w.captures(&rule.capture, &format!("on[{i}]"), Part::On(i))?;
    }
    w.list(&file.steps, "steps", Part::Steps, true)?;
    if !file.on.is_empty() && !pushes {
        return Err(cx.err(
            file.on[0].line,
            "on[0]",
            "on rules are for pushed messages (tcp://, ws://); an HTTP server pushes nothing",
        ));
    }
    for (i, rule) in file.on.iter().enumerate() {
        w.count.on += 1;
        let key = format!("on[{i}]");
        w.name(&rule.name, &key)?;
        w.matcher(&rule.matches, &format!("{key}.match"), true)?;
        w.on_call(rule, &key)?;
        // A rule with neither reply nor capture takes the pushes it matches: they are expected
        // (an Engine.IO open packet), not unexpected replies.
        if let Some(r) = &rule.reply {
            if w.target == TargetKind::Mqtt {
                return Err(w.cx.err(
                    r.line,
                    format!("{key}.reply"),
                    "an on rule cannot reply on mqtt:// (a reply names no topic): capture, \
                     and publish from a step",
                ));
            }
            w.template(r, &format!("{key}.reply"), Part::On(i))?;
        }
    }
    w.list(&file.leave, "leave", Part::Leave, false)?;
    w.defs.sort_by_key(|d| d.line);
    if let Some(d) = w.defs.iter().find(|d| !d.used) {
        return Err(cx.err(
            d.line,
            d.key.clone(),
            format!(
                "captured but never used; use {{{}}} in a later step or remove the capture",
                d.name
            ),
        ));
    }
    Ok(Walk {
        count: w.count,
        named: w.named.into_iter().map(|(n, _)| n).collect(),
        captures: w.defs.into_iter().map(|d| d.name).collect(),
        secrets: w.secrets,
    })
}

impl StepsCheck<'_> {
    /// A list of steps; `endless_ok`: the last may be an `every` without `repeat` (the
    /// user's main list only: it runs until the user departs).
    fn list(&mut self, steps: &[At<Step>], key: &str, part: Part, endless_ok: bool) -> CheckResult {
        for (i, s) in steps.iter().enumerate() {
            let k = format!("{key}[{i}]");
            self.step(s, &k, part)?;
            let endless = s.every.is_some() && s.repeat.is_none();
            if endless && (!endless_ok || i + 1 < steps.len()) {
                let why = if endless_ok {
                    format!("repeats until the user departs, so {key}[{}] never runs; give it repeat = N or move the steps after it to [[leave]]", i + 1)
                } else {
                    "would never end here; give it repeat = N".to_string()
                };
                return Err(self.cx.err(
                    s.every.as_ref().map_or(s.line, |e| e.line),
                    format!("{k}.every"),
                    why,
                ));
            }
        }
        Ok(())
    }

    fn step(&mut self, s: &At<Step>, key: &str, part: Part) -> CheckResult {
        let cx = self.cx;
        match part {
            Part::Leave => self.count.leave += 1,
            _ => self.count.steps += 1,
        }
        let kind = self.kind(s, key)?;
        match kind {
            "send" | "fields" | "path" | "rpc" | "subscribe" | "unsubscribe" => {
                self.count.sends += 1;
                if part == Part::Leave {
                    self.count.leave_sends += 1;
                }
            }
            "pause" | "think" => self.count.pauses += 1,
            _ => {}
        }
        self.name(&s.name, key)?;
        self.keys_fit(s, key, kind)?;
        self.mqtt(s, key, kind, part)?;
        self.script_keys(s, key, kind)?;
        match kind {
            "send" | "path" if self.target == TargetKind::Grpc => {
                let v = s.send.as_ref().or(s.http.path.as_ref());
                return Err(cx.err(
                    v.map_or(s.line, |v| v.line),
                    format!("{key}.{kind}"),
                    "the target is grpc://: a step is a call, rpc = \"package.Service/Method\" \
                     (with data = {...})",
                ));
            }
            "rpc" => self.call(s, key, part)?,
            "fields" => {
                let f = s.fields.as_ref().expect("kind fields");
                if !matches!(self.target, TargetKind::Tcp | TargetKind::Mqtt) {
                    return Err(cx.err(
                        f.line,
                        format!("{key}.fields"),
                        "fields (a binary message) is for tcp:// and mqtt:// targets",
                    ));
                }
                self.template(f, &format!("{key}.fields"), part)?;
            }
            "send" => {
                if self.target == TargetKind::Http {
                    return Err(cx.err(s.send.as_ref().map_or(s.line, |v| v.line), format!("{key}.send"), "the target is http://: a step is a request, path = \"/...\" (with method, headers, body)"));
                }
                if let Some(send) = &s.send {
                    self.template(send, &format!("{key}.send"), part)?;
                }
            }
            "path" => self.request(s, key, part)?,
            // Checked with MQTT's other keys (`mqtt`, above).
            "subscribe" | "unsubscribe" => {}
            "pause" => {
                let p = s.pause.as_ref().expect("kind pause");
                cx.duration(p, &format!("{key}.pause"), true)?;
            }
            "think" => {
                let t = s.think.as_ref().expect("kind think");
                think(t).map_err(|e| cx.err(t.line, format!("{key}.think"), e))?;
            }
            _ => {
                if s.every.is_none() && s.repeat.is_none() {
                    return Err(cx.err(
                        s.line,
                        format!("{key}.steps"),
                        "a block runs under repeat = N or every = \"D\"; add one",
                    ));
                }
            }
        }
        if let Some(e) = &s.every {
            let d = cx.duration(e, &format!("{key}.every"), true)?;
            let rate = self.users as f64 / d.as_secs_f64();
            if rate > units::MAX_RATE {
                return Err(cx.err(e.line, format!("{key}.every"), format!("every {} for {} users is {rate:.0} per second, more than the 100M/s barrage can schedule", e.value, self.users)));
            }
        }
        if let Some(r) = &s.repeat {
            if !(1..=1_000_000_000).contains(&r.value) {
                return Err(cx.err(
                    r.line,
                    format!("{key}.repeat"),
                    format!("{}; give 1 to 1000000000", r.value),
                ));
            }
        }
        if let Some(t) = &s.timeout {
            cx.duration(t, &format!("{key}.timeout"), true)?;
        }
        if let Some(b) = &s.broadcast {
            let k = format!("{key}.broadcast");
            let Some(send) = s.send.as_ref() else {
                return Err(cx.err(
                    b.line,
                    &k,
                    "goes with a send step (its message carries the {stamp})",
                ));
            };
            if !send.contains("{stamp}") {
                return Err(cx.err(send.line, format!("{key}.send"), "a broadcast step's message carries {stamp}: put it where the server relays text, e.g. \"text\":\"{stamp}\""));
            }
            if let Some(e) = &b.expect {
                self.template(e, &format!("{k}.expect"), part)?;
            }
            let form = b.stamp.as_ref().map_or("text", |f| f.value.as_str());
            let line = b.stamp.as_ref().map_or(b.line, |f| f.line);
            if !matches!(form, "text" | "binary") {
                return Err(cx.err(
                    line,
                    format!("{k}.stamp"),
                    format!("\"{form}\": give \"text\" (35 text-safe bytes) or \"binary\" (20 bytes, for binary-safe protocols)"),
                ));
            }
            match &self.stamp {
                Some((f, at)) if f != form => {
                    return Err(cx.err(
                        line,
                        format!("{k}.stamp"),
                        format!("\"{form}\", but {at} uses \"{f}\": every broadcast step of a file uses one stamp form"),
                    ));
                }
                Some(_) => {}
                None => self.stamp = Some((form.to_string(), k.clone())),
            }
        }
        if let Some(e) = &s.expect {
            self.expect(e, &format!("{key}.expect"))?;
        }
        if !s.capture.is_empty() && self.no_replies(s.expect.as_ref()) {
            let line = s.capture.values().next().map_or(s.line, |c| c.line);
            return Err(cx.err(
                line,
                format!("{key}.capture"),
                "replies are framed 'none' (not read), so nothing can be captured; set a framing",
            ));
        }
        self.captures(&s.capture, key, part)?;
        if kind == "steps" {
            let endless_ok = false;
            self.list(&s.steps, &format!("{key}.steps"), part, endless_ok)?;
        }
        Ok(())
    }

    /// The one thing a step does: send, path, pause, think or steps.
    fn kind(&self, s: &At<Step>, key: &str) -> Result<&'static str, ScenarioError> {
        let cx = self.cx;
        let kinds: Vec<&'static str> = [
            // A script's `call` makes a message from `send`, or from nothing.
            (
                "send",
                s.send.is_some() || (s.call.is_some() && s.fields.is_none()),
            ),
            ("fields", s.fields.is_some()),
            ("path", s.http.path.is_some()),
            ("rpc", s.grpc.rpc.is_some()),
            ("pause", s.pause.is_some()),
            ("think", s.think.is_some()),
            ("subscribe", s.mqtt.subscribe.is_some()),
            ("unsubscribe", s.mqtt.unsubscribe.is_some()),
            ("steps", !s.steps.is_empty()),
        ]
        .into_iter()
        .filter_map(|(k, on)| on.then_some(k))
        .collect();
        match kinds.as_slice() {
            [k] => Ok(*k),
            [] => Err(cx.err(
                s.line,
                key,
                "a step needs one of send, fields, path (HTTP), rpc (gRPC), subscribe (MQTT), pause, think, or a block of steps",
            )),
            [a, b, ..] => Err(cx.err(
                s.line,
                key,
                format!("a step does one thing: found {a} and {b}; split it into two steps"),
            )),
        }
    }

    /// Keys that only make sense with some kinds of step: each protocol's where its row of
    /// [`KEY_TABLES`] says, reply keys with an exchange, repetition not on a lone pause or think.
    fn keys_fit(&self, s: &At<Step>, key: &str, kind: &str) -> CheckResult {
        let cx = self.cx;
        let exchange = matches!(
            kind,
            "send" | "fields" | "path" | "rpc" | "subscribe" | "unsubscribe"
        );
        for table in &KEY_TABLES {
            for (k, line) in (table.given)(s) {
                if !(table.fits)(s, k, self.target) {
                    return Err(cx.err(line, format!("{key}.{k}"), table.misplaced));
                }
            }
        }
        if !exchange {
            let reply_keys = [
                ("expect", s.expect.as_ref().map(|v| v.line)),
                ("capture", s.capture.values().next().map(|v| v.line)),
                ("timeout", s.timeout.as_ref().map(|v| v.line)),
            ];
            for (k, line) in reply_keys {
                if let Some(line) = line {
                    return Err(cx.err(
                        line,
                        format!("{key}.{k}"),
                        format!("a {kind} step has no reply; put {k} on a send or request step"),
                    ));
                }
            }
        }
        if matches!(kind, "pause" | "think") {
            if let Some(e) = s
                .every
                .as_ref()
                .map(|v| v.line)
                .or(s.repeat.as_ref().map(|v| v.line))
            {
                return Err(cx.err(e, key, format!("a {kind} step cannot repeat; put it in a block: steps = [...] with repeat or every")));
            }
        }
        Ok(())
    }

    fn no_replies(&self, e: Option<&At<Expect>>) -> bool {
        match e.and_then(|e| e.framing.as_ref()) {
            Some(f) => f.trim() == "none",
            None => self.framing_none,
        }
    }

    fn name(&mut self, n: &Option<At<String>>, key: &str) -> CheckResult {
        let Some(n) = n else { return Ok(()) };
        let ok = !n.is_empty()
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !ok {
            return Err(self.cx.err(
                n.line,
                format!("{key}.name"),
                format!(
                    "'{}': a name holds letters, digits, _ and - (it is used as steps.NAME.p99)",
                    n.escape_debug()
                ),
            ));
        }
        if let Some((_, other)) = self.named.iter().find(|(x, _)| x == &n.value) {
            return Err(self.cx.err(
                n.line,
                format!("{key}.name"),
                format!("'{}' already names {other}; names must be unique", n.value),
            ));
        }
        self.named.push((n.value.clone(), key.to_string()));
        Ok(())
    }

    fn expect(&mut self, e: &At<Expect>, key: &str) -> CheckResult {
        let cx = self.cx;
        if let Some(f) = &e.framing {
            framing(f).map_err(|m| cx.err(f.line, format!("{key}.framing"), m))?;
        }
        let m = Match {
            json: e.json.clone(),
            equals: e.equals.clone(),
            regex: e.regex.clone(),
            prefix: e.prefix.clone(),
            at: e.at.clone(),
            type_: e.type_.clone(),
            layout: None,
        };
        let any = m.json.is_some() || m.regex.is_some() || m.prefix.is_some() || m.at.is_some();
        if any && self.no_replies(Some(e)) {
            return Err(cx.err(
                e.line,
                key,
                "replies are framed 'none' (not read), so they cannot be matched; set a framing",
            ));
        }
        self.matcher(&At::new(m, e.line), key, false)?;
        if let Some(t) = &e.timeout {
            cx.duration(t, &format!("{key}.timeout"), true)?;
        }
        Ok(())
    }

    /// At most one of json/regex/prefix (`required`: exactly one); `equals` goes with `json`.
    fn matcher(&self, m: &At<Match>, key: &str, required: bool) -> CheckResult {
        let cx = self.cx;
        let given: Vec<&str> = [
            ("json", m.json.is_some()),
            ("regex", m.regex.is_some()),
            ("prefix", m.prefix.is_some()),
            ("at", m.at.is_some() || m.type_.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, on)| on.then_some(k))
        .collect();
        if given.len() > 1 {
            return Err(cx.err(
                m.line,
                key,
                format!(
                    "give one of json, regex, prefix or at (with type), not {} and {}",
                    given[0], given[1]
                ),
            ));
        }
        if required && given.is_empty() {
            return Err(cx.err(m.line, key, "give one of json, regex, prefix or at (with type) (a rule matching everything would take every reply)"));
        }
        if let Some(t) = &m.type_ {
            super::values::int_type(t).map_err(|e| cx.err(t.line, format!("{key}.type"), e))?;
        }
        match (&m.at, &m.type_) {
            (Some(a), None) => {
                return Err(cx.err(
                    a.line,
                    format!("{key}.at"),
                    "at goes with type = \"u16be\" (the field's type)",
                ))
            }
            (None, Some(t)) => {
                return Err(cx.err(
                    t.line,
                    format!("{key}.type"),
                    "type goes with at = N (the field's offset)",
                ))
            }
            _ => {}
        }
        if let (Some(eq), Some(_)) = (&m.equals, &m.at) {
            let v = eq
                .as_i64()
                .map(i128::from)
                .or_else(|| eq.as_u64().map(i128::from));
            let Some(v) = v else {
                return Err(cx.err(
                    eq.line,
                    format!("{key}.equals"),
                    "a binary field equals a whole number",
                ));
            };
            if let Some(t) = &m.type_ {
                let (lo, hi) = super::values::int_range(t);
                if !(lo..=hi).contains(&v) {
                    return Err(cx.err(
                        eq.line,
                        format!("{key}.equals"),
                        format!(
                            "{v} does not fit {} ({lo} to {hi}): the field never equals it",
                            t.value
                        ),
                    ));
                }
            }
        }
        if let (Some(eq), None, None) = (&m.equals, &m.json, &m.at) {
            return Err(cx.err(
                eq.line,
                format!("{key}.equals"),
                "equals compares the value at a JSON pointer (json = \"/field\") or a binary field (at = N, type = \"u16be\")",
            ));
        }
        if let Some(j) = &m.json {
            pointer(j).map_err(|e| cx.err(j.line, format!("{key}.json"), e))?;
        }
        if let Some(r) = &m.regex {
            regex(r).map_err(|e| cx.err(r.line, format!("{key}.regex"), e))?;
        }
        if let Some(p) = &m.prefix {
            if p.is_empty() {
                return Err(cx.err(
                    p.line,
                    format!("{key}.prefix"),
                    "empty; every message starts with nothing",
                ));
            }
        }
        Ok(())
    }
}
