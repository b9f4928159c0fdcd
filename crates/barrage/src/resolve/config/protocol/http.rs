//! HTTP's vertical (http://, https://, h2c://): `-X`, `-H`, `--body`, `--expect-status`,
//! `--http2`/`--http1.1` and `--streams`; the request is built once here, so a bad one fails
//! before any load.

use crate::resolve::cli::RunArgs;
use crate::resolve::config::vertical::{
    flag, read_capped, request_usage, status_set, Flag, Recording, Said, Vertical, Words,
    H2_SETTINGS, HEADER, STREAMS,
};
use crate::resolve::redact::{self, Secrets};
use crate::resolve::url::{self, Scheme};
use crate::usage::Usage;
use barrage_engine::{escape, H2Settings, HttpSpec, HttpVersion, ProtocolSpec, StatusSet};
use barrage_scenario::protocol;

pub(super) static VERTICAL: Vertical = Vertical {
    rows: &[&protocol::HTTP, &protocol::H2],
    flags: &FLAGS,
    own_words: Some("an HTTP request is -X, -H and --body"),
    check,
    spec,
    said,
    record,
};

const FLAGS: [Flag; 8] = [
    flag("-X/--method", |a| a.http.method.is_some()),
    HEADER,
    flag("--body", |a| a.http.body.is_some()),
    flag("--expect-status", |a| a.http.expect_status.is_some()),
    flag("--http2", |a| a.http.http2),
    flag("--http1.1", |a| a.http.http1_1),
    STREAMS,
    H2_SETTINGS,
];

fn check(a: &RunArgs, scheme: Scheme) -> Result<(), Usage> {
    let h = &a.http;
    if h.http2 && h.http1_1 {
        return Err(Usage::says(
            "--http2",
            "and --http1.1 ask for different protocols: give one",
        ));
    }
    if h.http1_1 && scheme.is(&protocol::H2) {
        return Err(Usage::says(
            "--http1.1",
            "an h2c:// target speaks HTTP/2: use http:// for HTTP/1.1",
        ));
    }
    if h.http1_1 && !scheme.tls() {
        return Err(Usage::says(
            "--http1.1",
            "applies to https:// (ALPN); http:// speaks HTTP/1.1 unless --http2",
        ));
    }
    let h2 = h.http2 || scheme.is(&protocol::H2) || (scheme.tls() && !h.http1_1);
    if h.streams.is_some() && !h2 {
        return Err(Usage::says(
            "--streams",
            "applies to HTTP/2: h2c://, https:// (when the server chooses h2), or --http2",
        ));
    }
    if (H2_SETTINGS.given)(a) && !h2 {
        return Err(Usage::says(
            H2_SETTINGS.name,
            "apply to HTTP/2: h2c://, https:// (when the server chooses h2), or --http2",
        ));
    }
    h2_settings(a)?;
    streams_fit(a)
}

/// HTTP/2's settings (HTTP/2 and gRPC): `--h2-window`, `--h2-conn-window`,
/// `--h2-header-table`, each in the range the protocol allows.
pub(super) fn h2_settings(a: &RunArgs) -> Result<H2Settings, Usage> {
    let h = &a.http;
    let mut s = H2Settings::default();
    let max = u64::from(H2Settings::MAX_WINDOW);
    if let Some(w) = h.h2_window {
        if w > max {
            return Err(Usage::value(
                "--h2-window",
                w,
                "a window is at most 2^31-1 bytes",
            ));
        }
        s.stream_window = w as u32;
    }
    if let Some(w) = h.h2_conn_window {
        if !(65_535..=max).contains(&w) {
            return Err(Usage::value(
                "--h2-conn-window",
                w,
                "the connection's window is from 65535 (HTTP/2's initial one) to 2^31-1 bytes",
            ));
        }
        s.conn_window = w as u32;
    }
    if let Some(t) = h.h2_header_table {
        if t > u64::from(H2Settings::MAX_HEADER_TABLE) {
            return Err(Usage::value(
                "--h2-header-table",
                t,
                "at most 16MiB (the server may fill it on every connection)",
            ));
        }
        s.header_table = t as u32;
    }
    Ok(s)
}

/// `--streams` (HTTP/2 and gRPC): a count in range, and no `--pipeline` beside it.
pub(super) fn streams_fit(a: &RunArgs) -> Result<(), Usage> {
    let Some(n) = a.http.streams else {
        return Ok(());
    };
    if !(1..=1 << 20).contains(&n) {
        return Err(Usage::new(
            "--streams",
            "from 1 to 1048576 streams per connection",
        ));
    }
    if a.modes.pipeline != 1 {
        return Err(Usage::says(
            "--pipeline",
            "is HTTP/1.1's; HTTP/2 keeps --streams in flight per connection",
        ));
    }
    Ok(())
}

/// HTTP/2 streams in flight per connection: `--streams`, or one in closed loop and as many as
/// the server allows (0) in open loop.
pub(super) fn streams(a: &RunArgs) -> u32 {
    let open =
        a.modes.rate.is_some() || a.modes.interval.is_some() || a.modes.rate_stages.is_some();
    a.http.streams.map_or(u32::from(!open), |n| n as u32)
}

fn spec(
    a: &RunArgs,
    url: &url::Url,
    words: &Words,
    headers_filled: &[(String, String)],
    secrets: &mut Secrets,
) -> Result<(ProtocolSpec, Option<String>), Usage> {
    let body = match a.http.body.as_deref() {
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
    let method = a.http.method.clone().unwrap_or_else(|| "GET".into());
    let host = url.host_header();
    let h2 = a.http.http2 || url.scheme.is(&protocol::H2);
    let request = barrage_engine::http::RequestSpec {
        method: &method,
        path: &url.path,
        host_header: &host,
        headers: headers_filled,
        body: filled_body.as_deref(),
        keep_alive: true,
    };
    barrage_engine::http::RequestTemplate::new(&request).map_err(request_usage)?;
    if h2 {
        barrage_engine::h2::H2Request::new(&barrage_engine::h2::H2RequestSpec {
            method: &method,
            scheme: "http",
            path: &url.path,
            authority: &host,
            headers: headers_filled,
            body: filled_body.as_deref(),
            content_type: None,
            te_trailers: false,
        })
        .map_err(request_usage)?;
    }
    let expect_status = match &a.http.expect_status {
        Some(l) => status_set(l)?,
        None => StatusSet::default(),
    };
    let note = format!(
        "{method} {}{}",
        redact::url(&url.path, &a.output.redact),
        filled_body
            .as_ref()
            .map(|b| format!(", body {} B", b.len()))
            .unwrap_or_default()
    );
    let spec = HttpSpec {
        method,
        path: url.path.clone(),
        host_header: host,
        headers: words.headers.clone(),
        body: body.as_deref().map(escape),
        expect_status: expect_status.0,
        version: if h2 {
            HttpVersion::H2
        } else if url.scheme.tls() && !a.http.http1_1 {
            HttpVersion::Auto
        } else {
            HttpVersion::H1
        },
        // Open loop: as many as the server allows unless --streams caps them.
        streams: streams(a),
        h2: h2_settings(a)?,
    };
    Ok((ProtocolSpec::Http(spec), Some(note)))
}

fn said(spec: &ProtocolSpec) -> Said<'_> {
    let ProtocolSpec::Http(s) = spec else {
        return Said::default();
    };
    Said {
        expect: Some("http response".into()),
        streams: (s.version != HttpVersion::H1).then_some(s.streams),
        ..Said::default()
    }
}

fn record(spec: &mut ProtocolSpec, r: &Recording) {
    if let ProtocolSpec::Http(s) = spec {
        if let Some(b) = s.body.as_mut() {
            let len = barrage_engine::unescape(b).map_or(0, |v| v.len());
            (r.hide)(b, len);
        }
        s.path = redact::url(&s.path, r.redact);
    }
}
