//! `barrage serve echo|http|ws`: a reference server in the foreground until a signal (or
//! `--exit-after`), then its counts on stdout and, with `--stats`, as JSON.

use crate::cli::{ServeArgs, Server};
use crate::config::Usage;
use anyhow::Context;
use barrage_servers::{echo, http, ws, ServerHandle};
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub fn serve(a: &ServeArgs) -> anyhow::Result<i32> {
    let (name, default_listen, args) = match &a.server {
        Server::Echo(s) => ("echo", "127.0.0.1:7000", s),
        Server::Http(s) => ("http", "127.0.0.1:8080", s),
        Server::Ws(s) => ("ws", "127.0.0.1:9000", s),
    };
    if args.server_timing && name != "http" {
        return Err(Usage::says(
            "--server-timing",
            format!("applies to serve http, not serve {name}"),
        )
        .into());
    }
    if args.service_time.is_some() && name != "http" {
        return Err(Usage::says(
            "--service-time",
            format!(
                "applies to serve http, not serve {name}; use --delay for a slow {name} server"
            ),
        )
        .into());
    }
    let listen = listen_addr(args.listen.as_deref().unwrap_or(default_listen))?;
    if let Some(p) = &args.stats {
        // Fail now, not after hours of serving.
        std::fs::write(p, b"{}\n").map_err(|e| Usage::value("--stats", p.display(), e))?;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = args.threads.map_or(cores, |t| t as usize);
    let stall_for = args.stall_for.unwrap_or_default();
    let stop = crate::sys::stop_on_signals();
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(barrage_servers::TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
        }),
        _ => None,
    };
    let server: ServerHandle = match &a.server {
        Server::Echo(_) => echo::start(echo::EchoConfig {
            listen,
            threads,
            tls: tls.clone(),
            delay: args.delay,
            stall_at: args.stall_at,
            stall_for,
        })?,
        Server::Http(_) => http::start(http::HttpConfig {
            listen,
            threads,
            tls: tls.clone(),
            delay: args.delay,
            service_time: args.service_time,
            stall_at: args.stall_at,
            stall_for,
            server_timing: args.server_timing,
        })?,
        Server::Ws(_) => ws::start(ws::WsConfig {
            listen,
            threads,
            tls,
            delay: args.delay,
            stall_at: args.stall_at,
            stall_for,
        })?,
    };
    let scheme = match (name, args.tls_cert.is_some()) {
        ("http", true) => "https",
        ("ws", true) => "wss",
        (n, _) => n,
    };
    say!(
        "barrage {name} server listening on {} ({threads} thread{}){}",
        server.local_addr(),
        if threads == 1 { "" } else { "s" },
        if name == "echo" {
            // No client scheme speaks raw TCP in TLS; say so rather than print a tcp:// URL.
            if args.tls_cert.is_some() {
                ", over TLS".to_string()
            } else {
                String::new()
            }
        } else {
            format!(": {scheme}://{}/", server.local_addr())
        }
    );
    let deadline = args.exit_after.map(|d| Instant::now() + d);
    while !stop.load(Ordering::Relaxed) && deadline.is_none_or(|d| Instant::now() < d) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let addr = server.local_addr();
    let s = server.shutdown();
    // The stats file first: it is the record tests and scripts rely on, and stdout may be a
    // pipe whose reader is gone.
    if let Some(p) = &args.stats {
        let mut v = serde_json::to_value(s)?;
        v["server"] = name.into();
        v["listen"] = addr.to_string().into();
        std::fs::write(p, serde_json::to_string_pretty(&v)? + "\n")
            .with_context(|| format!("--stats {}", p.display()))?;
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
    if let Some(t) = &s.tls {
        line += &format!("; TLS {} handshakes, {} errors", t.handshakes, t.errors);
    }
    let _ = writeln!(std::io::stdout(), "{line}");
    Ok(0)
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
