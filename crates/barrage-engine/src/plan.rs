//! The plan: a validated, fully resolved description of one run, and its split into shares.
//!
//! The binary turns the user's words into a `Plan` (every default resolved, every value
//! checked); the engine only ever sees plans. A plan splits into n disjoint shares that
//! together are exactly the plan: connections by stride (global ids i, i+n, i+2n ...), the
//! request count and the connect rate by proportion. Threads take one share each today;
//! processes and machines can take one each tomorrow, with the same code.

use crate::framing::Framing;
pub use crate::http::status::StatusSet;
use crate::message::Template;
pub use crate::pacer::Mode;
use crate::pacer::Schedule;
use barrage_scenario::protocol::{self, ProtocolInfo};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::time::Duration;

/// What is spoken on a connection once it is open.
#[derive(Clone, Debug)]
pub enum Protocol {
    /// Raw TCP: `Plan::message`, `first_message` and `framing` say everything.
    Tcp,
    Http(HttpPlan),
    /// HTTP/2: streams over one connection (h2c with prior knowledge, or TLS with ALPN h2).
    H2(H2Plan),
    /// `https://`: HTTP/2 or HTTP/1.1, as each connection's ALPN says.
    HttpAuto(Box<AutoPlan>),
    Ws(WsPlan),
    /// Redis (RESP): the `--command` mix.
    Redis(RedisPlan),
    /// memcached text protocol: the `--command` mix.
    Memcache(McPlan),
    /// MQTT: CONNECT, then PUBLISH (the load), SUBSCRIBE (the opening) or neither (held).
    Mqtt(Box<MqttPlan>),
}

impl Protocol {
    /// Its row of the protocol table (name, schemes, ports, ...).
    pub fn info(&self) -> &'static ProtocolInfo {
        match self {
            Protocol::Tcp => &protocol::TCP,
            Protocol::Http(_) => &protocol::HTTP,
            Protocol::H2(h) if h.grpc.is_some() => &protocol::GRPC,
            Protocol::H2(_) => &protocol::H2,
            Protocol::HttpAuto(_) => &protocol::HTTP,
            Protocol::Ws(_) => &protocol::WS,
            Protocol::Redis(_) => &protocol::REDIS,
            Protocol::Memcache(_) => &protocol::MEMCACHE,
            Protocol::Mqtt(_) => &protocol::MQTT,
        }
    }

    pub fn name(&self) -> &'static str {
        self.info().name
    }
}

#[derive(Clone, Debug)]
pub struct HttpPlan {
    pub request: crate::http::RequestTemplate,
    pub expect_status: StatusSet,
}

#[derive(Clone, Debug)]
pub struct H2Plan {
    pub request: crate::h2::H2Request,
    pub expect_status: StatusSet,
    /// Streams in flight per connection at most (`--streams`; the server may allow fewer);
    /// 0: no cap but the server's.
    pub streams: u32,
    /// gRPC calls over the streams (the request's body is the call's message).
    pub grpc: Option<GrpcMode>,
    /// The windows and header table the connections advertise.
    pub settings: crate::h2::H2Settings,
}

/// How a gRPC call goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrpcMode {
    /// Server streaming: any number of reply messages, each timed from the call's start;
    /// unary: exactly one.
    pub streaming: bool,
    /// `grpc-encoding: gzip` (`--compression gzip`): messages sent gzipped, and compressed
    /// ones accepted.
    pub gzip: bool,
}

/// Both requests of an `https://` run: the server's ALPN choice picks one per connection.
#[derive(Clone, Debug)]
pub struct AutoPlan {
    pub h1: HttpPlan,
    pub h2: H2Plan,
}

#[derive(Clone, Debug)]
pub struct WsPlan {
    pub host_header: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub subprotocol: Option<String>,
    /// Binary frames instead of text.
    pub binary: bool,
    /// Largest message accepted from the server.
    pub max_message: u64,
}

#[derive(Clone, Debug)]
pub struct RedisPlan {
    pub commands: crate::command::Commands,
    /// Speak RESP3: every connection opens with `HELLO 3`.
    pub resp3: bool,
}

#[derive(Clone, Debug)]
pub struct McPlan {
    pub commands: crate::command::Commands,
}

/// An MQTT run: who each connection is, what it subscribes to and publishes.
#[derive(Clone, Debug)]
pub struct MqttPlan {
    /// 4 (MQTT 3.1.1) or 5 (MQTT 5.0).
    pub version: u8,
    /// The client identifier (`{conn}` makes each connection's its own).
    pub client_id: crate::message::Template,
    /// CONNECT's user name and password, their secrets filled in.
    pub username: Option<crate::message::Template>,
    pub password: Option<crate::message::Template>,
    /// Seconds; 0: no keep-alive (no PINGREQ).
    pub keepalive_s: u16,
    /// Clean session (3.1.1), clean start (5.0).
    pub clean: bool,
    /// The topic each load request publishes to (`None`: the connections publish nothing).
    pub publish: Option<crate::message::Template>,
    /// The topic filter each connection subscribes to when it opens.
    pub subscribe: Option<crate::message::Template>,
    /// QoS of what is published, and of the subscription.
    pub qos: u8,
    pub sub_qos: u8,
    pub retain: bool,
    /// The largest packet taken from the broker.
    pub max_packet: u64,
}

/// TLS on top of TCP (`https://`, `wss://`).
#[derive(Clone, Debug)]
pub struct TlsPlan {
    pub config: std::sync::Arc<rustls::ClientConfig>,
    pub server_name: rustls::pki_types::ServerName<'static>,
}

#[derive(Clone, Debug)]
pub struct Target {
    /// As the user wrote it, e.g. `tcp://localhost:7000`.
    pub url: String,
    pub addr: SocketAddr,
    /// More addresses of the same server (`--url`): connections are spread over `addr` and
    /// these, round robin by global id.
    pub more: Vec<SocketAddr>,
    /// Source addresses to connect from (`--source-ip`); empty: the kernel's choice.
    pub sources: Vec<std::net::IpAddr>,
    /// An HTTP proxy the connections go through (`--proxy`, `https_proxy`): each connects to
    /// it and asks for a tunnel to the target (CONNECT) before anything else.
    pub proxy: Option<ProxyPlan>,
}

/// An HTTP proxy's CONNECT tunnel to the target.
#[derive(Clone, Debug)]
pub struct ProxyPlan {
    /// Where the connections go.
    pub addr: SocketAddr,
    /// The CONNECT request, whole (with `Proxy-Authorization` when the proxy's URL had
    /// credentials).
    pub connect: Box<[u8]>,
}

impl Target {
    /// One address, the kernel's choice of source.
    pub fn new(url: String, addr: SocketAddr) -> Self {
        Self {
            url,
            addr,
            more: Vec::new(),
            sources: Vec::new(),
            proxy: None,
        }
    }

    /// Every address of the target: `addr` first.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        std::iter::once(self.addr)
            .chain(self.more.iter().copied())
            .collect()
    }

    /// Where connections go: the proxy's address when there is one, else the target's.
    pub fn dial_addrs(&self) -> Vec<SocketAddr> {
        match &self.proxy {
            Some(p) => vec![p.addr],
            None => self.addrs(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub target: Target,
    pub protocol: Protocol,
    pub tls: Option<TlsPlan>,
    pub connections: u64,
    pub threads: usize,
    /// New connections per second, all shares together; `None` = as fast as allowed.
    pub connect_rate: Option<f64>,
    /// Connects in flight at once, all shares together.
    pub max_connecting: u32,
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
    pub warmup: Duration,
    pub message: Template,
    pub first_message: Option<Template>,
    pub framing: Framing,
    pub verify: bool,
    pub mode: Mode,
    pub pipeline: u32,
    pub max_backlog: u64,
    /// Open loop: timer slack (see [`crate::pacer::Schedule::slack_ns`]); zero is exact.
    pub timer_slack: Duration,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// How long to wait for replies in flight once the load stops.
    pub drain: Duration,
    /// When time zero of the run is (a split run names a wall-clock instant).
    pub clock: Clock,
    /// The shares this process runs (`None`: all `threads` of them).
    pub shares: Option<ShareSet>,
    /// A scenario: each connection is a user running its steps (`connections` = users).
    pub users: Option<std::sync::Arc<crate::users::Users>>,
    /// `--rate-stages`: the open-loop rate follows this shape (`mode` is `Rate`), the
    /// connections sending its events round robin.
    pub rate_shape: Option<std::sync::Arc<crate::shape::Shape>>,
    /// `--script`: a user's script renders requests, frames and judges replies
    /// ([`crate::hook`]); attached by the binary, which compiles it.
    pub script: Option<ScriptPlan>,
}

/// A run's script and the longest reply its `frame` may claim.
#[derive(Clone, Debug)]
pub struct ScriptPlan {
    pub hook: crate::hook::HookRef,
    pub max_frame: u64,
}

/// One worker's part of a plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Share {
    pub index: usize,
    pub count: usize,
    /// Global ids of this share's connections: `index + k * count`.
    pub connections: u64,
    pub requests: Option<u64>,
    pub connect_rate: Option<f64>,
    pub max_connecting: u32,
}

impl Share {
    pub fn global_id(&self, local: u64) -> u64 {
        self.index as u64 + local * self.count as u64
    }
}

/// `total` split into `n` parts that differ by at most one and add up exactly.
fn part(total: u64, index: usize, n: usize) -> u64 {
    total / n as u64 + u64::from((index as u64) < total % n as u64)
}

impl Plan {
    /// Latency is timed from the intended send time in open-loop modes.
    pub fn latency_basis(&self) -> barrage_metrics::LatencyBasis {
        if self.mode.is_open_loop() {
            barrage_metrics::LatencyBasis::IntendedSend
        } else {
            barrage_metrics::LatencyBasis::ActualSend
        }
    }

    /// Share `index` of `n`. Shares with no connection are possible when n > connections;
    /// `shares` leaves them out.
    pub fn share(&self, index: usize, n: usize) -> Share {
        let connections = part(self.connections, index, n);
        let frac = connections as f64 / self.connections as f64;
        Share {
            index,
            count: n,
            connections,
            requests: self.requests.map(|r| {
                // Split requests in proportion to connections, exactly.
                let before: u64 = (0..index)
                    .map(|i| part(self.connections, i, n))
                    .sum::<u64>();
                let upto = before + connections;
                r * upto / self.connections - r * before / self.connections
            }),
            connect_rate: self.connect_rate.map(|r| r * frac),
            max_connecting: ((self.max_connecting as f64 * frac).ceil() as u32).max(1),
        }
    }

    /// The non-empty shares for `n` workers (never more shares than connections).
    pub fn shares(&self, n: usize) -> Vec<Share> {
        let n = n.clamp(1, self.connections.max(1) as usize);
        (0..n).map(|i| self.share(i, n)).collect()
    }

    /// The shares this process runs: all `threads` of them, or the named subset of a split
    /// run (shares left without connections are left out).
    pub fn my_shares(&self) -> Vec<Share> {
        match &self.shares {
            None => self.shares(self.threads),
            Some(set) => set
                .run
                .iter()
                .map(|&i| self.share(i, set.count))
                .filter(|s| s.connections > 0)
                .collect(),
        }
    }

    /// The send schedule of global connection `conn` in open-loop modes.
    pub fn schedule(&self, conn: u64) -> Option<Schedule> {
        let end = self.load_end_ns();
        let period_ns = match self.mode {
            Mode::Interval(d) => d.as_nanos() as f64,
            Mode::Rate(r) => self.connections as f64 * 1e9 / r,
            _ => return None,
        };
        if let (Some(shape), Mode::Rate(_)) = (&self.rate_shape, self.mode) {
            return Some(Schedule::shaped(conn, self.connections, shape.clone(), end));
        }
        Some(Schedule::spread(conn, self.connections, period_ns, end))
    }

    pub fn load_end_ns(&self) -> Option<u64> {
        self.duration
            .map(|d| (self.warmup + d).as_nanos().min(u64::MAX as u128 / 2) as u64)
    }

    pub fn timeline(&self) -> barrage_metrics::Timeline {
        barrage_metrics::Timeline {
            warmup_ns: self.warmup.as_nanos() as u64,
            load_end_ns: self.load_end_ns(),
        }
    }
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

impl Plan {
    /// This plan, run by `users`: one connection per user, the load lasting until the last
    /// departure (and its `leave` steps).
    pub fn with_users(mut self, users: crate::users::Users) -> Plan {
        self.connections = users.count;
        let end = users.end_ns();
        let warm = self.warmup.as_nanos().min(u64::MAX as u128) as u64;
        self.duration = Some(std::time::Duration::from_nanos(
            end.saturating_sub(warm).max(1),
        ));
        self.requests = None;
        self.connect_rate = None;
        if users.stages.is_none() {
            // A scenario's steps say what is sent; a ramp keeps the run's mode.
            self.mode = Mode::PingPong;
        }
        self.pipeline = 1;
        self.first_message = None;
        self.verify = false;
        self.users = Some(std::sync::Arc::new(users));
        self
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn plan(connections: u64, mode: Mode) -> Plan {
        Plan {
            target: Target::new("tcp://127.0.0.1:1".into(), "127.0.0.1:1".parse().unwrap()),
            protocol: Protocol::Tcp,
            tls: None,
            connections,
            threads: 1,
            connect_rate: Some(100.0),
            max_connecting: 64,
            duration: Some(Duration::from_secs(2)),
            requests: Some(1001),
            warmup: Duration::ZERO,
            message: Template::new(b"x".to_vec()),
            first_message: None,
            framing: Framing::Echo,
            verify: false,
            mode,
            pipeline: 1,
            max_backlog: 16,
            timer_slack: Duration::ZERO,
            timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(5),
            drain: Duration::from_secs(2),
            clock: Default::default(),
            shares: None,
            users: None,
            rate_shape: None,
            script: None,
        }
    }

    #[test]
    fn shares_are_disjoint_and_cover_the_plan() {
        for (conns, n) in [(10u64, 3usize), (1, 4), (7, 7), (1000, 2), (5, 1)] {
            let p = plan(conns, Mode::PingPong);
            let shares = p.shares(n);
            let mut ids: Vec<u64> = shares
                .iter()
                .flat_map(|s| (0..s.connections).map(move |k| s.global_id(k)))
                .collect();
            ids.sort();
            assert_eq!(ids, (0..conns).collect::<Vec<_>>(), "{conns} over {n}");
            let reqs: u64 = shares.iter().map(|s| s.requests.unwrap()).sum();
            assert_eq!(reqs, 1001);
            let rate: f64 = shares.iter().map(|s| s.connect_rate.unwrap()).sum();
            assert!((rate - 100.0).abs() < 1e-9);
            assert!(shares.iter().all(|s| s.connections > 0));
        }
    }

    /// Every split, exhaustively over a grid (a property test without randomness): N shards of
    /// t threads each run every connection exactly once, their requests add up to the whole,
    /// and each connection's open-loop schedule is the same in whichever shard runs it (so
    /// the shards' rates add up to the whole exactly).
    #[test]
    fn any_split_into_shards_is_the_whole_run_exactly() {
        for conns in 1u64..=40 {
            for requests in [1u64, 7, 1001, 65_537] {
                for t in 1usize..=3 {
                    for n in 1usize..=6 {
                        let mut whole = plan(conns, Mode::Rate(1234.5));
                        whole.requests = Some(requests);
                        whole.threads = t;
                        let mut ids = Vec::new();
                        let mut reqs = 0;
                        for i in 0..n {
                            let mut p = whole.clone();
                            p.shares = Some(ShareSet {
                                count: n * t,
                                run: (i * t..(i + 1) * t).collect(),
                            });
                            for s in p.my_shares() {
                                reqs += s.requests.unwrap();
                                for k in 0..s.connections {
                                    let g = s.global_id(k);
                                    assert_eq!(p.schedule(g), whole.schedule(g), "conn {g}");
                                    ids.push(g);
                                }
                            }
                        }
                        ids.sort_unstable();
                        assert_eq!(
                            ids,
                            (0..conns).collect::<Vec<_>>(),
                            "{conns} conns, {n} shards x {t}"
                        );
                        assert_eq!(reqs, requests, "{conns} conns, {n} shards x {t}");
                    }
                }
            }
        }
    }

    #[test]
    fn open_loop_modes_have_schedules() {
        let p = plan(10, Mode::Rate(1000.0));
        let s = p.schedule(3).unwrap();
        assert_eq!(s.period_ns, 10e6);
        assert_eq!(s.phase_ns, 3_000_000);
        assert!(plan(10, Mode::PingPong).schedule(0).is_none());
        assert_eq!(
            plan(10, Mode::Interval(Duration::from_millis(50)))
                .schedule(0)
                .unwrap()
                .period_ns,
            50e6
        );
    }
}
