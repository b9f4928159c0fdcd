//! `barrage validate FILE`: checks a scenario file without sending anything (schema, every
//! `{var}` resolvable, every capture used, limits, the target URL and thresholds with the same
//! parsers as `barrage run`), and prints one line: `ok: ...` or the mistake.
//!
//! The file's own checks live in `barrage_scenario`; what needs the binary's or the metrics'
//! grammar (URLs, thresholds) is checked here, so the scenario crate stays free of both.

use crate::cli::ValidateArgs;
use crate::usage::Usage;
use barrage_scenario::Checked;

/// Exit code 0 with `ok: FILE: summary`, or a `Usage` error (exit 2) naming file, line and key.
pub fn validate(a: &ValidateArgs) -> anyhow::Result<i32> {
    let shown = a.file.display().to_string();
    let checked = barrage_scenario::load(&a.file).map_err(|e| Usage::file(&shown, e))?;
    binary_checks(&shown, &checked)?;
    say!("ok: {shown}: {}", checked.summary());
    Ok(0)
}

/// Checks made with the binary's parsers: the target URL and the thresholds' grammar.
pub(crate) fn binary_checks(file: &str, c: &Checked) -> Result<(), Usage> {
    let at = |line: u32, key: &str, why: String| {
        Usage::file(file, format!("{file}:{line}: {key}: {why}"))
    };
    let t = &c.file.target;
    if let Err(e) = crate::url::parse(t) {
        return Err(at(t.line, "target", strip_flag(&e.to_string(), "target")));
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
