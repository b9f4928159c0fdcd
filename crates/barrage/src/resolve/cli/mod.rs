//! The command line as the user writes it (clap). Nothing here is validated beyond the shape
//! of single values; `config.rs` turns it into a plan.

use crate::units;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

mod dist;
mod grpc;
mod http;
mod kv;
mod mqtt;
mod run;
mod ws;

pub use dist::{DistArgs, Engine, K8sArgs, Shared, SlurmArgs};
pub use run::RunArgs;

#[derive(Parser, Debug)]
#[command(
    name = "barrage",
    version,
    about = "Stress-test network servers: how many connections and requests per second they hold, at what latency.",
    long_about = "Stress-test network servers: how many connections and requests per second they \
hold, at what latency, and where they break.\n\n\
Start with `barrage demo` (an echo server and two short tests, all on loopback), then point it \
at your own server:\n\n  \
barrage tcp://127.0.0.1:7000 -c 1000 --interval 50ms -d 10m   # 1000 conns, 1 message/50 ms each\n  \
barrage redis://127.0.0.1:6379 -c 50 --command 'GET key:{rand%1000}'   # like redis-benchmark\n  \
barrage http://127.0.0.1:8080/ -c 100 -d 30s                  # HTTP/1.1 keep-alive, like wrk\n  \
barrage ws://127.0.0.1:9000/ -c 100 -m 'hello'                # WebSocket echo ping-pong\n  \
barrage serve echo --listen 127.0.0.1:7000                    # a reference echo server\n\n\
Common run flags: -c N connections, -d D duration, -t N threads; the load: ping-pong (default, \
--pipeline K), --think D, --interval D, --rate R (open loop); -m MSG, -H, --body; --json FILE, \
--report FILE.html, --threshold EXPR, --monitor PID|auto. `barrage run --help` lists every flag.\n\
`barrage URL ...` is short for `barrage run URL ...`.\n\
Exit codes: 0 completed, 1 the run failed (e.g. nothing could connect), 2 bad usage, \
3 a --threshold failed, 130 interrupted (results are still written).",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a load test against a target (tcp://, http://, https://, h2c://, grpc://, ws://,
    /// wss://, redis://, memcache://, mqtt://, mqtts://).
    Run(Box<RunArgs>),
    /// Start a reference server to test against (every kind of `Server`, named by
    /// `serve_about`).
    #[command(about = serve_about())]
    Serve(Box<ServeArgs>),
    /// Start an echo server on loopback and run a short ping-pong and interval test against it.
    Demo(DemoArgs),
    /// Render a saved JSON result as a self-contained HTML page or Markdown (offline).
    Report(ReportArgs),
    /// Compare saved runs side by side (differences within the runs' noise are marked).
    Compare(CompareArgs),
    /// Run the same load against two targets in turn (e.g. raw TCP vs WebSocket, or two
    /// servers) and compare them: throughput ratio, latency, CPU per request of barrage, the
    /// server and the machine, with the noise rules of `compare`
    Versus(Box<VersusArgs>),
    /// Check a scenario file (.toml, .yaml) without sending anything: schema, every {var}
    /// resolvable, every capture used, limits. Prints "ok: ..." or the mistake (exit 2).
    Validate(ValidateArgs),
    /// Find the highest open-loop rate that meets every SLO (exponential steps, then bisection).
    FindMax(Box<FindMaxArgs>),
    /// Merge the --out directories or --json results of a run's shards (--shard I/N) into one
    /// result, exactly: counters, per-second timelines and histograms; thresholds judged on the
    /// whole.
    Merge(MergeArgs),
    /// Print a job that runs one run as N shards on Slurm (an sbatch script) or Kubernetes
    /// (an Indexed Job manifest), started together and merged into one result.
    Dist(DistArgs),
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Each shard's --out directory or --json result (every index of the run once)
    #[arg(value_name = "DIR|FILE", num_args = 1.., required = true)]
    pub dirs: Vec<PathBuf>,

    /// The merged result: FILE.json, .html or .md (- for Markdown on stdout) [default: the
    /// summary on stdout]
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<String>,

    /// Broadcast deliveries between shards on different hosts are timed (on two clocks) when
    /// the shards' recorded clock error bounds add up to at most this; else only counted
    #[arg(long, default_value = "1ms", value_parser = units::duration, allow_hyphen_values = true, value_name = "D")]
    pub clock_tolerance: std::time::Duration,

    /// Exit 0 for a merged run whose requests nearly all failed (exit 1 otherwise) or whose
    /// readiness failed on errors, correctness or connections without thresholds (exit 3)
    #[arg(long)]
    pub lenient_exit: bool,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// A scenario file (see docs/scenarios.md and examples/)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// How many users (overrides users.count), as `barrage run FILE --users N` would
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub users: Option<u64>,

    /// How long users stay after the last arrival (overrides users.hold), as `run` would
    #[arg(long, value_parser = units::duration, allow_hyphen_values = true, value_name = "D")]
    pub hold: Option<Duration>,

    /// Users arriving per second (overrides users.arrive), as `run` would
    #[arg(long, value_parser = units::rate, allow_hyphen_values = true, value_name = "R")]
    pub arrive: Option<f64>,
}

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  \
barrage find-max http://127.0.0.1:8080/ --slo 'p99 < 20ms' --slo 'errors.rate < 0.1%' -c 50\n\n\
Each step is an ordinary open-loop run (--rate) of --step-warmup + --step-duration; the rate\n\
doubles from --start-rate until a step breaks an SLO, then bisects. Run flags (-c, -t, -m, -H,\n\
--timeout, ...) apply to every step. --json FILE records every step; --report FILE.md|.html.\n\
Exit codes: 0 searched, 1 failed (e.g. nothing could connect), 2 bad usage, 3 no rate met the\n\
SLOs, 130 interrupted (what was found so far is still reported).")]
// Run flags the search sets or does not support stay parsed (a clear error names them) but
// out of the help.
#[command(
    mut_arg("duration", |a| a.hide(true)),
    mut_arg("requests", |a| a.hide(true)),
    mut_arg("warmup", |a| a.hide(true)),
    mut_arg("rate", |a| a.hide(true)),
    mut_arg("interval", |a| a.hide(true)),
    mut_arg("think", |a| a.hide(true)),
    mut_arg("threshold", |a| a.hide(true)),
    mut_arg("baseline", |a| a.hide(true)),
    mut_arg("max_regression", |a| a.hide(true)),
    mut_arg("noise_floor", |a| a.hide(true)),
    mut_arg("monitor", |a| a.hide(true)),
    mut_arg("spawn", |a| a.hide(true)),
    mut_arg("monitor_interval", |a| a.hide(true)),
    mut_arg("recovery", |a| a.hide(true)),
    mut_arg("no_tui", |a| a.hide(true)),
    mut_arg("pipeline", |a| a.hide(true))
)]
pub struct FindMaxArgs {
    /// A limit every step must meet, in the --threshold grammar, e.g. 'p99 < 20ms',
    /// 'errors.rate < 0.1%' (repeatable, at least one)
    #[arg(
        long,
        value_name = "EXPR",
        required = true,
        allow_hyphen_values = true,
        help_heading = "Search"
    )]
    pub slo: Vec<String>,

    /// How long each step is measured
    #[arg(long, default_value = "10s", value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D", help_heading = "Search")]
    pub step_duration: Duration,

    /// Load before each step's measurement (not judged)
    #[arg(long, default_value = "2s", value_parser = units::duration, allow_hyphen_values = true, value_name = "D", help_heading = "Search")]
    pub step_warmup: Duration,

    /// Rate of the first step, per second
    #[arg(long, default_value = "100", value_parser = units::rate, allow_hyphen_values = true, value_name = "R", help_heading = "Search")]
    pub start_rate: f64,

    /// Highest rate ever offered, per second
    #[arg(long, default_value = "1M", value_parser = units::rate, allow_hyphen_values = true, value_name = "R", help_heading = "Search")]
    pub max_rate: f64,

    /// Most steps to run
    #[arg(long, default_value = "12", value_parser = units::count, allow_hyphen_values = true, value_name = "N", help_heading = "Search")]
    pub max_steps: u64,

    /// Stop bisecting when the lowest failing rate is within this of the highest passing one
    #[arg(
        long,
        default_value = "5%",
        value_name = "PCT",
        allow_hyphen_values = true,
        help_heading = "Search"
    )]
    pub precision: String,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A result written with --json, or a run's --out directory (finished or not)
    #[arg(value_name = "RESULT.json|DIR")]
    pub result: PathBuf,

    /// Output file: .html, .md, .json, .csv or .hlog (- for Markdown on stdout)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: String,

    /// The output's format when its name does not say: html, md, json, csv (one row per
    /// second) or hdr-log (an HdrHistogram interval log; needs a run's --out directory)
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Two or more results written with --json
    #[arg(value_name = "RESULT.json", num_args = 2.., required = true)]
    pub results: Vec<PathBuf>,

    /// Write the comparison to FILE (.html or .md) as well as printing it
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<String>,

    /// Smallest change between runs called significant, on top of the runs' own per-second
    /// noise [default: none]; for a machine known to drift between runs by more than its
    /// seconds show
    #[arg(long, value_name = "PCT", allow_hyphen_values = true)]
    pub noise_floor: Option<String>,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Example (the Socket vs WebSocket question, with each server's CPU):\n  \
barrage serve echo --listen 127.0.0.1:7000 &  barrage serve ws --listen 127.0.0.1:9000 &\n  \
barrage versus tcp://127.0.0.1:7000 --against ws://127.0.0.1:9000 -c 100 -d 10s --reps 3 \
--monitor auto\n\n\
The runs alternate (A B, B A, ...) so that a drifting machine weighs on both sides alike; the \
comparison shows each side's median rep (by throughput), and the B / A ratios of every rep."
)]
pub struct VersusArgs {
    /// The run of side A: its target (a URL) and the flags both sides run with
    #[command(flatten)]
    pub run: RunArgs,

    /// Side B's target (a URL of any scheme), run with the same flags
    #[arg(long, value_name = "URL")]
    pub against: String,

    /// Runs of each side, alternating
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20), allow_hyphen_values = true, value_name = "N")]
    pub reps: u32,

    /// Write the comparison to FILE (.html or .md) as well as printing it
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub compare_output: Option<String>,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(subcommand)]
    pub server: Server,
}

/// The reference servers' names, in the order of their table, [`Server`] (each variant a
/// `barrage serve KIND`): what every help text that lists the servers names.
pub fn server_kinds() -> Vec<String> {
    use clap::Subcommand as _;
    Server::augment_subcommands(clap::Command::new("serve"))
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect()
}

/// `barrage serve`'s one line: every server of [`server_kinds`].
fn serve_about() -> String {
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
    Echo(ServerArgs),
    /// HTTP/1.1 server: / (small body), /delay/<ms>, /bytes/<n>, /status/<code>, /chunked/<n>
    /// [listen: 127.0.0.1:8080]
    Http(ServerArgs),
    /// HTTP/2 server (h2c with prior knowledge; TLS with ALPN h2 given --tls-cert), the http
    /// server's routes, built on the h2 crate [listen: 127.0.0.1:8443]
    H2(ServerArgs),
    /// gRPC server on the HTTP/2 one: service barrage.Echo, unary Echo, server-streaming
    /// Stream, client-streaming Collect, bidirectional Chat (--write-proto saves its .proto)
    /// [listen: 127.0.0.1:50051]
    Grpc(ServerArgs),
    /// WebSocket echo server (RFC 6455) [listen: 127.0.0.1:9000]
    Ws(ServerArgs),
    /// Chat room server, one JSON object per line or per WebSocket text message (both on one
    /// port): login puts the user in a room of random
    /// size (--room-size), pub broadcasts to the room, leave [listen: 127.0.0.1:7100]
    Chat(ServerArgs),
    /// The chat server's rooms over a binary game protocol: length-prefixed frames of typed
    /// objects (login, join, public message, leave, ping; docs/protocols.md, "serve frames"),
    /// the chat knobs [listen: 127.0.0.1:7200]
    Frames(ServerArgs),
}

#[derive(Args, Debug)]
pub struct ServerArgs {
    /// Address to listen on; port 0 picks a free port and prints it
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,

    /// Event-loop threads (SO_REUSEPORT) [default: cores]
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub threads: Option<u64>,

    /// Serve from N processes on the same port (SO_REUSEPORT): each may open its own
    /// open-file limit's worth of connections. Counts are added up on exit; chat rooms are
    /// per process. Not for h2 and grpc
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub processes: Option<u64>,

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

    /// http: each thread serves one request at a time, each taking D (a timer, not CPU):
    /// a server of known capacity, threads / D requests per second
    #[arg(long, value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D")]
    pub service_time: Option<Duration>,

    /// chat, frames: room capacities, drawn uniformly from MIN-MAX [default: 3-8]
    #[arg(long, value_name = "MIN-MAX")]
    pub room_size: Option<String>,

    /// chat, frames: bytes a member may have queued that its socket has not taken; a member that
    /// falls further behind (a client that does not read) is disconnected, counted
    /// (slow_disconnects, slow_dropped) [default: 1M]
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "BYTES")]
    pub max_queue: Option<u64>,

    /// chat, frames: a publisher does not get its own message
    #[arg(long)]
    pub no_self: bool,

    /// chat, frames fault: drop each delivery with probability P (e.g. 1% or 0.01), counted
    #[arg(long = "drop", value_name = "P", value_parser = probability, allow_hyphen_values = true)]
    pub drop_p: Option<f64>,

    /// chat, frames fault: send each delivery twice with probability P, counted
    #[arg(long = "dup", value_name = "P", value_parser = probability, allow_hyphen_values = true)]
    pub dup_p: Option<f64>,

    /// chat, frames fault: hold a delivery back behind the sender's next one to the same member with
    /// probability P (counted when released out of order)
    #[arg(long = "reorder", value_name = "P", value_parser = probability, allow_hyphen_values = true)]
    pub reorder_p: Option<f64>,

    /// chat, frames: seed of the room sizes and the faults
    #[arg(long, value_name = "N", value_parser = seed, allow_hyphen_values = true)]
    pub seed: Option<u64>,

    /// http, h2: say in a `Server-Timing: app;dur=MS` header how long each request was held
    /// (read to response), so barrage can show server time next to client time
    #[arg(long)]
    pub server_timing: bool,

    /// h2, grpc: SETTINGS_MAX_CONCURRENT_STREAMS, the streams a connection may have open
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub max_streams: Option<u64>,

    /// h2, grpc: GOAWAY after N requests on a connection (it finishes them, then closes)
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub goaway_after: Option<u64>,

    /// h2, grpc: the flow-control windows granted, stream and connection, in bytes
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "BYTES")]
    pub window: Option<u64>,

    /// grpc fault: every Nth call on a thread ends with --fail-status instead of its reply
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub fail_every: Option<u64>,

    /// grpc: the status of --fail-every's calls, a code from 1 to 16 [default: 14, UNAVAILABLE]
    #[arg(long, value_name = "CODE", value_parser = grpc_status, allow_hyphen_values = true, requires = "fail_every")]
    pub fail_status: Option<u32>,

    /// grpc: the messages a Stream call answers [default: 10]
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub stream_messages: Option<u64>,

    /// grpc: the pause before each streamed message after the first
    #[arg(long, value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D")]
    pub stream_interval: Option<Duration>,

    /// grpc: write the service's .proto to FILE (for barrage run --proto), then serve
    #[arg(long, value_name = "FILE")]
    pub write_proto: Option<PathBuf>,

    /// Fault (not h2, grpc): freeze all replies once, T after start ...
    #[arg(long, value_parser = units::duration, allow_hyphen_values = true, value_name = "T", requires = "stall_for")]
    pub stall_at: Option<Duration>,

    /// ... for D
    #[arg(long, value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D", requires = "stall_at")]
    pub stall_for: Option<Duration>,

    /// Stop by itself after D (for scripts and tests)
    #[arg(long, value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D")]
    pub exit_after: Option<Duration>,

    /// Serve TLS (https:// for http and h2, grpcs://, wss://, raw TCP in TLS for echo; not
    /// chat, frames) with this PEM certificate chain (with --tls-key)
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The PEM private key for --tls-cert
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Length of each of the two demo tests
    #[arg(short = 'd', long, default_value = "3s", value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D")]
    pub duration: Duration,

    /// No live status line on stderr
    #[arg(short = 'q', long)]
    pub quiet: bool,
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
