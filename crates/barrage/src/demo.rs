//! `barrage demo`: the embedded default. An echo server on a free loopback port, a ping-pong
//! test and an interval test against it, both summaries printed.

use crate::cli::{DemoArgs, RunArgs};
use barrage_servers::echo::{self, EchoConfig};
use clap::Parser;

#[derive(Parser)]
struct DemoRun {
    #[command(flatten)]
    run: RunArgs,
}

pub fn demo(a: &DemoArgs) -> anyhow::Result<i32> {
    let server = echo::start(EchoConfig {
        listen: "127.0.0.1:0".parse()?,
        threads: 1,
        ..EchoConfig::default()
    })?;
    let url = format!("tcp://{}", server.local_addr());
    let secs = format!("{}ms", a.duration.as_millis());
    say!("barrage demo: echo server on {url} (1 thread), two tests of {secs} each\n");
    let tests: [(&str, Vec<&str>); 2] = [
        (
            "1/2 ping-pong: 50 connections, the next message as soon as the reply arrives",
            vec!["-c", "50"],
        ),
        (
            "2/2 fixed interval: 200 connections, one message every 20 ms each (10,000/s)",
            vec!["-c", "200", "--interval", "20ms"],
        ),
    ];
    let mut code = 0;
    for (title, extra) in tests {
        say!("== {title}");
        let mut argv = vec!["barrage", url.as_str(), "-d", secs.as_str(), "-t", "1"];
        if a.quiet {
            argv.push("-q");
        }
        argv.extend(extra);
        let args = DemoRun::try_parse_from(&argv)?.run;
        let rc = crate::run::run(&args, argv.iter().map(|s| s.to_string()).collect())?;
        code = code.max(rc);
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
