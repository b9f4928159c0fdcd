//! One connection's state: what every protocol shares, plus its own protocol's session.
//!
//! A connection owns no receive buffer (the session's decoder keeps a few bytes of state),
//! allocates its send buffer only when a write was short, and keeps its oldest exchange in
//! flight inline: an idle connection costs a few hundred bytes, none of them on the heap.

use crate::exchange::Exchanges;
use crate::session::{Session, Verify};
use crate::transport::Transport;
use mio::net::TcpStream;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Not connected: waiting for its turn to connect (first time, or backoff after a failure).
    Waiting,
    Connecting,
    /// TCP connected to the proxy; its answer to CONNECT is awaited (the tunnel).
    Proxy,
    /// TCP connected; the TLS handshake is under way.
    Tls,
    /// The protocol's handshake (e.g. the WebSocket upgrade) is sent and its answer awaited.
    Handshake,
    /// Running the script's opening: a request is in flight and its reply awaited.
    Login,
    Ready,
    /// Done for good (end of run).
    Closed,
}

pub struct Conn<S> {
    pub gid: u64,
    pub state: State,
    /// The op of the run's program the connection is at (see [`crate::modes`]).
    pub pc: u16,
    /// In the worker's ready queue already.
    pub ready_queued: bool,
    /// In the worker's read queue (its read budget ran out before the socket was drained):
    /// 0 no, 1 yes, 2 yes and the peer's FIN was already reported (read on to the EOF).
    pub read_queued: u8,
    /// A byte has arrived since the last connect: a timeout without one is a server that
    /// never answered this connection (one that stopped accepting looks like this).
    pub heard: bool,
    pub stream: Option<TcpStream>,
    /// Plain, or a TLS session over `stream` (`https://`, `wss://`).
    pub transport: Transport,
    /// When the current phase began: the connect, then the transport (TCP, then TLS)
    /// becoming usable (handshake times and timeouts count from there).
    pub since: u64,
    pub ex: Exchanges,
    pub session: S,
    /// Bytes accepted for sending that the socket did not take yet, from `wpos`.
    pub wbuf: Vec<u8>,
    pub wpos: usize,
    /// `--verify`: what the echoes must be.
    pub verify: Option<Box<Verify>>,
    /// Open loop: next schedule index to send, and how many were due at the last look.
    pub sent_k: u64,
    pub due_k: u64,
    /// Open loop: the first schedule index of this connection, fixed when it was first ready
    /// (messages due before it connected were never part of its load); `u64::MAX` until then.
    /// A reconnect keeps the schedule, so an outage shows as latency and `not_sent`.
    pub k0: u64,
    pub seq: u64,
    /// Closed loop: sends owed now, and think deadlines (in order) of sends owed later
    /// (allocated the first time a think time applies).
    pub owed: u32,
    pub failures: u32,
    #[allow(clippy::box_collection)] // boxed: 8 bytes on connections that never think
    pub thinking: Option<Box<VecDeque<u64>>>,
    pub retry_at: u64,
    /// Times of the pending wake and timeout timer entries (u64::MAX: none pending).
    pub wake_at: u64,
    pub timeout_at: u64,
}

impl<S: Session> Conn<S> {
    pub fn new(gid: u64, session: S, verify: bool) -> Self {
        Self {
            gid,
            state: State::Waiting,
            pc: 0,
            ready_queued: false,
            read_queued: 0,
            heard: false,
            stream: None,
            transport: Transport::Plain,
            since: 0,
            ex: Exchanges::default(),
            session,
            wbuf: Vec::new(),
            wpos: 0,
            verify: verify.then(Box::default),
            sent_k: 0,
            due_k: 0,
            k0: u64::MAX,
            seq: 0,
            owed: 0,
            failures: 0,
            thinking: None,
            retry_at: u64::MAX,
            wake_at: u64::MAX,
            timeout_at: u64::MAX,
        }
    }
}

impl<S> Conn<S> {
    /// Whether the connection has been ready for load at least once (its schedule runs).
    pub fn started(&self) -> bool {
        self.k0 != u64::MAX
    }

    /// The socket has not taken what was already queued for it: more than 64 KiB waiting
    /// (plain), or records the socket refused (TLS: rustls does not say how many bytes; a
    /// control answer kept meanwhile is written once they are out).
    pub fn backlogged(&self) -> bool {
        self.wbuf.len() - self.wpos > 64 << 10 || self.transport.wants_write()
    }

    pub fn pending_write(&self) -> bool {
        self.wpos < self.wbuf.len() || self.transport.wants_write()
    }

    /// Exchanges in flight that count (an opening request does not).
    pub fn counted_in_flight(&self) -> u64 {
        self.ex.counted() as u64
    }

    /// The key of the next exchange: load requests take odd keys from their sequence number,
    /// an opening request the even key below, so keys grow in send order across both.
    #[inline]
    pub fn load_key(&self) -> u64 {
        (self.seq << 1) | 1
    }

    #[inline]
    pub fn opening_key(&self) -> u64 {
        self.seq << 1
    }

    /// Queue a think deadline for each of the sends owed now.
    pub fn think_owed(&mut self, at: u64) {
        let n = std::mem::take(&mut self.owed);
        let t = self.thinking.get_or_insert_with(Box::default);
        for _ in 0..n {
            t.push_back(at);
        }
    }
}

impl<S: Session> Conn<S> {
    /// Forget everything tied to the broken connection; keep the schedule position.
    pub fn reset_io(&mut self, cfg: &S::Cfg) {
        self.stream = None;
        self.transport = Transport::Plain;
        self.ex.clear();
        self.session.reset(cfg);
        self.wbuf.clear();
        self.wpos = 0;
        if let Some(v) = self.verify.as_deref_mut() {
            *v = Verify::default();
        }
        self.owed = 0;
        if let Some(t) = self.thinking.as_deref_mut() {
            t.clear();
        }
        self.timeout_at = u64::MAX;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{http::Http, tcp::Tcp, ws::Ws};
    use std::mem::size_of;

    /// Idle memory per connection is a target (bench/idle-mem.sh measures it in RSS): the
    /// connection struct is most of it, and none of it is on the heap while idle.
    #[test]
    fn a_connection_carries_only_its_own_protocols_state() {
        let (tcp, http, ws) = (
            size_of::<Conn<Tcp>>(),
            size_of::<Conn<Http>>(),
            size_of::<Conn<Ws>>(),
        );
        eprintln!("Conn<Tcp> {tcp} B, Conn<Http> {http} B, Conn<Ws> {ws} B");
        assert!(tcp <= 272, "Conn<Tcp> is {tcp} bytes");
        // Ws: 8 bytes for a pong owed to a peer that does not read (issue 24); on Windows a
        // mio stream holds its IOCP state too (8 more bytes for Ws, 336 under wine).
        assert!(
            ws <= 328 + 8 * cfg!(windows) as usize,
            "Conn<Ws> is {ws} bytes"
        );
        assert!(tcp < http && tcp < ws);
        // MQTT: its decoder, the acknowledgements owed, the keep-alive (issue 29: an idle
        // MQTT connection costs at most 1 KiB in all).
        let mqtt = size_of::<Conn<crate::session::mqtt::Mqtt>>();
        eprintln!("Conn<Mqtt> {mqtt} B");
        assert!(mqtt <= 384, "Conn<Mqtt> is {mqtt} bytes");
        // The transport costs what an `Option` of the boxed TLS session cost: one pointer.
        assert_eq!(
            size_of::<crate::transport::Transport>(),
            size_of::<Option<Box<rustls::ClientConnection>>>()
        );
    }
}
