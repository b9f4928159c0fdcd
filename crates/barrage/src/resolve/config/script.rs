//! `--script FILE` and `--script-budget`: the script read, compiled and checked here, once,
//! before any load (a mistake is one line naming the file and line); and the flags its
//! functions take the place of. Every process of a run compiles it again from the spec's text.

use super::*;
use barrage_engine::hook::{HookFns, HookRef};
use barrage_engine::{ScriptPlan, ScriptSpec};

/// A checked script: as data for the spec, and compiled for this process's plan.
pub(super) struct Checked {
    pub spec: ScriptSpec,
    hook: HookRef,
}

/// `--script` read and compiled, and the flags it makes pointless refused.
pub(super) fn check(a: &RunArgs, scheme: Scheme) -> Result<Option<Checked>, Usage> {
    let Some(path) = &a.script else {
        if a.script_budget.is_some() {
            return Err(Usage::says(
                "--script-budget",
                "bounds the calls of a script: give --script FILE",
            ));
        }
        return Ok(None);
    };
    if a.scenario.is_some() {
        return Err(Usage::says(
            "--script",
            "applies to runs of a URL; a scenario file's steps cannot call a script yet",
        ));
    }
    if scheme != Scheme::Tcp {
        return Err(Usage::says(
            "--script",
            format!("applies to tcp:// targets, not {}://", scheme.name()),
        ));
    }
    let shown = path.display().to_string();
    let raw = read_capped("--script", path, &shown, "a script")?;
    let text = String::from_utf8(raw)
        .map_err(|_| Usage::value("--script", &shown, "is not UTF-8 text"))?;
    let budget = a.script_budget.unwrap_or(DEFAULT_BUDGET);
    let hook = compile(&shown, &text, budget).map_err(|e| Usage::says("--script", e))?;
    refuse_replaced(a, hook.fns(), &shown)?;
    Ok(Some(Checked {
        spec: ScriptSpec {
            file: shown,
            text,
            budget,
        },
        hook,
    }))
}

/// The plan's script: the compiled one, with the longest reply its `frame` may claim.
pub(super) fn attach(plan: &mut Plan, checked: Option<Checked>, max_frame: Option<u64>) {
    plan.script = checked.map(|c| ScriptPlan {
        hook: c.hook,
        max_frame: max_frame.unwrap_or(barrage_engine::framing::DEFAULT_MAX_FRAME),
    });
}

/// A flag whose work a function of the script does is a mistake: one of the two is ignored.
fn refuse_replaced(a: &RunArgs, fns: HookFns, file: &str) -> Result<(), Usage> {
    let replaced = [
        (
            fns.request,
            "-m/--message",
            a.message.is_some(),
            "request() builds each request",
        ),
        (
            fns.request,
            "--message-file",
            a.message_file.is_some(),
            "request() builds each request",
        ),
        (
            fns.request,
            "--fields",
            a.fields.is_some(),
            "request() builds each request",
        ),
        (
            fns.frame,
            "--expect",
            a.expect.is_some(),
            "frame() says where a reply ends",
        ),
        (
            fns.init,
            "--first-message",
            a.first_message.is_some(),
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
    if a.max_frame.is_some()
        && !fns.frame
        && !matches!(a.expect.as_deref(), Some(e) if e.starts_with("field:"))
    {
        return Err(Usage::says(
            "--max-frame",
            format!(
                "bounds a length-field framing or a script's frame(), and --script {file} \
                 defines no frame()"
            ),
        ));
    }
    Ok(())
}

#[cfg(feature = "script")]
const DEFAULT_BUDGET: u64 = barrage_script::DEFAULT_BUDGET;
#[cfg(not(feature = "script"))]
const DEFAULT_BUDGET: u64 = 1_000_000;

#[cfg(feature = "script")]
fn compile(file: &str, text: &str, budget: u64) -> Result<HookRef, String> {
    let s = barrage_script::Script::load(file, text, budget)?;
    Ok(HookRef(std::sync::Arc::new(s)))
}

#[cfg(not(feature = "script"))]
fn compile(_file: &str, _text: &str, _budget: u64) -> Result<HookRef, String> {
    Err(
        "needs a barrage built with the `script` feature (the default); this one was built \
         without it"
            .into(),
    )
}
