//! A connection's socket as every server uses it (under [`crate::tls::Transport`]): the stream plus what the
//! edge-triggered readiness said and what has been consumed of it, with counted reads and
//! writes.
//!
//! Key decision: reads and writes go through [`Counted`], a `Read + Write` view that counts
//! each syscall the way [`CounterWriter`] requires and keeps the readiness flags right, so the
//! plain path and rustls' `read_tls`/`write_tls` share one implementation. A read that returns
//! less than asked for is taken as "drained" (Linux epoll raises a new edge for new data),
//! which saves the syscall that would say `WouldBlock`; not on Windows, where mio re-arms a
//! socket only after a `WouldBlock` ([`SHORT_READ_DRAINS`]).

use crate::stats::CounterWriter;
use mio::event::Event;
use mio::net::TcpStream;
use std::io::{self, IoSlice, Read, Write};
use std::net::Shutdown;

/// Whether a short read means drained for the poll: on Unix; on Windows only `WouldBlock` does.
pub(crate) const SHORT_READ_DRAINS: bool = cfg!(unix);

pub(crate) struct Sock {
    stream: TcpStream,
    /// An edge said "readable" and we have not yet read until empty.
    read_ready: bool,
    /// The peer's FIN (or a hangup) was reported: a short read no longer means "drained",
    /// we must read on until the 0 that tells us it is over.
    read_closed: bool,
    /// A write hit `WouldBlock`; only a writable edge clears it.
    write_blocked: bool,
    /// We read the peer's end of stream.
    eof: bool,
}

impl Sock {
    pub(crate) fn new(stream: TcpStream) -> Sock {
        Sock {
            stream,
            read_ready: false,
            read_closed: false,
            write_blocked: false,
            eof: false,
        }
    }

    /// Records what an edge reported. Errors and hangups count as readable: the next read
    /// surfaces them.
    pub(crate) fn note(&mut self, event: &Event) {
        if event.is_readable() || event.is_read_closed() || event.is_error() {
            self.read_ready = true;
        }
        if event.is_read_closed() || event.is_error() {
            self.read_closed = true;
        }
        if event.is_writable() || event.is_error() {
            self.write_blocked = false;
        }
    }

    /// Sends our FIN; reading goes on (lingering close: see the servers' close paths).
    pub(crate) fn shutdown_write(&self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    /// A counted `Read + Write` view of the socket.
    pub(crate) fn counted<'a>(&'a mut self, counters: &'a CounterWriter) -> Counted<'a> {
        Counted {
            sock: self,
            counters,
        }
    }

    /// Reads and throws away whatever arrives until the socket is drained or at its end.
    /// Ok(true) at the end of stream.
    pub(crate) fn discard(&mut self, buf: &mut [u8], counters: &CounterWriter) -> io::Result<bool> {
        let mut counted = self.counted(counters);
        loop {
            match counted.read(buf) {
                Ok(0) => return Ok(true),
                Ok(_) => {}
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
    }
}

/// See [`Sock::counted`]. Reads say `WouldBlock` without a syscall when the socket is known to
/// be drained, writes when it is known to be full.
pub(crate) struct Counted<'a> {
    sock: &'a mut Sock,
    counters: &'a CounterWriter,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let sock = &mut *self.sock;
        if sock.eof {
            return Ok(0);
        }
        if !sock.read_ready {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        match sock.stream.read(buf) {
            Ok(0) => {
                sock.eof = true;
                sock.read_ready = false;
                Ok(0)
            }
            Ok(n) => {
                self.counters.read(n);
                if n < buf.len() && !sock.read_closed && SHORT_READ_DRAINS {
                    sock.read_ready = false;
                }
                Ok(n)
            }
            Err(err) => {
                if err.kind() == io::ErrorKind::WouldBlock {
                    sock.read_ready = false;
                }
                Err(err)
            }
        }
    }
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let sock = &mut *self.sock;
        if sock.write_blocked {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let len = bufs.iter().map(|b| b.len()).sum();
        let stream = &mut sock.stream;
        let result = self
            .counters
            .counted_write(len, || stream.write_vectored(bufs));
        match result {
            Ok(0) if len > 0 => Err(io::ErrorKind::WriteZero.into()),
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                sock.write_blocked = true;
                Err(err)
            }
            other => other,
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
