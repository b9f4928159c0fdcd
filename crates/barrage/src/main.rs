//! barrage: stress-test network servers. The binary turns arguments into a plan, runs it and
//! writes the results; every step is one call below.

/// `println!` that does not panic when stdout's reader is gone (e.g. `barrage demo | head`).
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

mod cmd;
mod probe;
mod resolve;
mod run;
mod shard;
mod sinks;
mod sys;
mod units;
mod usage;

use clap::Parser;
use resolve::cli::{Cli, Command};
use std::process::ExitCode;
use usage::error_line;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let args = with_run_shortcut(&argv);
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) if e.kind() == clap::error::ErrorKind::InvalidSubcommand => {
            // `barrage chat.toml`: a scenario file, not a subcommand nor a target.
            match args.get(1).filter(|a| resolve::scenario::is_file(a)) {
                Some(file) => {
                    eprintln!(
                        "error: {file} is a scenario file: run it with `barrage run {file}` \
                         (`barrage validate {file}` checks it)"
                    );
                    return ExitCode::from(2);
                }
                None => return clap_exit(e, subcommand(&args)),
            }
        }
        Err(e) => {
            if let Some(line) = hyphen_value(&e, &args).or_else(|| other_server(&e, &args)) {
                eprintln!("{line}");
                return ExitCode::from(2);
            }
            return clap_exit(e, subcommand(&args));
        }
    };
    let result = match &cli.command {
        Command::Run(a) => cmd::run::run(a, argv.clone()),
        Command::Serve(a) => cmd::serve::serve(a),
        Command::Demo(a) => cmd::demo::demo(a),
        Command::Report(a) => cmd::report::report(a),
        Command::Compare(a) => cmd::compare::compare(a),
        Command::Versus(a) => cmd::versus::versus(a, argv.clone()),
        Command::Validate(a) => cmd::validate::validate(a),
        Command::FindMax(a) => cmd::find_max::find_max(a, argv.clone()),
        Command::Merge(a) => cmd::merge::merge(a),
        Command::Dist(a) => shard::dist::dist(a),
    };
    match result {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) if e.is::<usage::Usage>() => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {}", error_line(&e));
            ExitCode::from(1)
        }
    }
}

/// `barrage tcp://...` (or `barrage -c 5 tcp://...`, or `barrage 127.0.0.1:7000` which then
/// gets the "no scheme" advice) is `barrage run ...`.
/// A first word that names a subcommand (`report run-10:00.json`) is never a shortcut, whatever
/// colons its arguments hold.
fn with_run_shortcut(argv: &[String]) -> Vec<String> {
    use clap::CommandFactory as _;
    const FLAGS: [&str; 4] = ["-h", "--help", "-V", "--version"];
    let mut v = argv.to_vec();
    let Some(first) = v.get(1) else { return v };
    let cmd = Cli::command();
    let is_subcommand = first == "help" || cmd.find_subcommand(first).is_some();
    if is_subcommand || FLAGS.contains(&first.as_str()) {
        return v;
    }
    let looks_like_target =
        |a: &String| a.contains("://") || (!a.starts_with('-') && a.contains(':') && a.len() > 2);
    if v[1..].iter().any(looks_like_target) {
        v.insert(1, "run".into());
    }
    v
}

/// The subcommand `args` name (after the run shortcut), if any.
fn subcommand(args: &[String]) -> Option<&str> {
    use clap::CommandFactory as _;
    let first = args.get(1)?;
    Cli::command()
        .find_subcommand(first)
        .is_some()
        .then_some(first.as_str())
}

/// `--publish -1`: clap reads a value starting with `-` as an unknown flag ("unexpected
/// argument '-1'"), which names neither the flag nor the fix. For a flag that takes a value,
/// this line says both.
fn hyphen_value(e: &clap::Error, args: &[String]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    use clap::CommandFactory as _;
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let at = args.iter().position(|a| a == bad)?;
    let prev = args.get(at.checked_sub(1)?)?;
    let cmd = Cli::command();
    let sub = cmd.find_subcommand(subcommand(args)?)?;
    let takes = |a: &clap::Arg| a.get_action().takes_values();
    let found = match (prev.strip_prefix("--"), prev.strip_prefix('-')) {
        (Some(long), _) if !long.contains('=') => sub
            .get_arguments()
            .any(|a| takes(a) && a.get_long() == Some(long)),
        (None, Some(short)) if short.chars().count() == 1 => sub
            .get_arguments()
            .any(|a| takes(a) && a.get_short() == short.chars().next()),
        _ => false,
    };
    (bad.starts_with('-') && found).then(|| {
        format!(
            "error: {prev} {bad}: '{bad}' reads as a flag here, not as the value of {prev}; \
             to give it anyway, write {prev}={bad}"
        )
    })
}

/// `barrage serve echo --max-queue 1M`: a flag another reference server takes is named with
/// the servers that take it (clap alone says only that it is unexpected).
fn other_server(e: &clap::Error, args: &[String]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    use clap::CommandFactory as _;
    if e.kind() != ErrorKind::UnknownArgument || subcommand(args)? != "serve" {
        return None;
    }
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let flag = bad.split('=').next()?.strip_prefix("--")?;
    let cmd = Cli::command();
    let serve = cmd.find_subcommand("serve")?;
    let kind = args
        .iter()
        .skip_while(|a| a.as_str() != "serve")
        .nth(1)
        .filter(|k| serve.find_subcommand(k.as_str()).is_some())?;
    let takers: Vec<String> = serve
        .get_subcommands()
        .filter(|s| s.get_arguments().any(|a| a.get_long() == Some(flag)))
        .map(|s| format!("serve {}", s.get_name()))
        .collect();
    let (last, rest) = takers.split_last()?;
    let list = match rest {
        [] => last.clone(),
        _ => format!("{} and {last}", rest.join(", ")),
    };
    Some(format!(
        "error: --{flag} applies to {list}, not serve {kind} (barrage serve {kind} --help lists its flags)"
    ))
}

/// Help and version go to stdout with code 0; usage errors are one line ending in a hint, code 2:
/// the nearest flag or subcommand when one is close (clap's suggestion), and which `--help`
/// lists the flags.
fn clap_exit(e: clap::Error, sub: Option<&str>) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(2)
        }
        _ => {
            eprintln!("{}", usage_line(&e.render().to_string(), sub));
            ExitCode::from(2)
        }
    }
}

/// clap's error as barrage's one usage line: `error: unexpected argument '--conections' found;
/// did you mean '--connections'? (barrage run --help lists every flag)`.
fn usage_line(rendered: &str, sub: Option<&str>) -> String {
    let mut line = one_line(rendered);
    let similar = rendered.lines().map(str::trim).find_map(|l| {
        let l = l.strip_prefix("tip: a similar ")?;
        Some(l.split_once("exists: ")?.1.to_string())
    });
    if let Some(s) = similar {
        line += &format!("; did you mean {s}?");
    }
    match sub {
        Some(sub) => line + &format!(" (barrage {sub} --help lists every flag)"),
        None => line + " (barrage --help lists the commands; barrage run --help every run flag)",
    }
}

/// clap's message in one line: a first line ending in ':' is joined with what it introduces
/// (e.g. the names of missing arguments); usage and tips are left out.
fn one_line(text: &str) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut out = lines.next().unwrap_or("error: bad usage").to_string();
    if out.ends_with(':') {
        let items: Vec<&str> = lines
            .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("tip:"))
            .collect();
        out = format!("{} {}", out, items.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_are_printed_once() {
        let io = std::io::Error::from_raw_os_error(28);
        let e = anyhow::Error::new(barrage_report::ReportError::Write {
            path: "r.md".into(),
            source: io,
        })
        .context("--report r.md");
        let line = error_line(&e);
        assert_eq!(line.matches("os error 28").count(), 1, "{line}");
        assert!(
            line.starts_with("--report r.md: cannot write report r.md: "),
            "{line}"
        );
    }

    #[test]
    fn a_misspelt_flag_or_subcommand_gets_the_nearest_one() {
        use clap::Parser as _;
        let line = |a: &[&str]| {
            let args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
            let args = with_run_shortcut(&args);
            let e = Cli::try_parse_from(&args).unwrap_err();
            usage_line(&e.render().to_string(), subcommand(&args))
        };
        assert_eq!(
            line(&["barrage", "tcp://127.0.0.1:7000", "--conections", "5"]),
            "error: unexpected argument '--conections' found; did you mean '--connections'? \
             (barrage run --help lists every flag)"
        );
        assert_eq!(
            line(&["barrage", "serv", "echo"]),
            "error: unrecognized subcommand 'serv'; did you mean 'serve'? (barrage --help lists \
             the commands; barrage run --help every run flag)"
        );
        assert_eq!(
            line(&["barrage", "serve", "echo", "--lisen", "127.0.0.1:1"]),
            "error: unexpected argument '--lisen' found; did you mean '--listen'? (barrage serve \
             --help lists every flag)"
        );
        // Nothing close: no guess.
        assert_eq!(
            line(&["barrage", "tcp://127.0.0.1:7000", "--zzz"]),
            "error: unexpected argument '--zzz' found (barrage run --help lists every flag)"
        );
    }

    #[test]
    fn a_subcommand_whose_argument_has_a_colon_is_not_a_run() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for a in [
            ["barrage", "report", "run-10:00.json", "-o", "r.md"],
            ["barrage", "compare", "a-10:00.json", "b-11:00.json", "-q"],
        ] {
            assert_eq!(with_run_shortcut(&argv(&a)), argv(&a));
        }
        assert_eq!(
            with_run_shortcut(&argv(&["barrage", "tcp://127.0.0.1:7000"])),
            argv(&["barrage", "run", "tcp://127.0.0.1:7000"])
        );
    }
}
