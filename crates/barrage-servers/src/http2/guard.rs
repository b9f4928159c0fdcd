//! The connection as the h2 crate reads it, guarded against a hostile client:
//!
//! - The preface is read here first. The h2 crate drops a connection whose preface is wrong
//!   without a word, and the kernel then resets it (the client's bytes were unread: h2spec
//!   3.5/2). Here a wrong preface gets what RFC 9113 3.4 asks for: the server's SETTINGS, a
//!   GOAWAY with PROTOCOL_ERROR, and a close (our side shut, what the client still sends read
//!   and dropped for a bounded while so that the close is not a reset).
//! - Then the frames are handed over paced: a connection's turn (one poll of its task,
//!   [`Turns`]) ends after [`TURN_BLOCKS`] header-block frames or [`TURN_BYTES`] bytes (at a
//!   frame's end), and it waits behind the thread's other tasks before the next. A connection's work per turn is bounded (each block
//!   decodes to at most four times [`super::MAX_HEADER_LIST`] before the h2 crate ends the
//!   connection), so one client flooding requests or amplified header blocks cannot starve
//!   the others on its thread: before, one such client left a fresh one 4-6 requests a second
//!   of the 50,000 it had alone.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

pub(super) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Header-block frames (HEADERS, PUSH_PROMISE, CONTINUATION) a connection is handed per turn.
pub const TURN_BLOCKS: u32 = 16;
/// Bytes a connection is handed per turn (then the frame under way is finished).
pub const TURN_BYTES: usize = 64 * 1024;

/// What is read from the socket at once.
const READ_CHUNK: usize = 16 * 1024;

/// SETTINGS (empty), then GOAWAY (last stream 0, PROTOCOL_ERROR, no debug data).
const REFUSAL: [u8; 9 + 17] = [
    0, 0, 0, 4, 0, 0, 0, 0, 0, // SETTINGS
    0, 0, 8, 7, 0, 0, 0, 0, 0, // GOAWAY, 8 bytes
    0, 0, 0, 0, 0, 0, 0, 1, // last stream 0, PROTOCOL_ERROR
];

/// How long, and how much, a refused client's bytes are read after the GOAWAY.
const DRAIN_FOR: Duration = Duration::from_secs(1);
const DRAIN_BYTES: usize = 64 * 1024;

/// What a connection was handed in this poll of its task.
#[derive(Default)]
pub(super) struct Turn {
    blocks: Cell<u32>,
    bytes: Cell<usize>,
}

/// A connection's task: each poll is a new turn.
pub(super) struct Turns<F> {
    pub(super) turn: Rc<Turn>,
    pub(super) task: Pin<Box<F>>,
}

impl<F: Future> Future for Turns<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.turn.blocks.set(0);
        self.turn.bytes.set(0);
        self.task.as_mut().poll(cx)
    }
}

/// The connection, read through a buffer that the pacing walks frame by frame.
pub(super) struct Guarded<T> {
    inner: T,
    buf: Box<[u8]>,
    at: usize,
    end: usize,
    /// Bytes to hand over before the next frame's header: the preface, then each payload.
    pass: usize,
    /// The frame header under way, and how much of it was handed over.
    head: [u8; 9],
    head_len: usize,
    turn: Rc<Turn>,
}

impl<T: AsyncRead + AsyncWrite + Unpin> Guarded<T> {
    /// Reads the client's preface. `Some` when it came whole and right (it is handed to the
    /// h2 crate as it came); otherwise the connection got the refusal (or ended first).
    pub(super) async fn preface(inner: T, turn: Rc<Turn>) -> Option<Guarded<T>> {
        let mut g = Guarded {
            inner,
            buf: vec![0; READ_CHUNK].into_boxed_slice(),
            at: 0,
            end: 0,
            pass: PREFACE.len(),
            head: [0; 9],
            head_len: 0,
            turn,
        };
        while g.end < PREFACE.len() {
            let end = g.end;
            let k = match g.inner.read(&mut g.buf[end..]).await {
                Ok(0) | Err(_) => return None,
                Ok(k) => k,
            };
            g.end += k;
            // Judged as it comes: an HTTP/1.1 request shorter than the preface is refused too.
            let n = g.end.min(PREFACE.len());
            if g.buf[..n] != PREFACE[..n] {
                g.refuse().await;
                return None;
            }
        }
        Some(g)
    }

    async fn refuse(&mut self) {
        if self.inner.write_all(&REFUSAL).await.is_err() || self.inner.shutdown().await.is_err() {
            return;
        }
        let io = &mut self.inner;
        let drain = async {
            let mut buf = [0u8; 4096];
            let mut left = DRAIN_BYTES;
            while left > 0 {
                match io.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(k) => left = left.saturating_sub(k),
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN_FOR, drain).await;
    }
}

impl<T> Guarded<T> {
    /// How many of the `avail` buffered bytes (at most `room`) this turn hands over: up to the
    /// first frame boundary where the turn's budget is spent.
    fn walk(&mut self, avail: usize, room: usize) -> usize {
        let max = avail.min(room);
        let (mut blocks, bytes) = (self.turn.blocks.get(), self.turn.bytes.get());
        let mut n = 0;
        while n < max {
            if self.pass > 0 {
                let k = self.pass.min(max - n);
                n += k;
                self.pass -= k;
                continue;
            }
            if self.head_len == 0 && (blocks >= TURN_BLOCKS || bytes + n >= TURN_BYTES) {
                break;
            }
            self.head[self.head_len] = self.buf[self.at + n];
            self.head_len += 1;
            n += 1;
            if self.head_len == 9 {
                let h = &self.head;
                self.pass = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
                // HEADERS, PUSH_PROMISE, CONTINUATION
                if matches!(h[3], 0x1 | 0x5 | 0x9) {
                    blocks += 1;
                }
                self.head_len = 0;
            }
        }
        self.turn.blocks.set(blocks);
        self.turn.bytes.set(bytes + n);
        n
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Guarded<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.at == this.end {
            let mut rb = ReadBuf::new(&mut this.buf);
            match Pin::new(&mut this.inner).poll_read(cx, &mut rb) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let n = rb.filled().len();
                    if n == 0 {
                        return Poll::Ready(Ok(()));
                    }
                    (this.at, this.end) = (0, n);
                }
            }
        }
        let n = this.walk(this.end - this.at, out.remaining());
        if n == 0 && out.remaining() > 0 {
            // The turn's budget is spent: to the back of the thread's queue (the task's poll
            // ends once the h2 crate has handed over what it decoded).
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        out.put_slice(&this.buf[this.at..this.at + n]);
        this.at += n;
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Guarded<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guarded(input: &[u8]) -> Guarded<()> {
        let mut buf = vec![0; READ_CHUNK].into_boxed_slice();
        buf[..input.len()].copy_from_slice(input);
        Guarded {
            inner: (),
            buf,
            at: 0,
            end: input.len(),
            pass: 0,
            head: [0; 9],
            head_len: 0,
            turn: Rc::default(),
        }
    }

    fn frame(kind: u8, len: usize) -> Vec<u8> {
        let mut f = (len as u32).to_be_bytes()[1..].to_vec();
        f.extend_from_slice(&[kind, 0, 0, 0, 0, 1]);
        f.extend(std::iter::repeat_n(0x80, len));
        f
    }

    /// A turn ends after its TURN_BLOCKS-th header-block frame, whole, and not before: DATA
    /// frames do not count, and the next turn starts where this one stopped.
    #[test]
    fn a_turn_hands_over_whole_frames_up_to_its_header_block_budget() {
        let mut input = frame(0x0, 100); // DATA
        for _ in 0..TURN_BLOCKS + 3 {
            input.extend(frame(0x1, 10)); // HEADERS
        }
        let mut g = guarded(&input);
        let n = g.walk(input.len(), usize::MAX);
        assert_eq!(n, 109 + TURN_BLOCKS as usize * 19);
        assert_eq!(
            g.walk(input.len() - n, usize::MAX),
            0,
            "the budget is spent"
        );
        g.at += n;
        g.turn = Rc::default();
        assert_eq!(g.walk(input.len() - n, usize::MAX), 3 * 19);
        assert_eq!(g.turn.blocks.get(), 3);
    }

    /// Handed over in pieces as small as the reader asks (a frame header split across
    /// reads), the count is the same.
    #[test]
    fn frames_split_across_reads_are_counted_once() {
        let input: Vec<u8> = (0..4).flat_map(|_| frame(0x9, 5)).collect();
        let mut g = guarded(&input);
        let mut total = 0;
        while total < input.len() {
            let n = g.walk(input.len() - total, 4);
            assert!(n > 0);
            g.at += n;
            total += n;
        }
        assert_eq!(g.turn.blocks.get(), 4);
    }
}
