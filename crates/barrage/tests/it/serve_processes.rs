//! `barrage serve KIND --processes N`: N processes on one port (SO_REUSEPORT), their counts
//! added up exactly on exit; no process outlives the server. Everything on 127.0.0.1.

use crate::common::*;

#[test]
fn an_echo_server_in_three_processes_counts_every_connection_once() {
    let server = EchoServer::start(&["--processes", "3"]);
    let out = barrage()
        .args([server.url(), "-c", "120", "-t", "2", "-n", "2400", "-q"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let st = server.stop();
    assert_eq!(st["connections_accepted"].as_u64(), Some(120));
    assert_eq!(st["bytes_read"].as_u64(), Some(2400 * 19));
    assert_eq!(st["bytes_written"].as_u64(), Some(2400 * 19));
    let per: Vec<u64> = st["processes"]
        .as_array()
        .expect("per-process counts")
        .iter()
        .map(|p| p["connections_accepted"].as_u64().unwrap())
        .collect();
    assert_eq!(per.len(), 3);
    assert_eq!(per.iter().sum::<u64>(), 120);
    // SO_REUSEPORT spreads by a hash of the 4-tuple: 120 connections leave none empty.
    assert!(per.iter().all(|&c| c > 0), "{per:?}");
}

#[test]
fn chat_rooms_are_per_process_and_every_delivery_is_counted() {
    let server = EchoServer::serve("chat", &["--processes", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let file = example_without_thresholds("chat-rooms.toml", dir.path());
    let file = file.to_str().unwrap();
    let r = run_result(
        &[
            file,
            "--target",
            server.url(),
            "--users",
            "60",
            "--arrive",
            "200/s",
            "--hold",
            "2s",
        ],
        &[],
    );
    let st = server.stop();
    let chat = &st["chat"];
    assert_eq!(chat["logins"].as_u64(), Some(60));
    // Every delivery the processes wrote was received.
    assert_eq!(
        u(&r, "summary.broadcast.delivered"),
        chat["deliveries_out"].as_u64().unwrap()
    );
}

#[test]
fn a_process_count_of_zero_or_with_metrics_is_refused() {
    for (args, want) in [
        (&["--processes", "0"][..], "--processes"),
        (&["--processes", "2", "--metrics", "0"][..], "--metrics"),
    ] {
        let out = barrage()
            .args([
                "serve",
                "echo",
                "--listen",
                "127.0.0.1:0",
                "--exit-after",
                "1s",
            ])
            .args(args)
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: {e}");
    }
}

/// Issue 24: `serve` bound a port another server listened on (SO_REUSEPORT) and the two split
/// the connections without a word. Refused naming --listen and --reuse-port; with --reuse-port
/// it shares.
#[test]
fn serve_refuses_a_port_another_server_listens_on_unless_reuse_port() {
    let first = EchoServer::start(&[]);
    let listen = format!("127.0.0.1:{}", first.port);
    for kind in ["echo", "http", "ws", "chat"] {
        let out = barrage()
            .args(["serve", kind, "--listen", &listen, "--exit-after", "5s"])
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{kind}: {e}");
        assert!(out.stdout.is_empty(), "{kind}: it started");
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.starts_with(&format!(
                "error: --listen {listen}: another server listens there"
            )) && e.contains("--reuse-port"),
            "{kind}: {e}"
        );
    }
    let out = barrage()
        .args(["serve", "echo", "--listen", &listen, "--reuse-port"])
        .args(["--threads", "1", "--exit-after", "1s"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let banner = String::from_utf8_lossy(&out.stdout);
    assert!(
        banner.contains(&format!("listening on {listen}")),
        "{banner}"
    );
    first.stop();
}
