//! barrage: stress-test network servers. The binary turns arguments into a plan, runs it and
//! writes the results; every step is one call below.

mod cli;
mod config;
mod demo;
mod live;
mod run;
mod serve;
mod sys;
mod units;

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

/// `barrage tcp://...` is `barrage run tcp://...`.
fn with_run_shortcut(argv: &[String]) -> Vec<String> {
    let mut v = argv.to_vec();
    if v.get(1).is_some_and(|a| a.contains("://")) {
        v.insert(1, "run".into());
    }
    v
}

/// Help and version go to stdout with code 0; usage errors are one line plus a hint, code 2.
fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        _ => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("error: bad usage");
            eprintln!("{first}");
            eprintln!("(barrage --help explains every flag)");
            ExitCode::from(2)
        }
    }
}
