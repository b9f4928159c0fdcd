//! The run's recorded config, described from its spec and plan.

use crate::resolve::redact;
use barrage_engine::{escape, unescape, Mode, ModeSpec, Plan, Spec};
use barrage_metrics::RunConfig;

/// What the result records of the settings (`RunConfig`), from the spec and its plan: the
/// user's words with placeholders kept, `--secret-body` messages shown by size only, the
/// HTTP request as `http_note` (method, path, body size).
pub fn describe(
    spec: &Spec,
    plan: &Plan,
    secret_body: bool,
    http_note: Option<String>,
) -> RunConfig {
    let shown = |text: &str, filled_len: usize| {
        if secret_body {
            redact::hidden(filled_len)
        } else {
            let b = unescape(text).unwrap_or_default();
            escape(&b[..b.len().min(256)])
        }
    };
    let tls = spec.tls.is_some();
    let protocol = spec.protocol.info().scheme(tls);
    let said = (super::protocol::for_row(spec.protocol.info()).said)(&spec.protocol);
    let (message, first) = (said.message, said.first_message);
    let expect = said.expect.unwrap_or_else(|| plan.framing.describe());
    let mode: Mode = spec.mode.into();
    let secs = |ns: u64| ns as f64 / 1e9;
    let msecs = |ns: u64| ns as f64 / 1e6;
    RunConfig {
        target: spec.target.clone(),
        protocol: protocol.into(),
        connections: spec.connections,
        threads: spec.threads.min(spec.connections as usize),
        // `-n` alone: the user set no duration; the time bound is a guard, printed at start.
        duration_s: match plan.users {
            Some(_) => plan.duration.map(|d| d.as_secs_f64()),
            None => spec.duration_ns.map(secs),
        },
        requests: spec.requests,
        warmup_s: secs(spec.warmup_ns),
        mode: if plan.users.as_ref().is_some_and(|u| u.stages.is_none()) {
            "users".into()
        } else if said.holds {
            "hold".into()
        } else {
            mode.name().into()
        },
        pipeline: spec.pipeline,
        streams: said.streams,
        think_ms: match spec.mode {
            ModeSpec::Think { ns } => Some(msecs(ns)),
            _ => None,
        },
        interval_ms: match spec.mode {
            ModeSpec::Interval { ns } => Some(msecs(ns)),
            _ => None,
        },
        rate: match spec.mode {
            ModeSpec::Rate { per_s } => Some(per_s),
            _ => None,
        },
        connect_rate: spec.connect_rate,
        timeout_ms: msecs(spec.timeout_ns),
        connect_timeout_ms: msecs(spec.connect_timeout_ns),
        max_backlog: spec.max_backlog,
        timer_slack_ms: matches!(spec.mode, ModeSpec::Interval { .. } | ModeSpec::Rate { .. })
            .then(|| msecs(spec.timer_slack_ns)),
        message: message.map_or_else(String::new, |m| shown(m, plan.message.raw().len())),
        message_bytes: message.map_or(0, |_| plan.message.raw().len()),
        first_message: first
            .zip(plan.first_message.as_ref())
            .map(|(m, t)| shown(m, t.raw().len())),
        expect,
        verify: plan.verify,
        http: http_note,
        proxy: None,
        tls: spec.tls.as_ref().map(|t| {
            if t.insecure {
                "verification off (--insecure)".into()
            } else {
                "verified".into()
            }
        }),
        subprotocol: said.subprotocol,
        commands: said.commands,
        rate_stages: spec.rate_stages.clone(),
        conn_stages: spec.conn_stages.clone(),
        planned_connections: plan
            .users
            .as_ref()
            .and_then(|u| u.stages.as_ref())
            .map_or_else(Vec::new, |s| s.points.clone()),
        planned_rate: plan
            .rate_shape
            .as_deref()
            .map_or_else(Vec::new, |s| s.points().to_vec()),
        steps: scenario_users(plan).map_or_else(Vec::new, |u| {
            u.program
                .steps
                .iter()
                .map(|s| barrage_metrics::ConfigStep {
                    name: s.name.clone(),
                    open_loop: s.open_loop,
                    awaits: s.awaits,
                })
                .collect()
        }),
        users: scenario_users(plan).map(|u| users_config(u, spec)),
        source_ips: spec.source_ips.iter().map(|ip| ip.to_string()).collect(),
        processes: None,
    }
}

/// The users of a scenario run (not those of a `--conn-stages` ramp).
pub(super) fn scenario_users(plan: &Plan) -> Option<&barrage_engine::users::Users> {
    plan.users.as_deref().filter(|u| u.stages.is_none())
}

/// A scenario's users as the result records them.
pub(super) fn users_config(
    u: &barrage_engine::users::Users,
    spec: &Spec,
) -> barrage_metrics::ConfigUsers {
    let points = u.arrive.points();
    let arrive = match points {
        [(_, r)] => format!("{r}/s"),
        _ => format!(
            "{} points, from {}/s",
            points.len(),
            points.first().map_or(0.0, |p| p.1)
        ),
    };
    barrage_metrics::ConfigUsers {
        count: u.count,
        arrive,
        last_arrival_s: u.last_arrival_ns() as f64 / 1e9,
        hold_s: u.hold_ns as f64 / 1e9,
        pacing_after_s: u.program.lead_in_ns() as f64 / 1e9,
        depart: match u.depart {
            barrage_engine::users::Depart::AtEnd => "at_end".into(),
            barrage_engine::users::Depart::Rate(r) => format!("{r}/s"),
        },
        scenario: spec
            .scenario
            .as_ref()
            .map_or_else(String::new, |s| s.file.clone()),
    }
}
