//! The platform boundary: everything the sampler, [`crate::listener_pid`] and
//! [`crate::spawn_server`] need from the operating system, under the same names on every
//! platform, so that the sampler (`sampler.rs`, `sampler/track.rs`) and the spawner are
//! platform-free.
//!
//! A backend (`linux`: /proc and sock_diag; `windows`: the Win32 and NT APIs; `other`: refuses)
//! provides:
//! * `Process`: one process held across samples (`open(pid)`, `command()`, `read()`), which
//!   knows it from a later process that reuses its pid, and gives a [`ProcReading`];
//! * `read_host` and `host_levels`: the machine's counters ([`crate::host::HostReading`]) and
//!   levels ([`HostLevels`]);
//! * `TcpCounter`: TCP states of the monitored processes, from their readings' `sockets`;
//! * `listener_pid`, `thread_cpu_time`, `thread_id`, `online_cores`, `fds_warning`,
//!   `Scratch` (reused buffers), `SUPPORTED` and `HOST_SOURCE`.
//!
//! `spawn` (Unix: process groups and signals; Windows: a job object and a console control
//! event) starts and stops a server for [`crate::spawn_server`].

mod reading;

#[cfg_attr(not(any(target_os = "linux", windows)), allow(unused_imports))]
pub(crate) use reading::{add_owned, state, HostLevels, ProcReading};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as backend;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use self::windows as backend;

#[cfg(not(any(target_os = "linux", windows)))]
mod other;
#[cfg(not(any(target_os = "linux", windows)))]
use other as backend;

#[cfg(unix)]
pub(crate) mod unix_spawn;
#[cfg(windows)]
pub(crate) use self::windows::spawn;
#[cfg(unix)]
pub(crate) use unix_spawn as spawn;

pub(crate) use backend::{
    fds_warning, host_levels, listener_pid, online_cores, read_host, thread_cpu_time, thread_id,
    Process, Scratch, TcpCounter, HOST_SOURCE, SUPPORTED,
};

/// Whether this process runs under wine (a Windows build only).
pub(crate) fn under_wine() -> bool {
    #[cfg(windows)]
    {
        self::windows::under_wine()
    }
    #[cfg(not(windows))]
    {
        false
    }
}
