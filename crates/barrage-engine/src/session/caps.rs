//! What some protocols have and others lack, each a capability of its own: [`Streams`]
//! (several exchanges open at once on a connection, as many as the server allows), [`Owed`]
//! (control answers the socket had no room for, kept to be written later) and [`KeepAlive`]
//! (a tick that keeps an idle connection alive). A [`Session`](super::Session) that has one
//! gives it from its accessor (`streams`, `owed`, `keepalive`: `Some(self)`); one that lacks
//! it writes nothing (the accessor's default gives [`Never`]), and a session that speaks more
//! than one protocol (`https.rs`) forwards the three accessors to the one it speaks. The
//! accessors are generic, not `dyn`: a protocol without the capability costs nothing.

use barrage_metrics::Recorder;

/// Several exchanges open at once on one connection, as many as the server allows (HTTP/2's
/// streams under SETTINGS_MAX_CONCURRENT_STREAMS, MQTT's packets under its receive maximum).
pub trait Streams {
    /// How many more exchanges the connection can open now; what is owed beyond it waits for
    /// an exchange to end.
    fn room(&self) -> u64;

    /// Messages of an open loop fell due while [`Streams::room`] said none could go: count
    /// them as the protocol names that limit (HTTP/2: waits for a stream).
    fn waited(&self, rec: &mut Recorder, n: u64);

    /// Whether one exchange can be given up on alone (HTTP/2: RST_STREAM with CANCEL), so that
    /// a timeout fails that exchange and the connection carries the others on.
    fn cancels(&self) -> bool {
        false
    }

    /// Give up on the exchange with this key ([`Streams::cancels`]): forget it, and append to
    /// `ctl` what tells the server. Returns whether the connection has nothing left to do
    /// (HTTP/2: its last stream after a GOAWAY), so that it is closed and opened again.
    fn cancel(&mut self, _key: u64, _ctl: &mut Vec<u8>) -> bool {
        false
    }
}

/// Control answers (`ctl`: a WebSocket pong, HTTP/2's acknowledgements, MQTT's) the
/// socket had no room for, kept by the session and written once it drains.
pub trait Owed {
    /// What is kept must go out before newer control bytes, not be replaced by them (HTTP/2:
    /// every acknowledgement and window update counts; a WebSocket pong does not). Such a
    /// session's control answers also wait for the requests its replies free, and go out in
    /// the same write (an HTTP/2 PING answered with the next request: one system call, not
    /// two); what no request takes is written when the connection's events are done.
    fn in_order(&self) -> bool;

    /// Keep `ctl` (in order, or the latest only).
    fn owe(&mut self, ctl: &[u8]);

    /// What [`Owed::owe`] kept, to write now.
    fn take(&mut self) -> Option<Box<[u8]>>;

    /// Append what [`Owed::owe`] kept to `out` and forget it, keeping the session's buffer
    /// (no allocation: HTTP/2 sends its control answers this way with the next request).
    fn drain(&mut self, out: &mut Vec<u8>) {
        if let Some(k) = self.take() {
            out.extend_from_slice(&k);
        }
    }
}

/// A tick on a connection that is up (after its handshake) that keeps it alive (MQTT's
/// PINGREQ), and fails it when the server stopped answering.
pub trait KeepAlive {
    /// How often [`KeepAlive::tick`] runs, in nanoseconds. `None`: never (keep-alive 0).
    fn every_ns(&self) -> Option<u64>;

    /// The time of the connection's pending tick (`u64::MAX`: none), kept by the session so
    /// that a connection of a protocol without ticks carries no field for it; a timer entry
    /// at another time is stale (an earlier connection's).
    fn at(&self) -> u64;

    fn set_at(&mut self, at: u64);

    /// An answer is awaited that no exchange stands for (MQTT: the PINGRESP to a PINGREQ):
    /// on virtual time the clock waits for a quiet moment before it jumps, as for a reply.
    fn awaits_answer(&self) -> bool;

    /// Append to `out` what keeps the connection alive (written as control bytes, not an
    /// exchange). `Err`: the connection is dead (no answer to the last keep-alive) and fails
    /// as `timeout` with this message.
    fn tick(&mut self, out: &mut Vec<u8>, rec: &mut Recorder) -> Result<(), String>;
}

/// The capability a session lacks: no value of it exists, so its accessor is always `None`.
pub enum Never {}

impl Streams for Never {
    fn room(&self) -> u64 {
        match *self {}
    }

    fn waited(&self, _rec: &mut Recorder, _n: u64) {
        match *self {}
    }
}

impl Owed for Never {
    fn in_order(&self) -> bool {
        match *self {}
    }

    fn owe(&mut self, _ctl: &[u8]) {
        match *self {}
    }

    fn take(&mut self) -> Option<Box<[u8]>> {
        match *self {}
    }
}

impl KeepAlive for Never {
    fn every_ns(&self) -> Option<u64> {
        match *self {}
    }

    fn at(&self) -> u64 {
        match *self {}
    }

    fn set_at(&mut self, _at: u64) {
        match *self {}
    }

    fn awaits_answer(&self) -> bool {
        match *self {}
    }

    fn tick(&mut self, _out: &mut Vec<u8>, _rec: &mut Recorder) -> Result<(), String> {
        match *self {}
    }
}
