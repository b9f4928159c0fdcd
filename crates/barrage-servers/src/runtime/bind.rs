//! Binding the listening sockets of a server's threads: the platform part of the runtime.
//!
//! **Unix**: `n` sockets on one address with `SO_REUSEPORT`, so the kernel spreads incoming
//! connections over the threads. The first listener binds *alone* (`SO_REUSEPORT` is set only
//! after its bind, before `listen`), so a port another server already listens on is refused
//! ([`ServerError::InUse`]) rather than joined: `SO_REUSEPORT` would otherwise let a second
//! server of the same user take part of the first one's connections without a word. Sharing a
//! port (`serve --processes`, `--reuse-port`) is asked for with `reuse_port`.
//!
//! **Windows** has no port sharing between sockets (`SO_REUSEADDR` there lets a second server
//! steal a bound port, so it is never set): one socket is bound and listens, and each other
//! thread gets a duplicate of it (`WSADuplicateSocket`). Every thread's poll sees a pending
//! connection; the first `accept` takes it and the others find nothing (`WouldBlock`), which
//! their loops already handle. `reuse_port` is refused with the reason.

use crate::stats::ServerError;
use mio::net::TcpListener;
use socket2::{Domain, Protocol, Socket, Type};
use std::net::SocketAddr;

/// Listen backlog: large, so that a connection storm from the load generator is queued rather
/// than refused while a thread is busy.
pub(crate) const BACKLOG: i32 = 4096;

/// Binds `n` non-blocking listeners to `listen` (port 0: one free port for all of them).
pub(super) fn bind_listeners(
    listen: SocketAddr,
    n: usize,
    reuse_port: bool,
) -> Result<Vec<TcpListener>, ServerError> {
    imp::bind_listeners(listen, n, reuse_port)
}

fn socket(addr: SocketAddr) -> Result<Socket, ServerError> {
    let bind_err = |source| ServerError::Bind { addr, source };
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(bind_err)?;
    socket.set_nonblocking(true).map_err(bind_err)?;
    Ok(socket)
}

/// Binds `socket` to `addr`: a port in use is [`ServerError::InUse`] unless `join`.
fn bind(socket: &Socket, addr: SocketAddr, join: bool) -> Result<(), ServerError> {
    match socket.bind(&addr.into()) {
        Err(e) if !join && e.kind() == std::io::ErrorKind::AddrInUse => {
            Err(ServerError::InUse { addr })
        }
        other => other.map_err(|source| ServerError::Bind { addr, source }),
    }
}

#[cfg(unix)]
mod imp {
    use super::{bind, socket, BACKLOG};
    use crate::stats::ServerError;
    use mio::net::TcpListener;
    use std::net::SocketAddr;

    pub fn bind_listeners(
        listen: SocketAddr,
        n: usize,
        _reuse_port: bool,
    ) -> Result<Vec<TcpListener>, ServerError> {
        let first = bind_one(listen, _reuse_port)?;
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

    /// One listener on `addr`. With `join`, `SO_REUSEPORT` is set before the bind (the socket
    /// joins the port's group, ours or another server's); without, after it, so that the bind
    /// fails if anything listens there already, and the sockets bound later (our other
    /// threads, `--processes`) can still join this one.
    fn bind_one(addr: SocketAddr, join: bool) -> Result<TcpListener, ServerError> {
        let bind_err = |source| ServerError::Bind { addr, source };
        let socket = socket(addr)?;
        // SO_REUSEADDR: restart on a port whose old connections are still in TIME_WAIT.
        socket.set_reuse_address(true).map_err(bind_err)?;
        if join {
            socket.set_reuse_port(true).map_err(bind_err)?;
        }
        bind(&socket, addr, join)?;
        if !join {
            socket.set_reuse_port(true).map_err(bind_err)?;
        }
        socket.listen(BACKLOG).map_err(bind_err)?;
        Ok(TcpListener::from_std(socket.into()))
    }
}

#[cfg(not(unix))]
mod imp {
    use super::{bind, socket, BACKLOG};
    use crate::stats::ServerError;
    use mio::net::TcpListener;
    use std::net::SocketAddr;

    pub fn bind_listeners(
        listen: SocketAddr,
        n: usize,
        reuse_port: bool,
    ) -> Result<Vec<TcpListener>, ServerError> {
        if reuse_port {
            return Err(ServerError::Config {
                addr: listen,
                reason: "sharing a port with other processes (--reuse-port, serve --processes) \
                         needs SO_REUSEPORT, which Windows does not have; run one server \
                         process and give it --threads"
                    .to_owned(),
            });
        }
        let socket = socket(listen)?;
        bind(&socket, listen, false)?;
        let addr = socket.local_addr().ok().and_then(|a| a.as_socket());
        let addr = addr.unwrap_or(listen);
        let bind_err = |source| ServerError::Bind { addr, source };
        socket.listen(BACKLOG).map_err(bind_err)?;
        let mut all = Vec::with_capacity(n);
        for _ in 1..n {
            let dup = socket.try_clone().map_err(bind_err)?;
            dup.set_nonblocking(true).map_err(bind_err)?;
            all.push(TcpListener::from_std(dup.into()));
        }
        all.insert(0, TcpListener::from_std(socket.into()));
        Ok(all)
    }
}
