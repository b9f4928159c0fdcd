//! The end of a spawned server's stderr, kept in memory for error messages.
//!
//! A pipe drained by a small thread into a 16 KiB ring rather than a file: a server that logs
//! every request to stderr during a ten-minute run would otherwise fill the disk, and only the
//! last lines matter (why it failed to start). The thread ends when the last writer of the pipe
//! exits; it is never joined, since a daemonized grandchild may hold the pipe forever.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// Bytes kept from the end of the stream.
pub(crate) const TAIL_BYTES: usize = 16 * 1024;

/// Shared between the draining thread (writes) and the spawner (reads).
#[derive(Clone, Default)]
pub(crate) struct Tail(Arc<(Mutex<Buf>, Condvar)>);

#[derive(Default)]
struct Buf {
    bytes: VecDeque<u8>,
    closed: bool,
}

impl Tail {
    /// Starts draining `from` (nothing to drain: an empty, closed tail).
    pub fn capture<R: Read + Send + 'static>(from: Option<R>) -> Tail {
        let tail = Tail::default();
        let Some(mut from) = from else {
            tail.close();
            return tail;
        };
        let writer = tail.clone();
        let drain = move || {
            let mut chunk = [0u8; 4096];
            loop {
                match from.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => writer.push(&chunk[..n]),
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            writer.close();
        };
        let spawned = thread::Builder::new()
            .name("barrage-spawn-stderr".into())
            .spawn(drain);
        if spawned.is_err() {
            tail.close();
        }
        tail
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Buf> {
        self.0 .0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, data: &[u8]) {
        let mut buf = self.lock();
        buf.bytes.extend(data);
        let excess = buf.bytes.len().saturating_sub(TAIL_BYTES);
        buf.bytes.drain(..excess);
    }

    fn close(&self) {
        self.lock().closed = true;
        self.0 .1.notify_all();
    }

    /// Waits (at most `timeout`) until every writer closed the stream, so the tail is complete.
    pub fn wait_closed(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut buf = self.lock();
        while !buf.closed {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            buf = self
                .0
                 .1
                .wait_timeout(buf, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The last `n` lines captured so far.
    pub fn last_lines(&self, n: usize) -> String {
        let buf = self.lock();
        let (a, b) = buf.bytes.as_slices();
        last_lines(&[a, b].concat(), n)
    }
}

/// The last `n` lines of `bytes` (lossy UTF-8, without the final newline).
pub(crate) fn last_lines(bytes: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_lines_of_a_stream() {
        assert_eq!(last_lines(b"a\nb\nc\nd\n", 2), "c\nd");
        assert_eq!(last_lines(b"one line", 5), "one line");
        assert_eq!(last_lines(b"", 3), "");
        assert_eq!(last_lines(b"x\n\xff\n", 1), "\u{fffd}");
    }

    #[test]
    fn keeps_only_the_end_and_closes() {
        let mut data = vec![b'a'; 3 * TAIL_BYTES];
        data.extend_from_slice(b"\nthe end\n");
        let tail = Tail::capture(Some(std::io::Cursor::new(data)));
        tail.wait_closed(Duration::from_secs(5));
        assert_eq!(tail.last_lines(1), "the end");
        assert_eq!(tail.lock().bytes.len(), TAIL_BYTES);
        let none = Tail::capture(None::<std::io::Empty>);
        none.wait_closed(Duration::from_secs(5));
        assert_eq!(none.last_lines(3), "");
    }
}
