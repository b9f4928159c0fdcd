use super::*;
use crate::command::tests::{fill, specs};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    R(RespReply),
    Push,
}

#[derive(Default)]
struct Events(Vec<Ev>);

impl RespSink for Events {
    fn reply(&mut self, r: RespReply) {
        self.0.push(Ev::R(r));
    }
    fn push(&mut self) {
        self.0.push(Ev::Push);
    }
}

const V: Ev = Ev::R(RespReply::Value);
const N: Ev = Ev::R(RespReply::Null);
const E: Ev = Ev::R(RespReply::Error);

fn decode(input: &[u8]) -> Result<Vec<Ev>, RespError> {
    let mut d = RespDecoder::default();
    let mut ev = Events::default();
    d.feed(input, &mut ev)?;
    assert!(
        d.is_idle(),
        "input ends mid-value: {:?}",
        crate::escape(input)
    );
    Ok(ev.0)
}

#[test]
fn every_reply_type_is_one_top_level_event() {
    let table: &[(&[u8], Ev)] = &[
        (b"+OK\r\n", V),
        (b"-ERR unknown command\r\n", E),
        (b":1000\r\n", V),
        (b":-3\r\n", V),
        (b"$5\r\nhello\r\n", V),
        (b"$0\r\n\r\n", V),
        (b"$-1\r\n", N),
        (b"*-1\r\n", N),
        (b"*0\r\n", V),
        (b"*2\r\n$3\r\nfoo\r\n:1\r\n", V),
        (b"*2\r\n*1\r\n+a\r\n*0\r\n", V),
        (b"_\r\n", N),
        (b"#t\r\n", V),
        (b"#f\r\n", V),
        (b",3.14\r\n", V),
        (b",-inf\r\n", V),
        (b"(3492890328409238509324850943850943825024385\r\n", V),
        (b"!21\r\nSYNTAX invalid syntax\r\n", E),
        (b"=15\r\ntxt:Some string\r\n", V),
        (b"%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n", V),
        (b"%0\r\n", V),
        (b"~3\r\n+a\r\n+b\r\n+c\r\n", V),
        (b">3\r\n+message\r\n+chan\r\n+hello\r\n", Ev::Push),
        // An error or a null nested in an array is part of the array's value.
        (b"*2\r\n-ERR nested\r\n$-1\r\n", V),
        (b"*1\r\n_\r\n", V),
    ];
    for (input, want) in table {
        let got = decode(input).unwrap_or_else(|e| panic!("{}: {e}", crate::escape(input)));
        assert_eq!(got, vec![*want], "{}", crate::escape(input));
    }
}

#[test]
fn attributes_decorate_the_next_value_and_are_no_reply() {
    // Top level: the attribute, then the reply it decorates.
    let got =
        decode(b"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*2\r\n:2039\r\n:9543\r\n");
    assert_eq!(got.unwrap(), vec![V]);
    // Nested: the attribute is not counted as an element of the array (2 elements, not 3).
    let got = decode(b"*2\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n+after\r\n");
    assert_eq!(got.unwrap(), vec![V, V]);
    // An empty attribute decorates nothing and reports nothing.
    assert_eq!(decode(b"|0\r\n-ERR x\r\n").unwrap(), vec![E]);
}

#[test]
fn nested_maps_and_pushes_between_replies() {
    // HELLO 3's reply shape: a map holding strings, integers and an array.
    let hello =
        b"%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n$7\r\nmodules\r\n*0\r\n";
    let mut input = hello.to_vec();
    input.extend_from_slice(b">2\r\n+invalidate\r\n*1\r\n$3\r\nkey\r\n");
    input.extend_from_slice(b"%1\r\n+m\r\n%1\r\n+n\r\n~2\r\n#t\r\n_\r\n");
    assert_eq!(decode(&input).unwrap(), vec![V, Ev::Push, V]);
}

/// A stream with every type, nesting, attributes and a push, and its events.
fn mixed_stream() -> (Vec<u8>, Vec<Ev>) {
    let parts: &[(&[u8], Option<Ev>)] = &[
        (b"+OK\r\n", Some(V)),
        (b"-WRONGTYPE Operation against a key\r\n", Some(E)),
        (b":42\r\n", Some(V)),
        (b"$12\r\nhello\r\nworld\r\n", Some(V)),
        (b"$-1\r\n", Some(N)),
        (b"$0\r\n\r\n", Some(V)),
        (b"*3\r\n$1\r\na\r\n*-1\r\n*2\r\n:1\r\n-ERR in\r\n", Some(V)),
        (b"_\r\n", Some(N)),
        (b"*-1\r\n", Some(N)),
        (b"|1\r\n+a\r\n+b\r\n", None),
        (b"%2\r\n+k\r\n~1\r\n,1e3\r\n+j\r\n(123\r\n", Some(V)),
        (b">2\r\n+pubsub\r\n=7\r\ntxt:a\r\n\r\n", Some(Ev::Push)),
        (b"!3\r\nBAD\r\n", Some(E)),
        (b"#f\r\n", Some(V)),
        (b"*0\r\n", Some(V)),
    ];
    let bytes = parts.iter().flat_map(|p| p.0.iter().copied()).collect();
    let events = parts.iter().filter_map(|p| p.1).collect();
    (bytes, events)
}

#[test]
fn any_split_of_a_mixed_stream_gives_the_same_events() {
    let (input, want) = mixed_stream();
    assert_eq!(decode(&input).unwrap(), want);
    // Byte by byte.
    let mut d = RespDecoder::default();
    let mut ev = Events::default();
    for b in &input {
        d.feed(std::slice::from_ref(b), &mut ev).unwrap();
    }
    assert_eq!(ev.0, want);
    // Every 2-piece split.
    for cut in 0..=input.len() {
        let mut d = RespDecoder::default();
        let mut ev = Events::default();
        d.feed(&input[..cut], &mut ev).unwrap();
        d.feed(&input[cut..], &mut ev).unwrap();
        assert_eq!(ev.0, want, "cut at {cut}");
        assert!(d.is_idle());
    }
}

#[test]
fn malformed_input_is_an_error_naming_what_was_wrong() {
    let table: &[(&[u8], RespError)] = &[
        (b"?x\r\n", RespError::BadType(b'?')),
        (b"$abc\r\n", RespError::BadLength(b'$')),
        (b"$\r\n", RespError::BadLength(b'$')),
        (b"$-2\r\n", RespError::BadLength(b'$')),
        (b"%-1\r\n", RespError::BadLength(b'%')),
        (b"$536870913\r\n", RespError::BulkTooLong),
        (b"*2147483648\r\n", RespError::AggregateTooLong),
        (b"$3\r\nabcd\r\n", RespError::MissingCrlf),
        (b"+OK\n", RespError::MissingCrlf),
        (b"+OK\rX", RespError::MissingCrlf),
        (b":12a\r\n", RespError::BadValue(b':')),
        (b":\r\n", RespError::BadValue(b':')),
        (b"#x\r\n", RespError::BadValue(b'#')),
        (b"#tt\r\n", RespError::BadValue(b'#')),
        (b"_x\r\n", RespError::BadValue(b'_')),
    ];
    for (input, want) in table {
        let mut d = RespDecoder::default();
        let got = d.feed(input, &mut Events::default());
        assert_eq!(got.as_ref(), Err(want), "{}", crate::escape(input));
        // The error sticks until reset.
        assert_eq!(
            d.feed(b"+OK\r\n", &mut Events::default()).as_ref(),
            Err(want)
        );
        d.reset();
        assert!(d.feed(b"+OK\r\n", &mut Events::default()).is_ok());
        assert!(!want.to_string().is_empty());
    }
    assert_eq!(
        RespError::BadLength(b'$').to_string(),
        "malformed length in a RESP '$' header"
    );
}

#[test]
fn nesting_is_bounded_by_a_fixed_stack() {
    let deep = |n: usize| {
        let mut v = b"*1\r\n".repeat(n);
        v.extend_from_slice(b"+x\r\n");
        v
    };
    assert_eq!(decode(&deep(STACK)).unwrap(), vec![V]);
    let mut d = RespDecoder::default();
    let got = d.feed(&deep(STACK + 1), &mut Events::default());
    assert_eq!(got, Err(RespError::TooDeep(STACK as u8)));
    let mut d = RespDecoder::new(2);
    assert!(d.feed(&deep(2), &mut Events::default()).is_ok());
    let mut d = RespDecoder::new(2);
    assert_eq!(
        d.feed(&deep(3), &mut Events::default()),
        Err(RespError::TooDeep(2))
    );
}

#[test]
fn bulk_payloads_are_skipped_by_count_whatever_they_hold() {
    // A payload holding CRLFs and type bytes, fed in pieces that cut it anywhere.
    let input = b"$19\r\n+OK\r\n-ERR\r\n*1\r\n:1\r\n\r\n:7\r\n";
    for cut in 0..=input.len() {
        let mut d = RespDecoder::default();
        let mut ev = Events::default();
        d.feed(&input[..cut], &mut ev).unwrap();
        d.feed(&input[cut..], &mut ev).unwrap();
        assert_eq!(ev.0, vec![V, V], "cut at {cut}");
    }
    assert_eq!(decode(input).unwrap(), vec![V, V]);
}

#[test]
fn state_is_small() {
    // 128 bytes of element counts (32 levels) + 24 of state = 152 on x86_64.
    let size = std::mem::size_of::<RespDecoder>();
    eprintln!("RespDecoder: {size} bytes");
    assert!(size <= STACK * 4 + 64, "RespDecoder is {size} bytes");
}

#[test]
fn redis_commands_are_resp_encoded_with_lengths_after_filling() {
    let c = Commands::redis(&specs(&[
        "SET key:{seq} {conn}",
        "get \"a b\"",
        "SET k \"say \\\"hi\\\"\\r\\n\"",
        "INCRBY counter:{seq%3} {rand%10}",
    ]))
    .unwrap();
    assert_eq!(c.len(), 4);
    let mut out = Vec::new();
    let n = c.render_into(0, fill(7, 12345), &mut out);
    assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$9\r\nkey:12345\r\n$1\r\n7\r\n");
    assert_eq!(n, out.len());
    assert_eq!(c.static_bytes(0), None);
    assert_eq!(c.name(0), "SET");
    assert_eq!(c.describe(0), "SET key:{seq} {conn}");
    // Static commands are pre-encoded and render the same bytes; names are upper case.
    assert_eq!(
        c.static_bytes(1),
        Some(&b"*2\r\n$3\r\nget\r\n$3\r\na b\r\n"[..])
    );
    assert_eq!(c.name(1), "GET");
    assert_eq!(
        c.static_bytes(2),
        Some(&b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nsay \"hi\"\r\n\r\n"[..])
    );
    // Appends: what was in `out` stays.
    let before = out.len();
    let n = c.render_into(3, fill(1, 5), &mut out);
    let rendered = &out[before..];
    assert_eq!(n, rendered.len());
    let r = crate::message::rand_mod(1, 5, 10);
    let want = format!("*3\r\n$6\r\nINCRBY\r\n$9\r\ncounter:2\r\n$1\r\n{r}\r\n");
    assert_eq!(rendered, want.as_bytes());
    // A length of two digits and more.
    let c = Commands::redis(&specs(&["SET {seq}{seq}{seq}{seq} x"])).unwrap();
    let mut out = Vec::new();
    c.render_into(0, fill(0, 1234567), &mut out);
    assert_eq!(
        out,
        b"*3\r\n$3\r\nSET\r\n$28\r\n1234567123456712345671234567\r\n$1\r\nx\r\n"
    );
}
