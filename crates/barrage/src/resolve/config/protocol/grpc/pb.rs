//! The `.proto` side of gRPC (cargo feature `grpc`): descriptors compiled by protox or taken
//! from server reflection, the method looked up, JSON encoded into the spec's protobuf parts
//! with holes, and a reply decoded back to JSON for a scenario step.

use crate::resolve::cli::RunArgs;
use crate::resolve::url;
use crate::usage::Usage;
use barrage_engine::spec::PbPartSpec;
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
    let pool = compile(&a.grpc.import_path, proto)?;
    method_in(&pool, svc, method, &proto.display().to_string())
        .map_err(|(v, why)| Usage::value("target", v, why))
}

/// Why `--data` is not JSON, in barrage's words: serde_json's depth limit is named as ours.
pub fn not_json(e: &serde_json::Error) -> String {
    let text = e.to_string();
    if text.starts_with("recursion limit exceeded") {
        return format!(
            "nested more than {JSON_DEPTH} levels deep (line {}, column {}); barrage reads JSON \
             nested {JSON_DEPTH} levels at most: flatten the message",
            e.line(),
            e.column()
        );
    }
    format!("not JSON: {text}")
}

/// How deep `--data`'s JSON may nest: serde_json's recursion limit.
pub const JSON_DEPTH: usize = 128;

/// The descriptors of `proto` and its imports (found in `--import-path` and its own
/// directory).
pub fn compile(
    import_path: &[std::path::PathBuf],
    proto: &std::path::Path,
) -> Result<prost_reflect::DescriptorPool, Usage> {
    let shown = proto.display().to_string();
    if proto.is_dir() {
        return Err(Usage::value(
            "--proto",
            &shown,
            format!(
                "is a directory: give the .proto file that defines the method (--proto \
                 {}/NAME.proto), and --import-path {shown} for the files it imports",
                shown.trim_end_matches('/')
            ),
        ));
    }
    if !proto.is_file() {
        return Err(Usage::value("--proto", &shown, "no such file"));
    }
    let mut includes = import_path.to_vec();
    let dir = proto
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    includes.push(dir.to_path_buf());
    for d in import_path {
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
    Ok(c.descriptor_pool())
}

/// The method `svc`/`method` from the server's reflection (`--reflect`).
pub fn reflected(a: &RunArgs, url: &url::Url, svc: &str, method: &str) -> Result<Compiled, Usage> {
    let pool = crate::resolve::config::reflect::pool(a, url, svc)?;
    method_in(&pool, svc, method, "the server's reflection")
        .map_err(|(v, why)| Usage::value("target", v, why))
}

/// The method in `pool`, `shown` naming where the descriptors came from; or what is
/// wrong (the value, why).
pub fn method_in(
    pool: &prost_reflect::DescriptorPool,
    svc: &str,
    method: &str,
    shown: &str,
) -> Result<Compiled, (String, String)> {
    let Some(service) = pool.get_service_by_name(svc) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().into()).collect();
        return Err((
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
        return Err((
            format!("method '{method}'"),
            format!("{svc} has {}", known.join(", ")),
        ));
    };
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

    /// The client sends a stream of messages (client streaming or bidirectional).
    pub fn client_streaming(&self) -> bool {
        self.0.is_client_streaming()
    }

    /// What the method is, for the run header.
    pub fn kind(&self) -> &'static str {
        match (self.client_streaming(), self.streaming()) {
            (false, false) => "unary",
            (false, true) => "server streaming",
            (true, false) => "client streaming",
            (true, true) => "bidirectional",
        }
    }

    /// The request's messages from `v`: one message, or for a client stream a list of them
    /// (sent in order, then the call half-closed; one message alone is a list of one).
    pub fn encode_messages(
        &self,
        v: serde_json::Value,
        vars: bool,
    ) -> Result<Vec<(Vec<PbPartSpec>, usize)>, String> {
        match v {
            serde_json::Value::Array(items) if self.client_streaming() => {
                if items.is_empty() {
                    return Err("an empty list: a client stream sends at least one message".into());
                }
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, m)| {
                        self.encode_value(m, vars)
                            .map_err(|e| format!("message {i}: {e}"))
                    })
                    .collect()
            }
            serde_json::Value::Array(_) => Err(format!(
                "a list, but {} is {}: it takes one message",
                self.0.full_name(),
                self.kind()
            )),
            one => Ok(vec![self.encode_value(one, vars)?]),
        }
    }

    #[cfg(test)]
    pub fn input(&self) -> MessageDescriptor {
        self.0.input()
    }

    /// The request's messages from `json` (one, or a client stream's list, or for a unary
    /// or server-streaming method a list of messages its calls send in turn, as ghz takes
    /// one), what the run header says of them (their encoded size, holes as they are
    /// written), and whether they go in turn.
    pub fn encode_call(&self, json: &str) -> Result<(Vec<Vec<PbPartSpec>>, String, bool), Usage> {
        let shown = if json.len() > 60 {
            format!("'{}...'", &json[..json.floor_char_boundary(57)])
        } else {
            format!("'{json}'")
        };
        let v: serde_json::Value =
            serde_json::from_str(json).map_err(|e| Usage::value("--data", &shown, not_json(&e)))?;
        let in_turn = matches!(v, serde_json::Value::Array(_)) && !self.client_streaming();
        let ms = match v {
            serde_json::Value::Array(items) if in_turn => {
                if items.is_empty() {
                    return Err(Usage::value(
                        "--data",
                        &shown,
                        "an empty list: give at least one message for the calls to send in turn",
                    ));
                }
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, m)| {
                        self.encode_value(m, false)
                            .map_err(|e| format!("message {i}: {e}"))
                    })
                    .collect::<Result<Vec<_>, _>>()
            }
            v => self.encode_messages(v, false),
        }
        .map_err(|e| Usage::value("--data", &shown, e))?;
        let bytes: usize = ms.iter().map(|(_, n)| n).sum();
        let note = match ms.len() {
            1 => format!("message {bytes} B"),
            n if in_turn => format!("{n} messages in turn, one per call, {bytes} B"),
            n => format!("{n} messages, {bytes} B"),
        };
        Ok((ms.into_iter().map(|(p, _)| p).collect(), note, in_turn))
    }

    /// The request message from `v`; `vars`: a scenario step's data, whose strings may
    /// hold the user's `{name}`s too.
    pub fn encode_value(
        &self,
        mut v: serde_json::Value,
        vars: bool,
    ) -> Result<(Vec<PbPartSpec>, usize), String> {
        let input = self.0.input();
        let mut holes = Vec::new();
        mark(&mut v, &mut holes, vars)?;
        let msg = DynamicMessage::deserialize(input.clone(), v).map_err(|e| {
            let e = e.to_string().replace(MARK, "");
            format!(
                "not a {}: {e}{}",
                input.full_name(),
                if holes.is_empty() {
                    ""
                } else {
                    " (placeholders go in string fields)"
                }
            )
        })?;
        let parts = walk(&msg, &holes)?;
        Ok((parts, msg.encoded_len()))
    }

    /// How a reply of this method is read for a scenario step: its messages as JSON
    /// (the .proto's field names, every field, 64-bit numbers as numbers); a unary
    /// call's one message as an object, a streaming call's as an array.
    pub fn decoder(&self) -> barrage_engine::grpc::Decode {
        let out = self.0.output();
        let streaming = self.streaming();
        let opts = prost_reflect::SerializeOptions::new()
            .use_proto_field_name(true)
            .skip_default_fields(false)
            .stringify_64_bit_integers(false);
        barrage_engine::grpc::Decode(std::sync::Arc::new(move |data: &[u8]| {
            let (msgs, more) = barrage_engine::grpc::messages(data)?;
            if !streaming && (more || msgs.len() != 1) {
                return Err(format!(
                    "{} messages in a unary reply{}",
                    msgs.len(),
                    if more {
                        " (a reply over 1 MiB is not looked into)"
                    } else {
                        ""
                    }
                ));
            }
            let decoded = msgs
                .iter()
                .map(|b| DynamicMessage::decode(out.clone(), *b))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("not a {}: {e}", out.full_name()))?;
            let shown: Vec<Shown> = decoded.iter().map(|m| Shown(m, &opts)).collect();
            let json = if streaming {
                serde_json::to_vec(&shown)
            } else {
                serde_json::to_vec(&shown[0])
            };
            json.map_err(|e| e.to_string())
        }))
    }
}

/// A message serialized with options (as an element of a sequence).
struct Shown<'a>(&'a DynamicMessage, &'a prost_reflect::SerializeOptions);

impl serde::Serialize for Shown<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_with_options(s, self.1)
    }
}

/// Replace each string that needs rendering per call with a mark; keep its text.
fn mark(v: &mut serde_json::Value, holes: &mut Vec<String>, vars: bool) -> Result<(), String> {
    use barrage_engine::message::Template;
    match v {
        serde_json::Value::String(s) => {
            let secret = s.contains("{secret:");
            let raw = s.as_bytes().to_vec();
            let dynamic = if vars {
                // Any well-formed `{name}` is the user's (the scenario checker has made
                // sure each names a capture or column).
                !Template::with_vars(raw, |_| Some(0))
                    .map_err(|e| format!("{e}"))?
                    .is_static()
            } else {
                !Template::try_new(raw)
                    .map_err(|e| format!("{e}"))?
                    .is_static()
            };
            if secret || dynamic {
                holes.push(std::mem::take(s));
                *s = format!("{MARK}{}{MARK}", holes.len() - 1);
            }
        }
        serde_json::Value::Array(a) => {
            for x in a {
                mark(x, holes, vars)?;
            }
        }
        serde_json::Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                let raw = k.as_bytes().to_vec();
                let t = if vars {
                    Template::with_vars(raw, |_| Some(0)).ok()
                } else {
                    Template::try_new(raw).ok()
                };
                if k.contains("{secret:") || t.is_none_or(|t| !t.is_static()) {
                    return Err(format!(
                        "'{k}': placeholders go in string values, not in keys"
                    ));
                }
                mark(x, holes, vars)?;
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
