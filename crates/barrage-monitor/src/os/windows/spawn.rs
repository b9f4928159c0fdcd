//! A spawned server on Windows: `cmd /S /C "CMD"` (the command as one string, as `sh -c` takes
//! it on Unix: cmd's own syntax, quoting and `&&`), started suspended in a new process group
//! (CREATE_NEW_PROCESS_GROUP) and put in a job object before it runs, so that everything it
//! starts is in the job. The job kills its processes when its last handle closes
//! (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE): barrage's end, however it ends, ends the server.
//!
//! Stopping: CTRL_BREAK_EVENT to the group (GenerateConsoleCtrlEvent), the graceful request
//! console programs get; it only reaches processes attached to barrage's console, so without
//! one (a service, or output redirected by a parent without a console) it fails, and the
//! server is killed at once. Killing is TerminateJobObject. Should the job not be available
//! (AssignProcessToJobObject refused), the tree found by parent pids is terminated instead.

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::os::windows::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};

use windows_sys::Win32::Foundation::{INVALID_HANDLE_VALUE, STATUS_CONTROL_C_EXIT};
use windows_sys::Win32::System::Console::{GenerateConsoleCtrlEvent, CTRL_BREAK_EVENT};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation,
    JobObjectExtendedLimitInformation, QueryInformationJobObject, SetInformationJobObject,
    TerminateJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{
    OpenThread, ResumeThread, TerminateProcess, CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED,
    THREAD_SUSPEND_RESUME,
};

use super::{open, procs, times};

/// How the command is run (for messages).
pub(crate) const SHELL: &str = "cmd /S /C";

/// The server's `cmd` process and the job holding it and its descendants.
pub(crate) struct Group {
    pid: u32,
    /// Its creation time, to find its descendants without a job.
    created: u64,
    /// Closing it kills what is left in it.
    job: Option<OwnedHandle>,
}

/// Runs `cmd` via `cmd /S /C` in a new process group and a job (stdin and stdout to NUL,
/// stderr piped), and lets it run once it is in the job.
pub(crate) fn start(cmd: &str) -> io::Result<(Child, Group)> {
    let mut command = Command::new("cmd");
    command
        .raw_arg("/S /C")
        .raw_arg(format!("\"{cmd}\""))
        .creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_SUSPENDED)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn()?;
    let pid = child.id();
    let job = new_job().filter(|job| {
        // SAFETY: both handles are valid: the job just made, the child's process handle.
        unsafe { AssignProcessToJobObject(job.as_raw_handle(), child.as_raw_handle()) != 0 }
    });
    if let Err(e) = resume(pid) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    let created = open(pid).and_then(|h| times(&h)).map_or(0, |t| t.0);
    Ok((child, Group { pid, created, job }))
}

/// A job that kills its processes when its last handle closes; `None` if refused.
fn new_job() -> Option<OwnedHandle> {
    // SAFETY: null attributes and name are allowed; a null result is a failure.
    let h = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    if h.is_null() {
        return None;
    }
    // SAFETY: h is a fresh job handle nothing else owns.
    let job = unsafe { OwnedHandle::from_raw_handle(h) };
    let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    // SAFETY: a valid job handle; limits is a JOBOBJECT_EXTENDED_LIMIT_INFORMATION of the size
    // passed.
    let ok = unsafe {
        SetInformationJobObject(
            job.as_raw_handle(),
            JobObjectExtendedLimitInformation,
            (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
            size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        )
    } != 0;
    ok.then_some(job)
}

/// Resumes every thread of a process created suspended (its one thread, in practice).
fn resume(pid: u32) -> io::Result<()> {
    // SAFETY: no memory-safety preconditions; INVALID_HANDLE_VALUE is a failure.
    let snap = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snap == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: snap is a fresh snapshot handle nothing else owns.
    let snap = unsafe { OwnedHandle::from_raw_handle(snap) };
    let mut e = THREADENTRY32 {
        dwSize: size_of::<THREADENTRY32>() as u32,
        ..Default::default()
    };
    let mut resumed = 0;
    // SAFETY: a valid snapshot handle and a THREADENTRY32 with dwSize set.
    let mut more = unsafe { Thread32First(snap.as_raw_handle(), &mut e) } != 0;
    while more {
        if e.th32OwnerProcessID == pid {
            // SAFETY: no memory-safety preconditions; a null result is a failure.
            let t = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, e.th32ThreadID) };
            if !t.is_null() {
                // SAFETY: t is a fresh thread handle nothing else owns.
                let t = unsafe { OwnedHandle::from_raw_handle(t) };
                // SAFETY: a valid thread handle with THREAD_SUSPEND_RESUME.
                if unsafe { ResumeThread(t.as_raw_handle()) } != u32::MAX {
                    resumed += 1;
                }
            }
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snap.as_raw_handle(), &mut e) } != 0;
    }
    if resumed == 0 {
        return Err(io::Error::other(format!(
            "the server process {pid} was created suspended and none of its threads could be resumed"
        )));
    }
    Ok(())
}

/// What [`Group::terminate`] sends, in a result's words.
pub(crate) const STOP_REQUEST: &str = "Ctrl-Break";

impl Group {
    /// CTRL_BREAK to the group. False: it could not be sent (no shared console).
    pub fn terminate(&mut self) -> bool {
        // SAFETY: no memory-safety preconditions.
        unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, self.pid) != 0 }
    }

    /// Terminates every process of the job (without a job: the process and its descendants).
    pub fn kill(&mut self) {
        if let Some(job) = &self.job {
            // SAFETY: a valid job handle.
            unsafe { TerminateJobObject(job.as_raw_handle(), 1) };
            return;
        }
        let list = procs::list(&mut Vec::new()).unwrap_or_default();
        let tree = procs::descendants(&list, self.pid, self.created);
        for pid in std::iter::once(self.pid).chain(tree.iter().map(|e| e.pid)) {
            if let Some(h) = terminable(pid) {
                // SAFETY: a valid process handle with PROCESS_TERMINATE.
                unsafe { TerminateProcess(h.as_raw_handle(), 1) };
            }
        }
    }

    /// Whether a process of the job (without a job: a descendant) still runs.
    pub fn alive(&self) -> bool {
        let Some(job) = &self.job else {
            let list = procs::list(&mut Vec::new()).unwrap_or_default();
            return !procs::descendants(&list, self.pid, self.created).is_empty();
        };
        let mut info = JOBOBJECT_BASIC_ACCOUNTING_INFORMATION::default();
        // SAFETY: a valid job handle; info is writable for the size passed.
        let ok = unsafe {
            QueryInformationJobObject(
                job.as_raw_handle(),
                JobObjectBasicAccountingInformation,
                (&mut info as *mut JOBOBJECT_BASIC_ACCOUNTING_INFORMATION).cast(),
                size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        } != 0;
        // Unknown: say alive, and the grace period decides.
        !ok || info.ActiveProcesses > 0
    }
}

fn terminable(pid: u32) -> Option<OwnedHandle> {
    use windows_sys::Win32::System::Threading::{OpenProcess, PROCESS_TERMINATE};
    // SAFETY: no memory-safety preconditions; a null result is a failure.
    let h = unsafe { OpenProcess(PROCESS_TERMINATE, 0, pid) };
    // SAFETY: h is a fresh process handle nothing else owns.
    (!h.is_null()).then(|| unsafe { OwnedHandle::from_raw_handle(h) })
}

/// (exit code, terminating signal): Windows has no signals.
pub(crate) fn decode(status: Option<ExitStatus>) -> (Option<i32>, Option<i32>) {
    (status.and_then(|s| s.code()), None)
}

/// An end after the stop request that counts as clean: status 0, or STATUS_CONTROL_C_EXIT (a
/// console program's default end on CTRL_BREAK).
pub(crate) fn clean_exit(code: Option<i32>, _signal: Option<i32>) -> bool {
    code == Some(0) || code == Some(STATUS_CONTROL_C_EXIT)
}
