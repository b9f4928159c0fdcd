//! Through an HTTP proxy (`Target::proxy`): a connection is TCP to the proxy, then its
//! CONNECT request (written when the connect completes), then the proxy's answer, read here:
//! a 2xx opens the tunnel and the connection goes on as a direct one would (TLS, the
//! protocol's handshake); any other status fails the connection as `refused`, saying what the
//! proxy answered (a 407 asks for credentials), and a malformed answer as `protocol`.

use super::Worker;
use crate::classify::classify;
use crate::session::Session;
use barrage_metrics::ErrorClass;
use std::io::{self, Read};

/// The most a proxy's answer head may take.
const MAX_HEAD: usize = 16 * 1024;

/// What a proxy's answer to CONNECT says so far.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Not all of its head yet.
    More,
    /// The tunnel is open; the head was this long.
    Open(usize),
    /// Refused: its status line.
    Refused(String),
    /// Not an HTTP answer.
    Malformed(String),
}

/// Reads a proxy's answer head (`HTTP/1.x CODE REASON`, headers, a blank line).
pub(crate) fn answer(head: &[u8]) -> Answer {
    let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") else {
        if head.len() > MAX_HEAD {
            return Answer::Malformed("an answer to CONNECT over 16 KiB without its end".into());
        }
        if head.len() >= 5 && !head.starts_with(b"HTTP/") {
            return Answer::Malformed(format!(
                "an answer to CONNECT that is not HTTP: {:?}",
                String::from_utf8_lossy(&head[..head.len().min(40)])
            ));
        }
        return Answer::More;
    };
    let line = head[..end].split(|b| *b == b'\r').next().unwrap_or(&[]);
    let line = String::from_utf8_lossy(line).into_owned();
    let mut parts = line.splitn(3, ' ');
    let (proto, code) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if !proto.starts_with("HTTP/1.") || code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit())
    {
        return Answer::Malformed(format!("an answer to CONNECT that is not HTTP: {line:?}"));
    }
    if code.starts_with('2') {
        Answer::Open(end + 4)
    } else {
        Answer::Refused(line)
    }
}

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
                let c = &mut self.conns[idx as usize];
                c.timeout_at = u64::MAX;
                c.since = now;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxys_answer_is_read_whole_however_it_arrives() {
        let ok = b"HTTP/1.1 200 Connection established\r\nProxy-Agent: x\r\n\r\n";
        for cut in 0..ok.len() {
            assert_eq!(answer(&ok[..cut]), Answer::More, "cut at {cut}");
        }
        assert_eq!(answer(ok), Answer::Open(ok.len()));
        assert_eq!(
            answer(b"HTTP/1.0 407 Proxy Authentication Required\r\n\r\n"),
            Answer::Refused("HTTP/1.0 407 Proxy Authentication Required".into())
        );
        assert!(matches!(answer(b"SSH-2.0-x\r\n\r\n"), Answer::Malformed(_)));
        assert!(matches!(answer(b"hello"), Answer::Malformed(_)));
        assert!(matches!(
            answer(&[b'H'; MAX_HEAD + 1][..]),
            Answer::Malformed(_)
        ));
    }
}
