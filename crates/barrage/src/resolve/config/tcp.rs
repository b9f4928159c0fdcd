//! Raw TCP's vertical: the message flags, `--expect` and `--verify` (the script's flags are
//! `script.rs`'s).

use super::vertical::{
    Flag, Vertical, Words, EXPECT, FIELDS, FIRST_MESSAGE, MAX_FRAME, MESSAGE, MESSAGE_FILE, VERIFY,
};
use crate::resolve::cli::RunArgs;
use crate::resolve::redact::Secrets;
use crate::resolve::url;
use crate::usage::Usage;
use barrage_engine::{escape, ProtocolSpec, TcpSpec};
use barrage_scenario::protocol;

pub(super) static VERTICAL: Vertical = Vertical {
    rows: &[&protocol::TCP],
    flags: &FLAGS,
    own_words: None,
    check: |_, _| Ok(()),
    spec,
};

const FLAGS: [Flag; 7] = [
    MESSAGE,
    MESSAGE_FILE,
    FIELDS,
    FIRST_MESSAGE,
    EXPECT,
    MAX_FRAME,
    VERIFY,
];

fn spec(
    a: &RunArgs,
    _: &url::Url,
    words: &Words,
    _: &[(String, String)],
    _: &mut Secrets,
) -> Result<(ProtocolSpec, Option<String>), Usage> {
    let spec = TcpSpec {
        message: if words.fields {
            String::from_utf8_lossy(&words.message).into_owned()
        } else {
            escape(&words.message)
        },
        fields: words.fields,
        first_message: words.first.as_deref().map(escape),
        expect: words.expect.clone(),
        verify: a.verify,
    };
    Ok((ProtocolSpec::Tcp(spec), None))
}
