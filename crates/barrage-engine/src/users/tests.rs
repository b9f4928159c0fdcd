//! Arrival and departure times in virtual time: pure functions of the user's number.

use super::*;

fn users(arrive: crate::shape::Shape, count: u64, hold_s: u64, depart: Depart) -> Users {
    Users {
        count,
        arrive,
        hold_ns: hold_s * 1_000_000_000,
        depart,
        program: Default::default(),
        rows: Vec::new(),
        stages: None,
    }
}

#[test]
fn users_arrive_per_second_within_one_of_the_shape() {
    let stages = [
        (10.0, std::time::Duration::from_secs(3)),
        (50.0, std::time::Duration::from_secs(4)),
        (7.5, std::time::Duration::from_secs(2)),
    ];
    let shape = crate::shape::Shape::stages(&stages).unwrap();
    let u = users(shape, 245, 0, Depart::AtEnd);
    let s = 1_000_000_000u64;
    let mut total = 0;
    for sec in 0..9 {
        let want = match sec {
            0..=2 => 10.0,
            3..=6 => 50.0,
            _ => 7.5,
        };
        let got = u.arrivals_between(sec * s, (sec + 1) * s);
        assert!(
            (got as f64 - want).abs() <= 1.0,
            "second {sec}: {got} users, the shape says {want}"
        );
        total += got;
    }
    assert_eq!(total, 245, "every user arrives, exactly once");
    assert_eq!(u.arrival_ns(0), 0);
    assert_eq!(u.arrival_ns(30), 3 * s, "user 30 opens the second stage");
}

#[test]
fn departures_follow_the_hold_and_the_rate() {
    let u = users(
        crate::shape::Shape::constant(50.0),
        100,
        60,
        Depart::Rate(20.0),
    );
    let s = 1_000_000_000u64;
    let last = u.last_arrival_ns();
    assert_eq!(last, 1_980_000_000, "user 99 arrives at 99/50 s");
    assert_eq!(u.departure_ns(0), last + 60 * s);
    assert_eq!(u.departure_ns(20), last + 61 * s);
    assert_eq!(u.end_ns(), u.departure_ns(99));
    let at_end = users(crate::shape::Shape::constant(50.0), 100, 60, Depart::AtEnd);
    assert_eq!(at_end.departure_ns(0), at_end.departure_ns(99));
}

#[test]
fn a_connection_ramp_opens_and_closes_each_connection_at_its_level() {
    let s = ConnStages {
        points: vec![(0.0, 0.0), (1.0, 50.0), (2.0, 50.0), (3.0, 0.0)],
    };
    assert_eq!(s.peak(), 50);
    let ms = 1_000_000u64;
    // Connection g opens when the count reaches g + 1 and closes when it falls below.
    assert_eq!(s.open_ns(0), 20 * ms);
    assert_eq!(s.open_ns(24), 500 * ms);
    assert_eq!(s.open_ns(49), 1_000 * ms);
    assert_eq!(s.open_ns(50), u64::MAX, "never reached");
    assert_eq!(s.close_ns(49), 2_000 * ms);
    assert_eq!(s.close_ns(0), 2_980 * ms);
    assert_eq!(s.close_ns(24), 2_500 * ms);
    // At any time, the connections open are those the count says, within one.
    for t in (0..3000).step_by(7) {
        let t_ns = t * ms;
        let open = (0..50)
            .filter(|&g| s.open_ns(g) <= t_ns && t_ns < s.close_ns(g))
            .count() as f64;
        let want = s.count_at(t as f64 / 1e3).floor();
        assert!(
            (open - want).abs() <= 1.0,
            "at {t} ms: {open} open, planned {want}"
        );
    }
    let up_and_hold = ConnStages {
        points: vec![(0.0, 10.0)],
    };
    assert_eq!(up_and_hold.open_ns(9), 0);
    assert_eq!(up_and_hold.close_ns(9), u64::MAX);
}

#[test]
fn a_scenario_lead_in_is_its_longest_think_before_the_pacing() {
    const S: u64 = 1_000_000_000;
    let program = |ops: Vec<Op>| Program {
        leave_pc: ops.len() as u16,
        ops: ops.into(),
        ..Program::default()
    };
    // login, think 1s..5s, every 4s say: the last user's pacing begins 5 s after it arrived.
    let chat = program(vec![
        Op::Send(0),
        Op::Pause {
            min_ns: S,
            max_ns: 5 * S,
        },
        Op::Every {
            period_ns: 4 * S,
            times: u64::MAX,
            first: 3,
            end: 4,
        },
        Op::Send(1),
        Op::End,
    ]);
    assert_eq!(chat.lead_in_ns(), 5 * S);
    // A repeat block whose start is after a 2 s think; the think inside it is its pacing.
    let repeat = program(vec![
        Op::Pause {
            min_ns: 2 * S,
            max_ns: 2 * S,
        },
        Op::Send(0),
        Op::Pause {
            min_ns: S,
            max_ns: S,
        },
        Op::Loop {
            start: 1,
            times: u64::MAX,
            slot: 0,
        },
    ]);
    assert_eq!(repeat.lead_in_ns(), 2 * S);
    // Nothing repeats: no pacing to wait for.
    let once = program(vec![
        Op::Pause {
            min_ns: S,
            max_ns: S,
        },
        Op::Send(0),
        Op::End,
    ]);
    assert_eq!(once.lead_in_ns(), 0);
}

/// Idle memory per scenario user is a target (`bench/idle-mem.sh --transports users`): a
/// user's own state beside its connection (its place in the program is `Conn::pc`).
#[test]
fn a_users_own_state_stays_small() {
    let size = std::mem::size_of::<UserState>();
    eprintln!("UserState {size} B");
    assert!(size <= 184, "UserState is {size} bytes");
}
