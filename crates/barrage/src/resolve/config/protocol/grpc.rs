//! A gRPC target's call from the user's words: the method from the URL's path, its message
//! from `--proto` (with `--import-path`) and `--data` JSON, or from `--data-bin`. The JSON is
//! encoded once, here, into the spec's protobuf parts: a string that holds placeholders (or a
//! `{secret:NAME}`) stays a hole the engine fills per call, everything else is bytes.

use crate::resolve::cli::RunArgs;
use crate::resolve::config::vertical::DEFAULT_TIMEOUT;
use crate::resolve::config::vertical::{
    flag, read_capped, request_usage, Flag, Recording, Said, Vertical, Words, H2_SETTINGS, HEADER,
    STREAMS,
};
use crate::resolve::redact::Secrets;
use crate::resolve::url::{self, Scheme};
use crate::usage::Usage;
use barrage_engine::spec::PbPartSpec;
use barrage_engine::{GrpcSpec, ProtocolSpec};
use barrage_scenario::protocol;

pub(super) static VERTICAL: Vertical = Vertical {
    rows: &[&protocol::GRPC],
    flags: &FLAGS,
    own_words: Some("a gRPC call's message is --data (or --data-bin)"),
    check,
    spec,
    said,
    record,
};

const FLAGS: [Flag; 9] = [
    flag("--proto", |a| a.grpc.proto.is_some()),
    flag("--import-path", |a| !a.grpc.import_path.is_empty()),
    flag("--data", |a| a.grpc.data.is_some()),
    flag("--data-bin", |a| a.grpc.data_bin.is_some()),
    flag("--reflect", |a| a.grpc.reflect),
    flag("--compression", |a| a.grpc.compression.is_some()),
    HEADER,
    STREAMS,
    H2_SETTINGS,
];

/// A gRPC call is a POST over HTTP/2: HTTP's request flags are refused in those words.
fn check(a: &RunArgs, scheme: Scheme) -> Result<(), Usage> {
    for (flag, set) in [
        ("-X/--method", a.http.method.is_some()),
        ("--body", a.http.body.is_some()),
        ("--expect-status", a.http.expect_status.is_some()),
        ("--http2", a.http.http2),
        ("--http1.1", a.http.http1_1),
    ] {
        if set {
            return Err(Usage::says(
                flag,
                format!(
                    "does not apply to {}:// targets: a gRPC call is a POST over HTTP/2 \
                     whose message is --data (or --data-bin)",
                    scheme.name()
                ),
            ));
        }
    }
    if a.grpc.reflect && a.grpc.proto.is_some() {
        return Err(Usage::says(
            "--reflect",
            "and --proto both say where the method is described: give one",
        ));
    }
    if a.grpc.compression.is_some() && a.scenario.is_some() {
        return Err(Usage::says(
            "--compression",
            "applies to a URL run's calls; a scenario's steps send theirs uncompressed",
        ));
    }
    if !a.grpc.import_path.is_empty() && a.grpc.proto.is_none() {
        return Err(Usage::says(
            "--import-path",
            "says where --proto's imports are: give --proto FILE",
        ));
    }
    super::http::streams_fit(a)
}

fn spec(
    a: &RunArgs,
    url: &url::Url,
    words: &Words,
    headers_filled: &[(String, String)],
    _: &mut Secrets,
) -> Result<(ProtocolSpec, Option<String>), Usage> {
    let call = call(a, url)?;
    let host = url.host_header();
    // Metadata is checked as HTTP/2 fields, with the secrets filled in.
    barrage_engine::h2::H2Request::new(&barrage_engine::h2::H2RequestSpec {
        method: "POST",
        scheme: "http",
        path: &url.path,
        authority: &host,
        headers: headers_filled,
        body: None,
        content_type: Some("application/grpc"),
        te_trailers: true,
    })
    .map_err(request_usage)?;
    // The server is told the deadline the run holds each call to.
    let timeout = barrage_engine::grpc::timeout_value(a.limits.timeout.unwrap_or(DEFAULT_TIMEOUT));
    let spec = GrpcSpec {
        path: url.path.clone(),
        host_header: host,
        headers: words.headers.clone(),
        message: call.message,
        more_messages: call.more,
        in_turn: call.in_turn,
        streaming: call.streaming,
        timeout: Some(timeout),
        streams: super::http::streams(a),
        gzip: a.grpc.compression.is_some(),
        h2: super::http::h2_settings(a)?,
    };
    Ok((ProtocolSpec::Grpc(spec), Some(call.note)))
}

/// What a gRPC target calls.
pub(super) struct Call {
    pub message: Vec<PbPartSpec>,
    /// A client stream's messages after the first (or, `in_turn`, the other calls').
    pub more: Vec<Vec<PbPartSpec>>,
    /// Each call sends one message, the next in turn (a list for a unary method).
    pub in_turn: bool,
    /// Server streaming (from the method in the .proto).
    pub streaming: bool,
    /// For the run header: the method and the message's size.
    pub note: String,
}

/// `/package.Service/Method`: the service and the method.
fn method_of(path: &str) -> Result<(&str, &str), Usage> {
    match path.starts_with('/') {
        true => barrage_scenario::protocol::grpc_method(path).ok(),
        false => None,
    }
    .ok_or_else(|| {
        Usage::value(
            "target",
            format!("path '{path}'"),
            "a gRPC target names its method: grpc://HOST:PORT/package.Service/Method",
        )
    })
}

fn call(a: &RunArgs, url: &url::Url) -> Result<Call, Usage> {
    if a.scenario.is_some() {
        // A scenario file's target: its steps name their methods.
        if !matches!(url.path.as_str(), "" | "/") {
            return Err(Usage::value(
                "target",
                format!("path '{}'", url.path),
                "a scenario's grpc:// target names no method: its steps do, rpc = \
                 \"package.Service/Method\" (give grpc://HOST:PORT)",
            ));
        }
        return Ok(Call {
            message: Vec::new(),
            more: Vec::new(),
            in_turn: false,
            streaming: false,
            note: "the scenario's calls".into(),
        });
    }
    let (svc, method) = method_of(&url.path)?;
    let name = format!("{svc}/{method}");
    let described = |a: &RunArgs| -> Option<Result<_, Usage>> {
        if a.grpc.reflect {
            return Some(reflected(a, url, svc, method));
        }
        a.grpc.proto.as_ref().map(|p| compiled(a, p, svc, method))
    };
    if let Some(file) = &a.grpc.data_bin {
        let shown = file.display();
        let bytes = read_capped("--data-bin", file, &shown, "a message")?;
        let (streaming, kind) = match described(a) {
            Some(m) => {
                let m = m?;
                (m.streaming(), m.kind())
            }
            None => (false, "unary"),
        };
        return Ok(Call {
            message: PbPartSpec::bytes(&bytes),
            more: Vec::new(),
            in_turn: false,
            streaming,
            note: format!("{name} ({kind}), message {} B", bytes.len()),
        });
    }
    let Some(m) = described(a) else {
        if a.grpc.data.is_some() {
            return Err(Usage::says(
                "--data",
                "needs --proto FILE or --reflect, which say the message's type (or give the \
                 message's bytes with --data-bin)",
            ));
        }
        // No message given: the empty message (every field at its default), a unary call.
        return Ok(Call {
            message: Vec::new(),
            more: Vec::new(),
            in_turn: false,
            streaming: false,
            note: format!("{name}, empty message"),
        });
    };
    let json = match a.grpc.data.as_deref() {
        None => "{}".to_string(),
        Some(d) => match d.strip_prefix('@') {
            Some(file) => {
                let b = read_capped(
                    "--data",
                    std::path::Path::new(file),
                    &format!("@{file}"),
                    "a message",
                )?;
                String::from_utf8(b).map_err(|_| {
                    Usage::value("--data", format!("@{file}"), "not UTF-8 text: JSON is")
                })?
            }
            None => d.to_string(),
        },
    };
    let m = m?;
    let (messages, note, in_turn) = m.encode_call(&json)?;
    let mut messages = messages.into_iter();
    Ok(Call {
        message: messages.next().unwrap_or_default(),
        more: messages.collect(),
        in_turn,
        streaming: m.streaming(),
        note: format!("{name} ({}), {note}", m.kind()),
    })
}

#[cfg(feature = "grpc")]
use pb::{compiled, reflected};

#[cfg(not(feature = "grpc"))]
fn compiled(_: &RunArgs, _: &std::path::Path, _: &str, _: &str) -> Result<NoProto, Usage> {
    Err(Usage::says(
        "--proto",
        "this barrage was built without the `grpc` feature (no .proto compiler): give the \
         message's bytes with --data-bin",
    ))
}

#[cfg(not(feature = "grpc"))]
fn reflected(_: &RunArgs, _: &url::Url, _: &str, _: &str) -> Result<NoProto, Usage> {
    Err(Usage::says(
        "--reflect",
        "this barrage was built without the `grpc` feature (no protobuf descriptors): give \
         the message's bytes with --data-bin",
    ))
}

#[cfg(not(feature = "grpc"))]
enum NoProto {}

#[cfg(not(feature = "grpc"))]
impl NoProto {
    fn streaming(&self) -> bool {
        match *self {}
    }
    fn kind(&self) -> &'static str {
        match *self {}
    }
    fn encode_call(&self, _: &str) -> Result<(Vec<Vec<PbPartSpec>>, String, bool), Usage> {
        match *self {}
    }
}

#[cfg(feature = "grpc")]
pub(crate) mod pb;

fn said(spec: &ProtocolSpec) -> Said<'_> {
    let ProtocolSpec::Grpc(s) = spec else {
        return Said::default();
    };
    Said {
        expect: Some("grpc reply".into()),
        streams: Some(s.streams),
        ..Said::default()
    }
}

/// A gRPC message's bytes and texts shown by size only (`--secret-body`).
fn record(spec: &mut ProtocolSpec, r: &Recording) {
    if let (ProtocolSpec::Grpc(s), true) = (spec, r.secret_body) {
        hide_parts(&mut s.message, r.hide);
        for m in &mut s.more_messages {
            hide_parts(m, r.hide);
        }
    }
}

fn hide_parts(parts: &mut [PbPartSpec], hide: &dyn Fn(&mut String, usize)) {
    for p in parts {
        match p {
            PbPartSpec::Bytes { bytes: t } | PbPartSpec::Text { value: t, .. } => {
                let len = barrage_engine::unescape(t).map_or(0, |v| v.len());
                hide(t, len);
            }
            PbPartSpec::Message { parts, .. } => hide_parts(parts, hide),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::method_of;

    /// The message rendered from the template decodes, with a protobuf library, to the JSON
    /// with its placeholders filled: holes in nested, repeated and map fields get the right
    /// lengths, and the rest is as prost-reflect encodes it.
    #[cfg(feature = "grpc")]
    #[test]
    fn a_rendered_message_decodes_to_the_json_filled_in() {
        use barrage_engine::message::Fill;
        use barrage_engine::spec::PbPartSpec;
        use prost_reflect::{DynamicMessage, SerializeOptions};
        let dir = tempfile_dir();
        let proto = dir.join("t.proto");
        std::fs::write(
            &proto,
            "syntax = \"proto3\";\npackage t;\nservice S { rpc U(M) returns (M); }\n\
             message M { string s = 1; int64 n = 2; repeated string r = 3; \
             map<string, string> m = 4; M inner = 5; repeated M list = 6; bytes b = 7; }\n",
        )
        .unwrap();
        use clap::Parser as _;
        let cli = crate::resolve::cli::Cli::try_parse_from(["barrage", "run", "grpc://h:1/t.S/U"]);
        let crate::resolve::cli::Command::Run(a) = cli.unwrap().command else {
            unreachable!()
        };
        let c = super::pb::compiled(&a, &proto, "t.S", "U").unwrap();
        let json = r#"{"s":"id-{seq}","n":"42","r":["x","{conn}","y"],
            "m":{"a":"{seq}","b":"fixed"},"inner":{"s":"{seq%3}","n":5},
            "list":[{"s":"one"},{"s":"{seq}-{conn}"}],"b":"AAE=","unused":null}"#;
        // `unused` is not a field: refused.
        assert!(c.encode_call(json).is_err());
        let json = json.replace(r#","unused":null"#, "");
        let (mut messages, _, _) = c.encode_call(&json).unwrap();
        let parts = messages.remove(0);
        assert!(parts.iter().any(|p| matches!(p, PbPartSpec::Text { .. })));
        let t = PbPartSpec::template(&parts, &mut |_| None).unwrap();
        let fill = Fill {
            conn: 7,
            seq: 1234,
            ts_us: 0,
        };
        let mut bytes = Vec::new();
        t.write(fill, &mut bytes);
        assert_eq!(bytes.len(), t.len(fill));
        let m = DynamicMessage::decode(c.input(), &bytes[..]).unwrap();
        let opts = SerializeOptions::new().stringify_64_bit_integers(false);
        let got = m
            .serialize_with_options(serde_json::value::Serializer, &opts)
            .unwrap();
        let want: serde_json::Value = serde_json::from_str(
            r#"{"s":"id-1234","n":42,"r":["x","7","y"],"m":{"a":"1234","b":"fixed"},
            "inner":{"s":"1","n":5},"list":[{"s":"one"},{"s":"1234-7"}],"b":"AAE="}"#,
        )
        .unwrap();
        assert_eq!(got, want);
        // Placeholders in a number field cannot be: said, not sent as a zero; nor in keys.
        assert!(c.encode_call(r#"{"n":"{seq}"}"#).is_err());
        assert!(c.encode_call(r#"{"m":{"k{seq}":"v"}}"#).is_err());
    }

    /// `serve grpc` answers reflection with `barrage_servers::grpc::DESCRIPTOR`, the
    /// FileDescriptorProto of its `.proto` as protox compiles it (the servers crate compiles
    /// none): they must agree. `BARRAGE_BLESS=1` writes the file anew after a change.
    #[cfg(all(feature = "grpc", feature = "h2-server"))]
    #[test]
    fn the_reference_servers_descriptor_is_its_proto_compiled() {
        use prost_reflect::prost::Message as _;
        let dir = tempfile_dir().join("desc");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("barrage_echo.proto"), barrage_servers::grpc::PROTO).unwrap();
        let mut c = protox::Compiler::new([&dir]).unwrap();
        c.open_file("barrage_echo.proto").unwrap();
        let set = c.file_descriptor_set();
        let bytes = set.file[0].encode_to_vec();
        if std::env::var_os("BARRAGE_BLESS").is_some() {
            let path = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../barrage-servers/src/grpc_echo.pb"
            );
            std::fs::write(path, &bytes).unwrap();
        }
        assert!(
            bytes == barrage_servers::grpc::DESCRIPTOR,
            "the descriptor is stale: BARRAGE_BLESS=1 cargo test -p barrage -- reference_servers_descriptor"
        );
    }

    #[cfg(feature = "grpc")]
    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("barrage-grpc-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_targets_method_is_its_path() {
        assert_eq!(
            method_of("/helloworld.Greeter/SayHello").ok(),
            Some(("helloworld.Greeter", "SayHello"))
        );
        assert!(method_of("helloworld.Greeter/SayHello").is_err());
        assert!(method_of("/").is_err());
    }
}
