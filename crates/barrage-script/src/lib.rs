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
//! [`STEP`] instructions) and the interpreter under a memory limit ([`MEMORY_LIMIT`]): a
//! script that loops forever or allocates without end fails that call as `script.error`, and
//! the run goes on. The first error a run's script raises is written to stderr, whole, with
//! the file, line and function; the others are counted.
//!
//! Lua 5.4 (as `mlua` builds it from source): `string.pack`/`string.unpack` read and write
//! binary fields; the standard libraries but `debug` are loaded.

use barrage_engine::hook::{Check, Frame, Hook, HookError, HookFns};
use barrage_metrics::ErrorClass;
use mlua::{Function, HookTriggers, Lua, Table, Value, VmState};
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

const NAMES: [&str; 4] = ["init", "request", "frame", "response"];

/// Run before the script: `pcall`, `xpcall` and `coroutine.resume` raise the budget's error
/// again when the call they protected ran out of it.
const GUARD: &str = r#"
local over, why = ...
local function check(...)
  if over() then error(why, 0) end
  return ...
end
local pcall, xpcall, resume = pcall, xpcall, coroutine.resume
_G.pcall = function(...) return check(pcall(...)) end
_G.xpcall = function(...) return check(xpcall(...)) end
coroutine.resume = function(...) return check(resume(...)) end
"#;

fn over_budget(budget: u64) -> String {
    format!("ran out of its instruction budget ({budget} instructions; --script-budget)")
}

/// A compiled script: its file name, text and budget; the interpreters are per thread.
pub struct Script {
    file: String,
    text: Arc<str>,
    budget: u64,
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
    /// Budget steps used by the call running now.
    steps: Rc<Cell<u64>>,
}

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
}

impl Script {
    /// Compile `text` (the file `file`) with a budget of `budget` instructions per call: run
    /// its top level once, and see which functions it defines.
    pub fn load(file: &str, text: &str, budget: u64) -> Result<Script, String> {
        if budget == 0 {
            return Err(
                "--script-budget: 0 instructions lets no script run; give at least 1000".into(),
            );
        }
        let mut s = Script {
            file: file.to_string(),
            text: Arc::from(text),
            budget,
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
        let lua = Lua::new();
        lua.set_memory_limit(self.memory)?;
        let steps = Rc::new(Cell::new(0u64));
        let limit = self.budget.div_ceil(u64::from(STEP));
        let (counted, budget) = (Rc::clone(&steps), self.budget);
        // A global hook: coroutines the script makes count against the budget too.
        lua.set_global_hook(
            HookTriggers::new().every_nth_instruction(STEP),
            move |_, debug| {
                counted.set(counted.get() + 1);
                if counted.get() > limit {
                    let line = debug
                        .current_line()
                        .map_or(String::new(), |l| format!("{l}: "));
                    return Err(mlua::Error::RuntimeError(format!(
                        "@{line}{}",
                        over_budget(budget)
                    )));
                }
                Ok(VmState::Continue)
            },
        )?;
        // A call out of budget cannot be caught: the functions that catch errors raise it
        // again once they return (a `pcall` in a loop would otherwise run on for ever).
        let spent = Rc::clone(&steps);
        let over = lua.create_function(move |_, ()| Ok(spent.get() > limit))?;
        lua.load(GUARD)
            .set_name("=barrage")
            .call::<()>((over, over_budget(self.budget)))?;
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
            steps,
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
            st.steps.set(0);
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
