//! Integration tests of the `barrage` binary: one test binary (`cargo test -p barrage --test it`),
//! a module per feature. Most run the built binary (`CARGO_BIN_EXE_barrage`) against the
//! reference servers or real third-party servers on loopback. Run one module with
//! `cargo test -p barrage --test it -- scenario::`.

/// Four tests at a time unless told otherwise (`RUST_TEST_THREADS`, `--test-threads`): these
/// tests mostly wait on barrage runs of a fixed length, and with one test per core this binary
/// kept the machine less than half busy (2 cores: 258 s at 2, 133 s at 4, the same CPU time).
/// libtest reads the variable in `main`; an `.init_array` entry runs before it (Linux; the
/// default elsewhere).
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static FOUR_TESTS_AT_A_TIME: extern "C" fn() = {
    extern "C" fn four() {
        if std::env::var_os("RUST_TEST_THREADS").is_none() {
            std::env::set_var("RUST_TEST_THREADS", "4");
        }
    }
    four
};

// Shared helpers: the binary, reference servers, children killed on drop, JSON fields, Slurm.
mod common;
// A CA and server/client certificates made with rcgen, for `tls` and `interop`.
mod pki;

// MQTT against mosquitto, reconciled with its $SYS counters; MQTT's flags.
mod mqtt;
// HTTP/2 against the reference h2 server and nginx (h2c, TLS with ALPN, GOAWAY).
mod h2;
// gRPC against the reference grpc server and grpc-go's example servers.
mod grpc;
// gRPC calls in scenario files (rpc steps, captures from the decoded reply).
mod grpc_scenario;
// The bad-input sweep: every mistake gets one line and a non-zero exit code.
mod bad_input;
// Issue 42 item 8: each input mistake found there, a test named after it.
mod inputs;
// Binary messages: --fields, length-field framing, binary captures (issue 29).
mod binary;
// The script hook: --script FILE (Lua) against serve echo and hostile servers.
mod script;
// Usage errors, help, exit codes, the text and JSON summaries.
mod cli;
// `barrage compare` of two runs.
mod compare;
// The live dashboard in a real pseudo-terminal (tmux).
mod dashboard;
// `barrage dist slurm|k8s`: the launchers of one run as N shards.
mod dist;
// Results that survive signals, crashes and outputs that cannot be written.
mod durable;
// `barrage find-max` end to end.
mod find_max;
// The house's shape: imports only downward, no import circles, file sizes, ARCHITECTURE.md's length.
mod house;
// nginx, Python `websockets` and Socket.IO servers.
mod interop;
// redis:// and memcache:// against the real servers.
mod kv;
// `--web`: the live page in headless Chromium.
mod live_web;
// `barrage merge` takes nothing on trust.
mod merge;
// `--spawn`, `--monitor`, `--recovery`, leak and saturation verdicts.
mod monitor;
// Mutual TLS and --servername against the reference servers.
mod mtls;
// --influx against a real InfluxDB.
mod push;
// --proxy through tinyproxy.
mod proxy;
// The pre-flight refuses a plan that does not fit this machine.
mod preflight;
// `--prometheus` scraped by a real Prometheus server.
mod prometheus;
// `barrage report` from the command line.
mod report_cmd;
// README.md's examples, every fenced command run as written (bounded).
mod readme;
// `barrage run FILE.toml`: users, steps, captures, rooms.
mod scenario;
// `barrage versus`: two targets under the same load, compared.
mod versus;
// Secrets never reach an output.
mod secrets;
// `barrage serve KIND --processes N`.
mod serve_processes;
// `--server-metrics`: the server's own metrics on the timeline.
mod server_metrics;
// `--shard I/N --start-at T` and the exact merge.
mod shards;
// The shard contract on a real two-node Slurm cluster.
mod slurm;
// `--source-ip` and several `--url`s.
mod sources;
// The JSON result records the spec the run was built from.
mod spec;
// `--rate-stages`.
mod stages;
// `https://` end to end, verification on unless `--insecure`.
mod tls;
// Every number true: error rates, the schedule's accounting, conservation.
mod truth;
// `barrage validate FILE`.
mod validate;
// The exit policy: a run that plainly failed never exits 0; the reasons errors gave.
mod exit_policy;
// Verdicts about servers whose behaviour the test scripts.
mod verdicts;
// barrage.exe (the Windows build) under wine.
mod wine;
