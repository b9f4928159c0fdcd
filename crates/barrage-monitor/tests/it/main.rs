//! Integration tests of `barrage-monitor`: one test binary (`cargo test -p barrage-monitor --test it`),
//! the monitor against processes whose behaviour is known (Linux and Windows).

// Shared helpers: Python processes with scripted memory, CPU and sockets.
#[cfg(target_os = "linux")]
mod common;

// Memory growth, flat memory, CPU, threads, descriptors of a known process.
#[cfg(target_os = "linux")]
mod process;
// `spawn_server`: clean start and stop, SIGTERM ignored, failure to start.
#[cfg(target_os = "linux")]
mod spawn;
// TCP states of a monitored server and `listener_pid`.
#[cfg(target_os = "linux")]
mod tcp;

// Windows (and wine): this process and copies of it as known processes and servers.
#[cfg(windows)]
mod windows;
