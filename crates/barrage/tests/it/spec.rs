//! The run as data: the JSON result records the spec the run's plan was built from, with
//! secrets and header values hidden, and a recorded spec builds the same plan again.

use crate::common::*;
use barrage_engine::{ModeSpec, ProtocolSpec, Spec, TcpSpec};

#[test]
fn the_result_records_the_spec_and_it_builds_the_same_plan() {
    let echo = EchoServer::serve("echo", &[]);
    let url = format!("tcp://127.0.0.1:{}", echo.port);
    let args = [
        url.as_str(),
        "-c",
        "3",
        "-t",
        "1",
        "-n",
        "300",
        "--pipeline",
        "2",
        "-m",
        "ping {seq}\\n",
        "--expect",
        "line",
    ];
    let v = run_result(&args, &[]);
    let spec: Spec = serde_json::from_value(field(&v, "spec").clone()).expect("a Spec");
    assert_eq!(spec.connections, 3);
    assert_eq!(spec.requests, Some(300));
    assert_eq!(
        spec.duration_ns, None,
        "-n alone: no duration, the plan bounds it"
    );
    assert_eq!(spec.mode, ModeSpec::PingPong);
    assert_eq!(spec.pipeline, 2);
    match &spec.protocol {
        ProtocolSpec::Tcp(TcpSpec {
            message, expect, ..
        }) => assert_eq!(
            (message.as_str(), expect.as_str()),
            ("ping {seq}\\n", "line")
        ),
        other => panic!("{other:?}"),
    }
    let no_tls = |_: &Spec, _: &barrage_engine::TlsSpec| Err("no TLS".to_string());
    let plan = spec
        .plan(&mut barrage_engine::spec::env_secret, &no_tls)
        .unwrap();
    assert_eq!(plan.message.raw(), b"ping {seq}\n");
    assert_eq!(plan.duration, Some(std::time::Duration::from_secs(600)));
    assert_eq!(plan.connections, 3);
    assert_eq!(u(&v, "summary.exchanges.completed"), 300);
}

#[test]
fn a_recorded_spec_hides_secrets_header_values_and_tokens() {
    let http = EchoServer::serve("http", &[]);
    let url = format!(
        "http://127.0.0.1:{}/p?access_token=tok-123&page=2",
        http.port
    );
    let args = [
        url.as_str(),
        "-c",
        "1",
        "-n",
        "5",
        "-H",
        "Authorization: Bearer literal-789",
        "-X",
        "POST",
        "--body",
        "k={secret:BARRAGE_SPEC_TEST_SECRET}",
        // The path is a 404: what is recorded is tested here, not the server.
        "--lenient-exit",
    ];
    let v = run_result(&args, &[("BARRAGE_SPEC_TEST_SECRET", "value-456")]);
    let text = field(&v, "spec").to_string();
    for secret in ["tok-123", "value-456", "literal-789"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    assert!(text.contains("{secret:BARRAGE_SPEC_TEST_SECRET}"), "{text}");
    assert!(
        text.contains("page=2") && text.contains("Authorization"),
        "{text}"
    );
}
