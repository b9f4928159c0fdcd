//! `alone`: a test that needs its process to itself, run in a child process of the test binary.
//! Shared by the engine's and the servers' test binaries (the engine's includes this file with
//! `#[path]`).

/// Runs a test that needs this process to itself (it lowers the descriptor limit, counts the
/// process's threads or sets a process-wide flag) alone, in a child process of this test binary.
/// Call it first thing with `module_path!()` and the test's function name: it returns true in
/// that child, where the caller goes on with the test body, and false in this process once the
/// child passed (it panics with the child's output when the child failed or ran no test).
pub fn alone(module: &str, test: &str) -> bool {
    const VAR: &str = "BARRAGE_TEST_ALONE";
    // libtest names a test by its path without the crate: `it::shutdown` -> `shutdown::NAME`.
    let module = module.split_once("::").map_or(module, |(_, rest)| rest);
    let name = format!("{module}::{test}");
    if std::env::var(VAR).is_ok_and(|v| v == name) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args([
            name.as_str(),
            "--exact",
            "--test-threads",
            "1",
            "--nocapture",
        ])
        .env(VAR, &name)
        .output()
        .expect("the test binary runs again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{name} alone in a child process failed:\n{text}"
    );
    assert!(
        text.contains("1 passed"),
        "{name} did not run in the child process:\n{text}"
    );
    false
}
