//! A gRPC run in the spec's words ([`GrpcSpec`]), its request message as parts
//! ([`PbPartSpec`]).

use crate::grpc::{PartSrc, PbTemplate};
use crate::message::{escape, fill_secrets, Template};
use crate::plan::{GrpcMode, H2Plan, Protocol, StatusSet};
use crate::spec::cx::{invalid, is_one, one, unescaped, PlanCx, SpecError, Spoken};
use serde::{Deserialize, Serialize};

/// gRPC calls (h2c, or TLS with ALPN h2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GrpcSpec {
    /// `/package.Service/Method`.
    pub path: String,
    pub host_header: String,
    /// Metadata (`-H`), sent with every call.
    pub headers: Vec<(String, String)>,
    /// The request message, encoded once from the user's JSON (or `--data-bin`): its
    /// protobuf bytes with the placeholders' holes.
    pub message: Vec<PbPartSpec>,
    /// A client-streaming (or bidirectional) call's further messages, sent after
    /// `message` in order before the call is half-closed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_messages: Vec<Vec<PbPartSpec>>,
    /// A unary or server-streaming call: `message` and `more_messages` are not one call's
    /// stream but each call's message in turn (call `seq` of a connection sends the
    /// `seq % n`th).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_turn: bool,
    /// Server streaming (any number of replies), or unary (one).
    #[serde(default)]
    pub streaming: bool,
    /// `grpc-timeout` (from `--timeout`), e.g. `5000000u`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Calls in flight per connection at most; 0: the server's limit alone.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub streams: u32,
    /// `grpc-encoding: gzip` (`--compression gzip`): messages sent gzipped, compressed
    /// replies accepted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gzip: bool,
    /// The windows and header table advertised (`--h2-window`, ...).
    #[serde(default, skip_serializing_if = "crate::h2::H2Settings::is_default")]
    pub h2: crate::h2::H2Settings,
}

impl GrpcSpec {
    pub(crate) fn plan(&self, cx: &PlanCx) -> Result<Spoken, SpecError> {
        let mut headers = cx.headers(&self.headers)?;
        if let Some(t) = &self.timeout {
            headers.push(("grpc-timeout".into(), t.clone()));
        }
        if self.gzip {
            headers.push(("grpc-encoding".into(), "gzip".into()));
            headers.push(("grpc-accept-encoding".into(), "gzip".into()));
        }
        let mut body = Vec::with_capacity(1 + self.more_messages.len());
        for m in std::iter::once(&self.message).chain(&self.more_messages) {
            let src = pb_source(m, &mut |t| cx.bytes("-d", t), &mut |t| unescaped("-d", t))?;
            body.push(PbTemplate::compile(&src, &mut |raw| {
                Template::with_secrets(raw, &|n| cx.lookup(n)).map_err(|e| invalid("-d", e))
            })?);
        }
        let request = crate::h2::H2Request::new(&crate::h2::H2RequestSpec {
            method: "POST",
            scheme: if cx.tls { "https" } else { "http" },
            path: &self.path,
            authority: &self.host_header,
            headers: &headers,
            body: None,
            content_type: Some("application/grpc"),
            te_trailers: true,
        })?;
        let request = if self.in_turn {
            request.with_grpc_turns(body)
        } else {
            request.with_grpc_messages(body, self.gzip)
        };
        let protocol = Protocol::H2(H2Plan {
            request,
            expect_status: StatusSet(vec![(200, 200)]),
            streams: self.streams,
            grpc: Some(GrpcMode {
                streaming: self.streaming,
                gzip: self.gzip,
            }),
            settings: self.h2,
        });
        // A scenario's calls carry the same metadata (and their own deadlines); they fill its
        // secrets themselves, literally.
        Ok(Spoken {
            http: Some((self.host_header.clone(), self.headers.clone())),
            ..Spoken::own_words(protocol)
        })
    }
}

/// A part of a gRPC request message (`crate::grpc::Part`) in the spec's words: bytes escaped
/// as `-m` writes them, a text field's value with its placeholders (and `{secret:NAME}`)
/// unfilled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PbPartSpec {
    /// Encoded fields.
    Bytes { bytes: String },
    /// A string or bytes field (number `field`) rendered per message.
    Text { field: u32, value: String },
    /// A message field (number `field`) with holes inside.
    Message { field: u32, parts: Vec<PbPartSpec> },
}

impl PbPartSpec {
    /// The parts of a message without holes.
    pub fn bytes(b: &[u8]) -> Vec<PbPartSpec> {
        vec![PbPartSpec::Bytes { bytes: escape(b) }]
    }

    /// The template the engine renders from `parts`, with `{secret:NAME}` filled by `secret`
    /// (in a text field's value literally: never read as placeholders).
    pub fn template(
        parts: &[PbPartSpec],
        secret: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
    ) -> Result<PbTemplate, SpecError> {
        let secret = std::cell::RefCell::new(secret);
        let lookup = |name: &str| (secret.borrow_mut())(name);
        let src = PbPartSpec::source(parts, "-d", &mut |n| lookup(n))?;
        PbTemplate::compile(&src, &mut |raw| {
            Template::with_secrets(raw, &lookup).map_err(|e| invalid("-d", e))
        })
    }

    /// The parts as bytes, escapes undone (`what` names where they came from in an error):
    /// encoded fields with `{secret:NAME}` filled by `secret`; a text field's value keeps its
    /// `{secret:NAME}`s for its template to fill literally.
    pub fn source(
        parts: &[PbPartSpec],
        what: &'static str,
        secret: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
    ) -> Result<Vec<PartSrc>, SpecError> {
        pb_source(
            parts,
            &mut |text: &str| Ok(fill_secrets(&unescaped(what, text)?, secret)?),
            &mut |text: &str| unescaped(what, text),
        )
    }
}

/// `lit` makes encoded fields' bytes, `text` a text field's raw value.
fn pb_source(
    parts: &[PbPartSpec],
    lit: &mut dyn FnMut(&str) -> Result<Vec<u8>, SpecError>,
    text: &mut dyn FnMut(&str) -> Result<Vec<u8>, SpecError>,
) -> Result<Vec<PartSrc>, SpecError> {
    parts
        .iter()
        .map(|p| {
            Ok(match p {
                PbPartSpec::Bytes { bytes: b } => PartSrc::Lit(lit(b)?),
                PbPartSpec::Text { field, value } => PartSrc::Text {
                    field: *field,
                    raw: text(value)?,
                },
                PbPartSpec::Message { field, parts } => PartSrc::Msg {
                    field: *field,
                    parts: pb_source(parts, lit, text)?,
                },
            })
        })
        .collect()
}
