//! What the push outputs share (`--influx`, `--otlp`): an `http://` endpoint, and a writer
//! thread that POSTs each second's body to it behind a bounded queue, so a slow or absent
//! receiver never reaches the engine (a full queue drops the second, counted); what was not
//! written is said in one line at the end.

use crate::usage::Usage;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long one write may take, connect included.
const DEADLINE: Duration = Duration::from_secs(5);
/// Seconds queued for the writer before the next one is dropped.
const QUEUE: usize = 60;

/// An `http://HOST:PORT/PATH?QUERY` endpoint and what each POST to it carries.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// The flag that named it, for its messages.
    pub flag: &'static str,
    host: String,
    port: u16,
    /// Path and query, as given.
    path: String,
    pub content_type: &'static str,
    /// More header lines (`Name: value\r\n`), e.g. a token: never shown.
    pub headers: String,
}

impl Endpoint {
    /// `url` for `flag`: an `http://` URL with a path; `example` is said when it has none.
    pub fn parse(flag: &'static str, url: &str, example: &str) -> Result<Endpoint, Usage> {
        // Said without the query, which may hold a password (`p=`).
        let shown = url.split('?').next().unwrap_or(url);
        if url.starts_with("https://") {
            return Err(Usage::value(
                flag,
                shown,
                "https:// is not supported; give an http:// URL (or a local relay)",
            ));
        }
        let u = barrage_monitor::MetricsUrl::parse(url)
            .map_err(|e| Usage::says(flag, e.replace(url, shown)))?;
        if u.path == "/" {
            return Err(Usage::value(
                flag,
                shown,
                format!("give the endpoint's path: {example}"),
            ));
        }
        Ok(Endpoint {
            flag,
            host: u.host,
            port: u.port,
            path: u.path,
            content_type: "text/plain; charset=utf-8",
            headers: String::new(),
        })
    }

    /// The URL as it may be shown: no query.
    pub fn shown(&self) -> String {
        let path = self.path.split('?').next().unwrap_or("");
        format!("http://{}:{}{path}", self.host, self.port)
    }

    /// The path with `param` added to its query.
    pub fn with_param(mut self, param: &str) -> Self {
        let sep = if self.path.contains('?') { '&' } else { '?' };
        self.path = format!("{}{sep}{param}", self.path);
        self
    }
}

/// The writer thread and the queue to it.
pub struct Pusher {
    tx: Option<SyncSender<String>>,
    thread: Option<JoinHandle<()>>,
    /// Seconds handed to the writer, and those dropped because it was too far behind.
    queued: AtomicU64,
    dropped: AtomicU64,
    written: std::sync::Arc<Written>,
    to: Endpoint,
}

/// What the writer managed, as it goes (so that the end does not wait for it).
#[derive(Default)]
struct Written {
    ok: AtomicU64,
    failed: AtomicU64,
    first_error: std::sync::Mutex<Option<String>>,
}

impl Pusher {
    pub fn start(to: Endpoint) -> Pusher {
        let (tx, rx) = sync_channel::<String>(QUEUE);
        let t = to.clone();
        let written = std::sync::Arc::new(Written::default());
        let w = std::sync::Arc::clone(&written);
        let thread = std::thread::Builder::new()
            .name(to.flag.trim_start_matches('-').into())
            .spawn(move || {
                for body in rx {
                    match post(&t, &body) {
                        Ok(()) => w.ok.fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            if let Ok(mut f) = w.first_error.lock() {
                                f.get_or_insert(e);
                            }
                            w.failed.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                }
            })
            .ok();
        Pusher {
            tx: Some(tx),
            thread,
            queued: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            written,
            to,
        }
    }

    /// Queue one second's body (dropped, and counted, when the writer is that far behind).
    pub fn send(&self, body: String) {
        let Some(tx) = &self.tx else { return };
        match tx.try_send(body) {
            Ok(()) => {
                self.queued.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Waits for the queued seconds to be written, one [`DEADLINE`] at most in all (a
    /// receiver that takes the connection and never answers does not hold the run's end; the
    /// writer is left to give up on its own); a line on stderr when some were not written.
    pub fn finish(mut self) {
        drop(self.tx.take());
        let until = std::time::Instant::now() + DEADLINE;
        if let Some(t) = self.thread.take() {
            while !t.is_finished() && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
        let w = &self.written;
        let ok = w.ok.load(Ordering::Relaxed);
        let seconds = self.queued.load(Ordering::Relaxed) + self.dropped.load(Ordering::Relaxed);
        let lost = seconds.saturating_sub(ok);
        if lost > 0 {
            let why = w
                .first_error
                .lock()
                .ok()
                .and_then(|f| f.clone())
                .map(|e| format!(": {e}"))
                .unwrap_or_else(|| ": the receiver took them too slowly".into());
            crate::sys::err_line(format_args!(
                "warning: {} {}: {lost} of {seconds} seconds not written{why}",
                self.to.flag,
                self.to.shown(),
            ));
        }
    }
}

/// POSTs `body` to the endpoint: Ok on a 2xx answer, within [`DEADLINE`].
fn post(t: &Endpoint, body: &str) -> Result<(), String> {
    let addr = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("no address")?;
    let mut s = TcpStream::connect_timeout(&addr, DEADLINE).map_err(|e| e.to_string())?;
    let _ = s.set_write_timeout(Some(DEADLINE));
    let _ = s.set_read_timeout(Some(DEADLINE));
    let host = if t.host.contains(':') {
        format!("[{}]", t.host)
    } else {
        t.host.clone()
    };
    write!(
        s,
        "POST {} HTTP/1.0\r\nHost: {host}:{}\r\nUser-Agent: barrage\r\n{}Content-Type: {}\r\n\
         Content-Length: {}\r\n\r\n{body}",
        t.path,
        t.port,
        t.headers,
        t.content_type,
        body.len()
    )
    .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    let _ = s.take(64 * 1024).read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let status = text.split_whitespace().nth(1).unwrap_or("");
    if status.starts_with('2') {
        return Ok(());
    }
    let said = text
        .split("\r\n\r\n")
        .nth(1)
        .map(|b| b.trim().chars().take(200).collect::<String>())
        .unwrap_or_default();
    Err(if status.is_empty() {
        "no HTTP answer".into()
    } else {
        format!("HTTP {status} {said}").trim().to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_without_its_path_or_with_tls_is_refused_without_its_query() {
        for (url, says) in [
            (
                "https://h:8086/write?db=a&p=secret",
                "https:// is not supported",
            ),
            ("http://127.0.0.1:8086", "give the endpoint's path"),
            ("127.0.0.1:8086/write?p=secret", "give an http:// URL"),
        ] {
            let e = Endpoint::parse("--influx", url, "/write")
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains("secret"), "{url}: {e}");
        }
    }
}
