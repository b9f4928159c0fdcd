//! Platforms without a monitoring backend (macOS, the BSDs): [`crate::Monitor::start`] and
//! [`crate::listener_pid`] return [`MonitorError::Unsupported`] before anything here is used.
//! The items exist so that the platform-free code compiles; each reads nothing.

use std::collections::HashSet;
use std::io;
use std::time::Duration;

use barrage_metrics::TcpStates;

use crate::host::HostReading;
use crate::os::{HostLevels, ProcReading};
use crate::MonitorError;

pub(crate) const SUPPORTED: bool = false;
pub(crate) const HOST_SOURCE: &str = "(no backend)";

/// Nothing is read: an empty buffer, as on Linux.
pub(crate) type Scratch = String;

/// Never opened: `Monitor::start` refuses first.
pub(crate) struct Process;

impl Process {
    pub fn open(_pid: u32, _s: &mut Scratch) -> Option<Process> {
        None
    }

    pub fn command(&self, _s: &mut Scratch) -> String {
        String::new()
    }

    pub fn read(
        &mut self,
        _children: bool,
        _sockets: bool,
        _s: &mut Scratch,
    ) -> Option<ProcReading> {
        None
    }
}

pub(crate) struct TcpCounter;

impl TcpCounter {
    pub fn new() -> Self {
        TcpCounter
    }

    pub fn count(&mut self, procs: &[(u32, Option<&HashSet<u64>>)]) -> Vec<TcpStates> {
        vec![TcpStates::default(); procs.len()]
    }
}

pub(crate) fn read_host(_s: &mut Scratch) -> io::Result<HostReading> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

pub(crate) fn host_levels(_s: &mut Scratch) -> HostLevels {
    HostLevels::default()
}

pub(crate) fn listener_pid(_port: u16) -> Result<Option<u32>, MonitorError> {
    Err(MonitorError::unsupported())
}

pub(crate) fn fds_warning(pid: u32) -> String {
    format!("pid {pid}: its descriptors cannot be read here")
}

pub(crate) fn online_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub(crate) fn thread_cpu_time() -> Duration {
    Duration::ZERO
}

pub(crate) fn thread_id() -> u32 {
    0
}
