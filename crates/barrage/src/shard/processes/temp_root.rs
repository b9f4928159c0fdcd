//! The `--processes` parent's temporary directory, where its children write their `--out`
//! streams: removed when the parent ends however it ends, and, when the parent was killed
//! outright (SIGKILL, OOM killer: no destructor runs), by the next `--processes` run.
//!
//! Key decision: a directory is known to be abandoned by its lock, not by a PID that may
//! have been reused: the parent holds an exclusive `flock` on the directory while it lives,
//! which the kernel drops when the process dies, whatever kills it. The directory is made
//! and locked under a name the sweep ignores, then renamed (the lock stays with the inode),
//! so a sweep never sees an unlocked directory of a live parent.

use std::fs::File;
use std::path::{Path, PathBuf};

const PREFIX: &str = "barrage-shards-";
const MAKING: &str = "barrage-making-shards-";

/// The directory, locked while this process lives; removed on drop.
pub struct TempRoot {
    pub path: PathBuf,
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
        let name = format!("{}-{nanos}", std::process::id());
        let making = base.join(format!("{MAKING}{name}"));
        std::fs::create_dir(&making)?;
        let lock = File::open(&making)?;
        if !crate::sys::try_lock(&lock) {
            let _ = std::fs::remove_dir(&making);
            return Err(std::io::Error::other("cannot lock it"));
        }
        let path = base.join(format!("{PREFIX}{name}"));
        if let Err(e) = std::fs::rename(&making, &path) {
            let _ = std::fs::remove_dir(&making);
            return Err(e);
        }
        Ok(TempRoot { path, _lock: lock })
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Removes the children's directories under `base` whose parent is gone (no lock held on
/// them); a directory still being made, killed before its rename, goes after a minute.
/// Returns how many were removed.
pub fn sweep(base: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(base) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let path = e.path();
        let abandoned = if name.starts_with(PREFIX) {
            // Its lock is free: its parent is gone. (The lock taken here goes with `f`.)
            File::open(&path).is_ok_and(|f| crate::sys::try_lock(&f))
        } else if name.starts_with(MAKING) {
            e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|a| a.as_secs() >= 60))
        } else {
            false
        };
        if abandoned
            && e.file_type().is_ok_and(|t| t.is_dir())
            && std::fs::remove_dir_all(&path).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_removes_the_directories_of_dead_parents_only() {
        let base = tempfile::tempdir().unwrap();
        let b = base.path();
        // A killed parent's: unlocked, with a child's stream in it.
        let dead = b.join(format!("{PREFIX}1-2"));
        std::fs::create_dir_all(dead.join("shard0")).unwrap();
        std::fs::write(dead.join("shard0/seconds.jsonl"), "{}\n").unwrap();
        // A live parent's: locked.
        let live = b.join(format!("{PREFIX}3-4"));
        std::fs::create_dir(&live).unwrap();
        let held = File::open(&live).unwrap();
        assert!(crate::sys::try_lock(&held));
        // One being made right now, and something else entirely.
        let making = b.join(format!("{MAKING}5-6"));
        std::fs::create_dir(&making).unwrap();
        let other = b.join("barrage-serve-7-8");
        std::fs::create_dir(&other).unwrap();
        assert_eq!(sweep(b), 1);
        assert!(!dead.exists());
        assert!(live.exists() && making.exists() && other.exists());
        drop(held);
        assert_eq!(sweep(b), 1);
        assert!(!live.exists());
    }
}
