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

/// Issue 42 item 7: `versus` picked its median rep by one rate and printed another, named no
/// error class, and showed nothing over its minutes. Each rep now announces itself before it
/// runs, its line names the classes of its failed requests, and the median is named with the
/// rate its rep line printed.
#[test]
fn versus_shows_progress_error_classes_and_the_rate_it_picked_by() {
    let http = EchoServer::serve("http", &[]);
    let a = format!("{}status/200", http.url());
    // Every other request answered 201: exactly half fail --expect-status 200.
    let b = format!("{}status/20{{seq%2}}", http.url());
    let out = barrage()
        .args(["versus", &a, "--against", &b])
        .args([
            "-c",
            "1",
            "-n",
            "100",
            "--expect-status",
            "200",
            "--reps",
            "3",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{:?}\n{stderr}\n{stdout}",
        out.status
    );
    // Progress: each run announced before its line, in the alternating order.
    let order: Vec<String> = stdout
        .lines()
        .filter_map(|l| match l.strip_prefix("running ") {
            Some(r) => Some(format!("{}...", &r[..9])),
            None => (l.starts_with("A rep ") || l.starts_with("B rep ")).then(|| l[..9].into()),
        })
        .collect();
    let want: Vec<String> = [
        "A rep 1/3",
        "B rep 1/3",
        "B rep 2/3",
        "A rep 2/3",
        "A rep 3/3",
        "B rep 3/3",
    ]
    .iter()
    .flat_map(|r| [format!("{r}..."), r.to_string()])
    .collect();
    assert_eq!(order, want, "{stdout}");
    assert!(
        stdout.contains("running A rep 1/3 (run 1 of 6): "),
        "{stdout}"
    );
    // B's lines name the class of its failures, exactly 50 of 100 each rep; A's have none.
    let lines = |side: char| -> Vec<&str> {
        stdout
            .lines()
            .filter(|l| l.starts_with(&format!("{side} rep ")))
            .collect()
    };
    for l in lines('B') {
        assert!(l.ends_with("errors 50.0 % (unexpected_status 50)"), "{l}");
    }
    for l in lines('A') {
        assert!(l.ends_with("no errors"), "{l}");
    }
    // The median is named with the rate its rep line printed.
    for (side, url) in [('A', &a), ('B', &b)] {
        let named = stdout
            .split(&format!("{url}, the median of 3 reps by rate (rep "))
            .nth(1)
            .unwrap_or_else(|| panic!("{side}: {stdout}"));
        let (rep, rest) = named.split_once(": ").unwrap();
        let rate = rest.split(" req/s)").next().unwrap();
        let line = lines(side)
            .into_iter()
            .find(|l| l.starts_with(&format!("{side} rep {rep}/3: ")))
            .unwrap();
        assert!(
            line.contains(&format!("  {rate} req/s")),
            "{line} vs {rate}"
        );
    }
    let stats = http.stop();
    assert_eq!(u(&stats, "http.requests"), 600, "{stats}");
    assert_eq!(u(&stats, "http.responses_2xx"), 600, "{stats}");
}
