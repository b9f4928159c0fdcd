//! mqtt:// against a real broker (Debian's `mosquitto`, a child of the test on a free port of
//! 127.0.0.1, publishing `$SYS` statistics every second): subscribers and publishers in two
//! runs, and every count reconciled exactly with the broker's own — the PUBLISHes it received
//! and sent, every packet each way, every byte each way. Bad MQTT flags are one line each.
//!
//! When mosquitto is missing the tests print "skipped: ..." and pass, except under CI (`CI`
//! set), where `.ci/run` installs it.

use crate::common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

struct Broker {
    child: Option<Guard>,
    port: u16,
    /// The port of `extra`'s listener (`TLSPORT` in it), if it has one.
    tls_port: u16,
    started: Instant,
    conf: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Broker {
    fn start() -> Option<Broker> {
        Self::start_with("")
    }

    /// With `extra` after the plain listener's settings: another listener (on `TLSPORT`).
    fn start_with(extra: &str) -> Option<Broker> {
        if !available(
            "mosquitto",
            on_path("mosquitto") && on_path("mosquitto_sub"),
        ) {
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let mut b = Broker {
            child: None,
            port: 0,
            tls_port: 0,
            started: Instant::now(),
            conf: dir.path().join("mosquitto.conf"),
            _dir: dir,
        };
        // A free port can be taken between probing and binding: try a few.
        for _ in 0..3 {
            (b.port, b.tls_port) = (free_port(), free_port());
            std::fs::write(
                &b.conf,
                format!(
                    "listener {} 127.0.0.1\nallow_anonymous true\nsys_interval 1\n\
                     persistence false\nmax_queued_messages 0\n{}",
                    b.port,
                    extra.replace("TLSPORT", &b.tls_port.to_string())
                ),
            )
            .unwrap();
            // Debian's mosquitto drops root to its own user: it must read the file.
            let _ = StdCommand::new("chmod")
                .args(["-R", "a+rX"])
                .arg(b._dir.path())
                .status();
            if b.spawn() {
                return Some(b);
            }
            b.kill();
        }
        panic!("mosquitto did not start");
    }

    /// Starts mosquitto on the broker's port and config; whether it listens.
    fn spawn(&mut self) -> bool {
        self.started = Instant::now();
        let mut child = StdCommand::new("mosquitto")
            .arg("-c")
            .arg(&self.conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mosquitto");
        let up = wait_listening(&mut child, self.port);
        self.child = Some(Guard(child));
        up
    }

    /// Kills the broker (SIGKILL, by its PID) and waits for it to exit.
    fn kill(&mut self) {
        self.child = None;
    }

    fn url(&self) -> String {
        format!("mqtt://127.0.0.1:{}", self.port)
    }

    /// The broker's `$SYS` counters as last published: read once, by one subscriber that
    /// takes the retained values and leaves (its own packets come after them).
    fn sys(&self) -> std::collections::HashMap<String, u64> {
        const TOPICS: [&str; 8] = [
            "messages/received",
            "messages/sent",
            "publish/messages/received",
            "publish/messages/sent",
            "publish/messages/dropped",
            "bytes/received",
            "bytes/sent",
            "uptime",
        ];
        let mut cmd = StdCommand::new("mosquitto_sub");
        cmd.args([
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-v",
            "-W",
            "10",
        ]);
        cmd.args(["-C", &TOPICS.len().to_string()]);
        for t in TOPICS {
            cmd.args(["-t", &format!("$SYS/broker/{t}")]);
        }
        let out = cmd.output().expect("mosquitto_sub");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut m = std::collections::HashMap::new();
        for line in text.lines() {
            let (topic, value) = line.split_once(' ').expect("topic value");
            let name = topic.trim_start_matches("$SYS/broker/").to_string();
            let n = value.split_whitespace().next().unwrap().parse().unwrap();
            m.entry(name).or_insert(n);
        }
        assert_eq!(m.len(), TOPICS.len(), "$SYS read: {text}");
        m
    }
}

/// Runs barrage in the background (with `--json`); returns once its live line says every
/// connection is up.
fn subscribers(args: &[String], json: &std::path::Path, conns: u64) -> Guard {
    let mut child = StdCommand::new(bin())
        .args(args)
        .arg("--json")
        .arg(json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn barrage");
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let want = format!("conns {conns}/{conns}");
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if line.contains(&want) {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(15))
        .expect("the subscribers connected");
    Guard(child)
}

fn mq(v: &Value, name: &str) -> u64 {
    v["summary"]["totals"]["mqtt"][name].as_u64().unwrap_or(0)
}

fn received(v: &Value, qos: usize) -> u64 {
    v["summary"]["totals"]["mqtt"]["received"][qos]
        .as_u64()
        .unwrap_or(0)
}

fn accepted(v: &Value) -> u64 {
    v["summary"]["totals"]["mqtt"]["connack"]["0"]
        .as_u64()
        .unwrap_or(0)
}

/// Packets barrage sent in a run (what the broker received from it).
fn packets_sent(v: &Value) -> u64 {
    accepted(v)                                         // CONNECT
        + mq(v, "subscribed")                           // SUBSCRIBE
        + u(v, "summary.exchanges.sent")                // PUBLISH
        + mq(v, "pubrec")                               // PUBREL
        + received(v, 1)                                // PUBACK of a delivery
        + 2 * received(v, 2)                            // PUBREC, then PUBCOMP
        + mq(v, "pings")                                // PINGREQ
        + mq(v, "disconnects_sent") // DISCONNECT
}

/// Packets the broker sent to barrage in a run.
fn packets_received(v: &Value) -> u64 {
    accepted(v)                                         // CONNACK
        + mq(v, "subscribed")                           // SUBACK
        + mq(v, "puback") + mq(v, "pubrec") + mq(v, "pubcomp")
        + received(v, 0) + received(v, 1) + 2 * received(v, 2) // PUBLISH (+ PUBREL)
        + mq(v, "pongs") // PINGRESP
}

/// Four subscribers hold while two publishers send `n` messages: everything barrage counts
/// equals what the broker counts.
fn reconcile(qos: &str, version: &str) {
    let Some(b) = Broker::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let a_json = dir.path().join("a.json");
    let common = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [b.url().as_str(), "--qos", qos, "--mqtt-version", version]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let a_args = common(&[
        "-c",
        "4",
        "--subscribe",
        "r/#",
        "-d",
        "6s",
        "--keepalive",
        "2s",
        "-t",
        "1",
    ]);
    let subs = subscribers(&a_args, &a_json, 4);
    let pubs = run_result(
        &common(&[
            "-c",
            "2",
            "--publish",
            "r/{conn}",
            "-m",
            "m{seq}",
            "-n",
            "1000",
            "--pipeline",
            "4",
        ])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>(),
        &[],
    );
    let mut subs = subs;
    let status = wait_at_most(&mut subs.0, Duration::from_secs(20)).expect("the subscribers end");
    assert!(status.success());
    let ended = b.started.elapsed();
    let subs = read_json(&a_json);
    // The broker publishes its counters every second: wait for a snapshot taken after both
    // runs ended (its uptime says when).
    std::thread::sleep(Duration::from_millis(3000));
    let sys = b.sys();
    assert!(
        sys["uptime"] as f64 >= ended.as_secs_f64().floor(),
        "the $SYS snapshot predates the runs' end: {sys:?}"
    );
    let sent = u(&pubs, "summary.exchanges.sent");
    conserved(&pubs);
    assert_eq!(
        u(&pubs, "summary.exchanges.completed"),
        sent,
        "every PUBLISH acknowledged"
    );
    if qos != "2" {
        // mosquitto 2.0.11 leaves QoS 2 PUBLISHes out of this counter (seen here: 0 after
        // 10 of them); they are in `messages/received` below with every other packet.
        assert_eq!(sys["publish/messages/received"], sent);
    }
    assert_eq!(sys["publish/messages/dropped"], 0);
    let delivered: u64 = (0..3).map(|q| received(&subs, q)).sum();
    assert_eq!(delivered, 4 * sent, "each subscriber got every message");
    assert_eq!(sys["publish/messages/sent"], delivered);
    assert_eq!(
        sys["messages/received"],
        packets_sent(&subs) + packets_sent(&pubs),
        "packets to the broker; subscribers {}, publishers {}",
        field(&subs, "summary.totals.mqtt"),
        field(&pubs, "summary.totals.mqtt")
    );
    assert_eq!(
        sys["messages/sent"],
        packets_received(&subs) + packets_received(&pubs),
        "packets from the broker"
    );
    let bytes = |v: &Value, what: &str| u(v, &format!("summary.totals.{what}"));
    assert_eq!(
        sys["bytes/received"],
        bytes(&subs, "bytes_written") + bytes(&pubs, "bytes_written")
    );
    assert_eq!(
        sys["bytes/sent"],
        bytes(&subs, "bytes_read") + bytes(&pubs, "bytes_read")
    );
    assert_eq!(
        (accepted(&subs), mq(&subs, "subscribed"), mq(&subs, "pongs")),
        (4, 4, mq(&subs, "pings"))
    );
}

#[test]
fn qos1_publishers_and_subscribers_reconcile_with_mosquitto() {
    reconcile("1", "3.1.1");
}

#[test]
fn qos2_over_mqtt5_reconciles_with_mosquitto() {
    reconcile("2", "5");
}

#[test]
fn mqtt_flags_are_checked_before_any_load() {
    let port = refused_port().to_string();
    let url = format!("mqtt://127.0.0.1:{port}");
    let cases: &[(&[&str], &str)] = &[
        (
            &["--publish", "a/+/b"],
            "error: --publish 'a/+/b': '+' is a wildcard",
        ),
        (
            &["--publish", "t", "--qos", "3"],
            "error: invalid value '3' for '--qos <0|1|2>': MQTT's QoS is 0, 1 or 2",
        ),
        (
            &["--keepalive", "1500ms"],
            "error: invalid value '1500ms' for '--keepalive <D>': MQTT's keep-alive is whole seconds",
        ),
        (
            &["--subscribe", "a/b+"],
            "error: --subscribe 'a/b+': '+' stands for a whole level",
        ),
        (
            &["--mqtt-version", "4.0"],
            "error: --mqtt-version 4.0: barrage speaks MQTT 3.1.1 and 5",
        ),
        (
            &["-m", "x"],
            "error: -m/--message says what is published: give --publish TOPIC",
        ),
        (&["--rate", "10"], "error: --rate says what is published"),
        (
            &["--first-message", "x"],
            "error: --first-message does not apply to mqtt://",
        ),
        (&["--publish", "t/{seq%0}"], "error: --publish 't/{seq%0}'"),
        (
            &[
                "--username",
                "u",
                "--password",
                "{secret:BARRAGE_NO_SUCH_SECRET}",
            ],
            "error: --password: {secret:BARRAGE_NO_SUCH_SECRET} needs",
        ),
        (
            &["--password", "pw"],
            "error: --password needs --username on MQTT 3.1.1",
        ),
        (
            &["--username", "u", "--password", "S3cret{seq%0}X"],
            "error: --password is not a valid template (its value is not shown)",
        ),
        (
            &["--username", "S3cret{rand%}"],
            "error: --username is not a valid template",
        ),
    ];
    for (args, want) in cases {
        let out = barrage().arg(&url).args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with(want), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("S3cret"), "a credential shown: {err}");
    }
    // What a secret fills into the topic is checked too, and never shown.
    for (value, want) in [
        (
            "S3cret/+",
            "error: --publish: a {secret:NAME} puts the wildcard '+' into the topic",
        ),
        (
            "S3cret#",
            "error: --publish: a {secret:NAME} puts the wildcard '#' into the topic",
        ),
        (
            "",
            "error: --publish: a {secret:NAME} leaves the topic empty",
        ),
    ] {
        let out = barrage()
            .arg(&url)
            .args(["--publish", "{secret:BARRAGE_TEST_TOPIC}", "-d", "1s"])
            .env("BARRAGE_TEST_TOPIC", value)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value:?}: {err}");
        assert!(err.starts_with(want), "{value:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{value:?}: {err}");
        assert!(!err.contains("S3cret"), "a secret shown: {err}");
    }
    let out = barrage()
        .args(["http://127.0.0.1:1/", "--publish", "t"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .starts_with("error: --publish applies to mqtt(s):// targets, not http://"));
}

#[test]
fn a_secret_that_puts_a_wildcard_into_a_scenario_topic_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.toml");
    let port = refused_port();
    // The whole topic is the secret, so an empty one leaves it empty.
    std::fs::write(
        &file,
        format!(
            "target = \"mqtt://127.0.0.1:{port}\"\n\n[users]\ncount = 1\narrive = \"10/s\"\n\
             hold = \"1s\"\n\n[[steps]]\ntopic = \"{{secret:BARRAGE_TEST_TOPIC}}\"\n\
             send = \"hi\"\n"
        ),
    )
    .unwrap();
    for (value, want) in [
        ("chat/S3cret/#", "puts the wildcard '#' into the topic"),
        ("", "leaves the topic empty"),
    ] {
        let out = barrage()
            .arg("run")
            .arg(&file)
            .env("BARRAGE_TEST_TOPIC", value)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{value:?}: {err}");
        // `validate` and `run` share the check: the line names the file's line too.
        let want = format!("t.toml:9: steps[0].topic: a {{secret:NAME}} {want}");
        assert!(err.contains(&want), "{value:?}: {err}");
        assert!(!err.contains("S3cret"), "a secret shown: {err}");
    }
}

#[test]
fn mqtt_credentials_never_reach_an_output() {
    let Some(b) = Broker::start() else { return };
    let v = run_result(
        &[
            &b.url(),
            "-c",
            "1",
            "-d",
            "1s",
            "--username",
            "u-s3cret",
            "--password",
            "{secret:MQ_PW}",
        ],
        &[("MQ_PW", "pw-s3cret")],
    );
    let text = v.to_string();
    assert!(!text.contains("s3cret"), "{text}");
    assert_eq!(
        accepted(&v),
        1,
        "mosquitto takes any credentials when anonymous"
    );
    assert_eq!(s(&v, "config.mode"), "hold");
}

#[test]
fn the_rooms_example_broadcasts_over_mosquitto_and_reconciles() {
    // examples/mqtt-rooms.toml with its first 66 users (12 rooms of 3 to 8) for 3 s: every
    // delivery the broker sent was received (a user leaves after its UNSUBACK, which follows
    // every delivery the broker sent it), and every message it took was a `say`.
    let Some(b) = Broker::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = example_without_thresholds("mqtt-rooms.toml", dir.path());
    let v = run_result(
        &[
            "run",
            file.to_str().unwrap(),
            "--target",
            &b.url(),
            "--users",
            "66",
            "--hold",
            "3s",
        ],
        &[],
    );
    std::thread::sleep(Duration::from_millis(3000));
    let sys = b.sys();
    conserved(&v);
    let said = u(step(&v, "say"), "sent");
    assert!(said > 0);
    assert_eq!(
        u(step(&v, "say"), "completed"),
        said,
        "each say got its PUBACK"
    );
    assert_eq!(sys["publish/messages/received"], said);
    let bc = field(&v, "summary.broadcast");
    assert_eq!(u(bc, "sent"), said);
    assert_eq!(
        (u(bc, "duplicates"), u(bc, "late"), u(bc, "lost")),
        (0, 0, 0)
    );
    assert_eq!(sys["publish/messages/sent"], u(bc, "delivered"));
    assert_eq!(received(&v, 1), u(bc, "delivered"));
    assert!(u(bc, "delivered") <= u(bc, "expected"));
    // The rooms the deliveries revealed are the data file's: 66 users in rooms of 3 to 8.
    let rooms = field(bc, "rooms");
    assert_eq!((u(rooms, "count"), u(rooms, "users")), (12, 66), "{rooms}");
    for s in ["join", "leave"] {
        assert_eq!(u(step(&v, s), "completed"), 66, "{s}");
    }
    // Every packet barrage wrote, the broker counted: CONNECT, the steps' SUBSCRIBE, PUBLISH
    // and UNSUBSCRIBE, a PUBACK per delivery, PINGREQs and DISCONNECT.
    assert_eq!(u(&v, "summary.totals.mqtt.subscribed"), 66);
    assert_eq!(
        sys["messages/received"],
        accepted(&v)
            + u(&v, "summary.exchanges.sent")
            + received(&v, 1)
            + mq(&v, "pings")
            + mq(&v, "disconnects_sent")
    );
}

#[test]
fn a_broker_killed_and_restarted_mid_run_leaves_every_publish_accounted_for() {
    // QoS 1 publishers at an open-loop rate; the broker is killed (SIGKILL) a second in and
    // started again half a second later on the same port. Every publish ends acknowledged,
    // failed with a named class, not sent, or in flight at the end; the connections come back
    // and publish again.
    let Some(mut b) = Broker::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let args: Vec<String> = [
        b.url().as_str(),
        "-c",
        "4",
        "--publish",
        "t/{conn}",
        "--qos",
        "1",
    ]
    .iter()
    .chain(&["--rate", "400", "-d", "4s", "--timeout", "1s"])
    .map(|a| a.to_string())
    .collect();
    // Killed once every connection is up (its live line says so), however slow the start.
    let mut run = subscribers(&args, &json, 4);
    std::thread::sleep(Duration::from_millis(300));
    b.kill();
    std::thread::sleep(Duration::from_millis(500));
    assert!(b.spawn(), "mosquitto started again");
    let status = wait_at_most(&mut run.0, Duration::from_secs(20)).expect("the run ends");
    assert!(
        status.code().is_some_and(|c| c == 0 || c == 3),
        "{status:?}"
    );
    let v = read_json(&json);
    let e = field(&v, "summary.exchanges");
    let (sent, completed, failed, in_flight) = (
        u(&v, "summary.exchanges.sent"),
        u(&v, "summary.exchanges.completed"),
        u(&v, "summary.exchanges.failed"),
        u(&v, "summary.exchanges.in_flight_at_end"),
    );
    assert_eq!(sent, completed + failed + in_flight, "{e}");
    assert_eq!(
        u(&v, "summary.totals.scheduled"),
        sent + u(&v, "summary.totals.failed_by.not_sent"),
        "{e}"
    );
    // Every failed publish has a named class; the broker's death shows as broken
    // connections and refused reconnects, not as `other` or `protocol`.
    let by = field(&v, "summary.totals.failed_by");
    let named: u64 = [
        "reset",
        "closed_by_peer",
        "timeout",
        "refused",
        "connect_timeout",
    ]
    .iter()
    .map(|c| u(by, c))
    .sum();
    assert_eq!(failed, named, "{by}");
    assert_eq!((u(by, "other"), u(by, "protocol")), (0, 0), "{by}");
    // The connections were opened again and published to the new broker.
    assert!(
        u(&v, "summary.totals.connects") >= 8,
        "{}",
        field(&v, "summary.totals")
    );
    assert!(accepted(&v) >= 8);
    assert!(completed > 0);
}

#[test]
fn an_mqtt_run_splits_over_processes_and_merges() {
    // Each shard resolves the command on its own: the default client ids must agree (the
    // merge refuses shards of different settings) and differ per connection.
    let Some(b) = Broker::start() else { return };
    let v = run_result(
        &[
            &b.url(),
            "-c",
            "6",
            "--processes",
            "2",
            "--publish",
            "p/{conn}",
            "--qos",
            "1",
            "-n",
            "600",
        ],
        &[],
    );
    conserved(&v);
    assert_eq!(accepted(&v), 6, "{}", field(&v, "summary.totals.mqtt"));
    assert_eq!(u(&v, "summary.exchanges.completed"), mq(&v, "puback"));
    assert!(u(&v, "summary.exchanges.completed") >= 600);
}

#[test]
fn an_on_rule_that_matches_anything_takes_deliveries_not_acknowledgements() {
    // A catch-all rule takes every delivery; the steps' SUBACK, PUBACK and UNSUBACK
    // still complete their steps (an acknowledgement carries nothing to match).
    let Some(b) = Broker::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("any.toml");
    std::fs::write(
        &file,
        format!(
            "target = \"{}\"\n[users]\ncount = 3\narrive = \"100/s\"\nhold = \"1s\"\n\
             [[steps]]\nname = \"join\"\nsubscribe = \"any/#\"\nqos = 1\n\
             [[steps]]\nname = \"say\"\ntopic = \"any/{{user}}\"\nsend = \"hi {{user}}\"\nqos = 1\n\
             [[on]]\nname = \"all\"\nmatch = {{ regex = \".*\" }}\n\
             [[leave]]\nname = \"bye\"\nunsubscribe = \"any/#\"\n",
            b.url()
        ),
    )
    .unwrap();
    let v = run_result(&["run", file.to_str().unwrap()], &[]);
    for s in ["join", "say", "bye"] {
        let st = step(&v, s);
        assert_eq!((u(st, "sent"), u(st, "completed")), (3, 3), "{s}: {st}");
    }
    // Each say reached the subscribers that had joined by then: every delivery an on rule
    // took, none an acknowledgement.
    assert_eq!(
        u(&v, "summary.totals.pushed"),
        received(&v, 0) + received(&v, 1)
    );
    assert!(u(&v, "summary.totals.pushed") >= 3);
}

/// mqtts:// with a client certificate (issue 45, item 4): mosquitto's TLS listener with
/// `require_certificate true` takes the PUBLISHes of a client that presents one, as many as
/// its `$SYS` counters say it received; without one the run stops before any load.
#[test]
fn mqtts_with_a_client_certificate_reconciles_with_mosquitto() {
    let m = crate::pki::mtls(&["localhost"]);
    // Debian's mosquitto drops root to its own user: it must read the certificates.
    let _ = StdCommand::new("chmod")
        .args(["-R", "a+rX"])
        .arg(m.pki.dir.path())
        .status();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let extra = format!(
        "listener TLSPORT 127.0.0.1\ncafile {}\ncertfile {}\nkeyfile {}\nrequire_certificate true\n",
        path(&m.pki.ca),
        path(&m.pki.cert),
        path(&m.pki.key)
    );
    let Some(b) = Broker::start_with(&extra) else {
        return;
    };
    let url = format!("mqtts://localhost:{}", b.tls_port);
    let ca = path(&m.pki.ca);
    let (cert, key) = (path(&m.client_cert), path(&m.client_key));
    let base = [
        url.as_str(),
        "--cacert",
        &ca,
        "--publish",
        "t/{conn}",
        "--qos",
        "1",
    ];
    let load = ["-c", "2", "-n", "500", "--pipeline", "4"];
    let id = ["--cert", cert.as_str(), "--key", key.as_str()];
    let v = run_result(&[&base[..], &load, &id].concat(), &[]);
    conserved(&v);
    assert_eq!(u(&v, "summary.exchanges.completed"), 500);
    assert_eq!(mq(&v, "puback"), 500);
    let out = barrage()
        .args([&base[..], &load].concat())
        .args(["-q"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("client certificate"), "{err}");
    let ended = b.started.elapsed();
    std::thread::sleep(Duration::from_millis(3000));
    let sys = b.sys();
    assert!(
        sys["uptime"] as f64 >= ended.as_secs_f64().floor(),
        "the $SYS snapshot predates the runs' end: {sys:?}"
    );
    assert_eq!(sys["publish/messages/received"], 500, "{sys:?}");
}
