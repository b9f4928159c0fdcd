//! MQTT's flags checked and turned into its spec: `--publish` (the load), `--subscribe`,
//! `--qos`, the CONNECT fields and the keep-alive. Every mistake is one line naming its flag.

use crate::resolve::cli::RunArgs;
use crate::resolve::config::vertical::{
    flag, Flag, Recording, Said, Vertical, Words, FIELDS, MAX_FRAME, MESSAGE, MESSAGE_FILE,
};
use crate::resolve::redact::Secrets;
use crate::resolve::url::{self, Scheme};
use crate::usage::Usage;
use barrage_engine::spec::MqttSpec;
use barrage_engine::{escape, unescape, ProtocolSpec};
use barrage_scenario::protocol;

pub(super) static VERTICAL: Vertical = Vertical {
    rows: &[&protocol::MQTT],
    flags: &FLAGS,
    own_words: None,
    check,
    spec,
    said,
    record,
};

const FLAGS: [Flag; 14] = [
    flag("--publish", |a| a.mqtt.publish.is_some()),
    flag("--subscribe", |a| a.mqtt.subscribe.is_some()),
    flag("--qos", |a| a.mqtt.qos.is_some()),
    flag("--retain", |a| a.mqtt.retain),
    flag("--client-id", |a| a.mqtt.client_id.is_some()),
    flag("--username", |a| a.mqtt.username.is_some()),
    flag("--password", |a| a.mqtt.password.is_some()),
    flag("--keepalive", |a| a.mqtt.keepalive.is_some()),
    flag("--mqtt-version", |a| a.mqtt.mqtt_version.is_some()),
    flag("--persistent", |a| a.mqtt.persistent),
    MESSAGE,
    MESSAGE_FILE,
    FIELDS,
    MAX_FRAME,
];

/// What MQTT refuses in its own words, and load without anything to publish.
fn check(a: &RunArgs, scheme: Scheme) -> Result<(), Usage> {
    let m = &a.mqtt;
    for (flag, on, why) in [
        (
            "--first-message",
            a.msg.first_message.is_some(),
            "CONNECT opens each connection",
        ),
        (
            "--expect",
            a.msg.expect.is_some(),
            "an acknowledgement is what --qos says",
        ),
        ("--verify", a.msg.verify, "a PUBLISH has no echo"),
    ] {
        if on {
            return Err(Usage::says(
                flag,
                format!("does not apply to {}:// targets: {why}", scheme.name()),
            ));
        }
    }
    if m.publish.is_none() {
        let sends = [
            ("-m/--message", a.msg.message.is_some()),
            ("--message-file", a.msg.message_file.is_some()),
            ("--fields", a.msg.fields.is_some()),
            ("--retain", m.retain),
            ("-n/--requests", a.load.requests.is_some()),
            ("--rate", a.modes.rate.is_some()),
            ("--interval", a.modes.interval.is_some()),
            ("--think", a.modes.think.is_some()),
            ("--rate-stages", a.modes.rate_stages.is_some()),
            ("--pipeline", a.modes.pipeline != 1),
        ];
        for (flag, on) in sends {
            if on {
                return Err(Usage::says(
                    flag,
                    "says what is published: give --publish TOPIC (without it the connections \
                     only subscribe and hold)",
                ));
            }
        }
    }
    Ok(())
}

/// The spec of an MQTT run; the message is the words' (escaped, or `--fields`' text).
fn spec(
    a: &RunArgs,
    _: &url::Url,
    words: &Words,
    _: &[(String, String)],
    secrets: &mut Secrets,
) -> Result<(ProtocolSpec, Option<String>), Usage> {
    for (flag, v) in [
        ("--username", &a.mqtt.username),
        ("--password", &a.mqtt.password),
    ] {
        if let Some(v) = v {
            secrets.fill(v.as_bytes(), flag)?;
        }
    }
    Ok((mqtt_spec(a, words)?, None))
}

fn mqtt_spec(a: &RunArgs, words: &Words) -> Result<ProtocolSpec, Usage> {
    let m = &a.mqtt;
    let version = match m.mqtt_version.as_deref().map(str::trim) {
        None | Some("3.1.1") | Some("311") | Some("4") => barrage_engine::mqtt::V311,
        Some("5") | Some("5.0") => barrage_engine::mqtt::V5,
        Some(v) => {
            return Err(Usage::value(
                "--mqtt-version",
                v,
                "barrage speaks MQTT 3.1.1 and 5: give 3.1.1 or 5",
            ))
        }
    };
    let qos = m.qos.unwrap_or(0);
    if qos > 2 {
        return Err(Usage::value("--qos", qos, "MQTT's QoS is 0, 1 or 2"));
    }
    let keepalive_s = match m.keepalive {
        None => 60,
        Some(d) if d.subsec_nanos() != 0 || d.as_secs() > 65_535 => {
            return Err(Usage::value(
                "--keepalive",
                format!("{d:?}"),
                "MQTT's keep-alive is whole seconds from 0 (none) to 65535 (18h12m15s)",
            ))
        }
        Some(d) => d.as_secs() as u16,
    };
    // A template is checked by compiling it; a credential's mistake never shows its value.
    let template = |flag: &'static str, t: &str| -> Result<(), Usage> {
        let secret = matches!(flag, "--username" | "--password");
        let hidden = || {
            Usage::says(
                flag,
                "is not a valid template (its value is not shown): escapes as -m reads \
                 them, placeholders such as {conn}, {seq%N} with N from 1, {secret:NAME}",
            )
        };
        let raw = unescape(t).map_err(|e| {
            if secret {
                hidden()
            } else {
                Usage::new(flag, e)
            }
        })?;
        barrage_engine::Template::with_secrets(raw, &|_| Some(Vec::new())).map_err(|e| {
            if secret {
                hidden()
            } else {
                Usage::value(flag, format!("'{t}'"), e)
            }
        })?;
        Ok(())
    };
    for (flag, t) in [("--publish", &m.publish), ("--subscribe", &m.subscribe)] {
        if let Some(t) = t {
            if t.is_empty() {
                return Err(Usage::says(
                    flag,
                    "is empty; a topic has at least one character",
                ));
            }
            template(flag, t)?;
        }
    }
    if let Some(f) = &m.subscribe {
        if let Some(why) = barrage_engine::mqtt::filter_fault(f.as_bytes()) {
            return Err(Usage::value("--subscribe", format!("'{f}'"), why));
        }
    }
    if let Some(t) = &m.publish {
        if let Some(w) = barrage_engine::mqtt::wildcard(t.as_bytes()) {
            return Err(Usage::value(
                "--publish",
                format!("'{t}'"),
                format!("'{w}' is a wildcard: a PUBLISH names one topic (wildcards are for --subscribe)"),
            ));
        }
    }
    let client_id = m
        .client_id
        .clone()
        .unwrap_or_else(|| format!("barrage-{:06x}-{{conn}}", run_tag(a)));
    template("--client-id", &client_id)?;
    for (flag, t) in [("--username", &m.username), ("--password", &m.password)] {
        if let Some(t) = t {
            template(flag, t)?;
        }
    }
    if version == barrage_engine::mqtt::V311 && m.password.is_some() && m.username.is_none() {
        return Err(Usage::says(
            "--password",
            "needs --username on MQTT 3.1.1 (a password alone is MQTT 5: --mqtt-version 5)",
        ));
    }
    Ok(ProtocolSpec::Mqtt(Box::new(MqttSpec {
        version,
        client_id,
        username: m.username.clone(),
        password: m.password.clone(),
        keepalive_s,
        clean: !m.persistent,
        publish: m.publish.clone(),
        subscribe: m.subscribe.clone(),
        qos,
        sub_qos: qos,
        retain: m.retain,
        message: if words.fields {
            String::from_utf8_lossy(&words.message).into_owned()
        } else {
            escape(&words.message)
        },
        fields: words.fields,
    })))
}

/// 24 bits for the default client ids, from what the run is (its target and MQTT words,
/// its size, its start time): a publisher and a subscriber run at once get different ids (the
/// same id would take the other's session over), while every shard of one run, which resolves
/// the same command on its own (`--processes`, `--shard`), gets the same.
fn run_tag(a: &RunArgs) -> u32 {
    let m = &a.mqtt;
    let words = format!(
        "{}|{:?}|{:?}|{:?}|{}|{:?}|{:?}|{:?}",
        a.target,
        m.publish,
        m.subscribe,
        m.qos,
        a.load.connections,
        a.msg.message,
        a.output.start_at,
        a.load.more_urls
    );
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in words.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    (barrage_engine::message::splitmix64(h) & 0xff_ffff) as u32
}

/// What the result says a reply is.
fn describe(m: &MqttSpec) -> String {
    let what = match (&m.publish, m.qos) {
        (None, _) => "nothing published".to_string(),
        (Some(_), 0) => "PUBLISH QoS 0 (done when written)".to_string(),
        (Some(_), 1) => "PUBLISH QoS 1, PUBACK".to_string(),
        (Some(_), _) => "PUBLISH QoS 2, PUBCOMP".to_string(),
    };
    match &m.subscribe {
        Some(s) => format!("{what}; subscribed to {s} (QoS {})", m.sub_qos),
        None => what,
    }
}

fn said(spec: &ProtocolSpec) -> Said<'_> {
    let ProtocolSpec::Mqtt(m) = spec else {
        return Said::default();
    };
    Said {
        message: m.publish.as_ref().map(|_| m.message.as_str()),
        expect: Some(describe(m)),
        holds: m.publish.is_none(),
        ..Said::default()
    }
}

fn record(spec: &mut ProtocolSpec, r: &Recording) {
    if let ProtocolSpec::Mqtt(m) = spec {
        (r.hide)(&mut m.message, r.message_len);
    }
}
