//! The reference HTTP/2 server: the routes of the http server (`/`, `/delay/<ms>`,
//! `/bytes/<n>`, `/status/<code>`), cleartext (h2c with prior knowledge) or TLS (ALPN `h2`),
//! with knobs for what a client must handle: fewer concurrent streams
//! (`max_streams`, SETTINGS_MAX_CONCURRENT_STREAMS), a GOAWAY after so many requests on a
//! connection (`goaway_after`), small flow-control windows (`window`), a delay on every answer.
//!
//! Key decision: built on the `h2` crate (hyper's HTTP/2) and tokio, not on barrage's own
//! code: the client's framing, HPACK and flow control are barrage's, so a bug there meets an
//! implementation that does not share it. Each thread runs its own single-threaded runtime
//! with its own listener (the threads share the port as the other servers' do), so its
//! counters keep one writer; requests are counted when their response is queued.

use crate::runtime::{self, AsyncParts, ServerHandle, ASYNC_STOP_POLL};
use crate::stats::{CounterWriter, Kind, ServerError, Tls};
use crate::tls::TlsFiles;
use bytes::Bytes;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

mod guard;
pub use guard::{TURN_BLOCKS, TURN_BYTES};

/// SETTINGS_MAX_HEADER_LIST_SIZE: the decoded size (names, values, 32 bytes each) of the
/// largest request head served.
pub const MAX_HEADER_LIST: u32 = 16 * 1024;

/// How to run the HTTP/2 server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct H2Config {
    pub listen: SocketAddr,
    pub threads: usize,
    /// TLS with ALPN `h2`; `None` is h2c with prior knowledge.
    pub tls: Option<TlsFiles>,
    /// Every answer this long after its request's head.
    pub delay: Option<Duration>,
    /// `Server-Timing: app;dur=MS` on every answer: the time from the request's head to the
    /// response.
    pub server_timing: bool,
    /// SETTINGS_MAX_CONCURRENT_STREAMS (unlimited when `None`).
    pub max_streams: Option<u32>,
    /// After this many requests on a connection, GOAWAY: the connection finishes what it
    /// accepted and closes.
    pub goaway_after: Option<u64>,
    /// The flow-control windows (stream and connection) this server grants, in bytes.
    pub window: Option<u32>,
    pub reuse_port: bool,
    /// Serve gRPC (`barrage.Echo`, [`crate::grpc`]) instead of the http routes.
    pub grpc: Option<crate::grpc::GrpcKnobs>,
}

/// Starts the server; it runs until the handle is shut down or dropped.
pub fn start(cfg: H2Config) -> Result<ServerHandle, ServerError> {
    let tls = match &cfg.tls {
        Some(files) => Some(crate::tls::load(files, cfg.listen, &[b"h2"])?),
        None => None,
    };
    let (listen, reuse, threads) = (cfg.listen, cfg.reuse_port, cfg.threads);
    let kind = if cfg.grpc.is_some() {
        Kind::Grpc
    } else {
        Kind::H2
    };
    let cfg = Arc::new(cfg);
    runtime::spawn_async(kind, tls.is_some(), listen, reuse, threads, move |parts| {
        run(parts, Arc::clone(&cfg), tls.clone())
    })
}

fn run(parts: AsyncParts, cfg: Arc<H2Config>, tls: Option<Arc<rustls::ServerConfig>>) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return eprintln!("barrage-servers: h2: no runtime: {e}"),
    };
    let local = tokio::task::LocalSet::new();
    let counters = Rc::new(parts.counters);
    let calls = Rc::new(crate::grpc::Calls::default());
    let stop = parts.stop;
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    local.block_on(&rt, async move {
        let listener = match tokio::net::TcpListener::from_std(parts.listener) {
            Ok(l) => l,
            Err(e) => return eprintln!("barrage-servers: h2: listener: {e}"),
        };
        while !stop.load(Ordering::Acquire) {
            tokio::select! {
                r = listener.accept() => {
                    let Ok((sock, _)) = r else { continue };
                    let _ = sock.set_nodelay(true);
                    counters.accepted();
                    let turn = Rc::new(guard::Turn::default());
                    let conn = Conn {
                        cfg: Arc::clone(&cfg),
                        c: Rc::clone(&counters),
                        calls: Rc::clone(&calls),
                        turn: Rc::clone(&turn),
                    };
                    let task = Box::pin(conn.run(sock, acceptor.clone()));
                    tokio::task::spawn_local(guard::Turns { turn, task });
                }
                _ = tokio::time::sleep(ASYNC_STOP_POLL) => {}
            }
        }
    });
    // Dropping the tasks closes their connections; each counts its close.
    drop(local);
}

/// One connection's task; its drop counts the close.
struct Conn {
    cfg: Arc<H2Config>,
    c: Rc<CounterWriter>,
    /// The thread's gRPC calls (for `--fail-every`).
    calls: Rc<crate::grpc::Calls>,
    /// What the connection was handed in this poll of its task ([`guard`]).
    turn: Rc<guard::Turn>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.c.closed();
    }
}

impl Conn {
    async fn run(self, sock: tokio::net::TcpStream, acceptor: Option<tokio_rustls::TlsAcceptor>) {
        let io = Counted {
            inner: sock,
            c: Rc::clone(&self.c),
        };
        match acceptor {
            None => self.serve(io).await,
            Some(a) => match a.accept(io).await {
                Ok(s) => {
                    self.c.tls(Tls::Handshakes);
                    self.serve(s).await
                }
                Err(_) => self.c.tls(Tls::Errors),
            },
        }
    }

    async fn serve<T: AsyncRead + AsyncWrite + Unpin>(&self, io: T) {
        let Some(io) = guard::Guarded::preface(io, Rc::clone(&self.turn)).await else {
            return;
        };
        let mut b = h2::server::Builder::new();
        // What a header block may decode to: advertised, a larger block's stream refused (431
        // and a reset), one over four times this ends the connection (GOAWAY
        // ENHANCE_YOUR_CALM, the h2 crate's abuse limit). The crate's default, 16 MiB, let a
        // block of one-byte references to a 4 KiB table entry cost 4,000 times its size.
        b.max_header_list_size(MAX_HEADER_LIST);
        if let Some(n) = self.cfg.max_streams {
            b.max_concurrent_streams(n);
        }
        if let Some(w) = self.cfg.window {
            b.initial_window_size(w);
            b.initial_connection_window_size(w);
        }
        let Ok(mut conn) = b.handshake::<_, Bytes>(io).await else {
            return;
        };
        let mut served = 0u64;
        while let Some(next) = conn.accept().await {
            let Ok((req, respond)) = next else { break };
            served += 1;
            let (cfg, c) = (Arc::clone(&self.cfg), Rc::clone(&self.c));
            if cfg.grpc.is_some() {
                let calls = Rc::clone(&self.calls);
                tokio::task::spawn_local(call(req, respond, cfg, c, calls));
            } else {
                tokio::task::spawn_local(answer(req, respond, cfg, c));
            }
            if self.cfg.goaway_after.is_some_and(|n| served == n) {
                conn.graceful_shutdown();
            }
        }
    }
}

/// Read the request's body (giving the window back as it goes), route, wait, answer.
async fn answer(
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    cfg: Arc<H2Config>,
    c: Rc<CounterWriter>,
) {
    let t0 = Instant::now();
    let (head, mut body) = req.into_parts();
    while let Some(chunk) = body.data().await {
        let Ok(chunk) = chunk else { return };
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let get = matches!(head.method, http::Method::GET | http::Method::HEAD);
    let known = get || matches!(head.method, http::Method::POST | http::Method::PUT);
    let (status, delay, payload) = if known {
        route(head.uri.path())
    } else {
        (405, None, Bytes::from_static(b"method not allowed\n"))
    };
    if let Some(d) = [delay, cfg.delay].into_iter().flatten().max() {
        tokio::time::sleep(d).await;
    }
    let mut res = http::Response::builder()
        .status(status)
        .header("server", "barrage")
        .header("content-type", "text/plain")
        .header("content-length", payload.len());
    if cfg.server_timing {
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        res = res.header("server-timing", format!("app;dur={ms:.3}"));
    }
    let Ok(res) = res.body(()) else { return };
    c.http_response(status);
    let head_only = head.method == http::Method::HEAD || payload.is_empty();
    let Ok(mut send) = respond.send_response(res, head_only) else {
        return;
    };
    if !head_only {
        let _ = send.send_data(payload, true);
    }
}

/// A gRPC call: the request read whole, then answered by [`crate::grpc::answer`]. A request
/// that is not a gRPC call gets the HTTP status that says so (405, 415).
async fn call(
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    cfg: Arc<H2Config>,
    c: Rc<CounterWriter>,
    calls: Rc<crate::grpc::Calls>,
) {
    let (head, mut body) = req.into_parts();
    let grpc = head
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"));
    let refused = if head.method != http::Method::POST {
        Some(405)
    } else if !grpc {
        Some(415)
    } else {
        None
    };
    if let Some(status) = refused {
        if let Ok(res) = http::Response::builder().status(status).body(()) {
            c.http_response(status);
            let _ = respond.send_response(res, true);
        }
        return;
    }
    if crate::grpc::REFLECTION.contains(&head.uri.path()) {
        return crate::grpc::reflection(body, respond, &c).await;
    }
    let mut all = bytes::BytesMut::new();
    while let Some(chunk) = body.data().await {
        let Ok(chunk) = chunk else { return };
        let _ = body.flow_control().release_capacity(chunk.len());
        all.extend_from_slice(&chunk);
    }
    let knobs = cfg.grpc.as_ref().expect("a gRPC server's call");
    crate::grpc::answer(head.uri.path(), all, respond, knobs, cfg.delay, &calls, &c).await;
}

/// The http server's routes: (status, a delay, the body).
fn route(path: &str) -> (u16, Option<Duration>, Bytes) {
    use crate::http::{BODY_PATTERN, MAX_BODY, MAX_DELAY_MS};
    const HELLO: &[u8] = b"hello from barrage\n";
    let num = |s: &str| s.parse::<u64>().ok();
    if path == "/" {
        return (200, None, Bytes::from_static(HELLO));
    }
    if let Some(ms) = path.strip_prefix("/delay/") {
        return match num(ms).filter(|&ms| ms <= MAX_DELAY_MS) {
            Some(ms) => (
                200,
                Some(Duration::from_millis(ms)),
                Bytes::from_static(HELLO),
            ),
            None => (400, None, Bytes::from_static(b"bad delay\n")),
        };
    }
    if let Some(n) = path.strip_prefix("/bytes/") {
        return match num(n).filter(|&n| n <= MAX_BODY) {
            Some(n) => {
                let body: Vec<u8> = BODY_PATTERN
                    .iter()
                    .copied()
                    .cycle()
                    .take(n as usize)
                    .collect();
                (200, None, Bytes::from(body))
            }
            None => (400, None, Bytes::from_static(b"bad length\n")),
        };
    }
    if let Some(code) = path.strip_prefix("/status/") {
        return match num(code).filter(|c| (200..=599).contains(c)) {
            Some(c) => {
                let body = if c == 204 || c == 304 {
                    Bytes::new()
                } else {
                    Bytes::from(format!("status {c}\n"))
                };
                (c as u16, None, body)
            }
            None => (400, None, Bytes::from_static(b"bad status\n")),
        };
    }
    (404, None, Bytes::from_static(b"not found\n"))
}

/// A socket whose reads and writes are counted as the other servers count theirs (bytes on
/// the wire: under TLS, the encrypted ones).
struct Counted<S> {
    inner: S,
    c: Rc<CounterWriter>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            self.c.read(n);
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        let mut pending = false;
        let r = this.c.counted_write(buf.len(), || {
            match Pin::new(&mut this.inner).poll_write(cx, buf) {
                Poll::Ready(r) => r,
                Poll::Pending => {
                    pending = true;
                    Ok(0)
                }
            }
        });
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(r)
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
