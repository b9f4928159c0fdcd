//! `barrage validate FILE`: checks a scenario file without sending anything (schema, every
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
    let checked = barrage_scenario::load(&a.file).map_err(|e| Usage::file(&shown, e))?;
    binary_checks(&shown, &checked)?;
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

/// Checks made with the binary's parsers and this process's environment: the target URL,
/// the thresholds' grammar, and every `{secret:NAME}` the run would fill.
pub(crate) fn binary_checks(file: &str, c: &Checked) -> Result<(), Usage> {
    let at = |line: u32, key: &str, why: String| {
        Usage::file(file, format!("{file}:{line}: {key}: {why}"))
    };
    if let Some(s) = c
        .secrets
        .iter()
        .find(|s| std::env::var_os(&s.name).is_none())
    {
        let why = barrage_engine::message::SecretError::Missing(s.name.clone());
        return Err(at(s.line, &s.key, why.to_string()));
    }
    let t = &c.file.target;
    if let Err(e) = crate::resolve::url::parse(t) {
        return Err(at(t.line, "target", strip_flag(&e.to_string(), "target")));
    }
    for (i, u) in c.file.urls.iter().enumerate() {
        if let Err(e) = crate::resolve::url::parse(u) {
            return Err(at(
                u.line,
                &format!("urls[{i}]"),
                strip_flag(&e.to_string(), "target"),
            ));
        }
    }
    if let Some(s) = c.file.run.as_ref().and_then(|r| r.source_ip.as_ref()) {
        if s.trim() != "auto" {
            if let Err(e) = crate::resolve::sources::parse(s) {
                return Err(at(s.line, "run.source_ip", e));
            }
        }
    }
    if let Some(run) = &c.file.run {
        for (i, th) in run.thresholds.iter().enumerate() {
            // `steps.NAME.METRIC`: the step is checked by the scenario; the rest is a metric.
            let expr = match th.trim().strip_prefix("steps.") {
                Some(rest) => rest.split_once('.').map_or(rest, |(_, m)| m).to_string(),
                None => th.to_string(),
            };
            if let Err(e) = barrage_metrics::thresholds::parse(&expr) {
                return Err(at(th.line, &format!("run.thresholds[{i}]"), e.to_string()));
            }
        }
    }
    Ok(())
}

/// `target 'x' has no scheme` -> `'x' has no scheme` (the key is already on the line).
fn strip_flag(line: &str, flag: &str) -> String {
    line.strip_prefix(flag)
        .map(|r| r.trim_start_matches(':').trim_start().to_string())
        .unwrap_or_else(|| line.to_string())
}
