//! redis's and memcached's verticals: a request is a `--command` mix; `--resp3` is redis's.

use crate::resolve::cli::RunArgs;
use crate::resolve::config::vertical::{flag, record_as_is, Said, Vertical, Words, COMMAND};
use crate::resolve::redact::Secrets;
use crate::resolve::url;
use crate::usage::Usage;
use barrage_engine::{McSpec, ProtocolSpec, RedisSpec};
use barrage_scenario::protocol;

pub(super) static REDIS: Vertical = Vertical {
    rows: &[&protocol::REDIS],
    flags: &[COMMAND, flag("--resp3", |a| a.kv.resp3)],
    own_words: Some("a redis:// request is --command"),
    check: |_, _| Ok(()),
    spec: redis,
    said: |spec| match spec {
        ProtocolSpec::Redis(s) => said("RESP reply", &s.commands),
        _ => Said::default(),
    },
    record: record_as_is,
};

pub(super) static MEMCACHE: Vertical = Vertical {
    rows: &[&protocol::MEMCACHE],
    flags: &[COMMAND],
    own_words: Some("a memcache:// request is --command"),
    check: |_, _| Ok(()),
    spec: memcache,
    said: |spec| match spec {
        ProtocolSpec::Memcache(s) => said("memcached reply", &s.commands),
        _ => Said::default(),
    },
    record: record_as_is,
};

fn redis(
    a: &RunArgs,
    _: &url::Url,
    _: &Words,
    _: &[(String, String)],
    _: &mut Secrets,
) -> Result<(ProtocolSpec, Option<String>), Usage> {
    let commands = commands(a, "PING", barrage_engine::redis::Commands::redis)?;
    let resp3 = a.kv.resp3;
    Ok((ProtocolSpec::Redis(RedisSpec { commands, resp3 }), None))
}

fn memcache(
    a: &RunArgs,
    _: &url::Url,
    _: &Words,
    _: &[(String, String)],
    _: &mut Secrets,
) -> Result<(ProtocolSpec, Option<String>), Usage> {
    let default = "get key:{rand%1000}";
    let commands = commands(a, default, barrage_engine::command::Commands::memcache)?;
    Ok((ProtocolSpec::Memcache(McSpec { commands }), None))
}

/// The `--command` mix (or the protocol's default command), checked by compiling it.
fn commands(
    a: &RunArgs,
    default: &str,
    compile: fn(
        &[String],
    )
        -> Result<barrage_engine::redis::Commands, barrage_engine::redis::CommandError>,
) -> Result<Vec<String>, Usage> {
    let given = if a.kv.command.is_empty() {
        vec![default.to_string()]
    } else {
        a.kv.command.clone()
    };
    compile(&given).map_err(|e| Usage::new("--command", e))?;
    Ok(given)
}

fn said<'a>(expect: &str, commands: &[String]) -> Said<'a> {
    Said {
        expect: Some(expect.into()),
        commands: commands.to_vec(),
        ..Said::default()
    }
}
