//! `--web ADDR`: the live web page of a run. `/` is the page
//! (`barrage_report::live::page`), `/series` every second so far (and the final summary once
//! there is one), `/events?from=N` the seconds from the N-th on as server-sent events, then an
//! event `done` with the final summary.
//!
//! Key decision: the coordinator thread appends each second (already serialized) under a short
//! lock and wakes the streams; each browser is served by its own thread, so a slow or stalled
//! browser only falls behind (it is sent what it missed when it catches up), never holds the
//! run, and a reload starts again from `/series`. Loopback unless `--listen-any`.

use crate::sinks::httpd::{self, Response};
use crate::usage::Usage;
use barrage_metrics::Tick;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
struct State {
    info: serde_json::Value,
    /// Each second as JSON: `{"tick": ..., "server": ...}` (shared: a request copies the
    /// pointers under the lock and builds its answer outside it).
    points: Vec<Arc<str>>,
    /// The final summary as JSON: `{"summary": "..."}`.
    done: Option<String>,
    /// Event streams being served.
    streams: usize,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

pub struct Web {
    shared: Shared,
    server: httpd::Server,
}

pub fn parse_addr(v: &str, any: bool) -> Result<SocketAddr, Usage> {
    httpd::parse_addr("--web", v, any)
}

impl Web {
    /// Binds `addr` (a usage error naming `--web` if it cannot) and serves the page.
    pub fn start(addr: SocketAddr, info: serde_json::Value) -> Result<Web, Usage> {
        let shared: Shared = Arc::new((
            Mutex::new(State {
                info,
                ..State::default()
            }),
            Condvar::new(),
        ));
        let page = barrage_report::live::page();
        let s = Arc::clone(&shared);
        let route = move |path: &str, query: &str| match path {
            "/" | "/index.html" => Response::Full {
                status: 200,
                content_type: "text/html; charset=utf-8",
                body: page.clone().into_bytes(),
            },
            "/series" => {
                let (info, points, done) = {
                    let st = s.0.lock().expect("web state");
                    (st.info.to_string(), st.points.clone(), st.done.clone())
                };
                let mut body = format!("{{\"info\":{info},\"points\":[");
                for (i, p) in points.iter().enumerate() {
                    if i > 0 {
                        body.push(',');
                    }
                    body.push_str(p);
                }
                body.push_str("],\"done\":");
                body.push_str(done.as_deref().unwrap_or("null"));
                body.push('}');
                Response::Full {
                    status: 200,
                    content_type: "application/json",
                    body: body.into_bytes(),
                }
            }
            "/events" => {
                let from = query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("from="))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let s = Arc::clone(&s);
                Response::Stream {
                    content_type: "text/event-stream",
                    write: Box::new(move |w| stream(&s, from, w)),
                }
            }
            _ => Response::not_found("/, /series and /events"),
        };
        let server = httpd::Server::start("--web", addr, Arc::new(route))?;
        Ok(Web { shared, server })
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// One second of the run, with the server's sample and the machine's network interfaces
    /// if they are monitored.
    pub fn tick(
        &self,
        t: &Tick,
        server: Option<&crate::sinks::tui::ServerSample>,
        net: Option<&(f64, Vec<barrage_metrics::NetIfSample>)>,
        metrics: &[(String, f64)],
    ) {
        let net = net.map(|(t, ifs)| {
            let ifs: Vec<serde_json::Value> = ifs
                .iter()
                .map(|n| {
                    serde_json::json!({"name": n.name, "rx_bytes_per_s": n.rx_bytes_per_s,
                        "tx_bytes_per_s": n.tx_bytes_per_s})
                })
                .collect();
            serde_json::json!({"t": t, "interfaces": ifs})
        });
        let point = serde_json::json!({
            "tick": t,
            "server": server.map(|s| serde_json::json!({"cpu_pct": s.cpu_pct, "rss_bytes": s.rss_bytes})),
            "net": net,
            "metrics": metrics,
        });
        let (lock, wake) = &*self.shared;
        lock.lock()
            .expect("web state")
            .points
            .push(Arc::from(point.to_string()));
        wake.notify_all();
    }

    /// The run is over: every open page gets the final summary, then the server stops (after
    /// at most a second for the streams to send it).
    pub fn finish(self, summary: String) {
        let (lock, wake) = &*self.shared;
        lock.lock().expect("web state").done =
            Some(serde_json::json!({ "summary": summary }).to_string());
        wake.notify_all();
        let deadline = Instant::now() + Duration::from_secs(1);
        while lock.lock().expect("web state").streams > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.server.stop();
    }
}

/// Serves one event stream: the seconds from `from` on as they come, then `done`.
fn stream(s: &Shared, mut next: usize, w: &mut std::net::TcpStream) -> std::io::Result<()> {
    let (lock, wake) = &**s;
    lock.lock().expect("web state").streams += 1;
    let result = (|| loop {
        let (batch, done) = {
            let mut st = lock.lock().expect("web state");
            while next >= st.points.len() && st.done.is_none() {
                let (g, timeout) = wake
                    .wait_timeout(st, Duration::from_secs(10))
                    .expect("web state");
                st = g;
                if timeout.timed_out() && next >= st.points.len() && st.done.is_none() {
                    break;
                }
            }
            let batch: Vec<Arc<str>> = st.points[next.min(st.points.len())..].to_vec();
            (batch, st.done.clone())
        };
        if batch.is_empty() && done.is_none() {
            w.write_all(b": still running\n\n")?; // a comment keeps the stream alive
            continue;
        }
        let mut out = String::new();
        for p in &batch {
            out.push_str("data: ");
            out.push_str(p);
            out.push_str("\n\n");
        }
        next += batch.len();
        if let Some(d) = &done {
            out.push_str("event: done\ndata: ");
            out.push_str(d);
            out.push_str("\n\n");
        }
        w.write_all(out.as_bytes())?;
        w.flush()?;
        if done.is_some() {
            return Ok(());
        }
    })();
    lock.lock().expect("web state").streams -= 1;
    result
}
