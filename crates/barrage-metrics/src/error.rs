//! Error classes: the closed vocabulary every failure is counted under.
//!
//! A failure under load is data, never a reason to stop: the engine maps each failed connect,
//! broken connection, timed-out or mismatched exchange and unsent message to exactly one class
//! here and counts it. The set is closed so that every output can list all of them.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// One class of failure. `as_str` is the stable name used in every output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorClass {
    /// The target actively refused the connection (RST to SYN, `ECONNREFUSED`).
    Refused,
    /// The connect did not complete within the connect timeout.
    ConnectTimeout,
    /// The connection was reset by the peer (`ECONNRESET`, `EPIPE`).
    Reset,
    /// The peer closed the connection (FIN) while it was in use.
    ClosedByPeer,
    /// An exchange was not complete within `--timeout`.
    Timeout,
    /// A reply differed from what was expected (`--verify`).
    Mismatch,
    /// This process ran out of file descriptors (`EMFILE`, `ENFILE`).
    LocalFdExhausted,
    /// No local port was free for a new connection (`EADDRNOTAVAIL`).
    LocalPortExhausted,
    /// Anything else, e.g. an unreachable network.
    Other,
    /// A due message could not be sent because the backlog was full (open-loop modes).
    NotSent,
    /// The peer broke the protocol: a malformed HTTP response or WebSocket frame, a failed
    /// WebSocket handshake, headers over the limits.
    Protocol,
    /// An HTTP status outside `--expect-status`.
    UnexpectedStatus,
    /// The server closed a WebSocket with a code other than 1000/1001.
    WsClose,
    /// The server answered a request with an error reply (redis `-ERR ...`, memcached
    /// `ERROR`/`CLIENT_ERROR`/`SERVER_ERROR`): the exchange is complete but failed.
    ReplyError,
    /// TLS: the server's certificate has expired (or is not valid yet).
    TlsExpired,
    /// TLS: the certificate chain does not lead to a trusted CA.
    TlsUnknownCa,
    /// TLS: the certificate is not valid for the target's host name.
    TlsBadName,
    /// TLS: the handshake did not complete within the connect timeout.
    TlsHandshakeTimeout,
    /// TLS: any other TLS failure (alert, bad record, ...).
    TlsOther,
    /// HTTP/2: a stream the server's GOAWAY left unprocessed, or a connection it ended with
    /// an error code.
    Goaway,
    /// HTTP/2: a stream the server reset (RST_STREAM; the codes are counted apart).
    StreamReset,
    /// gRPC: a call that ended with a non-OK `grpc-status`, one class per code (1 to 16, in
    /// code order; a code past 16 counts as `grpc.unknown`, `totals.grpc.status` keeps it,
    /// up to 65535).
    GrpcCancelled,
    GrpcUnknown,
    GrpcInvalidArgument,
    GrpcDeadlineExceeded,
    GrpcNotFound,
    GrpcAlreadyExists,
    GrpcPermissionDenied,
    GrpcResourceExhausted,
    GrpcFailedPrecondition,
    GrpcAborted,
    GrpcOutOfRange,
    GrpcUnimplemented,
    GrpcInternal,
    GrpcUnavailable,
    GrpcDataLoss,
    GrpcUnauthenticated,
    /// MQTT: the broker refused the connection (a CONNACK code other than 0) or the
    /// subscription (a SUBACK code of 0x80 or more); the codes are counted apart.
    MqttRefused,
    /// A script (`--script`, a scenario's `script =`) failed: a function raised an error,
    /// returned what it may not, or ran out of its instruction budget.
    ScriptError,
}

impl ErrorClass {
    pub const COUNT: usize = 39;
    pub const ALL: [ErrorClass; Self::COUNT] = [
        Self::Refused,
        Self::ConnectTimeout,
        Self::Reset,
        Self::ClosedByPeer,
        Self::Timeout,
        Self::Mismatch,
        Self::LocalFdExhausted,
        Self::LocalPortExhausted,
        Self::Other,
        Self::NotSent,
        Self::Protocol,
        Self::UnexpectedStatus,
        Self::WsClose,
        Self::ReplyError,
        Self::TlsExpired,
        Self::TlsUnknownCa,
        Self::TlsBadName,
        Self::TlsHandshakeTimeout,
        Self::TlsOther,
        Self::Goaway,
        Self::StreamReset,
        Self::GrpcCancelled,
        Self::GrpcUnknown,
        Self::GrpcInvalidArgument,
        Self::GrpcDeadlineExceeded,
        Self::GrpcNotFound,
        Self::GrpcAlreadyExists,
        Self::GrpcPermissionDenied,
        Self::GrpcResourceExhausted,
        Self::GrpcFailedPrecondition,
        Self::GrpcAborted,
        Self::GrpcOutOfRange,
        Self::GrpcUnimplemented,
        Self::GrpcInternal,
        Self::GrpcUnavailable,
        Self::GrpcDataLoss,
        Self::GrpcUnauthenticated,
        Self::MqttRefused,
        Self::ScriptError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Refused => "refused",
            Self::ConnectTimeout => "connect_timeout",
            Self::Reset => "reset",
            Self::ClosedByPeer => "closed_by_peer",
            Self::Timeout => "timeout",
            Self::Mismatch => "mismatch",
            Self::LocalFdExhausted => "local_fd_exhausted",
            Self::LocalPortExhausted => "local_port_exhausted",
            Self::Other => "other",
            Self::NotSent => "not_sent",
            Self::Protocol => "protocol",
            Self::UnexpectedStatus => "unexpected_status",
            Self::WsClose => "ws_close",
            Self::ReplyError => "reply_error",
            Self::TlsExpired => "tls_expired",
            Self::TlsUnknownCa => "tls_unknown_ca",
            Self::TlsBadName => "tls_bad_name",
            Self::TlsHandshakeTimeout => "tls_handshake_timeout",
            Self::TlsOther => "tls_other",
            Self::Goaway => "goaway",
            Self::StreamReset => "stream_reset",
            Self::GrpcCancelled => "grpc.cancelled",
            Self::GrpcUnknown => "grpc.unknown",
            Self::GrpcInvalidArgument => "grpc.invalid_argument",
            Self::GrpcDeadlineExceeded => "grpc.deadline_exceeded",
            Self::GrpcNotFound => "grpc.not_found",
            Self::GrpcAlreadyExists => "grpc.already_exists",
            Self::GrpcPermissionDenied => "grpc.permission_denied",
            Self::GrpcResourceExhausted => "grpc.resource_exhausted",
            Self::GrpcFailedPrecondition => "grpc.failed_precondition",
            Self::GrpcAborted => "grpc.aborted",
            Self::GrpcOutOfRange => "grpc.out_of_range",
            Self::GrpcUnimplemented => "grpc.unimplemented",
            Self::GrpcInternal => "grpc.internal",
            Self::GrpcUnavailable => "grpc.unavailable",
            Self::GrpcDataLoss => "grpc.data_loss",
            Self::GrpcUnauthenticated => "grpc.unauthenticated",
            Self::MqttRefused => "mqtt.refused",
            Self::ScriptError => "script.error",
        }
    }

    /// The class of a call that ended with gRPC status `code` (`None` for 0, OK).
    pub fn grpc(code: u32) -> Option<Self> {
        match code {
            0 => None,
            1..=16 => Some(Self::ALL[Self::GrpcCancelled.index() + code as usize - 1]),
            _ => Some(Self::GrpcUnknown),
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == name)
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Count per error class. Serialized as an object with every class name plus `total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorCounts([u64; ErrorClass::COUNT]);

impl Default for ErrorCounts {
    fn default() -> Self {
        Self([0; ErrorClass::COUNT])
    }
}

impl ErrorCounts {
    #[inline]
    pub fn add(&mut self, class: ErrorClass, n: u64) {
        self.0[class.index()] += n;
    }

    pub fn get(&self, class: ErrorClass) -> u64 {
        self.0[class.index()]
    }

    /// All errors, `not_sent` included.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    pub fn merge(&mut self, other: &ErrorCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }

    /// Classes with a non-zero count, in declaration order.
    pub fn nonzero(&self) -> impl Iterator<Item = (ErrorClass, u64)> + '_ {
        ErrorClass::ALL
            .into_iter()
            .map(|c| (c, self.get(c)))
            .filter(|(_, n)| *n > 0)
    }
}

impl Serialize for ErrorCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(ErrorClass::COUNT + 1))?;
        for c in ErrorClass::ALL {
            m.serialize_entry(c.as_str(), &self.get(c))?;
        }
        m.serialize_entry("total", &self.total())?;
        m.end()
    }
}

impl<'de> Deserialize<'de> for ErrorCounts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ErrorCounts;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of error class counts")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ErrorCounts, A::Error> {
                let mut out = ErrorCounts::default();
                while let Some((k, v)) = map.next_entry::<String, u64>()? {
                    // `total` is derived; unknown classes from newer versions are ignored.
                    if let Some(c) = ErrorClass::from_name(&k) {
                        out.add(c, v);
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

/// How many distinct reasons are kept per class, and how long one may be (bytes).
pub const REASONS_PER_CLASS: usize = 3;
pub const REASON_MAX_LEN: usize = 200;

/// What an error said, for the first few distinct reasons of each class: a connection's
/// `protocol` error names the frame or byte that broke the rule, an I/O error its errno. The
/// counts are in [`ErrorCounts`]; this keeps what they cannot (bounded: at most
/// [`REASONS_PER_CLASS`] per class, each cut at [`REASON_MAX_LEN`] bytes). A merge keeps, per
/// class, the earliest seen (then by text), so any order of merging gives the same list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorReasons(Vec<ErrorReason>);

/// One reason: its class, its text, and when it was first seen (ms since the run's start).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorReason {
    #[serde(with = "class_name")]
    pub class: ErrorClass,
    pub reason: String,
    pub first_ms: u64,
}

mod class_name {
    use super::ErrorClass;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(c: &ErrorClass, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(c.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ErrorClass, D::Error> {
        let name = String::deserialize(d)?;
        // A class from a newer version reads as `other`, its text kept.
        Ok(ErrorClass::from_name(&name).unwrap_or(ErrorClass::Other))
    }
}

impl ErrorReasons {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `class` has room for another reason (so a caller need not format one).
    pub fn wants(&self, class: ErrorClass) -> bool {
        self.0.iter().filter(|r| r.class == class).count() < REASONS_PER_CLASS
    }

    /// `reason` was seen for `class` at `at_ms`: kept when new and there is room (or it is
    /// earlier than one kept).
    pub fn note(&mut self, class: ErrorClass, reason: &str, at_ms: u64) {
        let mut cut = reason.trim();
        if cut.len() > REASON_MAX_LEN {
            let mut end = REASON_MAX_LEN;
            while !cut.is_char_boundary(end) {
                end -= 1;
            }
            cut = &cut[..end];
        }
        if let Some(r) = self
            .0
            .iter_mut()
            .find(|r| r.class == class && r.reason == cut)
        {
            r.first_ms = r.first_ms.min(at_ms);
            return;
        }
        self.0.push(ErrorReason {
            class,
            reason: cut.to_string(),
            first_ms: at_ms,
        });
        self.settle();
    }

    pub fn merge(&mut self, o: &ErrorReasons) {
        if o.0.is_empty() {
            return;
        }
        for r in &o.0 {
            match self
                .0
                .iter_mut()
                .find(|k| k.class == r.class && k.reason == r.reason)
            {
                Some(k) => k.first_ms = k.first_ms.min(r.first_ms),
                None => self.0.push(r.clone()),
            }
        }
        self.settle();
    }

    /// Class order, earliest first; at most `REASONS_PER_CLASS` of a class.
    fn settle(&mut self) {
        self.0.sort_by(|a, b| {
            (a.class, a.first_ms, &a.reason).cmp(&(b.class, b.first_ms, &b.reason))
        });
        let mut kept = 0;
        let mut last = None;
        self.0.retain(|r| {
            if last != Some(r.class) {
                last = Some(r.class);
                kept = 0;
            }
            kept += 1;
            kept <= REASONS_PER_CLASS
        });
    }

    /// The reasons of `class`, earliest first.
    pub fn of(&self, class: ErrorClass) -> impl Iterator<Item = &ErrorReason> + '_ {
        self.0.iter().filter(move |r| r.class == class)
    }

    /// The first reason `class` gave, if any.
    pub fn first(&self, class: ErrorClass) -> Option<&str> {
        self.of(class).next().map(|r| r.reason.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = &ErrorReason> + '_ {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        for c in ErrorClass::ALL {
            assert_eq!(ErrorClass::from_name(c.as_str()), Some(c));
        }
        let mut names: Vec<_> = ErrorClass::ALL.iter().map(|c| c.as_str()).collect();
        names.dedup();
        assert_eq!(names.len(), ErrorClass::COUNT);
    }

    #[test]
    fn all_lists_every_class_in_declaration_order() {
        // `index()` is the discriminant: ALL must follow the declaration order.
        for (i, c) in ErrorClass::ALL.into_iter().enumerate() {
            assert_eq!(c.index(), i, "{c}");
        }
        assert_eq!(
            ErrorClass::from_name("reply_error"),
            Some(ErrorClass::ReplyError)
        );
        let mut e = ErrorCounts::default();
        e.add(ErrorClass::ReplyError, 4);
        let v = serde_json::to_value(e).unwrap();
        assert_eq!(v["reply_error"], 4);
        // Results written before the class existed read as zero.
        let old: ErrorCounts = serde_json::from_str(r#"{"timeout": 1, "total": 1}"#).unwrap();
        assert_eq!(old.get(ErrorClass::ReplyError), 0);
    }

    #[test]
    fn grpc_codes_map_to_their_classes() {
        assert_eq!(ErrorClass::grpc(0), None);
        assert_eq!(ErrorClass::grpc(1), Some(ErrorClass::GrpcCancelled));
        assert_eq!(ErrorClass::grpc(4), Some(ErrorClass::GrpcDeadlineExceeded));
        assert_eq!(ErrorClass::grpc(14), Some(ErrorClass::GrpcUnavailable));
        assert_eq!(ErrorClass::grpc(16), Some(ErrorClass::GrpcUnauthenticated));
        assert_eq!(ErrorClass::grpc(99), Some(ErrorClass::GrpcUnknown));
        assert_eq!(
            ErrorClass::from_name("grpc.resource_exhausted"),
            Some(ErrorClass::GrpcResourceExhausted)
        );
        for code in 1..=16 {
            let c = ErrorClass::grpc(code).unwrap();
            assert_eq!(
                c.as_str().strip_prefix("grpc.").unwrap().to_uppercase(),
                crate::counters::grpc_code_name(code),
            );
        }
    }

    #[test]
    fn counts_serialize_every_class_and_total() {
        let mut e = ErrorCounts::default();
        e.add(ErrorClass::Timeout, 3);
        e.add(ErrorClass::NotSent, 2);
        let v = serde_json::to_value(e).unwrap();
        assert_eq!(v["timeout"], 3);
        assert_eq!(v["not_sent"], 2);
        assert_eq!(v["refused"], 0);
        assert_eq!(v["total"], 5);
        let back: ErrorCounts = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn reasons_keep_the_first_few_per_class_in_any_merge_order() {
        let mut a = ErrorReasons::default();
        a.note(ErrorClass::Protocol, "bad frame", 30);
        a.note(ErrorClass::Protocol, "bad frame", 10);
        a.note(
            ErrorClass::Reset,
            "Connection reset by peer (os error 104)",
            5,
        );
        let mut b = ErrorReasons::default();
        for (i, w) in ["w1", "w2", "w3", "w4"].iter().enumerate() {
            b.note(ErrorClass::Protocol, w, 20 + i as u64);
        }
        assert_eq!(b.of(ErrorClass::Protocol).count(), REASONS_PER_CLASS);
        let mut ab = a.clone();
        ab.merge(&b);
        let mut ba = b.clone();
        ba.merge(&a);
        assert_eq!(ab, ba);
        let p: Vec<_> = ab
            .of(ErrorClass::Protocol)
            .map(|r| r.reason.as_str())
            .collect();
        assert_eq!(p, ["bad frame", "w1", "w2"]);
        assert_eq!(ab.of(ErrorClass::Protocol).next().unwrap().first_ms, 10);
        assert!(!ab.wants(ErrorClass::Protocol));
        assert!(ab.wants(ErrorClass::Timeout));
        let long = "é".repeat(REASON_MAX_LEN);
        ab.note(ErrorClass::Other, &long, 1);
        assert!(ab.of(ErrorClass::Other).next().unwrap().reason.len() <= REASON_MAX_LEN);
        let v = serde_json::to_value(&ab).unwrap();
        assert_eq!(v[0]["class"], "reset");
        let back: ErrorReasons = serde_json::from_value(v).unwrap();
        assert_eq!(back, ab);
    }
}
