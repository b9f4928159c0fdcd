//! A request as HTTP/2 sends it: its header list compiled once into HPACK, its body.
//!
//! The fields that are the same on every request (all but those with placeholders) are
//! compiled three ways: `first`, which adds each of them to the server's HPACK table (literal
//! with incremental indexing), `again`, which names them by their index there (a byte or two
//! each), and `plain`, literals without indexing for a server whose table is too small for
//! them. A connection sends `first` once, then `again`: the indices stay right because only
//! this side adds to the server's table, and it adds nothing after `first`. Fields with
//! placeholders are rendered per request as literals without indexing.

use super::hpack::{put_int, put_str, ENTRY_OVERHEAD, STATIC};
use crate::http::{validate_header, validate_path, validate_value, Field, RequestError};
use crate::message::{Fill, Template};

/// What the user asked for; validated by [`H2Request::new`].
#[derive(Clone, Copy, Debug)]
pub struct H2RequestSpec<'a> {
    pub method: &'a str,
    /// `http` or `https`.
    pub scheme: &'a str,
    pub path: &'a str,
    /// `host:port` or `host` (a `Host` header the user gives replaces it).
    pub authority: &'a str,
    pub headers: &'a [(String, String)],
    pub body: Option<&'a [u8]>,
    /// A `content-type` sent unless the user gives one (gRPC's).
    pub content_type: Option<&'a str>,
    /// Send `te: trailers` (gRPC).
    pub te_trailers: bool,
}

#[derive(Clone, Debug)]
enum Seg {
    /// Fixed fields: the three encodings, by the connection's state.
    Fixed {
        first: Vec<u8>,
        again: Vec<u8>,
        plain: Vec<u8>,
    },
    /// A field with placeholders: a literal without indexing, its name by static index (or 0
    /// and the name as a literal).
    Dyn {
        name_index: u8,
        name: Vec<u8>,
        value: Template,
    },
    /// `content-length` of a body with placeholders.
    BodyLen,
}

/// The body: none, fixed bytes, or rendered per request.
#[derive(Clone, Debug)]
pub enum Body {
    None,
    Fixed(Vec<u8>),
    Dyn(Template),
    /// gRPC messages with holes (one, or a client stream's), each rendered with its prefix
    /// per call.
    Grpc(Box<[crate::grpc::PbTemplate]>),
    /// A unary or server-streaming call's message, one of these in turn: call `seq` of a
    /// connection sends message `seq % n` (ghz's list of call data).
    GrpcEach(Box<[crate::grpc::PbTemplate]>),
}

/// A compiled request.
#[derive(Clone, Debug)]
pub struct H2Request {
    segs: Vec<Seg>,
    /// Bytes the `first` encoding adds to the server's table.
    cost: usize,
    pub body: Body,
    is_head: bool,
    /// `http` or `https`, for the requests of scenario steps.
    scheme: String,
}

/// How a connection encodes its fixed fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EncState {
    /// Nothing of ours in the server's table yet: the next request adds the fixed fields.
    #[default]
    Fresh,
    /// They are in it: name them by index.
    Indexed,
    /// The server's table is too small for them (or shrank): literals.
    Plain,
}

/// A connection's HPACK encoder: what it added to the server's table, and a size update owed.
#[derive(Clone, Copy, Debug, Default)]
pub struct Encoder {
    pub state: EncState,
    /// The table size the server allows (its SETTINGS_HEADER_TABLE_SIZE), 4096 until it says.
    pub limit: u32,
    /// A size update to send at the start of the next block (the server lowered its limit).
    pub update: Option<u32>,
}

impl Encoder {
    pub fn new() -> Self {
        Self {
            state: EncState::Fresh,
            limit: 4096,
            update: None,
        }
    }

    /// The server's SETTINGS_HEADER_TABLE_SIZE.
    pub fn set_limit(&mut self, size: u32) {
        if size < self.limit {
            // Our table must shrink to it: say so at the start of the next block. What was
            // added may be gone: literals from now on.
            self.update = Some(size);
            if self.state == EncState::Indexed {
                self.state = EncState::Plain;
            }
        }
        self.limit = size;
    }
}

/// Static table index of a full match, and of a name match.
fn static_index(name: &str, value: &str) -> (Option<u8>, Option<u8>) {
    let mut name_at = None;
    for (i, (n, v)) in STATIC.iter().enumerate() {
        if *n == name {
            if *v == value && !v.is_empty() {
                return (Some(i as u8 + 1), Some(i as u8 + 1));
            }
            name_at.get_or_insert(i as u8 + 1);
        }
    }
    (None, name_at)
}

const FORBIDDEN: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

impl H2Request {
    pub fn new(spec: &H2RequestSpec) -> Result<Self, RequestError> {
        let method = spec.method;
        if method.is_empty() {
            return Err(RequestError::EmptyMethod);
        }
        if !crate::http::is_token(method) {
            return Err(RequestError::InvalidMethod(method.into()));
        }
        validate_path(method, spec.path)?;
        validate_value(Field::Target, "Host", spec.authority)?;
        crate::http::check_placeholders(spec.path, spec.headers, spec.body)?;
        let mut authority = spec.authority.to_string();
        let mut fields: Vec<(String, String)> = Vec::new();
        let (mut ua, mut accept, mut ctype, mut host) = (false, false, false, false);
        for (name, value) in spec.headers {
            validate_header(name, value)?;
            let lower = name.to_ascii_lowercase();
            match lower.as_str() {
                "host" => {
                    if host {
                        return Err(RequestError::DuplicateHeader("Host".into()));
                    }
                    host = true;
                    authority = value.clone();
                    continue;
                }
                "content-length" => return Err(RequestError::ContentLengthGiven),
                n if FORBIDDEN.contains(&n) => {
                    return Err(RequestError::ConnectionSpecific(name.clone()))
                }
                "te" if !value.trim().eq_ignore_ascii_case("trailers") => {
                    return Err(RequestError::ConnectionSpecific(name.clone()))
                }
                "user-agent" => ua = true,
                "accept" => accept = true,
                "content-type" => ctype = true,
                _ => {}
            }
            fields.push((lower, value.clone()));
        }
        let bodiless = matches!(method, "GET" | "HEAD" | "TRACE" | "CONNECT");
        let body = match spec.body {
            Some(b) if bodiless && !b.is_empty() => {
                return Err(RequestError::BodyNotAllowed(method.into()))
            }
            Some(b) if !bodiless => Some(b),
            _ => None,
        };
        let mut list: Vec<(String, String)> = vec![
            (":method".into(), method.into()),
            (":scheme".into(), spec.scheme.into()),
            (":authority".into(), authority),
            (":path".into(), spec.path.into()),
        ];
        if spec.te_trailers {
            list.push(("te".into(), "trailers".into()));
        }
        if let (Some(ct), false) = (spec.content_type, ctype) {
            list.push(("content-type".into(), ct.into()));
        }
        if !ua {
            list.push(("user-agent".into(), crate::http::USER_AGENT.into()));
        }
        if !accept && spec.content_type.is_none() {
            list.push(("accept".into(), "*/*".into()));
        }
        list.extend(fields);
        let body = match body {
            None => Body::None,
            Some(b) => {
                let t = crate::http::ranged(b);
                if t.is_static() {
                    if spec.content_type.is_none() {
                        list.push(("content-length".into(), b.len().to_string()));
                    }
                    Body::Fixed(b.to_vec())
                } else {
                    Body::Dyn(t)
                }
            }
        };
        let dyn_len = matches!(body, Body::Dyn(_)) && spec.content_type.is_none();
        let mut r = Self::compile(&list, dyn_len, body, method == "HEAD");
        r.scheme = spec.scheme.to_string();
        Ok(r)
    }

    fn compile(list: &[(String, String)], dyn_len: bool, body: Body, is_head: bool) -> Self {
        // Fixed fields in runs between the fields with placeholders; their table entries in
        // the order `first` adds them.
        let mut segs = Vec::new();
        let mut run: Vec<(&str, &str)> = Vec::new();
        let mut cost = 0;
        let mut fixed: Vec<Vec<(&str, &str)>> = Vec::new();
        for (n, v) in list {
            let t = crate::http::ranged(v.as_bytes());
            if t.is_static() {
                run.push((n, v));
                continue;
            }
            if !run.is_empty() {
                fixed.push(std::mem::take(&mut run));
                segs.push(None);
            }
            let (_, name_at) = static_index(n, "");
            segs.push(Some(Seg::Dyn {
                name_index: name_at.unwrap_or(0),
                name: n.as_bytes().to_vec(),
                value: t,
            }));
        }
        if !run.is_empty() {
            fixed.push(run);
            segs.push(None);
        }
        if dyn_len {
            segs.push(Some(Seg::BodyLen));
        }
        // Count the entries `first` adds, so `again` can name each by its index.
        let mut total = 0;
        for f in &fixed {
            for (n, v) in f {
                if static_index(n, v).0.is_none() {
                    total += 1;
                    cost += n.len() + v.len() + ENTRY_OVERHEAD;
                }
            }
        }
        let mut k = 0; // entries added so far
        let mut out = Vec::new();
        let mut fi = fixed.into_iter();
        for s in segs {
            match s {
                Some(seg) => out.push(seg),
                None => {
                    let f = fi.next().expect("one run per fixed segment");
                    let (mut first, mut again, mut plain) = (Vec::new(), Vec::new(), Vec::new());
                    for (n, v) in f {
                        match static_index(n, v) {
                            (Some(i), _) => {
                                for b in [&mut first, &mut again, &mut plain] {
                                    put_int(b, 0x80, 7, u64::from(i));
                                }
                            }
                            (None, name_at) => {
                                // With incremental indexing (01), then by index.
                                literal(&mut first, 0x40, 6, name_at, n, v);
                                put_int(&mut again, 0x80, 7, (62 + total - 1 - k) as u64);
                                literal(&mut plain, 0x00, 4, name_at, n, v);
                                k += 1;
                            }
                        }
                    }
                    out.push(Seg::Fixed {
                        first,
                        again,
                        plain,
                    });
                }
            }
        }
        Self {
            segs: out,
            cost,
            body,
            is_head,
            scheme: String::new(),
        }
    }

    /// A gRPC call's request: `messages` as its body (one; a client stream's in order), each
    /// with its 5-byte prefix (and gzipped with `gzip`: once here when they are the same
    /// every time).
    pub fn with_grpc_messages(
        mut self,
        messages: Vec<crate::grpc::PbTemplate>,
        gzip: bool,
    ) -> Self {
        self.body = if messages.iter().all(|m| m.is_static()) {
            let mut b = Vec::new();
            for m in &messages {
                m.write_framed_as(
                    Fill {
                        conn: 0,
                        seq: 0,
                        ts_us: 0,
                    },
                    gzip,
                    &mut b,
                );
            }
            Body::Fixed(b)
        } else {
            Body::Grpc(messages.into())
        };
        self
    }

    /// A unary or server-streaming call whose message is each of `messages` in turn
    /// ([`Body::GrpcEach`]), gzipped with `gzip`.
    pub fn with_grpc_turns(mut self, messages: Vec<crate::grpc::PbTemplate>) -> Self {
        self.body = Body::GrpcEach(messages.into());
        self
    }

    /// Append the header block for `fill`, encoded as `enc` allows (which it updates).
    pub fn render_block(&self, enc: &mut Encoder, fill: Fill, out: &mut Vec<u8>) {
        if let Some(size) = enc.update.take() {
            put_int(out, 0x20, 5, u64::from(size));
        }
        if enc.state == EncState::Fresh && self.cost > enc.limit as usize {
            enc.state = EncState::Plain;
        }
        for s in &self.segs {
            match s {
                Seg::Fixed {
                    first,
                    again,
                    plain,
                } => out.extend_from_slice(match enc.state {
                    EncState::Fresh => first,
                    EncState::Indexed => again,
                    EncState::Plain => plain,
                }),
                Seg::Dyn {
                    name_index,
                    name,
                    value,
                } => {
                    put_int(out, 0x00, 4, u64::from(*name_index));
                    if *name_index == 0 {
                        put_str(out, name);
                    }
                    put_int(out, 0, 7, value.rendered_len(fill) as u64);
                    value.render_into(fill, out);
                }
                Seg::BodyLen => {
                    let len = match &self.body {
                        Body::Dyn(t) => t.rendered_len(fill),
                        _ => 0,
                    };
                    put_int(out, 0x00, 4, 28); // content-length
                    put_int(out, 0, 7, crate::message::digits(len as u64) as u64);
                    crate::message::push_u64(out, len as u64);
                }
            }
        }
        if enc.state == EncState::Fresh {
            enc.state = EncState::Indexed;
        }
    }

    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// Bytes the fixed fields take in the server's table.
    pub fn table_cost(&self) -> usize {
        self.cost
    }

    pub fn is_head(&self) -> bool {
        self.is_head
    }

    /// A body follows the header block (DATA frames).
    pub fn has_body(&self) -> bool {
        !matches!(self.body, Body::None)
    }
}

/// The most header lines a scenario step's request may have (the scenario checker holds the
/// file to fewer).
pub const MAX_STEP_HEADERS: usize = 256;

/// A request written as HTTP/1.1 (a scenario step's: request line, header lines, body with
/// its Content-Length) as an HTTP/2 header block: the pseudo-headers from the request line and
/// `Host`, the other fields lowercased as literals without indexing (HTTP/1.1's connection
/// fields left out); returns where the body starts in `text`, or `None` if `text` is not such
/// a request.
pub fn block_of_http1(text: &[u8], scheme: &str, out: &mut Vec<u8>) -> Option<usize> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_STEP_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let httparse::Status::Complete(body_at) = req.parse(text).ok()? else {
        return None;
    };
    let (method, path) = (req.method?, req.path?);
    let field = |out: &mut Vec<u8>, name: &str, value: &[u8]| {
        match static_index(name, "").1 {
            Some(i) => put_int(out, 0x00, 4, u64::from(i)),
            None => {
                put_int(out, 0x00, 4, 0);
                put_str(out, name.as_bytes());
            }
        }
        put_str(out, value);
    };
    match method {
        "GET" => put_int(out, 0x80, 7, 2),
        "POST" => put_int(out, 0x80, 7, 3),
        m => field(out, ":method", m.as_bytes()),
    }
    put_int(out, 0x80, 7, if scheme == "https" { 7 } else { 6 });
    if let Some(h) = req
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
    {
        field(out, ":authority", h.value);
    }
    field(out, ":path", path.as_bytes());
    for h in req.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        if name == "host" || FORBIDDEN.contains(&name.as_str()) {
            continue;
        }
        field(out, &name, h.value);
    }
    Some(body_at)
}

/// A literal field: `flags` and an `n`-bit prefix for its name's static index (0: the name
/// follows as a string), then the value, raw.
fn literal(out: &mut Vec<u8>, flags: u8, n: u32, name_at: Option<u8>, name: &str, value: &str) {
    match name_at {
        Some(i) => put_int(out, flags, n, u64::from(i)),
        None => {
            put_int(out, flags, n, 0);
            put_str(out, name.as_bytes());
        }
    }
    put_str(out, value.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::hpack::Decoder;

    fn decode(d: &mut Decoder, block: &[u8]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        d.decode(block, 1 << 20, |n, v| {
            out.push((
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            ))
        })
        .unwrap();
        out
    }

    fn spec<'a>(
        headers: &'a [(String, String)],
        path: &'a str,
        body: Option<&'a [u8]>,
    ) -> H2RequestSpec<'a> {
        H2RequestSpec {
            method: if body.is_some() { "POST" } else { "GET" },
            scheme: "http",
            path,
            authority: "127.0.0.1:8080",
            headers,
            body,
            content_type: None,
            te_trailers: false,
        }
    }

    /// Issue 42 item 7: `{seq%N}` and `{rand%N}` in the path were sent literally; over
    /// HTTP/2 too they are rendered per request, in the path, a header and the body.
    #[test]
    fn key_range_placeholders_in_the_path_are_rendered() {
        let headers = vec![("x-r".to_string(), "{rand%10}".to_string())];
        let req = H2Request::new(&spec(&headers, "/bytes/{seq%3}", Some(b"{seq%7}"))).unwrap();
        let mut server = Decoder::new(4096);
        let mut enc = Encoder::new();
        for seq in 0..10u64 {
            let fill = Fill {
                conn: 2,
                seq,
                ts_us: 0,
            };
            let mut b = Vec::new();
            req.render_block(&mut enc, fill, &mut b);
            let fields = decode(&mut server, &b);
            let get = |n: &str| fields.iter().find(|(k, _)| k == n).unwrap().1.clone();
            assert_eq!(get(":path"), format!("/bytes/{}", seq % 3));
            assert_eq!(get("x-r"), crate::message::rand_mod(2, seq, 10).to_string());
            assert_eq!(get("content-length"), "1");
        }
        let e = H2Request::new(&spec(&[], "/x/{rand%}", None)).unwrap_err();
        assert!(e.to_string().contains("the path"), "{e}");
    }

    /// Every encoding of a request decodes to the same fields, in order (pseudo-headers
    /// first), on a decoder that kept the first request's entries: the server's view.
    #[test]
    fn first_again_and_plain_blocks_decode_to_the_same_fields() {
        let headers = vec![
            ("X-Token".to_string(), "abc".to_string()),
            ("X-Seq".to_string(), "{seq}".to_string()),
            ("accept-encoding".to_string(), "gzip, deflate".to_string()),
        ];
        let req = H2Request::new(&spec(&headers, "/items/{conn}", Some(b"n={seq}"))).unwrap();
        let want = |seq: u64, conn: u64| {
            vec![
                (":method", "POST".to_string()),
                (":scheme", "http".into()),
                (":authority", "127.0.0.1:8080".into()),
                (":path", format!("/items/{conn}")),
                ("user-agent", crate::http::USER_AGENT.into()),
                ("accept", "*/*".into()),
                ("x-token", "abc".into()),
                ("x-seq", seq.to_string()),
                ("accept-encoding", "gzip, deflate".into()),
                (
                    "content-length",
                    (2 + crate::message::digits(seq)).to_string(),
                ),
            ]
            .into_iter()
            .map(|(a, b)| (a.to_string(), b))
            .collect::<Vec<_>>()
        };
        let mut server = Decoder::new(4096);
        let mut enc = Encoder::new();
        let mut sizes = Vec::new();
        for seq in [0u64, 7, 12_345] {
            let fill = Fill {
                conn: 3,
                seq,
                ts_us: 0,
            };
            let mut b = Vec::new();
            req.render_block(&mut enc, fill, &mut b);
            assert_eq!(decode(&mut server, &b), want(seq, 3), "seq {seq}");
            sizes.push(b.len());
        }
        assert_eq!(enc.state, EncState::Indexed);
        // After the first request the fixed fields cost a byte each.
        assert!(sizes[1] < sizes[0] / 2, "{sizes:?}");
        // The server lowers its table: a size update, then literals.
        enc.set_limit(0);
        let mut b = Vec::new();
        req.render_block(
            &mut enc,
            Fill {
                conn: 3,
                seq: 9,
                ts_us: 0,
            },
            &mut b,
        );
        assert_eq!(b[0], 0x20, "a size update to 0 first");
        assert_eq!(decode(&mut server, &b), want(9, 3));
        assert_eq!(server.table_len(), (0, 0));
        assert_eq!(enc.state, EncState::Plain);
        // A server whose table is too small from the start gets literals only.
        let mut small = Encoder::new();
        small.set_limit(16);
        let mut fresh = Decoder::new(16);
        let mut b = Vec::new();
        req.render_block(
            &mut small,
            Fill {
                conn: 1,
                seq: 1,
                ts_us: 0,
            },
            &mut b,
        );
        assert_eq!(decode(&mut fresh, &b), want(1, 1));
        assert_eq!(fresh.table_len(), (0, 0));
    }

    #[test]
    fn http_1_1_connection_headers_are_refused() {
        for name in [
            "Connection",
            "Keep-Alive",
            "Transfer-Encoding",
            "Upgrade",
            "TE",
        ] {
            let h = vec![(name.to_string(), "x".to_string())];
            let e = H2Request::new(&spec(&h, "/", None)).unwrap_err();
            assert_eq!(e, RequestError::ConnectionSpecific(name.into()), "{name}");
        }
        let h = vec![("te".to_string(), "trailers".to_string())];
        assert!(H2Request::new(&spec(&h, "/", None)).is_ok());
        let h = vec![("Host".to_string(), "example.test".to_string())];
        let r = H2Request::new(&spec(&h, "/", None)).unwrap();
        let mut b = Vec::new();
        r.render_block(
            &mut Encoder::new(),
            Fill {
                conn: 0,
                seq: 0,
                ts_us: 0,
            },
            &mut b,
        );
        let f = decode(&mut Decoder::new(4096), &b);
        assert!(
            f.contains(&(":authority".into(), "example.test".into())),
            "{f:?}"
        );
        assert!(!f.iter().any(|(n, _)| n == "host"));
    }
}
