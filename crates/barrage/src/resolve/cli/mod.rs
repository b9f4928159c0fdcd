//! The command line as the user writes it (clap). Nothing here is validated beyond the shape
//! of single values; `resolve/config/` turns it into a plan.

// The args' `///` are clap's --help text: `HOST[:PORT]` and `/delay/<ms>` are not links or HTML.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use crate::units;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

mod dist;
mod groups;
mod grpc;
mod http;
mod kv;
mod mqtt;
mod run;
mod serve;
mod ws;

pub use dist::{DistArgs, Engine, K8sArgs, Shared, SlurmArgs};
pub use groups::TlsArgs;
pub use run::RunArgs;
use serve::serve_about;
pub use serve::{ServeArgs, Server, ServerArgs};

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
pub struct DemoArgs {
    /// Length of each of the two demo tests
    #[arg(short = 'd', long, default_value = "3s", value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D")]
    pub duration: Duration,

    /// No live status line on stderr
    #[arg(short = 'q', long)]
    pub quiet: bool,
}
