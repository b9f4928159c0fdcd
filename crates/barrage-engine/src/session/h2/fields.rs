//! A response header block's fields checked as they are decoded (RFC 9113 8.1.1, 8.2):
//! what makes it malformed, and what it says beyond its values (`:status`, content-length,
//! a gRPC content-type).

/// What a header block's fields say beyond their values, and what makes it malformed
/// (RFC 9113 8.1.1, 8.2): upper-case names, connection-specific fields, pseudo-headers other
/// than `:status` or after a regular field, a `:status` twice, content-lengths that differ.
#[derive(Default)]
pub(super) struct Fields {
    pub(super) pseudo: bool,
    pub(super) regular: bool,
    pub(super) status: bool,
    pub(super) length: Option<u64>,
    pub(super) grpc_type: bool,
    pub(super) bad: Option<String>,
}

impl Fields {
    pub(super) fn check(&mut self, n: &[u8], v: &[u8]) {
        if self.bad.is_some() {
            return;
        }
        let name = || String::from_utf8_lossy(n).into_owned();
        if n.iter().any(u8::is_ascii_uppercase) {
            self.bad = Some(format!("an upper-case header name ({})", name()));
        } else if n.first() == Some(&b':') {
            self.pseudo = true;
            if n != b":status" {
                self.bad = Some(format!(
                    "a pseudo-header a response has none of ({})",
                    name()
                ));
            } else if self.regular {
                self.bad = Some(":status after a regular field".into());
            } else if std::mem::replace(&mut self.status, true) {
                self.bad = Some(":status twice".into());
            }
        } else {
            self.regular = true;
            match n {
                b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding"
                | b"upgrade" => {
                    self.bad = Some(format!("a connection-specific header field ({})", name()));
                }
                b"te" if v != b"trailers" => self.bad = Some("te other than trailers".into()),
                b"content-length" => {
                    let n = std::str::from_utf8(v)
                        .ok()
                        .and_then(|t| t.parse::<u64>().ok());
                    match (n, self.length) {
                        (Some(n), None) => self.length = Some(n),
                        (Some(n), Some(m)) if n == m => {}
                        _ => self.bad = Some("a content-length that is not one number".into()),
                    }
                }
                b"content-type" => self.grpc_type = v.starts_with(b"application/grpc"),
                _ => {}
            }
        }
    }
}

pub(super) fn parse_status(v: &[u8]) -> Option<u16> {
    if v.len() != 3 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = v.iter().fold(0u16, |a, &d| a * 10 + u16::from(d - b'0'));
    (100..=999).contains(&n).then_some(n)
}
