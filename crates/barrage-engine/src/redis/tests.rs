use super::*;
use crate::message::Fill;

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

fn fill(conn: u64, seq: u64) -> Fill {
    Fill {
        conn,
        seq,
        ts_us: 5,
    }
}

fn specs(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
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

#[test]
fn a_length_that_changes_width_is_written_right_both_ways() {
    // The length field's width is guessed from the last request: widening and narrowing
    // (and a memcached block the same) must move the value, never leave a gap.
    let c = Commands::redis(&specs(&["SET {seq} v"])).unwrap();
    let m = Commands::memcache(&specs(&["set k {seq}"])).unwrap();
    for seq in [5, 1_234_567_890, 7, 12_345_678_901_234_567_890, 0, 99, 123] {
        let mut out = b"before".to_vec();
        let n = c.render_into(0, fill(1, seq), &mut out);
        let v = seq.to_string();
        let want = format!(
            "before*3\r\n$3\r\nSET\r\n${}\r\n{v}\r\n$1\r\nv\r\n",
            v.len()
        );
        assert_eq!(String::from_utf8_lossy(&out), want, "seq {seq}");
        assert_eq!(n, want.len() - 6);
        let mut out = Vec::new();
        m.render_into(0, fill(1, seq), &mut out);
        let want = format!("set k 0 0 {}\r\n{v}\r\n", v.len());
        assert_eq!(String::from_utf8_lossy(&out), want, "seq {seq}");
    }
}

#[test]
fn a_connections_next_request_is_its_last_counted_up_and_always_what_render_writes() {
    // Every kind of command: stepping ({seq}, {conn}, in keys, values and memcached blocks,
    // several fields, widths that carry), and not stepping ({rand%N}, {seq%N}, {ts_us},
    // more fields than are marked), alone and in a weighted mix.
    let redis = [
        vec!["SET key:{seq} {conn}"],
        vec!["GET key:{seq}"],
        vec!["SET k v"],
        vec!["SET c:{conn} {conn}"],
        vec!["SET {seq}{seq}{seq}{seq}{seq}{seq}{seq}{seq}{seq} x"],
        vec!["SET {seq}{seq}{seq}{seq}{seq}{seq}{seq}{seq} {conn}{seq}"],
        vec!["SET key:{rand%1000} {seq}", "GET key:{seq%10}"],
        vec![
            "3*SET key:{seq} {seq}",
            "GET key:{seq}",
            "2*ZADD z {ts_us} m:{seq}",
        ],
    ];
    let memcache = [
        vec!["set key:{seq} v{seq}"],
        vec!["get key:{seq} k:{conn}"],
        vec![
            "3*set key:{seq} {conn}:{seq}",
            "get key:{seq}",
            "incr n:{seq} {seq}",
        ],
    ];
    let all = redis
        .iter()
        .map(|s| Commands::redis(&specs(s)).unwrap())
        .chain(
            memcache
                .iter()
                .map(|s| Commands::memcache(&specs(s)).unwrap()),
        );
    for c in all {
        let mut last = Last::default();
        let (mut next, mut whole) = (b"kept".to_vec(), b"kept".to_vec());
        let mut check = |conn: u64, seq: u64| {
            let f = Fill {
                conn,
                seq,
                ts_us: 1_700_000_000_000_000 ^ seq,
            };
            let got = c.render_next(f, &mut next, &mut last);
            let want = c.render(f, &mut whole);
            assert_eq!(got, want, "{} conn {conn} seq {seq}", c.describe(want.1));
            assert_eq!(next, whole, "{} conn {conn} seq {seq}", c.describe(want.1));
        };
        // Runs of next seqs across every width change, another connection in between, a
        // jump back and one forward, and a run near the top of u64.
        for seq in 0..1_100 {
            check(3, seq);
        }
        check(12, 1_100);
        check(3, 1_101);
        check(3, 1_102);
        check(3, 7);
        check(3, 8);
        check(3, 99_999);
        for seq in 99_998..100_003 {
            check(3, seq);
        }
        for seq in u64::MAX - 3..u64::MAX {
            check(40, seq);
        }
    }
}

#[test]
fn rendering_allocates_nothing_once_the_buffer_has_room() {
    let c = Commands::redis(&specs(&["SET key:{seq} {conn}"])).unwrap();
    let mut out = Vec::with_capacity(256);
    let ptr = out.as_ptr();
    for seq in 0..1000 {
        out.clear();
        c.render_into(0, fill(seq, seq * 1_000_003), &mut out);
    }
    assert_eq!(out.as_ptr(), ptr);
}

#[test]
fn weighted_pick_is_exact_and_interleaved() {
    let c = Commands::redis(&specs(&["3*GET a", "SET a b", "2*DEL a"])).unwrap();
    assert_eq!(c.total_weight(), 6);
    for window in [0u64, 6, 600, 1 << 40] {
        let mut counts = [0; 3];
        for seq in window..window + 6 {
            counts[c.pick(seq)] += 1;
        }
        assert_eq!(counts, [3, 1, 2], "window at {window}");
    }
    // Interleaved, not in blocks: nginx's smooth order for weights 3, 1, 2.
    let order: Vec<_> = (0..6).map(|s| c.pick(s)).collect();
    assert_eq!(order, [0, 2, 0, 1, 2, 0]);
    // Exact over any window of `total` consecutive seqs, for uneven weights too.
    let c = Commands::redis(&specs(&["7*GET a", "3*SET a b", "PING"])).unwrap();
    for start in 0..40u64 {
        let mut counts = [0; 3];
        for seq in start..start + 11 {
            counts[c.pick(seq)] += 1;
        }
        assert_eq!(counts, [7, 3, 1], "window at {start}");
    }
    // The most frequent command is never picked more than twice in a row here.
    let order: Vec<_> = (0..11).map(|s| c.pick(s)).collect();
    assert!(order.windows(3).all(|w| w != [0, 0, 0]), "{order:?}");
    let one = Commands::redis(&specs(&["PING"])).unwrap();
    assert!((0..10).all(|s| one.pick(s) == 0));
}

#[test]
fn bad_commands_are_one_line_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "no command given"),
        (&["   "], "is empty"),
        (&["0*GET a"], "weight"),
        (&["99999*GET a"], "weight"),
        (&["6000*GET a", "5000*SET a b"], "add up to 11000"),
        (&["GET \"a"], "not closed"),
        (&["GET a\\q"], "unknown escape"),
        (&["GET key:{seq%0}"], "{seq%N}"),
        (&["GET key:{rand%}"], "{rand%}"),
    ];
    for (s, want) in cases {
        let err = Commands::redis(&specs(s)).unwrap_err().to_string();
        assert!(err.contains(want), "{s:?}: {err}");
        assert!(!err.contains('\n'), "{err}");
    }
}
