//! A test that needs a program this machine lacks is skipped here, and passes, with
//! `skipped: WHAT not installed` on its output; under `CI` it fails instead (`.ci/run`
//! installs everything). Every skip is also appended to `target/tmp/skipped.tsv`, which
//! `cargo xtask test` (the README's test command) lists at its end with the one command that
//! installs what is missing, so a green run cannot hide its skips. Shared by every crate's
//! test binary (included by `#[path]`).

/// `true` when `present`; otherwise the test is skipped (`false`), or fails under CI.
pub fn available(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{what} is not installed, and CI is set: .ci/run must install it");
    }
    println!("skipped: {what} not installed");
    record(what);
    false
}

/// What is missing of `parts` (a name and whether it is there), for a message that names
/// exactly that: `node_modules of tests/browser (npm ci)`, not everything the test needs.
#[allow(dead_code)] // not every test binary has a test of several parts
pub fn missing(parts: &[(&str, bool)]) -> String {
    let names: Vec<&str> = parts.iter().filter(|p| !p.1).map(|p| p.0).collect();
    names.join(" and ")
}

/// `tests/browser/SCRIPT` when the headless-Chromium tests can run here (node, Debian's
/// Chromium, and playwright-core from `npm ci` in tests/browser); skipped (or failing under CI)
/// naming exactly what is missing otherwise.
#[allow(dead_code)] // only the binaries with browser tests call it
pub fn browser(script: &str) -> Option<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/browser");
    let parts = [
        (
            "node",
            std::process::Command::new("node")
                .arg("--version")
                .output()
                .is_ok(),
        ),
        (
            "/usr/bin/chromium",
            std::path::Path::new("/usr/bin/chromium").exists(),
        ),
        (
            "tests/browser/node_modules (npm ci)",
            dir.join("node_modules/playwright-core").exists(),
        ),
    ];
    available(&missing(&parts), parts.iter().all(|p| p.1)).then(|| dir.join(script))
}

/// `true` when the slow, optional tests that `cargo xtask test FLAG` turns on (by setting
/// `ENV`) were asked for, or under `CI` (which runs everything); otherwise the test is skipped,
/// and listed by `cargo xtask test` as left out unless asked, not as a missing program.
#[allow(dead_code)] // only the binary's wine tests call it
pub fn asked(flag: &str, env: &str, what: &str) -> bool {
    if std::env::var_os("CI").is_some() || std::env::var_os(env).is_some_and(|v| !v.is_empty()) {
        return true;
    }
    println!("skipped: {what} runs only when asked (`cargo xtask test {flag}`; CI runs it)");
    record(flag);
    false
}

fn record(what: &str) {
    use std::io::Write as _;
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let _ = std::fs::create_dir_all(dir);
    // One write per line, appended: lines from tests running at once do not interleave.
    let line = format!("{}\t{what}\t{test}\n", env!("CARGO_PKG_NAME"));
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("skipped.tsv"))
    {
        let _ = f.write_all(line.as_bytes());
    }
}
