//! `barrage demo`: the embedded default. An echo server on a free loopback port, a ping-pong
//! test and an interval test against it, both summaries printed. Each test is a spec (the run
//! as data), as any other run is once its command line is resolved.

use crate::resolve::cli::DemoArgs;
use barrage_engine::spec::ns;
use barrage_engine::{ModeSpec, ProtocolSpec, Spec};
use barrage_servers::echo::{self, EchoConfig};

pub fn demo(a: &DemoArgs) -> anyhow::Result<i32> {
    let server = echo::start(EchoConfig {
        listen: "127.0.0.1:0".parse()?,
        threads: 1,
        ..EchoConfig::default()
    })?;
    let addr = server.local_addr();
    let url = format!("tcp://{addr}");
    let secs = format!("{}ms", a.duration.as_millis());
    say!("barrage demo: echo server on {url} (1 thread), two tests of {secs} each\n");
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
        let protocol = ProtocolSpec::Tcp {
            message: "hello from barrage\\n".into(),
            first_message: None,
            expect: "echo".into(),
            verify: false,
        };
        let mut spec = Spec::new(url.clone(), addr, addr.ip().to_string(), protocol);
        spec.connections = connections;
        spec.mode = mode;
        spec.duration_ns = Some(ns(a.duration));
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
    Ok(code)
}
