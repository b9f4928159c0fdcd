//! What a step sends, compiled: an MQTT packet, an HTTP request, a gRPC call.

use super::{dur, err, Builder, CompileError};
use crate::message::Template;
use crate::users::StepMsg;
use barrage_scenario::model::Step;

impl Builder<'_> {
    /// An MQTT step: a publish (send or fields, to its topic), a subscribe or an unsubscribe.
    pub(super) fn mqtt(&self, s: &Step, key: &str) -> Result<StepMsg, CompileError> {
        use crate::users::{MqttStep, MqttStepKind};
        let version = self.cx.mqtt.unwrap_or(crate::mqtt::V311);
        let qos = s.mqtt.qos.as_ref().map_or(0, |q| q.value);
        // Over 65,535 bytes cannot be said: refused here when known (a `{name}`'s value is
        // checked per message).
        let string = |text: &str, k: String, what: &str| -> Result<Template, CompileError> {
            let t = self.template(text, &k)?;
            match crate::mqtt::too_long(&t, what) {
                Some(why) => Err(err(k, why)),
                None => Ok(t),
            }
        };
        let kind = if let Some(f) = &s.mqtt.subscribe {
            MqttStepKind::Subscribe {
                filter: string(&f.value, format!("{key}.subscribe"), "the topic filter")?,
                qos,
            }
        } else if let Some(f) = &s.mqtt.unsubscribe {
            MqttStepKind::Unsubscribe {
                filter: string(&f.value, format!("{key}.unsubscribe"), "the topic filter")?,
            }
        } else {
            let t = s
                .mqtt
                .topic
                .as_ref()
                .ok_or_else(|| err(key, "a publish names its topic: topic = \"...\""))?;
            let payload = match (&s.send, &s.fields) {
                (Some(m), _) => self.template(&m.value, &format!("{key}.send"))?,
                (None, Some(f)) => crate::message::binary::compile(
                    &f.value,
                    Some(&self.resolve()),
                    Some(self.cx.secret),
                )
                .map_err(|e| err(format!("{key}.fields"), e))?,
                (None, None) => return Err(err(key, "a publish sends send or fields")),
            };
            let topic = string(&t.value, format!("{key}.topic"), "the topic")?;
            if let Some(why) = crate::mqtt::secret_topic_fault(&topic, "subscribe") {
                return Err(err(format!("{key}.topic"), why));
            }
            MqttStepKind::Publish {
                topic,
                payload,
                qos,
                retain: s.mqtt.retain.as_ref().is_some_and(|r| r.value),
            }
        };
        Ok(StepMsg::Mqtt(Box::new(MqttStep { version, kind })))
    }

    pub(super) fn request(&self, s: &Step, path: &str, key: &str) -> Result<StepMsg, CompileError> {
        if !self.cx.http {
            return Err(err(
                format!("{key}.path"),
                "requests are for http:// targets",
            ));
        }
        let method = s.http.method.as_ref().map_or("GET", |m| m.value.as_str());
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\n",
            self.cx.host_header
        );
        let given = |name: &str| {
            let n = name.to_ascii_lowercase();
            s.http.headers.iter().any(|h| {
                h.value
                    .split_once(':')
                    .is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case(&n))
            }) || self
                .cx
                .headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case(&n))
        };
        if !given("user-agent") {
            head.push_str(&format!("User-Agent: {}\r\n", crate::http::USER_AGENT));
        }
        if !given("accept") {
            head.push_str("Accept: */*\r\n");
        }
        self.header_lines(s, key, &mut head)?;
        // The head as written is a template: its `{var}`s are resolved like a message's (it
        // holds no escapes, so it is not unescaped).
        let head =
            Template::with_vars_and_secrets(head.into_bytes(), self.resolve(), self.cx.secret)
                .map_err(|e| err(format!("{key}.path"), e))?;
        let body = match &s.http.body {
            Some(b) => Some(self.template(&b.value, &format!("{key}.body"))?),
            None => None,
        };
        Ok(StepMsg::Http { head, body })
    }

    /// The protocol's headers, then the step's, as header lines.
    fn header_lines(&self, s: &Step, key: &str, head: &mut String) -> Result<(), CompileError> {
        for (k, v) in self.cx.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        for h in &s.http.headers {
            let Some((k, v)) = h.value.split_once(':') else {
                return Err(err(
                    format!("{key}.headers"),
                    format!("'{}' is not 'Name: value'", h.value),
                ));
            };
            head.push_str(&format!("{}: {}\r\n", k.trim(), v.trim()));
        }
        Ok(())
    }

    /// An `rpc` step: the call's HTTP/2 request written as an HTTP/1.1 head (the session
    /// frames it), and its message with the user's `{var}`s.
    pub(super) fn call(
        &self,
        s: &Step,
        c: &crate::grpc::StepCall,
        key: &str,
    ) -> Result<StepMsg, CompileError> {
        let timeout = s
            .timeout
            .as_ref()
            .or(s.expect.as_ref().and_then(|e| e.value.timeout.as_ref()));
        let timeout = match timeout {
            Some(t) => std::time::Duration::from_nanos(dur(&t.value, &format!("{key}.timeout"))?),
            None => self.cx.timeout,
        };
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\ncontent-type: application/grpc\r\nte: trailers\r\n\
             grpc-timeout: {}\r\n",
            c.path,
            self.cx.host_header,
            crate::grpc::timeout_value(timeout),
        );
        self.header_lines(s, key, &mut head)?;
        let head =
            Template::with_vars_and_secrets(head.into_bytes(), self.resolve(), self.cx.secret)
                .map_err(|e| err(format!("{key}.headers"), e))?;
        let msg = c
            .messages
            .iter()
            .map(|m| {
                crate::grpc::PbTemplate::compile(m, &mut |raw| {
                    Template::with_vars_and_secrets(raw, self.resolve(), self.cx.secret)
                        .map_err(|e| err(format!("{key}.data"), e))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(StepMsg::Grpc {
            head,
            msg,
            streaming: c.streaming,
        })
    }
}
