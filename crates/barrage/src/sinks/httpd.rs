//! A small blocking HTTP/1.1 server for barrage's own live endpoints (`--prometheus`,
//! `--web`, `serve --metrics`): GET only, one request per connection, a thread per connection
//! (at most [`MAX_CLIENTS`] at once), so a slow or stalled client holds only its own thread and
//! never the run.
//!
//! Slow clients cannot lock a scrape out: the whole request head must arrive within
//! [`HEAD_DEADLINE`] (a client that trickles it is answered 408 and closed), when every slot is
//! taken a new connection takes the slot of the oldest one still reading its head (that one is
//! closed), and event streams may hold at most [`MAX_STREAMS`] slots, so whole answers (a scrape,
//! the page, `/series`) always have one. Only when every slot is answering is a connection
//! answered 503.
//!
//! Key decision: std only (no async runtime in the binary for two loopback endpoints); a
//! route returns a whole response or a stream that writes until it is done or its client is
//! gone (server-sent events).

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Connections served at once (a thread each).
pub const MAX_CLIENTS: usize = 32;
/// Of those, event streams: the others stay for whole answers.
pub const MAX_STREAMS: usize = MAX_CLIENTS - 4;
/// The time a client has to send its whole request head.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(2);

/// Writes a streamed body until it is done (an error means the client is gone).
pub type StreamBody = Box<dyn FnOnce(&mut TcpStream) -> std::io::Result<()> + Send>;

/// What a route answers.
pub enum Response {
    Full {
        status: u16,
        content_type: &'static str,
        body: Vec<u8>,
    },
    /// Headers are written with this content type, then the function writes the body until
    /// it returns (an error means the client is gone).
    Stream {
        content_type: &'static str,
        write: StreamBody,
    },
}

impl Response {
    pub fn not_found(what: &str) -> Response {
        Response::Full {
            status: 404,
            content_type: "text/plain; charset=utf-8",
            body: format!("not found; barrage serves {what}\n").into_bytes(),
        }
    }
}

/// A route: called with the request's path and its query (without the `?`; empty if none).
pub type Route = dyn Fn(&str, &str) -> Response + Send + Sync;

/// A running server.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// `PORT`, `HOST:PORT` or `[V6]:PORT` for `flag`; loopback unless `any`.
pub fn parse_addr(flag: &str, v: &str, any: bool) -> Result<SocketAddr, crate::usage::Usage> {
    use crate::usage::Usage;
    let addr: SocketAddr = match v.parse::<u16>() {
        Ok(port) => SocketAddr::from(([127, 0, 0, 1], port)),
        Err(_) if v.trim().parse::<i64>().is_ok() => {
            return Err(Usage::value(
                flag,
                v,
                "a port is 0 to 65535; give PORT or HOST:PORT, e.g. 9464 or 127.0.0.1:9464",
            ))
        }
        Err(_) => v.parse().map_err(|_| {
            Usage::value(
                flag,
                v,
                "give PORT or HOST:PORT, e.g. 9464 or 127.0.0.1:9464",
            )
        })?,
    };
    if !addr.ip().is_loopback() && !any {
        return Err(Usage::value(
            flag,
            v,
            "not a loopback address: add --listen-any to serve other machines",
        ));
    }
    Ok(addr)
}

impl Server {
    /// Binds `addr` and serves `route`.
    pub fn start(
        flag: &str,
        addr: SocketAddr,
        route: Arc<Route>,
    ) -> Result<Server, crate::usage::Usage> {
        use crate::usage::Usage;
        let listener = TcpListener::bind(addr)
            .map_err(|e| Usage::value(flag, addr, format!("cannot listen: {e}")))?;
        let addr = listener.local_addr().unwrap_or(addr);
        if !addr.ip().is_loopback() {
            crate::sys::err_line(format_args!(
                "warning: {flag} listens on {addr}, reachable from other machines"
            ));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name(format!("barrage{flag}"))
                .spawn(move || accept(listener, route, &stop))
                .map_err(|e| Usage::value(flag, addr, format!("cannot start: {e}")))?
        };
        Ok(Server {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting (streams in progress end on their own).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The server's slots: how many are taken, and which connections are still reading their
/// request head (oldest first: the ones a new connection may take the slot of).
#[derive(Default)]
struct Slots {
    used: usize,
    streams: usize,
    heads: VecDeque<(u64, TcpStream)>,
    next: u64,
}

type SharedSlots = Arc<Mutex<Slots>>;

fn lock(slots: &SharedSlots) -> std::sync::MutexGuard<'_, Slots> {
    slots.lock().unwrap_or_else(|e| e.into_inner())
}

/// A taken slot, given back when dropped (also if a route panics), unless a newer connection
/// took it over while this one was reading its head.
struct Slot {
    slots: SharedSlots,
    id: u64,
    /// Still listed in `heads`.
    reading: bool,
    stream: bool,
}

impl Slot {
    /// The head is read (or not, in time): the connection can no longer be closed for a
    /// newer one. False if it already was.
    fn head_done(&mut self) -> bool {
        let mut s = lock(&self.slots);
        self.reading = false;
        match s.heads.iter().position(|(id, _)| *id == self.id) {
            Some(i) => {
                s.heads.remove(i);
                true
            }
            None => {
                // Its slot went to a newer connection: nothing to give back.
                self.id = u64::MAX;
                false
            }
        }
    }

    /// Takes one of the [`MAX_STREAMS`] stream slots; false if none is free.
    fn start_stream(&mut self) -> bool {
        let mut s = lock(&self.slots);
        if s.streams >= MAX_STREAMS {
            return false;
        }
        s.streams += 1;
        self.stream = true;
        true
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if self.reading {
            self.head_done();
        }
        if self.id == u64::MAX {
            return;
        }
        let mut s = lock(&self.slots);
        s.used -= 1;
        if self.stream {
            s.streams -= 1;
        }
    }
}

/// A slot for `conn`: a free one, else the one of the oldest connection still reading its head
/// (which is closed). `None` when every slot is answering.
fn take_slot(slots: &SharedSlots, conn: &TcpStream) -> Option<Slot> {
    let watch = conn.try_clone().ok()?;
    let mut s = lock(slots);
    if s.used >= MAX_CLIENTS {
        let (_, oldest) = s.heads.pop_front()?;
        // Its read ends now; its thread sees it lost its slot and goes.
        let _ = oldest.shutdown(Shutdown::Both);
    } else {
        s.used += 1;
    }
    let id = s.next;
    s.next += 1;
    s.heads.push_back((id, watch));
    Some(Slot {
        slots: Arc::clone(slots),
        id,
        reading: true,
        stream: false,
    })
}

const BUSY: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

fn accept(listener: TcpListener, route: Arc<Route>, stop: &AtomicBool) {
    let slots = SharedSlots::default();
    for conn in listener.incoming() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let Ok(mut conn) = conn else {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let Some(slot) = take_slot(&slots, &conn) else {
            let _ = conn.set_write_timeout(Some(Duration::from_millis(200)));
            let _ = conn.write_all(BUSY);
            continue;
        };
        let route = Arc::clone(&route);
        // A thread that cannot start drops its slot (and the connection) with it.
        let _ = std::thread::Builder::new()
            .name("barrage-http".into())
            .spawn(move || handle(conn, slot, &*route));
    }
}

/// Reads the request head within [`HEAD_DEADLINE`]: `Ok(head)`, `Err(true)` when the deadline
/// passed, `Err(false)` when the client went (or the connection was closed for a newer one).
fn read_head(conn: &mut TcpStream) -> Result<Vec<u8>, bool> {
    let deadline = Instant::now() + HEAD_DEADLINE;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || conn.set_read_timeout(Some(left)).is_err() {
            return Err(true);
        }
        match conn.read(&mut buf) {
            Ok(0) => return Err(false),
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(true)
            }
            Err(_) => return Err(false),
        }
    }
    Ok(head)
}

/// Whether the request head's `Host` (if any) is loopback: `localhost`, `127.x.y.z`, `[::1]`,
/// with or without a port.
fn host_is_local(head: &str) -> bool {
    let Some(host) = head.lines().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("host")
            .then(|| v.trim().to_ascii_lowercase())
    }) else {
        return true;
    };
    let name = if let Some(v6) = host.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host.as_str(), |(h, _)| h)
    };
    name == "localhost"
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn handle(mut conn: TcpStream, mut slot: Slot, route: &Route) {
    let _ = conn.set_write_timeout(Some(Duration::from_secs(2)));
    let _ = conn.set_nodelay(true);
    let head = read_head(&mut conn);
    if !slot.head_done() {
        return;
    }
    let head = match head {
        Ok(head) => head,
        Err(timed_out) => {
            if timed_out {
                let _ = conn.write_all(
                    b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
            return;
        }
    };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if method != "GET" {
        let _ = conn.write_all(
            b"HTTP/1.1 405 Method Not Allowed\r\nAllow: GET\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        return;
    }
    // On loopback, a page from elsewhere (DNS rebinding) must not read the run: only a Host
    // that names this machine's loopback (or none, as HTTP/1.0 allows) is answered.
    let loopback = conn.local_addr().is_ok_and(|a| a.ip().is_loopback());
    if loopback && !host_is_local(&String::from_utf8_lossy(&head)) {
        let _ = conn.write_all(
            b"HTTP/1.1 421 Misdirected Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        return;
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    match route(path, query) {
        Response::Full {
            status,
            content_type,
            body,
        } => {
            let reason = match status {
                200 => "OK",
                404 => "Not Found",
                _ => "Error",
            };
            let head = format!(
                "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn
                .write_all(head.as_bytes())
                .and_then(|()| conn.write_all(&body));
        }
        Response::Stream { .. } if !slot.start_stream() => {
            let _ = conn.write_all(BUSY);
        }
        Response::Stream {
            content_type,
            write,
        } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
            );
            if conn.write_all(head.as_bytes()).is_ok() {
                let _ = write(&mut conn);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::host_is_local;

    #[test]
    fn only_loopback_hosts_are_answered_on_loopback() {
        for ok in [
            "",
            "Host: 127.0.0.1:9464",
            "host: localhost",
            "Host: [::1]:80",
            "Host: 127.9.8.7",
        ] {
            assert!(
                host_is_local(&format!("GET / HTTP/1.1\r\n{ok}\r\n\r\n")),
                "{ok}"
            );
        }
        for bad in [
            "Host: evil.example",
            "Host: evil.example:9464",
            "Host: 10.0.0.1",
            "Host: [2001:db8::1]:80",
        ] {
            assert!(
                !host_is_local(&format!("GET / HTTP/1.1\r\n{bad}\r\n\r\n")),
                "{bad}"
            );
        }
    }
}
