//! `--reflect`: the method's descriptors from the server itself (gRPC server reflection), once
//! before the load, instead of a `.proto`. One blocking HTTP/2 connection (TLS for `grpcs://`)
//! calls `grpc.reflection.v1.ServerReflection/ServerReflectionInfo` (then `v1alpha`, which
//! older servers offer alone) with one request, `file_containing_symbol` = the service, and
//! half-closes; the reply's file descriptors (the service's file and what it imports) make the
//! pool the method and its message types are found in. The framing is the engine's codec
//! (frame writers, HPACK, the request compiler); the reflection messages, three fields deep,
//! are read by hand.

use barrage_engine::h2::frame::{self, flag, kind};
use barrage_engine::h2::hpack::Decoder;
use barrage_engine::h2::{Encoder, H2Request, H2RequestSpec};
use prost_reflect::prost::Message as _;
use prost_reflect::DescriptorPool;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

const SERVICES: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// Where the reflection call goes.
pub struct Target {
    pub addr: SocketAddr,
    /// The `:authority` (the target's Host).
    pub authority: String,
    /// `grpcs://`: the client configuration (ALPN h2) and the server's name.
    pub tls: Option<(
        Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    )>,
}

/// The descriptors of `svc` (and its imports) from the server at `target`, each step within
/// `timeout`; the reason, when it fails.
pub fn pool(target: &Target, svc: &str, timeout: Duration) -> Result<DescriptorPool, String> {
    let mut last = String::new();
    for path in SERVICES {
        match call(target, path, svc, timeout)? {
            Reply::Files(files) => {
                let mut protos = Vec::new();
                for f in files {
                    let p = prost_reflect::prost_types::FileDescriptorProto::decode(&f[..])
                        .map_err(|e| format!("a file descriptor that does not decode: {e}"))?;
                    protos.push(p);
                }
                let mut pool = DescriptorPool::new();
                pool.add_file_descriptor_protos(protos)
                    .map_err(|e| format!("its file descriptors do not fit together: {e}"))?;
                return Ok(pool);
            }
            Reply::Error(code, msg) => {
                return Err(format!(
                    "the server's reflection says {} for '{svc}': {msg}",
                    barrage_metrics::grpc_code_name(code)
                ))
            }
            Reply::Status(code, msg) => {
                last = format!(
                    "server reflection answered {} ({msg}): does the server offer it? Give \
                     --proto FILE instead",
                    barrage_metrics::grpc_code_name(code)
                );
                if code != 12 {
                    break; // only UNIMPLEMENTED says to try the older service
                }
            }
        }
    }
    Err(last)
}

enum Reply {
    /// `file_descriptor_response`: serialized FileDescriptorProtos.
    Files(Vec<Vec<u8>>),
    /// `error_response`: its code and message.
    Error(u32, String),
    /// The call itself failed with this status.
    Status(u32, String),
}

trait Io: Read + Write {}
impl<T: Read + Write> Io for T {}

/// The connection, and a handle on its socket to set read timeouts through (the deadline is
/// the whole call's: a server trickling bytes does not stretch it).
fn connect(target: &Target, timeout: Duration) -> Result<(Box<dyn Io>, TcpStream), String> {
    let sock = TcpStream::connect_timeout(&target.addr, timeout)
        .map_err(|e| format!("cannot connect for server reflection: {e}"))?;
    let _ = sock.set_nodelay(true);
    sock.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    sock.set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let handle = sock.try_clone().map_err(|e| e.to_string())?;
    let Some((config, name)) = &target.tls else {
        return Ok((Box::new(sock), handle));
    };
    let conn =
        rustls::ClientConnection::new(config.clone(), name.clone()).map_err(|e| e.to_string())?;
    Ok((Box::new(rustls::StreamOwned::new(conn, sock)), handle))
}

/// Fill `buf` before `deadline`.
fn read_full(
    io: &mut dyn Io,
    sock: &TcpStream,
    buf: &mut [u8],
    deadline: Instant,
) -> Result<(), String> {
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("no reflection reply within the timeout".into());
        }
        sock.set_read_timeout(Some(left))
            .map_err(|e| e.to_string())?;
        match io.read(&mut buf[got..]) {
            Ok(0) => return Err("the server closed the reflection call".into()),
            Ok(k) => got += k,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(format!("the reflection call broke off: {e}")),
        }
    }
    Ok(())
}

/// A reflection reply holds descriptors, not media: frames and the whole reply are bounded.
const MAX_FRAME: usize = 1 << 20;
const MAX_REPLY: usize = 16 << 20;

fn call(target: &Target, path: &str, svc: &str, timeout: Duration) -> Result<Reply, String> {
    let (mut io, sock) = connect(target, timeout)?;
    let deadline = Instant::now() + timeout;
    let mut out = Vec::new();
    out.extend_from_slice(frame::PREFACE);
    frame::put_settings(&mut out, &[(frame::setting::INITIAL_WINDOW_SIZE, 1 << 30)]);
    frame::put_window_update(&mut out, 0, (1 << 30) - 65_535);
    let req = H2Request::new(&H2RequestSpec {
        method: "POST",
        scheme: if target.tls.is_some() {
            "https"
        } else {
            "http"
        },
        path,
        authority: &target.authority,
        headers: &[],
        body: None,
        content_type: Some("application/grpc"),
        te_trailers: true,
    })
    .map_err(|e| e.to_string())?;
    let at = out.len();
    out.extend_from_slice(&[0; frame::HEAD]);
    let fill = barrage_engine::Fill {
        conn: 0,
        seq: 0,
        ts_us: 0,
    };
    req.render_block(&mut Encoder::new(), fill, &mut out);
    let len = out.len() - at - frame::HEAD;
    frame::set_head(&mut out, at, len, kind::HEADERS, flag::END_HEADERS, 1);
    // ServerReflectionRequest { file_containing_symbol (4): svc }, then half-close.
    let mut msg = Vec::new();
    msg.extend_from_slice(&barrage_engine::grpc::len_tag(4));
    barrage_engine::grpc::put_varint(&mut msg, svc.len() as u64);
    msg.extend_from_slice(svc.as_bytes());
    frame::put_head(&mut out, 5 + msg.len(), kind::DATA, flag::END_STREAM, 1);
    barrage_engine::grpc::put_prefix(&mut out, msg.len());
    out.extend_from_slice(&msg);
    io.write_all(&out).map_err(|e| e.to_string())?;
    io.flush().map_err(|e| e.to_string())?;

    let mut hp = Decoder::new(4096);
    let (mut body, mut status, mut message) = (Vec::new(), None::<u32>, String::new());
    let mut block = Vec::new();
    let mut ended = false;
    loop {
        let mut h = [0u8; frame::HEAD];
        read_full(&mut *io, &sock, &mut h, deadline)?;
        let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
        if len > MAX_FRAME {
            return Err("a frame over 1 MiB in the reflection reply".into());
        }
        let (k, flags) = (h[3], h[4]);
        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
        let mut p = vec![0; len];
        read_full(&mut *io, &sock, &mut p, deadline)?;
        if body.len() + block.len() + len > MAX_REPLY {
            return Err("a reflection reply over 16 MiB".into());
        }
        match k {
            kind::SETTINGS if flags & flag::ACK == 0 => {
                let mut ack = Vec::new();
                frame::put_settings_ack(&mut ack);
                io.write_all(&ack).map_err(|e| e.to_string())?;
            }
            kind::PING if flags & flag::ACK == 0 && p.len() == 8 => {
                let mut pong = Vec::new();
                let data: [u8; 8] = p[..].try_into().expect("8 bytes");
                frame::put_ping(&mut pong, true, &data);
                io.write_all(&pong).map_err(|e| e.to_string())?;
            }
            kind::GOAWAY => return Err("the server sent GOAWAY to the reflection call".into()),
            kind::RST_STREAM if stream == 1 => {
                return Err("the server reset the reflection call".into())
            }
            kind::DATA if stream == 1 => body.extend_from_slice(unpad(flags, &p)?),
            kind::HEADERS | kind::CONTINUATION if stream == 1 => {
                let p = if k == kind::HEADERS {
                    headers_payload(flags, &p)?
                } else {
                    &p[..]
                };
                block.extend_from_slice(p);
                if flags & flag::END_HEADERS != 0 {
                    hp.decode(&block, 1 << 20, |n, v| {
                        if n == b"grpc-status" {
                            status = barrage_engine::grpc::status_of(v);
                        } else if n == b"grpc-message" {
                            message = String::from_utf8_lossy(v).into_owned();
                        }
                    })
                    .map_err(|e| format!("HPACK: {e}"))?;
                    block.clear();
                }
            }
            _ => {}
        }
        if stream == 1 && flags & flag::END_STREAM != 0 && matches!(k, kind::DATA | kind::HEADERS) {
            ended = true;
        }
        // The stream's end, once its last header block is whole (CONTINUATION may follow).
        if ended && block.is_empty() {
            break;
        }
    }
    match status {
        Some(0) => {}
        Some(c) => return Ok(Reply::Status(c, message)),
        None => return Err("the reflection reply ended without a grpc-status".into()),
    }
    // One message: ServerReflectionResponse.
    if body.len() < 5 || body[0] != 0 {
        return Err("the reflection reply holds no message".into());
    }
    let n = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    let m = body
        .get(5..5 + n)
        .ok_or("the reflection reply's message is cut short")?;
    let mut files = Vec::new();
    for (field, v) in fields(m)? {
        match field {
            4 => {
                for (f, file) in fields(v)? {
                    if f == 1 {
                        files.push(file.to_vec());
                    }
                }
            }
            7 => {
                let (mut code, mut msg) = (2, String::new());
                for (f, x) in fields(v)? {
                    match f {
                        1 => code = x.first().map_or(2, |&b| u32::from(b & 0x7f)),
                        2 => msg = String::from_utf8_lossy(x).into_owned(),
                        _ => {}
                    }
                }
                return Ok(Reply::Error(code, msg));
            }
            _ => {}
        }
    }
    if files.is_empty() {
        return Err("the reflection reply holds no file descriptor".into());
    }
    Ok(Reply::Files(files))
}

fn unpad(flags: u8, p: &[u8]) -> Result<&[u8], String> {
    if flags & flag::PADDED == 0 {
        return Ok(p);
    }
    let pad = *p.first().ok_or("an empty padded frame")? as usize;
    p.get(1..p.len().saturating_sub(pad))
        .filter(|_| pad < p.len())
        .ok_or_else(|| "padding longer than its frame".into())
}

fn headers_payload(flags: u8, p: &[u8]) -> Result<&[u8], String> {
    let p = unpad(flags, p)?;
    if flags & flag::PRIORITY != 0 {
        return p.get(5..).ok_or_else(|| "a HEADERS frame too short".into());
    }
    Ok(p)
}

/// The fields of a protobuf message: (number, bytes) for length-delimited fields, (number,
/// the varint's bytes) for varints; other wire types are skipped.
fn fields(mut m: &[u8]) -> Result<Vec<(u32, &[u8])>, String> {
    fn varint(m: &mut &[u8]) -> Result<u64, String> {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let (&b, rest) = m.split_first().ok_or("a varint cut short")?;
            *m = rest;
            if shift > 63 {
                return Err("a varint too long".into());
            }
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
            shift += 7;
        }
    }
    let mut out = Vec::new();
    while !m.is_empty() {
        let tag = varint(&mut m)?;
        let (field, wire) = ((tag >> 3) as u32, tag & 7);
        match wire {
            0 => {
                let before = m;
                varint(&mut m)?;
                out.push((field, &before[..before.len() - m.len()]));
            }
            1 => m = m.get(8..).ok_or("a fixed64 cut short")?,
            2 => {
                let n = varint(&mut m)? as usize;
                let v = m.get(..n).ok_or("a field cut short")?;
                out.push((field, v));
                m = &m[n..];
            }
            5 => m = m.get(4..).ok_or("a fixed32 cut short")?,
            _ => return Err(format!("wire type {wire}")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::fields;

    #[test]
    fn fields_are_read_by_number_and_wire_type() {
        // 1: varint 150; 2: "hi"; 3: fixed32; 4: nested { 1: "x" }
        let m = [
            0x08, 0x96, 0x01, 0x12, 2, b'h', b'i', 0x1d, 1, 2, 3, 4, 0x22, 3, 0x0a, 1, b'x',
        ];
        let f = fields(&m).unwrap();
        assert_eq!(f.len(), 3);
        assert_eq!(f[0], (1, &[0x96, 0x01][..]));
        assert_eq!(f[1], (2, &b"hi"[..]));
        assert_eq!(fields(f[2].1).unwrap(), vec![(1, &b"x"[..])]);
        assert!(fields(&[0x12, 5, 1]).is_err());
    }
}
