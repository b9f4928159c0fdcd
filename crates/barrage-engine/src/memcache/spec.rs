//! A memcached run in the spec's words ([`McSpec`]): the `--command` mix.

use crate::plan::{McPlan, Protocol};
use crate::spec::cx::{SpecError, Spoken};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct McSpec {
    pub commands: Vec<String>,
}

impl McSpec {
    pub(crate) fn plan(&self) -> Result<Spoken, SpecError> {
        let commands = crate::command::Commands::memcache(&self.commands)?;
        Ok(Spoken::own_words(Protocol::Memcache(McPlan { commands })))
    }
}
