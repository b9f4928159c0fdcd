//! A WebSocket run in the spec's words ([`WsSpec`]).

use crate::message::Template;
use crate::plan::{Protocol, WsPlan};
use crate::spec::cx::{invalid, PlanCx, SpecError, Spoken};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WsSpec {
    pub path: String,
    pub host_header: String,
    pub headers: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subprotocol: Option<String>,
    pub binary: bool,
    pub max_message: u64,
    pub message: String,
    pub expect: String,
    #[serde(default)]
    pub verify: bool,
}

impl WsSpec {
    pub(crate) fn plan(&self, cx: &PlanCx) -> Result<Spoken, SpecError> {
        let headers = cx.headers(&self.headers)?;
        let message = Template::new(cx.bytes("--message", &self.message)?);
        let framing =
            crate::framing::spec::parse_expect(&self.expect).map_err(|e| invalid("--expect", e))?;
        let protocol = Protocol::Ws(WsPlan {
            host_header: self.host_header.clone(),
            path: self.path.clone(),
            headers,
            subprotocol: self.subprotocol.clone(),
            binary: self.binary,
            max_message: self.max_message,
        });
        Ok(Spoken {
            protocol,
            message,
            first_message: None,
            framing,
            verify: self.verify,
            http: None,
        })
    }
}
