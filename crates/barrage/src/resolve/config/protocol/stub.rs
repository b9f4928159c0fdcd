//! The recipe's stub protocol: `--stub-word`.

use crate::resolve::cli::RunArgs;
use crate::resolve::config::vertical::{flag, record_as_is, Said, Vertical, Words};
use crate::resolve::redact::Secrets;
use crate::resolve::url;
use crate::usage::Usage;
use barrage_engine::{escape, unescape, ProtocolSpec};
use barrage_scenario::protocol;

pub(super) static VERTICAL: Vertical = Vertical {
    rows: &[&protocol::STUB],
    flags: &[flag("--stub-word", |a| a.stub_word.is_some())],
    own_words: Some("a stub:// request is --stub-word and a number"),
    check: |_, _| Ok(()),
    spec,
    said: |_| Said {
        expect: Some("OK line".into()),
        ..Said::default()
    },
    record: record_as_is,
};

fn spec(
    a: &RunArgs,
    _: &url::Url,
    _: &Words,
    _: &[(String, String)],
    secrets: &mut Secrets,
) -> Result<(ProtocolSpec, Option<String>), Usage> {
    let word = a.stub_word.as_deref().unwrap_or("STUB");
    let raw = unescape(word).map_err(|e| Usage::new("--stub-word", e))?;
    secrets.fill(&raw, "--stub-word")?;
    let spec = barrage_engine::protocols::stub::StubSpec { word: escape(&raw) };
    Ok((ProtocolSpec::Stub(spec), None))
}
