//! `barrage versus A_URL --against B_URL [run flags] [--reps N]`: the same load against two
//! targets, run in turn, and compared the way `barrage compare` compares saved runs. It answers
//! the Socket vs WebSocket question (one server over two protocols) or server A vs server B in
//! one command: the throughput ratio, latency, and the CPU per request of barrage, the server
//! (`--monitor`, resolved per side: `auto` finds each side's own listener) and the machine.
//!
//! Key decisions: each run is an ordinary run of the flags with the target replaced, resolved
//! and checked before anything is sent (a mistake names its side); the sides alternate (A B,
//! B A, A B, ...) so that a machine drifting over the runs weighs on both alike; the comparison
//! shows each side's median rep by throughput (the rate its rep line prints: the steady
//! state's when the run ramped), with `compare`'s noise rules, and every rep's B / A ratio is
//! printed so the spread is in view. Each rep announces itself before it runs (the runs are
//! quiet, minutes in all) and its line names the failed requests' classes. The runs' results go to a temporary
//! directory, removed at the end; `-o FILE.html|.md` keeps the comparison.

use crate::resolve::cli::{RunArgs, VersusArgs};
use crate::usage::Usage;
use barrage_metrics::RunResult;

/// One side of the comparison.
struct Side<'a> {
    letter: char,
    url: &'a str,
    runs: Vec<RunResult>,
}

pub fn versus(a: &VersusArgs, argv: Vec<String>) -> anyhow::Result<i32> {
    let out = crate::cmd::compare::output(a.compare_output.as_deref())?;
    let urls = [a.run.target.as_str(), a.against.as_str()];
    for (url, flag) in urls.iter().zip(["target", "--against"]) {
        if !url.contains("://") {
            return Err(Usage::value(
                flag,
                url,
                "versus compares two targets given as URLs (tcp://, http://, ws://, ...)",
            )
            .into());
        }
    }
    for (flag, given) in [
        ("--json", a.run.output.json.is_some()),
        ("--report", a.run.output.report.is_some()),
        ("--out", a.run.output.out.is_some()),
        ("--processes", a.run.output.processes.is_some()),
    ] {
        if given {
            return Err(Usage::says(
                flag,
                "is one run's output; versus runs several: use -o FILE.html|.md for the \
                 comparison, or barrage run for one side",
            )
            .into());
        }
    }
    // Both sides resolve before any load: a mistake on side B is not found after side A ran.
    for url in urls {
        crate::resolve::resolve(&side_args(&a.run, url, None), argv.clone())?;
    }
    let dir = std::env::temp_dir().join(format!("barrage-versus-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = run_sides(a, &argv, &dir, urls);
    let _ = std::fs::remove_dir_all(&dir);
    let (sides, code) = result?;
    let [side_a, side_b] = &sides;
    if side_a.runs.is_empty() || side_b.runs.is_empty() {
        say!("versus: stopped before both sides ran; nothing to compare");
        return Ok(code);
    }
    let (ma, mb) = (median(&side_a.runs), median(&side_b.runs));
    let name = |s: &Side, rep: usize| {
        let of = if s.runs.len() > 1 {
            format!(
                ", the median of {} reps by rate (rep {}: {} req/s)",
                s.runs.len(),
                rep + 1,
                rate(&s.runs[rep])
            )
        } else {
            String::new()
        };
        format!("{}{of}", s.url)
    };
    say!();
    let runs = [side_a.runs[ma].clone(), side_b.runs[mb].clone()];
    let names = [name(side_a, ma), name(side_b, mb)];
    crate::cmd::compare::show(&runs, &names, &Default::default(), out)?;
    say!(
        "(each side's median rep is picked by the rate its rep lines show: the steady state's \
         when the run ramped; rps.avg above is over all its measured seconds)"
    );
    say!();
    for line in ratios(side_a, side_b) {
        say!("{line}");
    }
    Ok(code)
}

/// Side A's flags with `url` as the target, its result to `json`, no live view: the runs
/// print one line each, and the comparison is the output.
fn side_args(run: &RunArgs, url: &str, json: Option<&std::path::Path>) -> RunArgs {
    let mut args = run.clone();
    args.target = url.to_string();
    args.output.json = json.map(|p| p.display().to_string());
    args.output.quiet = true;
    args.output.no_tui = true;
    args
}

/// Runs the reps, alternating; a run that is interrupted ends them (what ran is compared).
fn run_sides<'a>(
    a: &VersusArgs,
    argv: &[String],
    dir: &std::path::Path,
    urls: [&'a str; 2],
) -> anyhow::Result<([Side<'a>; 2], i32)> {
    let mut sides = [
        Side {
            letter: 'A',
            url: urls[0],
            runs: Vec::new(),
        },
        Side {
            letter: 'B',
            url: urls[1],
            runs: Vec::new(),
        },
    ];
    let mut code = 0;
    let runs = 2 * a.reps as usize;
    for rep in 0..a.reps as usize {
        let order = if rep % 2 == 0 { [0, 1] } else { [1, 0] };
        for (k, i) in order.into_iter().enumerate() {
            let side = &mut sides[i];
            let json = dir.join(format!("{}{}.json", side.letter, rep + 1));
            // Progress: the reps run quietly (no live view), minutes in all.
            say!(
                "running {} rep {}/{} (run {} of {runs}): {}",
                side.letter,
                rep + 1,
                a.reps,
                2 * rep + k + 1,
                side.url
            );
            let mut resolved =
                crate::resolve::resolve(&side_args(&a.run, side.url, Some(&json)), argv.to_vec())?;
            resolved.outputs.summary = false;
            let c = crate::run::run(resolved, crate::run::Engine)?;
            let r = barrage_report::load(&json).map_err(|e| Usage::file(json.display(), e))?;
            say!(
                "{} rep {}/{}: {}  {}{}",
                side.letter,
                rep + 1,
                a.reps,
                side.url,
                barrage_report::headline(&r),
                error_classes(&r)
            );
            if c == 130 {
                return Ok((sides, 130));
            }
            if c == 1 {
                anyhow::bail!(
                    "side {} ({}) failed: {}",
                    side.letter,
                    side.url,
                    r.message.as_deref().unwrap_or("see above")
                );
            }
            code = code.max(c);
            side.runs.push(r);
        }
    }
    Ok((sides, code))
}

/// The index of the rep with the median throughput (the lower middle of an even count), by
/// the rate its rep line prints ([`barrage_report::headline_rate`]).
fn median(runs: &[RunResult]) -> usize {
    let mut idx: Vec<usize> = (0..runs.len()).collect();
    idx.sort_by(|&i, &j| {
        barrage_report::headline_rate(&runs[i]).total_cmp(&barrage_report::headline_rate(&runs[j]))
    });
    idx[(idx.len() - 1) / 2]
}

/// The rate a rep is picked by, as its line prints it.
fn rate(r: &RunResult) -> String {
    barrage_report::fmt::real(barrage_report::headline_rate(r))
        .trim()
        .to_string()
}

/// ` (timeout 30, refused 2)`: the failed requests by class, when any failed.
fn error_classes(r: &RunResult) -> String {
    let classes: Vec<String> = r
        .summary
        .failed_requests
        .nonzero()
        .map(|(c, n)| format!("{c} {}", barrage_metrics::thousands(n)))
        .collect();
    if classes.is_empty() {
        String::new()
    } else {
        format!(" ({})", classes.join(", "))
    }
}

/// B / A of throughput and of the CPU per request of barrage and the server, rep by rep (rep
/// k of A against rep k of B), with their medians.
fn ratios(a: &Side, b: &Side) -> Vec<String> {
    use barrage_metrics::vocabulary::value;
    let pairs: Vec<(&RunResult, &RunResult)> = a.runs.iter().zip(&b.runs).collect();
    let mut lines = vec![format!("B / A ({} vs {}), rep by rep:", b.url, a.url)];
    for (label, name) in [
        ("throughput", "rps.avg"),
        ("barrage CPU per request", "generator.cpu_per_req"),
        ("server CPU per request", "server.cpu_per_req"),
    ] {
        let r: Vec<f64> = pairs
            .iter()
            .filter_map(|(x, y)| {
                let x = value(x, x.analysis.as_ref(), name)?;
                let y = value(y, y.analysis.as_ref(), name)?;
                (x > 0.0).then_some(y / x)
            })
            .collect();
        if r.is_empty() {
            let why = if name == "server.cpu_per_req" {
                " (not measured: add --monitor PID|auto)"
            } else {
                " (not measured)"
            };
            lines.push(format!("  {label:<24} -{why}"));
            continue;
        }
        let mut sorted = r.clone();
        sorted.sort_by(f64::total_cmp);
        let mid = sorted[(sorted.len() - 1) / 2];
        let each: Vec<String> = r.iter().map(|x| format!("{x:.2}")).collect();
        lines.push(format!(
            "  {label:<24} {mid:.2}x{}",
            if r.len() > 1 {
                format!(" (median; each rep {})", each.join(", "))
            } else {
                String::new()
            }
        ));
    }
    lines
}
