//! `barrage run`'s MQTT flags (mqtt://, mqtts://), flattened into `RunArgs`.

use super::units;
use clap::Args;
use std::time::Duration;

#[derive(Args, Debug, Clone, Default)]
pub struct MqttArgs {
    /// Publish each message (-m, --fields) to this topic: the load. Placeholders {conn}
    /// {conn%N} {seq} {seq%N} {rand%N}, e.g. 'room/{conn%100}'
    #[arg(long, value_name = "TOPIC", help_heading = "MQTT")]
    pub publish: Option<String>,

    /// Each connection subscribes to this topic filter when it connects (wildcards + and #
    /// allowed; placeholders as --publish); what the broker delivers is counted. Without
    /// --publish the connections only subscribe and hold
    #[arg(long, value_name = "FILTER", help_heading = "MQTT")]
    pub subscribe: Option<String>,

    /// QoS of what is published and of the subscription: 0 (done when written), 1 (PUBACK)
    /// or 2 (PUBREC, PUBREL, PUBCOMP) [default: 0]
    #[arg(long, value_name = "0|1|2", value_parser = qos, allow_hyphen_values = true, help_heading = "MQTT")]
    pub qos: Option<u8>,

    /// Publish with the retain flag
    #[arg(long, help_heading = "MQTT")]
    pub retain: bool,

    /// The client identifier; {conn} makes each connection's its own [default:
    /// barrage-TAG-{conn}, TAG a hash of the target, the MQTT flags, -c, -m and --start-at:
    /// the same for every shard of a run; two identical commands at once need their own]
    #[arg(long, value_name = "TEMPLATE", help_heading = "MQTT")]
    pub client_id: Option<String>,

    /// CONNECT's user name ({secret:NAME} reads it from the environment); redacted from
    /// every output
    #[arg(long, value_name = "NAME", help_heading = "MQTT")]
    pub username: Option<String>,

    /// CONNECT's password; write {secret:NAME} to read it from the environment; redacted from
    /// every output
    #[arg(long, value_name = "TEXT", help_heading = "MQTT")]
    pub password: Option<String>,

    /// Keep-alive: a connection that sent nothing for half of it sends PINGREQ (counted
    /// apart); whole seconds, 0 for none [default: 60s]
    #[arg(long, value_parser = keepalive, allow_hyphen_values = true, value_name = "D", help_heading = "MQTT")]
    pub keepalive: Option<Duration>,

    /// The protocol version: 3.1.1 or 5 [default: 3.1.1]
    #[arg(
        long,
        value_name = "V",
        allow_hyphen_values = true,
        help_heading = "MQTT"
    )]
    pub mqtt_version: Option<String>,

    /// Keep the broker's session state (clean session off; 5.0: clean start off)
    #[arg(long, help_heading = "MQTT")]
    pub persistent: bool,
}

/// `--qos`: 0, 1 or 2 (a negative one is this flag's mistake, not an unknown argument).
fn qos(s: &str) -> Result<u8, String> {
    match s.trim() {
        "0" => Ok(0),
        "1" => Ok(1),
        "2" => Ok(2),
        _ => Err("MQTT's QoS is 0, 1 or 2".into()),
    }
}

/// `--keepalive`: whole seconds from 0 (none) to 65535.
fn keepalive(s: &str) -> Result<Duration, String> {
    const RANGE: &str = "MQTT's keep-alive is whole seconds from 0 (none) to 65535 (18h12m15s)";
    let d = units::duration(s).map_err(|e| format!("{e}; {RANGE}"))?;
    if d.subsec_nanos() != 0 || d.as_secs() > 65_535 {
        return Err(RANGE.into());
    }
    Ok(d)
}
