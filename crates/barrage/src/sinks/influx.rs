//! `--influx URL`: each second's figures pushed to InfluxDB as line protocol while the run
//! goes (`http://HOST:8086/write?db=NAME` for 1.x, `/api/v2/write?org=O&bucket=B` for 2.x with
//! `INFLUX_TOKEN`), for Grafana or Chronograf to draw beside the server's own series.
//!
//! Two measurements, every point tagged with `run` (the start time), `target` and `shard`, and
//! stamped with the wall-clock end of its second: `barrage` (the second's exchanges sent,
//! completed and failed, errors, connects, bytes, open connections, in flight, its rate and
//! latency percentiles in µs) and `barrage_errors` (a point per error class that occurred, its
//! `count`). The counts are the run's own per-second series, so summing a field over the run
//! gives the result's figure exactly (what the test checks against a real InfluxDB).
//!
//! Key decision: the coordinator only formats a second's lines and hands them to the push
//! writer ([`crate::sinks::push`]): a slow or absent InfluxDB never reaches the engine, and
//! what was not written is said in one line at the end.

use crate::sinks::push::{Endpoint, Pusher};
use crate::usage::Usage;
use barrage_metrics::{ErrorClass, Tick};
use std::time::{SystemTime, UNIX_EPOCH};

/// Where the points go: the write endpoint (with `precision=ns`), and the token for
/// InfluxDB 2.x (`INFLUX_TOKEN`) as its `Authorization` header.
#[derive(Clone, Debug)]
pub struct InfluxTarget(Endpoint);

impl InfluxTarget {
    /// `--influx URL`: an `http://` URL with a path (`/write?db=NAME` or `/api/v2/write?...`).
    pub fn parse(url: &str) -> Result<InfluxTarget, Usage> {
        let mut e = Endpoint::parse(
            "--influx",
            url,
            "http://HOST:8086/write?db=NAME (1.x) or \
             http://HOST:8086/api/v2/write?org=ORG&bucket=BUCKET (2.x, INFLUX_TOKEN)",
        )?
        .with_param("precision=ns");
        if let Some(t) = std::env::var("INFLUX_TOKEN").ok().filter(|t| !t.is_empty()) {
            e.headers = format!("Authorization: Token {t}\r\n");
        }
        Ok(InfluxTarget(e))
    }
}

/// The tags every point carries.
pub struct RunTags {
    pub run: String,
    pub target: String,
    pub shard: String,
}

/// A run's points, queued for the writer.
pub struct Influx {
    pusher: Pusher,
    /// Wall-clock time of the run's t = 0, in ns since the Unix epoch.
    base_ns: u128,
    tags: String,
}

impl Influx {
    /// Starts the writer; `t0` is the wall-clock time of the run's t = 0.
    pub fn start(target: InfluxTarget, tags: RunTags, t0: SystemTime) -> Influx {
        let tags = format!(
            "run={},target={},shard={}",
            tag(&tags.run),
            tag(&tags.target),
            tag(&tags.shard)
        );
        Influx {
            pusher: Pusher::start(target.0),
            base_ns: t0.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()),
            tags,
        }
    }

    /// A second became final: its points, queued.
    pub fn tick(&self, t: &Tick) {
        let ns = self.base_ns + (t.t * 1e9) as u128;
        self.pusher.send(lines(t, &self.tags, ns));
    }

    /// Waits for the queued seconds to be written; a line on stderr when some were not.
    pub fn finish(self) {
        self.pusher.finish();
    }
}

/// A tag value in line protocol: commas, spaces and equal signs escaped; never empty.
fn tag(v: &str) -> String {
    if v.is_empty() {
        return "none".into();
    }
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        if matches!(c, ',' | ' ' | '=' | '\\') {
            out.push('\\');
        }
        if c == '\n' || c == '\r' {
            out.push_str("\\ ");
            continue;
        }
        out.push(c);
    }
    out
}

/// One second as line protocol: the `barrage` point and a `barrage_errors` point per class.
fn lines(t: &Tick, tags: &str, ns: u128) -> String {
    use std::fmt::Write as _;
    let l = &t.latency_us;
    let mut s = format!(
        "barrage,{tags},phase={} sent={}i,completed={}i,failed={}i,failed_requests={}i,\
         errors={}i,connects={}i,connect_failures={}i,bytes_read={}i,bytes_written={}i,\
         open={}i,in_flight={}i,rps={}",
        format!("{:?}", t.phase).to_lowercase(),
        t.sent,
        t.requests,
        t.failed,
        t.failed_requests,
        t.errors.total(),
        t.connects,
        t.connect_failures,
        t.bytes_read,
        t.bytes_written,
        t.open,
        t.in_flight,
        t.rps,
    );
    // Percentiles only for a second that timed something: 0 µs would be a figure.
    if l.count > 0 {
        let _ = write!(
            s,
            ",p50_us={}i,p90_us={}i,p99_us={}i,p999_us={}i,max_us={}i,timed={}i",
            l.p50, l.p90, l.p99, l.p999, l.max, l.count
        );
    }
    let _ = writeln!(s, " {ns}");
    for class in ErrorClass::ALL {
        let n = t.errors.get(class);
        if n > 0 {
            let _ = writeln!(
                s,
                "barrage_errors,{tags},class={} count={n}i {ns}",
                tag(class.as_str())
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_escaped_and_a_second_is_its_points() {
        assert_eq!(tag("tcp://h:1/a b,c=d"), "tcp://h:1/a\\ b\\,c\\=d");
        assert_eq!(tag(""), "none");
        let mut t = Tick {
            t: 2.0,
            requests: 10,
            sent: 11,
            ..Tick::default()
        };
        t.errors.add(ErrorClass::Timeout, 1);
        let s = lines(&t, "run=r,target=x,shard=0", 5_000_000_000);
        let mut l = s.lines();
        let first = l.next().unwrap();
        assert!(
            first.starts_with(
                "barrage,run=r,target=x,shard=0,phase=measured sent=11i,completed=10i,"
            ),
            "{first}"
        );
        assert!(first.ends_with(" 5000000000"), "{first}");
        assert!(!first.contains("p50_us"), "nothing timed: {first}");
        assert_eq!(
            l.next(),
            Some("barrage_errors,run=r,target=x,shard=0,class=timeout count=1i 5000000000")
        );
        assert_eq!(l.next(), None);
    }
}
