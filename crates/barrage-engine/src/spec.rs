//! The run as data: a [`Spec`] says everything the user asked for, validated and with every
//! default resolved, and holds no live object (no TLS config, no compiled template, no
//! socket address that was not already resolved). It serializes (serde), so another process
//! or machine can take the same run, build its own runtime [`Plan`] from it
//! ([`Spec::plan`]) and run its part (`shares`); the JSON result records it.
//!
//! Secrets stay out of a spec: messages, bodies, headers and the target keep their
//! `{secret:NAME}` placeholders, and each process fills them from its own environment when it
//! builds its plan. Bytes (messages, bodies) are written with the escapes `-m` reads, so a
//! spec is readable and round-trips exactly.

pub mod cx;

pub use crate::framing::spec::{parse_expect, TcpSpec};
pub use crate::grpc::spec::{GrpcSpec, PbPartSpec};
pub use crate::http::spec::{HttpSpec, HttpVersion};
pub use crate::memcache::spec::McSpec;
pub use crate::mqtt::spec::MqttSpec;
pub use crate::plan::{Clock, ShareSet};
pub use crate::protocols::ProtocolSpec;
pub use crate::redis::spec::RedisSpec;
pub use crate::ws::spec::WsSpec;
pub use cx::SpecError;

use crate::framing::Framing;
use crate::message::escape;
use crate::plan::{Mode, Plan, Protocol, Target, TlsPlan};
use cx::{invalid, PlanCx};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    /// The target as shown (secrets and query tokens hidden) and the address it resolved to.
    pub target: String,
    pub addr: SocketAddr,
    /// The host name as written (the TLS server name).
    pub host: String,
    pub protocol: ProtocolSpec,
    /// More addresses of the same server (`--url`), connections spread round robin.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_addrs: Vec<SocketAddr>,
    /// Source addresses to connect from (`--source-ip`); empty: the kernel's choice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<std::net::IpAddr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSpec>,
    /// An HTTP proxy the connections tunnel through (CONNECT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxySpec>,
    pub connections: u64,
    pub threads: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_rate: Option<f64>,
    pub max_connecting: u32,
    /// How long the load runs; `None` with `requests`: until they are done, at most
    /// [`REQUESTS_TIME_BOUND`] (every run is bounded in time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    pub warmup_ns: u64,
    pub mode: ModeSpec,
    pub pipeline: u32,
    pub max_backlog: u64,
    /// Open loop: timer slack (0: exact).
    #[serde(default)]
    pub timer_slack_ns: u64,
    pub timeout_ns: u64,
    pub connect_timeout_ns: u64,
    pub drain_ns: u64,
    /// When time zero of the run is.
    #[serde(default)]
    pub clock: Clock,
    /// Which shares this process runs; `None`: all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shares: Option<ShareSet>,
    /// Every shard of the run reads one clock (processes of one host, `--one-clock`): a
    /// broadcast delivery between shards is timed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_clock: bool,
    /// `--rate-stages`, as written: the open-loop rate follows these points (`mode` is
    /// `Rate` at their peak).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_stages: Option<String>,
    /// `--conn-stages`, as written: how many connections are open over time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conn_stages: Option<String>,
    /// A scenario file: connections are its users, running its steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<ScenarioSpec>,
    /// `--max-frame`: the longest reply a length-field framing takes [default 16 MiB].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_frame: Option<u64>,
    /// `--script` (or a scenario's `script`): the script's file and budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<ScriptSpec>,
}

/// A script as the result records it: its file as named and its instruction budget per call
/// (not its text, which may hold what a result should not; each process of a split run reads
/// and compiles the file itself, from the same flags).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScriptSpec {
    pub file: String,
    pub budget: u64,
    /// `--script-unsafe`: the script had Lua's full standard libraries.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsafe_libs: bool,
}

/// A scenario as data: the file's text (so the spec runs anywhere the files it names are)
/// and the command line's overrides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSpec {
    /// The file as named on the command line.
    pub file: String,
    pub text: String,
    #[serde(default)]
    pub yaml: bool,
    /// Where the files it names are (`users.data`).
    pub dir: std::path::PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrive: Option<f64>,
    /// `-d` (or the file's `run.duration`): the load stops then even if users remain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_ns: Option<u64>,
    /// The file as this process already checked it (overrides applied), so that a run parses
    /// its scenario once; never recorded: a spec read back parses its `text`.
    #[serde(skip)]
    pub checked: Option<Checked>,
    /// gRPC: each `rpc` step's call, its message encoded from its `data` with the .proto.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rpc: Vec<RpcStepSpec>,
    /// gRPC: how each `rpc` step that looks into its reply decodes it, by step key (built from
    /// the .proto by the process that resolved the run; never recorded).
    #[serde(skip)]
    pub replies: Option<Replies>,
}

/// A scenario's `rpc` step, resolved against the .proto.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpcStepSpec {
    /// The step's key in the file (`steps[2]`, `leave[0].steps[1]`).
    pub key: String,
    /// `/package.Service/Method`.
    pub path: String,
    /// The request message from the step's `data`, `{var}`s left as holes.
    pub message: Vec<PbPartSpec>,
    /// A client-streaming (or bidirectional) call's further messages (`data` a list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_messages: Vec<Vec<PbPartSpec>>,
    #[serde(default)]
    pub streaming: bool,
}

/// The reply decoders of a scenario's `rpc` steps, by step key.
#[derive(Clone, Default)]
pub struct Replies(pub std::collections::BTreeMap<String, crate::grpc::Decode>);

impl std::fmt::Debug for Replies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

impl PartialEq for Replies {
    fn eq(&self, _: &Replies) -> bool {
        true
    }
}

/// A checked scenario carried beside the text it came from. Two are always equal: the text
/// they came from is what a spec compares.
#[derive(Clone, Debug)]
pub struct Checked(pub std::sync::Arc<barrage_scenario::Checked>);

impl PartialEq for Checked {
    fn eq(&self, _: &Checked) -> bool {
        true
    }
}

impl ScenarioSpec {
    /// The file checked, with the overrides applied: as this process checked it already, or
    /// parsed from the text.
    pub fn checked(&self) -> Result<std::sync::Arc<barrage_scenario::Checked>, String> {
        match &self.checked {
            Some(c) => Ok(c.0.clone()),
            None => self.load().map(std::sync::Arc::new),
        }
    }

    /// The file parsed from the text and checked, with the overrides applied.
    pub fn load(&self) -> Result<barrage_scenario::Checked, String> {
        let format = if self.yaml {
            barrage_scenario::Format::Yaml
        } else {
            barrage_scenario::Format::Toml
        };
        let mut c = barrage_scenario::load_str(&self.file, &self.text, format, &self.dir)
            .map_err(|e| e.to_string())?;
        c.override_users(
            self.users,
            self.hold_ns.map(Duration::from_nanos),
            self.arrive,
        )?;
        Ok(c)
    }
}

/// Open-loop timer slack when none is given (see [`crate::pacer::Schedule::slack_ns`]).
pub const DEFAULT_TIMER_SLACK_NS: u64 = 1_000_000;

/// `-n` without `-d` also stops after this long: every run is bounded in time.
pub const REQUESTS_TIME_BOUND: Duration = Duration::from_secs(600);

/// An HTTP proxy's CONNECT tunnel (`--proxy`, `https_proxy`, ...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProxySpec {
    /// As shown: `http://HOST:PORT`, without credentials.
    pub url: String,
    /// Where the connections go.
    pub addr: SocketAddr,
    /// `Proxy-Authorization: Basic` credentials (base64 of `USER:PASSWORD`); hidden in the
    /// result ([`Spec::redacted`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
}

impl ProxySpec {
    /// The CONNECT request to `host` (the target's name as written) at `port`.
    pub fn connect(&self, host: &str, port: u16) -> Box<[u8]> {
        let authority = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let auth = self
            .auth
            .as_ref()
            .map(|a| format!("Proxy-Authorization: Basic {a}\r\n"))
            .unwrap_or_default();
        format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n{auth}\r\n")
            .into_bytes()
            .into_boxed_slice()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TlsSpec {
    /// Verification off (`--insecure`).
    pub insecure: bool,
    /// Extra trusted certificates (`--cacert`), read by each process that builds the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacert: Option<std::path::PathBuf>,
    /// The client's certificate chain for mutual TLS (`--cert`), and its key's file when apart
    /// (`--key`): paths only, read by each process that builds the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<std::path::PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<std::path::PathBuf>,
    /// The name the server's certificate is checked against (`--servername`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servername: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModeSpec {
    PingPong,
    Think { ns: u64 },
    Interval { ns: u64 },
    Rate { per_s: f64 },
}

/// `plan` run by the users of scenario `sc`.
fn with_scenario(
    plan: Plan,
    sc: &ScenarioSpec,
    one_clock: bool,
    host_header: &str,
    headers: &[(String, String)],
    secret: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
) -> Result<Plan, SpecError> {
    let checked = sc.checked().map_err(SpecError::Scenario)?;
    let mut rpc = Vec::with_capacity(sc.rpc.len());
    for r in &sc.rpc {
        rpc.push(crate::grpc::StepCall {
            key: r.key.clone(),
            path: r.path.clone(),
            streaming: r.streaming,
            messages: std::iter::once(&r.message)
                .chain(&r.more_messages)
                .map(|m| PbPartSpec::source(m, "data", secret))
                .collect::<Result<_, _>>()?,
            decode: sc.replies.as_ref().and_then(|d| d.0.get(&r.key)).cloned(),
        });
    }
    let secret = std::cell::RefCell::new(secret);
    let lookup = |name: &str| (secret.borrow_mut())(name);
    let cx = crate::users::compile::Context {
        dir: &sc.dir,
        host_header,
        headers,
        http: matches!(
            plan.protocol,
            Protocol::Http(_) | Protocol::H2(_) | Protocol::HttpAuto(_)
        ),
        no_replies: plan.framing == Framing::None,
        timeout: plan.timeout,
        secret: &lookup,
        rpc: &rpc,
        mqtt: match &plan.protocol {
            Protocol::Mqtt(m) => Some(m.version),
            _ => None,
        },
    };
    let mut users = crate::users::compile(&checked, &cx)
        .map_err(|e| SpecError::Scenario(format!("{}: {e}", sc.file)))?;
    let program = std::sync::Arc::get_mut(&mut users.program).expect("just compiled");
    if let Some(s) = &plan.shares {
        program.shard = (s.run.first().copied().unwrap_or(0) / s.run.len().max(1)) as u8;
    }
    program.one_clock = one_clock;
    let mut plan = plan.with_users(users);
    if let (Some(max), Some(d)) = (sc.max_duration_ns, plan.duration) {
        plan.duration = Some(d.min(Duration::from_nanos(max)));
    }
    Ok(plan)
}

impl From<Mode> for ModeSpec {
    fn from(m: Mode) -> Self {
        match m {
            Mode::PingPong => ModeSpec::PingPong,
            Mode::Think(d) => ModeSpec::Think { ns: ns(d) },
            Mode::Interval(d) => ModeSpec::Interval { ns: ns(d) },
            Mode::Rate(r) => ModeSpec::Rate { per_s: r },
        }
    }
}

impl From<ModeSpec> for Mode {
    fn from(m: ModeSpec) -> Self {
        match m {
            ModeSpec::PingPong => Mode::PingPong,
            ModeSpec::Think { ns } => Mode::Think(Duration::from_nanos(ns)),
            ModeSpec::Interval { ns } => Mode::Interval(Duration::from_nanos(ns)),
            ModeSpec::Rate { per_s } => Mode::Rate(per_s),
        }
    }
}

/// A duration in nanoseconds (saturating at ~584 years).
pub fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

/// Fills `{secret:NAME}` from the environment.
pub fn env_secret(name: &str) -> Option<Vec<u8>> {
    crate::os::env_bytes(name)
}

impl Spec {
    /// A spec with the command line's defaults: 10 connections on one thread, ping-pong with
    /// one request in flight, for 10 s, 5 s timeouts, at most 1,024 connects in flight, a
    /// backlog bound of 1,024, 2 s of drain.
    pub fn new(target: String, addr: SocketAddr, host: String, protocol: ProtocolSpec) -> Spec {
        Spec {
            target,
            addr,
            host,
            protocol,
            more_addrs: Vec::new(),
            source_ips: Vec::new(),
            tls: None,
            proxy: None,
            connections: 10,
            threads: 1,
            connect_rate: None,
            max_connecting: 1024,
            duration_ns: Some(10_000_000_000),
            requests: None,
            warmup_ns: 0,
            mode: ModeSpec::PingPong,
            pipeline: 1,
            max_backlog: 1024,
            timer_slack_ns: DEFAULT_TIMER_SLACK_NS,
            timeout_ns: 5_000_000_000,
            connect_timeout_ns: 5_000_000_000,
            drain_ns: 2_000_000_000,
            clock: Clock::Now,
            shares: None,
            one_clock: false,
            max_frame: None,
            script: None,
            rate_stages: None,
            conn_stages: None,
            scenario: None,
        }
    }

    /// The runtime plan of this spec: secrets filled through `secret` (the environment:
    /// [`env_secret`]), templates compiled, and TLS set up by `tls` (the binary's client
    /// configuration: roots, `--cacert`, pinning).
    pub fn plan(
        &self,
        secret: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
        tls: &dyn Fn(&Spec, &TlsSpec) -> Result<TlsPlan, String>,
    ) -> Result<Plan, SpecError> {
        let cx = PlanCx::new(secret, self.tls.is_some(), self.max_frame);
        let spoken = self.protocol.plan(&cx)?;
        let tls = match &self.tls {
            Some(t) => Some(tls(self, t).map_err(SpecError::Tls)?),
            None => None,
        };
        if let Some(s) = &self.shares {
            if s.count == 0 || s.run.iter().any(|&i| i >= s.count) {
                return Err(SpecError::Shares(format!(
                    "share indices must be below the share count {}",
                    s.count
                )));
            }
        }
        let mut plan = self.plan_of(spoken.protocol, tls);
        plan.message = spoken.message;
        plan.first_message = spoken.first_message;
        plan.verify = spoken.verify;
        plan.framing = match spoken.framing {
            Framing::Field(f) => Framing::Field(crate::framing::LenField {
                max: cx.max_frame(),
                ..f
            }),
            f => f,
        };
        let stages = |flag: &'static str, text: &str| {
            crate::shape::Shape::parse(
                text,
                barrage_scenario::units::duration,
                barrage_scenario::units::rate_or_zero,
            )
            .map_err(|e| invalid(flag, e))
        };
        if let Some(text) = &self.rate_stages {
            plan.rate_shape = Some(std::sync::Arc::new(stages("--rate-stages", text)?));
        }
        if let Some(text) = &self.conn_stages {
            let shape = stages("--conn-stages", text)?;
            let stages = crate::users::ConnStages {
                points: shape.points().to_vec(),
            };
            let users = crate::users::Users::for_load(
                plan.mode,
                plan.timeout,
                plan.framing != Framing::None,
                stages,
            );
            return Ok(plan.with_users(users));
        }
        let (host, headers) = spoken.http.unwrap_or_default();
        match &self.scenario {
            None => Ok(plan),
            Some(sc) => with_scenario(plan, sc, self.one_clock, &host, &headers, &mut |n| {
                cx.lookup(n)
            }),
        }
    }

    /// The plan's load and limits as the spec says, speaking `protocol` (its message and
    /// framing are the protocol's to set).
    fn plan_of(&self, protocol: Protocol, tls: Option<TlsPlan>) -> Plan {
        Plan {
            target: Target {
                url: self.target.clone(),
                addr: self.addr,
                more: self.more_addrs.clone(),
                sources: self.source_ips.clone(),
                proxy: self.proxy.as_ref().map(|p| crate::plan::ProxyPlan {
                    addr: p.addr,
                    connect: p.connect(&self.host, self.addr.port()),
                }),
            },
            protocol,
            tls,
            connections: self.connections,
            threads: self.threads,
            connect_rate: self.connect_rate,
            max_connecting: self.max_connecting,
            duration: match (self.duration_ns, self.requests) {
                (Some(ns), _) => Some(Duration::from_nanos(ns)),
                (None, Some(_)) => Some(REQUESTS_TIME_BOUND),
                (None, None) => None,
            },
            requests: self.requests,
            warmup: Duration::from_nanos(self.warmup_ns),
            message: crate::message::Template::new(Vec::new()),
            first_message: None,
            framing: Framing::Echo,
            verify: false,
            mode: self.mode.into(),
            pipeline: self.pipeline,
            max_backlog: self.max_backlog,
            timer_slack: Duration::from_nanos(self.timer_slack_ns),
            timeout: Duration::from_nanos(self.timeout_ns),
            connect_timeout: Duration::from_nanos(self.connect_timeout_ns),
            drain: Duration::from_nanos(self.drain_ns),
            clock: self.clock,
            shares: self.shares.clone(),
            users: None,
            rate_shape: None,
            script: None,
        }
    }

    /// A copy safe to record anywhere: header values are hidden (they may hold secrets that
    /// are not placeholders), everything else is the user's words with placeholders unfilled.
    pub fn redacted(&self) -> Spec {
        let mut s = self.clone();
        s.protocol.redact();
        if let Some(a) = s.proxy.as_mut().and_then(|p| p.auth.as_mut()) {
            *a = "[redacted]".into();
        }
        s
    }

    /// The spec as JSON (for the result record: redact it first, [`Spec::redacted`]).
    pub fn to_json(&self) -> serde_json::Value {
        // A spec is plain data: serializing it cannot fail.
        serde_json::to_value(self).unwrap_or_default()
    }

    /// Message bytes as a spec writes them.
    pub fn text(bytes: &[u8]) -> String {
        escape(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::SecretError;

    fn spec(protocol: ProtocolSpec) -> Spec {
        Spec {
            target: "tcp://127.0.0.1:7000".into(),
            addr: "127.0.0.1:7000".parse().unwrap(),
            host: "127.0.0.1".into(),
            protocol,
            more_addrs: Vec::new(),
            source_ips: Vec::new(),
            proxy: None,
            tls: None,
            connections: 10,
            threads: 2,
            connect_rate: Some(100.0),
            max_connecting: 64,
            duration_ns: Some(2_000_000_000),
            requests: None,
            warmup_ns: 0,
            mode: ModeSpec::Interval { ns: 50_000_000 },
            pipeline: 1,
            max_backlog: 1024,
            timer_slack_ns: DEFAULT_TIMER_SLACK_NS,
            timeout_ns: 5_000_000_000,
            connect_timeout_ns: 5_000_000_000,
            drain_ns: 2_000_000_000,
            clock: Clock::At {
                unix_ns: 1_800_000_000_000_000_000,
            },
            shares: Some(ShareSet {
                count: 4,
                run: vec![1, 3],
            }),
            one_clock: false,
            max_frame: None,
            script: None,
            rate_stages: None,
            conn_stages: None,
            scenario: None,
        }
    }

    fn no_tls(_: &Spec, _: &TlsSpec) -> Result<TlsPlan, String> {
        Err("no TLS here".into())
    }

    #[test]
    fn a_spec_round_trips_through_json() {
        for p in [
            ProtocolSpec::Tcp(TcpSpec {
                fields: false,
                message: "PING {seq}\\r\\n\\x00{secret:TOKEN}".into(),
                first_message: Some("AUTH x\\r\\n".into()),
                expect: "delim:\\r\\n".into(),
                verify: false,
            }),
            ProtocolSpec::Http(HttpSpec {
                method: "POST".into(),
                path: "/a?b=c".into(),
                host_header: "h".into(),
                headers: vec![("X-A".into(), "1".into())],
                body: Some("{\"k\":1}".into()),
                expect_status: vec![(200, 299)],
                version: HttpVersion::H1,
                streams: 1,
                h2: Default::default(),
            }),
            ProtocolSpec::Http(HttpSpec {
                method: "GET".into(),
                path: "/".into(),
                host_header: "h".into(),
                headers: vec![],
                body: None,
                expect_status: vec![(200, 299)],
                version: HttpVersion::H2,
                streams: 10,
                h2: Default::default(),
            }),
            ProtocolSpec::Redis(RedisSpec {
                commands: vec!["3*GET k:{rand%10}".into(), "SET k v".into()],
                resp3: true,
            }),
            ProtocolSpec::Grpc(GrpcSpec {
                path: "/helloworld.Greeter/SayHello".into(),
                host_header: "h:50051".into(),
                headers: vec![("x-token".into(), "{secret:T}".into())],
                message: vec![
                    PbPartSpec::Bytes {
                        bytes: "\\x08\\x01".into(),
                    },
                    PbPartSpec::Message {
                        field: 2,
                        parts: vec![PbPartSpec::Text {
                            field: 1,
                            value: "user-{seq}".into(),
                        }],
                    },
                ],
                more_messages: vec![PbPartSpec::bytes(b"\x08\x02")],
                streaming: true,
                timeout: Some("5000000u".into()),
                in_turn: false,
                gzip: true,
                streams: 0,
                h2: crate::h2::H2Settings {
                    stream_window: 65_535,
                    conn_window: 1 << 20,
                    header_table: 0,
                },
            }),
        ] {
            let s = spec(p);
            let json = serde_json::to_string(&s).unwrap();
            let back: Spec = serde_json::from_str(&json).unwrap();
            assert_eq!(back, s, "{json}");
        }
    }

    #[test]
    fn the_plan_fills_secrets_from_its_own_environment() {
        let s = spec(ProtocolSpec::Tcp(TcpSpec {
            fields: false,
            message: "key={secret:TOKEN}\\n".into(),
            first_message: None,
            expect: "line".into(),
            verify: false,
        }));
        let mut env = |n: &str| (n == "TOKEN").then(|| b"s3cr3t".to_vec());
        let plan = s.plan(&mut env, &no_tls).unwrap();
        assert_eq!(plan.message.raw(), b"key=s3cr3t\n");
        assert_eq!(plan.framing, Framing::Line);
        assert_eq!(plan.mode, Mode::Interval(Duration::from_millis(50)));
        assert_eq!(plan.shares.as_ref().unwrap().run, vec![1, 3]);
        // The spec itself never holds the value.
        assert!(!serde_json::to_string(&s).unwrap().contains("s3cr3t"));
        let mut none = |_: &str| None;
        assert!(matches!(
            s.plan(&mut none, &no_tls),
            Err(SpecError::Secret(SecretError::Missing(n))) if n == "TOKEN"
        ));
    }

    #[test]
    fn bad_specs_name_what_is_wrong() {
        let mut env = |_: &str| None;
        let mut s = spec(ProtocolSpec::Tcp(TcpSpec {
            fields: false,
            message: "x".into(),
            first_message: None,
            expect: "bytes:0".into(),
            verify: false,
        }));
        let e = s.plan(&mut env, &no_tls).unwrap_err().to_string();
        assert!(e.starts_with("--expect: N must be at least 1"), "{e}");
        s.protocol = ProtocolSpec::Memcache(McSpec {
            commands: vec!["frob k".into()],
        });
        let e = s.plan(&mut env, &no_tls).unwrap_err().to_string();
        assert!(e.starts_with("--command: "), "{e}");
        s.protocol = ProtocolSpec::Redis(RedisSpec {
            commands: vec!["PING".into()],
            resp3: false,
        });
        s.shares = Some(ShareSet {
            count: 2,
            run: vec![2],
        });
        let e = s.plan(&mut env, &no_tls).unwrap_err().to_string();
        assert!(e.starts_with("shares: "), "{e}");
        s.shares = None;
        s.tls = Some(TlsSpec {
            insecure: false,
            cacert: None,
            cert: None,
            key: None,
            servername: None,
        });
        let e = s.plan(&mut env, &no_tls).unwrap_err().to_string();
        assert_eq!(e, "TLS: no TLS here");
    }

    #[test]
    fn recorded_specs_hide_header_values() {
        let s = spec(ProtocolSpec::Http(HttpSpec {
            method: "GET".into(),
            path: "/".into(),
            host_header: "h".into(),
            headers: vec![("Authorization".into(), "Bearer literal".into())],
            body: None,
            expect_status: vec![(200, 399)],
            version: HttpVersion::H1,
            streams: 1,
            h2: Default::default(),
        }));
        let json = serde_json::to_string(&s.redacted()).unwrap();
        assert!(
            !json.contains("literal") && json.contains("Authorization"),
            "{json}"
        );
    }
}
