//! `cargo xtask ci`: runs exactly what `.ci/run` runs after its install steps.
use std::process::{exit, Command};

fn main() {
    let task = std::env::args().nth(1).unwrap_or_default();
    if task != "ci" {
        eprintln!("usage: cargo xtask ci");
        exit(2);
    }
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let status = Command::new("bash")
        .arg(format!("{root}/.ci/test"))
        .status()
        .unwrap_or_else(|e| {
            eprintln!("xtask: cannot run .ci/test: {e}");
            exit(1)
        });
    exit(status.code().unwrap_or(1));
}
