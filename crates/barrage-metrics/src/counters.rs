//! Event counters of one worker (or many, merged): exchanges, IO, connections, errors.
//!
//! Plain `u64` fields owned by exactly one worker thread while recording, so incrementing them
//! costs an add, no atomics. Merging is field-wise addition, which makes every total exact.

use crate::codes::CodeCounts;
use crate::error::{ErrorClass, ErrorCounts, ErrorReasons};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Exchanges whose request was handed to the connection (written or queued for writing).
    pub sent: u64,
    /// Exchanges whose reply arrived complete (and matched, under `--verify`).
    pub completed: u64,
    /// Exchanges that were sent and then failed: their connection broke or timed out while
    /// they were in flight, or their reply mismatched.
    pub failed: u64,
    /// Replies that arrived with no exchange in flight (a server that talks unasked).
    pub unexpected: u64,
    /// Scenario runs: pushed messages an `on` rule took (not replies to a step).
    #[serde(default)]
    pub pushed: u64,
    /// Bytes received, whatever they were (replies, unexpected data).
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// `read`/`write` system calls that moved at least one byte.
    pub reads: u64,
    pub writes: u64,
    pub connect_attempts: u64,
    pub connects: u64,
    pub connect_failures: u64,
    /// Established connections that the peer closed or reset, or that timed out.
    pub closed_by_peer: u64,
    /// Error events by class: a failed connect, a broken or timed-out connection (one each,
    /// however many exchanges it carried), a mismatched or rejected reply, a message not sent.
    pub errors: ErrorCounts,
    /// Exchanges that did not complete, by the reason: sent and then failed (the class that
    /// ended their connection, or of their reply) or never sent (`not_sent`). This, not
    /// `errors`, is what the error rate counts.
    #[serde(default)]
    pub failed_by: ErrorCounts,
    /// Open loop: messages that fell due on the schedules of connections that had started
    /// (`sent + not_sent` once the run is over, unless `-n` ended it first).
    #[serde(default)]
    pub scheduled: u64,
    /// Connections that became ready for load for the first time (the ramp).
    #[serde(default)]
    pub first_ready: u64,
    /// Replies received: TCP frames, HTTP responses, WebSocket data messages (expected or not).
    #[serde(default)]
    pub replies: u64,
    /// HTTP: responses per status code.
    #[serde(default, skip_serializing_if = "CodeCounts::is_empty")]
    pub status: CodeCounts,
    /// WebSocket: close frames received from the server, per close code (1006: the connection
    /// ended without one).
    #[serde(default, skip_serializing_if = "CodeCounts::is_empty")]
    pub ws_close: CodeCounts,
    /// memcached: completed requests that found nothing (get miss, delete/incr/decr/touch of a
    /// missing key). A miss is a completed exchange, not an error.
    #[serde(default)]
    pub misses: u64,
    /// redis/memcached: counts per `--command`, in the order the commands were given.
    #[serde(default, skip_serializing_if = "CommandCounts::is_empty")]
    pub commands: CommandCounts,
    /// Scenario broadcast steps: stamped messages sent and their deliveries.
    #[serde(default, skip_serializing_if = "BroadcastCounts::is_empty")]
    pub broadcast: BroadcastCounts,
    /// HTTP/2: frames, header compression, resets and GOAWAYs.
    #[serde(default, skip_serializing_if = "H2Counts::is_empty")]
    pub h2: H2Counts,
    /// gRPC: calls by `grpc-status`, messages each way.
    #[serde(default, skip_serializing_if = "GrpcCounts::is_empty")]
    pub grpc: GrpcCounts,
    /// MQTT: CONNACK codes, subscriptions, acknowledgements, deliveries, keep-alives.
    #[serde(default, skip_serializing_if = "MqttCounts::is_empty")]
    pub mqtt: MqttCounts,
    /// What the errors said: the first few distinct reasons per class (bounded).
    #[serde(default, skip_serializing_if = "ErrorReasons::is_empty")]
    pub reasons: ErrorReasons,
}

/// What MQTT connections counted. The load's PUBLISHes are the exchanges (`sent`,
/// `completed`: acknowledged at QoS 1 and 2, written at QoS 0).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MqttCounts {
    /// CONNACKs per return (3.1.1) or reason (5.0) code; 0 is accepted.
    #[serde(default, skip_serializing_if = "CodeCounts::is_empty")]
    pub connack: CodeCounts,
    /// Subscriptions the broker granted, and refused (a SUBACK code of 0x80 or more).
    #[serde(default)]
    pub subscribed: u64,
    #[serde(default)]
    pub sub_refused: u64,
    /// Acknowledgements of the load's PUBLISHes: PUBACK (QoS 1), PUBREC and PUBCOMP (QoS 2).
    #[serde(default)]
    pub puback: u64,
    #[serde(default)]
    pub pubrec: u64,
    #[serde(default)]
    pub pubcomp: u64,
    /// Acknowledgements that refused (5.0 reason codes of 0x80 or more), per code.
    #[serde(default, skip_serializing_if = "CodeCounts::is_empty")]
    pub refused: CodeCounts,
    /// PUBLISHes the broker delivered, at QoS 0, 1 and 2, and their payload bytes.
    #[serde(default)]
    pub received: [u64; 3],
    #[serde(default)]
    pub received_bytes: u64,
    /// Keep-alive: PINGREQs sent, PINGRESPs received (not exchanges).
    #[serde(default)]
    pub pings: u64,
    #[serde(default)]
    pub pongs: u64,
    /// DISCONNECTs from the broker (5.0) per reason code.
    #[serde(default, skip_serializing_if = "CodeCounts::is_empty")]
    pub disconnects: CodeCounts,
    /// DISCONNECTs sent: connections the run closed gracefully at its end.
    #[serde(default)]
    pub disconnects_sent: u64,
    /// Open loop: messages that fell due while the broker's Receive Maximum (or the packet
    /// ids' ring) was all in flight, so they waited (their latency counts the wait).
    #[serde(default)]
    pub receive_max_waits: u64,
}

impl MqttCounts {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Deliveries at every QoS.
    pub fn received_total(&self) -> u64 {
        self.received.iter().sum()
    }

    pub fn merge(&mut self, o: &MqttCounts) {
        self.connack.merge(&o.connack);
        self.subscribed += o.subscribed;
        self.sub_refused += o.sub_refused;
        self.puback += o.puback;
        self.pubrec += o.pubrec;
        self.pubcomp += o.pubcomp;
        self.refused.merge(&o.refused);
        for (a, b) in self.received.iter_mut().zip(o.received) {
            *a += b;
        }
        self.received_bytes += o.received_bytes;
        self.pings += o.pings;
        self.pongs += o.pongs;
        self.disconnects.merge(&o.disconnects);
        self.disconnects_sent += o.disconnects_sent;
        self.receive_max_waits += o.receive_max_waits;
    }
}

/// The names of gRPC's status codes, by code.
pub const GRPC_CODE_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// A gRPC status code's name (`UNKNOWN_CODE` past the list).
pub fn grpc_code_name(c: u32) -> &'static str {
    GRPC_CODE_NAMES
        .get(c as usize)
        .copied()
        .unwrap_or("UNKNOWN_CODE")
}

/// What gRPC calls counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrpcCounts {
    /// Calls that ended with a `grpc-status`, per code (0 is OK).
    #[serde(default, skip_serializing_if = "CodeCounts::is_empty")]
    pub status: CodeCounts,
    /// Calls whose stream ended without a `grpc-status` (counted as `protocol` errors).
    #[serde(default)]
    pub no_status: u64,
    /// Response messages received (one per unary call, any number per server stream).
    pub messages_received: u64,
}

impl GrpcCounts {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    pub fn merge(&mut self, o: &GrpcCounts) {
        self.status.merge(&o.status);
        self.no_status += o.no_status;
        self.messages_received += o.messages_received;
    }
}

/// The names of HTTP/2's error codes (RFC 9113, section 7), by code.
pub const H2_CODE_NAMES: [&str; 14] = [
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
];

/// An HTTP/2 error code's name (`UNKNOWN_CODE` past the list).
pub fn h2_code_name(c: u32) -> &'static str {
    H2_CODE_NAMES
        .get(c as usize)
        .copied()
        .unwrap_or("UNKNOWN_CODE")
}

/// What HTTP/2 connections counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct H2Counts {
    /// Connections that set HTTP/2 up (the server's SETTINGS came).
    #[serde(default)]
    pub connections: u64,
    /// `https://` connections on which the server chose HTTP/1.1 by ALPN (h2 was offered).
    #[serde(default)]
    pub http1_connections: u64,
    /// Frames received, and frames written (handed to the socket, as `sent`).
    pub frames_read: u64,
    #[serde(default)]
    pub frames_written: u64,
    /// Response header blocks as received (HPACK), and as HTTP/1.1 would have written the
    /// same fields (`name: value` and CRLF each): the compression the server achieved.
    pub header_bytes: u64,
    pub header_bytes_plain: u64,
    /// RST_STREAM frames received, per error code.
    #[serde(default, skip_serializing_if = "CodeCounts::is_empty")]
    pub resets: CodeCounts,
    /// GOAWAY frames received, per error code.
    #[serde(default, skip_serializing_if = "CodeCounts::is_empty")]
    pub goaways: CodeCounts,
    /// Requests sent again after `REFUSED_STREAM` (once each).
    pub refused_retried: u64,
    /// Open loop: messages that fell due while every stream the server allows was in flight,
    /// so they waited for one (their latency, from the intended send time, counts the wait).
    #[serde(default)]
    pub stream_waits: u64,
    /// The fewest concurrent streams any server's SETTINGS allowed a connection (0: none said,
    /// which means no limit). Merged as the minimum of those said.
    #[serde(default)]
    pub streams_granted: u64,
}

impl H2Counts {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    pub fn merge(&mut self, o: &H2Counts) {
        self.connections += o.connections;
        self.http1_connections += o.http1_connections;
        self.frames_read += o.frames_read;
        self.frames_written += o.frames_written;
        self.header_bytes += o.header_bytes;
        self.header_bytes_plain += o.header_bytes_plain;
        self.resets.merge(&o.resets);
        self.goaways.merge(&o.goaways);
        self.refused_retried += o.refused_retried;
        self.stream_waits += o.stream_waits;
        self.streams_granted = match (self.streams_granted, o.streams_granted) {
            (0, b) => b,
            (a, 0) => a,
            (a, b) => a.min(b),
        };
    }

    /// Count what a server's SETTINGS_MAX_CONCURRENT_STREAMS allowed.
    pub fn granted(&mut self, n: u32) {
        let n = u64::from(n).max(1);
        if self.streams_granted == 0 || n < self.streams_granted {
            self.streams_granted = n;
        }
    }
}

/// One-to-many delivery, counted from stamps: what senders sent and expected, what receivers
/// got. Every field adds up across threads and processes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BroadcastCounts {
    /// Stamped messages sent.
    pub sent: u64,
    /// Deliveries the senders expected (the room size each send saw, less the sender's own
    /// copy unless it is expected too).
    pub expected: u64,
    /// Distinct stamps received (first copies), own copies included.
    pub delivered: u64,
    /// Of them, the senders' own copies.
    pub own: u64,
    /// Copies of a stamp already received.
    pub duplicates: u64,
    /// Stamps that filled a gap (arrived after a later one of the same sender).
    pub late: u64,
    /// Sequence numbers skipped when a later stamp arrived (gaps opened).
    pub gaps: u64,
    /// Stamps older than a receiver's window (late; duplicates cannot be told).
    pub too_old: u64,
    /// Of the delivered, those from another process (a shard of a split run): counted, not
    /// timed (the clocks are not known to agree).
    #[serde(default)]
    pub remote: u64,
}

impl BroadcastCounts {
    pub fn is_empty(&self) -> bool {
        *self == BroadcastCounts::default()
    }

    fn merge(&mut self, o: &BroadcastCounts) {
        self.sent += o.sent;
        self.expected += o.expected;
        self.delivered += o.delivered;
        self.own += o.own;
        self.duplicates += o.duplicates;
        self.late += o.late;
        self.gaps += o.gaps;
        self.too_old += o.too_old;
        self.remote += o.remote;
    }

    /// Gaps still open: deliveries known lost (a later stamp of the sender came, this never).
    pub fn lost(&self) -> u64 {
        self.gaps.saturating_sub(self.late)
    }
}

/// What happened to the exchanges of one `--command`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandCount {
    pub sent: u64,
    /// Exchanges completed, as `Counters::completed` (misses included, error replies not).
    pub completed: u64,
    /// Error replies (`reply_error`): answered, but failed.
    pub errors: u64,
    pub misses: u64,
}

impl CommandCount {
    fn merge(&mut self, o: &CommandCount) {
        self.sent += o.sent;
        self.completed += o.completed;
        self.errors += o.errors;
        self.misses += o.misses;
    }
}

/// Counts per command index. The vector grows once, to the number of commands, the first time
/// each index is counted (or up front with [`CommandCounts::with_len`]); after that counting is
/// an index and an add. Serialized as a list, index = command.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CommandCounts(Vec<CommandCount>);

impl CommandCounts {
    /// Zeroed counts for `n` commands.
    pub fn with_len(n: usize) -> Self {
        Self(vec![CommandCount::default(); n])
    }

    #[inline]
    fn at(&mut self, i: usize) -> &mut CommandCount {
        if i >= self.0.len() {
            self.0.resize(i + 1, CommandCount::default());
        }
        &mut self.0[i]
    }

    #[inline]
    pub fn sent(&mut self, i: usize) {
        self.at(i).sent += 1;
    }

    /// `n` exchanges of command `i` completed (one, or a pipelined batch at once).
    #[inline]
    pub fn completed(&mut self, i: usize, n: u64) {
        self.at(i).completed += n;
    }

    #[inline]
    pub fn error(&mut self, i: usize, n: u64) {
        self.at(i).errors += n;
    }

    #[inline]
    pub fn miss(&mut self, i: usize, n: u64) {
        self.at(i).misses += n;
    }

    /// The counts of command `i` (zero when it was never counted).
    pub fn get(&self, i: usize) -> CommandCount {
        self.0.get(i).copied().unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &CommandCount> + '_ {
        self.0.iter()
    }

    pub fn merge(&mut self, o: &CommandCounts) {
        if o.0.len() > self.0.len() {
            self.0.resize(o.0.len(), CommandCount::default());
        }
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            a.merge(b);
        }
    }
}

impl Counters {
    #[inline]
    pub fn error(&mut self, class: ErrorClass, n: u64) {
        self.errors.add(class, n);
    }

    pub fn merge(&mut self, o: &Counters) {
        self.sent += o.sent;
        self.completed += o.completed;
        self.failed += o.failed;
        self.unexpected += o.unexpected;
        self.pushed += o.pushed;
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.reads += o.reads;
        self.writes += o.writes;
        self.connect_attempts += o.connect_attempts;
        self.connects += o.connects;
        self.connect_failures += o.connect_failures;
        self.closed_by_peer += o.closed_by_peer;
        self.errors.merge(&o.errors);
        self.failed_by.merge(&o.failed_by);
        self.scheduled += o.scheduled;
        self.first_ready += o.first_ready;
        self.replies += o.replies;
        self.status.merge(&o.status);
        self.ws_close.merge(&o.ws_close);
        self.misses += o.misses;
        self.commands.merge(&o.commands);
        self.broadcast.merge(&o.broadcast);
        self.h2.merge(&o.h2);
        self.grpc.merge(&o.grpc);
        self.mqtt.merge(&o.mqtt);
        self.reasons.merge(&o.reasons);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_every_field() {
        let mut a = Counters {
            sent: 1,
            completed: 2,
            failed: 3,
            unexpected: 4,
            pushed: 17,
            bytes_read: 5,
            bytes_written: 6,
            reads: 7,
            writes: 8,
            connect_attempts: 9,
            connects: 10,
            connect_failures: 11,
            closed_by_peer: 12,
            errors: ErrorCounts::default(),
            failed_by: ErrorCounts::default(),
            reasons: ErrorReasons::default(),
            scheduled: 14,
            first_ready: 15,
            replies: 13,
            status: CodeCounts::default(),
            ws_close: CodeCounts::default(),
            misses: 16,
            commands: CommandCounts::default(),
            broadcast: BroadcastCounts::default(),
            h2: H2Counts {
                connections: 22,
                http1_connections: 23,
                frames_read: 18,
                frames_written: 28,
                header_bytes: 19,
                header_bytes_plain: 20,
                resets: CodeCounts::default(),
                goaways: CodeCounts::default(),
                refused_retried: 21,
                streams_granted: 0,
                stream_waits: 24,
            },
            grpc: GrpcCounts {
                status: CodeCounts::default(),
                no_status: 25,
                messages_received: 27,
            },
            mqtt: MqttCounts {
                connack: CodeCounts::default(),
                subscribed: 29,
                sub_refused: 31,
                puback: 33,
                pubrec: 35,
                pubcomp: 37,
                refused: CodeCounts::default(),
                received: [39, 41, 43],
                received_bytes: 45,
                pings: 47,
                pongs: 49,
                disconnects: CodeCounts::default(),
                disconnects_sent: 51,
                receive_max_waits: 53,
            },
        };
        a.grpc.status.add(14, 3);
        a.mqtt.connack.add(5, 1);
        a.mqtt.refused.add(0x87, 2);
        a.mqtt.disconnects.add(0x8b, 3);
        a.error(ErrorClass::Reset, 1);
        a.h2.resets.add(7, 1);
        a.h2.goaways.add(0, 2);
        a.status.add(200, 1);
        a.reasons.note(ErrorClass::Protocol, "bad frame", 7);
        let b = a.clone();
        a.merge(&b);
        assert_eq!(a.sent, 2);
        assert_eq!(a.closed_by_peer, 24);
        assert_eq!(a.connect_failures, 22);
        assert_eq!(a.errors.get(ErrorClass::Reset), 2);
        assert_eq!(a.reads + a.writes, 30);
        assert_eq!(a.replies, 26);
        assert_eq!((a.scheduled, a.first_ready), (28, 30));
        assert_eq!(a.status.get(200), 2);
        assert_eq!(
            a.reasons.of(ErrorClass::Protocol).count(),
            1,
            "a reason merged once"
        );
        assert_eq!(a.misses, 32);
        assert_eq!(a.pushed, 34);
        let h = &a.h2;
        assert_eq!(
            (
                h.frames_read,
                h.header_bytes,
                h.header_bytes_plain,
                h.refused_retried
            ),
            (36, 38, 40, 42)
        );
        assert_eq!((h.resets.get(7), h.goaways.get(0)), (2, 4));
        assert_eq!((h.connections, h.http1_connections), (44, 46));
        assert_eq!(h.stream_waits, 48);
        assert_eq!(h.frames_written, 56);
        let g = &a.grpc;
        assert_eq!((g.no_status, g.messages_received), (50, 54));
        assert_eq!(g.status.get(14), 6);
        let m = &a.mqtt;
        assert_eq!(
            (m.subscribed, m.sub_refused, m.puback, m.pubrec, m.pubcomp),
            (58, 62, 66, 70, 74)
        );
        assert_eq!((m.received, m.received_total()), ([78, 82, 86], 246));
        assert_eq!((m.received_bytes, m.pings, m.pongs), (90, 94, 98));
        assert_eq!((m.disconnects_sent, m.receive_max_waits), (102, 106));
        assert_eq!(
            (
                m.connack.get(5),
                m.refused.get(0x87),
                m.disconnects.get(0x8b)
            ),
            (2, 4, 6)
        );
    }

    #[test]
    fn command_counts_merge_by_index_and_serialize_as_a_list() {
        let mut a = Counters {
            commands: CommandCounts::with_len(2),
            ..Counters::default()
        };
        a.commands.sent(0);
        a.commands.sent(0);
        a.commands.completed(0, 1);
        a.commands.miss(0, 1);
        a.commands.sent(1);
        a.commands.error(1, 1);
        let mut b = Counters::default();
        // Counting an index beyond the length grows the vector.
        b.commands.sent(2);
        b.commands.completed(2, 1);
        b.commands.sent(0);
        a.merge(&b);
        assert_eq!(a.commands.len(), 3);
        let want = |sent, completed, errors, misses| CommandCount {
            sent,
            completed,
            errors,
            misses,
        };
        assert_eq!(a.commands.get(0), want(3, 1, 0, 1));
        assert_eq!(a.commands.get(1), want(1, 0, 1, 0));
        assert_eq!(a.commands.get(2), want(1, 1, 0, 0));
        assert_eq!(a.commands.get(9), CommandCount::default());
        let v = serde_json::to_value(&a).unwrap();
        assert_eq!(v["commands"][0]["sent"], 3);
        assert_eq!(v["commands"][1]["errors"], 1);
        assert_eq!(v["misses"], 0);
        let back: Counters = serde_json::from_value(v).unwrap();
        assert_eq!(back, a);
        // Without commands the field is absent, and results without it read back empty.
        let v = serde_json::to_value(Counters::default()).unwrap();
        assert!(v.get("commands").is_none());
        let mut old = v.as_object().unwrap().clone();
        old.remove("misses");
        let back: Counters = serde_json::from_value(old.into()).unwrap();
        assert_eq!(back, Counters::default());
    }
}
