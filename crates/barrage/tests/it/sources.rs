//! `--source-ip` and `--url`: connections spread over several source addresses and several
//! ports of one server, evenly and exactly; bad lists are refused in one line before any
//! load. Everything on loopback (127.0.0.0/8).

use crate::common::*;

#[test]
fn connections_spread_exactly_over_targets_from_several_sources() {
    let a = EchoServer::start(&[]);
    let b = EchoServer::start(&[]);
    let args = [
        a.url(),
        "--url",
        b.url(),
        "-c",
        "300",
        "-t",
        "2",
        "-n",
        "3000",
        "--source-ip",
        "127.0.0.2-4",
    ];
    let r = run_result(&args, &[]);
    assert_eq!(u(&r, "summary.exchanges.completed"), 3000);
    assert_eq!(u(&r, "summary.exchanges.failed"), 0);
    assert_eq!(u(&r, "summary.connections.failed"), 0);
    let spec = &r["spec"];
    assert_eq!(
        spec["source_ips"],
        serde_json::json!(["127.0.0.2", "127.0.0.3", "127.0.0.4"]),
        "the result records the sources"
    );
    assert_eq!(spec["more_addrs"].as_array().map(Vec::len), Some(1));
    let (sa, sb) = (a.stop(), b.stop());
    // Connection g goes to target g mod 2: 150 each, exactly.
    assert_eq!(sa["connections_accepted"].as_u64(), Some(150));
    assert_eq!(sb["connections_accepted"].as_u64(), Some(150));
    // Every exchange was served by one of them: 3,000 messages of 19 bytes.
    let served = sa["bytes_read"].as_u64().unwrap() + sb["bytes_read"].as_u64().unwrap();
    assert_eq!(served, 3000 * 19);
}

#[test]
fn auto_sources_run_and_bad_lists_are_refused_in_one_line() {
    let a = EchoServer::start(&[]);
    let out = barrage()
        .args([
            a.url(),
            "-c",
            "20",
            "-n",
            "200",
            "--source-ip",
            "auto",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (args, want) in [
        (&["--source-ip", "192.0.2.7"][..], "loopback"),
        (&["--source-ip", "::1"][..], "address family"),
        (&["--source-ip", "127.0.0.9-2"][..], "ends before it starts"),
        (&["--source-ip", "10.0.0.0/8"][..], "16 to 32 bits"),
        (&["--url", "http://127.0.0.1:9/"][..], "target's scheme"),
        (&["--url", "not a url"][..], "--url"),
    ] {
        let out = barrage()
            .args([a.url(), "-n", "1"])
            .args(args)
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{args:?}: {e}");
        assert!(e.contains(want) && e.contains(args[0]), "{args:?}: {e}");
    }
    let st = a.stop();
    assert_eq!(st["connections_accepted"].as_u64(), Some(20));
}
