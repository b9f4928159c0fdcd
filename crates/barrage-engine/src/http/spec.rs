//! An HTTP run in the spec's words ([`HttpSpec`]): HTTP/1.1, HTTP/2, or either as each TLS
//! connection's ALPN says.

use crate::h2::H2Settings;
use crate::plan::{AutoPlan, H2Plan, HttpPlan, Protocol, StatusSet};
use crate::spec::cx::{is_one, one, PlanCx, SpecError, Spoken};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HttpSpec {
    pub method: String,
    pub path: String,
    pub host_header: String,
    pub headers: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Success statuses as inclusive ranges.
    pub expect_status: Vec<(u16, u16)>,
    /// HTTP/1.1, or HTTP/2 (h2c with prior knowledge; over TLS by ALPN).
    #[serde(default, skip_serializing_if = "HttpVersion::is_h1")]
    pub version: HttpVersion,
    /// HTTP/2: streams in flight per connection at most (`--streams`; 0: the server's
    /// limit alone, an open loop's default).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub streams: u32,
    /// HTTP/2: the windows and header table advertised (`--h2-window`, ...).
    #[serde(default, skip_serializing_if = "H2Settings::is_default")]
    pub h2: H2Settings,
}

/// Which HTTP a run speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HttpVersion {
    #[default]
    H1,
    H2,
    /// `https://`: h2 or HTTP/1.1, as each connection's ALPN says.
    Auto,
}

impl HttpVersion {
    pub fn is_h1(&self) -> bool {
        *self == HttpVersion::H1
    }
}

impl HttpSpec {
    pub fn info(&self) -> &'static barrage_scenario::protocol::ProtocolInfo {
        use barrage_scenario::protocol as p;
        match self.version {
            HttpVersion::H2 => &p::H2,
            _ => &p::HTTP,
        }
    }

    pub(crate) fn plan(&self, cx: &PlanCx) -> Result<Spoken, SpecError> {
        let headers = cx.headers(&self.headers)?;
        let body = match &self.body {
            Some(b) => Some(cx.bytes("--body", b)?),
            None => None,
        };
        let h2 = || -> Result<H2Plan, SpecError> {
            let request = crate::h2::H2Request::new(&crate::h2::H2RequestSpec {
                method: &self.method,
                scheme: if cx.tls { "https" } else { "http" },
                path: &self.path,
                authority: &self.host_header,
                headers: &headers,
                body: body.as_deref(),
                content_type: None,
                te_trailers: false,
            })?;
            Ok(H2Plan {
                request,
                expect_status: StatusSet(self.expect_status.clone()),
                streams: self.streams,
                grpc: None,
                settings: self.h2,
            })
        };
        let protocol = if self.version == HttpVersion::H2 {
            Protocol::H2(h2()?)
        } else {
            let request = crate::http::RequestTemplate::new(&crate::http::RequestSpec {
                method: &self.method,
                path: &self.path,
                host_header: &self.host_header,
                headers: &headers,
                body: body.as_deref(),
                keep_alive: true,
            })?;
            let h1 = HttpPlan {
                request,
                expect_status: StatusSet(self.expect_status.clone()),
            };
            if self.version == HttpVersion::Auto {
                Protocol::HttpAuto(Box::new(AutoPlan { h1, h2: h2()? }))
            } else {
                Protocol::Http(h1)
            }
        };
        // A scenario's requests fill the secrets themselves, literally.
        Ok(Spoken {
            http: Some((self.host_header.clone(), self.headers.clone())),
            ..Spoken::own_words(protocol)
        })
    }
}
