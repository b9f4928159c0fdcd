//! Raw TCP's vertical: the message flags, `--expect` and `--verify` (the script's flags are
//! `config/script.rs`'s).

use crate::resolve::cli::RunArgs;
use crate::resolve::config::vertical::{
    Flag, Recording, Said, Vertical, Words, EXPECT, FIELDS, FIRST_MESSAGE, MAX_FRAME, MESSAGE,
    MESSAGE_FILE, VERIFY,
};
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
    said,
    record,
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
        verify: a.msg.verify,
    };
    Ok((ProtocolSpec::Tcp(spec), None))
}

fn said(spec: &ProtocolSpec) -> Said<'_> {
    let ProtocolSpec::Tcp(s) = spec else {
        return Said::default();
    };
    Said {
        message: Some(&s.message),
        first_message: s.first_message.as_deref(),
        ..Said::default()
    }
}

fn record(spec: &mut ProtocolSpec, r: &Recording) {
    if let ProtocolSpec::Tcp(s) = spec {
        (r.hide)(&mut s.message, r.message_len);
        if let (Some(f), Some(len)) = (s.first_message.as_mut(), r.first_len) {
            (r.hide)(f, len);
        }
    }
}
