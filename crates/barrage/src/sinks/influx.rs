//! `--influx URL`: each second's figures pushed to InfluxDB as line protocol while the run
//! goes (`http://HOST:8086/write?db=NAME` for 1.x, `/api/v2/write?org=O&bucket=B` for 2.x with
//! `INFLUX_TOKEN`), for Grafana or Chronograf to draw beside the server's own series.
//!
//! Two measurements, every point tagged with `run` (the start time), `target` and `shard`, and
//! stamped with the wall-clock end of its second: `barrage` (the second's exchanges sent,
//! completed and failed, errors, connects, bytes, open connections, in flight, its rate and
//! latency percentiles in µs) and `barrage_errors` (a point per error class that occurred, its
//! `count`). The counts are the run's own per-second series, so summing a field over the run
//! gives the result's figure exactly (what the test checks against a real InfluxDB).
//!
//! Key decision: the coordinator only formats a second's lines and hands them to a thread of
//! their own through a bounded queue (a slow or absent InfluxDB never reaches the engine: a
//! full queue drops the second, counted); the thread POSTs each with short timeouts. What was
//! not written is said in one line at the end; the run's result does not depend on it.

use crate::usage::Usage;
use barrage_metrics::{ErrorClass, Tick};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long one write may take, connect included.
const DEADLINE: Duration = Duration::from_secs(5);
/// Seconds queued for the writer before the next one is dropped.
const QUEUE: usize = 60;

/// Where the points go: the URL split, and the token for InfluxDB 2.x (`INFLUX_TOKEN`).
#[derive(Clone, Debug)]
pub struct InfluxTarget {
    host: String,
    port: u16,
    /// Path and query, as given (`/write?db=barrage`).
    path: String,
    token: Option<String>,
}

impl InfluxTarget {
    /// `--influx URL`: an `http://` URL with a path (`/write?db=NAME` or `/api/v2/write?...`).
    pub fn parse(url: &str) -> Result<InfluxTarget, Usage> {
        // Said without the query, which may hold a password (`p=`).
        let shown = url.split('?').next().unwrap_or(url);
        if url.starts_with("https://") {
            return Err(Usage::value(
                "--influx",
                shown,
                "https:// is not supported; give InfluxDB's http:// URL (or a local relay)",
            ));
        }
        let u = barrage_monitor::MetricsUrl::parse(url)
            .map_err(|e| Usage::says("--influx", e.replace(url, shown)))?;
        if u.path == "/" {
            return Err(Usage::value(
                "--influx",
                shown,
                "give the write endpoint: http://HOST:8086/write?db=NAME (1.x) or \
                 http://HOST:8086/api/v2/write?org=ORG&bucket=BUCKET (2.x, INFLUX_TOKEN)",
            ));
        }
        Ok(InfluxTarget {
            host: u.host,
            port: u.port,
            path: u.path,
            token: std::env::var("INFLUX_TOKEN").ok().filter(|t| !t.is_empty()),
        })
    }

    /// The URL as it may be shown: no query.
    fn shown(&self) -> String {
        let path = self.path.split('?').next().unwrap_or("");
        format!("http://{}:{}{path}", self.host, self.port)
    }
}

/// The tags every point carries.
pub struct RunTags {
    pub run: String,
    pub target: String,
    pub shard: String,
}

/// The writer thread and the queue to it.
pub struct Pusher {
    tx: Option<SyncSender<String>>,
    thread: Option<JoinHandle<Written>>,
    /// Wall-clock time of the run's t = 0, in ns since the Unix epoch.
    base_ns: u128,
    tags: String,
    dropped: std::sync::atomic::AtomicU64,
    target: InfluxTarget,
}

/// What the writer managed.
#[derive(Default)]
struct Written {
    ok: u64,
    failed: u64,
    first_error: Option<String>,
}

impl Pusher {
    /// Starts the writer; `t0` is the wall-clock time of the run's t = 0.
    pub fn start(target: InfluxTarget, tags: RunTags, t0: SystemTime) -> Pusher {
        let (tx, rx) = sync_channel::<String>(QUEUE);
        let t = target.clone();
        let thread = std::thread::Builder::new()
            .name("influx".into())
            .spawn(move || {
                let mut w = Written::default();
                for body in rx {
                    match post(&t, &body) {
                        Ok(()) => w.ok += 1,
                        Err(e) => {
                            w.failed += 1;
                            w.first_error.get_or_insert(e);
                        }
                    }
                }
                w
            })
            .ok();
        let tags = format!(
            "run={},target={},shard={}",
            tag(&tags.run),
            tag(&tags.target),
            tag(&tags.shard)
        );
        Pusher {
            tx: Some(tx),
            thread,
            base_ns: t0.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()),
            tags,
            dropped: Default::default(),
            target,
        }
    }

    /// A second became final: its points, queued for the writer (dropped, and counted, when
    /// the writer is that far behind).
    pub fn tick(&self, t: &Tick) {
        let body = lines(t, &self.tags, self.base_ns + (t.t * 1e9) as u128);
        let Some(tx) = &self.tx else { return };
        match tx.try_send(body) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.dropped
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// Waits for the queued seconds to be written; a line on stderr when some were not.
    pub fn finish(mut self) {
        drop(self.tx.take());
        let w = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        let lost = w.failed + self.dropped.into_inner();
        if lost > 0 {
            let why = w
                .first_error
                .map(|e| format!(": {e}"))
                .unwrap_or_else(|| ": InfluxDB took them too slowly".into());
            crate::sys::err_line(format_args!(
                "warning: --influx {}: {lost} of {} seconds not written{why}",
                self.target.shown(),
                lost + w.ok
            ));
        }
    }
}

/// A tag value in line protocol: commas, spaces and equal signs escaped; never empty.
fn tag(v: &str) -> String {
    if v.is_empty() {
        return "none".into();
    }
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        if matches!(c, ',' | ' ' | '=' | '\\') {
            out.push('\\');
        }
        if c == '\n' {
            out.push(' ');
            continue;
        }
        out.push(c);
    }
    out
}

/// One second as line protocol: the `barrage` point and a `barrage_errors` point per class.
fn lines(t: &Tick, tags: &str, ns: u128) -> String {
    use std::fmt::Write as _;
    let l = &t.latency_us;
    let mut s = format!(
        "barrage,{tags},phase={} sent={}i,completed={}i,failed={}i,failed_requests={}i,\
         errors={}i,connects={}i,connect_failures={}i,bytes_read={}i,bytes_written={}i,\
         open={}i,in_flight={}i,rps={}",
        format!("{:?}", t.phase).to_lowercase(),
        t.sent,
        t.requests,
        t.failed,
        t.failed_requests,
        t.errors.total(),
        t.connects,
        t.connect_failures,
        t.bytes_read,
        t.bytes_written,
        t.open,
        t.in_flight,
        t.rps,
    );
    // Percentiles only for a second that timed something: 0 µs would be a figure.
    if l.count > 0 {
        let _ = write!(
            s,
            ",p50_us={}i,p90_us={}i,p99_us={}i,p999_us={}i,max_us={}i,timed={}i",
            l.p50, l.p90, l.p99, l.p999, l.max, l.count
        );
    }
    let _ = writeln!(s, " {ns}");
    for class in ErrorClass::ALL {
        let n = t.errors.get(class);
        if n > 0 {
            let _ = writeln!(
                s,
                "barrage_errors,{tags},class={} count={n}i {ns}",
                tag(class.as_str())
            );
        }
    }
    s
}

/// POSTs `body` to the write endpoint: Ok on a 2xx answer, within [`DEADLINE`].
fn post(t: &InfluxTarget, body: &str) -> Result<(), String> {
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
    let auth = t
        .token
        .as_ref()
        .map(|k| format!("Authorization: Token {k}\r\n"))
        .unwrap_or_default();
    let sep = if t.path.contains('?') { '&' } else { '?' };
    write!(
        s,
        "POST {}{sep}precision=ns HTTP/1.0\r\nHost: {host}:{}\r\nUser-Agent: barrage\r\n{auth}\
         Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
        t.path,
        t.port,
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
    fn tags_are_escaped_and_a_second_is_its_points() {
        assert_eq!(tag("tcp://h:1/a b,c=d"), "tcp://h:1/a\\ b\\,c\\=d");
        assert_eq!(tag(""), "none");
        let mut t = Tick {
            t: 2.0,
            requests: 10,
            sent: 11,
            ..Tick::default()
        };
        t.errors.add(ErrorClass::Timeout, 1);
        let s = lines(&t, "run=r,target=x,shard=0", 5_000_000_000);
        let mut l = s.lines();
        let first = l.next().unwrap();
        assert!(
            first.starts_with(
                "barrage,run=r,target=x,shard=0,phase=measured sent=11i,completed=10i,"
            ),
            "{first}"
        );
        assert!(first.ends_with(" 5000000000"), "{first}");
        assert!(!first.contains("p50_us"), "nothing timed: {first}");
        assert_eq!(
            l.next(),
            Some("barrage_errors,run=r,target=x,shard=0,class=timeout count=1i 5000000000")
        );
        assert_eq!(l.next(), None);
    }

    #[test]
    fn a_url_without_the_write_endpoint_or_with_tls_is_refused_without_its_query() {
        for (url, says) in [
            (
                "https://h:8086/write?db=a&p=secret",
                "https:// is not supported",
            ),
            ("http://127.0.0.1:8086", "give the write endpoint"),
            ("127.0.0.1:8086/write?p=secret", "give an http:// URL"),
        ] {
            let e = InfluxTarget::parse(url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains("secret"), "{url}: {e}");
        }
    }
}
