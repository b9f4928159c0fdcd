//! What the floor examples (`open_loop_floor`, `pipelined_floor`, their io_uring twins) share:
//! the exit on a bad argument, the loopback check, durations, the connections, and the
//! process's CPU time.

use std::net::SocketAddr;
use std::time::Duration;

use mio::net::TcpStream;
use mio::{Interest, Poll, Token};

/// Runs `run`; an error is one line on stderr and exit code 2.
pub fn main(name: &str, run: fn() -> Result<(), String>) {
    if let Err(e) = run() {
        eprintln!("{name}: {e}");
        std::process::exit(2);
    }
}

/// The open-loop floors' arguments: ADDR CONNS INTERVAL SLACK DURATION.
#[allow(dead_code)] // the open-loop floors'
pub struct OpenLoopArgs {
    pub addr: SocketAddr,
    pub conns: usize,
    pub interval: Duration,
    pub slack: Duration,
    pub secs: Duration,
}

/// Parses the open-loop floors' arguments; `name` is the example's, for the usage line.
#[allow(dead_code)]
pub fn open_loop_args(name: &str) -> Result<OpenLoopArgs, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [addr, conns, interval, slack, secs] = &args[..] else {
        return Err(format!("usage: {name} ADDR CONNS INTERVAL SLACK DURATION"));
    };
    Ok(OpenLoopArgs {
        addr: loopback(addr)?,
        conns: conns.parse().map_err(|_| "CONNS: a number")?,
        interval: duration(interval)?,
        slack: duration(slack)?,
        secs: duration(secs)?,
    })
}

/// The pipelined floors' arguments: ADDR CONNS PIPELINE REQUESTS.
#[allow(dead_code)] // the pipelined floors'
pub struct PipelinedArgs {
    pub addr: SocketAddr,
    pub conns: usize,
    pub pipeline: u64,
    pub total: u64,
}

/// Parses the pipelined floors' arguments; `name` is the example's, for the usage line.
#[allow(dead_code)]
pub fn pipelined_args(name: &str) -> Result<PipelinedArgs, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [addr, conns, pipeline, total] = &args[..] else {
        return Err(format!("usage: {name} ADDR CONNS PIPELINE REQUESTS"));
    };
    Ok(PipelinedArgs {
        addr: loopback(addr)?,
        conns: conns.parse().map_err(|_| "CONNS: a number")?,
        pipeline: pipeline.parse().map_err(|_| "PIPELINE: a number")?,
        total: total.parse().map_err(|_| "REQUESTS: a number")?,
    })
}

/// `addr` parsed, refused unless it is loopback.
pub fn loopback(addr: &str) -> Result<SocketAddr, String> {
    let a: SocketAddr = addr
        .parse()
        .map_err(|_| format!("not an address: {addr}"))?;
    if !a.ip().is_loopback() {
        return Err(format!("{a} is not loopback"));
    }
    Ok(a)
}

/// `n` connections to `addr` (TCP_NODELAY, non-blocking), registered for reading as tokens
/// 0..n.
pub fn connect(addr: SocketAddr, n: usize, poll: &Poll) -> Result<Vec<TcpStream>, String> {
    let io = |e: std::io::Error| e.to_string();
    let mut streams = Vec::with_capacity(n);
    for i in 0..n {
        let s = std::net::TcpStream::connect(addr).map_err(io)?;
        s.set_nodelay(true).map_err(io)?;
        s.set_nonblocking(true).map_err(io)?;
        let mut s = TcpStream::from_std(s);
        poll.registry()
            .register(&mut s, Token(i), Interest::READABLE)
            .map_err(io)?;
        streams.push(s);
    }
    Ok(streams)
}

/// A duration as `50ms`, `100us`, `10s` (a bare number is seconds).
#[allow(dead_code)] // the open-loop floors'
pub fn duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = s
        .find(|c: char| c.is_ascii_alphabetic())
        .map_or((s, "s"), |i| s.split_at(i));
    let v: f64 = num.parse().map_err(|_| format!("not a duration: {s}"))?;
    let ns = match unit {
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(format!("unit of {s}: us, ms or s")),
    };
    Ok(Duration::from_nanos((v * ns) as u64))
}

/// The process's user + system CPU time so far.
pub fn cpu_time() -> Duration {
    // SAFETY: getrusage writes one rusage into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
