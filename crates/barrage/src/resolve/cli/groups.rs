//! `barrage run`'s flags in groups along the help's headings, flattened into `RunArgs`
//! (the protocols' own groups are `http.rs`, `ws.rs`, `grpc.rs`, `kv.rs`, `mqtt.rs`).

use crate::units;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// `barrage run FILE`'s settings from the command line.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Scenario files")]
pub struct FileArgs {
    /// Scenario: the target URL (overrides the file's `target`, e.g. to point the same file
    /// at another server)
    #[arg(long = "target", value_name = "URL", help_heading = "Scenario files")]
    pub target_url: Option<String>,

    /// Scenario: how many users (overrides users.count)
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "N", help_heading = "Scenario files")]
    pub users: Option<u64>,

    /// Scenario: how long users stay after the last arrival (overrides users.hold)
    #[arg(long, value_parser = units::duration, allow_hyphen_values = true, value_name = "D", help_heading = "Scenario files")]
    pub hold: Option<Duration>,

    /// Scenario: users arriving per second (overrides users.arrive)
    #[arg(long, value_parser = units::rate, allow_hyphen_values = true, value_name = "R", help_heading = "Scenario files")]
    pub arrive: Option<f64>,
}

/// How many connections, for how long, from where.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Load")]
pub struct LoadArgs {
    /// Connections to open and keep open
    #[arg(short = 'c', long, default_value = "10", value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub connections: u64,

    /// New connections per second (default: as fast as allowed)
    #[arg(long, value_parser = units::rate, allow_hyphen_values = true, value_name = "N")]
    pub connect_rate: Option<f64>,

    /// Connects in flight at once
    #[arg(long, default_value = "1024", value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub max_connecting: u64,

    /// Connect from these local addresses, connections spread evenly over them: a list of
    /// addresses, ranges (127.0.0.2-127.0.0.9 or 127.0.0.2-9) and CIDR blocks (10.1.0.0/28),
    /// comma-separated; `auto` adds loopback addresses until the local ports suffice. Each
    /// address holds another port range of connections to the same target
    #[arg(long, value_name = "LIST")]
    pub source_ip: Option<String>,

    /// Reach the target through this HTTP proxy's tunnel (CONNECT):
    /// http://[USER:PASSWORD@]HOST[:PORT]; without it, https_proxy, http_proxy and all_proxy
    /// (less no_proxy) apply to http, ws and grpc targets that are not on loopback
    #[arg(long, value_name = "URL", conflicts_with = "no_proxy")]
    pub proxy: Option<String>,

    /// Ignore https_proxy, http_proxy and all_proxy: connect directly
    #[arg(long)]
    pub no_proxy: bool,

    /// Another address of the same server (repeatable): connections are spread over the
    /// target and these, round robin, so each target port holds its own range of local ports
    #[arg(long = "url", value_name = "URL")]
    pub more_urls: Vec<String>,

    /// How long to apply load after the warm-up [default: 10s; none with -n]
    #[arg(short = 'd', long, value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D")]
    pub duration: Option<Duration>,

    /// Stop after N answered exchanges (completed, or failed by their reply: an error reply
    /// counts; a request lost with its connection, or an HTTP/2 stream that timed out, is
    /// sent again)
    #[arg(short = 'n', long, value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub requests: Option<u64>,

    /// Load before measuring; reported apart from the headline figures [default: 0s]
    #[arg(long, value_parser = units::duration, allow_hyphen_values = true, value_name = "D")]
    pub warmup: Option<Duration>,

    /// Worker threads, one event loop each [default: cores]
    #[arg(short = 't', long, value_parser = units::count, allow_hyphen_values = true, value_name = "N")]
    pub threads: Option<u64>,
}

/// What a raw TCP or WebSocket message is, and its reply.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Messages")]
pub struct MessageArgs {
    /// Message to send; escapes \r \n \t \\ \0 \xHH; placeholders {conn} {seq} {ts_us}
    #[arg(
        short = 'm',
        long,
        value_name = "TEXT",
        allow_hyphen_values = true,
        help_heading = "Messages"
    )]
    pub message: Option<String>,

    /// Read the message from a file (sent as is, placeholders filled)
    #[arg(
        long,
        value_name = "PATH",
        conflicts_with = "message",
        help_heading = "Messages"
    )]
    pub message_file: Option<PathBuf>,

    /// The message as typed binary fields, e.g. 'u8 1, len:u16be(u32be {seq}, str:u8
    /// "room-{conn}")': u8..u64/i8..i64 with be/le, varint, mqtt_varint, bytes, str[:TYPE],
    /// len:TYPE(...) (tcp://; docs/protocols.md, "Binary messages")
    #[arg(
        long,
        value_name = "FIELDS",
        conflicts_with_all = ["message", "message_file"],
        help_heading = "Messages"
    )]
    pub fields: Option<String>,

    /// The longest reply a length-field framing (--expect field:..., mqtt) takes; a longer
    /// one fails its connection as `protocol` [default: 16MiB]
    #[arg(long, value_name = "BYTES", value_parser = crate::units::bytes, allow_hyphen_values = true, help_heading = "Messages")]
    pub max_frame: Option<u64>,

    /// A Lua script for what flags cannot say (tcp://): init(conn) a login, request(conn,
    /// seq) each request's bytes, frame(buf, conn) where a reply ends, response(conn, reply)
    /// whether it is right (docs/protocols.md, "Scripts")
    #[arg(long, value_name = "FILE", help_heading = "Messages")]
    pub script: Option<PathBuf>,

    /// Instructions one call of the script may run (at most 100000000); one that runs longer
    /// fails as script.error and the run goes on, and one still running when the run ends is
    /// stopped [default: 1000000]
    #[arg(long, value_name = "N", value_parser = units::count, allow_hyphen_values = true, help_heading = "Messages")]
    pub script_budget: Option<u64>,

    /// Give the script Lua's full standard libraries (io, os, require of Lua files): by
    /// default it gets those that cannot reach outside the run. os.exit is refused either
    /// way (docs/protocols.md, "Scripts")
    #[arg(long, help_heading = "Messages")]
    pub script_unsafe: bool,

    /// Sent once after connecting (e.g. a login); its reply is awaited, not counted
    #[arg(
        long,
        value_name = "TEXT",
        allow_hyphen_values = true,
        help_heading = "Messages"
    )]
    pub first_message: Option<String>,

    /// Reply framing: echo, bytes:N, line, delim:TEXT, len:u16be|u16le|u32be|u32le, none
    /// (ws: echo or none) [default: echo]
    #[arg(long, value_name = "SPEC", help_heading = "Messages")]
    pub expect: Option<String>,

    /// Compare echoed bytes with what was sent (--expect echo); a difference is a `mismatch`
    #[arg(long, help_heading = "Messages")]
    pub verify: bool,
}

/// TLS: verification, and the client's identity.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "HTTP and WebSocket")]
pub struct TlsArgs {
    /// Skip TLS certificate and host-name verification (https://, wss://)
    #[arg(long, help_heading = "HTTP and WebSocket")]
    pub insecure: bool,

    /// Also trust the CA certificates in this PEM file
    #[arg(long, value_name = "FILE", help_heading = "HTTP and WebSocket")]
    pub cacert: Option<PathBuf>,

    /// Mutual TLS: present this PEM client certificate chain (leaf first) to the server
    /// (https://, h2, grpcs://, wss://, mqtts://)
    #[arg(long, value_name = "FILE", help_heading = "HTTP and WebSocket")]
    pub cert: Option<PathBuf>,

    /// The PEM private key of --cert [default: the key in the --cert file]
    #[arg(
        long,
        value_name = "FILE",
        requires = "cert",
        help_heading = "HTTP and WebSocket"
    )]
    pub key: Option<PathBuf>,

    /// The name the server's certificate is checked against and sent as SNI, instead of the
    /// target's host (ghz's --cname): for a server reached by its address whose certificate
    /// names a host
    #[arg(
        long,
        alias = "cname",
        value_name = "NAME",
        help_heading = "HTTP and WebSocket"
    )]
    pub servername: Option<String>,
}

/// How the load is paced.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Modes (default: ping-pong)")]
pub struct ModeArgs {
    /// Closed loop: exchanges kept in flight per connection (HTTP pipelining)
    #[arg(long, alias = "http-pipeline", default_value = "1", value_parser = units::count, allow_hyphen_values = true, value_name = "K", help_heading = "Modes (default: ping-pong)")]
    pub pipeline: u64,

    /// Closed loop with a pause of D after each reply
    #[arg(long, value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D", conflicts_with_all = ["interval", "rate"], help_heading = "Modes (default: ping-pong)")]
    pub think: Option<Duration>,

    /// Open loop: every connection sends one message every D (phases spread evenly)
    #[arg(long, value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D", conflicts_with = "rate", help_heading = "Modes (default: ping-pong)")]
    pub interval: Option<Duration>,

    /// Open loop: R messages per second in total, spread over the connections
    #[arg(long, value_parser = units::rate, allow_hyphen_values = true, value_name = "R", help_heading = "Modes (default: ping-pong)")]
    pub rate: Option<f64>,

    /// Ramp connections: TIME:COUNT points, linear between them, e.g.
    /// '0s:0,30s:1000,2m:1000,2m30s:0'; connection i opens when the count reaches i+1 and
    /// closes when it falls below; each runs the mode (one exchange in flight). The load lasts
    /// until the last point
    #[arg(long, value_name = "POINTS", allow_hyphen_values = true, conflicts_with_all = ["connections", "connect_rate", "requests"], help_heading = "Modes (default: ping-pong)")]
    pub conn_stages: Option<String>,

    /// Open loop with a rate that changes: TIME:RATE points, linear between them, e.g.
    /// '0s:1k,30s:10k,2m:10k,2m30s:0' (like k6's ramping arrival rate); the load lasts until
    /// the last point unless -d says otherwise
    #[arg(long, value_name = "POINTS", allow_hyphen_values = true, conflicts_with_all = ["think", "interval", "rate"], help_heading = "Modes (default: ping-pong)")]
    pub rate_stages: Option<String>,

    /// Open loop: due messages a connection may hold back before they count as not_sent
    /// [default: 1024]
    #[arg(long, value_parser = units::count, allow_hyphen_values = true, value_name = "N", help_heading = "Modes (default: ping-pong)")]
    pub max_backlog: Option<u64>,

    /// Open loop: timer slack W; messages due within one W go out together, each timed from
    /// its W-aligned intended time (0: exact) [default: 1ms]
    #[arg(long, value_parser = units::duration, allow_hyphen_values = true, value_name = "D", help_heading = "Modes (default: ping-pong)")]
    pub timer_slack: Option<std::time::Duration>,
}

/// When a request or a connect has failed.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Limits")]
pub struct LimitArgs {
    /// An exchange not complete after D is a timeout; its connection is reopened (HTTP/2: only
    /// its stream is cancelled) [default: 5s]
    #[arg(long, value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D", help_heading = "Limits")]
    pub timeout: Option<Duration>,

    /// A connect not complete after D is a connect_timeout [default: --timeout]
    #[arg(long, value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D", help_heading = "Limits")]
    pub connect_timeout: Option<Duration>,
}

/// What is watched beside the load, and what it must meet.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Server monitoring")]
pub struct WatchArgs {
    /// Watch a server process: a PID (repeatable), or `auto` for the process listening on
    /// the target's port (local targets, Linux)
    #[arg(
        long,
        value_name = "PID|auto",
        allow_hyphen_values = true,
        help_heading = "Server monitoring"
    )]
    pub monitor: Vec<String>,

    /// Start the server with this command (via sh -c), wait until its port accepts, watch it,
    /// and stop it with SIGTERM after the test ({secret:NAME} is filled from the environment;
    /// outputs keep the placeholder)
    #[arg(long, value_name = "CMD", help_heading = "Server monitoring")]
    pub spawn: Option<String>,

    /// Scrape the server's own metrics from URL while the run goes (Prometheus text,
    /// OpenMetrics or JSON; http:// on loopback unless --listen-any); repeatable, with
    /// --server-metric naming what to keep
    #[arg(long, value_name = "URL", help_heading = "Server monitoring")]
    pub server_metrics: Vec<String>,

    /// A series to keep from --server-metrics: NAME, NAME{label="v"}, a JSON pointer
    /// (/stats/queue_depth), each optionally ALIAS=...; counters become rates per second;
    /// judged as server.metric.NAME.max|min|mean|last; repeatable
    #[arg(long, value_name = "SELECTOR", help_heading = "Server monitoring")]
    pub server_metric: Vec<String>,

    /// How often to sample the monitored processes and the machine
    #[arg(long, default_value = "1s", value_parser = units::positive_duration, allow_hyphen_values = true, value_name = "D", help_heading = "Server monitoring")]
    pub monitor_interval: Duration,

    /// Keep sampling this long after the load stops, to see whether memory comes back
    /// [default: 10s when monitoring]
    #[arg(long, value_parser = units::duration, allow_hyphen_values = true, value_name = "D", help_heading = "Server monitoring")]
    pub recovery: Option<Duration>,

    /// Pass/fail rule, e.g. 'p99 < 20ms', 'rps.avg >= 15000', 'errors.rate < 0.1%',
    /// 'server.rss.max < 64MB' (repeatable; any failure makes the exit code 3)
    #[arg(
        long,
        value_name = "EXPR",
        allow_hyphen_values = true,
        help_heading = "Server monitoring"
    )]
    pub threshold: Vec<String>,

    /// Exit 0 for a run that ran its course even when nearly every request failed (exit 1
    /// otherwise) or, without --threshold, a readiness row of errors, correctness or
    /// connections failed (exit 3 otherwise), as earlier versions did
    #[arg(long, help_heading = "Server monitoring")]
    pub lenient_exit: bool,
}

/// What is written, where, and how a run is split.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// No live status line on stderr
    #[arg(short = 'q', long, help_heading = "Output")]
    pub quiet: bool,

    /// (Internal) this run is one process of a `--processes` run, writing into the parent's
    /// temporary directory: no summary and no `wrote DIR` line (the directory is gone when
    /// the parent ends; the parent says what it wrote)
    #[arg(long, hide = true)]
    pub process_of_parent: bool,

    /// The summary also gives the rule behind each readiness row (the reports always do)
    #[arg(long, help_heading = "Output")]
    pub explain: bool,

    /// Write the complete result as JSON to PATH (- for stdout)
    #[arg(long, value_name = "PATH", help_heading = "Output")]
    pub json: Option<String>,

    /// Also redact this header's or URL query parameter's value from every output
    /// (Authorization, Cookie, API-key headers and token/key/secret/password/sig parameters
    /// always are); repeatable
    #[arg(long, value_name = "NAME", value_parser = units::name, help_heading = "Output")]
    pub redact: Vec<String>,

    /// The body, message and first message are secret: every output shows
    /// "[redacted N bytes]" instead ({secret:NAME} fills a value from the environment)
    #[arg(long, help_heading = "Output")]
    pub secret_body: bool,

    /// Write a self-contained report at the end: FILE.html or FILE.md
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub report: Option<String>,

    /// Serve the run's figures as OpenMetrics on http://ADDR/metrics while it goes, for
    /// Prometheus to scrape: PORT or HOST:PORT (loopback unless --listen-any)
    #[arg(
        long,
        value_name = "ADDR",
        allow_negative_numbers = true,
        help_heading = "Output"
    )]
    pub prometheus: Option<String>,

    /// Serve a live web page of the run on http://ADDR/ (charts updated every second, the
    /// server panel, warnings, the final summary): PORT or HOST:PORT (loopback unless
    /// --listen-any)
    #[arg(
        long,
        value_name = "ADDR",
        allow_negative_numbers = true,
        help_heading = "Output"
    )]
    pub web: Option<String>,

    /// Push each second's figures to InfluxDB as line protocol while the run goes:
    /// http://HOST:8086/write?db=NAME (1.x), or http://HOST:8086/api/v2/write?org=O&bucket=B
    /// (2.x, its token in INFLUX_TOKEN)
    #[arg(long, value_name = "URL", help_heading = "Output")]
    pub influx: Option<String>,

    /// Push each second's figures as OpenTelemetry metrics (OTLP over HTTP, JSON) while the
    /// run goes: a collector's http://HOST:4318/v1/metrics
    #[arg(long, value_name = "URL", help_heading = "Output")]
    pub otlp: Option<String>,

    /// Send each second's figures to a StatsD daemon over UDP while the run goes: HOST:PORT,
    /// or PORT on 127.0.0.1 (counters of exchanges, errors, connects and bytes; gauges of open
    /// connections, in flight, the rate and latency percentiles)
    #[arg(long, value_name = "ADDR", help_heading = "Output")]
    pub statsd: Option<String>,

    /// The names' prefix for --statsd [default: barrage]
    #[arg(
        long,
        value_name = "NAME",
        requires = "statsd",
        help_heading = "Output"
    )]
    pub statsd_prefix: Option<String>,

    /// Let --prometheus and --web listen on an address other than loopback (reachable from
    /// other machines), and --server-metrics read a URL that is not on loopback
    #[arg(long, help_heading = "Output")]
    pub listen_any: bool,

    /// Write one CSV row per second to FILE as the run goes (the per-second JSON's fields as
    /// columns); rewritten whole at the end with the saturation verdicts filled in
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub csv: Option<String>,

    /// Write each second's latency histogram to FILE as the run goes: an HdrHistogram
    /// interval log (microseconds), for HistogramLogProcessor or HdrHistogramVisualizer
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub hdr_log: Option<String>,

    /// Run the test as N local processes (shards of it, started together and merged exactly
    /// at the end): for more connections than one process may open files for; `auto`: as
    /// many as the open-file limit needs
    #[arg(long, value_name = "N|auto", value_parser = processes, allow_hyphen_values = true, help_heading = "Output")]
    pub processes: Option<barrage_scenario::model::Processes>,

    /// Set by `--processes` in the parent process: the run is resolved for N processes
    /// (the machine-wide pre-flight) and not run here.
    #[arg(skip)]
    pub parent_of: Option<u64>,

    /// A shard of `--processes`: the parent judges the thresholds on the merged run
    #[arg(long, hide = true)]
    pub skip_thresholds: bool,

    /// Run shard I of N of this run (connections and rates by stride, exactly): the same
    /// command with I = 0..N-1 on N processes or machines makes the whole run; each shard's
    /// --out DIR or --json FILE goes to `barrage merge`. Every shard uses the same -t and
    /// --start-at. `auto`: I and N from
    /// Slurm (SLURM_PROCID, SLURM_NTASKS); `auto/N`: I from a Kubernetes Indexed Job
    /// (JOB_COMPLETION_INDEX)
    #[arg(
        long,
        value_name = "I/N",
        allow_hyphen_values = true,
        help_heading = "Output"
    )]
    pub shard: Option<String>,

    /// Time zero of the run: a wall-clock instant every shard waits for (RFC 3339 UTC,
    /// 2026-11-23T08:00:00Z, or @UNIX_SECONDS; at most 7 days ahead, counted down on stderr)
    #[arg(
        long,
        value_name = "TIME",
        allow_hyphen_values = true,
        help_heading = "Output"
    )]
    pub start_at: Option<String>,

    /// Every shard of this run runs on this host (one clock): broadcast deliveries between
    /// shards are timed, not only counted (--processes sets it)
    #[arg(long, requires = "start_at", help_heading = "Output")]
    pub one_clock: bool,

    /// Write the run to DIR as it goes (settings first, then each second, synced; the result
    /// at the end), so a crash loses at most the last seconds; `barrage report DIR` renders
    /// it, finished or not. DIR must be new or empty
    #[arg(long, value_name = "DIR", help_heading = "Output")]
    pub out: Option<PathBuf>,

    /// Plain one-line-per-second output even on a terminal (no full-screen dashboard)
    #[arg(long, help_heading = "Output")]
    pub no_tui: bool,

    /// Compare with a saved run at the end; with --max-regression, a regression exits 3
    #[arg(long, value_name = "RESULT.json", help_heading = "Output")]
    pub baseline: Option<PathBuf>,

    /// Allowed regressions against --baseline, e.g. 'p99=10%,rps.avg=5%'
    #[arg(
        long,
        value_name = "LIST",
        allow_hyphen_values = true,
        requires = "baseline",
        help_heading = "Output"
    )]
    pub max_regression: Option<String>,

    /// With --baseline: a smallest change called beyond noise, on top of the runs' own
    /// per-second noise [default: none] (see compare)
    #[arg(
        long,
        value_name = "PCT",
        allow_hyphen_values = true,
        requires = "baseline",
        help_heading = "Output"
    )]
    pub noise_floor: Option<String>,
}

/// `--processes N|auto`.
fn processes(s: &str) -> Result<barrage_scenario::model::Processes, String> {
    use barrage_scenario::model::Processes;
    if s.trim() == "auto" {
        return Ok(Processes::Auto);
    }
    match units::count(s)? {
        0 => Err("give 1 or more processes, or auto".into()),
        n => Ok(Processes::Count(n)),
    }
}
