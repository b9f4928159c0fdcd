//! Running a plan: spawn one worker per share, merge their deltas, decide how the run ended.
//!
//! The coordinator is the calling thread. It never touches sockets: it receives deltas over a
//! channel, merges them in the aggregator (ticks come out in order), reports each tick to the
//! caller's callback (the live view), watches the stop flag and wakes the workers when it is
//! set, and stops the run early when the target cannot be reached at all.

use crate::clock::{mono_ns, TimeSource};
use crate::plan::{Plan, Protocol, Share};
use crate::session::Session;
use crate::spec::Clock;
use crate::stop::hurried;
pub use crate::stop::hurry;
use crate::worker::{Worker, WorkerEvent};
use barrage_metrics::{Aggregator, Delta, Outcome, Tick};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot start worker {0}: {1}")]
    Setup(usize, std::io::Error),
    #[error("worker failed: {0}")]
    Worker(String),
}

/// How the run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    Completed,
    /// The stop flag was set (a signal): figures cover the time until then.
    Interrupted,
    /// The target could not be reached: nothing ever got through (connected, handshaken
    /// and its opening answered).
    Unreachable(String),
}

pub struct RunOutput {
    pub outcome: Outcome,
    pub end: End,
}

/// What sees the run as it goes: every tick of the time series as it becomes final, and (when
/// it asks) each second's merged delta just before its tick: the run's durable stream.
pub trait Observer {
    fn tick(&mut self, tick: &Tick, agg: &Aggregator);
    fn wants_segments(&self) -> bool {
        false
    }
    fn segment(&mut self, _merged: &Delta) {}
}

/// Hands what just became final to `obs`: the kept segments (each second's merged delta),
/// then the ticks, in order. The one way ticks reach an observer, in this process's
/// coordinator and in a parent following its children's seconds.
pub fn observe<O: Observer + ?Sized>(agg: &mut Aggregator, ticks: Vec<Tick>, obs: &mut O) {
    for seg in agg.take_segments() {
        obs.segment(&seg);
    }
    for t in ticks {
        obs.tick(&t, agg);
    }
}

impl<F: FnMut(&Tick, &Aggregator)> Observer for F {
    fn tick(&mut self, tick: &Tick, agg: &Aggregator) {
        self(tick, agg)
    }
}

/// Execute `plan` with its protocol's session. `stop` may be set from another thread (e.g. a
/// signal handler) to end the load early; `on_tick` sees every tick of the time series as it
/// becomes final.
pub fn run(
    plan: Plan,
    stop: Arc<AtomicBool>,
    mut on_tick: impl FnMut(&Tick, &Aggregator),
) -> Result<RunOutput, EngineError> {
    run_observed(plan, stop, &mut on_tick)
}

/// [`run`] with an [`Observer`].
pub fn run_observed(
    plan: Plan,
    stop: Arc<AtomicBool>,
    obs: &mut dyn Observer,
) -> Result<RunOutput, EngineError> {
    let spawn = spawn_for(&plan.protocol);
    coordinate(plan, stop, obs, spawn, None)
}

/// [`run`] on virtual time: every worker reads `now` (nanoseconds since the run's start) and
/// moves it to its next deadline when it is idle (see the worker's module docs). For tests
/// that count backoff, timeouts, reconnects and drain exactly: use one thread.
pub fn run_virtual(
    plan: Plan,
    stop: Arc<AtomicBool>,
    now: Arc<std::sync::atomic::AtomicU64>,
    mut on_tick: impl FnMut(&Tick, &Aggregator),
) -> Result<RunOutput, EngineError> {
    let spawn = spawn_for(&plan.protocol);
    coordinate(plan, stop, &mut on_tick, spawn, Some(now))
}

/// Execute `plan` with the session `S`, whatever `plan.protocol` says: a protocol defined
/// outside this crate (it reads what it needs from the plan in [`Session::config`]).
pub fn run_session<S: Session>(
    plan: Plan,
    stop: Arc<AtomicBool>,
    mut on_tick: impl FnMut(&Tick, &Aggregator),
) -> Result<RunOutput, EngineError> {
    coordinate(plan, stop, &mut on_tick, spawn::<S>, None)
}

/// The worker of the plan's protocol.
fn spawn_for(protocol: &Protocol) -> Spawn {
    struct Spawner;
    impl crate::protocols::WithSession for Spawner {
        type Out = Spawn;
        fn with<S: Session>(self) -> Spawn {
            spawn::<S>
        }
    }
    crate::protocols::with_session(protocol, Spawner)
}

/// Starts one worker thread.
type Spawn = fn(Parts) -> std::io::Result<(std::thread::JoinHandle<()>, Arc<mio::Waker>)>;

fn coordinate(
    plan: Plan,
    stop: Arc<AtomicBool>,
    obs: &mut dyn Observer,
    spawn: Spawn,
    virtual_now: Option<Arc<std::sync::atomic::AtomicU64>>,
) -> Result<RunOutput, EngineError> {
    let plan = Arc::new(plan);
    let shares = plan.my_shares();
    let connections: u64 = shares.iter().map(|s| s.connections).sum();
    let mut agg = Aggregator::new(plan.timeline(), shares.len());
    if obs.wants_segments() {
        agg.keep_segments();
    }
    if shares.is_empty() {
        // A split run with more shares than connections leaves some processes nothing.
        let outcome = agg.finish(0, plan.latency_basis());
        return Ok(RunOutput {
            outcome,
            end: End::Completed,
        });
    }
    let (tx, rx) = mpsc::channel();
    let halt = Arc::new(AtomicBool::new(false));
    let Some((base, wall_us)) = time_zero(plan.clock, &stop) else {
        let outcome = agg.finish(connections, plan.latency_basis());
        return Ok(RunOutput {
            outcome,
            end: End::Interrupted,
        });
    };
    let time = match virtual_now {
        Some(now) => TimeSource::Virtual(now),
        None => TimeSource::Real { base_ns: base },
    };
    let mut wakers = Vec::new();
    let mut handles = Vec::new();
    for (slot, share) in shares.into_iter().enumerate() {
        let index = share.index;
        let parts = Parts {
            plan: Arc::clone(&plan),
            share,
            slot,
            time: time.clone(),
            wall_us,
            halt: Arc::clone(&halt),
            tx: tx.clone(),
        };
        let (h, waker) = spawn(parts).map_err(|e| EngineError::Setup(index, e))?;
        wakers.push(waker);
        handles.push(h);
    }
    drop(tx);

    let mut end = End::Completed;
    let mut connected = false;
    let mut halted = false;
    let mut hurrying = false;
    while !agg.complete() {
        if !halted && stop.load(Ordering::Relaxed) {
            end = End::Interrupted;
            halted = true;
        }
        if !hurrying && hurried() {
            // Workers draining sleep until a reply or their deadline: wake them to see it.
            hurrying = true;
            for w in &wakers {
                let _ = w.wake();
            }
        }
        if halted && !halt.swap(true, Ordering::Relaxed) {
            for w in &wakers {
                let _ = w.wake();
            }
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(WorkerEvent::Delta(d)) => {
                let ticks = agg.push(*d);
                observe(&mut agg, ticks, obs);
            }
            Ok(WorkerEvent::Connected) => connected = true,
            Ok(WorkerEvent::Unreachable { detail, .. }) => {
                if !connected && !halted {
                    end = End::Unreachable(detail);
                    halted = true;
                }
            }
            Ok(WorkerEvent::Misdirected { detail }) => {
                if !halted {
                    end = End::Unreachable(detail);
                    halted = true;
                }
            }
            Ok(WorkerEvent::Failed(msg)) => {
                halt.store(true, Ordering::Relaxed);
                for w in &wakers {
                    let _ = w.wake();
                }
                for h in handles {
                    let _ = h.join();
                }
                return Err(EngineError::Worker(msg));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    for h in handles {
        if h.join().is_err() {
            return Err(EngineError::Worker("a worker thread panicked".into()));
        }
    }
    let outcome = agg.finish(connections, plan.latency_basis());
    Ok(RunOutput { outcome, end })
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Time zero of the run on the monotonic clock, and as wall-clock µs. For [`Clock::At`] this
/// waits for the instant (`None` if `stop` is set meanwhile); a process that starts after it
/// takes the instant as its time zero all the same, so the timelines of all processes agree.
fn time_zero(clock: Clock, stop: &AtomicBool) -> Option<(u64, u64)> {
    match clock {
        Clock::Now => Some((mono_ns(), unix_ns() / 1000)),
        Clock::At { unix_ns: at } => loop {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            let (mono, wall) = (mono_ns(), unix_ns());
            if wall >= at {
                return Some((mono.saturating_sub(wall - at), at / 1000));
            }
            std::thread::sleep(Duration::from_nanos(at - wall).min(Duration::from_millis(20)));
        },
    }
}

/// What one worker thread starts from.
struct Parts {
    plan: Arc<Plan>,
    share: Share,
    slot: usize,
    time: TimeSource,
    wall_us: u64,
    halt: Arc<AtomicBool>,
    tx: mpsc::Sender<WorkerEvent>,
}

/// Start a worker for protocol `S` on its own thread.
fn spawn<S: Session>(p: Parts) -> std::io::Result<(std::thread::JoinHandle<()>, Arc<mio::Waker>)> {
    let index = p.share.index;
    let (w, waker) = Worker::<S>::new(p.plan, p.share, p.slot, p.time, p.wall_us, p.halt, p.tx)?;
    let h = std::thread::Builder::new()
        .name(format!("barrage-w{index}"))
        .spawn(move || w.run())?;
    Ok((h, waker))
}
