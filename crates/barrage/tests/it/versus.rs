//! `barrage versus A --against B`: the same load against two targets in turn (raw TCP echo vs
//! WebSocket echo here), compared. Counts reconcile with both servers exactly; the sides
//! alternate; mistakes on either side are found before any load.

use crate::common::*;

/// Issue 26: the Socket vs WebSocket question was a script in bench/ (ws-vs-tcp.sh).
#[test]
fn versus_runs_both_sides_in_turn_and_reconciles_with_both_servers() {
    let tcp = EchoServer::start(&[]);
    let ws = EchoServer::serve("ws", &[]);
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("v.md");
    let out = barrage()
        .args(["versus", tcp.url(), "--against", ws.url()])
        .args(["-c", "2", "-t", "1", "-n", "300", "--reps", "2", "-q"])
        .arg("-o")
        .arg(&md)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}\n{stdout}");
    // A B, then B A: a drifting machine weighs on both sides alike.
    let reps: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("A rep ") || l.starts_with("B rep "))
        .map(|l| &l[..9])
        .collect();
    assert_eq!(
        reps,
        ["A rep 1/2", "B rep 1/2", "B rep 2/2", "A rep 2/2"],
        "{stdout}"
    );
    assert!(
        stdout.contains("rps.avg"),
        "the comparison table:\n{stdout}"
    );
    let ratios = stdout
        .split("B / A (")
        .nth(1)
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        ratios.contains("throughput") && ratios.contains("x (median; each rep "),
        "{stdout}"
    );
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .starts_with("# barrage comparison"));
    // Only the comparison the user asked for is announced, not the runs' temporary results.
    let wrote: Vec<&str> = stderr.lines().filter(|l| l.starts_with("wrote ")).collect();
    assert_eq!(wrote.len(), 1, "{stderr}");
    // Each side ran twice: 2 connections and exactly 300 exchanges each time.
    let (t, w) = (tcp.stop(), ws.stop());
    assert_eq!(u(&t, "connections_accepted"), 4, "{t}");
    assert_eq!(
        u(&t, "bytes_read"),
        2 * 300 * "hello from barrage\n".len() as u64,
        "{t}"
    );
    assert_eq!(u(&w, "connections_accepted"), 4, "{w}");
    assert_eq!(u(&w, "ws.messages_in"), 2 * 300, "{w}");
}

#[test]
fn versus_mistakes_are_one_line_before_any_load() {
    let tcp = EchoServer::start(&[]);
    let cases: [(&[&str], &str); 4] = [
        (&["--against", "bogus://127.0.0.1:1"], "bogus"),
        (&["--against", "examples/chat.toml"], "--against"),
        (
            &["--against", "ws://127.0.0.1:1/", "--json", "r.json"],
            "--json",
        ),
        (&["--against", "ws://127.0.0.1:1/", "--reps", "0"], "--reps"),
    ];
    for (args, names) in cases {
        let out = barrage()
            .args(["versus", tcp.url(), "-d", "1s"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert!(lines[0].contains(names), "{args:?}: {err}");
    }
    // Nothing reached side A's server.
    assert_eq!(u(&tcp.stop(), "connections_accepted"), 0);
}
