//! Helpers for the monitor's tests: Python processes with known behaviour, started here and
//! killed by their PID (the Child handle) when dropped, and a little arithmetic.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use barrage_monitor::{Monitor, MonitorConfig};

/// A `python3 -c SCRIPT` child; its first line on stdout says it is ready (or gives a port).
pub struct Py {
    child: Child,
    stdout: BufReader<ChildStdout>,
}

impl Py {
    pub fn start(script: &str) -> Py {
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Py { child, stdout }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next line it prints (blocks).
    pub fn line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        assert!(!line.is_empty(), "python exited before printing");
        line.trim().to_string()
    }

    /// Waits until it exited (and reaps it).
    pub fn wait(&mut self) {
        self.child.wait().unwrap();
    }
}

impl Drop for Py {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn monitor(pids: Vec<u32>, interval: Duration, base: Instant) -> Monitor {
    Monitor::start(MonitorConfig {
        pids,
        include_children: false,
        interval,
        base,
        include_self: false,
        self_children: false,
        sockets: true,
    })
    .expect("monitor starts")
}

pub const MIB: f64 = 1024.0 * 1024.0;
