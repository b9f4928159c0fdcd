//! Integration tests of `barrage-monitor`: one test binary (`cargo test -p barrage-monitor --test it`),
//! the monitor against processes whose behaviour is known (Linux only).

#![cfg(target_os = "linux")]

// Shared helpers: Python processes with scripted memory, CPU and sockets.
mod common;

// Memory growth, flat memory, CPU, threads, descriptors of a known process.
mod process;
// `spawn_server`: clean start and stop, SIGTERM ignored, failure to start.
mod spawn;
// TCP states of a monitored server and `listener_pid`.
mod tcp;
