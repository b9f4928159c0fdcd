//! `barrage serve echo`: a reference server in the foreground until a signal (or
//! `--exit-after`), then its counts on stdout and, with `--stats`, as JSON.

use crate::cli::{EchoArgs, ServeArgs, Server};
use crate::config::Usage;
use anyhow::Context;
use barrage_servers::echo::{self, EchoConfig};
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub fn serve(a: &ServeArgs) -> anyhow::Result<i32> {
    match &a.server {
        Server::Echo(e) => serve_echo(e),
    }
}

fn listen_addr(s: &str) -> Result<SocketAddr, Usage> {
    s.to_socket_addrs()
        .map_err(|e| {
            Usage(format!(
                "--listen {s}: {e}; write HOST:PORT, e.g. 127.0.0.1:7000"
            ))
        })?
        .next()
        .ok_or_else(|| Usage(format!("--listen {s}: no address")))
}

fn serve_echo(a: &EchoArgs) -> anyhow::Result<i32> {
    let listen = listen_addr(&a.listen)?;
    if let Some(p) = &a.stats {
        // Fail now, not after hours of serving.
        std::fs::write(p, b"{}\n").map_err(|e| Usage(format!("--stats {}: {e}", p.display())))?;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cfg = EchoConfig {
        listen,
        threads: a.threads.map_or(cores, |t| t as usize),
        delay: a.delay,
        stall_at: a.stall_at,
        stall_for: a.stall_for.unwrap_or_default(),
    };
    let threads = cfg.threads;
    let stop = crate::sys::stop_on_signals();
    let server = echo::start(cfg)?;
    let _ = writeln!(
        std::io::stdout(),
        "barrage echo server listening on {} ({threads} thread{})",
        server.local_addr(),
        if threads == 1 { "" } else { "s" }
    );
    let deadline = a.exit_after.map(|d| Instant::now() + d);
    while !stop.load(Ordering::Relaxed) && deadline.is_none_or(|d| Instant::now() < d) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let addr = server.local_addr();
    let s = server.shutdown();
    // The stats file first: it is the record tests and scripts rely on, and stdout may be a
    // pipe whose reader is gone.
    if let Some(p) = &a.stats {
        let mut v = serde_json::to_value(s)?;
        v["server"] = "echo".into();
        v["listen"] = addr.to_string().into();
        std::fs::write(p, serde_json::to_string_pretty(&v)? + "\n")
            .with_context(|| format!("--stats {}", p.display()))?;
    }
    let _ = writeln!(
        std::io::stdout(),
        "served: {} connections, {} bytes read in {} reads, {} bytes written in {} writes",
        s.connections_accepted,
        s.bytes_read,
        s.reads,
        s.bytes_written,
        s.writes
    );
    Ok(0)
}
