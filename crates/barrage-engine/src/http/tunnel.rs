//! A proxy's answer to CONNECT ([`answer`]): its head read whole however it arrives, and
//! whether it opened the tunnel. Sans-IO; the worker reads the socket (`worker/proxy.rs`).

/// The most a proxy's answer head may take.
const MAX_HEAD: usize = 16 * 1024;

/// What a proxy's answer to CONNECT says so far.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// Not all of its head yet.
    More,
    /// The tunnel is open; the head was this long.
    Open(usize),
    /// Refused: its status line.
    Refused(String),
    /// Not an HTTP answer.
    Malformed(String),
}

/// Reads a proxy's answer head (`HTTP/1.x CODE REASON`, headers, a blank line).
pub fn answer(head: &[u8]) -> Answer {
    let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") else {
        if head.len() > MAX_HEAD {
            return Answer::Malformed("an answer to CONNECT over 16 KiB without its end".into());
        }
        if head.len() >= 5 && !head.starts_with(b"HTTP/") {
            return Answer::Malformed(format!(
                "an answer to CONNECT that is not HTTP: {:?}",
                String::from_utf8_lossy(&head[..head.len().min(40)])
            ));
        }
        return Answer::More;
    };
    let line = head[..end].split(|b| *b == b'\r').next().unwrap_or(&[]);
    let line = String::from_utf8_lossy(line).into_owned();
    let mut parts = line.splitn(3, ' ');
    let (proto, code) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if !proto.starts_with("HTTP/1.") || code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit())
    {
        return Answer::Malformed(format!("an answer to CONNECT that is not HTTP: {line:?}"));
    }
    if code.starts_with('2') {
        Answer::Open(end + 4)
    } else {
        Answer::Refused(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxys_answer_is_read_whole_however_it_arrives() {
        let ok = b"HTTP/1.1 200 Connection established\r\nProxy-Agent: x\r\n\r\n";
        for cut in 0..ok.len() {
            assert_eq!(answer(&ok[..cut]), Answer::More, "cut at {cut}");
        }
        assert_eq!(answer(ok), Answer::Open(ok.len()));
        assert_eq!(
            answer(b"HTTP/1.0 407 Proxy Authentication Required\r\n\r\n"),
            Answer::Refused("HTTP/1.0 407 Proxy Authentication Required".into())
        );
        assert!(matches!(answer(b"SSH-2.0-x\r\n\r\n"), Answer::Malformed(_)));
        assert!(matches!(answer(b"hello"), Answer::Malformed(_)));
        assert!(matches!(
            answer(&[b'H'; MAX_HEAD + 1][..]),
            Answer::Malformed(_)
        ));
    }
}
