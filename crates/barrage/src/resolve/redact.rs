//! Keeping secrets out of every output: the command line and the config stored in results,
//! the target URL wherever it is printed, and `{secret:NAME}` values from the environment.
//!
//! Key decision: redaction happens once, where the record is made (the command line, the
//! `RunConfig`, the target's display URL), so every renderer (text, JSON, HTML, Markdown,
//! compare) and every offline re-render only ever sees redacted text. `{secret:NAME}` values
//! are filled into the bytes the engine sends, never into what is shown: the shown text keeps
//! the placeholder, and [`Secrets::scrub`] removes a filled value from any message that could
//! still quote it (a usage error about a header, say).

use crate::usage::Usage;

/// Header names whose values never reach an output file.
const SECRET_HEADERS: [&str; 7] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
    "x-auth-token",
];

/// Query parameter names whose values are redacted (compared case-insensitively).
pub const SECRET_PARAMS: [&str; 14] = [
    "auth",
    "code",
    "credential",
    "jwt",
    "pass",
    "passwd",
    "pwd",
    "session",
    "sessionid",
    "sid",
    "sig",
    "x-amz-credential",
    "x-amz-signature",
    "x-amz-security-token",
];

/// A query parameter whose name ends with one of these is a secret too: `token`,
/// `access_token`, `api_key`, `apikey`, `client_secret`, `password`, `signature` ...
pub const SECRET_PARAM_ENDINGS: [&str; 5] = ["token", "key", "secret", "password", "signature"];

/// What replaces a secret value.
pub const REDACTED: &str = "[redacted]";

/// What replaces a secret body or message of `len` bytes (`--secret-body`).
pub fn hidden(len: usize) -> String {
    format!("[redacted {len} bytes]")
}

fn is_secret_param(name: &str, extra: &[String]) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_PARAMS.contains(&lower.as_str())
        || SECRET_PARAM_ENDINGS.iter().any(|e| lower.ends_with(e))
        || extra.iter().any(|x| x.trim().eq_ignore_ascii_case(&lower))
}

/// `url` with its user info (`USER:PASSWORD@`, a `--proxy`'s credentials) and the values of
/// secret query parameters (the built-in list and `extra`, from `--redact`) replaced by
/// `[redacted]`. Anything without either comes back unchanged.
pub fn url(url: &str, extra: &[String]) -> String {
    let url = &userinfo(url);
    let Some((head, rest)) = url.split_once('?') else {
        return url.to_string();
    };
    let (query, fragment) = match rest.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (rest, None),
    };
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((name, _)) if is_secret_param(name, extra) => format!("{name}={REDACTED}"),
            _ => p.to_string(),
        })
        .collect();
    let mut out = format!("{head}?{}", params.join("&"));
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// `SCHEME://USER:PASSWORD@HOST...` as `SCHEME://[redacted]@HOST...`.
fn userinfo(u: &str) -> String {
    let Some((scheme, rest)) = u.split_once("://") else {
        return u.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://{REDACTED}@{host}{tail}"),
        None => u.to_string(),
    }
}

/// The command line with secrets replaced: values of secret headers (the built-in list and
/// `extra`), secret query parameters in any URL, and with `secret_body` the values of
/// `--body`, `-m/--message` and `--first-message`.
pub fn argv(argv: &[String], extra: &[String], secret_body: bool) -> Vec<String> {
    let header = |h: &str| -> Option<String> {
        let (name, _) = h.split_once(':')?;
        let lower = name.trim().to_ascii_lowercase();
        let secret = SECRET_HEADERS.contains(&lower.as_str())
            || extra.iter().any(|x| x.trim().eq_ignore_ascii_case(&lower));
        secret.then(|| format!("{}: {REDACTED}", name.trim()))
    };
    const BODIES: [&str; 4] = ["--body", "--message", "-m", "--first-message"];
    // Values that are secret whatever is asked (MQTT's CONNECT credentials).
    const CREDENTIALS: [&str; 2] = ["--username", "--password"];
    // Outputs whose URLs hold credentials in their own ways: a proxy's user info even without
    // a scheme (`--proxy u:pw@host:port`), InfluxDB 1.x's `u` and `p` parameters.
    let output = |flag: &str, v: &str| -> String {
        match flag {
            "--proxy" if !v.contains("://") => userinfo(&format!("http://{v}"))
                .trim_start_matches("http://")
                .to_string(),
            "--influx" => url(v, &["u".into(), "p".into()]),
            _ => v.to_string(),
        }
    };
    let mut out = Vec::with_capacity(argv.len());
    let mut next: Option<&str> = None;
    for a in argv {
        let a = url(a, extra);
        match next.take() {
            Some("-H") => {
                out.push(header(&a).unwrap_or(a));
                continue;
            }
            Some(flag @ ("--proxy" | "--influx")) => {
                out.push(output(flag, &a));
                continue;
            }
            Some("credential") => {
                out.push(REDACTED.into());
                continue;
            }
            Some(_) => {
                out.push(hidden(a.len()));
                continue;
            }
            None => {}
        }
        if a == "-H" || a == "--header" {
            next = Some("-H");
            out.push(a);
        } else if a == "--proxy" || a == "--influx" {
            next = Some(if a == "--proxy" {
                "--proxy"
            } else {
                "--influx"
            });
            out.push(a);
        } else if let Some((flag @ ("--proxy" | "--influx"), v)) = a.split_once('=') {
            out.push(format!("{flag}={}", output(flag, v)));
        } else if let Some(h) = a.strip_prefix("--header=") {
            out.push(header(h).map_or_else(|| a.clone(), |r| format!("--header={r}")));
        } else if let Some(h) = a.strip_prefix("-H").filter(|h| !h.is_empty()) {
            out.push(header(h).map_or_else(|| a.clone(), |r| format!("-H{r}")));
        } else if CREDENTIALS.contains(&a.as_str()) {
            next = Some("credential");
            out.push(a);
        } else if let Some((flag, _)) = a.split_once('=').filter(|(f, _)| CREDENTIALS.contains(f)) {
            out.push(format!("{flag}={REDACTED}"));
        } else if secret_body && BODIES.contains(&a.as_str()) {
            next = Some("body");
            out.push(a);
        } else if let Some((flag, value)) = a
            .split_once('=')
            .filter(|(f, _)| secret_body && BODIES.contains(f))
        {
            out.push(format!("{flag}={}", hidden(value.len())));
        } else if let Some(value) = a
            .strip_prefix("-m")
            .filter(|v| secret_body && !v.is_empty())
        {
            out.push(format!("-m{}", hidden(value.len())));
        } else {
            out.push(a);
        }
    }
    out
}

/// The `{secret:NAME}` values filled so far, to fill more and to scrub messages.
#[derive(Default)]
pub struct Secrets {
    filled: Vec<(String, Vec<u8>)>,
}

impl Secrets {
    /// `raw` with every `{secret:NAME}` replaced by the environment variable NAME; `what`
    /// names the flag or file for the error.
    pub fn fill(&mut self, raw: &[u8], what: &str) -> Result<Vec<u8>, Usage> {
        barrage_engine::message::fill_secrets(raw, &mut |name| self.lookup(name))
            .map_err(|e| Usage::new(what, e))
    }

    /// The value of the environment variable `name`, remembered so that no message quotes it.
    pub fn lookup(&mut self, name: &str) -> Option<Vec<u8>> {
        let value = barrage_engine::os::env_bytes(name)?;
        if !self.filled.iter().any(|(n, _)| n == name) {
            self.filled.push((name.to_string(), value.clone()));
        }
        Some(value)
    }

    /// [`Secrets::fill`] for text that must stay UTF-8 (URLs, headers).
    pub fn fill_str(&mut self, raw: &str, what: &str) -> Result<String, Usage> {
        let filled = self.fill(raw.as_bytes(), what)?;
        String::from_utf8(filled).map_err(|_| {
            Usage::new(
                what,
                "a {secret:NAME} value is not UTF-8; it cannot go into a URL or header",
            )
        })
    }

    /// `text` with every filled value put back as its placeholder.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (name, value) in &self.filled {
            if let Ok(v) = std::str::from_utf8(value) {
                if !v.is_empty() {
                    out = out.replace(v, &format!("{{secret:{name}}}"));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn proxy_and_influx_credentials_are_redacted_in_every_spelling() {
        let args: Vec<String> = [
            "barrage",
            "http://127.0.0.1:1/",
            "--proxy",
            "ann:pw1@127.0.0.1:3128",
            "--proxy=http://bob:pw2@127.0.0.1:3128",
            "--influx",
            "http://127.0.0.1:8086/write?db=x&u=me&p=pw3",
            "--influx=http://127.0.0.1:8086/write?p=pw4",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let out = argv(&args, &[], false).join(" ");
        for pw in ["pw1", "pw2", "pw3", "pw4", "u=me"] {
            assert!(!out.contains(pw), "{pw} in {out}");
        }
        assert!(
            out.contains("127.0.0.1:3128") && out.contains("db=x"),
            "{out}"
        );
    }

    #[test]
    fn secret_headers_are_redacted_in_every_spelling() {
        let argv = strings(&[
            "barrage",
            "http://127.0.0.1/",
            "-H",
            "Authorization: Bearer s3cret",
            "--header=Cookie: id=s3cret",
            "-HX-Api-Key: s3cret",
            "-H",
            "X-Session: s3cret",
            "-H",
            "Accept: text/plain",
        ]);
        let out = super::argv(&argv, &strings(&["X-Session"]), false).join(" ");
        assert!(!out.contains("s3cret"), "{out}");
        assert!(out.contains("Authorization: [redacted]"));
        assert!(out.contains("Accept: text/plain"));
    }

    #[test]
    fn query_tokens_are_redacted_from_urls() {
        let cases = [
            (
                "http://h/p?token=s3cret&page=2",
                "http://h/p?token=[redacted]&page=2",
            ),
            (
                "ws://h/?Access_Token=s3cret#frag",
                "ws://h/?Access_Token=[redacted]#frag",
            ),
            (
                "http://h/?api_key=s3cret&password=s3cret&sig=s3cret&x=1",
                "http://h/?api_key=[redacted]&password=[redacted]&sig=[redacted]&x=1",
            ),
            ("http://h/?mine=s3cret", "http://h/?mine=[redacted]"),
            ("http://h/?page=2&flag", "http://h/?page=2&flag"),
            ("tcp://127.0.0.1:7000", "tcp://127.0.0.1:7000"),
        ];
        for (input, want) in cases {
            assert_eq!(url(input, &strings(&["MINE"])), want);
        }
    }

    #[test]
    fn mqtt_credentials_are_always_hidden_in_the_command_line() {
        let argv = strings(&[
            "barrage",
            "mqtt://127.0.0.1",
            "--username",
            "s3cret",
            "--password=s3cret",
            "--publish",
            "t",
        ]);
        let out = super::argv(&argv, &[], false).join(" ");
        assert_eq!(
            out,
            "barrage mqtt://127.0.0.1 --username [redacted] --password=[redacted] --publish t"
        );
    }

    #[test]
    fn secret_body_hides_body_message_and_first_message_in_the_command_line() {
        let argv = strings(&[
            "barrage",
            "http://h/?token=s3cret",
            "--body",
            "s3cret",
            "--first-message=s3cret",
            "-m",
            "s3cret",
            "-ms3cret",
            "--secret-body",
        ]);
        let out = super::argv(&argv, &[], true).join(" ");
        assert!(!out.contains("s3cret"), "{out}");
        assert!(out.contains("--body [redacted 6 bytes]"), "{out}");
        assert!(out.contains("--first-message=[redacted 6 bytes]"), "{out}");
        // Without --secret-body only the URL token goes.
        let out = super::argv(&argv, &[], false).join(" ");
        assert!(out.contains("--body s3cret"), "{out}");
        assert!(!out.contains("token=s3cret"), "{out}");
    }

    #[test]
    fn filled_secrets_are_scrubbed_back_to_their_placeholder() {
        std::env::set_var("BARRAGE_TEST_REDACT_SECRET", "s3cret");
        let mut secrets = Secrets::default();
        let filled = secrets
            .fill_str("Bearer {secret:BARRAGE_TEST_REDACT_SECRET}", "-H")
            .unwrap();
        assert_eq!(filled, "Bearer s3cret");
        assert_eq!(
            secrets.scrub("bad header 'Bearer s3cret'"),
            "bad header 'Bearer {secret:BARRAGE_TEST_REDACT_SECRET}'"
        );
        let err = secrets
            .fill(b"{secret:BARRAGE_TEST_REDACT_UNSET}", "--body")
            .unwrap_err();
        assert_eq!(err.flag(), "--body");
        let err = err.to_string();
        assert!(err.starts_with("--body: "), "{err}");
        assert!(err.contains("BARRAGE_TEST_REDACT_UNSET"), "{err}");
    }
}
