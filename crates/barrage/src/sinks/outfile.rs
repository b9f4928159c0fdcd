//! Output files named on the command line (`--json`, `--report`): checked before any load, so
//! that a path that cannot be written fails in a second, not after a ten-minute run.
//!
//! The check never destroys anything: an existing file is opened for writing without being
//! truncated, a missing one is created and removed again (the only sure test of permission).
//! The file itself is written at the end.

use crate::usage::Usage;
use std::fs::OpenOptions;
use std::io::ErrorKind;
use std::path::Path;

/// `Ok` when `path` can be written as a result file; the error names `flag` and the path.
pub fn check_writable(flag: &str, path: &str) -> Result<(), Usage> {
    let p = Path::new(path);
    let bad = |why: String| Usage::value(flag, path, why);
    match std::fs::metadata(p) {
        Ok(m) if m.is_dir() => Err(bad("is a directory; give a file name".into())),
        Ok(_) if crate::sys::kernel_file(p) => Err(bad(
            "is a file of the kernel (/proc, /sys), not a place for results; give another path"
                .into(),
        )),
        Ok(_) => OpenOptions::new()
            .write(true)
            .open(p)
            .map(drop)
            .map_err(|e| bad(format!("cannot write the file: {}", reason(&e)))),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            let dir = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if !dir.is_dir() {
                return Err(bad(format!(
                    "the directory {} does not exist; create it first",
                    dir.display()
                )));
            }
            match OpenOptions::new().write(true).create_new(true).open(p) {
                Ok(_) => {
                    let _ = std::fs::remove_file(p);
                    Ok(())
                }
                Err(e) => Err(bad(format!("cannot create the file: {}", reason(&e)))),
            }
        }
        Err(e) => Err(bad(reason(&e))),
    }
}

/// The OS error in words, without the "(os error N)" that the words already say.
fn reason(e: &std::io::Error) -> String {
    match e.kind() {
        ErrorKind::NotFound => "no such file or directory".into(),
        ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// Says on stderr that `path` was written, and how big it is (`wrote report.html (86.2 KiB)`);
/// a directory by its files (`wrote run/ (3 files, 1.20 MiB)`). Nothing for `-` (stdout) or a
/// path that is not there.
pub fn announce(path: &Path) {
    if path.as_os_str() == "-" {
        return;
    }
    let Ok(m) = std::fs::metadata(path) else {
        return;
    };
    let what = if m.is_dir() {
        let files: Vec<u64> = std::fs::read_dir(path)
            .map(|d| {
                d.filter_map(|e| e.ok()?.metadata().ok())
                    .filter(|m| m.is_file())
                    .map(|m| m.len())
                    .collect()
            })
            .unwrap_or_default();
        format!(
            "{}/ ({} file{}, {})",
            path.display().to_string().trim_end_matches('/'),
            files.len(),
            if files.len() == 1 { "" } else { "s" },
            barrage_report::fmt::bytes(files.iter().sum::<u64>() as f64)
        )
    } else {
        format!(
            "{} ({})",
            path.display(),
            barrage_report::fmt::bytes(m.len() as f64)
        )
    };
    crate::sys::err_line(format_args!("wrote {what}"));
}

/// A result rendered as `format` to `path` (`-`: stdout, where a reader that went away ends the
/// output quietly).
pub fn write(
    r: &barrage_metrics::RunResult,
    path: &str,
    format: barrage_report::Format,
) -> anyhow::Result<()> {
    if path == "-" {
        // Rendered first, so that a reader that goes away (`| head`) ends the output quietly:
        // a closed pipe is the reader's choice, not an error.
        let mut text = Vec::new();
        barrage_report::render(r, format, &mut text)?;
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(&text).and_then(|()| out.flush()) {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                return Err(
                    anyhow::Error::new(e).context("-o -: cannot write the report to stdout")
                );
            }
        }
        return Ok(());
    }
    barrage_report::save(r, format, path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_file_is_checked_without_being_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("old.json");
        std::fs::write(&f, b"keep me").unwrap();
        check_writable("--json", f.to_str().unwrap()).unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"keep me");
        let new = dir.path().join("new.json");
        check_writable("--json", new.to_str().unwrap()).unwrap();
        assert!(!new.exists(), "the probe file must be removed");
    }

    #[test]
    fn missing_directory_proc_file_and_directory_are_refused() {
        let e = check_writable("--report", "/nonexistent-dir/r.md").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--report /nonexistent-dir/r.md: the directory"),
            "{e}"
        );
        let tmp = std::env::temp_dir();
        let e = check_writable("--json", tmp.to_str().unwrap()).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        if cfg!(target_os = "linux") && Path::new("/proc/version").exists() {
            let e = check_writable("--json", "/proc/version").unwrap_err();
            assert!(e.to_string().starts_with("--json /proc/version: "), "{e}");
        }
    }
}
