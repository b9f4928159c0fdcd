//! Counters and errors shared by every reference server.
//!
//! Key decision: each event-loop thread is the only writer of its own [`ThreadCounters`], so it
//! updates them with a relaxed load and store (no locked read-modify-write) right at the
//! syscall it counts, not once per loop iteration. That is what makes the numbers exact from a
//! client's point of view: a write is counted *before* the syscall that hands the bytes to the
//! kernel (and corrected if less went out), so a client that has received its echo and then asks
//! for [`ServerStats`] always finds those bytes counted. Counting after the syscall would leave a
//! window in which the kernel, waking the client on return from `write`, preempts the server.
//! Protocol counters follow the same rule: an http request or a ws message is counted when its
//! answer is queued, before the write that sends it.
//!
//! The socket counters are the same for every server; the protocol parts ([`HttpStats`],
//! [`WsStats`]) are `Some` only for the server that speaks that protocol, and are left out of
//! the JSON otherwise, so the echo server's record keeps its shape.

use serde::{Deserialize, Serialize};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// What a server has done so far, summed over its threads.
///
/// The byte and syscall counters are exact once the client has seen the server's output;
/// `connections_open` drops when the server notices a close, one event-loop wakeup after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStats {
    /// Connections returned by `accept`.
    pub connections_accepted: u64,
    /// Connections accepted and not yet closed by either side.
    pub connections_open: u64,
    /// All bytes received from clients.
    pub bytes_read: u64,
    /// All bytes sent to clients.
    pub bytes_written: u64,
    /// Read syscalls that returned at least one byte.
    pub reads: u64,
    /// Write syscalls that sent at least one byte.
    pub writes: u64,
    /// The http server's protocol counters; `None` for other servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpStats>,
    /// The WebSocket server's protocol counters; `None` for other servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws: Option<WsStats>,
    /// TLS counters of a server started with a certificate (any protocol); `None` without TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsStats>,
    /// The chat server's counters; `None` for other servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<ChatStats>,
    /// The gRPC server's counters; `None` for other servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<GrpcStats>,
}

/// What the gRPC server answered: what a client's `totals.grpc` reconciles with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrpcStats {
    /// Calls answered with a status, counted when the status is queued for writing.
    pub calls: u64,
    /// Of those, with `grpc-status` 0 (OK), and with any other status.
    pub status_ok: u64,
    pub status_error: u64,
    /// Request messages read, reply messages sent.
    pub messages_in: u64,
    pub messages_out: u64,
}

impl GrpcStats {
    /// Adds `other` field by field.
    pub fn merge(&mut self, other: &GrpcStats) {
        self.calls += other.calls;
        self.status_ok += other.status_ok;
        self.status_error += other.status_error;
        self.messages_in += other.messages_in;
        self.messages_out += other.messages_out;
    }
}

/// What the chat server did: what a client's delivery accounting reconciles with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatStats {
    /// Logins answered (each put its user in a room).
    pub logins: u64,
    /// Rooms created.
    pub rooms: u64,
    /// `pub` messages received from room members.
    pub messages_in: u64,
    /// Deliveries written to room members (duplicates included, drops not), each counted
    /// once the socket has taken its last byte.
    pub deliveries_out: u64,
    /// Fault knobs: deliveries dropped, sent twice, and held back behind the next one.
    pub dropped: u64,
    pub duplicated: u64,
    pub reordered: u64,
    /// Membership pushes (`member`) sent to the other members of a room.
    pub member_pushes: u64,
    /// `leave` messages answered.
    pub leaves: u64,
    /// Members disconnected because their output passed `max_queue` (clients that do not
    /// read).
    #[serde(default)]
    pub slow_disconnects: u64,
    /// Deliveries those members were owed and never written (a partly written one included).
    #[serde(default)]
    pub slow_dropped: u64,
    /// The most bytes any member had queued that its socket had not taken (at most
    /// `max_queue` plus one message); the largest of threads and processes when merged.
    #[serde(default)]
    pub queue_peak_bytes: u64,
    /// `serve frames`: connections closed for a malformed frame or object.
    #[serde(default)]
    pub malformed: u64,
}

impl ChatStats {
    /// Adds `other` field by field.
    pub fn merge(&mut self, o: &ChatStats) {
        self.logins += o.logins;
        self.rooms += o.rooms;
        self.messages_in += o.messages_in;
        self.deliveries_out += o.deliveries_out;
        self.dropped += o.dropped;
        self.duplicated += o.duplicated;
        self.reordered += o.reordered;
        self.member_pushes += o.member_pushes;
        self.leaves += o.leaves;
        self.slow_disconnects += o.slow_disconnects;
        self.slow_dropped += o.slow_dropped;
        self.queue_peak_bytes = self.queue_peak_bytes.max(o.queue_peak_bytes);
        self.malformed += o.malformed;
    }
}

/// What a TLS server's handshakes did (the http part repeats them as `tls_handshakes` and
/// `tls_errors`, its older names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsStats {
    /// TLS handshakes completed.
    pub handshakes: u64,
    /// Connections dropped because of a TLS protocol error (bad handshake, bad record).
    pub errors: u64,
}

impl TlsStats {
    /// Adds `other` field by field.
    pub fn merge(&mut self, other: &TlsStats) {
        self.handshakes += other.handshakes;
        self.errors += other.errors;
    }
}

/// What the http server answered. Byte and syscall counts are in [`ServerStats`] (with TLS:
/// bytes on the wire, i.e. encrypted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpStats {
    /// Requests answered, counted when the response is queued for writing; includes requests
    /// answered with an error status (400, 431, ...). After a client has read every response,
    /// this equals the number of requests it sent (a malformed request counts as one).
    pub requests: u64,
    /// Responses by status class; they add up to `requests` (no 1xx is ever sent).
    pub responses_2xx: u64,
    pub responses_3xx: u64,
    pub responses_4xx: u64,
    pub responses_5xx: u64,
    /// TLS handshakes completed (0 without TLS).
    pub tls_handshakes: u64,
    /// Connections dropped because of a TLS protocol error (bad handshake, bad record).
    pub tls_errors: u64,
}

impl HttpStats {
    /// Adds `other` field by field.
    pub fn merge(&mut self, other: &HttpStats) {
        self.requests += other.requests;
        self.responses_2xx += other.responses_2xx;
        self.responses_3xx += other.responses_3xx;
        self.responses_4xx += other.responses_4xx;
        self.responses_5xx += other.responses_5xx;
        self.tls_handshakes += other.tls_handshakes;
        self.tls_errors += other.tls_errors;
    }
}

/// What the WebSocket server did. Byte and syscall counts are in [`ServerStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WsStats {
    /// Upgrades answered with 101.
    pub handshakes: u64,
    /// Upgrade requests answered with an error status (400, 426, 431) instead.
    pub handshakes_rejected: u64,
    /// Complete text and binary messages received (a fragmented message counts once).
    pub messages_in: u64,
    /// Echoes queued for writing, one per message in; after a client has read every echo, this
    /// equals the number of echoes it received.
    pub messages_out: u64,
    /// Pings received, each answered by one pong.
    pub pings: u64,
    /// Close frames received from clients.
    pub closes_received: u64,
    /// Close frames sent: replies to the client's close and closes the server started.
    pub closes_sent: u64,
    /// Closes the server started because the client broke the protocol (1002, 1007, 1009).
    pub protocol_errors: u64,
}

impl WsStats {
    /// Adds `other` field by field.
    pub fn merge(&mut self, other: &WsStats) {
        self.handshakes += other.handshakes;
        self.handshakes_rejected += other.handshakes_rejected;
        self.messages_in += other.messages_in;
        self.messages_out += other.messages_out;
        self.pings += other.pings;
        self.closes_received += other.closes_received;
        self.closes_sent += other.closes_sent;
        self.protocol_errors += other.protocol_errors;
    }
}

/// Adds an optional part: `None` stays `None` only if both are.
fn merge_part<T: Copy + Default>(mine: &mut Option<T>, other: Option<T>, add: fn(&mut T, &T)) {
    if let Some(other) = other {
        add(mine.get_or_insert_with(T::default), &other);
    }
}

impl ServerStats {
    /// Adds `other` field by field (merging threads, processes or runs).
    pub fn merge(&mut self, other: &ServerStats) {
        self.connections_accepted += other.connections_accepted;
        self.connections_open += other.connections_open;
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.reads += other.reads;
        self.writes += other.writes;
        merge_part(&mut self.http, other.http, HttpStats::merge);
        merge_part(&mut self.ws, other.ws, WsStats::merge);
        merge_part(&mut self.tls, other.tls, TlsStats::merge);
        merge_part(&mut self.chat, other.chat, ChatStats::merge);
        merge_part(&mut self.grpc, other.grpc, GrpcStats::merge);
    }
}

/// Which server a set of counters belongs to: decides which protocol part a snapshot carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Echo,
    Http,
    /// The HTTP/2 server: its counts are the `http` part.
    #[cfg_attr(not(feature = "h2"), allow(dead_code))]
    H2,
    /// The gRPC server (on the HTTP/2 one): its counts are the `grpc` part.
    #[cfg_attr(not(feature = "h2"), allow(dead_code))]
    Grpc,
    Ws,
    Chat,
}

impl Kind {
    /// Short name, used in thread names (`barrage-<name>-<i>`) and log messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Echo => "echo",
            Kind::Http => "http",
            Kind::H2 => "h2",
            Kind::Grpc => "grpc",
            Kind::Ws => "ws",
            Kind::Chat => "chat",
        }
    }
}

/// Why a server could not start. Every variant names the listen address.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The listening socket could not be created, bound or put into listen state
    /// (most often: the address is already in use, or it is not local to this machine).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    /// Another socket listens on the address already (another server, or another run of this
    /// one): refused rather than sharing its connections through `SO_REUSEPORT`, unless the
    /// config's `reuse_port` asks to share.
    #[error("another server listens on {addr} already")]
    InUse { addr: SocketAddr },
    /// The configuration cannot work, e.g. zero threads.
    #[error("invalid configuration for the server on {addr}: {reason}")]
    Config { addr: SocketAddr, reason: String },
    /// The OS refused an event-loop resource (epoll instance, eventfd).
    #[error("cannot set up the event loop for the server on {addr}: {source}")]
    EventLoop {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    /// A TLS certificate or key file could not be read or parsed, or rustls refused the pair.
    #[error("TLS setup for the server on {addr} failed: {}: {reason}", path.display())]
    Tls {
        addr: SocketAddr,
        path: std::path::PathBuf,
        reason: String,
    },
    /// A server thread could not be spawned.
    #[error("cannot start thread {index} of the server on {addr}: {source}")]
    Spawn {
        addr: SocketAddr,
        index: usize,
        #[source]
        source: io::Error,
    },
}

/// One thread's counters. Read by anyone through [`ThreadCounters::snapshot`]; written only
/// through the thread's single [`CounterWriter`].
///
/// Aligned to two cache lines so that threads' counters never share one (no false sharing on
/// the hot path; the adjacent-line prefetcher works in pairs).
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct ThreadCounters {
    connections_accepted: AtomicU64,
    connections_open: AtomicU64,
    bytes_read: AtomicU64,
    bytes_written: AtomicU64,
    reads: AtomicU64,
    writes: AtomicU64,
    /// Indexed by [`Http`]; untouched by other servers.
    http: [AtomicU64; Http::COUNT],
    /// Indexed by [`Ws`]; untouched by other servers.
    ws: [AtomicU64; Ws::COUNT],
    /// Indexed by [`Tls`]; untouched without TLS.
    tls: [AtomicU64; Tls::COUNT],
    /// Indexed by [`Chat`]; untouched by other servers.
    chat: [AtomicU64; Chat::COUNT],
    /// Indexed by [`Grpc`]; untouched by other servers.
    grpc: [AtomicU64; Grpc::COUNT],
}

/// The gRPC counters, as indices into [`ThreadCounters`]' array.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "h2"), allow(dead_code))]
pub(crate) enum Grpc {
    Calls,
    StatusOk,
    StatusError,
    MessagesIn,
    MessagesOut,
}

impl Grpc {
    const COUNT: usize = 5;
}

/// The chat counters, as indices into [`ThreadCounters`]' array.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Chat {
    Logins,
    Rooms,
    MessagesIn,
    DeliveriesOut,
    Dropped,
    Duplicated,
    Reordered,
    MemberPushes,
    Leaves,
    SlowDisconnects,
    SlowDropped,
    /// A high-water mark, not a count ([`CounterWriter::chat_peak`]).
    QueuePeakBytes,
    Malformed,
}

impl Chat {
    const COUNT: usize = 13;
}

/// The http counters, as indices into [`ThreadCounters`]' array.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Http {
    Requests,
    Class2xx,
    Class3xx,
    Class4xx,
    Class5xx,
}

impl Http {
    const COUNT: usize = 5;
}

/// The TLS counters (any protocol), as indices into [`ThreadCounters`]' array.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Tls {
    Handshakes,
    Errors,
}

impl Tls {
    const COUNT: usize = 2;
}

/// The WebSocket counters, as indices into [`ThreadCounters`]' array.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ws {
    Handshakes,
    HandshakesRejected,
    MessagesIn,
    MessagesOut,
    Pings,
    ClosesReceived,
    ClosesSent,
    ProtocolErrors,
}

impl Ws {
    const COUNT: usize = 8;
}

impl ThreadCounters {
    /// A consistent-enough view: each field is exact, fields may be a few syscalls apart.
    pub(crate) fn snapshot(&self, kind: Kind, tls: bool) -> ServerStats {
        let http = |c: Http| self.http[c as usize].load(Relaxed);
        let tls_count = |c: Tls| self.tls[c as usize].load(Relaxed);
        let ws = |c: Ws| self.ws[c as usize].load(Relaxed);
        ServerStats {
            connections_accepted: self.connections_accepted.load(Relaxed),
            connections_open: self.connections_open.load(Relaxed),
            bytes_read: self.bytes_read.load(Relaxed),
            bytes_written: self.bytes_written.load(Relaxed),
            reads: self.reads.load(Relaxed),
            writes: self.writes.load(Relaxed),
            http: matches!(kind, Kind::Http | Kind::H2).then(|| HttpStats {
                requests: http(Http::Requests),
                responses_2xx: http(Http::Class2xx),
                responses_3xx: http(Http::Class3xx),
                responses_4xx: http(Http::Class4xx),
                responses_5xx: http(Http::Class5xx),
                tls_handshakes: tls_count(Tls::Handshakes),
                tls_errors: tls_count(Tls::Errors),
            }),
            ws: (kind == Kind::Ws).then(|| WsStats {
                handshakes: ws(Ws::Handshakes),
                handshakes_rejected: ws(Ws::HandshakesRejected),
                messages_in: ws(Ws::MessagesIn),
                messages_out: ws(Ws::MessagesOut),
                pings: ws(Ws::Pings),
                closes_received: ws(Ws::ClosesReceived),
                closes_sent: ws(Ws::ClosesSent),
                protocol_errors: ws(Ws::ProtocolErrors),
            }),
            tls: tls.then(|| TlsStats {
                handshakes: tls_count(Tls::Handshakes),
                errors: tls_count(Tls::Errors),
            }),
            grpc: (kind == Kind::Grpc).then(|| {
                let g = |x: Grpc| self.grpc[x as usize].load(Relaxed);
                GrpcStats {
                    calls: g(Grpc::Calls),
                    status_ok: g(Grpc::StatusOk),
                    status_error: g(Grpc::StatusError),
                    messages_in: g(Grpc::MessagesIn),
                    messages_out: g(Grpc::MessagesOut),
                }
            }),
            chat: (kind == Kind::Chat).then(|| {
                let c = |x: Chat| self.chat[x as usize].load(Relaxed);
                ChatStats {
                    logins: c(Chat::Logins),
                    rooms: c(Chat::Rooms),
                    messages_in: c(Chat::MessagesIn),
                    deliveries_out: c(Chat::DeliveriesOut),
                    dropped: c(Chat::Dropped),
                    duplicated: c(Chat::Duplicated),
                    reordered: c(Chat::Reordered),
                    member_pushes: c(Chat::MemberPushes),
                    leaves: c(Chat::Leaves),
                    slow_disconnects: c(Chat::SlowDisconnects),
                    slow_dropped: c(Chat::SlowDropped),
                    queue_peak_bytes: c(Chat::QueuePeakBytes),
                    malformed: c(Chat::Malformed),
                }
            }),
        }
    }
}

/// The write side of one thread's counters. Not `Clone`: owning it is what makes its thread
/// the only writer, which is what makes plain load + store updates correct.
#[derive(Debug)]
pub(crate) struct CounterWriter(Arc<ThreadCounters>);

/// Adds `n` with wrapping (a sole writer needs no atomic read-modify-write).
fn bump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
}

/// Subtracts `n`; used to correct an optimistic count.
fn unbump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed).wrapping_sub(n), Relaxed);
}

impl CounterWriter {
    /// A fresh writer and the shared counters it writes, for the handle to read.
    pub(crate) fn new() -> (CounterWriter, Arc<ThreadCounters>) {
        let shared = Arc::new(ThreadCounters::default());
        (CounterWriter(Arc::clone(&shared)), shared)
    }

    pub(crate) fn accepted(&self) {
        bump(&self.0.connections_accepted, 1);
        bump(&self.0.connections_open, 1);
    }

    pub(crate) fn closed(&self) {
        unbump(&self.0.connections_open, 1);
    }

    /// Counts a read syscall that returned `n > 0` bytes.
    pub(crate) fn read(&self, n: usize) {
        bump(&self.0.bytes_read, n as u64);
        bump(&self.0.reads, 1);
    }

    /// Counts one http event.
    pub(crate) fn http(&self, counter: Http) {
        bump(&self.0.http[counter as usize], 1);
    }

    /// Counts one http response with `status` (and so one request answered).
    pub(crate) fn http_response(&self, status: u16) {
        let class = match status {
            ..300 => Http::Class2xx,
            300..400 => Http::Class3xx,
            400..500 => Http::Class4xx,
            _ => Http::Class5xx,
        };
        self.http(Http::Requests);
        self.http(class);
    }

    /// Counts `n` gRPC events.
    #[cfg_attr(not(feature = "h2"), allow(dead_code))]
    pub(crate) fn grpc(&self, counter: Grpc, n: u64) {
        bump(&self.0.grpc[counter as usize], n);
    }

    /// Counts one WebSocket event.
    pub(crate) fn ws(&self, counter: Ws) {
        bump(&self.0.ws[counter as usize], 1);
    }

    /// Counts `n` chat events.
    pub(crate) fn chat(&self, counter: Chat, n: u64) {
        bump(&self.0.chat[counter as usize], n);
    }

    /// Takes back `n` chat events counted optimistically.
    pub(crate) fn chat_undo(&self, counter: Chat, n: u64) {
        unbump(&self.0.chat[counter as usize], n);
    }

    /// Raises a high-water mark to `v`.
    pub(crate) fn chat_peak(&self, counter: Chat, v: u64) {
        let c = &self.0.chat[counter as usize];
        if v > c.load(Relaxed) {
            c.store(v, Relaxed);
        }
    }

    /// Counts one TLS event.
    pub(crate) fn tls(&self, counter: Tls) {
        bump(&self.0.tls[counter as usize], 1);
    }

    /// Runs one write syscall of `len` bytes, counted before it runs (see the module doc) and
    /// corrected afterwards to what it actually wrote.
    pub(crate) fn counted_write(
        &self,
        len: usize,
        write: impl FnOnce() -> io::Result<usize>,
    ) -> io::Result<usize> {
        bump(&self.0.bytes_written, len as u64);
        bump(&self.0.writes, 1);
        let result = write();
        let written = match result {
            Ok(n) => n.min(len),
            Err(_) => 0,
        };
        if written < len {
            unbump(&self.0.bytes_written, (len - written) as u64);
        }
        if written == 0 {
            unbump(&self.0.writes, 1);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_write_keeps_only_what_was_written() {
        let (writer, shared) = CounterWriter::new();
        writer.counted_write(10, || Ok(10)).expect("ok");
        writer.counted_write(10, || Ok(4)).expect("ok");
        let _ = writer.counted_write(10, || Err(io::ErrorKind::WouldBlock.into()));
        let _ = writer.counted_write(10, || Ok(0));
        let stats = shared.snapshot(Kind::Echo, false);
        assert_eq!(stats.bytes_written, 14);
        assert_eq!(stats.writes, 2);
    }

    #[test]
    fn connections_and_reads_are_counted() {
        let (writer, shared) = CounterWriter::new();
        writer.accepted();
        writer.accepted();
        writer.closed();
        writer.read(7);
        writer.read(1);
        let want = ServerStats {
            connections_accepted: 2,
            connections_open: 1,
            bytes_read: 8,
            reads: 2,
            ..ServerStats::default()
        };
        assert_eq!(shared.snapshot(Kind::Echo, false), want);
    }

    #[test]
    fn stats_round_trip_through_json_with_stable_names() {
        let stats = ServerStats {
            connections_accepted: 1,
            bytes_written: 9,
            ..ServerStats::default()
        };
        let json = serde_json::to_string(&stats).expect("serialize");
        assert!(json.contains("\"connections_accepted\":1"), "{json}");
        assert!(json.contains("\"bytes_written\":9"), "{json}");
        let back: ServerStats = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, stats);
    }

    #[test]
    fn merge_adds_every_field() {
        let one = ServerStats {
            connections_accepted: 1,
            connections_open: 2,
            bytes_read: 3,
            bytes_written: 4,
            reads: 5,
            writes: 6,
            http: None,
            ws: None,
            tls: None,
            chat: Some(ChatStats {
                deliveries_out: 7,
                ..ChatStats::default()
            }),
            grpc: Some(GrpcStats {
                calls: 1,
                status_ok: 2,
                status_error: 3,
                messages_in: 4,
                messages_out: 5,
            }),
        };
        let mut sum = one;
        sum.merge(&one);
        assert_eq!(sum.bytes_written, 8);
        assert_eq!(sum.writes, 12);
        assert_eq!(sum.connections_accepted, 2);
        assert_eq!((sum.http, sum.ws), (None, None));
        assert_eq!(sum.chat.unwrap().deliveries_out, 14);
        let g = sum.grpc.unwrap();
        assert_eq!(
            (
                g.calls,
                g.status_ok,
                g.status_error,
                g.messages_in,
                g.messages_out
            ),
            (2, 4, 6, 8, 10)
        );
    }

    #[test]
    fn protocol_parts_merge_and_appear_only_for_their_server() {
        let (writer, shared) = CounterWriter::new();
        writer.http_response(200);
        writer.http_response(404);
        writer.http_response(503);
        writer.ws(Ws::MessagesIn);
        assert_eq!(shared.snapshot(Kind::Echo, false).http, None);
        assert_eq!(shared.snapshot(Kind::Http, false).ws, None);
        let mut sum = ServerStats::default();
        sum.merge(&shared.snapshot(Kind::Http, false));
        sum.merge(&shared.snapshot(Kind::Http, false));
        let http = sum.http.expect("http part");
        assert_eq!(http.requests, 6);
        assert_eq!(
            (http.responses_2xx, http.responses_4xx, http.responses_5xx),
            (2, 2, 2)
        );
        assert_eq!(
            shared.snapshot(Kind::Ws, false).ws.expect("ws").messages_in,
            1
        );
        writer.grpc(Grpc::MessagesOut, 3);
        assert_eq!(shared.snapshot(Kind::Http, false).grpc, None);
        let g = shared.snapshot(Kind::Grpc, false).grpc.expect("grpc");
        assert_eq!(g.messages_out, 3);
    }

    #[test]
    fn tls_part_appears_for_any_server_started_with_tls() {
        let (writer, shared) = CounterWriter::new();
        writer.tls(Tls::Handshakes);
        writer.tls(Tls::Handshakes);
        writer.tls(Tls::Errors);
        assert_eq!(shared.snapshot(Kind::Echo, false).tls, None);
        let want = Some(TlsStats {
            handshakes: 2,
            errors: 1,
        });
        assert_eq!(shared.snapshot(Kind::Echo, true).tls, want);
        assert_eq!(shared.snapshot(Kind::Ws, true).tls, want);
        let http = shared.snapshot(Kind::Http, true).http.expect("http part");
        assert_eq!((http.tls_handshakes, http.tls_errors), (2, 1));
    }

    #[test]
    fn echo_json_has_no_protocol_parts() {
        let json = serde_json::to_string(&ServerStats::default()).expect("serialize");
        assert!(!json.contains("http") && !json.contains("ws"), "{json}");
        let http = ServerStats {
            http: Some(HttpStats::default()),
            ..ServerStats::default()
        };
        let json = serde_json::to_string(&http).expect("serialize");
        assert!(json.contains("\"http\":{\"requests\":0"), "{json}");
    }
}
