//! The throw-away stub protocol end to end through the CLI.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

#[test]
fn a_stub_target_runs_from_the_command_line() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            std::thread::spawn(move || {
                let mut w = s.try_clone().unwrap();
                for line in BufReader::new(s).lines() {
                    let Ok(line) = line else { return };
                    let seq = line.strip_prefix("STUB ").unwrap_or("?");
                    if w.write_all(format!("OK {seq}\n").as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let url = format!("stub://127.0.0.1:{port}");
    let v = run_result(&[&url, "-c", "2", "-n", "100", "-d", "60s"], &[]);
    assert_eq!(s(&v, "config.protocol"), "stub");
    assert_eq!(u(&v, "summary.exchanges.completed"), 100);
    assert_eq!(u(&v, "summary.exchanges.failed"), 0);
}
