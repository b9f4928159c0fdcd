//! `barrage serve KIND` (every kind of `cli::Server`): a reference server in the foreground until a signal (or
//! `--exit-after`), then its counts on stdout and, with `--stats`, as JSON.

use crate::resolve::cli::{ServeArgs, Server};
use crate::usage::Usage;
use anyhow::Context;
use barrage_servers::{echo, http, ws, ServerHandle};
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// `barrage.Echo`'s .proto (`serve grpc --write-proto`).
fn barrage_servers_proto() -> &'static str {
    #[cfg(feature = "h2-server")]
    return barrage_servers::grpc::PROTO;
    #[cfg(not(feature = "h2-server"))]
    return "";
}

pub fn serve(a: &ServeArgs) -> anyhow::Result<i32> {
    let (name, default_listen, args) = a.server.settings();
    let args = &args;
    // `serve frames` is the chat server (whose port speaks the game protocol too).
    let chat = matches!(name, "chat" | "frames");
    let h2 = matches!(name, "h2" | "grpc");
    if args.grpc.fail_every == Some(0) {
        return Err(Usage::new("--fail-every", "at least 1 (every call)").into());
    }
    if args
        .grpc
        .fail_status
        .is_some_and(|c| !(1..=16).contains(&c))
    {
        return Err(Usage::new(
            "--fail-status",
            "a gRPC status code from 1 (CANCELLED) to 16 (UNAUTHENTICATED)",
        )
        .into());
    }
    if args
        .grpc
        .stream_messages
        .is_some_and(|n| n > u64::from(u32::MAX))
    {
        return Err(Usage::new("--stream-messages", "at most 4294967295").into());
    }
    if h2 {
        if args
            .h2
            .window
            .is_some_and(|w| !(1..=i32::MAX as u64).contains(&w))
        {
            return Err(Usage::new("--window", "from 1 to 2147483647 bytes").into());
        }
        if args.h2.max_streams.is_some_and(|n| n > u64::from(u32::MAX)) {
            return Err(Usage::new("--max-streams", "at most 4294967295").into());
        }
    }
    if let Some(p) = &args.grpc.write_proto {
        std::fs::write(p, barrage_servers_proto())
            .map_err(|e| Usage::value("--write-proto", p.display(), e))?;
        crate::sinks::outfile::announce(p);
    }
    let listen = listen_addr(args.common.listen.as_deref().unwrap_or(default_listen))?;
    if args.processes.processes.is_some_and(|n| n > 1) && args.common.metrics.is_some() {
        return Err(Usage::says("--metrics", "does not go with --processes yet").into());
    }
    let metrics_addr = args
        .common
        .metrics
        .as_deref()
        .map(|v| crate::sinks::httpd::parse_addr("--metrics", v, true))
        .transpose()?;
    if let Some(p) = &args.common.stats {
        // Fail now, not after hours of serving.
        std::fs::write(p, b"{}\n").map_err(|e| Usage::value("--stats", p.display(), e))?;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // The chat server keeps its rooms per thread: one thread (one set of rooms) by default.
    let threads = args
        .common
        .threads
        .map_or(if chat { 1 } else { cores }, |t| t as usize);
    let stall_for = args.stall.stall_for.unwrap_or_default();
    let stop = crate::sys::stop_on_signals().stop;
    let tls = match (&args.tls.tls_cert, &args.tls.tls_key) {
        (Some(cert), Some(key)) => Some(barrage_servers::TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: args.tls.tls_client_ca.clone(),
        }),
        _ => None,
    };
    let in_use = |e: barrage_servers::ServerError| -> anyhow::Error {
        match e {
            barrage_servers::ServerError::InUse { addr } => Usage::value(
                "--listen",
                addr,
                "another server listens there already; stop it, choose another port (0 picks \
                 a free one), or give --reuse-port to share it (the kernel splits the connections)",
            )
            .into(),
            e => e.into(),
        }
    };
    let server: ServerHandle = match &a.server {
        Server::Echo(_) => echo::start(echo::EchoConfig {
            listen,
            threads,
            tls: tls.clone(),
            delay: args.common.delay,
            stall_at: args.stall.stall_at,
            stall_for,
            reuse_port: args.common.reuse_port,
        })
        .map_err(in_use)?,
        #[cfg(not(feature = "h2-server"))]
        Server::H2(_) | Server::Grpc(_) => {
            return Err(Usage::says(
                format!("serve {name}"),
                "this barrage was built without the HTTP/2 server (cargo feature h2-server)",
            )
            .into())
        }
        #[cfg(feature = "h2-server")]
        Server::H2(_) | Server::Grpc(_) => {
            barrage_servers::http2::start(barrage_servers::http2::H2Config {
                listen,
                threads,
                tls: tls.clone(),
                delay: args.common.delay,
                server_timing: args.server_timing,
                max_streams: args.h2.max_streams.map(|n| n as u32),
                goaway_after: args.h2.goaway_after,
                window: args.h2.window.map(|w| w as u32),
                reuse_port: args.common.reuse_port,
                grpc: (name == "grpc").then(|| barrage_servers::grpc::GrpcKnobs {
                    fail_every: args
                        .grpc
                        .fail_every
                        .map(|n| (n, args.grpc.fail_status.unwrap_or(14))),
                    stream_messages: args.grpc.stream_messages.map_or(10, |n| n as u32),
                    stream_interval: args.grpc.stream_interval,
                }),
            })
            .map_err(in_use)?
        }
        Server::Http(_) => http::start(http::HttpConfig {
            listen,
            threads,
            tls: tls.clone(),
            delay: args.common.delay,
            service_time: args.service_time,
            stall_at: args.stall.stall_at,
            stall_for,
            reuse_port: args.common.reuse_port,
            server_timing: args.server_timing,
        })
        .map_err(in_use)?,
        Server::Chat(_) | Server::Frames(_) => {
            let (room_min, room_max) = room_size(args.rooms.room_size.as_deref().unwrap_or("3-8"))?;
            barrage_servers::chat::start(barrage_servers::chat::ChatConfig {
                listen,
                threads,
                room_min,
                room_max,
                self_delivery: !args.rooms.no_self,
                drop: args.rooms.drop_p.unwrap_or(0.0),
                dup: args.rooms.dup_p.unwrap_or(0.0),
                reorder: args.rooms.reorder_p.unwrap_or(0.0),
                seed: args.rooms.seed.unwrap_or(1),
                delay: args.common.delay,
                stall_at: args.stall.stall_at,
                stall_for,
                max_queue: args
                    .rooms
                    .max_queue
                    .map_or(barrage_servers::chat::MAX_QUEUE, |b| {
                        usize::try_from(b).unwrap_or(usize::MAX)
                    }),
                reuse_port: args.common.reuse_port,
            })
            .map_err(in_use)?
        }
        Server::Ws(_) => ws::start(ws::WsConfig {
            listen,
            threads,
            tls,
            delay: args.common.delay,
            stall_at: args.stall.stall_at,
            stall_for,
            reuse_port: args.common.reuse_port,
        })
        .map_err(in_use)?,
    };
    let mut children = match args.processes.processes.filter(|&n| n > 1) {
        Some(n) => Some(Children::start(n as usize, server.local_addr(), args)?),
        None => None,
    };
    let scheme = match (name, args.tls.tls_cert.is_some()) {
        ("http" | "h2", true) => "https",
        ("h2", false) => "h2c",
        ("grpc", true) => "grpcs",
        ("ws", true) => "wss",
        (n, _) => n,
    };
    let procs = match &children {
        Some(c) => format!("{} processes, ", c.list.len() + 1),
        None => String::new(),
    };
    say!(
        "barrage {name} server listening on {} ({procs}{threads} thread{}{}, pid {}){}",
        server.local_addr(),
        if threads == 1 { "" } else { "s" },
        if procs.is_empty() { "" } else { " each" },
        std::process::id(),
        if name == "echo" {
            // No client scheme speaks raw TCP in TLS; say so rather than print a tcp:// URL.
            if args.tls.tls_cert.is_some() {
                ", over TLS".to_string()
            } else {
                String::new()
            }
        } else if name == "chat" {
            let a = server.local_addr();
            format!(": tcp://{a} (one JSON object per line) and ws://{a}/ (one per text message)")
        } else if name == "frames" {
            let a = server.local_addr();
            format!(": tcp://{a} (frames of typed objects; JSON lines and WebSocket too)")
        } else {
            format!(": {scheme}://{}/", server.local_addr())
        }
    );
    let metrics = match metrics_addr {
        Some(addr) => {
            let read = server.stats_reader();
            let route = move |path: &str, _query: &str| {
                if path != "/metrics" {
                    return crate::sinks::httpd::Response::not_found("/metrics");
                }
                crate::sinks::httpd::Response::Full {
                    status: 200,
                    content_type: "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    body: openmetrics(&read()).into_bytes(),
                }
            };
            let m =
                crate::sinks::httpd::Server::start("--metrics", addr, std::sync::Arc::new(route))?;
            say!("metrics on http://{}/metrics", m.addr());
            Some(m)
        }
        None => None,
    };
    let deadline = args.common.exit_after.map(|d| Instant::now() + d);
    while !stop.load(Ordering::Relaxed) && deadline.is_none_or(|d| Instant::now() < d) {
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Some(m) = metrics {
        m.stop();
    }
    let addr = server.local_addr();
    let mut s = server.shutdown();
    // With --processes: each process's connections, this one first.
    let mut per_process = vec![s.connections_accepted];
    if let Some(c) = children.take() {
        for other in c.stop()? {
            per_process.push(other.connections_accepted);
            s.merge(&other);
        }
    }
    // The stats file first: it is the record tests and scripts rely on, and stdout may be a
    // pipe whose reader is gone.
    if let Some(p) = &args.common.stats {
        let mut v = serde_json::to_value(s)?;
        v["server"] = name.into();
        v["listen"] = addr.to_string().into();
        if per_process.len() > 1 {
            v["processes"] = serde_json::json!(per_process
                .iter()
                .map(|c| serde_json::json!({ "connections_accepted": c }))
                .collect::<Vec<_>>());
        }
        std::fs::write(p, serde_json::to_string_pretty(&v)? + "\n")
            .with_context(|| format!("--stats {}", p.display()))?;
        if !args.common.process_of_parent {
            crate::sinks::outfile::announce(p);
        }
    }
    let mut line = format!(
        "served: {} connections, {} bytes read in {} reads, {} bytes written in {} writes",
        s.connections_accepted, s.bytes_read, s.reads, s.bytes_written, s.writes
    );
    if let Some(h) = &s.http {
        line += &format!(
            "; {} requests (2xx {}, 3xx {}, 4xx {}, 5xx {})",
            h.requests, h.responses_2xx, h.responses_3xx, h.responses_4xx, h.responses_5xx
        );
    }
    if let Some(w) = &s.ws {
        line += &format!(
            "; {} handshakes, {} messages in, {} out",
            w.handshakes, w.messages_in, w.messages_out
        );
    }
    if let Some(g) = &s.grpc {
        line += &format!(
            "; {} calls (OK {}, other statuses {}), {} messages in, {} out",
            g.calls, g.status_ok, g.status_error, g.messages_in, g.messages_out
        );
    }
    if let Some(t) = &s.tls {
        line += &format!("; TLS {} handshakes, {} errors", t.handshakes, t.errors);
    }
    if let Some(c) = &s.chat {
        line += &format!(
            "; {} logins, {} rooms, {} messages in, {} deliveries out (dropped {}, duplicated {}, reordered {})",
            c.logins, c.rooms, c.messages_in, c.deliveries_out, c.dropped, c.duplicated, c.reordered
        );
        if c.malformed > 0 {
            line += &format!("; {} connections closed for malformed frames", c.malformed);
        }
        if c.slow_disconnects > 0 {
            line += &format!(
                "; {} slow members disconnected at --max-queue ({} deliveries they were owed dropped)",
                c.slow_disconnects, c.slow_dropped
            );
        }
    }
    let _ = writeln!(std::io::stdout(), "{line}");
    Ok(0)
}

/// `--room-size MIN-MAX` (or one size).
fn room_size(s: &str) -> Result<(usize, usize), Usage> {
    let bad = || {
        Usage::value(
            "--room-size",
            s,
            "write MIN-MAX with 1 <= MIN <= MAX, e.g. 3-8",
        )
    };
    let (a, b) = s.split_once('-').unwrap_or((s, s));
    let (a, b): (usize, usize) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a == 0 || a > b || b > 1_000_000 {
        return Err(bad());
    }
    Ok((a, b))
}

fn listen_addr(s: &str) -> Result<SocketAddr, Usage> {
    s.to_socket_addrs()
        .map_err(|e| {
            Usage::value(
                "--listen",
                s,
                format!("{e}; write HOST:PORT, e.g. 127.0.0.1:7000"),
            )
        })?
        .next()
        .ok_or_else(|| Usage::value("--listen", s, "no address"))
}

/// A server's counts as OpenMetrics text: every number of its stats record, named by its
/// path (`barrage_server_chat_deliveries_out_total`); counts are counters, what is open now
/// and high-water marks (`_peak_`) gauges.
fn openmetrics(stats: &barrage_servers::ServerStats) -> String {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut String) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    walk(&format!("{prefix}_{k}"), v, out);
                }
            }
            serde_json::Value::Number(n) => {
                let gauge = prefix.ends_with("_open")
                    || prefix.contains("_open_")
                    || prefix.contains("_peak_");
                if gauge {
                    out.push_str(&format!("# TYPE {prefix} gauge\n{prefix} {n}\n"));
                } else {
                    out.push_str(&format!("# TYPE {prefix} counter\n{prefix}_total {n}\n"));
                }
            }
            _ => {}
        }
    }
    let mut out = String::new();
    if let Ok(v) = serde_json::to_value(stats) {
        walk("barrage_server", &v, &mut out);
    }
    out.push_str("# EOF\n");
    out
}

/// `--processes N`: N - 1 more processes of the same server on the same port (this one is
/// the first), each with its own stats file, added up when they stop.
struct Children {
    list: Vec<(std::process::Child, std::path::PathBuf)>,
    /// The stats files' directory, removed when they are read.
    dir: std::path::PathBuf,
}

impl Children {
    fn start(
        n: usize,
        addr: SocketAddr,
        args: &crate::resolve::cli::ServerArgs,
    ) -> anyhow::Result<Children> {
        use std::io::BufRead;
        let exe = std::env::current_exe().context("--processes")?;
        let argv: Vec<String> = std::env::args().collect();
        let keep = crate::sys::args_without(
            &argv,
            &[
                ("--processes", true),
                ("--listen", true),
                ("--stats", true),
                ("--seed", true),
                ("--reuse-port", false),
                ("--process-of-parent", false),
            ],
        );
        let dir =
            crate::sys::fresh_temp_dir("serve").context("--processes: a temporary directory")?;
        let mut list = Vec::new();
        for i in 1..n {
            let stats = dir.join(format!("stats{i}.json"));
            let mut c = crate::sys::child_of_self(&exe);
            c.args(&keep)
                // Each child joins the first process's port.
                .args([
                    "--reuse-port",
                    "--process-of-parent",
                    "--listen",
                    &addr.to_string(),
                ])
                .arg("--stats")
                .arg(&stats)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::inherit());
            if args.rooms.seed.is_some()
                || args.rooms.drop_p.is_some()
                || args.rooms.dup_p.is_some()
            {
                // Each process draws its own faults.
                c.args([
                    "--seed",
                    &(args.rooms.seed.unwrap_or(1) + i as u64).to_string(),
                ]);
            }
            let mut child = c
                .spawn()
                .with_context(|| format!("--processes: cannot start process {i}"))?;
            // Its banner says it is listening; no banner: it failed (its error is on stderr).
            let mut banner = String::new();
            if let Some(out) = child.stdout.as_mut() {
                let _ = std::io::BufReader::new(out).read_line(&mut banner);
            }
            if !banner.contains("listening on") {
                let _ = child.kill();
                let _ = child.wait();
                drop(Children { list, dir });
                anyhow::bail!("--processes: process {i} of {n} did not start (see above)");
            }
            list.push((child, stats));
        }
        Ok(Children { list, dir })
    }
}

impl Drop for Children {
    /// An early end (an error after they started) takes the processes along.
    fn drop(&mut self) {
        for (c, _) in &mut self.list {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Children {
    /// Stops every process (SIGTERM, then SIGKILL after 10 s) and reads its counts.
    fn stop(mut self) -> anyhow::Result<Vec<barrage_servers::ServerStats>> {
        for (c, _) in &self.list {
            crate::sys::terminate(c);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut out = Vec::new();
        for (i, (c, stats)) in self.list.iter_mut().enumerate() {
            let status = loop {
                match c.try_wait() {
                    Ok(Some(st)) => break Some(st),
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    _ => {
                        let _ = c.kill();
                        let _ = c.wait();
                        break None;
                    }
                }
            };
            let text = std::fs::read_to_string(&*stats).unwrap_or_default();
            let parsed: Option<barrage_servers::ServerStats> = serde_json::from_str(&text).ok();
            match (status, parsed) {
                (Some(st), Some(s)) if st.success() => out.push(s),
                (st, _) => anyhow::bail!(
                    "--processes: process {} of {} ended badly ({}); its counts are lost",
                    i + 1,
                    self.list.len() + 1,
                    st.map_or("killed after 10 s".to_string(), |s| s.to_string())
                ),
            }
        }
        self.list.clear();
        Ok(out)
    }
}
