//! The Windows side of `sys`: console control events for signals, a kill-on-close job for
//! children, Win32 for the machine's description and this process's CPU time.

use super::stop_signal_seen;
use crate::usage::Usage;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use windows_sys::Win32::Foundation::{FILETIME, HANDLE};
use windows_sys::Win32::System::Console as con;
use windows_sys::Win32::System::Threading as th;

/// A Windows process has no open-file limit to raise (handles run to about 16 million).
pub fn ensure_fds(_needed: u64, _flag: &str) -> Result<(), Usage> {
    Ok(())
}

pub fn nofile_hard() -> u64 {
    u64::MAX
}

/// `Windows 10.0.19045`.
pub fn kernel() -> String {
    use windows_sys::Wdk::System::SystemServices::RtlGetVersion;
    use windows_sys::Win32::System::SystemInformation::OSVERSIONINFOW;
    // SAFETY: a zeroed OSVERSIONINFOW with its size set is what RtlGetVersion fills.
    let mut v: OSVERSIONINFOW = unsafe { std::mem::zeroed() };
    v.dwOSVersionInfoSize = std::mem::size_of::<OSVERSIONINFOW>() as u32;
    // SAFETY: `v` is a valid, sized out-parameter.
    if unsafe { RtlGetVersion(&mut v) } == 0 {
        format!(
            "Windows {}.{}.{}",
            v.dwMajorVersion, v.dwMinorVersion, v.dwBuildNumber
        )
    } else {
        "Windows".to_string()
    }
}

/// Wine's version when this process runs under wine, which says so through ntdll's
/// `wine_get_version`.
pub fn wine_version() -> Option<String> {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleA, GetProcAddress};
    // SAFETY: NUL-terminated names; ntdll is loaded in every process; the function, when
    // present, takes nothing and returns a static NUL-terminated string.
    unsafe {
        let ntdll = GetModuleHandleA(c"ntdll.dll".as_ptr().cast());
        if ntdll.is_null() {
            return None;
        }
        let f = GetProcAddress(ntdll, c"wine_get_version".as_ptr().cast())?;
        let f: extern "C" fn() -> *const std::ffi::c_char = std::mem::transmute(f);
        let p = f();
        (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
    }
}

pub fn hostname() -> String {
    std::env::var("COMPUTERNAME").unwrap_or_default()
}

/// This boot of this machine: its boot time as the kernel keeps it (100 ns units), the same
/// for every process, so that processes of one run on one host are known to share a clock.
pub fn boot_id() -> String {
    use windows_sys::Wdk::System::SystemInformation::{
        NtQuerySystemInformation, SystemTimeOfDayInformation,
    };
    /// SYSTEM_TIMEOFDAY_INFORMATION (48 bytes); only the boot time is read.
    #[repr(C)]
    struct TimeOfDay {
        boot_time: i64,
        rest: [u8; 40],
    }
    let mut t = TimeOfDay {
        boot_time: 0,
        rest: [0; 40],
    };
    let mut len = 0u32;
    // SAFETY: a buffer of the class's size, owned here, and a valid length out-parameter.
    let status = unsafe {
        NtQuerySystemInformation(
            SystemTimeOfDayInformation,
            (&mut t as *mut TimeOfDay).cast(),
            std::mem::size_of::<TimeOfDay>() as u32,
            &mut len,
        )
    };
    if status != 0 || t.boot_time == 0 {
        return String::new();
    }
    format!("windows-boot-{}", t.boot_time)
}

pub fn cpu_model() -> String {
    use windows_sys::Win32::System::Registry::{RegGetValueW, HKEY_LOCAL_MACHINE, RRF_RT_REG_SZ};
    let wide = |s: &str| s.encode_utf16().chain([0]).collect::<Vec<u16>>();
    let (key, value) = (
        wide(r"HARDWARE\DESCRIPTION\System\CentralProcessor\0"),
        wide("ProcessorNameString"),
    );
    let mut buf = [0u16; 256];
    let mut len = (buf.len() * 2) as u32;
    // SAFETY: NUL-terminated key and value names; `buf` holds `len` bytes.
    let rc = unsafe {
        RegGetValueW(
            HKEY_LOCAL_MACHINE,
            key.as_ptr(),
            value.as_ptr(),
            RRF_RT_REG_SZ,
            std::ptr::null_mut(),
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return String::new();
    }
    let n = (len as usize / 2).min(buf.len());
    String::from_utf16_lossy(&buf[..n])
        .trim_end_matches('\0')
        .trim()
        .to_string()
}

/// Windows does not say how far its clock may be off: it counts as unsynchronized.
pub fn clock_state(_rec: &mut barrage_metrics::result::ClockRecord) {}

static FLAGS: OnceLock<(Arc<AtomicBool>, Arc<AtomicBool>)> = OnceLock::new();

/// Runs on a thread Windows starts for each console event.
unsafe extern "system" fn on_console_event(event: u32) -> windows_sys::core::BOOL {
    let Some((stop, signalled)) = FLAGS.get() else {
        return 0;
    };
    match event {
        con::CTRL_C_EVENT | con::CTRL_BREAK_EVENT => {
            if stop_signal_seen(stop, signalled) {
                std::process::exit(130);
            }
            1
        }
        con::CTRL_CLOSE_EVENT | con::CTRL_LOGOFF_EVENT | con::CTRL_SHUTDOWN_EVENT => {
            // The process ends when this returns (or after about 5 s): stop, skip the drain,
            // and give the run that long to write its results.
            stop_signal_seen(stop, signalled);
            barrage_engine::hurry();
            std::thread::sleep(std::time::Duration::from_millis(4_500));
            1
        }
        _ => 0,
    }
}

pub fn on_stop_signals(stop: Arc<AtomicBool>, signalled: Arc<AtomicBool>) {
    if FLAGS.set((stop, signalled)).is_ok() {
        // SAFETY: a valid handler routine that lives as long as the process.
        unsafe { con::SetConsoleCtrlHandler(Some(on_console_event), 1) };
    }
}

/// The job this process and its children share; closing it (this process ending, however it
/// ends) ends every child.
fn kill_on_close_job() {
    use windows_sys::Win32::System::JobObjects::*;
    static JOB: OnceLock<usize> = OnceLock::new();
    JOB.get_or_init(|| {
        // SAFETY: creating an unnamed job and setting its limit with a sized, zeroed struct;
        // the handle stays open (in JOB) for the life of the process on purpose.
        unsafe {
            let job = CreateJobObjectW(std::ptr::null(), std::ptr::null());
            if job.is_null() {
                return 0;
            }
            let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
            info.BasicLimitInformation.LimitFlags =
                JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_BREAKAWAY_OK;
            SetInformationJobObject(
                job,
                JobObjectExtendedLimitInformation,
                (&info as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            );
            AssignProcessToJobObject(job, th::GetCurrentProcess());
            job as usize
        }
    });
}

pub fn child_of_self(exe: &Path) -> std::process::Command {
    use std::os::windows::process::CommandExt;
    kill_on_close_job();
    let mut c = std::process::Command::new(exe);
    c.creation_flags(th::CREATE_NEW_PROCESS_GROUP);
    c
}

/// Ctrl-Break to the child's own process group (its pid names the group).
pub fn interrupt(pid: u32) {
    // SAFETY: a plain call with numbers.
    unsafe { con::GenerateConsoleCtrlEvent(con::CTRL_BREAK_EVENT, pid) };
}

pub fn terminate(pid: u32) {
    interrupt(pid)
}

fn filetime_s(t: FILETIME) -> f64 {
    (((t.dwHighDateTime as u64) << 32) | t.dwLowDateTime as u64) as f64 / 1e7
}

pub fn process_cpu_s() -> Option<f64> {
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: the current-process pseudo handle and four valid out-parameters.
    let ok = unsafe {
        th::GetProcessTimes(
            th::GetCurrentProcess(),
            &mut created,
            &mut exited,
            &mut kernel,
            &mut user,
        )
    };
    (ok != 0).then(|| filetime_s(kernel) + filetime_s(user))
}

pub fn try_lock(f: &std::fs::File) -> bool {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Storage::FileSystem::{
        LockFileEx, LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY,
    };
    // SAFETY: a zeroed OVERLAPPED (offset 0) and a handle this process owns.
    unsafe {
        let mut ov: windows_sys::Win32::System::IO::OVERLAPPED = std::mem::zeroed();
        LockFileEx(
            f.as_raw_handle() as HANDLE,
            LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY,
            0,
            u32::MAX,
            u32::MAX,
            &mut ov,
        ) != 0
    }
}

/// No background jobs on a Windows console: a terminal on stdin and stdout is ours.
pub fn owns_terminal() -> bool {
    true
}

pub struct NoTtyStop;

impl NoTtyStop {
    pub fn new() -> NoTtyStop {
        NoTtyStop
    }
}

pub fn kernel_file(_p: &Path) -> bool {
    false
}

/// A new file at `path` that Windows deletes when its last handle closes.
pub fn unlinked_temp_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::windows::fs::OpenOptionsExt;
    use windows_sys::Win32::Storage::FileSystem::{
        FILE_ATTRIBUTE_TEMPORARY, FILE_FLAG_DELETE_ON_CLOSE,
    };
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .attributes(FILE_ATTRIBUTE_TEMPORARY)
        .custom_flags(FILE_FLAG_DELETE_ON_CLOSE)
        .open(path)
}
