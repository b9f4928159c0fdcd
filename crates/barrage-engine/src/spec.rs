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

use crate::framing::{Delimiter, Framing, LenPrefix};
use crate::message::{escape, fill_secrets, unescape, SecretError, Template};
use crate::plan::{
    HttpPlan, McPlan, Mode, Plan, Protocol, RedisPlan, StatusSet, Target, TlsPlan, WsPlan,
};
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

/// What is spoken on each connection, in the user's words.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProtocolSpec {
    Tcp {
        /// Escaped as `-m` reads it (`\r\n`, `\xHH`); with `fields`, a field list as
        /// `--fields` reads it.
        message: String,
        /// `message` is typed binary fields (`crate::message::binary`).
        #[serde(default, skip_serializing_if = "is_false")]
        fields: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_message: Option<String>,
        /// As `--expect` reads it.
        expect: String,
        #[serde(default)]
        verify: bool,
    },
    Http {
        method: String,
        path: String,
        host_header: String,
        headers: Vec<(String, String)>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
        /// Success statuses as inclusive ranges.
        expect_status: Vec<(u16, u16)>,
        /// HTTP/1.1, or HTTP/2 (h2c with prior knowledge; over TLS by ALPN).
        #[serde(default, skip_serializing_if = "HttpVersion::is_h1")]
        version: HttpVersion,
        /// HTTP/2: streams in flight per connection at most (`--streams`; 0: the server's
        /// limit alone, an open loop's default).
        #[serde(default = "one", skip_serializing_if = "is_one")]
        streams: u32,
    },
    /// gRPC calls (h2c, or TLS with ALPN h2).
    Grpc {
        /// `/package.Service/Method`.
        path: String,
        host_header: String,
        /// Metadata (`-H`), sent with every call.
        headers: Vec<(String, String)>,
        /// The request message, encoded once from the user's JSON (or `--data-bin`): its
        /// protobuf bytes with the placeholders' holes.
        message: Vec<PbPartSpec>,
        /// A client-streaming (or bidirectional) call's further messages, sent after
        /// `message` in order before the call is half-closed.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        more_messages: Vec<Vec<PbPartSpec>>,
        /// Server streaming (any number of replies), or unary (one).
        #[serde(default)]
        streaming: bool,
        /// `grpc-timeout` (from `--timeout`), e.g. `5000000u`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<String>,
        /// Calls in flight per connection at most; 0: the server's limit alone.
        #[serde(default = "one", skip_serializing_if = "is_one")]
        streams: u32,
    },
    Ws {
        path: String,
        host_header: String,
        headers: Vec<(String, String)>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subprotocol: Option<String>,
        binary: bool,
        max_message: u64,
        message: String,
        expect: String,
        #[serde(default)]
        verify: bool,
    },
    Redis {
        commands: Vec<String>,
        #[serde(default)]
        resp3: bool,
    },
    Memcache {
        commands: Vec<String>,
    },
    /// MQTT: each connection CONNECTs, subscribes when told, and publishes the load.
    Mqtt(Box<MqttSpec>),
}

/// An MQTT run in the spec's words: templates escaped as `-m` reads them, `{secret:NAME}`
/// left in (the user name and password are always redacted from outputs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MqttSpec {
    /// 4 (3.1.1) or 5 (5.0).
    pub version: u8,
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    pub keepalive_s: u16,
    pub clean: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<String>,
    pub qos: u8,
    pub sub_qos: u8,
    #[serde(default, skip_serializing_if = "is_false")]
    pub retain: bool,
    /// The payload (`-m`), or typed binary fields with `fields`.
    pub message: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub fields: bool,
}

/// A part of a gRPC request message (`crate::grpc::Part`) in the spec's words: bytes escaped
/// as `-m` writes them, a text field's value with its placeholders (and `{secret:NAME}`)
/// unfilled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PbPartSpec {
    /// Encoded fields.
    Bytes { bytes: String },
    /// A string or bytes field (number `field`) rendered per message.
    Text { field: u32, value: String },
    /// A message field (number `field`) with holes inside.
    Message { field: u32, parts: Vec<PbPartSpec> },
}

impl PbPartSpec {
    /// The parts of a message without holes.
    pub fn bytes(b: &[u8]) -> Vec<PbPartSpec> {
        vec![PbPartSpec::Bytes { bytes: escape(b) }]
    }

    /// The template the engine renders from `parts`, with `{secret:NAME}` filled by `secret`
    /// (in a text field's value literally: never read as placeholders).
    pub fn template(
        parts: &[PbPartSpec],
        secret: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
    ) -> Result<crate::grpc::PbTemplate, SpecError> {
        let secret = std::cell::RefCell::new(secret);
        let lookup = |name: &str| (secret.borrow_mut())(name);
        let src = PbPartSpec::source(parts, "-d", &mut |n| lookup(n))?;
        crate::grpc::PbTemplate::compile(&src, &mut |raw| {
            Template::with_secrets(raw, &lookup).map_err(|e| invalid("-d", e))
        })
    }

    /// The parts as bytes, escapes undone (`what` names where they came from in an error):
    /// encoded fields with `{secret:NAME}` filled by `secret`; a text field's value keeps its
    /// `{secret:NAME}`s for its template to fill literally.
    pub fn source(
        parts: &[PbPartSpec],
        what: &'static str,
        secret: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
    ) -> Result<Vec<crate::grpc::PartSrc>, SpecError> {
        pb_source(
            parts,
            &mut |text: &str| {
                let raw = unescape(text).map_err(|err| SpecError::Escape { what, err })?;
                Ok(fill_secrets(&raw, secret)?)
            },
            &mut |text: &str| unescaped(what, text),
        )
    }
}

fn unescaped(what: &'static str, text: &str) -> Result<Vec<u8>, SpecError> {
    unescape(text).map_err(|err| SpecError::Escape { what, err })
}

/// `lit` makes encoded fields' bytes, `text` a text field's raw value.
fn pb_source(
    parts: &[PbPartSpec],
    lit: &mut dyn FnMut(&str) -> Result<Vec<u8>, SpecError>,
    text: &mut dyn FnMut(&str) -> Result<Vec<u8>, SpecError>,
) -> Result<Vec<crate::grpc::PartSrc>, SpecError> {
    use crate::grpc::PartSrc;
    parts
        .iter()
        .map(|p| {
            Ok(match p {
                PbPartSpec::Bytes { bytes: b } => PartSrc::Lit(lit(b)?),
                PbPartSpec::Text { field, value } => PartSrc::Text {
                    field: *field,
                    raw: text(value)?,
                },
                PbPartSpec::Message { field, parts } => PartSrc::Msg {
                    field: *field,
                    parts: pb_source(parts, lit, text)?,
                },
            })
        })
        .collect()
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// Which HTTP a run speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HttpVersion {
    #[default]
    H1,
    H2,
    /// `https://`: h2 or HTTP/1.1, as each connection's ALPN says.
    Auto,
}

impl HttpVersion {
    pub fn is_h1(&self) -> bool {
        *self == HttpVersion::H1
    }
}

impl ProtocolSpec {
    /// Its row of the protocol table (name, schemes, ports, ...).
    pub fn info(&self) -> &'static barrage_scenario::protocol::ProtocolInfo {
        use barrage_scenario::protocol as p;
        match self {
            ProtocolSpec::Tcp { .. } => &p::TCP,
            ProtocolSpec::Http {
                version: HttpVersion::H2,
                ..
            } => &p::H2,
            ProtocolSpec::Http { .. } => &p::HTTP,
            ProtocolSpec::Grpc { .. } => &p::GRPC,
            ProtocolSpec::Ws { .. } => &p::WS,
            ProtocolSpec::Redis { .. } => &p::REDIS,
            ProtocolSpec::Memcache { .. } => &p::MEMCACHE,
            ProtocolSpec::Mqtt(_) => &p::MQTT,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TlsSpec {
    /// Verification off (`--insecure`).
    pub insecure: bool,
    /// Extra trusted certificates (`--cacert`), read by each process that builds the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacert: Option<std::path::PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModeSpec {
    PingPong,
    Think { ns: u64 },
    Interval { ns: u64 },
    Rate { per_s: f64 },
}

/// Time zero of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Clock {
    /// When this process starts the run (monotonic within the process).
    #[default]
    Now,
    /// A wall-clock instant (ns since the Unix epoch) that every process of a split run
    /// waits for, so their timelines, segments and schedules line up.
    At { unix_ns: u64 },
}

/// The shares of a run that one process takes: `count` shares in all (connections by
/// stride, see [`Plan::share`]), of which this process runs `run`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareSet {
    pub count: usize,
    pub run: Vec<usize>,
}

/// Why a spec does not make a plan.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("{0}")]
    Secret(#[from] SecretError),
    #[error("{what}: {err}")]
    Escape {
        what: &'static str,
        err: crate::message::EscapeError,
    },
    #[error("{what}: {err}")]
    Invalid { what: &'static str, err: String },
    #[error("{0}")]
    Request(#[from] crate::http::RequestError),
    #[error("--command: {0}")]
    Command(#[from] crate::command::CommandError),
    #[error("shares: {0}")]
    Shares(String),
    #[error("TLS: {0}")]
    Tls(String),
    /// A scenario file that cannot run; the text names the file.
    #[error("{0}")]
    Scenario(String),
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

fn invalid(what: &'static str, err: impl std::fmt::Display) -> SpecError {
    SpecError::Invalid {
        what,
        err: err.to_string(),
    }
}

/// `--expect`'s grammar: `echo`, `bytes:N`, `line`, `delim:TEXT`, `len:KIND`, `none`. The
/// error says how to fix the value.
pub fn parse_expect(spec: &str) -> Result<Framing, String> {
    let (kind, arg) = spec.split_once(':').unwrap_or((spec, ""));
    Ok(match (kind, arg) {
        ("echo", "") => Framing::Echo,
        ("line", "") => Framing::Line,
        ("none", "") => Framing::None,
        ("bytes", n) => {
            let n: u64 = n.parse().map_err(|_| {
                "write bytes:N with N the reply size in bytes, e.g. bytes:64".to_string()
            })?;
            if n == 0 {
                return Err("N must be at least 1 (use --expect none for no reply)".into());
            }
            Framing::Bytes(n)
        }
        ("delim", t) => {
            let b = unescape(t).map_err(|e| e.to_string())?;
            Framing::Delim(Delimiter::new(&b).ok_or("the delimiter is empty, e.g. delim:\\r\\n")?)
        }
        ("mqtt", "") => Framing::Field(crate::framing::LenField::MQTT),
        ("field", f) => Framing::Field(crate::framing::LenField::parse(f)?),
        ("len", k) => Framing::Len(match k {
            "u16be" => LenPrefix::U16Be,
            "u16le" => LenPrefix::U16Le,
            "u32be" => LenPrefix::U32Be,
            "u32le" => LenPrefix::U32Le,
            _ => return Err("the prefix is one of u16be, u16le, u32be, u32le".into()),
        }),
        _ => {
            return Err("unknown framing; use echo, bytes:N, line, delim:TEXT, \
                 len:u16be|u16le|u32be|u32le, field:OFFSET:TYPE[:ADJUST[:STRIP]], mqtt or none"
                .into())
        }
    })
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
        // One lookup shared by what fills secrets into bytes and the templates that fill them
        // literally.
        let secret = std::cell::RefCell::new(secret);
        let lookup = |name: &str| (secret.borrow_mut())(name);
        let mut bytes = |what: &'static str, text: &str| -> Result<Vec<u8>, SpecError> {
            let raw = unescape(text).map_err(|err| SpecError::Escape { what, err })?;
            Ok(fill_secrets(&raw, &mut |n| lookup(n))?)
        };
        let default_message = Template::new(Vec::new());
        // HTTP: the Host header and headers every request carries (a scenario's requests too).
        let mut http_cx: (String, Vec<(String, String)>) = Default::default();
        let (protocol, message, first_message, framing, verify) = match &self.protocol {
            ProtocolSpec::Tcp {
                message,
                fields,
                first_message,
                expect,
                verify,
            } => {
                let m = if *fields {
                    crate::message::binary::compile(message, None, Some(&lookup))
                        .map_err(|e| invalid("--fields", e))?
                } else {
                    Template::new(bytes("--message", message)?)
                };
                let f = match first_message {
                    Some(t) => Some(Template::new(bytes("--first-message", t)?)),
                    None => None,
                };
                let framing = parse_expect(expect).map_err(|e| invalid("--expect", e))?;
                (Protocol::Tcp, m, f, framing, *verify)
            }
            ProtocolSpec::Http {
                method,
                path,
                host_header,
                headers,
                body,
                expect_status,
                version,
                streams,
            } => {
                // A scenario's requests fill the secrets themselves, literally.
                http_cx = (host_header.clone(), headers.clone());
                let headers = fill_headers(headers, &mut bytes)?;
                let body = match body {
                    Some(b) => Some(bytes("--body", b)?),
                    None => None,
                };
                let h2 = || -> Result<crate::plan::H2Plan, SpecError> {
                    let request = crate::h2::H2Request::new(&crate::h2::H2RequestSpec {
                        method,
                        scheme: if self.tls.is_some() { "https" } else { "http" },
                        path,
                        authority: host_header,
                        headers: &headers,
                        body: body.as_deref(),
                        content_type: None,
                        te_trailers: false,
                    })?;
                    Ok(crate::plan::H2Plan {
                        request,
                        expect_status: StatusSet(expect_status.clone()),
                        streams: *streams,
                        grpc: None,
                    })
                };
                if *version == HttpVersion::H2 {
                    (
                        Protocol::H2(h2()?),
                        default_message,
                        None,
                        Framing::Echo,
                        false,
                    )
                } else {
                    let request = crate::http::RequestTemplate::new(&crate::http::RequestSpec {
                        method,
                        path,
                        host_header,
                        headers: &headers,
                        body: body.as_deref(),
                        keep_alive: true,
                    })?;
                    let h1 = HttpPlan {
                        request,
                        expect_status: StatusSet(expect_status.clone()),
                    };
                    let p = if *version == HttpVersion::Auto {
                        Protocol::HttpAuto(Box::new(crate::plan::AutoPlan { h1, h2: h2()? }))
                    } else {
                        Protocol::Http(h1)
                    };
                    (p, default_message, None, Framing::Echo, false)
                }
            }
            ProtocolSpec::Grpc {
                path,
                host_header,
                headers,
                message,
                more_messages,
                streaming,
                timeout,
                streams,
            } => {
                // A scenario's calls carry the same metadata (and their own deadlines); they
                // fill its secrets themselves, literally.
                http_cx = (host_header.clone(), headers.clone());
                let mut headers = fill_headers(headers, &mut bytes)?;
                if let Some(t) = timeout {
                    headers.push(("grpc-timeout".into(), t.clone()));
                }
                let mut body = Vec::with_capacity(1 + more_messages.len());
                for m in std::iter::once(message).chain(more_messages) {
                    let src = pb_source(m, &mut |t| bytes("-d", t), &mut |t| unescaped("-d", t))?;
                    body.push(crate::grpc::PbTemplate::compile(&src, &mut |raw| {
                        Template::with_secrets(raw, &lookup).map_err(|e| invalid("-d", e))
                    })?);
                }
                let request = crate::h2::H2Request::new(&crate::h2::H2RequestSpec {
                    method: "POST",
                    scheme: if self.tls.is_some() { "https" } else { "http" },
                    path,
                    authority: host_header,
                    headers: &headers,
                    body: None,
                    content_type: Some("application/grpc"),
                    te_trailers: true,
                })?
                .with_grpc_messages(body);
                let p = Protocol::H2(crate::plan::H2Plan {
                    request,
                    expect_status: StatusSet(vec![(200, 200)]),
                    streams: *streams,
                    grpc: Some(crate::plan::GrpcMode {
                        streaming: *streaming,
                    }),
                });
                (p, default_message, None, Framing::Echo, false)
            }
            ProtocolSpec::Ws {
                path,
                host_header,
                headers,
                subprotocol,
                binary,
                max_message,
                message,
                expect,
                verify,
            } => {
                let headers = fill_headers(headers, &mut bytes)?;
                let m = Template::new(bytes("--message", message)?);
                let framing = parse_expect(expect).map_err(|e| invalid("--expect", e))?;
                let p = Protocol::Ws(WsPlan {
                    host_header: host_header.clone(),
                    path: path.clone(),
                    headers,
                    subprotocol: subprotocol.clone(),
                    binary: *binary,
                    max_message: *max_message,
                });
                (p, m, None, framing, *verify)
            }
            ProtocolSpec::Redis { commands, resp3 } => {
                let commands = crate::command::Commands::redis(commands)?;
                let p = Protocol::Redis(RedisPlan {
                    commands,
                    resp3: *resp3,
                });
                (p, default_message, None, Framing::Echo, false)
            }
            ProtocolSpec::Memcache { commands } => {
                let commands = crate::command::Commands::memcache(commands)?;
                let p = Protocol::Memcache(McPlan { commands });
                (p, default_message, None, Framing::Echo, false)
            }
            ProtocolSpec::Mqtt(m) => {
                let t = |what: &'static str, text: &str| -> Result<Template, SpecError> {
                    Template::with_secrets(unescaped(what, text)?, &lookup)
                        .map_err(|e| invalid(what, e))
                };
                let opt = |what: &'static str, text: &Option<String>| match text {
                    Some(x) => t(what, x).map(Some),
                    None => Ok(None),
                };
                let payload = if m.fields {
                    crate::message::binary::compile(&m.message, None, Some(&lookup))
                        .map_err(|e| invalid("--fields", e))?
                } else {
                    t("--message", &m.message)?
                };
                let publish = opt("--publish", &m.publish)?;
                if let Some(why) = publish
                    .as_ref()
                    .and_then(|t| crate::mqtt::secret_topic_fault(t, "--subscribe"))
                {
                    return Err(invalid("--publish", why));
                }
                let client_id = t("--client-id", &m.client_id)?;
                let username = opt("--username", &m.username)?;
                let password = opt("--password", &m.password)?;
                let subscribe = opt("--subscribe", &m.subscribe)?;
                // Over 65,535 bytes cannot be said: refused here, before any connection.
                for (what, name, t) in [
                    ("--publish", "the topic", publish.as_ref()),
                    ("--subscribe", "the topic filter", subscribe.as_ref()),
                    ("--client-id", "the client id", Some(&client_id)),
                    ("--username", "the user name", username.as_ref()),
                    ("--password", "the password", password.as_ref()),
                ] {
                    if let Some(why) = t.and_then(|t| crate::mqtt::too_long(t, name)) {
                        return Err(invalid(what, why));
                    }
                }
                let p = Protocol::Mqtt(Box::new(crate::plan::MqttPlan {
                    version: m.version,
                    client_id,
                    username,
                    password,
                    keepalive_s: m.keepalive_s,
                    clean: m.clean,
                    publish,
                    subscribe,
                    qos: m.qos,
                    sub_qos: m.sub_qos,
                    retain: m.retain,
                    max_packet: self.max_frame.unwrap_or(crate::framing::DEFAULT_MAX_FRAME),
                }));
                (p, payload, None, Framing::None, false)
            }
        };
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
        let plan = Plan {
            target: Target {
                url: self.target.clone(),
                addr: self.addr,
                more: self.more_addrs.clone(),
                sources: self.source_ips.clone(),
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
            message,
            first_message,
            framing: match framing {
                Framing::Field(f) => Framing::Field(crate::framing::LenField {
                    max: self.max_frame.unwrap_or(crate::framing::DEFAULT_MAX_FRAME),
                    ..f
                }),
                f => f,
            },
            verify,
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
        };
        let mut plan = plan;
        if let Some(text) = &self.rate_stages {
            let shape = crate::shape::Shape::parse(
                text,
                barrage_scenario::units::duration,
                barrage_scenario::units::rate_or_zero,
            )
            .map_err(|e| invalid("--rate-stages", e))?;
            plan.rate_shape = Some(std::sync::Arc::new(shape));
        }
        if let Some(text) = &self.conn_stages {
            let shape = crate::shape::Shape::parse(
                text,
                barrage_scenario::units::duration,
                barrage_scenario::units::rate_or_zero,
            )
            .map_err(|e| invalid("--conn-stages", e))?;
            let stages = crate::users::ConnStages {
                points: shape.points().to_vec(),
            };
            let users = crate::users::Users::for_load(&plan, stages);
            return Ok(plan.with_users(users));
        }
        match &self.scenario {
            None => Ok(plan),
            Some(sc) => with_scenario(plan, sc, self.one_clock, &http_cx.0, &http_cx.1, &mut |n| {
                lookup(n)
            }),
        }
    }

    /// A copy safe to record anywhere: header values are hidden (they may hold secrets that
    /// are not placeholders), everything else is the user's words with placeholders unfilled.
    pub fn redacted(&self) -> Spec {
        let mut s = self.clone();
        let hide = |h: &mut Vec<(String, String)>| {
            for (_, v) in h.iter_mut() {
                *v = "<redacted>".into();
            }
        };
        match &mut s.protocol {
            ProtocolSpec::Http { headers, .. }
            | ProtocolSpec::Ws { headers, .. }
            | ProtocolSpec::Grpc { headers, .. } => hide(headers),
            // An MQTT user name and password are always secret.
            ProtocolSpec::Mqtt(m) => {
                for v in [&mut m.username, &mut m.password].into_iter().flatten() {
                    *v = "<redacted>".into();
                }
            }
            _ => {}
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

/// Unescapes and fills the secrets of one field of the spec.
type FillBytes<'a> = dyn FnMut(&'static str, &str) -> Result<Vec<u8>, SpecError> + 'a;

fn fill_headers(
    headers: &[(String, String)],
    bytes: &mut FillBytes<'_>,
) -> Result<Vec<(String, String)>, SpecError> {
    headers
        .iter()
        .map(|(n, v)| {
            // A header value is taken literally (no escapes); only secrets are filled.
            let filled = bytes("-H/--header", &v.replace('\\', "\\\\"))?;
            let v = String::from_utf8(filled).map_err(|e| invalid("-H/--header", e))?;
            Ok((n.clone(), v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(protocol: ProtocolSpec) -> Spec {
        Spec {
            target: "tcp://127.0.0.1:7000".into(),
            addr: "127.0.0.1:7000".parse().unwrap(),
            host: "127.0.0.1".into(),
            protocol,
            more_addrs: Vec::new(),
            source_ips: Vec::new(),
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
            ProtocolSpec::Tcp {
                fields: false,
                message: "PING {seq}\\r\\n\\x00{secret:TOKEN}".into(),
                first_message: Some("AUTH x\\r\\n".into()),
                expect: "delim:\\r\\n".into(),
                verify: false,
            },
            ProtocolSpec::Http {
                method: "POST".into(),
                path: "/a?b=c".into(),
                host_header: "h".into(),
                headers: vec![("X-A".into(), "1".into())],
                body: Some("{\"k\":1}".into()),
                expect_status: vec![(200, 299)],
                version: HttpVersion::H1,
                streams: 1,
            },
            ProtocolSpec::Http {
                method: "GET".into(),
                path: "/".into(),
                host_header: "h".into(),
                headers: vec![],
                body: None,
                expect_status: vec![(200, 299)],
                version: HttpVersion::H2,
                streams: 10,
            },
            ProtocolSpec::Redis {
                commands: vec!["3*GET k:{rand%10}".into(), "SET k v".into()],
                resp3: true,
            },
            ProtocolSpec::Grpc {
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
                streams: 0,
            },
        ] {
            let s = spec(p);
            let json = serde_json::to_string(&s).unwrap();
            let back: Spec = serde_json::from_str(&json).unwrap();
            assert_eq!(back, s, "{json}");
        }
    }

    #[test]
    fn the_plan_fills_secrets_from_its_own_environment() {
        let s = spec(ProtocolSpec::Tcp {
            fields: false,
            message: "key={secret:TOKEN}\\n".into(),
            first_message: None,
            expect: "line".into(),
            verify: false,
        });
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
        let mut s = spec(ProtocolSpec::Tcp {
            fields: false,
            message: "x".into(),
            first_message: None,
            expect: "bytes:0".into(),
            verify: false,
        });
        let e = s.plan(&mut env, &no_tls).unwrap_err().to_string();
        assert!(e.starts_with("--expect: N must be at least 1"), "{e}");
        s.protocol = ProtocolSpec::Memcache {
            commands: vec!["frob k".into()],
        };
        let e = s.plan(&mut env, &no_tls).unwrap_err().to_string();
        assert!(e.starts_with("--command: "), "{e}");
        s.protocol = ProtocolSpec::Redis {
            commands: vec!["PING".into()],
            resp3: false,
        };
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
        });
        let e = s.plan(&mut env, &no_tls).unwrap_err().to_string();
        assert_eq!(e, "TLS: no TLS here");
    }

    #[test]
    fn recorded_specs_hide_header_values() {
        let s = spec(ProtocolSpec::Http {
            method: "GET".into(),
            path: "/".into(),
            host_header: "h".into(),
            headers: vec![("Authorization".into(), "Bearer literal".into())],
            body: None,
            expect_status: vec![(200, 399)],
            version: HttpVersion::H1,
            streams: 1,
        });
        let json = serde_json::to_string(&s.redacted()).unwrap();
        assert!(
            !json.contains("literal") && json.contains("Authorization"),
            "{json}"
        );
    }
}
