//! The port a protocol's spec plans through: [`PlanCx`] (what a protocol's `plan` reads
//! beside its own spec: the secrets, TLS, the frame limit) and [`Spoken`] (what it makes for
//! the run's plan). Each protocol's `XSpec::plan` lives beside its codec (`mqtt/spec.rs`,
//! `http/spec.rs`, ...); [`crate::spec::Spec::plan`] dispatches to it.

use crate::framing::Framing;
use crate::message::{fill_secrets, unescape, SecretError, Template};
use crate::plan::Protocol;
use std::cell::RefCell;

/// Why a spec does not make a plan.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("{0}")]
    Secret(#[from] SecretError),
    #[error("{what}: {err}")]
    Escape {
        what: &'static str,
        err: crate::message::EscapeError,
    },
    #[error("{what}: {err}")]
    Invalid { what: &'static str, err: String },
    #[error("{0}")]
    Request(#[from] crate::http::RequestError),
    #[error("--command: {0}")]
    Command(#[from] crate::command::CommandError),
    #[error("shares: {0}")]
    Shares(String),
    #[error("TLS: {0}")]
    Tls(String),
    /// A scenario file that cannot run; the text names the file.
    #[error("{0}")]
    Scenario(String),
}

/// `err` against the flag (or spec field) `what`.
pub fn invalid(what: &'static str, err: impl std::fmt::Display) -> SpecError {
    SpecError::Invalid {
        what,
        err: err.to_string(),
    }
}

/// `text` with its escapes undone (`what` names it in an error).
pub fn unescaped(what: &'static str, text: &str) -> Result<Vec<u8>, SpecError> {
    unescape(text).map_err(|err| SpecError::Escape { what, err })
}

/// Where a secret's bytes come from (the environment: [`crate::spec::env_secret`]).
pub type SecretSource<'a> = dyn FnMut(&str) -> Option<Vec<u8>> + 'a;

/// What a protocol's `plan` reads beside its own spec.
pub struct PlanCx<'a> {
    secret: RefCell<&'a mut SecretSource<'a>>,
    /// The run speaks TLS (`https`, `grpcs`, ...).
    pub tls: bool,
    /// `--max-frame`, when given.
    pub max_frame: Option<u64>,
}

impl<'a> PlanCx<'a> {
    pub fn new(secret: &'a mut SecretSource<'a>, tls: bool, max_frame: Option<u64>) -> PlanCx<'a> {
        PlanCx {
            secret: RefCell::new(secret),
            tls,
            max_frame,
        }
    }

    /// The secret `name` (`{secret:NAME}`), from the process's own environment.
    pub fn lookup(&self, name: &str) -> Option<Vec<u8>> {
        (self.secret.borrow_mut())(name)
    }

    /// `text` unescaped with its secrets filled (`what` names it in an error).
    pub fn bytes(&self, what: &'static str, text: &str) -> Result<Vec<u8>, SpecError> {
        let raw = unescaped(what, text)?;
        Ok(fill_secrets(&raw, &mut |n| self.lookup(n))?)
    }

    /// A template of `text` unescaped, its secrets filled literally.
    pub fn template(&self, what: &'static str, text: &str) -> Result<Template, SpecError> {
        Template::with_secrets(unescaped(what, text)?, &|n| self.lookup(n))
            .map_err(|e| invalid(what, e))
    }

    /// Headers with their secrets filled: a value is taken literally (no escapes).
    pub fn headers(
        &self,
        headers: &[(String, String)],
    ) -> Result<Vec<(String, String)>, SpecError> {
        headers
            .iter()
            .map(|(n, v)| {
                let filled = self.bytes("-H/--header", &v.replace('\\', "\\\\"))?;
                let v = String::from_utf8(filled).map_err(|e| invalid("-H/--header", e))?;
                Ok((n.clone(), v))
            })
            .collect()
    }

    /// The longest frame a reply may be (`--max-frame`, or 16 MiB).
    pub fn max_frame(&self) -> u64 {
        self.max_frame.unwrap_or(crate::framing::DEFAULT_MAX_FRAME)
    }
}

/// What a protocol's spec makes for the run's plan.
pub struct Spoken {
    pub protocol: Protocol,
    /// The message sent (raw TCP, WebSocket, an MQTT payload); empty where the protocol
    /// says what it sends in its own words.
    pub message: Template,
    pub first_message: Option<Template>,
    /// How a reply ends.
    pub framing: Framing,
    /// Each reply is checked against its request (`--verify`).
    pub verify: bool,
    /// HTTP and gRPC: the Host header and the headers a scenario's requests carry too (their
    /// secrets unfilled: each request fills them itself).
    pub http: Option<(String, Vec<(String, String)>)>,
}

impl Spoken {
    /// `protocol` with no message of the flags' kind: replies end as the protocol says.
    pub fn own_words(protocol: Protocol) -> Spoken {
        Spoken {
            protocol,
            message: Template::new(Vec::new()),
            first_message: None,
            framing: Framing::Echo,
            verify: false,
            http: None,
        }
    }
}

/// For `skip_serializing_if`.
pub fn is_false(b: &bool) -> bool {
    !*b
}

pub fn one() -> u32 {
    1
}

pub fn is_one(n: &u32) -> bool {
    *n == 1
}
