//! The port each protocol's vertical (`protocol/`: `tcp.rs`, `http.rs`, `grpc.rs`, `ws.rs`,
//! `kv.rs`, `mqtt.rs`) is written against: [`Vertical`] (its flags, its own checks, its
//! spec), the flags several protocols take, the user's [`Words`], and what the verticals share
//! (headers, statuses, what a reply is, files read with a cap). `protocol.rs` dispatches on the
//! target's.

use crate::resolve::cli::RunArgs;
use crate::resolve::redact::Secrets;
use crate::resolve::url::{self, Scheme};
use crate::usage::Usage;
use barrage_engine::{Framing, ProtocolSpec, StatusSet};
use barrage_scenario::protocol::ProtocolInfo;
use std::time::Duration;

/// The longest message or body file read (16 MiB).
pub const MAX_MESSAGE: u64 = 16 << 20;
/// `--timeout` when not given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// The binary's part of one protocol (its vertical): the flags it takes, its own checks of
/// them, and its spec built from them. `protocol.rs` lists one per row of the protocol table
/// and dispatches on the target's.
pub(super) struct Vertical {
    /// The rows of the protocol table it serves (HTTP serves `http` and `h2c`).
    pub rows: &'static [&'static ProtocolInfo],
    /// The flags it takes; a flag several protocols take is listed by each.
    pub flags: &'static [Flag],
    /// How it says what it sends, for other protocols' message flags (`a redis:// request
    /// is --command`).
    pub own_words: Option<&'static str>,
    /// Its own checks of the flags (which combinations clash, what it refuses in its own
    /// words), before other protocols' flags are refused.
    pub check: fn(&RunArgs, Scheme) -> Result<(), Usage>,
    /// Its spec from the flags, and a note for the run header.
    pub spec: SpecFn,
    /// What the result's config says of its spec's words.
    pub said: fn(&ProtocolSpec) -> Said<'_>,
    /// Its spec as the result records it: messages and bodies hidden under `--secret-body`,
    /// query tokens of a path redacted.
    pub record: fn(&mut ProtocolSpec, &Recording),
}

/// What the result's config says of a protocol's own words ([`Vertical::said`]).
#[derive(Default)]
pub(super) struct Said<'a> {
    /// The message as the spec writes it, when the protocol sends one of the flags' kind.
    pub message: Option<&'a str>,
    pub first_message: Option<&'a str>,
    /// What a reply is; `None`: the plan's framing says.
    pub expect: Option<String>,
    pub subprotocol: Option<String>,
    pub commands: Vec<String>,
    /// HTTP/2 streams per connection, where they apply.
    pub streams: Option<u32>,
    /// The connections only hold (MQTT without `--publish`).
    pub holds: bool,
}

/// How a spec is recorded ([`Vertical::record`]).
pub(super) struct Recording<'a> {
    /// The filled lengths of the message and the first message (what `hide` shows).
    pub message_len: usize,
    pub first_len: Option<usize>,
    /// Shows a text by its length under `--secret-body`; leaves it otherwise.
    pub hide: &'a dyn Fn(&mut String, usize),
    pub secret_body: bool,
    /// `--redact`: more query parameters to hide in a path.
    pub redact: &'a [String],
}

/// A spec without its own words recorded as written.
pub(super) fn record_as_is(_: &mut ProtocolSpec, _: &Recording) {}

/// A protocol's spec (with its run-header note) from the flags, the URL, the words
/// (`--message`, `-H`, ...), the headers with their secrets filled, and the secrets.
pub(super) type SpecFn = fn(
    &RunArgs,
    &url::Url,
    &Words,
    &[(String, String)],
    &mut Secrets,
) -> Result<(ProtocolSpec, Option<String>), Usage>;

/// A flag, by the name an error shows, and whether it was given.
pub(super) struct Flag {
    pub name: &'static str,
    pub given: fn(&RunArgs) -> bool,
    /// Says what a raw TCP or WebSocket message is (refused with the target's own words).
    pub message: bool,
}

pub(super) const fn flag(name: &'static str, given: fn(&RunArgs) -> bool) -> Flag {
    Flag {
        name,
        given,
        message: false,
    }
}

const fn message_flag(name: &'static str, given: fn(&RunArgs) -> bool) -> Flag {
    Flag {
        name,
        given,
        message: true,
    }
}

// Flags more than one protocol takes.
pub(super) const MESSAGE: Flag = message_flag("-m/--message", |a| a.msg.message.is_some());
pub(super) const MESSAGE_FILE: Flag =
    message_flag("--message-file", |a| a.msg.message_file.is_some());
pub(super) const FIELDS: Flag = message_flag("--fields", |a| a.msg.fields.is_some());
pub(super) const FIRST_MESSAGE: Flag =
    message_flag("--first-message", |a| a.msg.first_message.is_some());
pub(super) const EXPECT: Flag = message_flag("--expect", |a| a.msg.expect.is_some());
pub(super) const MAX_FRAME: Flag = message_flag("--max-frame", |a| a.msg.max_frame.is_some());
pub(super) const VERIFY: Flag = message_flag("--verify", |a| a.msg.verify);
pub(super) const HEADER: Flag = flag("-H/--header", |a| !a.http.headers.is_empty());
pub(super) const STREAMS: Flag = flag("--streams", |a| a.http.streams.is_some());
/// HTTP/2's settings (HTTP/2 and gRPC).
pub(super) const H2_SETTINGS: Flag =
    flag("--h2-window, --h2-conn-window and --h2-header-table", |a| {
        let h = &a.http;
        h.h2_window.is_some() || h.h2_conn_window.is_some() || h.h2_header_table.is_some()
    });
pub(super) const COMMAND: Flag = flag("--command", |a| !a.kv.command.is_empty());

/// `-H 'Name: value'` into pairs; the HTTP codec checks names and values for injection.
pub(super) fn headers(raw: &[String]) -> Result<Vec<(String, String)>, Usage> {
    raw.iter()
        .map(|h| {
            if let Some(pseudo) = h.trim_start().strip_prefix(':') {
                return Err(pseudo_header(h, pseudo));
            }
            let (n, v) = h.split_once(':').ok_or_else(|| {
                Usage::value("-H", format!("'{h}'"), "write a header as 'Name: value'")
            })?;
            let n = n.trim();
            if n.is_empty() {
                return Err(Usage::value(
                    "-H",
                    format!("'{h}'"),
                    "the header name is empty",
                ));
            }
            Ok((n.to_string(), v.trim().to_string()))
        })
        .collect()
}

/// `-H ':path: /x'`: an HTTP/2 pseudo-header is made from the URL and the flags, never given.
fn pseudo_header(h: &str, rest: &str) -> Usage {
    let name = rest
        .split(':')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let instead = match name.as_str() {
        "path" => "the path (and query) is the URL's: put it in the target URL",
        "method" => "give the method with -X/--method",
        "authority" => {
            "the authority is the URL's host: put it in the target URL (or -H 'Host: NAME')"
        }
        "scheme" => "the scheme is the URL's (http:// or https://)",
        "status" => ":status is a reply's; --expect-status says which count as success",
        _ => "pseudo-headers come from the URL and -X",
    };
    Usage::value(
        "-H",
        format!("'{h}'"),
        format!(
            "pseudo-headers (:path, :method, :authority, :scheme) cannot be set with -H; {instead}"
        ),
    )
}

/// The user's own bytes and words for the spec: placeholders (`{secret:NAME}`) unfilled.
pub(super) struct Words {
    pub(super) message: Vec<u8>,
    /// `message` is `--fields`' text.
    pub(super) fields: bool,
    pub(super) first: Option<Vec<u8>>,
    pub(super) expect: String,
    pub(super) headers: Vec<(String, String)>,
}

/// A request that cannot be built, against the flag the error says it is about.
pub(super) fn request_usage(e: barrage_engine::http::RequestError) -> Usage {
    use barrage_engine::http::Field;
    let flag = match e.field() {
        Field::Method => "-X/--method",
        Field::Target => "target",
        Field::Header => "-H/--header",
        Field::Body => "--body",
        Field::Subprotocol => "--subprotocol",
    };
    let hint = match &e {
        barrage_engine::http::RequestError::HandshakeHeader(h) if h == "Sec-WebSocket-Protocol" => {
            " (offer one with --subprotocol NAME)"
        }
        _ => "",
    };
    Usage::new(flag, format!("{e}{hint}"))
}

/// `--expect-status 200,204`, `2xx,3xx`, `200-299`.
pub fn status_set(list: &str) -> Result<StatusSet, Usage> {
    StatusSet::parse(list).map_err(|e| Usage::value("--expect-status", list, e))
}

/// A message or body file, read through a bounded reader: its size on disk is no bound
/// (`/dev/zero`, a pipe or a file that grows report 0 or less than they give).
/// `shown`: the value as the user wrote it (`@FILE` for `--body`).
pub(super) fn read_capped(
    flag: &str,
    path: &std::path::Path,
    shown: &dyn std::fmt::Display,
    what: &str,
) -> Result<Vec<u8>, Usage> {
    use std::io::Read as _;
    let p = shown;
    let fail = |e: std::io::Error| Usage::value(flag, p, io_reason(&e));
    let file = std::fs::File::open(path).map_err(fail)?;
    let mut data = Vec::new();
    file.take(MAX_MESSAGE + 1)
        .read_to_end(&mut data)
        .map_err(fail)?;
    if data.len() as u64 > MAX_MESSAGE {
        return Err(Usage::value(
            flag,
            p,
            format!("more than the 16 MiB {what} may have; give a smaller file"),
        ));
    }
    Ok(data)
}

pub(super) fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// `--expect SPEC`.
pub fn expect(spec: &str) -> Result<Framing, Usage> {
    barrage_engine::spec::parse_expect(spec).map_err(|why| Usage::value("--expect", spec, why))
}
