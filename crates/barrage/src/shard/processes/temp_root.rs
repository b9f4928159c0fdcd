//! The `--processes` parent's temporary directory, where its children write their `--out`
//! streams: removed when the parent ends however it ends, and, when the parent was killed
//! outright (SIGKILL, OOM killer: no destructor runs), by the next `--processes` run.
//!
//! Key decision: a directory is known to be abandoned by its lock, not by a PID that may
//! have been reused: the parent holds an exclusive lock (`flock`; `LockFileEx` on Windows) on
//! a file beside the directory, `NAME.lock`, while it lives, which the system drops when the
//! process dies, whatever kills it. The lock is a file beside the directory, not the
//! directory itself, because Windows locks files only and renames no directory with an open
//! file in it. The lock file is made and locked first, the directory second, so a directory
//! whose lock file is unlocked belongs to a dead parent. A lock file without a directory (a
//! parent between its two steps, or killed there) is removed only once a minute old and
//! unlocked, and so is a directory without a lock file.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

const PREFIX: &str = "barrage-shards-";
/// How old a lock file without its directory (or a directory without one) must be to be
/// swept.
const GRACE: Duration = Duration::from_secs(60);

/// The directory, with its lock held while this process lives; both removed on drop.
pub struct TempRoot {
    pub path: PathBuf,
    lock_path: PathBuf,
    /// The lock (closed after the directory is removed; held by no child: close-on-exec).
    _lock: File,
}

impl TempRoot {
    /// Removes the directories of killed parents, then makes this run's.
    pub fn create() -> std::io::Result<TempRoot> {
        let base = std::env::temp_dir();
        sweep(&base);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = base.join(format!("{PREFIX}{}-{nanos}", std::process::id()));
        let lock_path = lock_of(&path);
        let lock = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock_path)?;
        if !crate::sys::try_lock(&lock) {
            let _ = std::fs::remove_file(&lock_path);
            return Err(std::io::Error::other("cannot lock it"));
        }
        if let Err(e) = std::fs::create_dir(&path) {
            let _ = std::fs::remove_file(&lock_path);
            return Err(e);
        }
        Ok(TempRoot {
            path,
            lock_path,
            _lock: lock,
        })
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

/// `DIR.lock`, beside `DIR`.
fn lock_of(dir: &Path) -> PathBuf {
    let mut name = dir.as_os_str().to_os_string();
    name.push(".lock");
    PathBuf::from(name)
}

fn older_than_grace(p: &Path) -> bool {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|a| a >= GRACE))
}

/// Removes the children's directories under `base` whose parent is gone (their lock file is
/// unlocked; or missing, and the directory a minute old), with their lock files. Returns how
/// many directories were removed.
pub fn sweep(base: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(base) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !name.starts_with(PREFIX) {
            continue;
        }
        let path = e.path();
        if let Some(dir) = name.strip_suffix(".lock") {
            // A lock file whose directory never came (a parent killed between the two).
            let orphan = !base.join(dir).exists()
                && older_than_grace(&path)
                && File::open(&path).is_ok_and(|f| crate::sys::try_lock(&f));
            if orphan {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        }
        let lock = lock_of(&path);
        // Unlocked: its parent is gone. (The lock taken here goes with `f`.)
        let abandoned = match File::open(&lock) {
            Ok(f) => crate::sys::try_lock(&f),
            Err(_) => older_than_grace(&path),
        };
        if abandoned
            && e.file_type().is_ok_and(|t| t.is_dir())
            && std::fs::remove_dir_all(&path).is_ok()
        {
            let _ = std::fs::remove_file(&lock);
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file's modification time set two minutes back: past the grace.
    fn aged(p: &Path) {
        let old = std::time::SystemTime::now() - 2 * GRACE;
        let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
        f.set_modified(old).unwrap();
    }

    #[test]
    fn a_sweep_removes_the_directories_of_dead_parents_only() {
        let base = tempfile::tempdir().unwrap();
        let b = base.path();
        // A killed parent's: its lock file unlocked (however young), a child's stream in it.
        let dead = b.join(format!("{PREFIX}1-2"));
        std::fs::create_dir_all(dead.join("shard0")).unwrap();
        std::fs::write(dead.join("shard0/seconds.jsonl"), "{}\n").unwrap();
        std::fs::write(lock_of(&dead), "").unwrap();
        // A live parent's: locked, however old.
        let live = b.join(format!("{PREFIX}3-4"));
        std::fs::create_dir(&live).unwrap();
        std::fs::write(lock_of(&live), "").unwrap();
        aged(&lock_of(&live));
        let held = File::open(lock_of(&live)).unwrap();
        assert!(crate::sys::try_lock(&held));
        // A parent between its lock file and its directory (its lock file young, unlocked for
        // a moment), and one killed there a while ago.
        let young = b.join(format!("{PREFIX}5-6"));
        std::fs::write(lock_of(&young), "").unwrap();
        let stale = b.join(format!("{PREFIX}7-8"));
        std::fs::write(lock_of(&stale), "").unwrap();
        aged(&lock_of(&stale));
        // A directory without a lock file, young: kept.
        let bare = b.join(format!("{PREFIX}9-10"));
        std::fs::create_dir(&bare).unwrap();
        // Something else entirely.
        let other = b.join("barrage-serve-7-8");
        std::fs::create_dir(&other).unwrap();
        assert_eq!(sweep(b), 1);
        assert!(!dead.exists() && !lock_of(&dead).exists());
        assert!(live.exists() && other.exists() && bare.exists());
        assert!(lock_of(&young).exists() && !lock_of(&stale).exists());
        drop(held);
        assert_eq!(sweep(b), 1);
        assert!(!live.exists() && !lock_of(&live).exists() && bare.exists());
        assert!(lock_of(&young).exists(), "still within the grace");
    }

    #[test]
    fn a_root_is_locked_while_it_lives_and_gone_after() {
        let root = TempRoot::create().unwrap();
        let (path, lock) = (root.path.clone(), lock_of(&root.path));
        assert!(path.is_dir() && lock.is_file());
        let other = File::open(&lock).unwrap();
        assert!(!crate::sys::try_lock(&other), "held by the live root");
        drop(other);
        drop(root);
        assert!(!path.exists() && !lock.exists());
    }
}
