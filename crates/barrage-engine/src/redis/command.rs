//! Redis's `--command` grammar: every word a RESP bulk string (static ones encoded once,
//! placeholders with their length computed after filling). The weighted mix, the parts and
//! their rendering are shared with memcached ([`crate::command`]).

use crate::command::{CommandError, Commands, Part, Sized};

impl Commands {
    /// Redis commands, RESP-encoded (names as written; redis ignores their case).
    pub fn redis(specs: &[String]) -> Result<Commands, CommandError> {
        Self::build(specs, |_spec, words| {
            let name = String::from_utf8_lossy(words[0].raw()).to_uppercase();
            let mut parts = vec![Part::Lit(
                format!("*{}\r\n", words.len()).into_bytes().into(),
            )];
            for w in words {
                if w.is_static() {
                    let mut b = format!("${}\r\n", w.raw().len()).into_bytes();
                    b.extend_from_slice(w.raw());
                    b.extend_from_slice(b"\r\n");
                    parts.push(Part::Lit(b.into()));
                } else {
                    parts.push(Part::Bulk(Sized::new(w)));
                }
            }
            Ok((name, parts))
        })
    }
}
