//! The shared mix, through both grammars: lengths, `render_next`, the weighted pick and the
//! errors every protocol shares.

use super::*;
use crate::message::Fill;

/// The placeholders of request `seq` on connection `conn` (shared with the grammars' tests).
pub(crate) fn fill(conn: u64, seq: u64) -> Fill {
    Fill {
        conn,
        seq,
        ts_us: 5,
    }
}

pub(crate) fn specs(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
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
