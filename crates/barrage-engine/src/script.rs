//! A connection's script: what it sends, in which order, paced how.
//!
//! Today's flags are a fixed script that [`Script::compile`] builds from the plan:
//! `--first-message` is an opening request awaited before the load, `--pipeline` and
//! `--think` make a closed loop with a window and a pause, `--interval` and `--rate` an open
//! loop on each connection's schedule. The worker interprets the steps; the scenario files of
//! the next issue compile into the same steps.

use crate::plan::{Mode, Plan, Protocol};
use crate::session::Msg;

#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Send this message and await its reply before the next step (run each time the
    /// connection opens, before the load: a login).
    Request(Msg),
    /// Closed loop: keep `window` load requests in flight; a reply frees its slot, which is
    /// used again after `think_ns`. Runs until the load ends.
    Loop { window: u32, think_ns: u64 },
    /// Open loop: send a load request at every tick of the connection's schedule (spread
    /// over all connections, see [`Plan::schedule`]), whatever the replies do.
    Every { period_ns: f64 },
}

/// The steps of one connection: zero or more [`Step::Request`], then one `Loop` or `Every`.
#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    steps: Box<[Step]>,
}

impl Script {
    /// The script today's flags describe.
    pub fn compile(plan: &Plan) -> Self {
        let mut steps = Vec::new();
        let opening = match &plan.protocol {
            // RESP3 is negotiated by `HELLO 3`, answered before any command.
            Protocol::Redis(r) => r.resp3,
            _ => plan.first_message.is_some(),
        };
        if opening {
            steps.push(Step::Request(Msg::Opening(0)));
        }
        steps.push(match plan.mode {
            Mode::PingPong => Step::Loop {
                window: plan.pipeline,
                think_ns: 0,
            },
            Mode::Think(d) => Step::Loop {
                window: plan.pipeline,
                think_ns: d.as_nanos().min(u64::MAX as u128) as u64,
            },
            Mode::Interval(d) => Step::Every {
                period_ns: d.as_nanos() as f64,
            },
            Mode::Rate(r) => Step::Every {
                period_ns: plan.connections as f64 * 1e9 / r,
            },
        });
        Self {
            steps: steps.into(),
        }
    }

    /// Step `pc`.
    #[inline]
    pub fn step(&self, pc: u16) -> &Step {
        &self.steps[(pc as usize).min(self.steps.len() - 1)]
    }

    /// The index of the load step (the last one): the opening is the steps before it.
    #[inline]
    pub fn load_pc(&self) -> u16 {
        (self.steps.len() - 1) as u16
    }

    /// The closed-loop window and think time, if the load is a closed loop.
    #[inline]
    pub fn window(&self) -> Option<(u32, u64)> {
        match self.steps[self.steps.len() - 1] {
            Step::Loop { window, think_ns } => Some((window, think_ns)),
            _ => None,
        }
    }

    pub fn is_open_loop(&self) -> bool {
        matches!(self.steps[self.steps.len() - 1], Step::Every { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Template;
    use std::time::Duration;

    #[test]
    fn flags_compile_into_steps() {
        let mut p = crate::plan::tests::plan(10, Mode::PingPong);
        p.pipeline = 4;
        assert_eq!(
            &*Script::compile(&p).steps,
            &[Step::Loop {
                window: 4,
                think_ns: 0
            }]
        );
        p.mode = Mode::Think(Duration::from_millis(20));
        p.first_message = Some(Template::new(b"hello".to_vec()));
        let s = Script::compile(&p);
        assert_eq!(
            &*s.steps,
            &[
                Step::Request(Msg::Opening(0)),
                Step::Loop {
                    window: 4,
                    think_ns: 20_000_000
                }
            ]
        );
        assert_eq!(s.load_pc(), 1);
        assert_eq!(s.window(), Some((4, 20_000_000)));
        p.mode = Mode::Rate(1000.0);
        let s = Script::compile(&p);
        assert!(s.is_open_loop() && s.window().is_none());
        assert_eq!(s.step(1), &Step::Every { period_ns: 10e6 });
        assert_eq!(s.step(7), s.step(1), "past the end is the load step");
    }
}
