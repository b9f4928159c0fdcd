//! `barrage run`'s flags (the user's words; `resolve/config/` turns them into a plan).

use clap::Args;

#[derive(Args, Debug, Clone)]
#[command(
    next_help_heading = "Load",
    after_help = "Examples:\n  \
barrage tcp://127.0.0.1:7000 -c 1000 --interval 50ms -d 10m\n  \
barrage tcp://127.0.0.1:7000 -c 100 --rate 20k --warmup 5s --json result.json\n  \
barrage redis://127.0.0.1:6379 -c 50 --pipeline 16 --command 'SET key:{seq} {conn}' -n 1M\n  \
barrage http://127.0.0.1:8080/api -X POST -H 'Content-Type: application/json' --body @req.json\n  \
barrage wss://127.0.0.1:9443/chat --subprotocol chat -m '{\"seq\":{seq}}' --rate 5k -c 500\n  \
barrage mqtt://127.0.0.1:1883 -c 100 --publish 'room/{conn%10}' --qos 1 -m hello --rate 10k\n\n\
Durations: 250us, 50ms, 10s, 2m, 1h. Counts and rates: 1000, 10k, 1M.\n\
Exit codes: 0 completed, 1 failed (nothing could connect, no byte came back, or at least 99 %\n\
of the requests failed), 2 bad usage, 3 a --threshold failed (without one: the readiness\n\
verdict failed on errors, correctness or connections), 130 interrupted. --lenient-exit: 0\n\
for any run that ran its course (thresholds still give 3)."
)]
pub struct RunArgs {
    /// Target: tcp://HOST:PORT, http(s)://HOST[:PORT]/PATH, ws(s)://HOST[:PORT]/PATH,
    /// redis://HOST[:PORT], memcache://HOST[:PORT] or mqtt(s)://HOST[:PORT],
    /// or a scenario file (.toml, .yaml): its settings, under the flags given here
    #[arg(value_name = "URL|FILE")]
    pub target: String,

    #[command(flatten)]
    pub file: super::groups::FileArgs,

    /// A scenario file's run, set by `resolve/scenario.rs` (not a flag).
    #[arg(skip)]
    pub scenario: Option<barrage_engine::ScenarioSpec>,

    #[command(flatten)]
    pub load: super::groups::LoadArgs,

    #[command(flatten)]
    pub msg: super::groups::MessageArgs,

    #[command(flatten)]
    pub kv: super::kv::KvArgs,

    #[command(flatten)]
    pub mqtt: super::mqtt::MqttArgs,

    #[command(flatten)]
    pub http: super::http::HttpArgs,

    #[command(flatten)]
    pub tls: super::groups::TlsArgs,

    #[command(flatten)]
    pub ws: super::ws::WsArgs,

    #[command(flatten)]
    pub grpc: super::grpc::GrpcArgs,

    #[command(flatten)]
    pub modes: super::groups::ModeArgs,

    #[command(flatten)]
    pub limits: super::groups::LimitArgs,

    #[command(flatten)]
    pub watch: super::groups::WatchArgs,

    #[command(flatten)]
    pub output: super::groups::OutputArgs,
}
