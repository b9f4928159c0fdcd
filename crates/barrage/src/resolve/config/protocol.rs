//! The protocol's flags checked: `--command`, headers, requests, statuses, what a reply is.

use super::{DEFAULT_TIMEOUT, MAX_MESSAGE};
use crate::resolve::cli::RunArgs;
use crate::resolve::redact::{self, Secrets};
use crate::resolve::url::{self, Scheme};
use crate::usage::Usage;
use barrage_engine::{escape, Framing, HttpVersion, ProtocolSpec, StatusSet};

/// The `--command` mix (or the protocol's default command), checked by compiling it.
pub(super) fn commands(
    a: &RunArgs,
    default: &str,
    compile: fn(
        &[String],
    )
        -> Result<barrage_engine::redis::Commands, barrage_engine::redis::CommandError>,
) -> Result<Vec<String>, Usage> {
    let given = if a.command.is_empty() {
        vec![default.to_string()]
    } else {
        a.command.clone()
    };
    compile(&given).map_err(|e| Usage::new("--command", e))?;
    Ok(given)
}

/// Flags that belong to other protocols are mistakes, not silently ignored.
pub(super) fn check_flags_fit(a: &RunArgs, scheme: Scheme) -> Result<(), Usage> {
    let http = matches!(scheme, Scheme::Http | Scheme::Https | Scheme::H2c);
    let ws = matches!(scheme, Scheme::Ws | Scheme::Wss);
    let grpc = matches!(scheme, Scheme::Grpc | Scheme::Grpcs);
    let s = scheme.name();
    let only = |flag: &str, what: &str| {
        Usage::says(flag, format!("applies to {what} targets, not {s}://"))
    };
    if !grpc {
        for (flag, on) in [
            ("--proto", a.proto.is_some()),
            ("--import-path", !a.import_path.is_empty()),
            ("--data", a.data.is_some()),
            ("--data-bin", a.data_bin.is_some()),
            ("--reflect", a.reflect),
        ] {
            if on {
                return Err(only(flag, "grpc:// and grpcs://"));
            }
        }
    }
    if a.reflect && a.proto.is_some() {
        return Err(Usage::says(
            "--reflect",
            "and --proto both say where the method is described: give one",
        ));
    }
    if !a.import_path.is_empty() && a.proto.is_none() {
        return Err(Usage::says(
            "--import-path",
            "says where --proto's imports are: give --proto FILE",
        ));
    }
    if grpc {
        for (flag, set) in [
            ("-X/--method", a.method.is_some()),
            ("--body", a.body.is_some()),
            ("--expect-status", a.expect_status.is_some()),
            ("--http2", a.http2),
            ("--http1.1", a.http1_1),
        ] {
            if set {
                return Err(Usage::says(
                    flag,
                    format!(
                        "does not apply to {s}:// targets: a gRPC call is a POST over HTTP/2 \
                         whose message is --data (or --data-bin)"
                    ),
                ));
            }
        }
    }
    if !http {
        if a.method.is_some() {
            return Err(only("-X/--method", "http(s)://"));
        }
        if a.body.is_some() {
            return Err(only("--body", "http(s)://"));
        }
        if a.expect_status.is_some() {
            return Err(only("--expect-status", "http(s)://"));
        }
    }
    if !http && !ws && !grpc && !a.headers.is_empty() {
        return Err(only("-H/--header", "http(s)://, ws(s):// and grpc(s)://"));
    }
    if !http && !grpc && a.streams.is_some() {
        return Err(only("--streams", "http(s)://, h2c:// and grpc(s)://"));
    }
    if !http {
        for (flag, on) in [("--http2", a.http2), ("--http1.1", a.http1_1)] {
            if on && !grpc {
                return Err(only(flag, "http(s):// and h2c://"));
            }
        }
    }
    if a.http2 && a.http1_1 {
        return Err(Usage::says(
            "--http2",
            "and --http1.1 ask for different protocols: give one",
        ));
    }
    if a.http1_1 && scheme == Scheme::H2c {
        return Err(Usage::says(
            "--http1.1",
            "an h2c:// target speaks HTTP/2: use http:// for HTTP/1.1",
        ));
    }
    if a.http1_1 && scheme == Scheme::Http {
        return Err(Usage::says(
            "--http1.1",
            "applies to https:// (ALPN); http:// speaks HTTP/1.1 unless --http2",
        ));
    }
    if let Some(n) = a.streams {
        if !(grpc || a.http2 || scheme == Scheme::H2c || (scheme == Scheme::Https && !a.http1_1)) {
            return Err(Usage::says(
                "--streams",
                "applies to HTTP/2: h2c://, https:// (when the server chooses h2), or --http2",
            ));
        }
        if !(1..=1 << 20).contains(&n) {
            return Err(Usage::new(
                "--streams",
                "from 1 to 1048576 streams per connection",
            ));
        }
        if a.pipeline != 1 {
            return Err(Usage::says(
                "--pipeline",
                "is HTTP/1.1's; HTTP/2 keeps --streams in flight per connection",
            ));
        }
    }
    if !ws && (a.subprotocol.is_some() || a.binary) {
        return Err(only("--subprotocol and --binary", "ws(s)://"));
    }
    if !scheme.tls() && (a.insecure || a.cacert.is_some()) {
        return Err(only(
            "--insecure and --cacert",
            "https://, wss:// and grpcs://",
        ));
    }
    let kv = matches!(scheme, Scheme::Redis | Scheme::Memcache);
    if !kv && !a.command.is_empty() {
        return Err(only("--command", "redis:// and memcache://"));
    }
    if scheme != Scheme::Redis && a.resp3 {
        return Err(only("--resp3", "redis://"));
    }
    // The message flags describe a raw TCP or WebSocket message; other protocols say what
    // they send in their own words.
    let own_words = if kv {
        Some(format!("a {s}:// request is --command"))
    } else if http {
        Some("an HTTP request is -X, -H and --body".to_string())
    } else if grpc {
        Some("a gRPC call's message is --data (or --data-bin)".to_string())
    } else {
        None
    };
    if let Some(words) = own_words {
        for (flag, set) in [
            ("-m/--message", a.message.is_some()),
            ("--message-file", a.message_file.is_some()),
            ("--fields", a.fields.is_some()),
            ("--first-message", a.first_message.is_some()),
            ("--expect", a.expect.is_some()),
            ("--max-frame", a.max_frame.is_some()),
            ("--verify", a.verify),
        ] {
            if set {
                return Err(Usage::says(
                    flag,
                    format!("applies to tcp:// and ws:// targets; {words}"),
                ));
            }
        }
    }
    if ws {
        if a.first_message.is_some() {
            return Err(only("--first-message", "tcp://"));
        }
        if a.fields.is_some() {
            return Err(only("--fields", "tcp://"));
        }
        if let Some(e) = &a.expect {
            if e != "echo" && e != "none" {
                return Err(Usage::value(
                    "--expect",
                    e,
                    "a ws:// reply is one message; use --expect echo or none",
                ));
            }
        }
    }
    Ok(())
}

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

/// What is spoken on the connection, from the scheme and the HTTP/WebSocket flags: the
/// spec's words (placeholders unfilled), checked here with the secrets filled in, so a bad
/// request fails before any load, against its flag.
pub(super) fn protocol(
    a: &RunArgs,
    url: &url::Url,
    words: &Words,
    secrets: &mut Secrets,
) -> Result<(ProtocolSpec, Option<String>), Usage> {
    let headers_filled = words
        .headers
        .iter()
        .map(|(n, v)| Ok((n.clone(), secrets.fill_str(v, "-H/--header")?)))
        .collect::<Result<Vec<_>, Usage>>()?;
    match url.scheme {
        Scheme::Tcp => Ok((
            ProtocolSpec::Tcp {
                message: if words.fields {
                    String::from_utf8_lossy(&words.message).into_owned()
                } else {
                    escape(&words.message)
                },
                fields: words.fields,
                first_message: words.first.as_deref().map(escape),
                expect: words.expect.clone(),
                verify: a.verify,
            },
            None,
        )),
        Scheme::Mqtt | Scheme::Mqtts => {
            let m = &a.mqtt;
            for (flag, v) in [("--username", &m.username), ("--password", &m.password)] {
                if let Some(v) = v {
                    secrets.fill(v.as_bytes(), flag)?;
                }
            }
            Ok((super::mqtt::spec(a, words)?, None))
        }
        Scheme::Redis => {
            let commands = commands(a, "PING", barrage_engine::redis::Commands::redis)?;
            let resp3 = a.resp3;
            Ok((ProtocolSpec::Redis { commands, resp3 }, None))
        }
        Scheme::Memcache => {
            let default = "get key:{rand%1000}";
            let commands = commands(a, default, barrage_engine::command::Commands::memcache)?;
            Ok((ProtocolSpec::Memcache { commands }, None))
        }
        Scheme::Ws | Scheme::Wss => {
            let host = url.host_header();
            // Build one handshake now: bad headers fail here, not on every connection.
            let spec = barrage_engine::ws::HandshakeSpec {
                host_header: &host,
                path: &url.path,
                headers: &headers_filled,
                subprotocol: a.subprotocol.as_deref(),
            };
            let key = barrage_engine::ws::new_key([0; 16]);
            barrage_engine::ws::handshake_request(&spec, &key, &mut Vec::new())
                .map_err(request_usage)?;
            Ok((
                ProtocolSpec::Ws {
                    host_header: host,
                    path: url.path.clone(),
                    headers: words.headers.clone(),
                    subprotocol: a.subprotocol.clone(),
                    binary: a.binary,
                    max_message: MAX_MESSAGE,
                    message: escape(&words.message),
                    expect: words.expect.clone(),
                    verify: a.verify,
                },
                None,
            ))
        }
        Scheme::Grpc | Scheme::Grpcs => {
            let call = super::grpc::call(a, url)?;
            let host = url.host_header();
            // Metadata is checked as HTTP/2 fields, with the secrets filled in.
            barrage_engine::h2::H2Request::new(&barrage_engine::h2::H2RequestSpec {
                method: "POST",
                scheme: "http",
                path: &url.path,
                authority: &host,
                headers: &headers_filled,
                body: None,
                content_type: Some("application/grpc"),
                te_trailers: true,
            })
            .map_err(request_usage)?;
            // The server is told the deadline the run holds each call to.
            let timeout = barrage_engine::grpc::timeout_value(a.timeout.unwrap_or(DEFAULT_TIMEOUT));
            let open = a.rate.is_some() || a.interval.is_some() || a.rate_stages.is_some();
            Ok((
                ProtocolSpec::Grpc {
                    path: url.path.clone(),
                    host_header: host,
                    headers: words.headers.clone(),
                    message: call.message,
                    more_messages: call.more,
                    streaming: call.streaming,
                    timeout: Some(timeout),
                    streams: a.streams.map_or(u32::from(!open), |n| n as u32),
                },
                Some(call.note),
            ))
        }
        Scheme::Http | Scheme::Https | Scheme::H2c => {
            let body = match a.body.as_deref() {
                None => None,
                Some(b) => Some(match b.strip_prefix('@') {
                    Some(path) => read_capped(
                        "--body",
                        std::path::Path::new(path),
                        &format!("@{path}"),
                        "a body",
                    )?,
                    None => b.as_bytes().to_vec(),
                }),
            };
            let filled_body = match &body {
                Some(b) => Some(secrets.fill(b, "--body")?),
                None => None,
            };
            let method = a.method.clone().unwrap_or_else(|| "GET".into());
            let host = url.host_header();
            let h2 = a.http2 || url.scheme == Scheme::H2c;
            let spec = barrage_engine::http::RequestSpec {
                method: &method,
                path: &url.path,
                host_header: &host,
                headers: &headers_filled,
                body: filled_body.as_deref(),
                keep_alive: true,
            };
            barrage_engine::http::RequestTemplate::new(&spec).map_err(request_usage)?;
            if h2 {
                barrage_engine::h2::H2Request::new(&barrage_engine::h2::H2RequestSpec {
                    method: &method,
                    scheme: "http",
                    path: &url.path,
                    authority: &host,
                    headers: &headers_filled,
                    body: filled_body.as_deref(),
                    content_type: None,
                    te_trailers: false,
                })
                .map_err(request_usage)?;
            }
            let expect_status = match &a.expect_status {
                Some(l) => status_set(l)?,
                None => StatusSet::default(),
            };
            let note = format!(
                "{method} {}{}",
                redact::url(&url.path, &a.redact),
                filled_body
                    .as_ref()
                    .map(|b| format!(", body {} B", b.len()))
                    .unwrap_or_default()
            );
            Ok((
                ProtocolSpec::Http {
                    method,
                    path: url.path.clone(),
                    host_header: host,
                    headers: words.headers.clone(),
                    body: body.as_deref().map(escape),
                    expect_status: expect_status.0,
                    version: if h2 {
                        HttpVersion::H2
                    } else if url.scheme == Scheme::Https && !a.http1_1 {
                        HttpVersion::Auto
                    } else {
                        HttpVersion::H1
                    },
                    // Open loop: as many as the server allows unless --streams caps them.
                    streams: a.streams.map_or_else(
                        || {
                            let open =
                                a.rate.is_some() || a.interval.is_some() || a.rate_stages.is_some();
                            u32::from(!open)
                        },
                        |n| n as u32,
                    ),
                },
                Some(note),
            ))
        }
    }
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
