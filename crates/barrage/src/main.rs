//! barrage: stress-test network servers. The binary turns arguments into a plan, runs it and
//! writes the results; every step is one call below.

/// `println!` that does not panic when stdout's reader is gone (e.g. `barrage demo | head`).
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

mod cli;
mod compare;
mod config;
mod demo;
mod live;
mod redact;
mod report_cmd;
mod run;
mod serve;
mod sys;
mod tls;
mod tui;
mod units;
mod url;
mod watch;

use clap::Parser;
use cli::{Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let cli = match Cli::try_parse_from(with_run_shortcut(&argv)) {
        Ok(c) => c,
        Err(e) => return clap_exit(e),
    };
    let result = match &cli.command {
        Command::Run(a) => run::run(a, argv.clone()),
        Command::Serve(a) => serve::serve(a),
        Command::Demo(a) => demo::demo(a),
        Command::Report(a) => report_cmd::report(a),
        Command::Compare(a) => compare::compare(a),
    };
    match result {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) if e.is::<config::Usage>() => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// `barrage tcp://...` (or `barrage -c 5 tcp://...`, or `barrage 127.0.0.1:7000` which then
/// gets the "no scheme" advice) is `barrage run ...`.
fn with_run_shortcut(argv: &[String]) -> Vec<String> {
    const FIRST: [&str; 7] = ["run", "serve", "demo", "help", "-h", "--help", "-V"];
    let mut v = argv.to_vec();
    let Some(first) = v.get(1) else { return v };
    if FIRST.contains(&first.as_str()) || first == "--version" {
        return v;
    }
    let looks_like_target =
        |a: &String| a.contains("://") || (!a.starts_with('-') && a.contains(':') && a.len() > 2);
    if v[1..].iter().any(looks_like_target) {
        v.insert(1, "run".into());
    }
    v
}

/// Help and version go to stdout with code 0; usage errors are one line plus a hint, code 2.
fn clap_exit(e: clap::Error) -> ExitCode {
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
            eprintln!("{}", one_line(&e.render().to_string()));
            eprintln!("(barrage --help explains every flag)");
            ExitCode::from(2)
        }
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
