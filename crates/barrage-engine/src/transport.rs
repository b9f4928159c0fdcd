//! The transport under a connection's session: the plain socket, or a TLS session over it.
//!
//! The worker asks the transport to take plaintext, to move queued bytes to the socket and to
//! say whether something still waits; only the read path tells the two apart (TLS input goes
//! through rustls before the session sees it). The TLS session is boxed, so a plain
//! connection pays one pointer for it and `Conn` stays as small as with an `Option`.

use barrage_metrics::Recorder;
use mio::net::TcpStream;
use std::io::{self, Write};

pub enum Transport {
    Plain,
    /// `https://`, `wss://`: rustls over the connection's socket.
    Tls(Box<rustls::ClientConnection>),
}

impl Transport {
    /// TLS records the socket did not take yet (rustls does not say how many bytes).
    #[inline]
    /// The protocol TLS negotiated by ALPN (`None` in plain text or without ALPN).
    pub fn alpn(&self) -> Option<&[u8]> {
        match self {
            Transport::Plain => None,
            Transport::Tls(t) => t.alpn_protocol(),
        }
    }

    pub fn wants_write(&self) -> bool {
        match self {
            Transport::Plain => false,
            Transport::Tls(t) => t.wants_write(),
        }
    }

    /// Under TLS, take `data` into the session and send its records: `Ok(true)`. Plain:
    /// `Ok(false)`, the caller writes `data` to the socket itself (with its short-write queue).
    #[inline]
    pub fn send(
        &mut self,
        s: Option<&mut TcpStream>,
        rec: &mut Recorder,
        data: &[u8],
    ) -> io::Result<bool> {
        match self {
            Transport::Plain => Ok(false),
            Transport::Tls(t) => {
                t.writer().write_all(data)?;
                if let Some(s) = s {
                    flush_tls(t, s, rec)?;
                }
                Ok(true)
            }
        }
    }

    /// Move queued TLS records to the socket until it would block: `Ok(true)`. Plain:
    /// `Ok(false)`, nothing is queued here (the connection's own write queue holds plain bytes).
    #[inline]
    pub fn flush(&mut self, s: Option<&mut TcpStream>, rec: &mut Recorder) -> io::Result<bool> {
        match (self, s) {
            (Transport::Plain, _) => Ok(false),
            (Transport::Tls(t), Some(s)) => flush_tls(t, s, rec).map(|()| true),
            (Transport::Tls(_), None) => Ok(true),
        }
    }

    /// Closing for good: a TLS `close_notify`, sent as far as the socket takes it.
    pub fn close(&mut self, s: Option<&mut TcpStream>, rec: &mut Recorder) {
        if let Transport::Tls(t) = self {
            t.send_close_notify();
        }
        let _ = self.flush(s, rec);
    }
}

fn flush_tls(
    t: &mut rustls::ClientConnection,
    s: &mut TcpStream,
    rec: &mut Recorder,
) -> io::Result<()> {
    while t.wants_write() {
        match t.write_tls(s) {
            Ok(0) => break,
            Ok(m) => {
                rec.counters.writes += 1;
                rec.counters.bytes_written += m as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
