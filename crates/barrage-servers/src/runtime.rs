//! What every reference server shares: its listening sockets, its event-loop threads and the
//! [`ServerHandle`] that reads their counters and stops them.
//!
//! Key decision: one listening socket *per thread*, all bound to the same address with
//! `SO_REUSEPORT`, so the kernel spreads incoming connections over the threads and no accept
//! lock or hand-off queue exists. Everything that can fail (bind, epoll, eventfd, spawn) happens
//! in [`spawn`] before it returns, so a caller may connect as soon as it has the handle.
//!
//! The first listener binds *alone* (`SO_REUSEPORT` is set only after its bind, before
//! `listen`), so a port another server already listens on is refused ([`ServerError::InUse`])
//! rather than joined: `SO_REUSEPORT` would otherwise let a second server of the same user take
//! part of the first one's connections without a word. Sharing a port (`serve --processes`,
//! `--reuse-port`) is asked for with `reuse_port`.

use crate::stats::{CounterWriter, Kind, ServerError, ServerStats, ThreadCounters};
use mio::net::TcpListener;
use mio::{Interest, Poll, Token, Waker};
use socket2::{Domain, Protocol, Socket, Type};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

/// Listen backlog: large, so that a connection storm from the load generator is queued rather
/// than refused while a thread is busy.
pub(crate) const BACKLOG: i32 = 4096;
/// Token of a thread's listening socket.
pub(crate) const LISTENER: Token = Token(0);
/// Token of a thread's waker (shutdown).
pub(crate) const WAKER: Token = Token(1);
/// Connection tokens start here: token = slot index + `FIRST_CONN`.
pub(crate) const FIRST_CONN: usize = 2;

/// Everything one event-loop thread owns. Built by [`spawn`] and moved into the thread, which
/// drops it (closing its listener) when it exits. A loop must close its connections and count
/// each close before it returns, so that [`ServerHandle::shutdown`] reports none open.
pub(crate) struct LoopParts {
    /// This thread's epoll instance, with `listener` and the waker already registered.
    pub poll: Poll,
    pub listener: TcpListener,
    /// Sole writer of this thread's counters.
    pub counters: CounterWriter,
    /// Set once by the handle; the loop checks it after every wakeup.
    pub stop: Arc<AtomicBool>,
    /// The server's address (real port), for log messages.
    pub addr: SocketAddr,
    /// Which server this is, for log messages.
    pub kind: Kind,
}

impl LoopParts {
    pub(crate) fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }
}

/// A running server. Dropping it stops and joins its threads, like [`ServerHandle::shutdown`].
#[derive(Debug)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    /// Decides which protocol part [`ServerHandle::stats`] fills in.
    kind: Kind,
    /// Started with TLS: stats carry the `tls` part.
    tls: bool,
    /// Shared with every loop thread; only the handle sets it.
    stop: Arc<AtomicBool>,
    /// One per thread; owned here so the handle can wake a thread blocked in `poll`.
    wakers: Vec<Waker>,
    /// One per thread; the handle only reads them.
    counters: Vec<Arc<ThreadCounters>>,
    /// Drained (joined) by `stop_and_join`, so a later drop has nothing left to do.
    threads: Vec<JoinHandle<()>>,
}

impl ServerHandle {
    /// The address the server listens on, with the real port when port 0 was asked for.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// A live snapshot summed over all threads. Its `http` or `ws` part is `Some` for the
    /// server of that protocol (even before any traffic), `None` otherwise.
    pub fn stats(&self) -> ServerStats {
        let mut total = ServerStats::default();
        for counters in &self.counters {
            total.merge(&counters.snapshot(self.kind, self.tls));
        }
        total
    }

    /// Stops every thread, waits for them to close their connections and exit, and returns the
    /// final counters (with `connections_open` at 0).
    /// A function that takes the same live snapshot as [`ServerHandle::stats`], for another
    /// thread (a metrics endpoint) while the server runs.
    pub fn stats_reader(&self) -> impl Fn() -> ServerStats + Send + Sync + 'static {
        let (counters, kind, tls) = (self.counters.clone(), self.kind, self.tls);
        move || {
            let mut total = ServerStats::default();
            for c in &counters {
                total.merge(&c.snapshot(kind, tls));
            }
            total
        }
    }

    pub fn shutdown(mut self) -> ServerStats {
        self.stop_and_join();
        self.stats()
    }

    fn stop_and_join(&mut self) {
        self.stop.store(true, Ordering::Release);
        for waker in &self.wakers {
            // A failed wake can only mean the eventfd is gone, i.e. the thread already exited.
            let _ = waker.wake();
        }
        for thread in self.threads.drain(..) {
            if thread.join().is_err() {
                eprintln!(
                    "barrage-servers: a server thread on {} panicked",
                    self.local_addr
                );
            }
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Binds `threads` listeners on `listen` and runs `run` on a thread for each. `kind` names the
/// threads (`barrage-<kind>-<i>`) and decides the protocol part of the stats.
pub(crate) fn spawn<F>(
    kind: Kind,
    tls: bool,
    listen: SocketAddr,
    reuse_port: bool,
    threads: usize,
    run: F,
) -> Result<ServerHandle, ServerError>
where
    F: Fn(LoopParts) + Clone + Send + 'static,
{
    if threads == 0 {
        return Err(ServerError::Config {
            addr: listen,
            reason: "threads must be at least 1".to_owned(),
        });
    }
    let listeners = bind_listeners(listen, threads, reuse_port)?;
    let local_addr = listeners[0]
        .local_addr()
        .map_err(|source| ServerError::Bind {
            addr: listen,
            source,
        })?;
    let mut handle = ServerHandle {
        local_addr,
        kind,
        tls,
        stop: Arc::new(AtomicBool::new(false)),
        wakers: Vec::with_capacity(threads),
        counters: Vec::with_capacity(threads),
        threads: Vec::with_capacity(threads),
    };
    // On any error below, returning drops `handle`, which stops the threads already running.
    for (index, mut listener) in listeners.into_iter().enumerate() {
        let event_loop_err = |source| ServerError::EventLoop {
            addr: local_addr,
            source,
        };
        let poll = Poll::new().map_err(event_loop_err)?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .map_err(event_loop_err)?;
        let waker = Waker::new(poll.registry(), WAKER).map_err(event_loop_err)?;
        let (writer, shared) = CounterWriter::new();
        let parts = LoopParts {
            poll,
            listener,
            counters: writer,
            stop: Arc::clone(&handle.stop),
            addr: local_addr,
            kind,
        };
        let run = run.clone();
        let thread = thread::Builder::new()
            .name(format!("barrage-{}-{index}", kind.name()))
            .spawn(move || run(parts))
            .map_err(|source| ServerError::Spawn {
                addr: local_addr,
                index,
                source,
            })?;
        handle.wakers.push(waker);
        handle.counters.push(shared);
        handle.threads.push(thread);
    }
    Ok(handle)
}

/// Binds `n` non-blocking listeners to the same address. The first one resolves port 0 and,
/// unless `reuse_port`, binds alone: a port another server listens on is [`ServerError::InUse`].
/// The others join its port.
fn bind_listeners(
    listen: SocketAddr,
    n: usize,
    reuse_port: bool,
) -> Result<Vec<TcpListener>, ServerError> {
    let first = bind_one(listen, reuse_port)?;
    let addr = first.local_addr().map_err(|source| ServerError::Bind {
        addr: listen,
        source,
    })?;
    let mut all = Vec::with_capacity(n);
    all.push(first);
    for _ in 1..n {
        all.push(bind_one(addr, true)?);
    }
    Ok(all)
}

/// One listener on `addr`. With `join`, `SO_REUSEPORT` is set before the bind (the socket joins
/// the port's group, ours or another server's); without, after it, so that the bind fails if
/// anything listens there already, and the sockets bound later (our other threads, `--processes`)
/// can still join this one.
fn bind_one(addr: SocketAddr, join: bool) -> Result<TcpListener, ServerError> {
    let bind_err = |source| ServerError::Bind { addr, source };
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(bind_err)?;
    // SO_REUSEADDR: restart on a port whose old connections are still in TIME_WAIT.
    socket.set_reuse_address(true).map_err(bind_err)?;
    if join {
        socket.set_reuse_port(true).map_err(bind_err)?;
    }
    socket.set_nonblocking(true).map_err(bind_err)?;
    match socket.bind(&addr.into()) {
        Err(e) if !join && e.kind() == std::io::ErrorKind::AddrInUse => {
            return Err(ServerError::InUse { addr })
        }
        other => other.map_err(bind_err)?,
    }
    if !join {
        socket.set_reuse_port(true).map_err(bind_err)?;
    }
    socket.listen(BACKLOG).map_err(bind_err)?;
    Ok(TcpListener::from_std(socket.into()))
}
