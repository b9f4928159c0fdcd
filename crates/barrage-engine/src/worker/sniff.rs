//! What the first bytes of a server's answer say about the target's scheme, when a
//! connection fails on them before anything completed: `http://` at an HTTP/2 port, `redis://`
//! at an HTTP server. The worker then ends the run with the remedy (as for a TLS answer to a
//! plain-text client) instead of failing every request the same way.

use crate::plan::Protocol;

/// The remedy, when `data` (the bytes a connection failed on) is plainly another protocol's
/// answer than the one `protocol` speaks.
pub(super) fn misdirected(protocol: &Protocol, data: &[u8]) -> Option<&'static str> {
    let ours = match protocol {
        Protocol::Http(_) | Protocol::HttpAuto(_) => Speaks::Http1,
        // A WebSocket handshake is answered in HTTP/1.1 (its refusals too).
        Protocol::Ws(_) => Speaks::Http1,
        Protocol::H2(_) => Speaks::H2,
        Protocol::Redis(_) => Speaks::Resp,
        Protocol::Memcache(_) => Speaks::Memcache,
        Protocol::Mqtt(_) => Speaks::Mqtt,
        // Raw TCP's replies are whatever the user's server says; a protocol not listed here
        // is not told apart from the others.
        _ => return None,
    };
    remedy(ours, data)
}

/// The remedy for a client speaking `ours` that got `data`.
fn remedy(ours: Speaks, data: &[u8]) -> Option<&'static str> {
    let theirs = speaks(data)?;
    if theirs == ours {
        return None;
    }
    Some(match theirs {
        Speaks::Http1 => "the server answered in HTTP/1.1: use http:// (or ws:// for WebSocket)",
        Speaks::H2 => "the server answered with HTTP/2 frames: use h2c:// (or grpc:// for gRPC)",
        Speaks::Resp => "the server answered in the redis protocol (RESP): use redis://",
        Speaks::Memcache => "the server answered in the memcached text protocol: use memcache://",
        Speaks::Mqtt => "the server answered with an MQTT CONNACK: use mqtt://",
    })
}

#[derive(PartialEq, Eq, Debug)]
enum Speaks {
    Http1,
    H2,
    Resp,
    Memcache,
    Mqtt,
}

/// The protocol `data` is plainly the start of an answer in, if any.
fn speaks(data: &[u8]) -> Option<Speaks> {
    if data.starts_with(b"HTTP/1.") {
        return Some(Speaks::Http1);
    }
    // A server's first HTTP/2 frame is its SETTINGS (a GOAWAY when it refuses the preface):
    // a 24-bit length, the type, flags, stream 0.
    if data.len() >= 9 {
        let len = u32::from_be_bytes([0, data[0], data[1], data[2]]);
        let stream = u32::from_be_bytes([data[5], data[6], data[7], data[8]]) & 0x7fff_ffff;
        let settings = data[3] == 4 && data[4] & !1 == 0 && len.is_multiple_of(6);
        let goaway = data[3] == 7 && data[4] == 0 && len >= 8;
        if stream == 0 && len <= 16_384 && (settings || goaway) {
            return Some(Speaks::H2);
        }
    }
    for head in [
        &b"ERROR\r\n"[..],
        b"CLIENT_ERROR ",
        b"SERVER_ERROR ",
        b"VALUE ",
        b"STORED\r\n",
        b"END\r\n",
    ] {
        if data.starts_with(head) {
            return Some(Speaks::Memcache);
        }
    }
    if let (Some(b'+' | b'-' | b'$' | b'*' | b':'), Some(eol)) =
        (data.first(), data.windows(2).position(|w| w == b"\r\n"))
    {
        if data[1..eol].iter().all(|b| (0x20..0x7f).contains(b)) {
            return Some(Speaks::Resp);
        }
    }
    if data.len() >= 4 && data[0] == 0x20 && data[1] == 2 && data[2] & !1 == 0 && data[3] <= 5 {
        return Some(Speaks::Mqtt);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_told_apart_by_their_first_bytes() {
        assert_eq!(
            speaks(b"HTTP/1.1 426 Upgrade Required\r\n"),
            Some(Speaks::Http1)
        );
        // serve h2's SETTINGS (3 settings) and a GOAWAY.
        let settings = [0, 0, 18, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100];
        assert_eq!(speaks(&settings), Some(Speaks::H2));
        let goaway = [0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        assert_eq!(speaks(&goaway), Some(Speaks::H2));
        assert_eq!(
            speaks(b"-ERR unknown command 'GET'\r\n"),
            Some(Speaks::Resp)
        );
        assert_eq!(speaks(b"+PONG\r\n"), Some(Speaks::Resp));
        assert_eq!(speaks(b"ERROR\r\n"), Some(Speaks::Memcache));
        assert_eq!(speaks(&[0x20, 2, 0, 0]), Some(Speaks::Mqtt));
        assert_eq!(speaks(b"hello\r\n"), None);
        assert_eq!(speaks(b"+no end of line"), None);
        // An HTTP/2 frame on a stream other than 0 is not a server's first.
        assert_eq!(speaks(&[0, 0, 6, 4, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]), None);
    }

    #[test]
    fn the_remedy_names_the_scheme_and_never_the_protocol_spoken() {
        let h2 = [0, 0, 0, 4, 0, 0, 0, 0, 0];
        assert!(remedy(Speaks::Resp, &h2).unwrap().contains("h2c://"));
        assert!(remedy(Speaks::Resp, b"HTTP/1.1 400 Bad Request\r\n")
            .unwrap()
            .contains("http://"));
        assert_eq!(remedy(Speaks::Resp, b"-ERR wrong\r\n"), None);
        assert!(remedy(Speaks::Http1, b"-ERR wrong\r\n")
            .unwrap()
            .contains("redis://"));
        assert_eq!(misdirected(&Protocol::Tcp, &h2), None);
    }
}
