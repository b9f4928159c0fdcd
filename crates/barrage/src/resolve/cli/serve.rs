//! `barrage serve KIND`'s flags: each reference server its own typed args, made of the groups
//! it takes ([`Common`], [`Processes`], [`Stall`], [`Tls`], [`Rooms`], [`H2Knobs`],
//! [`GrpcKnobs`]), so `barrage serve echo --help` lists echo's flags only and clap refuses
//! the others (`main.rs` names the servers that take such a flag). [`Server::settings`]
//! gives `cmd/serve.rs` one flat [`ServerArgs`] whatever the kind.

use crate::units;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(subcommand)]
    pub server: Server,
}

/// The reference servers' names, in the order of their table, [`Server`] (each variant a
/// `barrage serve KIND`): what every help text that lists the servers names.
pub fn server_kinds() -> Vec<String> {
    Server::augment_subcommands(clap::Command::new("serve"))
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect()
}

/// `barrage serve`'s one line: every server of [`server_kinds`].
pub(super) fn serve_about() -> String {
    let kinds = server_kinds();
    let list = match kinds.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    };
    format!("Start a reference server ({list}) to test against.")
}

/// The reference servers, one variant each: the one table of them (the help lists them from
/// it, [`server_kinds`]).
#[derive(Subcommand, Debug)]
pub enum Server {
    /// TCP echo server: every byte received is sent back [listen: 127.0.0.1:7000]
    Echo(PlainArgs),
    /// HTTP/1.1 server: / (small body), /delay/<ms>, /bytes/<n>, /status/<code>, /chunked/<n>
    /// [listen: 127.0.0.1:8080]
    Http(HttpArgs),
    /// HTTP/2 server (h2c with prior knowledge; TLS with ALPN h2 given --tls-cert), the http
    /// server's routes, built on the h2 crate [listen: 127.0.0.1:8443]
    H2(H2Args),
    /// gRPC server on the HTTP/2 one: service barrage.Echo, unary Echo, server-streaming
    /// Stream, client-streaming Collect, bidirectional Chat (--write-proto saves its .proto)
    /// [listen: 127.0.0.1:50051]
    Grpc(GrpcArgs),
    /// WebSocket echo server (RFC 6455) [listen: 127.0.0.1:9000]
    Ws(PlainArgs),
    /// Chat room server, one JSON object per line or per WebSocket text message (both on one
    /// port): login puts the user in a room of random
    /// size (--room-size), pub broadcasts to the room, leave [listen: 127.0.0.1:7100]
    Chat(RoomArgs),
    /// The chat server's rooms over a binary game protocol: length-prefixed frames of typed
    /// objects (login, join, public message, leave, ping; docs/protocols.md, "serve frames"),
    /// the chat knobs [listen: 127.0.0.1:7200]
    Frames(RoomArgs),
}

/// What every server takes.
#[derive(Args, Debug, Clone, Default)]
pub struct Common {
    /// Address to listen on; port 0 picks a free port and prints it
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,

    /// Event-loop threads (SO_REUSEPORT) [default: cores]
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub threads: Option<u64>,

    /// Share the port with a server already listening on it (SO_REUSEPORT: the kernel splits
    /// the connections between them); without it such a port is refused
    #[arg(long)]
    pub reuse_port: bool,

    /// Write the served counts as JSON to FILE on exit
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,

    /// (Internal) this server is one process of a `serve --processes` server, its stats file
    /// in the first process's temporary directory: no `wrote FILE` line (the first process
    /// adds the file up and removes it)
    #[arg(long, hide = true)]
    pub process_of_parent: bool,

    /// Serve the counts as OpenMetrics on http://ADDR/metrics while running (PORT or
    /// HOST:PORT), for barrage run --server-metrics or a Prometheus
    #[arg(long, value_name = "ADDR", allow_negative_numbers = true)]
    pub metrics: Option<String>,

    /// Fault: delay every reply by D
    #[arg(long, value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D")]
    pub delay: Option<Duration>,

    /// Stop by itself after D (for scripts and tests)
    #[arg(long, value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D")]
    pub exit_after: Option<Duration>,
}

/// Servers on the engine's event loop (not h2, grpc) run as several processes.
#[derive(Args, Debug, Clone, Default)]
pub struct Processes {
    /// Serve from N processes on the same port (SO_REUSEPORT): each may open its own
    /// open-file limit's worth of connections. Counts are added up on exit; chat rooms are
    /// per process
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub processes: Option<u64>,
}

/// The stall fault (not h2, grpc).
#[derive(Args, Debug, Clone, Default)]
pub struct Stall {
    /// Fault: freeze all replies once, T after start ...
    #[arg(long, value_parser = units::duration, allow_hyphen_values = true, value_name = "T", requires = "stall_for")]
    pub stall_at: Option<Duration>,

    /// ... for D
    #[arg(long, value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D", requires = "stall_at")]
    pub stall_for: Option<Duration>,
}

/// TLS (not chat, frames).
#[derive(Args, Debug, Clone, Default)]
pub struct Tls {
    /// Serve TLS (https:// for http and h2, grpcs://, wss://, raw TCP in TLS for echo) with
    /// this PEM certificate chain (with --tls-key)
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The PEM private key for --tls-cert
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// Mutual TLS: require every client to present a certificate signed by a CA in this PEM
    /// file (with --tls-cert)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
}

/// The chat rooms and their faults (chat, frames).
#[derive(Args, Debug, Clone, Default)]
pub struct Rooms {
    /// Room capacities, drawn uniformly from MIN-MAX [default: 3-8]
    #[arg(long, value_name = "MIN-MAX")]
    pub room_size: Option<String>,

    /// Bytes a member may have queued that its socket has not taken; a member that falls
    /// further behind (a client that does not read) is disconnected, counted
    /// (slow_disconnects, slow_dropped) [default: 1M]
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "BYTES")]
    pub max_queue: Option<u64>,

    /// A publisher does not get its own message
    #[arg(long)]
    pub no_self: bool,

    /// Fault: drop each delivery with probability P (e.g. 1% or 0.01), counted
    #[arg(long = "drop", value_name = "P", value_parser = probability, allow_hyphen_values = true)]
    pub drop_p: Option<f64>,

    /// Fault: send each delivery twice with probability P, counted
    #[arg(long = "dup", value_name = "P", value_parser = probability, allow_hyphen_values = true)]
    pub dup_p: Option<f64>,

    /// Fault: hold a delivery back behind the sender's next one to the same member with
    /// probability P (counted when released out of order)
    #[arg(long = "reorder", value_name = "P", value_parser = probability, allow_hyphen_values = true)]
    pub reorder_p: Option<f64>,

    /// Seed of the room sizes and the faults
    #[arg(long, value_name = "N", value_parser = seed, allow_hyphen_values = true)]
    pub seed: Option<u64>,
}

/// HTTP/2's knobs (h2, grpc).
#[derive(Args, Debug, Clone, Default)]
pub struct H2Knobs {
    /// SETTINGS_MAX_CONCURRENT_STREAMS, the streams a connection may have open
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub max_streams: Option<u64>,

    /// GOAWAY after N requests on a connection (it finishes them, then closes)
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub goaway_after: Option<u64>,

    /// The flow-control windows granted, stream and connection, in bytes
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "BYTES")]
    pub window: Option<u64>,
}

/// `Server-Timing` (http, h2).
#[derive(Args, Debug, Clone, Default)]
pub struct Timing {
    /// Say in a `Server-Timing: app;dur=MS` header how long each request was held (read to
    /// response), so barrage can show server time next to client time
    #[arg(long)]
    pub server_timing: bool,
}

/// The gRPC service's knobs.
#[derive(Args, Debug, Clone, Default)]
pub struct GrpcKnobs {
    /// Fault: every Nth call on a thread ends with --fail-status instead of its reply
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub fail_every: Option<u64>,

    /// The status of --fail-every's calls, a code from 1 to 16 [default: 14, UNAVAILABLE]
    #[arg(long, value_name = "CODE", value_parser = grpc_status, allow_hyphen_values = true, requires = "fail_every")]
    pub fail_status: Option<u32>,

    /// The messages a Stream call answers [default: 10]
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub stream_messages: Option<u64>,

    /// The pause before each streamed message after the first
    #[arg(long, value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D")]
    pub stream_interval: Option<Duration>,

    /// Write the service's .proto to FILE (for barrage run --proto), then serve
    #[arg(long, value_name = "FILE")]
    pub write_proto: Option<PathBuf>,
}

/// `serve echo`, `serve ws`.
#[derive(Args, Debug)]
pub struct PlainArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub processes: Processes,
    #[command(flatten)]
    pub stall: Stall,
    #[command(flatten)]
    pub tls: Tls,
}

/// `serve http`.
#[derive(Args, Debug)]
pub struct HttpArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub processes: Processes,
    #[command(flatten)]
    pub stall: Stall,
    #[command(flatten)]
    pub tls: Tls,

    /// Each thread serves one request at a time, each taking D (a timer, not CPU): a server
    /// of known capacity, threads / D requests per second
    #[arg(long, value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D")]
    pub service_time: Option<Duration>,

    #[command(flatten)]
    pub timing: Timing,
}

/// `serve h2`.
#[derive(Args, Debug)]
pub struct H2Args {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub tls: Tls,
    #[command(flatten)]
    pub h2: H2Knobs,
    #[command(flatten)]
    pub timing: Timing,
}

/// `serve grpc`.
#[derive(Args, Debug)]
pub struct GrpcArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub tls: Tls,
    #[command(flatten)]
    pub h2: H2Knobs,
    #[command(flatten)]
    pub grpc: GrpcKnobs,
}

/// `serve chat`, `serve frames`.
#[derive(Args, Debug)]
pub struct RoomArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub processes: Processes,
    #[command(flatten)]
    pub stall: Stall,
    #[command(flatten)]
    pub rooms: Rooms,
}

/// Every server's settings in one flat form (what a kind does not take is its default).
#[derive(Debug, Default)]
pub struct ServerArgs {
    pub common: Common,
    pub processes: Processes,
    pub stall: Stall,
    pub tls: Tls,
    pub rooms: Rooms,
    pub h2: H2Knobs,
    pub grpc: GrpcKnobs,
    pub service_time: Option<Duration>,
    pub server_timing: bool,
}

impl Server {
    /// The kind's name, its default listen address, and its settings.
    pub fn settings(&self) -> (&'static str, &'static str, ServerArgs) {
        let plain = |a: &PlainArgs| ServerArgs {
            common: a.common.clone(),
            processes: a.processes.clone(),
            stall: a.stall.clone(),
            tls: a.tls.clone(),
            ..ServerArgs::default()
        };
        let rooms = |a: &RoomArgs| ServerArgs {
            common: a.common.clone(),
            processes: a.processes.clone(),
            stall: a.stall.clone(),
            rooms: a.rooms.clone(),
            ..ServerArgs::default()
        };
        match self {
            Server::Echo(a) => ("echo", "127.0.0.1:7000", plain(a)),
            Server::Http(a) => (
                "http",
                "127.0.0.1:8080",
                ServerArgs {
                    common: a.common.clone(),
                    processes: a.processes.clone(),
                    stall: a.stall.clone(),
                    tls: a.tls.clone(),
                    service_time: a.service_time,
                    server_timing: a.timing.server_timing,
                    ..ServerArgs::default()
                },
            ),
            Server::H2(a) => (
                "h2",
                "127.0.0.1:8443",
                ServerArgs {
                    common: a.common.clone(),
                    tls: a.tls.clone(),
                    h2: a.h2.clone(),
                    server_timing: a.timing.server_timing,
                    ..ServerArgs::default()
                },
            ),
            Server::Grpc(a) => (
                "grpc",
                "127.0.0.1:50051",
                ServerArgs {
                    common: a.common.clone(),
                    tls: a.tls.clone(),
                    h2: a.h2.clone(),
                    grpc: a.grpc.clone(),
                    ..ServerArgs::default()
                },
            ),
            Server::Ws(a) => ("ws", "127.0.0.1:9000", plain(a)),
            Server::Chat(a) => ("chat", "127.0.0.1:7100", rooms(a)),
            Server::Frames(a) => ("frames", "127.0.0.1:7200", rooms(a)),
        }
    }
}

/// A probability: `1%`, `0.5%` or `0.01` (0 to 1).
fn probability(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("'{s}' is not a probability; write e.g. 1% or 0.01"))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("'{s}': a probability is from 0 to 1 (0% to 100%)"));
    }
    Ok(v)
}

/// `--seed`: any whole number from 0.
fn seed(s: &str) -> Result<u64, String> {
    s.trim().parse().map_err(|_| {
        format!(
            "'{s}' is not a seed: give a whole number from 0 to {}",
            u64::MAX
        )
    })
}

/// `--fail-status`: a gRPC status code from 1 to 16 (0 is OK, not a failure).
fn grpc_status(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(c) if (1..=16).contains(&c) => Ok(c),
        _ => Err(format!(
            "'{s}' is not a failing gRPC status: give a code from 1 to 16"
        )),
    }
}
