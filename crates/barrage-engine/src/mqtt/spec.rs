//! An MQTT run in the spec's words ([`MqttSpec`]).

use crate::message::Template;
use crate::plan::{MqttPlan, Protocol};
use crate::spec::cx::{invalid, is_false, PlanCx, SpecError, Spoken};
use serde::{Deserialize, Serialize};

/// An MQTT run in the spec's words: templates escaped as `-m` reads them, `{secret:NAME}`
/// left in (the user name and password are always redacted from outputs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MqttSpec {
    /// 4 (3.1.1) or 5 (5.0).
    pub version: u8,
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    pub keepalive_s: u16,
    pub clean: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<String>,
    pub qos: u8,
    pub sub_qos: u8,
    #[serde(default, skip_serializing_if = "is_false")]
    pub retain: bool,
    /// The payload (`-m`), or typed binary fields with `fields`.
    pub message: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub fields: bool,
}

impl MqttSpec {
    /// The user name and password are always secret.
    pub fn redact(&mut self) {
        for v in [&mut self.username, &mut self.password]
            .into_iter()
            .flatten()
        {
            *v = "<redacted>".into();
        }
    }

    pub(crate) fn plan(&self, cx: &PlanCx) -> Result<Spoken, SpecError> {
        let opt = |what: &'static str, text: &Option<String>| match text {
            Some(x) => cx.template(what, x).map(Some),
            None => Ok(None),
        };
        let payload = if self.fields {
            crate::message::binary::compile(&self.message, None, Some(&|n| cx.lookup(n)))
                .map_err(|e| invalid("--fields", e))?
        } else {
            cx.template("--message", &self.message)?
        };
        let publish = opt("--publish", &self.publish)?;
        if let Some(why) = publish
            .as_ref()
            .and_then(|t| crate::mqtt::secret_topic_fault(t, "--subscribe"))
        {
            return Err(invalid("--publish", why));
        }
        let client_id = cx.template("--client-id", &self.client_id)?;
        let username = opt("--username", &self.username)?;
        let password = opt("--password", &self.password)?;
        let subscribe = opt("--subscribe", &self.subscribe)?;
        // Over 65,535 bytes cannot be said: refused here, before any connection.
        let said: [(&'static str, &str, Option<&Template>); 5] = [
            ("--publish", "the topic", publish.as_ref()),
            ("--subscribe", "the topic filter", subscribe.as_ref()),
            ("--client-id", "the client id", Some(&client_id)),
            ("--username", "the user name", username.as_ref()),
            ("--password", "the password", password.as_ref()),
        ];
        for (what, name, t) in said {
            if let Some(why) = t.and_then(|t| crate::mqtt::too_long(t, name)) {
                return Err(invalid(what, why));
            }
        }
        let protocol = Protocol::Mqtt(Box::new(MqttPlan {
            version: self.version,
            client_id,
            username,
            password,
            keepalive_s: self.keepalive_s,
            clean: self.clean,
            publish,
            subscribe,
            qos: self.qos,
            sub_qos: self.sub_qos,
            retain: self.retain,
            max_packet: cx.max_frame(),
        }));
        Ok(Spoken {
            protocol,
            message: payload,
            first_message: None,
            framing: crate::framing::Framing::None,
            verify: false,
            http: None,
        })
    }
}
