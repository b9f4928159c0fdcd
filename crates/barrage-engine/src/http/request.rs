//! Request templates: validated once, built once, rendered per request without allocating.
//!
//! Everything up to the body (or, when the body has no placeholders, the whole request) is one
//! [`Template`]. A body with placeholders stays a template of its own, and its Content-Length
//! is computed from the placeholders' digit counts, so rendering is a single append. The path,
//! the headers and the body take the same placeholders: `{conn}`, `{seq}`, `{ts_us}` and the
//! key ranges `{seq%N}`, `{rand%N}`, `{conn%N}` and `{user%N}` (they were once sent literally
//! in a path: every request then failed).

use std::io::Write as _;

use super::{is_tchar, is_token, Field, RequestError};
use crate::message::{Fill, Template};

/// `User-Agent` sent unless the user gives one.
pub(crate) const USER_AGENT: &str = concat!("barrage/", env!("CARGO_PKG_VERSION"));

/// What the user asked for; validated by [`RequestTemplate::new`].
#[derive(Clone, Copy, Debug)]
pub struct RequestSpec<'a> {
    pub method: &'a str,
    pub path: &'a str,
    /// `host:port` or `host`.
    pub host_header: &'a str,
    pub headers: &'a [(String, String)],
    pub body: Option<&'a [u8]>,
    pub keep_alive: bool,
}

/// A request ready to be written over and over.
#[derive(Clone, Debug)]
pub struct RequestTemplate {
    /// Request line and headers; also Content-Length, the blank line and the body unless the
    /// body has placeholders.
    head: Template,
    /// A body with placeholders: its Content-Length line is rendered per request.
    body: Option<BodyTemplate>,
    is_head: bool,
    closes: bool,
}

#[derive(Clone, Debug)]
struct BodyTemplate {
    template: Template,
}

impl BodyTemplate {
    fn new(raw: &[u8]) -> Self {
        Self {
            template: ranged(raw),
        }
    }

    /// The rendered length for `fill` (its Content-Length), computed without rendering.
    fn len(&self, fill: Fill) -> usize {
        self.template.rendered_len(fill)
    }
}

/// A template of the path, a header or the body: `{conn}`, `{seq}`, `{ts_us}` and the key
/// ranges `{seq%N}`, `{rand%N}`, `{conn%N}`, `{user%N}` ([`Template::try_new`]), checked
/// beforehand by [`check_placeholders`] (a malformed range stays literal text here).
pub(crate) fn ranged(raw: &[u8]) -> Template {
    Template::try_new(raw.to_vec()).unwrap_or_else(|_| Template::new(raw.to_vec()))
}

/// Every placeholder of the path, the headers and the body is well formed: a malformed
/// `{seq%N}` is the user's mistake, named by where it is, not a request sent literally.
pub(crate) fn check_placeholders(
    path: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
) -> Result<(), RequestError> {
    let check = |field: Field, what: &str, raw: &[u8]| {
        Template::try_new(raw.to_vec())
            .map(|_| ())
            .map_err(|e| RequestError::Placeholder(field, what.to_string(), e))
    };
    check(Field::Target, "the path", path.as_bytes())?;
    for (name, value) in headers {
        check(
            Field::Header,
            &format!("the header {name}"),
            value.as_bytes(),
        )?;
    }
    if let Some(b) = body {
        check(Field::Body, "the body", b)?;
    }
    Ok(())
}

impl RequestTemplate {
    pub fn new(spec: &RequestSpec) -> Result<Self, RequestError> {
        let method = spec.method;
        if method.is_empty() {
            return Err(RequestError::EmptyMethod);
        }
        if has_crlf(method) {
            return Err(RequestError::Injection(
                Field::Method,
                "the HTTP method".into(),
            ));
        }
        if !is_token(method) {
            return Err(RequestError::InvalidMethod(method.into()));
        }
        validate_path(method, spec.path)?;
        validate_value(Field::Target, "Host", spec.host_header)?;
        check_placeholders(spec.path, spec.headers, spec.body)?;
        let mut host = spec.host_header;
        let (mut host_given, mut ua_given, mut accept_given) = (false, false, false);
        let mut connection: Option<bool> = None;
        for (name, value) in spec.headers {
            validate_header(name, value)?;
            let is = |n: &str| name.eq_ignore_ascii_case(n);
            if is("host") {
                if host_given {
                    return Err(RequestError::DuplicateHeader("Host".into()));
                }
                (host, host_given) = (value, true);
            } else if is("content-length") {
                return Err(RequestError::ContentLengthGiven);
            } else if is("transfer-encoding") {
                return Err(RequestError::TransferEncodingGiven);
            } else if is("user-agent") {
                ua_given = true;
            } else if is("accept") {
                accept_given = true;
            } else if is("connection") {
                let close = value
                    .split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("close"));
                connection = Some(connection.unwrap_or(false) || close);
            }
        }
        let bodiless = matches!(method, "GET" | "HEAD" | "TRACE" | "CONNECT");
        let body = match spec.body {
            Some(b) if bodiless && !b.is_empty() => {
                return Err(RequestError::BodyNotAllowed(method.into()))
            }
            Some(_) if bodiless => None,
            Some(b) => Some(b),
            None if matches!(method, "POST" | "PUT" | "PATCH") => Some(&[][..]),
            None => None,
        };

        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(method.as_bytes());
        out.push(b' ');
        out.extend_from_slice(spec.path.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        out.extend_from_slice(host.as_bytes());
        out.extend_from_slice(b"\r\n");
        if !ua_given {
            line(&mut out, "User-Agent", USER_AGENT);
        }
        if !accept_given {
            line(&mut out, "Accept", "*/*");
        }
        for (name, value) in spec.headers {
            if !name.eq_ignore_ascii_case("host") {
                line(&mut out, name, value);
            }
        }
        if connection.is_none() && !spec.keep_alive {
            line(&mut out, "Connection", "close");
        }
        let mut dynamic_body = None;
        match body {
            None => out.extend_from_slice(b"\r\n"),
            Some(b) => {
                let bt = BodyTemplate::new(b);
                if bt.template.is_static() {
                    let _ = write!(out, "Content-Length: {}\r\n\r\n", b.len());
                    out.extend_from_slice(b);
                } else {
                    dynamic_body = Some(bt);
                }
            }
        }
        Ok(Self {
            head: ranged(&out),
            body: dynamic_body,
            is_head: method == "HEAD",
            closes: connection.unwrap_or(!spec.keep_alive),
        })
    }

    /// No placeholder anywhere: [`Self::static_bytes`] is the request.
    pub fn is_static(&self) -> bool {
        self.head.is_static() && self.body.is_none()
    }

    /// The whole request when static; empty otherwise (render it instead).
    pub fn static_bytes(&self) -> &[u8] {
        if self.is_static() {
            self.head.raw()
        } else {
            &[]
        }
    }

    /// Append one request for `fill` to `out`; returns its length.
    pub fn render_into(&self, fill: Fill, out: &mut Vec<u8>) -> usize {
        let before = out.len();
        self.head.render_into(fill, out);
        if let Some(body) = &self.body {
            let len = body.len(fill);
            // Writing a number into a Vec cannot fail.
            let _ = write!(out, "Content-Length: {len}\r\n\r\n");
            let n = body.template.render_into(fill, out);
            debug_assert_eq!(n, len, "computed Content-Length");
        }
        out.len() - before
    }

    /// Method HEAD: responses carry no body.
    pub fn is_head(&self) -> bool {
        self.is_head
    }

    /// The request asks the server to close the connection after its response
    /// (`keep_alive: false`, or a user `Connection: close` header).
    pub fn closes(&self) -> bool {
        self.closes
    }
}

fn line(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn has_crlf(s: &str) -> bool {
    s.bytes().any(|b| b == b'\r' || b == b'\n')
}

/// An origin-form path (or `*` for OPTIONS) of printable ASCII.
pub(crate) fn validate_path(method: &str, path: &str) -> Result<(), RequestError> {
    if has_crlf(path) {
        return Err(RequestError::Injection(Field::Target, "the path".into()));
    }
    if !(path.starts_with('/') || (path == "*" && method == "OPTIONS")) {
        return Err(RequestError::PathNotAbsolute(path.into()));
    }
    if !path.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(RequestError::InvalidPath(path.into()));
    }
    Ok(())
}

/// A field value: no CR/LF (injection), no other control character but HTAB.
/// `field` is where the value came from (the target's host, or a header the user gave).
pub(crate) fn validate_value(field: Field, name: &str, value: &str) -> Result<(), RequestError> {
    if has_crlf(value) {
        return Err(RequestError::Injection(
            field,
            format!("the value of header {name}"),
        ));
    }
    if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Err(RequestError::InvalidHeaderValue(name.into()));
    }
    Ok(())
}

pub(crate) fn validate_header(name: &str, value: &str) -> Result<(), RequestError> {
    if has_crlf(name) {
        return Err(RequestError::Injection(
            Field::Header,
            format!("the header name {name:?}"),
        ));
    }
    if name.is_empty() || !name.bytes().all(is_tchar) {
        return Err(RequestError::InvalidHeaderName(name.into()));
    }
    validate_value(Field::Header, name, value)
}

#[cfg(test)]
mod tests;
