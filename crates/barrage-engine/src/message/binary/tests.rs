use super::*;
use crate::message::Fill;

fn fill(conn: u64, seq: u64, ts_us: u64) -> Fill {
    Fill { conn, seq, ts_us }
}

fn render(text: &str, f: Fill) -> Vec<u8> {
    let t = compile(text, None, None).unwrap_or_else(|e| panic!("{text}: {e}"));
    let mut out = Vec::new();
    let n = t.render_into(f, &mut out);
    assert_eq!(n, out.len());
    assert_eq!(t.rendered_len(f), out.len(), "{text}");
    out
}

#[test]
fn a_length_prefixed_message_of_typed_fields() {
    let text = r#"u8 1, len:u16be(u32be {seq}, str:u8 "room-{conn}", u64be {ts_us}), bytes 0a0b"#;
    let got = render(text, fill(7, 300, 5));
    let mut want = vec![1u8, 0, 4 + 1 + 6 + 8];
    want.extend_from_slice(&300u32.to_be_bytes());
    want.push(6);
    want.extend_from_slice(b"room-7");
    want.extend_from_slice(&5u64.to_be_bytes());
    want.extend_from_slice(&[0x0a, 0x0b]);
    assert_eq!(got, want);
    // The length follows the text's digits.
    let got = render(text, fill(12_345, 300, 5));
    assert_eq!(&got[1..3], &(4u16 + 1 + 10 + 8).to_be_bytes());
    // Also through the bounded writer (no variables).
    let t = compile(text, None, None).unwrap();
    assert!(t.bound().is_some());
    let mut out = Vec::new();
    let mut room = crate::message::Reserved::open(&mut out, t.bound().unwrap());
    t.write(fill(7, 300, 5), &mut room);
    room.close();
    assert_eq!(out, render(text, fill(7, 300, 5)));
}

#[test]
fn lengths_nest_and_adjust() {
    assert_eq!(
        render(r#"len:u8(u8 1, len:u8(str "abc"))"#, fill(0, 0, 0)),
        [5, 1, 3, b'a', b'b', b'c']
    );
    assert_eq!(render("len:u16be+2(u8 1)", fill(0, 0, 0)), [0, 3, 1]);
    assert_eq!(render("len:u8-1(u8 1)", fill(0, 0, 0)), [0, 1]);
    assert_eq!(
        render("len:u32le(bytes 0102)", fill(0, 0, 0)),
        [2, 0, 0, 0, 1, 2]
    );
    // A varint length grows with what it covers.
    let long = format!(r#"len:varint(str "{}")"#, "x".repeat(200));
    let got = render(&long, fill(0, 0, 0));
    assert_eq!(&got[..2], &[200 | 0x80, 1]);
    assert_eq!(got.len(), 202);
    let got = render(r#"str:mqtt_varint "{seq}""#, fill(0, 123, 0));
    assert_eq!(got, [3, b'1', b'2', b'3']);
}

/// Eight nested variable-width lengths render in one pass (each shifts what it covers back
/// once its value is known), the same through both writers, as `rendered_len` says; a ninth
/// is refused, as is a length whose type cannot hold what it covers.
#[test]
fn nested_lengths_are_linear_and_bounded() {
    let deep = |n: usize, kind: &str, inner: &str| {
        format!(
            "{}{inner}{}",
            format!("len:{kind}(u8 7, ").repeat(n),
            ")".repeat(n)
        )
    };
    let text = deep(8, "varint", r#"str "x{seq}""#);
    let t = compile(&text, None, None).unwrap();
    for seq in [0u64, 12_345] {
        let f = fill(3, seq, 0);
        let got = render(&text, f);
        let mut vars_out = Vec::new();
        t.render_vars_into(f, &crate::capture::Vars::new(0), &mut vars_out);
        assert_eq!(got, vars_out);
        // Innermost out: each length is 1 + the one inside it + its own byte.
        let inner = 1 + crate::message::digits(seq);
        let mut want_len = (inner + 1) as u8;
        let mut lens = vec![];
        for _ in 0..8 {
            lens.push(want_len);
            want_len += 2;
        }
        lens.reverse();
        for (k, l) in lens.iter().enumerate() {
            assert_eq!(got[2 * k], *l, "level {k}");
            assert_eq!(got[2 * k + 1], 7);
        }
    }
    let e = compile(&deep(9, "u8", "u8 1"), None, None).unwrap_err();
    assert!(e.why.contains("nested"), "{e}");
    let e = compile(&format!(r#"len:u8(str "{}")"#, "x".repeat(300)), None, None).unwrap_err();
    assert!(e.why.contains("does not fit u8"), "{e}");
    let e = compile(&format!(r#"str:i8 "{}""#, "x".repeat(128)), None, None).unwrap_err();
    assert!(e.why.contains("does not fit i8"), "{e}");
    assert!(compile(&format!(r#"str:u8 "{}""#, "x".repeat(255)), None, None).is_ok());
    assert!(compile("len:u8+300(u8 1)", None, None).is_err());
}

#[test]
fn integers_encode_and_decode_in_every_type() {
    for (name, v, want) in [
        ("u8", 255u64, &[0xffu8][..]),
        ("u16be", 0x0102, &[1, 2]),
        ("u16le", 0x0102, &[2, 1]),
        ("u32be", 1, &[0, 0, 0, 1]),
        ("u32le", 1, &[1, 0, 0, 0]),
        ("u64be", 1, &[0, 0, 0, 0, 0, 0, 0, 1]),
        ("u64le", 1, &[1, 0, 0, 0, 0, 0, 0, 0]),
        ("varint", 300, &[0xac, 0x02]),
        ("varint", 0, &[0]),
        ("mqtt_varint", 127, &[0x7f]),
        ("mqtt_varint", 128, &[0x80, 0x01]),
        ("mqtt_varint", 16_384, &[0x80, 0x80, 0x01]),
        ("mqtt_varint", MQTT_MAX, &[0xff, 0xff, 0xff, 0x7f]),
    ] {
        let k = IntKind::parse(name).unwrap();
        let mut b = [0u8; 10];
        let n = k.encode(v, &mut b);
        assert_eq!(&b[..n], want, "{name} {v}");
        assert_eq!(k.len(v), n, "{name} {v}");
        assert_eq!(k.decode(want), Some((v, n)), "{name} {v}");
        assert_eq!(render(&format!("{name} {v}"), fill(0, 0, 0)), want);
    }
    assert_eq!(render("i8 -1", fill(0, 0, 0)), [0xff]);
    assert_eq!(render("i16le -2", fill(0, 0, 0)), [0xfe, 0xff]);
    assert_eq!(
        render("i32be -128", fill(0, 0, 0)),
        [0xff, 0xff, 0xff, 0x80]
    );
    let k = IntKind::parse("i16be").unwrap();
    assert_eq!(k.decode(&[0xff, 0xfe]), Some(((-2i64) as u64, 2)));
    assert_eq!(IntKind::Mqtt.decode(&[0x80, 0x80, 0x80, 0x80, 0x01]), None);
    assert_eq!(IntKind::parse("u16be").unwrap().decode(&[1]), None);
    // A placeholder's value is taken modulo the width (MQTT's: 2^28).
    assert_eq!(render("u8 {seq}", fill(0, 257, 0)), [1]);
    assert_eq!(render("mqtt_varint {seq}", fill(0, MQTT_MAX + 3, 0)), [2]);
    assert_eq!(parse_num(b" -5 "), (-5i64) as u64);
    assert_eq!(parse_num(b"42"), 42);
    assert_eq!(parse_num(b"4x"), 0);
    assert_eq!(render("u16be {seq%1000}", fill(0, 1234, 0)), [0, 234]);
}

#[test]
fn a_message_without_placeholders_is_one_literal() {
    let t = compile(r#"u8 1, len:u8(str "ab"), bytes "\x00z""#, None, None).unwrap();
    assert!(t.is_static());
    assert_eq!(t.raw(), &[1, 2, b'a', b'b', 0, b'z']);
    assert_eq!(t.seq_fields(), Some(0));
    let t = compile("u8 1, u32be {seq}", None, None).unwrap();
    assert_eq!(t.seq_fields(), None);
}

#[test]
fn scenario_variables_and_secrets() {
    let resolve = |n: &str| match n {
        "n" => Some(0),
        "name" => Some(1),
        _ => None,
    };
    let secret = |n: &str| (n == "K").then(|| b"a{seq}".to_vec());
    let t = compile(
        r#"u32be {n}, str:u8 "{name}:{secret:K}", i16be {n}"#,
        Some(&resolve),
        Some(&secret),
    )
    .unwrap();
    let mut vars = crate::capture::Vars::new(2);
    for (n, name, want_n) in [
        ("1234", "bo", 1234u32),
        ("-3", "", (-3i32) as u32),
        ("x", "z", 0),
    ] {
        vars.set(0, n.as_bytes());
        vars.set(1, name.as_bytes());
        let mut out = Vec::new();
        t.render_vars_into(fill(0, 9, 0), &vars, &mut out);
        let text = format!("{name}:a{{seq}}");
        let mut want = want_n.to_be_bytes().to_vec();
        want.push(text.len() as u8);
        want.extend_from_slice(text.as_bytes());
        want.extend_from_slice(&(want_n as u16).to_be_bytes());
        assert_eq!(out, want, "{n}");
        assert_eq!(t.rendered_len_vars(fill(0, 9, 0), &vars), out.len());
    }
    assert_eq!(t.var_slots().collect::<Vec<_>>(), [0, 1, 0]);
    let e = compile("u8 {nope}", Some(&resolve), None).unwrap_err();
    assert!(e.why.contains("nope"), "{e}");
}

#[test]
fn mistakes_say_where_and_why() {
    for (text, at, says) in [
        ("", 0, "no fields"),
        ("u8", 2, "expected a number"),
        ("u8 256", 6, "does not fit u8"),
        ("i8 -129", 7, "does not fit i8"),
        ("u8 -1", 5, "does not fit"),
        ("mqtt_varint 268435456", 21, "does not fit"),
        ("u16 5", 0, "u16be or u16le"),
        ("float 1", 0, "not a field"),
        ("u8 1 u8 2", 5, "comma"),
        ("len:u16be(u8 1", 14, "close len"),
        ("len(u8 1)", 3, "needs a type"),
        ("len:u12(u8 1)", 7, "not an integer type"),
        ("str hello", 4, "quoted text"),
        ("str \"open", 4, "closing \""),
        ("bytes 0a0", 6, "hex digits in pairs"),
        ("u8 {text}", 3, "not a placeholder a number"),
        ("u8 {seq%0}", 3, "seq%"),
        ("bytes \"\\q\"", 6, ""),
    ] {
        let e = compile(text, None, None).unwrap_err();
        assert_eq!(e.at, at, "{text}: {e}");
        assert!(e.why.contains(says), "{text}: {e}");
    }
}

/// Issue 42 item 8: a length adjusted below zero was written as 0. Known at compile time
/// (nothing but numbers and text inside), it is refused; with a `{name}` inside, the message
/// whose values make it negative is found before it is sent.
#[test]
fn a_fields_length_that_goes_below_zero_is_refused() {
    for text in [
        "len:u8-5(u8 1)",
        "len:u16be-3(str \"{seq}\")",
        "u8 1, len:varint-2(bytes 00)",
    ] {
        let e = compile(text, None, None).unwrap_err().to_string();
        assert!(
            e.contains("below zero") && e.contains("subtract at most"),
            "{text}: {e}"
        );
    }
    // Exactly zero is a length.
    assert_eq!(render("len:u8-1(u8 9)", fill(0, 0, 0)), [0, 9]);
    let t = compile("len:u8-2(u8 9)", None, None);
    assert!(t.is_err());
    // A variable: its value decides, message by message.
    let resolve = |n: &str| (n == "name").then_some(0);
    let t = compile("len:u8-4(str \"{name}\")", Some(&resolve), None).unwrap();
    assert!(t.underflow());
    let mut vars = crate::capture::Vars::new(1);
    vars.set(0, b"abc");
    let why = t
        .len_fault(fill(0, 0, 0), &vars)
        .expect("3 - 4 is below zero");
    assert!(why.contains("-1") && why.contains("below zero"), "{why}");
    vars.set(0, b"abcd");
    assert_eq!(t.len_fault(fill(0, 0, 0), &vars), None);
    // A length that cannot go below zero costs no check.
    let t = compile("len:u8-1(u8 1, str \"{name}\")", Some(&resolve), None).unwrap();
    assert!(!t.underflow());
}
