//! The flag modes as a program: what a connection sends, in which order, paced how.
//!
//! [`compile`] turns today's flags into the [`Program`] of [`Op`]s scenario users run
//! (`users::compile` builds theirs from a scenario file): `--first-message` (and RESP3's
//! `HELLO 3`) is an [`Op::Opening`] awaited before the load, `--pipeline` and `--think` make a
//! closed loop ([`Op::Window`]), `--interval` and `--rate` an open loop on each connection's
//! schedule ([`Op::Schedule`]). One program per run, shared by its connections; a connection
//! keeps only its place in it (`Conn::pc`). The worker runs the flag ops in
//! `worker/conn_io.rs` and a scenario's in `worker/users.rs`.

use crate::plan::{Mode, Plan, Protocol};
use crate::users::{Op, Program};

/// The program today's flags describe: zero or more [`Op::Opening`], then one [`Op::Window`]
/// or [`Op::Schedule`] (the load op).
pub fn compile(plan: &Plan) -> Program {
    let mut ops = Vec::new();
    let opening = match &plan.protocol {
        // RESP3 is negotiated by `HELLO 3`, answered before any command.
        Protocol::Redis(r) => r.resp3,
        _ => plan.first_message.is_some(),
    };
    if opening {
        ops.push(Op::Opening(0));
    }
    // MQTT without --publish: connections that only subscribe, or only hold with their
    // keep-alive, send no load.
    let publishes_nothing = matches!(&plan.protocol, Protocol::Mqtt(m) if m.publish.is_none());
    ops.push(match plan.mode {
        _ if publishes_nothing => Op::Window {
            window: 0,
            think_ns: 0,
        },
        Mode::PingPong => Op::Window {
            window: plan.pipeline,
            think_ns: 0,
        },
        Mode::Think(d) => Op::Window {
            window: plan.pipeline,
            think_ns: d.as_nanos().min(u64::MAX as u128) as u64,
        },
        Mode::Interval(d) => Op::Schedule {
            period_ns: d.as_nanos() as f64,
        },
        Mode::Rate(r) => Op::Schedule {
            period_ns: plan.connections as f64 * 1e9 / r,
        },
    });
    Program {
        leave_pc: ops.len() as u16,
        ops: ops.into(),
        ..Program::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Template;
    use std::time::Duration;

    #[test]
    fn flags_compile_into_ops() {
        let mut p = crate::plan::tests::plan(10, Mode::PingPong);
        p.pipeline = 4;
        assert_eq!(
            &*compile(&p).ops,
            &[Op::Window {
                window: 4,
                think_ns: 0
            }]
        );
        p.mode = Mode::Think(Duration::from_millis(20));
        p.first_message = Some(Template::new(b"hello".to_vec()));
        let s = compile(&p);
        assert_eq!(
            &*s.ops,
            &[
                Op::Opening(0),
                Op::Window {
                    window: 4,
                    think_ns: 20_000_000
                }
            ]
        );
        assert_eq!(s.load_pc(), 1);
        assert_eq!(s.window(), Some((4, 20_000_000)));
        assert_eq!(s.schedule_period(), None);
        p.mode = Mode::Rate(1000.0);
        let s = compile(&p);
        assert!(s.schedule_period().is_some() && s.window().is_none());
        assert_eq!(s.step(1), &Op::Schedule { period_ns: 10e6 });
        assert_eq!(s.step(7), s.step(1), "past the end is the load op");
    }

    #[test]
    fn a_scenario_has_no_flag_load_op() {
        let p = Program {
            ops: vec![Op::Send(0), Op::End].into(),
            leave_pc: 2,
            ..Program::default()
        };
        assert_eq!((p.window(), p.schedule_period()), (None, None));
    }
}
