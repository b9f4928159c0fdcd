//! The script hook: what a run asks of a user's script (`--script FILE`), without knowing the
//! language it is written in.
//!
//! The engine calls a [`Hook`] on its worker threads; the implementation (Lua, in the
//! `barrage-script` crate) keeps one interpreter state per worker thread, so no call takes a
//! lock shared between workers, and a connection's state in the script is found by the
//! connection's number. A run without a script carries no hook and pays nothing for it.
//!
//! The functions, each optional:
//! - `init(conn)`: a connection is up; what it returns (if anything) is sent first, and its
//!   reply awaited (judged by `response`) before the load: a login.
//! - `request(conn, seq)`: the bytes of load request `seq` on this connection.
//! - `frame(buf)`: the length of the next whole reply at the start of `buf`, or nothing yet.
//! - `response(conn, reply)`: whether a reply is right: nothing or `true` (it is), `false` (a
//!   `mismatch`), or the name of an error class (`reply_error`, ...).
//!
//! A script error (a function raised one, returned what it may not, or ran out of its
//! instruction budget) is a [`HookError`]: `script.error`, with a message naming the file,
//! line and function.
//!
//! A call cannot keep a worker from the run's end: each worker thread sets its [`Watch`] (the
//! run's stop flag, its clock and the time its part of the run ends), and an implementation
//! asks [`ending`] as it counts a call's instructions: a call running when the run ends is
//! cut short (as `script.error`), so `-d`, SIGTERM and the first SIGINT end a run whose
//! script loops.

use crate::clock::TimeSource;
use barrage_metrics::ErrorClass;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The functions a script defines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HookFns {
    pub init: bool,
    pub request: bool,
    pub frame: bool,
    pub response: bool,
}

/// A script's error: the message names the file, line and function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookError(pub String);

impl std::fmt::Display for HookError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What `frame` said of the bytes received so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    /// No whole reply yet: more bytes are needed.
    More,
    /// The next reply is this many bytes long (it may not all be here yet).
    Len(usize),
}

/// A script, as the engine calls it. Called only on worker threads; an implementation keeps
/// its interpreter state per thread.
pub trait Hook: Send + Sync + 'static {
    /// The script's file name, as the user gave it.
    fn name(&self) -> &str;
    fn fns(&self) -> HookFns;
    /// Connection `conn` is up (`conn`'s state in the script starts empty): append what
    /// `init` returns to `out`. Returns whether it wrote anything (a reply is then awaited).
    fn init(&self, conn: u64, out: &mut Vec<u8>) -> Result<bool, HookError>;
    /// Append the bytes of request `seq` of connection `conn` to `out`.
    fn request(&self, conn: u64, seq: u64, out: &mut Vec<u8>) -> Result<(), HookError>;
    /// The length of the next whole reply at the start of `buf`.
    fn frame(&self, conn: u64, buf: &[u8]) -> Result<Frame, HookError>;
    /// Judge a whole reply: `None` when it is right, else the class it fails with.
    fn response(&self, conn: u64, reply: &[u8]) -> Result<Option<ErrorClass>, HookError>;
    /// Connection `conn` is gone: forget its state in the script.
    fn close(&self, conn: u64);
    /// The first script error of the run (file, line, function and what), if any: said with
    /// the run's ending, where a terminal dashboard cannot hide it.
    fn first_error(&self) -> Option<String> {
        None
    }
    /// Whether the script defines a global function `name` (a scenario's `call`, `check`).
    fn defines(&self, name: &str) -> bool;
    /// A scenario's `call`: append what function `func` makes of `text` (a step's `send`
    /// rendered) on connection `conn`.
    fn call(&self, func: &str, conn: u64, text: &[u8], out: &mut Vec<u8>) -> Result<(), HookError>;
    /// A scenario's `check`: what function `func` says of `reply`.
    fn check(&self, func: &str, conn: u64, reply: &[u8]) -> Result<Check, HookError>;
}

/// What a step's `check` said of a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// It is the step's reply, and right.
    Right,
    /// It is not the step's reply (a push): the step waits on.
    NotThis,
    /// It is the step's reply, failed with this class.
    Fail(ErrorClass),
}

/// A run's script, shared by its workers.
#[derive(Clone)]
pub struct HookRef(pub Arc<dyn Hook>);

impl std::fmt::Debug for HookRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hook({})", self.0.name())
    }
}

impl std::ops::Deref for HookRef {
    type Target = dyn Hook;
    fn deref(&self) -> &dyn Hook {
        &*self.0
    }
}

/// What a worker thread's calls of the script watch for: the end of the run they are part of.
pub struct Watch {
    /// The run's stop flag (a signal, or the coordinator stopping the run): heeded while the
    /// load runs (`load`); a drain, once begun, ends by its time or a second signal.
    pub stop: Arc<AtomicBool>,
    /// The worker's clock, and when (on it, in ns) its part of the run ends: the load's end
    /// (`-d`) while it runs, then the drain's end. `u64::MAX`: no time set.
    pub time: TimeSource,
    pub until: u64,
    pub load: bool,
}

thread_local! {
    static WATCH: RefCell<Option<Watch>> = const { RefCell::new(None) };
}

/// Set (or with `None` clear) this thread's watch: a worker, as it starts and ends.
pub fn watch(w: Option<Watch>) {
    WATCH.with(|c| *c.borrow_mut() = w);
}

/// The worker's part of the run moved on: now it ends at `until` (ns on its clock), and the
/// stop flag is heeded only while the load runs (`load`).
pub fn rewatch(until: u64, load: bool) {
    WATCH.with(|c| {
        if let Some(w) = c.borrow_mut().as_mut() {
            w.until = until;
            w.load = load;
        }
    });
}

/// Why a call of the script running now on this thread must stop (the run is ending), or
/// `None`: read by the hook's instruction counter (every thousand instructions or so, so it
/// reads atomics and a clock, and allocates nothing). A thread without a watch (the check
/// before the run, `barrage validate`) is never told to stop.
pub fn ending() -> Option<&'static str> {
    WATCH.with(|c| {
        let c = c.borrow();
        let w = c.as_ref()?;
        if crate::stop::hurried() {
            return Some("the run was stopped at once (a second signal)");
        }
        if w.load && w.stop.load(Ordering::Relaxed) {
            return Some("the run is stopping");
        }
        if w.until != u64::MAX && w.time.now() >= w.until {
            return Some(if w.load {
                "the run's duration (-d) is over"
            } else {
                "the drain's time is over"
            });
        }
        None
    })
}
