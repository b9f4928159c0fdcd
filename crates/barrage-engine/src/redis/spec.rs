//! A redis run in the spec's words ([`RedisSpec`]): the `--command` mix.

use crate::plan::{Protocol, RedisPlan};
use crate::spec::cx::{SpecError, Spoken};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RedisSpec {
    pub commands: Vec<String>,
    #[serde(default)]
    pub resp3: bool,
}

impl RedisSpec {
    pub(crate) fn plan(&self) -> Result<Spoken, SpecError> {
        let commands = crate::command::Commands::redis(&self.commands)?;
        Ok(Spoken::own_words(Protocol::Redis(RedisPlan {
            commands,
            resp3: self.resp3,
        })))
    }
}
