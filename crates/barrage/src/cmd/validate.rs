//! `barrage validate FILE [--users N --hold D --arrive R]`: checks a scenario file (with the
//! overrides `run` takes) without sending anything (schema, every
//! `{var}` resolvable, every capture used, limits, the target URL and thresholds with the same
//! parsers as `barrage run`), and prints one line: `ok: ...` or the mistake.
//!
//! The file's own checks live in `barrage_scenario`; what needs the binary's or the metrics'
//! grammar (URLs, thresholds) is checked here, so the scenario crate stays free of both.

use crate::resolve::cli::ValidateArgs;
use crate::usage::Usage;
use barrage_scenario::Checked;

/// Exit code 0 with `ok: FILE: summary`, or a `Usage` error (exit 2) naming file, line and key.
pub fn validate(a: &ValidateArgs) -> anyhow::Result<i32> {
    let shown = a.file.display().to_string();
    let mut checked = barrage_scenario::load(&a.file).map_err(|e| Usage::file(&shown, e))?;
    // The command line's overrides, as `barrage run FILE --users N` applies them.
    checked
        .override_users(a.users, a.hold, a.arrive)
        .map_err(|e| Usage::file(&shown, e))?;
    crate::resolve::scenario::binary_checks(&shown, &checked)?;
    let dir = a.file.parent().unwrap_or(std::path::Path::new(""));
    crate::resolve::config::check_rpc_steps(&shown, &checked, dir)?;
    crate::resolve::config::check_scenario_script(&shown, &checked, dir)?;
    as_run_plans_it(a, &shown)?;
    say!("ok: {shown}: {}", checked.summary());
    // The whole run's size against this machine, as `run` checks it before any traffic.
    let (facts, how) = facts(&shown, &checked)?;
    say!("pre-flight on this machine ({how}):");
    let items =
        crate::resolve::preflight::check(&facts, &crate::resolve::preflight::Machine::read());
    for l in crate::resolve::preflight::lines(&items) {
        say!("{l}");
    }
    match crate::resolve::preflight::refusal(&items, &facts) {
        Some(r) => Err(Usage::file(
            &shown,
            format!("{shown}: the whole run in one place does not fit this machine: {r}"),
        )
        .into()),
        None => Ok(0),
    }
}

/// The file's run as `barrage run` plans it (the engine compiles its users), so that
/// nothing `run` would refuse passes here: the same checks, the same lines. Short of what
/// needs the server (with `protocol.reflect` and no .proto, the steps' types are its) or
/// the machine's state (monitors, outputs: `run`'s, at its start).
fn as_run_plans_it(a: &ValidateArgs, shown: &str) -> Result<(), Usage> {
    use clap::Parser as _;
    let parsed = crate::resolve::cli::Cli::try_parse_from(["barrage", "run", shown])
        .map_err(|e| Usage::file(shown, e.to_string()))?;
    let crate::resolve::cli::Command::Run(mut run) = parsed.command else {
        return Ok(());
    };
    run.file.users = a.users;
    run.file.hold = a.hold;
    run.file.arrive = a.arrive;
    let Some(loaded) = crate::resolve::scenario::load(&run)? else {
        return Ok(());
    };
    let args = crate::resolve::scenario::run_args(&run, loaded)?;
    if args.grpc.reflect && args.grpc.proto.is_none() {
        return Ok(());
    }
    crate::resolve::config::plan(&args).map(|_| ())
}

/// The file's run as the pre-flight sees it: users, processes, targets and sources.
fn facts(file: &str, c: &Checked) -> Result<(crate::resolve::preflight::Facts, String), Usage> {
    use barrage_scenario::model::Processes;
    let target = crate::resolve::url::parse(&c.file.target).map_err(|e| Usage::file(file, e))?;
    let mut targets = vec![target.addr];
    for u in &c.file.urls {
        targets.push(
            crate::resolve::url::parse(u)
                .map_err(|e| Usage::file(file, e))?
                .addr,
        );
    }
    let run = c.file.run.as_ref().map(|r| &r.value);
    let threads = run.and_then(|r| r.threads.as_ref()).map_or(1, |t| t.value);
    let hard = crate::resolve::preflight::Machine::read().nofile_hard;
    let processes = match run.and_then(|r| r.processes.as_ref()).map(|p| p.value) {
        Some(Processes::Count(n)) => n,
        Some(Processes::Auto) => crate::resolve::preflight::processes_for(c.users, threads, hard),
        None => 1,
    };
    let sources = match run.and_then(|r| r.source_ip.as_ref()) {
        Some(s) => crate::resolve::sources::resolve(Some(s), &targets, c.users)
            .map_err(|e| Usage::file(file, format!("{file}:{}: run.source_ip: {e}", s.line)))?
            .len() as u64,
        None => 0,
    };
    let how = format!(
        "{} users, {processes} process{}, {} source address{}",
        c.users,
        if processes == 1 { "" } else { "es" },
        sources.max(1),
        if sources > 1 { "es" } else { "" }
    );
    Ok((
        crate::resolve::preflight::Facts {
            connections: c.users,
            processes,
            threads,
            targets,
            sources,
            paced: true,
            count_flag: "users.count",
            gave_processes: run.and_then(|r| r.processes.as_ref()).is_some(),
        },
        how,
    ))
}
