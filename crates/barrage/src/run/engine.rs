//! The engine's threads in this process as the source of a run.

use super::{Fed, Observer, Source, SourceEnd};
use barrage_engine::{End, Plan};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The engine, run in this process (one worker thread per share).
pub struct Engine;

impl Source for Engine {
    /// A common start (`--start-at`, a shard's) is said and counted down.
    fn start(
        &mut self,
        plan: &Plan,
        stop: &AtomicBool,
        quiet: bool,
    ) -> anyhow::Result<Option<Instant>> {
        let barrage_engine::Clock::At { unix_ns } = plan.clock else {
            return Ok(None);
        };
        crate::resolve::start_at::wait(unix_ns, stop, quiet);
        let ahead = unix_ns.saturating_sub(crate::resolve::start_at::now_ns());
        Ok(Some(Instant::now() + Duration::from_nanos(ahead)))
    }

    fn feed(
        self,
        plan: Plan,
        stop: Arc<AtomicBool>,
        obs: &mut Observer<'_>,
    ) -> anyhow::Result<Fed> {
        self.feed_observed(plan, stop, obs)
    }
}

impl Engine {
    /// [`Source::feed`] into any observer (a find-max step taps the run's).
    pub fn feed_observed(
        self,
        plan: Plan,
        stop: Arc<AtomicBool>,
        obs: &mut dyn barrage_engine::Observer,
    ) -> anyhow::Result<Fed> {
        let script = plan.script.as_ref().map(|s| s.hook.clone());
        let out = barrage_engine::run_observed(plan, stop, obs)?;
        // A script's first error, said with the ending (a dashboard may have hidden the line
        // written when it happened).
        let note = script
            .and_then(|h| h.first_error())
            .map(|e| format!("the first script error: {e}"));
        Ok(Fed {
            end: match out.end {
                End::Completed => SourceEnd::Completed,
                End::Interrupted => SourceEnd::Interrupted,
                End::Unreachable(why) => SourceEnd::Unreachable(why),
            },
            outcome: out.outcome,
            recorded: None,
            note,
        })
    }
}
