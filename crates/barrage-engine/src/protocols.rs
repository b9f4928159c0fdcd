//! The engine's table of protocols: each protocol's spec as a variant of [`ProtocolSpec`]
//! (planned, named and redacted by its own `XSpec`), and the session that runs each variant of
//! `Plan`'s [`Protocol`] ([`with_session`]). A protocol adds a variant and an arm to each, and
//! its plan's variant in `plan.rs`; its spec, plan struct and session live in its own module.

use crate::plan::Protocol;
use crate::session::{self, Session};
use crate::spec::cx::{PlanCx, SpecError, Spoken};
use crate::spec::{GrpcSpec, HttpSpec, McSpec, MqttSpec, RedisSpec, TcpSpec, WsSpec};
use serde::{Deserialize, Serialize};

/// What is spoken on each connection, in the user's words: each protocol's spec lives beside
/// its codec and plans itself (`XSpec::plan`, through [`PlanCx`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProtocolSpec {
    Tcp(TcpSpec),
    Http(HttpSpec),
    /// gRPC calls (h2c, or TLS with ALPN h2).
    Grpc(GrpcSpec),
    Ws(WsSpec),
    Redis(RedisSpec),
    Memcache(McSpec),
    /// MQTT: each connection CONNECTs, subscribes when told, and publishes the load.
    Mqtt(Box<MqttSpec>),
}

impl ProtocolSpec {
    /// Its row of the protocol table (name, schemes, ports, ...).
    pub fn info(&self) -> &'static barrage_scenario::protocol::ProtocolInfo {
        use barrage_scenario::protocol as p;
        match self {
            ProtocolSpec::Tcp(_) => &p::TCP,
            ProtocolSpec::Http(h) => h.info(),
            ProtocolSpec::Grpc(_) => &p::GRPC,
            ProtocolSpec::Ws(_) => &p::WS,
            ProtocolSpec::Redis(_) => &p::REDIS,
            ProtocolSpec::Memcache(_) => &p::MEMCACHE,
            ProtocolSpec::Mqtt(_) => &p::MQTT,
        }
    }

    /// What the protocol's spec makes for the plan.
    pub(crate) fn plan(&self, cx: &PlanCx) -> Result<Spoken, SpecError> {
        match self {
            ProtocolSpec::Tcp(s) => s.plan(cx),
            ProtocolSpec::Http(s) => s.plan(cx),
            ProtocolSpec::Grpc(s) => s.plan(cx),
            ProtocolSpec::Ws(s) => s.plan(cx),
            ProtocolSpec::Redis(s) => s.plan(),
            ProtocolSpec::Memcache(s) => s.plan(),
            ProtocolSpec::Mqtt(s) => s.plan(cx),
        }
    }

    /// Header values hidden (they may hold secrets that are not placeholders); an MQTT user
    /// name and password always.
    pub(crate) fn redact(&mut self) {
        let headers = match self {
            ProtocolSpec::Http(s) => &mut s.headers,
            ProtocolSpec::Ws(s) => &mut s.headers,
            ProtocolSpec::Grpc(s) => &mut s.headers,
            ProtocolSpec::Mqtt(m) => return m.redact(),
            ProtocolSpec::Tcp(_) | ProtocolSpec::Redis(_) | ProtocolSpec::Memcache(_) => return,
        };
        for (_, v) in headers.iter_mut() {
            *v = "<redacted>".into();
        }
    }
}

/// What is done with the session type of a plan's protocol ([`with_session`]).
pub(crate) trait WithSession {
    type Out;
    fn with<S: Session>(self) -> Self::Out;
}

/// `w` with the session that speaks `protocol`.
pub(crate) fn with_session<W: WithSession>(protocol: &Protocol, w: W) -> W::Out {
    match protocol {
        Protocol::Tcp => w.with::<session::tcp::Tcp>(),
        Protocol::Http(_) => w.with::<session::http::Http>(),
        Protocol::H2(_) => w.with::<session::h2::H2>(),
        Protocol::HttpAuto(_) => w.with::<session::https::AnyHttp>(),
        Protocol::Ws(_) => w.with::<session::ws::Ws>(),
        Protocol::Redis(_) => w.with::<session::redis::Redis>(),
        Protocol::Memcache(_) => w.with::<session::memcache::Memcache>(),
        Protocol::Mqtt(_) => w.with::<session::mqtt::Mqtt>(),
    }
}
