//! Messages: escape parsing, placeholders and rendering.
//!
//! A message is parsed once into a template. Without placeholders it is one pre-built byte
//! string reused for every send (no work per message); with `{conn}`, `{seq}` or `{ts_us}` it
//! is rendered into the worker's scratch buffer, which is reused, so no send allocates.
//! `--command` templates ([`Template::try_new`]) also take the key ranges `{seq%N}` and
//! `{rand%N}`; `{rand%N}` is a stateless hash of (conn, seq), not an RNG: the same run renders
//! the same bytes, and no connection carries generator state.
//!
//! `{secret:NAME}` is different: it is filled once, at plan time, from the environment
//! variable NAME ([`fill_secrets`]), before the template is built, so the secret is plain
//! literal bytes in the template and costs nothing per send; the caller keeps the unfilled text
//! for everything it shows.
//!
//! Scenario templates ([`Template::with_vars`]) also take `{name}` and `{row.NAME}`: the
//! caller resolves each name to a slot of the user's [`Vars`](crate::capture::Vars) when the
//! scenario is compiled, so rendering ([`Template::render_vars_into`]) indexes a slot and never
//! looks a name up.
//!
//! This file holds the types ([`Template`], [`Fill`], its pieces) and the buffers a message is
//! written to ([`Reserved`], [`SeqMarks`], decimal digits); `parse` turns text into a template
//! (escapes, secrets, placeholders), `render` writes one out (lengths, bytes, binary fields);
//! `binary` parses and encodes typed fields.

use std::fmt;

pub mod binary;
mod int;
mod parse;
mod render;
mod template;

pub use parse::{
    escape, fill_secrets, unescape, EscapeError, SecretError, SecretLookup, TemplateError,
    VarTemplateError,
};
pub use render::{rand_mod, splitmix64};
pub use template::{bump_digits, digits, push_u64, Fill, Reserved, SeqMarks, Template};

impl fmt::Debug for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Template({:?})", escape(&self.raw))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Vars;

    #[test]
    fn room_writes_every_length_and_number_exactly() {
        let src: Vec<u8> = (0..64u8).map(|i| b'a' + i % 26).collect();
        for n in 0..=src.len() {
            let mut out = b"head".to_vec();
            let mut room = Reserved::open(&mut out, n + 40);
            room.put(&src[..n]);
            room.num(0);
            room.put(b"|");
            room.num(u64::MAX);
            assert_eq!(room.close(), n + 1 + 1 + 20);
            let want = [&b"head"[..], &src[..n], b"0|18446744073709551615"].concat();
            assert_eq!(out, want, "length {n}");
        }
        for n in [
            0,
            9,
            10,
            99,
            100,
            101,
            12_345,
            999_999_999,
            1 << 40,
            u64::MAX,
        ] {
            let mut a = b"x".to_vec();
            push_u64(&mut a, n);
            assert_eq!(a, format!("x{n}").as_bytes());
            assert_eq!(digits(n), n.to_string().len());
        }
        // A field guessed 1 digit wide, then widened to 3 and narrowed back.
        let mut out = Vec::new();
        let mut room = Reserved::open(&mut out, 32);
        room.put(b"0:");
        room.put(b"value");
        room.shift(1, 2);
        room.num_at(0, 123);
        room.shift(3, -1);
        room.num_at(0, 45);
        room.close();
        assert_eq!(out, b"45:value");
    }

    #[test]
    fn rendered_len_is_what_render_writes() {
        let texts: [&[u8]; 4] = [
            b"static",
            b"k:{seq}-{conn}",
            b"{ts_us}",
            b"{seq%1000}{rand%7}x",
        ];
        for text in texts {
            let t = Template::try_new(text.to_vec()).unwrap();
            for (conn, seq, ts_us) in [(0, 0, 0), (9, 10, 99), (123, 999_999, u64::MAX)] {
                let fill = Fill { conn, seq, ts_us };
                let mut out = Vec::new();
                assert_eq!(t.render_into(fill, &mut out), t.rendered_len(fill));
                assert_eq!(out.len(), t.rendered_len(fill));
            }
        }
    }

    #[test]
    fn escapes_table() {
        let ok: [(&str, &[u8]); 7] = [
            ("PING\\r\\n", b"PING\r\n"),
            ("a\\tb", b"a\tb"),
            ("\\\\", b"\\"),
            ("\\0", b"\0"),
            ("\\x41\\xff", b"A\xff"),
            ("plain", b"plain"),
            ("é", "é".as_bytes()),
        ];
        for (input, want) in ok {
            assert_eq!(unescape(input).unwrap(), want, "{input}");
        }
        assert_eq!(unescape("x\\"), Err(EscapeError::Dangling));
        assert_eq!(unescape("\\q"), Err(EscapeError::Unknown('q')));
        assert_eq!(unescape("\\x4"), Err(EscapeError::BadHex));
        assert_eq!(unescape("\\xzz"), Err(EscapeError::BadHex));
        assert_eq!(escape(b"A\r\n\x01\\"), "A\\r\\n\\x01\\\\");
        assert_eq!(unescape(&escape(b"\x00\xfe\t")).unwrap(), b"\x00\xfe\t");
    }

    #[test]
    fn placeholders_are_filled_per_message() {
        let t = Template::new(b"c={conn} s={seq} t={ts_us}!".to_vec());
        assert!(!t.is_static());
        let mut out = Vec::new();
        let n = t.render_into(
            Fill {
                conn: 7,
                seq: 42,
                ts_us: 1000,
            },
            &mut out,
        );
        assert_eq!(out, b"c=7 s=42 t=1000!");
        assert_eq!(n, out.len());
    }

    #[test]
    fn scenario_templates_fill_secrets_as_literal_text_never_as_placeholders() {
        let lookup = |n: &str| (n == "TOKEN").then(|| b"t{seq}{name}".to_vec());
        let resolve = |n: &str| (n == "name").then_some(0);
        let t = Template::with_vars_and_secrets(
            b"A {secret:TOKEN} {seq} {name}".to_vec(),
            resolve,
            &lookup,
        )
        .unwrap();
        assert_eq!(t.var_slots().count(), 1, "only the template's own {{name}}");
        let mut vars = Vars::new(1);
        vars.set(0, b"v");
        let mut out = Vec::new();
        let fill = Fill {
            conn: 1,
            seq: 7,
            ts_us: 0,
        };
        t.render_vars_into(fill, &vars, &mut out);
        assert_eq!(out, b"A t{seq}{name} 7 v");
        let st = Template::with_vars_and_secrets(b"K {secret:TOKEN}".to_vec(), resolve, &lookup)
            .unwrap();
        assert!(st.is_static());
        assert_eq!(st.raw(), b"K t{seq}{name}");
        assert_eq!(
            Template::with_vars_and_secrets(b"{secret:NOPE}".to_vec(), resolve, &lookup),
            Err(VarTemplateError::Secret(SecretError::Missing(
                "NOPE".into()
            )))
        );
    }

    #[test]
    fn secret_placeholders_are_filled_once_into_literal_bytes() {
        let mut env = |name: &str| (name == "TOKEN").then(|| b"s3cret".to_vec());
        let filled = fill_secrets(b"LOGIN {secret:TOKEN} {seq}\n", &mut env).unwrap();
        assert_eq!(filled, b"LOGIN s3cret {seq}\n");
        // The filled secret is literal: only {seq} stays dynamic.
        let t = Template::new(filled);
        let mut out = Vec::new();
        let fill = Fill {
            conn: 1,
            seq: 9,
            ts_us: 1,
        };
        t.render_into(fill, &mut out);
        assert_eq!(out, b"LOGIN s3cret 9\n");
        assert_eq!(fill_secrets(b"plain {x}", &mut env).unwrap(), b"plain {x}");
        assert_eq!(
            fill_secrets(b"{secret:NOPE}", &mut env),
            Err(SecretError::Missing("NOPE".into()))
        );
        for bad in [
            &b"{secret:}"[..],
            b"{secret:A-B}",
            b"{secret:TOKEN",
            b"{secret:1X}",
        ] {
            assert!(
                matches!(fill_secrets(bad, &mut env), Err(SecretError::BadName(_))),
                "{}",
                escape(bad)
            );
        }
    }

    #[test]
    fn numbers_are_written_in_decimal() {
        for n in [0, 7, 10, 99, 1000, 123_456_789, u64::MAX] {
            let mut out = b">".to_vec();
            push_u64(&mut out, n);
            assert_eq!(out, format!(">{n}").as_bytes());
        }
    }

    #[test]
    fn connection_modulo_names_a_room_of_n() {
        let t = Template::try_new(b"room/{conn%10}/{user%3}".to_vec()).unwrap();
        let mut out = Vec::new();
        let fill = Fill {
            conn: 1234,
            seq: 9,
            ts_us: 0,
        };
        let n = t.rendered_len(fill);
        assert_eq!(t.render_into(fill, &mut out), n);
        assert_eq!(out, b"room/4/1");
        assert!(Template::try_new(b"{conn%0}".to_vec()).is_err());
    }

    #[test]
    fn modulo_placeholders_wrap_and_hash_without_state() {
        let t = Template::try_new(b"k:{seq%10} r:{rand%1000}".to_vec()).unwrap();
        assert!(!t.is_static());
        let render = |conn, seq| {
            let mut out = Vec::new();
            t.render_into(
                Fill {
                    conn,
                    seq,
                    ts_us: 0,
                },
                &mut out,
            );
            String::from_utf8(out).unwrap()
        };
        assert!(render(1, 123).starts_with("k:3 r:"));
        // Deterministic: the same (conn, seq) renders the same bytes, twice.
        assert_eq!(render(4, 77), render(4, 77));
        // Uniform enough: 10 000 draws over 10 buckets, each within 20 % of 1000.
        let mut buckets = [0u32; 10];
        for seq in 0..10_000 {
            buckets[rand_mod(3, seq, 10) as usize] += 1;
        }
        assert!(
            buckets.iter().all(|b| (800..1200).contains(b)),
            "{buckets:?}"
        );
        assert!((0..1000).all(|s| rand_mod(s, s, 7) < 7));
        assert_eq!(rand_mod(9, 9, 1), 0);
    }

    #[test]
    fn malformed_modulo_placeholders_are_errors_when_strict() {
        for bad in [
            "{seq%}",
            "{seq%0}",
            "{rand%x}",
            "{rand%12",
            "{seq%99999999999999999999}",
        ] {
            let err = Template::try_new(bad.as_bytes().to_vec()).unwrap_err();
            assert!(err.to_string().contains("{seq%N}"), "{bad}: {err}");
            assert!(
                err.to_string().starts_with(&format!("'{bad}'")),
                "{bad}: {err}"
            );
        }
        // The placeholder is quoted whole, not cut where its number stopped.
        let err = Template::try_new(b"GET key:{rand%abc} x".to_vec()).unwrap_err();
        assert!(err.to_string().starts_with("'{rand%abc}'"), "{err}");
    }

    #[test]
    fn plain_templates_keep_key_range_placeholders_literal() {
        // `Template::new` (messages, HTTP) knows only the three classic tags: the HTTP body
        // template's precomputed Content-Length counts exactly those.
        let t = Template::new(b"{seq%10}{rand%5}".to_vec());
        assert!(t.is_static());
        let t = Template::new(b"a{seq%10}{seq}".to_vec());
        let mut out = Vec::new();
        t.render_into(
            Fill {
                conn: 0,
                seq: 42,
                ts_us: 0,
            },
            &mut out,
        );
        assert_eq!(out, b"a{seq%10}42");
    }

    #[test]
    fn messages_without_placeholders_are_static() {
        let t = Template::new(b"hello {world}".to_vec());
        assert!(t.is_static());
        let mut out = vec![b'>'];
        t.render_into(
            Fill {
                conn: 1,
                seq: 1,
                ts_us: 1,
            },
            &mut out,
        );
        assert_eq!(out, b">hello {world}");
    }

    fn fill() -> Fill {
        Fill {
            conn: 3,
            seq: 5,
            ts_us: 9,
        }
    }

    fn slots(name: &str) -> Option<usize> {
        ["token", "row.name", "room_id"]
            .iter()
            .position(|n| *n == name)
    }

    #[test]
    fn variables_render_from_their_slot() {
        let raw = br#"{"auth":"{token}","user":"{row.name}","c":{conn},"k":"{seq%2}"} {room_id}"#;
        let t = Template::with_vars(raw.to_vec(), slots).unwrap();
        assert!(!t.is_static());
        assert_eq!(t.var_slots().collect::<Vec<_>>(), [0, 1, 2]);
        let mut vars = Vars::new(3);
        vars.set(0, b"T0K");
        vars.set(1, "zoë".as_bytes());
        let mut out = b">".to_vec();
        let n = t.render_vars_into(fill(), &vars, &mut out);
        let want = r#">{"auth":"T0K","user":"zoë","c":3,"k":"1"} "#;
        assert_eq!(
            String::from_utf8(out).unwrap(),
            want,
            "unset slot 2 renders empty"
        );
        assert_eq!(n, want.len() - 1);
        assert_eq!(t.rendered_len_vars(fill(), &vars), n);
        vars.set(2, b"lobby");
        let mut out = Vec::new();
        let n = t.render_vars_into(fill(), &vars, &mut out);
        assert!(out.ends_with(b"} lobby"));
        assert_eq!(t.rendered_len_vars(fill(), &vars), n);
        // Without vars (render_into) a variable renders as nothing.
        let mut plain = Vec::new();
        assert_eq!(t.render_into(fill(), &mut plain), t.rendered_len(fill()));
        assert!(plain.ends_with(b"\"} "));
    }

    #[test]
    fn unknown_variable_is_an_error_naming_it() {
        let e = Template::with_vars(b"JOIN {room}\n".to_vec(), slots).unwrap_err();
        assert_eq!(e, VarTemplateError::Unknown("room".into()));
        assert!(e.to_string().starts_with("{room} is not defined"), "{e}");
        let e = Template::with_vars(b"{seq%0}".to_vec(), slots).unwrap_err();
        assert!(matches!(e, VarTemplateError::Range(_)), "{e}");
    }

    #[test]
    fn braces_that_are_not_variables_stay_literal() {
        for raw in [
            &br#"{"a":{"b":[1]}}"#[..],
            b"{}",
            b"{ token }",
            b"{1x}",
            b"{token",
            b"{secret:X}",
            b"{a b}",
        ] {
            let t = Template::with_vars(raw.to_vec(), |_| None).unwrap();
            assert!(t.is_static(), "{}", escape(raw));
            assert_eq!(t.raw(), raw);
        }
    }

    #[test]
    fn classic_templates_ignore_variables() {
        // Template::new / try_new keep their behaviour: `{token}` is literal text there.
        let t = Template::try_new(b"x{token}{seq}".to_vec()).unwrap();
        let mut out = Vec::new();
        t.render_into(fill(), &mut out);
        assert_eq!(out, b"x{token}5");
        assert_eq!(t.var_slots().count(), 0);
    }
}
