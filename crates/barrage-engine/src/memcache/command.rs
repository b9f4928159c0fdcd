//! memcached's `--command` grammar: which text commands barrage sends, what each takes, and
//! their framing (storage commands with flags 0, exptime 0 and the byte count of the filled
//! value). The weighted mix, the parts and their rendering are shared with redis
//! ([`crate::command`]).

use crate::command::{CommandError, Commands, McCommandError, Part, Sized};
use crate::message::Template;

/// memcached's key length limit.
const MAX_KEY: usize = 250;

impl Commands {
    /// memcached text-protocol commands (names lower case, as memcached wants them).
    pub fn memcache(specs: &[String]) -> Result<Commands, CommandError> {
        Self::build(specs, mc_parts)
    }
}

fn mc_parts(spec: &str, words: Vec<Template>) -> Result<(String, Vec<Part>), CommandError> {
    let name = String::from_utf8_lossy(words[0].raw()).to_lowercase();
    let args = &words[1..];
    let wrong = |expects| {
        McCommandError::Args {
            spec: spec.to_string(),
            name: name.clone(),
            expects,
        }
        .into()
    };
    for key in args.iter().take(match name.as_str() {
        "get" | "gets" => args.len(),
        _ => 1,
    }) {
        let raw = key.raw();
        if raw.len() > MAX_KEY || raw.is_empty() || raw.iter().any(|c| *c <= b' ' || *c == 0x7f) {
            return Err(McCommandError::Key(spec.to_string()).into());
        }
    }
    let number = |t: &Template, what| {
        if t.is_static() && (t.raw().is_empty() || !t.raw().iter().all(u8::is_ascii_digit)) {
            Err(McCommandError::Number(spec.to_string(), what))
        } else {
            Ok(())
        }
    };
    // The words were valid templates and spaces join them, so no placeholder can span two
    // words and the joined text parses the same.
    let joined = |raw: Vec<u8>| {
        Template::try_new(raw)
            .map(Part::Fill)
            .map_err(|e| CommandError::Placeholder(spec.to_string(), e))
    };
    let line = |parts: &[&Template]| {
        let mut raw = name.clone().into_bytes();
        for p in parts {
            raw.push(b' ');
            raw.extend_from_slice(p.raw());
        }
        raw.extend_from_slice(b"\r\n");
        joined(raw)
    };
    let parts = match name.as_str() {
        "get" | "gets" => {
            if args.is_empty() {
                return Err(wrong("one or more keys: 'get KEY [KEY...]'"));
            }
            vec![line(&args.iter().collect::<Vec<_>>())?]
        }
        "set" | "add" | "replace" | "append" | "prepend" => {
            let [key, value] = args else {
                return Err(wrong(
                    "a key and a value: 'set KEY VALUE' (quote a value with spaces)",
                ));
            };
            let mut head = name.clone().into_bytes();
            head.push(b' ');
            head.extend_from_slice(key.raw());
            head.extend_from_slice(b" 0 0 ");
            vec![joined(head)?, Part::Block(Sized::new(value.clone()))]
        }
        "delete" => {
            let [key] = args else {
                return Err(wrong("one key: 'delete KEY'"));
            };
            vec![line(&[key])?]
        }
        "incr" | "decr" => {
            let [key, n] = args else {
                return Err(wrong("a key and a number: 'incr KEY N'"));
            };
            number(n, "amount")?;
            vec![line(&[key, n])?]
        }
        "touch" => {
            let [key, t] = args else {
                return Err(wrong("a key and an expiry in seconds: 'touch KEY SECONDS'"));
            };
            number(t, "expiry")?;
            vec![line(&[key, t])?]
        }
        _ => {
            return Err(McCommandError::Unknown {
                spec: spec.to_string(),
                name,
            }
            .into())
        }
    };
    Ok((name, parts))
}
