//! `--script FILE`, `--script-budget` and `--script-unsafe`: the script read, compiled and checked here, once,
//! before any load (a mistake is one line naming the file and line); and the flags its
//! functions take the place of. Every process of a run compiles it again from the spec's text.

use super::vertical::read_capped;
use crate::resolve::cli::RunArgs;
use crate::resolve::url::Scheme;
use crate::usage::Usage;
use barrage_engine::hook::{HookFns, HookRef};
use barrage_engine::Plan;
use barrage_engine::{ScriptPlan, ScriptSpec};

/// A checked script: as data for the spec, and compiled for this process's plan.
pub(super) struct Checked {
    pub spec: ScriptSpec,
    hook: HookRef,
}

/// `--script` read and compiled, and the flags it makes pointless refused.
pub(super) fn check(a: &RunArgs, scheme: Scheme) -> Result<Option<Checked>, Usage> {
    let Some(path) = &a.msg.script else {
        if a.msg.script_budget.is_some() {
            return Err(Usage::says(
                "--script-budget",
                "bounds the calls of a script: give --script FILE",
            ));
        }
        if a.msg.script_unsafe {
            return Err(Usage::says(
                "--script-unsafe",
                "gives a script the full libraries: give --script FILE",
            ));
        }
        return Ok(None);
    };
    if !scheme.is(&barrage_scenario::protocol::TCP) {
        return Err(Usage::says(
            "--script",
            format!("applies to tcp:// targets, not {}://", scheme.name()),
        ));
    }
    let shown = path.display().to_string();
    let raw = read_capped("--script", path, &shown, "a script")?;
    let text = String::from_utf8(raw)
        .map_err(|_| Usage::value("--script", &shown, "is not UTF-8 text"))?;
    let budget = a.msg.script_budget.unwrap_or(DEFAULT_BUDGET);
    if budget > MAX_BUDGET {
        return Err(Usage::says(
            "--script-budget",
            format!("{budget} is over the cap of {MAX_BUDGET} instructions per call"),
        ));
    }
    let hook = compile(&shown, &text, budget, a.msg.script_unsafe)
        .map_err(|e| Usage::says("--script", e))?;
    if a.scenario.is_none() && hook.fns() == HookFns::default() {
        return Err(Usage::says(
            "--script",
            format!(
                "{shown}: defines none of the functions a script gives barrage: init(conn), \
                 request(conn, seq), frame(buf, conn), response(conn, reply)"
            ),
        ));
    }
    refuse_replaced(a, hook.fns(), &shown)?;
    if let Some(sc) = a.scenario.as_ref() {
        if let Some(c) = sc.checked.as_ref() {
            steps_name_functions(&c.0.file, &sc.file, &hook, &shown)?;
        }
    }
    Ok(Some(Checked {
        spec: ScriptSpec {
            file: shown,
            budget,
            unsafe_libs: a.msg.script_unsafe,
        },
        hook,
    }))
}

/// `barrage validate`: a scenario file's script compiled (its top level run once) and every
/// function its steps name found in it; each mistake one line naming the file and line.
pub fn check_file(
    shown: &str,
    c: &barrage_scenario::Checked,
    dir: &std::path::Path,
) -> Result<(), Usage> {
    let Some(sc) = &c.file.script else {
        return Ok(());
    };
    let path = dir.join(&sc.value);
    let script = path.display().to_string();
    let at = |e: String| Usage::file(shown, format!("{shown}:{}: script: {e}", sc.line));
    let raw = read_capped("script", &path, &script, "a script")?;
    let text = String::from_utf8(raw).map_err(|_| at(format!("{script} is not UTF-8 text")))?;
    // The libraries a run gets by default (a run may give --script-unsafe).
    let hook = compile(&script, &text, DEFAULT_BUDGET, false).map_err(at)?;
    steps_name_functions(&c.file, shown, &hook, &script)
}

/// The plan's script: the compiled one, with the longest reply its `frame` may claim.
pub(super) fn attach(plan: &mut Plan, checked: Option<Checked>, max_frame: Option<u64>) {
    plan.script = checked.map(|c| ScriptPlan {
        hook: c.hook,
        max_frame: max_frame.unwrap_or(barrage_engine::framing::DEFAULT_MAX_FRAME),
    });
}

/// Every `call` and `check` of a scenario's steps and `on` rules names a function of the
/// script: else one line naming the file, line and key.
fn steps_name_functions(
    f: &barrage_scenario::model::File,
    file: &str,
    hook: &HookRef,
    script: &str,
) -> Result<(), Usage> {
    use barrage_scenario::model::Step;
    use barrage_scenario::At;
    /// What is done with each function name found (its value and key).
    type Seen<'s> = dyn FnMut(&At<String>, String) -> Result<(), Usage> + 's;
    fn walk(steps: &[At<Step>], key: &str, seen: &mut Seen) -> Result<(), Usage> {
        for (i, s) in steps.iter().enumerate() {
            let k = format!("{key}[{i}]");
            for (name, v) in [("call", &s.call), ("check", &s.check)] {
                if let Some(v) = v {
                    seen(v, format!("{k}.{name}"))?;
                }
            }
            walk(&s.steps, &format!("{k}.steps"), seen)?;
        }
        Ok(())
    }
    let mut seen = |v: &At<String>, key: String| {
        if hook.defines(&v.value) {
            return Ok(());
        }
        Err(Usage::file(
            file,
            format!(
                "{file}:{}: {key}: {} is not a function of the script {script}",
                v.line, v.value
            ),
        ))
    };
    walk(&f.steps, "steps", &mut seen)?;
    walk(&f.leave, "leave", &mut seen)?;
    for (i, r) in f.on.iter().enumerate() {
        if let Some(v) = &r.call {
            seen(v, format!("on[{i}].call"))?;
        }
    }
    Ok(())
}

/// A flag whose work a function of the script does is a mistake: one of the two is ignored.
fn refuse_replaced(a: &RunArgs, fns: HookFns, file: &str) -> Result<(), Usage> {
    let replaced = [
        (
            fns.request,
            "-m/--message",
            a.msg.message.is_some(),
            "request() builds each request",
        ),
        (
            fns.request,
            "--message-file",
            a.msg.message_file.is_some(),
            "request() builds each request",
        ),
        (
            fns.request,
            "--fields",
            a.msg.fields.is_some(),
            "request() builds each request",
        ),
        (
            fns.frame,
            "--expect",
            a.msg.expect.is_some(),
            "frame() says where a reply ends",
        ),
        (
            fns.init,
            "--first-message",
            a.msg.first_message.is_some(),
            "init() sends the login",
        ),
    ];
    for (defined, flag, given, does) in replaced {
        if defined && given {
            return Err(Usage::says(
                flag,
                format!("is not used: --script {file}'s {does}; give one of the two"),
            ));
        }
    }
    if a.msg.verify {
        return Err(Usage::says(
            "--verify",
            format!(
                "compares echoes with -m's message; with --script {file}, response() judges \
                 the replies: give one of the two"
            ),
        ));
    }
    let nothing_back = a.msg.expect.as_deref().map(str::trim) == Some("none") && !fns.frame;
    if nothing_back && (fns.init || fns.response) {
        return Err(Usage::says(
            "--expect",
            format!(
                "none awaits no reply, and --script {file}'s {} one: drop --expect none",
                if fns.init {
                    "init() awaits"
                } else {
                    "response() judges"
                }
            ),
        ));
    }
    Ok(())
}

#[cfg(feature = "script")]
use barrage_script::{DEFAULT_BUDGET, MAX_BUDGET};
#[cfg(not(feature = "script"))]
const DEFAULT_BUDGET: u64 = 1_000_000;
#[cfg(not(feature = "script"))]
const MAX_BUDGET: u64 = 100_000_000;

/// `all`: `--script-unsafe`, Lua's full standard libraries.
#[cfg(feature = "script")]
fn compile(file: &str, text: &str, budget: u64, all: bool) -> Result<HookRef, String> {
    use barrage_script::Libs;
    let libs = if all { Libs::All } else { Libs::Safe };
    let s = barrage_script::Script::load(file, text, budget, libs)?;
    Ok(HookRef(std::sync::Arc::new(s)))
}

#[cfg(not(feature = "script"))]
fn compile(_file: &str, _text: &str, _budget: u64, _all: bool) -> Result<HookRef, String> {
    Err(
        "needs a barrage built with the `script` feature (the default); this one was built \
         without it"
            .into(),
    )
}
