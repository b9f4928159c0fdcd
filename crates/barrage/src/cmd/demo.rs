//! `barrage demo`: the embedded default. An echo server on a free loopback port, a ping-pong
//! test and an interval test against it, both summaries printed. Each test is a spec (the run
//! as data), as any other run is once its command line is resolved.

use crate::resolve::cli::DemoArgs;
use barrage_engine::spec::ns;
use barrage_engine::{ModeSpec, ProtocolSpec, Spec, TcpSpec};
use barrage_servers::echo::{self, EchoConfig};

/// What to try after the demo: the same tests against the user's own server.
const NEXT: &str = "\
Try next, against your own server (loopback here; -d bounds every run):
  barrage tcp://HOST:PORT -c 100 -d 30s                       TCP ping-pong (also ws://, redis://)
  barrage http://HOST:PORT/ --rate 5k -d 30s --report r.html  open loop, 5,000/s, HTML report
  barrage find-max http://HOST:PORT/ --slo 'p99 < 20ms'       the highest rate that meets an SLO
  barrage validate examples/chat.toml                         a scenario of users (examples/)
  barrage run --help                                          every flag";

pub fn demo(a: &DemoArgs) -> anyhow::Result<i32> {
    let server = echo::start(EchoConfig {
        listen: "127.0.0.1:0".parse()?,
        threads: 1,
        ..EchoConfig::default()
    })?;
    let addr = server.local_addr();
    let url = format!("tcp://{addr}");
    let secs = format!("{}ms", a.duration.as_millis());
    say!(
        "barrage demo: echo server on {url} (1 thread), two tests of {secs} each after a \
         warm-up\n"
    );
    let tests = [
        (
            "1/2 ping-pong: 50 connections, the next message as soon as the reply arrives",
            50,
            ModeSpec::PingPong,
        ),
        (
            "2/2 fixed interval: 200 connections, one message every 20 ms each (10,000/s)",
            200,
            ModeSpec::Interval { ns: 20_000_000 },
        ),
    ];
    let mut code = 0;
    for (title, connections, mode) in tests {
        say!("== {title}");
        let protocol = ProtocolSpec::Tcp(TcpSpec {
            fields: false,
            message: "hello from barrage\\n".into(),
            first_message: None,
            expect: "echo".into(),
            verify: false,
        });
        let mut spec = Spec::new(url.clone(), addr, addr.ip().to_string(), protocol);
        spec.connections = connections;
        spec.mode = mode;
        spec.duration_ns = Some(ns(a.duration));
        // The connects and the first messages (a cold server, a cold cache) are a warm-up,
        // reported apart: the figures are the steady load's.
        spec.warmup_ns = ns(a.duration / 3).min(1_000_000_000);
        let argv = vec!["barrage".into(), "demo".into()];
        let r = crate::resolve::from_spec(spec, a.quiet, argv)?;
        code = code.max(crate::run::run(r, crate::run::Engine)?);
        say!();
    }
    let s = server.shutdown();
    let n = barrage_report::fmt::thousands;
    say!(
        "the echo server served {} connections, {} bytes in {} reads",
        n(s.connections_accepted),
        n(s.bytes_read),
        n(s.reads)
    );
    say!("\n{NEXT}");
    Ok(code)
}
