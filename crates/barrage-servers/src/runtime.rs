//! What every reference server shares: its listening sockets, its event-loop threads and the
//! [`ServerHandle`] that reads their counters and stops them.
//!
//! Key decision: one listening socket *per thread*, so that no accept lock or hand-off queue
//! exists; how the threads share the port is platform code ([`mod@bind`]): on Unix each binds its
//! own with `SO_REUSEPORT` and the kernel spreads connections over them, on Windows each polls
//! a duplicate of one socket and takes what it accepts first. Everything that can fail (bind,
//! the poll, the waker, spawn) happens in [`spawn`] before it returns, so a caller may connect
//! as soon as it has the handle.

use crate::stats::{CounterWriter, Kind, ServerError, ServerStats, ThreadCounters};
use mio::net::TcpListener;
use mio::{Interest, Poll, Token, Waker};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

mod bind;
use bind::bind_listeners;

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

/// The listeners of `threads` threads on `listen`, and the handle they will report to (no
/// thread yet): what [`spawn`] and [`spawn_async`] share.
fn bind(
    kind: Kind,
    tls: bool,
    listen: SocketAddr,
    reuse_port: bool,
    threads: usize,
) -> Result<(ServerHandle, Vec<TcpListener>), ServerError> {
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
    let handle = ServerHandle {
        local_addr,
        kind,
        tls,
        stop: Arc::new(AtomicBool::new(false)),
        wakers: Vec::with_capacity(threads),
        counters: Vec::with_capacity(threads),
        threads: Vec::with_capacity(threads),
    };
    Ok((handle, listeners))
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
    let (mut handle, listeners) = bind(kind, tls, listen, reuse_port, threads)?;
    let local_addr = handle.local_addr;
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

#[cfg(feature = "h2")]
/// Everything one thread of an async server owns ([`spawn_async`]): its listener (plain
/// std, non-blocking), its counters and the stop flag, which it polls (the handle has no waker
/// for it: it checks the flag every [`ASYNC_STOP_POLL`]).
pub(crate) struct AsyncParts {
    pub listener: std::net::TcpListener,
    pub counters: CounterWriter,
    pub stop: Arc<AtomicBool>,
}

#[cfg(feature = "h2")]
/// How often an async server's thread looks at the stop flag.
pub(crate) const ASYNC_STOP_POLL: std::time::Duration = std::time::Duration::from_millis(20);

#[cfg(feature = "h2")]
/// [`spawn`] for a server built on an async library (the HTTP/2 and gRPC servers): the same
/// listeners, one per thread, and the same counters; each thread runs `run` (its own
/// single-threaded runtime), which returns once the stop flag is set.
pub(crate) fn spawn_async<F>(
    kind: Kind,
    tls: bool,
    listen: SocketAddr,
    reuse_port: bool,
    threads: usize,
    run: F,
) -> Result<ServerHandle, ServerError>
where
    F: Fn(AsyncParts) + Clone + Send + 'static,
{
    let (mut handle, listeners) = bind(kind, tls, listen, reuse_port, threads)?;
    let local_addr = handle.local_addr;
    for (index, listener) in listeners.into_iter().enumerate() {
        let (writer, shared) = CounterWriter::new();
        let parts = AsyncParts {
            listener: listener.into(),
            counters: writer,
            stop: Arc::clone(&handle.stop),
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
        handle.counters.push(shared);
        handle.threads.push(thread);
    }
    Ok(handle)
}
