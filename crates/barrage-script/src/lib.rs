//! barrage-script: a user's Lua script behind the engine's hook ([`barrage_engine::hook`]).
//!
//! [`Script::load`] compiles and runs the file once, at the start, on the calling thread: a
//! syntax error, a top-level error, a function name that is not a function or a script with
//! none of the hook's functions is one line naming the file (and line). Each worker thread
//! then keeps its own interpreter, made on its first call (the file's top level runs once per
//! worker: its globals are that worker's), so no call takes a lock shared between workers.
//! A connection's state is a Lua table (`conn`, with `conn.id` its number), made empty when
//! the connection opens and dropped when it closes.
//!
//! Every call runs under an instruction budget (`--script-budget`, counted in steps of
//! [`STEP`] instructions, at most [`MAX_BUDGET`]) and the interpreter under a memory limit
//! ([`MEMORY_LIMIT`]): a script that loops forever or allocates without end fails that call as
//! `script.error`, and the run goes on. A call still running when the run ends (`-d`, a
//! signal: [`barrage_engine::hook::ending`]) is stopped the same way, once it has run
//! [`GRACE`] instructions, so a loop cannot keep a worker from the run's end. The first error
//! a run's script raises is written to stderr, whole, with the file, line and function; the
//! others are counted.
//!
//! Lua 5.4 (as `mlua` builds it from source): `string.pack`/`string.unpack` read and write
//! binary fields. By default ([`Libs::Safe`]) a script gets what cannot reach outside the run:
//! the base functions (not `dofile`, `loadfile`, nor `load` of binary chunks), `string`,
//! `table`, `math`, `utf8`, `coroutine` and `os` but for `execute`, `remove`, `rename`,
//! `tmpname`, `setlocale` and `exit`; no `io`, `package`/`require` or `debug`. Those left out
//! raise an error naming themselves. [`Libs::All`] (`--script-unsafe`) loads the standard
//! libraries but `debug` (no C modules). `os.exit` raises an error either way: it would end
//! barrage without its results.

use barrage_engine::hook::{Check, Frame, Hook, HookError, HookFns};
use barrage_metrics::ErrorClass;
use mlua::{Function, HookTriggers, Lua, LuaOptions, StdLib, Table, Value, VmState};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The instruction budget is counted in steps of this many instructions (the hook that
/// counts runs once per step, so a call may run up to a step past its budget).
pub const STEP: u32 = 1000;

/// What one worker's interpreter may allocate.
pub const MEMORY_LIMIT: usize = 256 << 20;

/// The default budget of one call, in instructions.
pub const DEFAULT_BUDGET: u64 = 1_000_000;

/// The largest budget a call may have (`--script-budget`): a loop's call then ends by itself
/// within a second or so even when nothing else stops it.
pub const MAX_BUDGET: u64 = 100_000_000;

/// The instructions a call may still run once the run is ending before it is stopped: a call
/// that would have returned soon (within the default budget) does, and is not an error.
pub const GRACE: u64 = DEFAULT_BUDGET;

/// The standard libraries a script gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Libs {
    /// Those that cannot reach outside the run (see the crate's docs).
    #[default]
    Safe,
    /// All of them but `debug` (`--script-unsafe`): `io`, `os`, `package`; still no C modules,
    /// and `os.exit` still raises an error.
    All,
}

const NAMES: [&str; 4] = ["init", "request", "frame", "response"];

/// Run before the script: `pcall`, `xpcall` and `coroutine.resume` raise the budget's error
/// (or the run's end) again when the call they protected ran out of it (was stopped).
const GUARD: &str = r#"
local over = ...
local function check(...)
  local why = over()
  if why then error(why, 2) end
  return ...
end
local pcall, xpcall, resume = pcall, xpcall, coroutine.resume
_G.pcall = function(...) return check(pcall(...)) end
_G.xpcall = function(...) return check(xpcall(...)) end
coroutine.resume = function(...) return check(resume(...)) end
"#;

/// Run before the script, after [`GUARD`]: what a script may not reach raises an error naming
/// itself, at the line that called it; `os.exit` with any libraries.
const FENCE: &str = r#"
local all = ...
local function refuse(name, why)
  return function() error(name .. " " .. why, 2) end
end
os.exit = refuse("os.exit", "would end barrage without its results: a script cannot end "
  .. "the run (raise an error, or have response() return an error class)")
if all then return end
local out = "is not available to scripts: it reaches outside the run (--script-unsafe "
  .. "loads the full standard libraries)"
for _, k in ipairs({"execute", "remove", "rename", "tmpname", "setlocale"}) do
  os[k] = refuse("os." .. k, out)
end
dofile, loadfile, require = refuse("dofile", out), refuse("loadfile", out), refuse("require", out)
io = setmetatable({}, {__index = function(_, k) error("io." .. tostring(k) .. " " .. out, 2) end})
local load = load
_G.load = function(chunk, name, mode, ...)
  if mode ~= nil and mode ~= "t" then
    error("load: binary chunks are not available to scripts (mode \"t\" only)", 2)
  end
  return load(chunk, name, "t", ...)
end
"#;

fn over_budget(budget: u64) -> String {
    format!("ran out of its instruction budget ({budget} instructions; --script-budget)")
}

fn stopped(why: &str) -> String {
    format!("stopped: {why} and this call was still running")
}

/// A compiled script: its file name, text and budget; the interpreters are per thread.
pub struct Script {
    file: String,
    text: Arc<str>,
    budget: u64,
    libs: Libs,
    fns: HookFns,
    id: u64,
    told: AtomicBool,
    /// The first error, kept for the run's ending.
    first: std::sync::Mutex<Option<String>>,
    /// What one interpreter may allocate ([`MEMORY_LIMIT`]; less in tests).
    memory: usize,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Script({})", self.file)
    }
}

static IDS: AtomicU64 = AtomicU64::new(1);

/// One thread's interpreter of one script.
struct State {
    id: u64,
    lua: Lua,
    conns: Table,
    f: [Option<Function>; 4],
    calls: Rc<Calls>,
}

/// What the instruction counter keeps: of the call running now, and of the calls before it.
#[derive(Default)]
struct Calls {
    /// Budget steps the call running now used.
    steps: Cell<u64>,
    /// Why the call running now was stopped (the run is ending), if it was.
    cut: Cell<Option<&'static str>>,
    /// A call of this interpreter was stopped: the next ones have no grace.
    was_cut: Cell<bool>,
}

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
}

impl Script {
    /// Compile `text` (the file `file`) with a budget of `budget` instructions per call and
    /// the libraries `libs`: run its top level once, and see which functions it defines.
    pub fn load(file: &str, text: &str, budget: u64, libs: Libs) -> Result<Script, String> {
        if budget == 0 {
            return Err(
                "--script-budget: 0 instructions lets no script run; give at least 1000".into(),
            );
        }
        if budget > MAX_BUDGET {
            return Err(over_cap(budget));
        }
        let mut s = Script {
            file: file.to_string(),
            text: Arc::from(text),
            budget,
            libs,
            fns: HookFns::default(),
            id: IDS.fetch_add(1, Ordering::Relaxed),
            told: AtomicBool::new(false),
            first: std::sync::Mutex::new(None),
            memory: MEMORY_LIMIT,
        };
        let st = s
            .state()
            .map_err(|e| s.describe("the file's top level", &e))?;
        let [init, request, frame, response] = st.f.each_ref().map(Option::is_some);
        s.fns = HookFns {
            init,
            request,
            frame,
            response,
        };
        Ok(s)
    }

    /// A new interpreter with the script loaded.
    fn state(&self) -> Result<State, mlua::Error> {
        let lua = match self.libs {
            Libs::All => Lua::new(),
            Libs::Safe => Lua::new_with(
                StdLib::COROUTINE
                    | StdLib::TABLE
                    | StdLib::STRING
                    | StdLib::UTF8
                    | StdLib::MATH
                    | StdLib::OS,
                LuaOptions::default(),
            )?,
        };
        lua.set_memory_limit(self.memory)?;
        let calls = Rc::new(Calls::default());
        let limit = self.budget.div_ceil(u64::from(STEP));
        let grace = GRACE / u64::from(STEP);
        let (counted, budget) = (Rc::clone(&calls), self.budget);
        // A global hook: coroutines the script makes count against the budget too.
        lua.set_global_hook(
            HookTriggers::new().every_nth_instruction(STEP),
            move |_, debug| {
                let c = &counted;
                c.steps.set(c.steps.get() + 1);
                let why = if c.steps.get() > limit {
                    over_budget(budget)
                } else if let Some(why) = c.cut.get() {
                    stopped(why)
                } else if c.steps.get() < grace && !c.was_cut.get() {
                    return Ok(VmState::Continue);
                } else if let Some(why) = barrage_engine::hook::ending() {
                    c.cut.set(Some(why));
                    c.was_cut.set(true);
                    stopped(why)
                } else {
                    return Ok(VmState::Continue);
                };
                let line = debug
                    .current_line()
                    .map_or(String::new(), |l| format!("{l}: "));
                Err(mlua::Error::RuntimeError(format!("@{line}{why}")))
            },
        )?;
        // A call out of budget (or stopped) cannot be caught: the functions that catch errors
        // raise it again once they return (a `pcall` in a loop would otherwise run on for ever).
        let spent = Rc::clone(&calls);
        let over = lua.create_function(move |_, ()| {
            Ok(if spent.steps.get() > limit {
                Some(over_budget(budget))
            } else {
                spent.cut.get().map(stopped)
            })
        })?;
        lua.load(GUARD).set_name("=barrage").call::<()>(over)?;
        lua.load(FENCE)
            .set_name("=barrage")
            .call::<()>(self.libs == Libs::All)?;
        lua.load(&*self.text)
            .set_name(format!("@{}", self.file))
            .exec()?;
        let globals = lua.globals();
        let mut f: [Option<Function>; 4] = Default::default();
        for (slot, name) in f.iter_mut().zip(NAMES) {
            match globals.raw_get::<Value>(name)? {
                Value::Nil => {}
                Value::Function(g) => *slot = Some(g),
                other => {
                    return Err(mlua::Error::RuntimeError(format!(
                        "{name} is {}, not a function",
                        a(other.type_name())
                    )))
                }
            }
        }
        let conns = lua.create_table()?;
        Ok(State {
            id: self.id,
            lua,
            conns,
            f,
            calls,
        })
    }

    /// Run `call` with this thread's interpreter (made on the first call), the budget reset.
    fn with<R>(
        &self,
        func: &str,
        call: impl FnOnce(&State) -> mlua::Result<R>,
    ) -> Result<R, HookError> {
        STATE.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.as_ref().is_none_or(|s| s.id != self.id) {
                *slot = Some(
                    self.state()
                        .map_err(|e| self.fail("the file's top level", &e))?,
                );
            }
            let st = slot.as_ref().expect("made above");
            st.calls.steps.set(0);
            st.calls.cut.set(None);
            call(st).map_err(|e| self.fail(func, &e))
        })
    }

    /// An error of `func`: described, and the run's first one written to stderr.
    fn fail(&self, func: &str, e: &mlua::Error) -> HookError {
        let msg = self.describe(func, e);
        if !self.told.swap(true, Ordering::Relaxed) {
            eprintln!(
                "barrage: script error (each counts as script.error; the first is shown): {msg}"
            );
            if let Ok(mut f) = self.first.lock() {
                *f = Some(msg.clone());
            }
        }
        HookError(msg)
    }

    /// `FILE:LINE: FUNC: what`, from Lua's `FILE:LINE: what` (the first line of it).
    fn describe(&self, func: &str, e: &mlua::Error) -> String {
        let raw = innermost(e);
        let first = raw.lines().next().unwrap_or("").trim();
        let func = match func {
            "the file's top level" => func.to_string(),
            f => format!("{f}()"),
        };
        // The budget's hook writes `@LINE: what` (it knows the line, not the file).
        if let Some(rest) = first.strip_prefix('@') {
            return match rest.split_once(": ") {
                Some((line, what)) if line.parse::<u32>().is_ok() => {
                    format!("{}:{line}: {func}: {what}", self.file)
                }
                _ => format!("{}: {func}: {rest}", self.file),
            };
        }
        let at = format!("{}:", self.file);
        if let Some(rest) = first.strip_prefix(&at) {
            if let Some((line, what)) = rest.split_once(": ") {
                if line.parse::<u32>().is_ok() {
                    return format!("{}:{line}: {func}: {what}", self.file);
                }
            }
        }
        format!("{}: {func}: {first}", self.file)
    }

    fn conn(st: &State, conn: u64) -> mlua::Result<Table> {
        match st.conns.raw_get::<Option<Table>>(conn as i64)? {
            Some(t) => Ok(t),
            None => {
                let t = st.lua.create_table()?;
                t.raw_set("id", conn as i64)?;
                st.conns.raw_set(conn as i64, &t)?;
                Ok(t)
            }
        }
    }
}

/// `--script-budget` over [`MAX_BUDGET`]: what the flag says, in one line.
pub fn over_cap(budget: u64) -> String {
    format!("--script-budget: {budget} is over the cap of {MAX_BUDGET} instructions per call")
}

/// Function `i` of [`NAMES`] in this thread's interpreter (a top level that defines other
/// functions in another run of it is an error, not a panic).
fn defined(st: &State, i: usize) -> mlua::Result<&Function> {
    st.f[i].as_ref().ok_or_else(|| {
        mlua::Error::RuntimeError(format!(
            "is not defined in this worker's run of the file (its top level defined it once \
             and not again): define {} unconditionally",
            NAMES[i]
        ))
    })
}

/// The message of the error at the bottom of a chain of callbacks.
fn innermost(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => innermost(cause),
        mlua::Error::WithContext { cause, .. } => innermost(cause),
        mlua::Error::RuntimeError(m) | mlua::Error::MemoryError(m) => m.clone(),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

fn bad_return(func: &str, want: &str, got: &Value) -> mlua::Error {
    mlua::Error::RuntimeError(format!(
        "returned {}: {func} returns {want}",
        a(got.type_name())
    ))
}

/// What a function that judges a reply returned.
enum Verdict {
    Right,
    False,
    Class(ErrorClass),
}

/// Nothing or `true`: right; `false`; or an error class's name.
fn verdict(func: &str, v: Value) -> mlua::Result<Verdict> {
    match v {
        Value::Nil | Value::Boolean(true) => Ok(Verdict::Right),
        Value::Boolean(false) => Ok(Verdict::False),
        Value::String(s) => {
            let name = s.to_string_lossy();
            match ErrorClass::from_name(&name) {
                Some(c) if c != ErrorClass::NotSent => Ok(Verdict::Class(c)),
                _ => Err(mlua::Error::RuntimeError(format!(
                    "returned \"{name}\", which is not an error class (e.g. \"mismatch\", \
                     \"reply_error\", \"protocol\"; see docs/result-schema.md)"
                ))),
            }
        }
        other => Err(bad_return(
            func,
            "nothing or true (a right reply), false, or an error class's name",
            &other,
        )),
    }
}

/// A Lua type's name with its article.
fn a(type_name: &str) -> String {
    match type_name.as_bytes().first() {
        Some(b'a' | b'e' | b'i' | b'o' | b'u') => format!("an {type_name}"),
        _ => format!("a {type_name}"),
    }
}

impl Hook for Script {
    fn name(&self) -> &str {
        &self.file
    }

    fn fns(&self) -> HookFns {
        self.fns
    }

    fn init(&self, conn: u64, out: &mut Vec<u8>) -> Result<bool, HookError> {
        self.with("init", |st| {
            let t = st.lua.create_table()?;
            t.raw_set("id", conn as i64)?;
            st.conns.raw_set(conn as i64, &t)?;
            let Some(f) = &st.f[0] else { return Ok(false) };
            match f.call::<Value>(t)? {
                Value::Nil => Ok(false),
                Value::String(s) => {
                    out.extend_from_slice(&s.as_bytes());
                    Ok(!s.as_bytes().is_empty())
                }
                other => Err(bad_return(
                    "init",
                    "the login's bytes as a string, or nothing",
                    &other,
                )),
            }
        })
    }

    fn request(&self, conn: u64, seq: u64, out: &mut Vec<u8>) -> Result<(), HookError> {
        self.with("request", |st| {
            let f = defined(st, 1)?;
            match f.call::<Value>((Self::conn(st, conn)?, seq as i64))? {
                Value::String(s) => {
                    out.extend_from_slice(&s.as_bytes());
                    Ok(())
                }
                other => Err(bad_return(
                    "request",
                    "the request's bytes as a string",
                    &other,
                )),
            }
        })
    }

    fn frame(&self, conn: u64, buf: &[u8]) -> Result<Frame, HookError> {
        self.with("frame", |st| {
            let f = defined(st, 2)?;
            let b = st.lua.create_string(buf)?;
            match f.call::<Value>((b, Self::conn(st, conn)?))? {
                Value::Nil | Value::Boolean(false) => Ok(Frame::More),
                Value::Integer(n) if n >= 0 => Ok(Frame::Len(n as usize)),
                Value::Number(n) if n >= 0.0 && n.fract() == 0.0 && n < 9e15 => {
                    Ok(Frame::Len(n as usize))
                }
                other => Err(bad_return(
                    "frame",
                    "the length of the next whole reply (an integer of at least 1), or nil",
                    &other,
                )),
            }
        })
    }

    fn response(&self, conn: u64, reply: &[u8]) -> Result<Option<ErrorClass>, HookError> {
        self.with("response", |st| {
            let f = defined(st, 3)?;
            let r = st.lua.create_string(reply)?;
            let v = f.call::<Value>((Self::conn(st, conn)?, r))?;
            Ok(match verdict("response", v)? {
                Verdict::Right => None,
                Verdict::False => Some(ErrorClass::Mismatch),
                Verdict::Class(c) => Some(c),
            })
        })
    }

    fn first_error(&self) -> Option<String> {
        self.first.lock().ok()?.clone()
    }

    fn defines(&self, name: &str) -> bool {
        self.with("the file's top level", |st| {
            Ok(matches!(
                st.lua.globals().raw_get::<Value>(name)?,
                Value::Function(_)
            ))
        })
        .unwrap_or(false)
    }

    fn call(&self, func: &str, conn: u64, text: &[u8], out: &mut Vec<u8>) -> Result<(), HookError> {
        self.with(func, |st| {
            let f: Function = st.lua.globals().raw_get(func)?;
            let t = st.lua.create_string(text)?;
            match f.call::<Value>((Self::conn(st, conn)?, t))? {
                Value::String(s) => {
                    out.extend_from_slice(&s.as_bytes());
                    Ok(())
                }
                other => Err(bad_return(func, "the message's bytes as a string", &other)),
            }
        })
    }

    fn check(&self, func: &str, conn: u64, reply: &[u8]) -> Result<Check, HookError> {
        self.with(func, |st| {
            let f: Function = st.lua.globals().raw_get(func)?;
            let r = st.lua.create_string(reply)?;
            let v = f.call::<Value>((Self::conn(st, conn)?, r))?;
            Ok(match verdict(func, v)? {
                Verdict::Right => Check::Right,
                Verdict::False => Check::NotThis,
                Verdict::Class(c) => Check::Fail(c),
            })
        })
    }

    fn close(&self, conn: u64) {
        STATE.with(|cell| {
            if let Some(st) = cell.borrow().as_ref().filter(|s| s.id == self.id) {
                let _ = st.conns.raw_set(conn as i64, Value::Nil);
            }
        });
    }
}

#[cfg(test)]
mod tests;
