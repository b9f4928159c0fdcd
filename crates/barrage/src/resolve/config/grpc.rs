//! A gRPC target's call from the user's words: the method from the URL's path, its message
//! from `--proto` (with `--import-path`) and `--data` JSON, or from `--data-bin`. The JSON is
//! encoded once, here, into the spec's protobuf parts: a string that holds placeholders (or a
//! `{secret:NAME}`) stays a hole the engine fills per call, everything else is bytes.

use super::protocol::read_capped;
use super::*;
use barrage_engine::spec::PbPartSpec;

/// What a gRPC target calls.
pub(super) struct Call {
    pub message: Vec<PbPartSpec>,
    /// Server streaming (from the method in the .proto).
    pub streaming: bool,
    /// For the run header: the method and the message's size.
    pub note: String,
}

/// `/package.Service/Method`: the service and the method.
fn method_of(path: &str) -> Result<(&str, &str), Usage> {
    let bad = || {
        Usage::value(
            "target",
            format!("path '{path}'"),
            "a gRPC target names its method: grpc://HOST:PORT/package.Service/Method",
        )
    };
    let rest = path.strip_prefix('/').ok_or_else(bad)?;
    let (svc, m) = rest.split_once('/').ok_or_else(bad)?;
    let ok = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
    };
    if !ok(svc) || !ok(m) || m.contains('.') {
        return Err(bad());
    }
    Ok((svc, m))
}

pub(super) fn call(a: &RunArgs, url: &url::Url) -> Result<Call, Usage> {
    let (svc, method) = method_of(&url.path)?;
    let name = format!("{svc}/{method}");
    let described = |a: &RunArgs| -> Option<Result<_, Usage>> {
        if a.reflect {
            return Some(reflected(a, url, svc, method));
        }
        a.proto.as_ref().map(|p| compiled(a, p, svc, method))
    };
    if let Some(file) = &a.data_bin {
        let shown = file.display();
        let bytes = read_capped("--data-bin", file, &shown, "a message")?;
        let streaming = match described(a) {
            Some(m) => m?.streaming(),
            None => false,
        };
        return Ok(Call {
            message: PbPartSpec::bytes(&bytes),
            streaming,
            note: format!("{name}, message {} B", bytes.len()),
        });
    }
    let Some(m) = described(a) else {
        if a.data.is_some() {
            return Err(Usage::says(
                "--data",
                "needs --proto FILE or --reflect, which say the message's type (or give the \
                 message's bytes with --data-bin)",
            ));
        }
        // No message given: the empty message (every field at its default), a unary call.
        return Ok(Call {
            message: Vec::new(),
            streaming: false,
            note: format!("{name}, empty message"),
        });
    };
    let json = match a.data.as_deref() {
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
    let (message, len) = m.encode(&json)?;
    Ok(Call {
        message,
        streaming: m.streaming(),
        note: format!("{name}, message {len} B"),
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
    fn encode(&self, _: &str) -> Result<(Vec<PbPartSpec>, usize), Usage> {
        match *self {}
    }
}

#[cfg(feature = "grpc")]
mod pb {
    use super::*;
    use prost_reflect::prost::Message as _;
    use prost_reflect::{
        DynamicMessage, FieldDescriptor, Kind, MessageDescriptor, MethodDescriptor, ReflectMessage,
        Value,
    };

    /// Strings that become holes are replaced by this mark and their number while the JSON
    /// is read into a message (private-use characters: no JSON a user writes holds them).
    const MARK: char = '\u{E000}';

    pub struct Compiled(MethodDescriptor);

    /// The method `svc`/`method` from `proto` (its imports found in `--import-path` and its
    /// own directory).
    pub fn compiled(
        a: &RunArgs,
        proto: &std::path::Path,
        svc: &str,
        method: &str,
    ) -> Result<Compiled, Usage> {
        let shown = proto.display().to_string();
        if !proto.is_file() {
            return Err(Usage::value("--proto", &shown, "no such file"));
        }
        let mut includes = a.import_path.clone();
        let dir = proto
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        includes.push(dir.to_path_buf());
        for d in &a.import_path {
            if !d.is_dir() {
                return Err(Usage::value(
                    "--import-path",
                    d.display(),
                    "no such directory",
                ));
            }
        }
        let mut c = protox::Compiler::new(&includes)
            .map_err(|e| Usage::value("--import-path", &shown, one_line(&e)))?;
        c.include_imports(true);
        c.open_file(proto)
            .map_err(|e| Usage::value("--proto", &shown, one_line(&e)))?;
        let pool = c.descriptor_pool();
        method_in(&pool, svc, method, &shown)
    }

    /// The method `svc`/`method` from the server's reflection (`--reflect`).
    pub fn reflected(
        a: &RunArgs,
        url: &url::Url,
        svc: &str,
        method: &str,
    ) -> Result<Compiled, Usage> {
        let pool = super::super::reflect::pool(a, url, svc)?;
        method_in(&pool, svc, method, "the server's reflection")
    }

    /// The method in `pool`, `shown` naming where the descriptors came from.
    fn method_in(
        pool: &prost_reflect::DescriptorPool,
        svc: &str,
        method: &str,
        shown: &str,
    ) -> Result<Compiled, Usage> {
        let Some(service) = pool.get_service_by_name(svc) else {
            let known: Vec<String> = pool.services().map(|s| s.full_name().into()).collect();
            return Err(Usage::value(
                "target",
                format!("service '{svc}'"),
                format!(
                    "not in {shown}, which defines {}",
                    if known.is_empty() {
                        "no service".into()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        let Some(m) = service.methods().find(|m| m.name() == method) else {
            let known: Vec<String> = service.methods().map(|m| m.name().into()).collect();
            return Err(Usage::value(
                "target",
                format!("method '{method}'"),
                format!("{svc} has {}", known.join(", ")),
            ));
        };
        if m.is_client_streaming() {
            return Err(Usage::value(
                "target",
                format!("method '{svc}/{method}'"),
                format!(
                    "is {}: barrage calls unary and server-streaming methods (client \
                     streaming is not built yet)",
                    if m.is_server_streaming() {
                        "a bidirectional stream"
                    } else {
                        "client streaming"
                    }
                ),
            ));
        }
        Ok(Compiled(m))
    }

    fn one_line(e: &protox::Error) -> String {
        let s = e.to_string();
        let mut s = s.lines().next().unwrap_or_default().trim().to_string();
        if s.contains("found 'edition'") {
            s.push_str(
                " (protobuf editions are not read here: the same messages written with \
                 syntax = \"proto3\" encode alike)",
            );
        }
        if let Some(f) = e.file() {
            if !s.contains(f) {
                s = format!("{f}: {s}");
            }
        }
        s
    }

    impl Compiled {
        pub fn streaming(&self) -> bool {
            self.0.is_server_streaming()
        }

        #[cfg(test)]
        pub fn input(&self) -> MessageDescriptor {
            self.0.input()
        }

        /// The request message from `json`: its parts and its encoded size (holes as they
        /// are written).
        pub fn encode(&self, json: &str) -> Result<(Vec<PbPartSpec>, usize), Usage> {
            let input = self.0.input();
            let shown = if json.len() > 60 {
                format!("'{}...'", &json[..json.floor_char_boundary(57)])
            } else {
                format!("'{json}'")
            };
            let mut v: serde_json::Value = serde_json::from_str(json)
                .map_err(|e| Usage::value("--data", &shown, format!("not JSON: {e}")))?;
            let mut holes = Vec::new();
            mark(&mut v, &mut holes).map_err(|e| Usage::value("--data", &shown, e))?;
            let msg = DynamicMessage::deserialize(input.clone(), v).map_err(|e| {
                let e = e.to_string().replace(MARK, "");
                Usage::value(
                    "--data",
                    &shown,
                    format!(
                        "not a {}: {e}{}",
                        input.full_name(),
                        if holes.is_empty() {
                            ""
                        } else {
                            " (placeholders go in string fields)"
                        }
                    ),
                )
            })?;
            let parts = walk(&msg, &holes).map_err(|e| Usage::value("--data", &shown, e))?;
            Ok((parts, msg.encoded_len()))
        }
    }

    /// Replace each string that needs rendering per call with a mark; keep its text.
    fn mark(v: &mut serde_json::Value, holes: &mut Vec<String>) -> Result<(), String> {
        match v {
            serde_json::Value::String(s) => {
                let secret = s.contains("{secret:");
                let t = barrage_engine::message::Template::try_new(s.as_bytes().to_vec())
                    .map_err(|e| format!("{e}"))?;
                if secret || !t.is_static() {
                    holes.push(std::mem::take(s));
                    *s = format!("{MARK}{}{MARK}", holes.len() - 1);
                }
            }
            serde_json::Value::Array(a) => {
                for x in a {
                    mark(x, holes)?;
                }
            }
            serde_json::Value::Object(o) => {
                for (k, x) in o.iter_mut() {
                    let t = barrage_engine::message::Template::try_new(k.as_bytes().to_vec());
                    if k.contains("{secret:") || t.map_or(true, |t| !t.is_static()) {
                        return Err(format!(
                            "'{k}': placeholders go in string values, not in keys"
                        ));
                    }
                    mark(x, holes)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn hole<'h>(s: &str, holes: &'h [String]) -> Option<&'h str> {
        let n = s.strip_prefix(MARK)?.strip_suffix(MARK)?;
        holes.get(n.parse::<usize>().ok()?).map(String::as_str)
    }

    fn has_hole(v: &Value, holes: &[String]) -> bool {
        match v {
            Value::String(s) => hole(s, holes).is_some(),
            Value::Message(m) => m.fields().any(|(_, v)| has_hole(v, holes)),
            Value::List(l) => l.iter().any(|v| has_hole(v, holes)),
            Value::Map(m) => m.values().any(|v| has_hole(v, holes)),
            _ => false,
        }
    }

    /// One field of `desc` set to `v`, encoded (its tag and value).
    fn field_bytes(desc: &MessageDescriptor, f: &FieldDescriptor, v: Value) -> Vec<u8> {
        let mut m = DynamicMessage::new(desc.clone());
        m.set_field(f, v);
        m.encode_to_vec()
    }

    fn bytes(b: Vec<u8>) -> PbPartSpec {
        PbPartSpec::Bytes {
            bytes: barrage_engine::Spec::text(&b),
        }
    }

    /// The parts of `value` as field `f` (one element of a list, or the field).
    fn part(
        desc: &MessageDescriptor,
        f: &FieldDescriptor,
        value: &Value,
        holes: &[String],
        one: impl Fn(Value) -> Value,
    ) -> Result<PbPartSpec, String> {
        Ok(match value {
            Value::String(s) => match hole(s, holes) {
                Some(text) => PbPartSpec::Text {
                    field: f.number(),
                    value: barrage_engine::Spec::text(text.as_bytes()),
                },
                None => bytes(field_bytes(desc, f, one(value.clone()))),
            },
            Value::Message(m) if has_hole(value, holes) => PbPartSpec::Message {
                field: f.number(),
                parts: walk(m, holes)?,
            },
            _ => bytes(field_bytes(desc, f, one(value.clone()))),
        })
    }

    fn walk(msg: &DynamicMessage, holes: &[String]) -> Result<Vec<PbPartSpec>, String> {
        let desc = msg.descriptor();
        let mut parts = Vec::new();
        for (f, value) in msg.fields() {
            if !has_hole(value, holes) {
                parts.push(bytes(field_bytes(&desc, &f, value.clone())));
                continue;
            }
            if f.is_group() {
                // A group is delimited by tags, not by a length: no hole is rendered in one.
                return Err(format!(
                    "'{}' is a proto2 group: placeholders cannot go in its fields",
                    f.name()
                ));
            }
            match value {
                Value::List(items) => {
                    for item in items {
                        parts.push(part(&desc, &f, item, holes, |v| Value::List(vec![v]))?);
                    }
                }
                Value::Map(map) => {
                    // Each entry is a message: its key (field 1), then its value (field 2).
                    let Kind::Message(entry) = f.kind() else {
                        continue;
                    };
                    let (kf, vf) = (entry.map_entry_key_field(), entry.map_entry_value_field());
                    for (k, v) in map {
                        let key = bytes(field_bytes(&entry, &kf, k.clone().into()));
                        let val = part(&entry, &vf, v, holes, |v| v)?;
                        parts.push(PbPartSpec::Message {
                            field: f.number(),
                            parts: vec![key, val],
                        });
                    }
                }
                _ => parts.push(part(&desc, &f, value, holes, |v| v)?),
            }
        }
        Ok(parts)
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
        assert!(c.encode(json).is_err());
        let json = json.replace(r#","unused":null"#, "");
        let (parts, _) = c.encode(&json).unwrap();
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
        assert!(c.encode(r#"{"n":"{seq}"}"#).is_err());
        assert!(c.encode(r#"{"m":{"k{seq}":"v"}}"#).is_err());
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
    fn a_method_is_a_service_and_a_name() {
        assert_eq!(
            method_of("/helloworld.Greeter/SayHello").ok(),
            Some(("helloworld.Greeter", "SayHello"))
        );
        for bad in [
            "/",
            "/Greeter",
            "/a.B/C/D",
            "/a.B/",
            "//C",
            "/a.B/C?x=1",
            "/a.B/C.D",
        ] {
            assert!(method_of(bad).is_err(), "{bad}");
        }
    }
}
