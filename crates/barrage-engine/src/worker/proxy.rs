//! Through an HTTP proxy (`Target::proxy`): a connection is TCP to the proxy, then its
//! CONNECT request (written when the connect completes), then the proxy's answer, read here:
//! a 2xx opens the tunnel and the connection goes on as a direct one would (TLS, the
//! protocol's handshake); any other status fails the connection as `refused`, saying what the
//! proxy answered (a 407 asks for credentials), and a malformed answer as `protocol`.

use super::Worker;
use crate::classify::classify;
use crate::http::tunnel::{answer, Answer};
use crate::session::Session;
use barrage_metrics::ErrorClass;
use std::io::{self, Read};

impl<S: Session> Worker<S> {
    /// The proxy's socket is readable: read its answer to CONNECT; once whole, open the
    /// tunnel or fail the connection.
    pub(super) fn on_proxy_answer(&mut self, idx: u32, now: u64) {
        let c = &mut self.conns[idx as usize];
        let Some(s) = c.stream.as_mut() else { return };
        let head = self.connects.proxy_head(idx);
        let res = loop {
            match s.read(&mut self.bufs.read) {
                Ok(0) => break Err(None),
                Ok(n) => {
                    self.rec.counters.bytes_read += n as u64;
                    head.extend_from_slice(&self.bufs.read[..n]);
                    if answer(head) != Answer::More {
                        break Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(Some(e)),
            }
        };
        let (verdict, got) = (answer(head), head.len());
        if res.is_err() || verdict != Answer::More {
            self.connects.proxy_done(idx);
        }
        match res {
            Err(None) => {
                let why = "the proxy closed the connection before it answered CONNECT";
                return self.fail(idx, ErrorClass::ClosedByPeer, Some(&why), now);
            }
            Err(Some(e)) => return self.fail(idx, classify(&e), Some(&e), now),
            Ok(()) => {}
        }
        match verdict {
            Answer::More => {}
            Answer::Open(len) => {
                if got > len {
                    // Nothing may come through the tunnel before the client spoke.
                    let why = "the proxy sent bytes after its answer to CONNECT, before the \
                               client spoke";
                    return self.fail(idx, ErrorClass::Protocol, Some(&why), now);
                }
                self.reached(idx, now);
                self.start_transport(idx, now);
            }
            Answer::Refused(line) => {
                let hint = if line.contains(" 407") {
                    ": it wants credentials, http://USER:PASSWORD@HOST:PORT"
                } else {
                    ""
                };
                let why = format!("the proxy refused the tunnel: {line}{hint}");
                self.fail(idx, ErrorClass::Refused, Some(&why), now);
            }
            Answer::Malformed(why) => self.fail(idx, ErrorClass::Protocol, Some(&why), now),
        }
    }
}
