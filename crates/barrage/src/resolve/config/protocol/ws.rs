//! WebSocket's vertical: `--subprotocol`, `--binary`, `-H` on the handshake, the message
//! flags; a reply is one message (`--expect echo` or `none`).

use crate::resolve::cli::RunArgs;
use crate::resolve::config::vertical::MAX_MESSAGE;
use crate::resolve::config::vertical::{
    flag, request_usage, Flag, Recording, Said, Vertical, Words, EXPECT, HEADER, MESSAGE,
    MESSAGE_FILE, VERIFY,
};
use crate::resolve::redact::Secrets;
use crate::resolve::url::{self, Scheme};
use crate::usage::Usage;
use barrage_engine::{escape, ProtocolSpec, WsSpec};
use barrage_scenario::protocol;

pub(super) static VERTICAL: Vertical = Vertical {
    rows: &[&protocol::WS],
    flags: &FLAGS,
    own_words: None,
    check,
    spec,
    said,
    record,
};

const FLAGS: [Flag; 7] = [
    HEADER,
    flag("--subprotocol", |a| a.ws.subprotocol.is_some()),
    flag("--binary", |a| a.ws.binary),
    MESSAGE,
    MESSAGE_FILE,
    EXPECT,
    VERIFY,
];

fn check(a: &RunArgs, _: Scheme) -> Result<(), Usage> {
    if let Some(e) = &a.msg.expect {
        if e != "echo" && e != "none" {
            return Err(Usage::value(
                "--expect",
                e,
                "a ws:// reply is one message; use --expect echo or none",
            ));
        }
    }
    Ok(())
}

fn spec(
    a: &RunArgs,
    url: &url::Url,
    words: &Words,
    headers_filled: &[(String, String)],
    _: &mut Secrets,
) -> Result<(ProtocolSpec, Option<String>), Usage> {
    let host = url.host_header();
    // Build one handshake now: bad headers fail here, not on every connection.
    let handshake = barrage_engine::ws::HandshakeSpec {
        host_header: &host,
        path: &url.path,
        headers: headers_filled,
        subprotocol: a.ws.subprotocol.as_deref(),
    };
    let key = barrage_engine::ws::new_key([0; 16]);
    barrage_engine::ws::handshake_request(&handshake, &key, &mut Vec::new())
        .map_err(request_usage)?;
    let spec = WsSpec {
        host_header: host,
        path: url.path.clone(),
        headers: words.headers.clone(),
        subprotocol: a.ws.subprotocol.clone(),
        binary: a.ws.binary,
        max_message: MAX_MESSAGE,
        message: escape(&words.message),
        expect: words.expect.clone(),
        verify: a.msg.verify,
    };
    Ok((ProtocolSpec::Ws(spec), None))
}

fn said(spec: &ProtocolSpec) -> Said<'_> {
    let ProtocolSpec::Ws(s) = spec else {
        return Said::default();
    };
    Said {
        message: Some(&s.message),
        subprotocol: s.subprotocol.clone(),
        ..Said::default()
    }
}

fn record(spec: &mut ProtocolSpec, r: &Recording) {
    if let ProtocolSpec::Ws(s) = spec {
        (r.hide)(&mut s.message, r.message_len);
        s.path = crate::resolve::redact::url(&s.path, r.redact);
    }
}
