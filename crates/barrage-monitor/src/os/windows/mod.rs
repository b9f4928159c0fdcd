//! The Windows backend, on windows-sys: a process is held by an open handle (so its pid cannot
//! name another process while it is monitored) and read with GetProcessTimes,
//! GetProcessMemoryInfo and GetProcessHandleCount; its threads, context switches and children
//! come from the system's process list (`procs.rs`); the machine from `host.rs`; TCP sockets
//! from the IP helper's tables, by owning pid (`tcp.rs`); `spawn.rs` runs a server in a job.
//!
//! Units: FILETIME-style counters are 100 ns ticks, converted exactly (× 100) to ns.

mod host;
mod procs;
pub(crate) mod spawn;
mod tcp;

use std::collections::HashMap;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::time::Duration;

use windows_sys::Wdk::System::Threading::{
    NtQueryInformationProcess, ProcessCommandLineInformation,
};
use windows_sys::Win32::Foundation::{FILETIME, HANDLE, UNICODE_STRING, WAIT_OBJECT_0};
use windows_sys::Win32::System::ProcessStatus::{
    K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS, PROCESS_MEMORY_COUNTERS_EX,
};
use windows_sys::Win32::System::Threading::{
    GetActiveProcessorCount, GetCurrentThread, GetCurrentThreadId, GetProcessHandleCount,
    GetProcessTimes, GetThreadTimes, OpenProcess, QueryFullProcessImageNameW, WaitForSingleObject,
    ALL_PROCESSOR_GROUPS, PROCESS_NAME_WIN32, PROCESS_QUERY_LIMITED_INFORMATION,
    PROCESS_SYNCHRONIZE, PROCESS_VM_READ,
};

use crate::os::ProcReading;
use procs::Entry;

pub(crate) use host::{host_levels, read_host};
pub(crate) use tcp::{listener_pid, TcpCounter};

/// Whether this process runs under wine (whose ntdll exports `wine_get_version`).
pub(crate) fn under_wine() -> bool {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleA, GetProcAddress};
    // SAFETY: a NUL-terminated module name; ntdll is loaded in every process.
    let ntdll = unsafe { GetModuleHandleA(c"ntdll.dll".as_ptr().cast()) };
    // SAFETY: a module handle (null is refused by the check) and a NUL-terminated name.
    !ntdll.is_null()
        && unsafe { GetProcAddress(ntdll, c"wine_get_version".as_ptr().cast()) }.is_some()
}

pub(crate) const SUPPORTED: bool = true;
pub(crate) const HOST_SOURCE: &str =
    "NtQuerySystemInformation(SystemProcessorPerformanceInformation)";

/// Buffers reused from one reading to the next (8-byte aligned, for the NT structures).
#[derive(Default)]
pub(crate) struct Scratch {
    buf: Vec<u64>,
}

/// The counters one process handle gives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counters {
    user_ns: u64,
    sys_ns: u64,
    working_set: u64,
    peak_working_set: u64,
    private: u64,
    /// `None`: GetProcessHandleCount failed.
    handles: Option<u64>,
}

/// A monitored process: an open handle to it (which keeps its pid from being reused) and, with
/// children, what its descendants used so far.
pub(crate) struct Process {
    pid: u32,
    handle: OwnedHandle,
    /// Creation time, 100 ns since 1601: a child is created after its parent.
    created: u64,
    /// Each descendant's last CPU reading, by (pid, creation time).
    children: HashMap<(u32, u64), (u64, u64)>,
    /// CPU of descendants that exited since monitoring began: kept in the tree's total, so
    /// that it stays continuous (Windows has no `cutime`); each loses only its last interval.
    exited: (u64, u64),
}

impl Process {
    /// `None`: no such process, it exited, or it may not be opened (a protected process).
    pub fn open(pid: u32, _s: &mut Scratch) -> Option<Process> {
        let handle = open(pid)?;
        if exited(&handle) {
            return None;
        }
        let created = times(&handle).map_or(0, |t| t.0);
        Some(Process {
            pid,
            handle,
            created,
            children: HashMap::new(),
            exited: (0, 0),
        })
    }

    /// Its command line (NtQueryInformationProcess), or else its image's path.
    pub fn command(&self, _s: &mut Scratch) -> String {
        command_line(&self.handle)
            .or_else(|| image_name(&self.handle))
            .unwrap_or_else(|| format!("[pid {}]", self.pid))
    }

    /// A reading of the process (and its descendants); `None`: it exited.
    ///
    /// Counters come from the system's process list (one call for the whole tree, and under
    /// wine the only source of another process's CPU time and handle count); should the list
    /// fail, or not show the process, from its handle (children are then not found).
    pub fn read(
        &mut self,
        include_children: bool,
        with_sockets: bool,
        s: &mut Scratch,
    ) -> Option<ProcReading> {
        if exited(&self.handle) {
            return None;
        }
        let list = procs::list(&mut s.buf).unwrap_or_default();
        let listed = list
            .get(&self.pid)
            .filter(|e| e.created == self.created || self.created == 0);
        let root = listed.map_or_else(|| counters(&self.handle), from_list);
        let mut r = ProcReading {
            fds_readable: root.handles.is_some(),
            hwm_bytes: root.peak_working_set,
            ..ProcReading::default()
        };
        add(&mut r, &root);
        if let Some(e) = listed {
            add_threads(&mut r, e);
        }
        r.sockets.insert(self.pid.into());
        if include_children {
            let mut seen = HashMap::new();
            for child in procs::descendants(&list, self.pid, self.created) {
                add(&mut r, &from_list(child));
                add_threads(&mut r, child);
                r.children += 1;
                r.sockets.insert(child.pid.into());
                seen.insert((child.pid, child.created), (child.user_ns, child.sys_ns));
            }
            for (key, (user, sys)) in &self.children {
                if !seen.contains_key(key) {
                    self.exited.0 += user;
                    self.exited.1 += sys;
                }
            }
            self.children = seen;
            r.user_ns += self.exited.0;
            r.sys_ns += self.exited.1;
        }
        if !with_sockets {
            r.sockets.clear();
        }
        // It may have exited while being read: a half reading would show a false drop.
        (!exited(&self.handle)).then_some(r)
    }
}

fn add(r: &mut ProcReading, c: &Counters) {
    r.user_ns += c.user_ns;
    r.sys_ns += c.sys_ns;
    r.rss_bytes += c.working_set;
    r.private_bytes += c.private;
    r.fds += c.handles.unwrap_or(0);
}

/// Threads, and each thread's context switches (all in `voluntary`: Windows does not split
/// them).
fn add_threads(r: &mut ProcReading, e: &Entry) {
    r.threads += e.threads.len() as u64;
    for &(tid, switches) in &e.threads {
        r.ctx.insert(tid, (switches.into(), 0));
    }
}

fn from_list(e: &Entry) -> Counters {
    Counters {
        user_ns: e.user_ns,
        sys_ns: e.sys_ns,
        working_set: e.working_set,
        peak_working_set: e.peak_working_set,
        private: e.private,
        handles: Some(e.handles),
    }
}

/// A handle for reading `pid` and waiting on it (memory counters want PROCESS_VM_READ on old
/// systems: asked for, and done without when refused).
fn open(pid: u32) -> Option<OwnedHandle> {
    let base = PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_SYNCHRONIZE;
    for access in [base | PROCESS_VM_READ, base] {
        // SAFETY: OpenProcess has no memory-safety preconditions; a null result is a failure.
        let h = unsafe { OpenProcess(access, 0, pid) };
        if !h.is_null() {
            // SAFETY: h is a fresh process handle that nothing else owns.
            return Some(unsafe { OwnedHandle::from_raw_handle(h) });
        }
    }
    None
}

fn raw(h: &OwnedHandle) -> HANDLE {
    h.as_raw_handle()
}

/// Whether the process has exited (its handle is signalled).
fn exited(h: &OwnedHandle) -> bool {
    // SAFETY: a valid process handle opened with SYNCHRONIZE; a 0 ms wait does not block.
    unsafe { WaitForSingleObject(raw(h), 0) == WAIT_OBJECT_0 }
}

/// 100 ns ticks of a FILETIME.
fn ticks(f: FILETIME) -> u64 {
    (u64::from(f.dwHighDateTime) << 32) | u64::from(f.dwLowDateTime)
}

/// (creation time in 100 ns ticks since 1601, user ns, kernel ns)
fn times(h: &OwnedHandle) -> Option<(u64, u64, u64)> {
    let mut t = [FILETIME::default(); 4];
    let [c, e, k, u] = &mut t;
    // SAFETY: a valid process handle and four writable FILETIMEs.
    let ok = unsafe { GetProcessTimes(raw(h), c, e, k, u) } != 0;
    ok.then(|| (ticks(t[0]), ticks(t[3]) * 100, ticks(t[2]) * 100))
}

/// Every counter of one process handle; a call that fails leaves its fields 0.
fn counters(h: &OwnedHandle) -> Counters {
    let mut c = Counters::default();
    if let Some((_, user, sys)) = times(h) {
        (c.user_ns, c.sys_ns) = (user, sys);
    }
    let mut m = PROCESS_MEMORY_COUNTERS_EX {
        cb: size_of::<PROCESS_MEMORY_COUNTERS_EX>() as u32,
        ..Default::default()
    };
    let p = (&mut m as *mut PROCESS_MEMORY_COUNTERS_EX).cast::<PROCESS_MEMORY_COUNTERS>();
    // SAFETY: p points to a writable PROCESS_MEMORY_COUNTERS_EX whose size is passed as cb.
    if unsafe { K32GetProcessMemoryInfo(raw(h), p, m.cb) } != 0 {
        c.working_set = m.WorkingSetSize as u64;
        c.peak_working_set = m.PeakWorkingSetSize as u64;
        // The same figure (the commit charge); wine fills only PagefileUsage.
        c.private = (m.PrivateUsage as u64).max(m.PagefileUsage as u64);
    }
    let mut n = 0u32;
    // SAFETY: a valid process handle and a writable u32.
    if unsafe { GetProcessHandleCount(raw(h), &mut n) } != 0 {
        c.handles = Some(n.into());
    }
    c
}

/// The process's command line (Windows 8.1 and later).
fn command_line(h: &OwnedHandle) -> Option<String> {
    let mut buf = vec![0u64; 512];
    for _ in 0..3 {
        let bytes = (buf.len() * 8) as u32;
        let mut needed = 0u32;
        // SAFETY: buf is writable for `bytes` bytes; needed is a writable u32.
        let status = unsafe {
            NtQueryInformationProcess(
                raw(h),
                ProcessCommandLineInformation,
                buf.as_mut_ptr().cast(),
                bytes,
                &mut needed,
            )
        };
        if status >= 0 {
            // SAFETY: on success the buffer starts with a UNICODE_STRING (8-byte aligned).
            let us = unsafe { buf.as_ptr().cast::<UNICODE_STRING>().read() };
            let start = buf.as_ptr() as usize;
            let at = us.Buffer as usize;
            let len = usize::from(us.Length) / 2;
            // The text lies inside our buffer; anything else is not trusted.
            if us.Buffer.is_null() || at < start || at + len * 2 > start + bytes as usize {
                return None;
            }
            // SAFETY: checked above: `len` u16s at `at`, inside buf.
            let text = unsafe { std::slice::from_raw_parts(us.Buffer, len) };
            let s = String::from_utf16_lossy(text).trim().to_string();
            return (!s.is_empty()).then_some(s);
        }
        if needed as usize <= buf.len() * 8 {
            return None;
        }
        buf = vec![0u64; (needed as usize).div_ceil(8) + 8];
    }
    None
}

/// The full path of the process's image.
fn image_name(h: &OwnedHandle) -> Option<String> {
    let mut buf = vec![0u16; 32 * 1024];
    let mut len = buf.len() as u32;
    // SAFETY: buf is writable for `len` u16s; len is a writable u32.
    let ok = unsafe {
        QueryFullProcessImageNameW(raw(h), PROCESS_NAME_WIN32, buf.as_mut_ptr(), &mut len)
    };
    (ok != 0 && len > 0).then(|| String::from_utf16_lossy(&buf[..len as usize]))
}

/// The warning for a process whose handle count cannot be read.
pub(crate) fn fds_warning(pid: u32) -> String {
    format!("pid {pid}: its handle count cannot be read, so its fds read 0")
}

/// Logical processors in every processor group.
pub(crate) fn online_cores() -> usize {
    // SAFETY: no preconditions.
    let n = unsafe { GetActiveProcessorCount(ALL_PROCESSOR_GROUPS) };
    if n > 0 {
        return n as usize;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// CPU time used so far by the calling thread (user + kernel, 100 ns resolution).
pub(crate) fn thread_cpu_time() -> Duration {
    let mut t = [FILETIME::default(); 4];
    let [c, e, k, u] = &mut t;
    // SAFETY: GetCurrentThread is a pseudo-handle, always valid; four writable FILETIMEs.
    if unsafe { GetThreadTimes(GetCurrentThread(), c, e, k, u) } != 0 {
        return Duration::from_nanos((ticks(t[2]) + ticks(t[3])) * 100);
    }
    Duration::ZERO
}

/// The calling thread's id.
pub(crate) fn thread_id() -> u32 {
    // SAFETY: no preconditions.
    unsafe { GetCurrentThreadId() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filetimes_are_100_ns_ticks() {
        let f = FILETIME {
            dwLowDateTime: 5,
            dwHighDateTime: 1,
        };
        assert_eq!(ticks(f), (1 << 32) + 5);
    }

    #[test]
    fn reads_this_process() {
        let mut s = Scratch::default();
        let mut p = Process::open(std::process::id(), &mut s).expect("opens itself");
        assert!(p.created > 0);
        let r = p.read(false, true, &mut s).expect("a reading");
        assert!(r.rss_bytes > 0 && r.fds > 0 && r.fds_readable, "{r:?}");
        assert!(r.hwm_bytes >= r.rss_bytes && r.private_bytes > 0, "{r:?}");
        assert!(r.sockets.contains(&u64::from(std::process::id())));
        assert!(!p.command(&mut s).is_empty());
        assert!(Process::open(u32::MAX - 3, &mut s).is_none());
    }
}
