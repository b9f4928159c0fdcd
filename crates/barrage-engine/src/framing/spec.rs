//! A raw TCP run in the spec's words ([`TcpSpec`]) and `--expect`'s grammar
//! ([`parse_expect`]).

use crate::framing::{Delimiter, Framing, LenField, LenPrefix};
use crate::message::{unescape, Template};
use crate::plan::Protocol;
use crate::spec::cx::{invalid, is_false, PlanCx, SpecError, Spoken};
use serde::{Deserialize, Serialize};

/// Raw TCP: a message and how its reply ends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TcpSpec {
    /// Escaped as `-m` reads it (`\r\n`, `\xHH`); with `fields`, a field list as
    /// `--fields` reads it.
    pub message: String,
    /// `message` is typed binary fields (`crate::message::binary`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub fields: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_message: Option<String>,
    /// As `--expect` reads it.
    pub expect: String,
    #[serde(default)]
    pub verify: bool,
}

impl TcpSpec {
    pub(crate) fn plan(&self, cx: &PlanCx) -> Result<Spoken, SpecError> {
        let message = if self.fields {
            crate::message::binary::compile(&self.message, None, Some(&|n| cx.lookup(n)))
                .map_err(|e| invalid("--fields", e))?
        } else {
            Template::new(cx.bytes("--message", &self.message)?)
        };
        let first_message = match &self.first_message {
            Some(t) => Some(Template::new(cx.bytes("--first-message", t)?)),
            None => None,
        };
        let framing = parse_expect(&self.expect).map_err(|e| invalid("--expect", e))?;
        Ok(Spoken {
            protocol: Protocol::Tcp,
            message,
            first_message,
            framing,
            verify: self.verify,
            http: None,
        })
    }
}

/// `--expect`'s grammar: `echo`, `bytes:N`, `line`, `delim:TEXT`, `len:KIND`, `none`. The
/// error says how to fix the value.
pub fn parse_expect(spec: &str) -> Result<Framing, String> {
    let (kind, arg) = spec.split_once(':').unwrap_or((spec, ""));
    Ok(match (kind, arg) {
        ("echo", "") => Framing::Echo,
        ("line", "") => Framing::Line,
        ("none", "") => Framing::None,
        ("bytes", n) => {
            let n: u64 = n.parse().map_err(|_| {
                "write bytes:N with N the reply size in bytes, e.g. bytes:64".to_string()
            })?;
            if n == 0 {
                return Err("N must be at least 1 (use --expect none for no reply)".into());
            }
            Framing::Bytes(n)
        }
        ("delim", t) => {
            let b = unescape(t).map_err(|e| e.to_string())?;
            Framing::Delim(Delimiter::new(&b).ok_or("the delimiter is empty, e.g. delim:\\r\\n")?)
        }
        ("mqtt", "") => Framing::Field(LenField::MQTT),
        ("field", f) => Framing::Field(LenField::parse(f)?),
        ("len", k) => Framing::Len(match k {
            "u16be" => LenPrefix::U16Be,
            "u16le" => LenPrefix::U16Le,
            "u32be" => LenPrefix::U32Be,
            "u32le" => LenPrefix::U32Le,
            _ => return Err("the prefix is one of u16be, u16le, u32be, u32le".into()),
        }),
        _ => {
            return Err("unknown framing; use echo, bytes:N, line, delim:TEXT, \
                 len:u16be|u16le|u32be|u32le, field:OFFSET:TYPE[:ADJUST[:STRIP]], mqtt or none"
                .into())
        }
    })
}
