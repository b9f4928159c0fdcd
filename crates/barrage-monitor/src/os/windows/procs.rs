//! The system's process list: NtQuerySystemInformation(SystemProcessInformation), one call for
//! every process with its parent, creation time, counters and threads (each with its context
//! switches). The documented structures hide most fields as `Reserved`; their layout is
//! stable and is read here by offset (the names are those of the NT headers).

use std::collections::HashMap;
use std::io;

use windows_sys::Wdk::System::SystemInformation::{
    NtQuerySystemInformation, SystemProcessInformation,
};
use windows_sys::Win32::Foundation::STATUS_INFO_LENGTH_MISMATCH;
use windows_sys::Win32::System::WindowsProgramming::{
    SYSTEM_PROCESS_INFORMATION, SYSTEM_THREAD_INFORMATION,
};

/// One process of the list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Entry {
    pub pid: u32,
    /// InheritedFromUniqueProcessId: the creator's pid (which may since have exited, and its
    /// pid been reused: compare creation times).
    pub ppid: u32,
    /// 100 ns ticks since 1601.
    pub created: u64,
    pub user_ns: u64,
    pub sys_ns: u64,
    pub working_set: u64,
    pub peak_working_set: u64,
    pub private: u64,
    pub handles: u64,
    /// (thread id, context switches so far)
    pub threads: Vec<(u32, u32)>,
}

/// The list, by pid. `buf` is reused (and grown) from call to call.
pub(crate) fn list(buf: &mut Vec<u64>) -> io::Result<HashMap<u32, Entry>> {
    if buf.is_empty() {
        buf.resize(64 * 1024, 0);
    }
    for _ in 0..8 {
        let bytes = (buf.len() * 8).min(u32::MAX as usize) as u32;
        let mut needed = 0u32;
        // SAFETY: buf is writable for `bytes` bytes; needed is a writable u32.
        let status = unsafe {
            NtQuerySystemInformation(
                SystemProcessInformation,
                buf.as_mut_ptr().cast(),
                bytes,
                &mut needed,
            )
        };
        if status == STATUS_INFO_LENGTH_MISMATCH {
            // Processes come and go between two calls: some room to spare.
            let want = (needed as usize).max(bytes as usize * 2) + 16 * 1024;
            buf.resize(want.div_ceil(8), 0);
            continue;
        }
        if status < 0 {
            return Err(io::Error::other(format!(
                "NtQuerySystemInformation: status {status:#x}"
            )));
        }
        let used = (needed as usize).min(bytes as usize);
        // SAFETY: the first `used` bytes of buf were written by the call; u64s are plain bytes.
        let data = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), used) };
        return Ok(parse(data));
    }
    Err(io::Error::other("the process list kept growing"))
}

/// Walks the list's entries (each followed by its threads), within `data`'s bounds.
fn parse(data: &[u8]) -> HashMap<u32, Entry> {
    const P: usize = size_of::<SYSTEM_PROCESS_INFORMATION>();
    const T: usize = size_of::<SYSTEM_THREAD_INFORMATION>();
    let mut out = HashMap::new();
    let mut at = 0usize;
    while at + P <= data.len() {
        // SAFETY: P bytes at `at` are inside data; read_unaligned needs no alignment.
        let p = unsafe {
            data.as_ptr()
                .add(at)
                .cast::<SYSTEM_PROCESS_INFORMATION>()
                .read_unaligned()
        };
        let r = &p.Reserved1;
        let word = |i: usize| u64::from_ne_bytes(r[i..i + 8].try_into().unwrap_or([0; 8]));
        // Reserved1: WorkingSetPrivateSize, HardFaultCount, NumberOfThreadsHighWatermark,
        // CycleTime, CreateTime, UserTime, KernelTime.
        let mut e = Entry {
            pid: p.UniqueProcessId as usize as u32,
            ppid: p.Reserved2 as usize as u32,
            created: word(24),
            user_ns: word(32).saturating_mul(100),
            sys_ns: word(40).saturating_mul(100),
            working_set: p.WorkingSetSize as u64,
            peak_working_set: p.PeakWorkingSetSize as u64,
            // The commit charge: PrivatePageCount on Windows too, but wine fills only this.
            private: (p.PagefileUsage as u64).max(p.PrivatePageCount as u64),
            handles: p.HandleCount.into(),
            threads: Vec::with_capacity(p.NumberOfThreads as usize),
        };
        for i in 0..p.NumberOfThreads as usize {
            let t_at = at + P + i * T;
            if t_at + T > data.len() {
                break;
            }
            // SAFETY: T bytes at t_at are inside data; read_unaligned needs no alignment.
            let t = unsafe {
                data.as_ptr()
                    .add(t_at)
                    .cast::<SYSTEM_THREAD_INFORMATION>()
                    .read_unaligned()
            };
            // Reserved3: ContextSwitches.
            e.threads
                .push((t.ClientId.UniqueThread as usize as u32, t.Reserved3));
        }
        out.insert(e.pid, e);
        match p.NextEntryOffset {
            0 => break,
            n => at += n as usize,
        }
    }
    out
}

/// Every live descendant of `root` (created at `created`): processes whose creator is in the
/// tree and which were created after it (an older process naming the same parent pid had a
/// parent that exited and whose pid was reused).
pub(crate) fn descendants(list: &HashMap<u32, Entry>, root: u32, created: u64) -> Vec<&Entry> {
    let mut by_parent: HashMap<u32, Vec<&Entry>> = HashMap::new();
    for e in list.values() {
        if e.pid != 0 && e.pid != e.ppid {
            by_parent.entry(e.ppid).or_default().push(e);
        }
    }
    let mut out = Vec::new();
    let mut queue = vec![(root, created)];
    while let Some((pid, born)) = queue.pop() {
        for &kid in by_parent.get(&pid).into_iter().flatten() {
            if kid.created >= born
                && kid.pid != root
                && !out.iter().any(|o: &&Entry| o.pid == kid.pid)
            {
                out.push(kid);
                queue.push((kid.pid, kid.created));
            }
        }
    }
    out.sort_unstable_by_key(|e| e.pid);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: u32, ppid: u32, created: u64) -> Entry {
        Entry {
            pid,
            ppid,
            created,
            ..Entry::default()
        }
    }

    #[test]
    fn descendants_by_creator_and_creation_time() {
        let list: HashMap<u32, Entry> = [
            entry(10, 1, 100),
            entry(11, 10, 110),
            entry(12, 11, 120),
            // Names 10 as its creator but is older: an earlier process 10's child.
            entry(13, 10, 50),
            entry(14, 99, 130),
        ]
        .into_iter()
        .map(|e| (e.pid, e))
        .collect();
        let pids: Vec<u32> = descendants(&list, 10, 100).iter().map(|e| e.pid).collect();
        assert_eq!(pids, [11, 12]);
        assert!(descendants(&list, 12, 120).is_empty());
    }

    #[test]
    fn the_list_has_this_process_and_its_threads() {
        let list = list(&mut Vec::new()).unwrap();
        let me = list.get(&std::process::id()).expect("listed");
        assert!(me.created > 0 && me.working_set > 0);
        assert!(!me.threads.is_empty(), "{me:?}");
    }
}
