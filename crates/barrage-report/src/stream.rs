//! The durable stream of a run (`--out DIR`): what a run writes while it goes, so that a
//! process killed at hour 11 leaves hours of results behind.
//!
//! ```text
//! DIR/run.json       the header, written whole before the load: command line, start time,
//!                    settings, environment, spec, timeline, thresholds
//! DIR/seconds.jsonl  one line per second as it becomes final: the second's merged delta
//!                    (counters and histograms of every worker), appended and synced
//! DIR/monitor.jsonl  with --monitor/--spawn: the newest sample of each watched process, the
//!                    machine and barrage, a line each time a new one was taken
//! DIR/result.json    the result, written whole at the end (as --json writes it)
//! ```
//!
//! Key decision: a line is the aggregator's merged delta, not the rendered tick, so replaying
//! the lines into a fresh aggregator of one worker gives the same ticks and the same summary
//! (counts are sums, histograms merge exactly): a run that never wrote `result.json` is
//! rebuilt from the seconds it recorded, marked incomplete. A torn last line (the process died
//! while writing it) is left out; a bad line before the last is an error.

use crate::file::{read_json, write_whole, ReportError};
use crate::render::Renderer as _;
use barrage_metrics::result::{Environment, RunConfig, Status};
use barrage_metrics::{
    Aggregator, Delta, HostSample, LatencyBasis, MonitorSeries, ProcSample, ProcessSeries,
    RunResult, Timeline,
};
pub use seconds::{clock, decode_second, Order, SecondError, MAX_COUNT};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

mod seconds;

pub const SCHEMA: &str = "barrage.stream/1";
pub const HEADER: &str = "run.json";
pub const SECONDS: &str = "seconds.jsonl";
pub const RESULT: &str = "result.json";
pub const MONITOR: &str = "monitor.jsonl";

/// `DIR/run.json`: what a result needs besides its seconds.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Header {
    pub schema: String,
    pub command_line: Vec<String>,
    pub started_at: String,
    pub config: RunConfig,
    pub environment: Environment,
    #[serde(default)]
    pub spec: Option<serde_json::Value>,
    pub timeline: Timeline,
    pub latency_basis: LatencyBasis,
    /// The connections (or users) the run planned, as the summary reports them.
    pub connections: u64,
    /// The `--threshold` expressions, judged again on a rebuilt result.
    #[serde(default)]
    pub thresholds: Vec<String>,
    /// A shard of a split run (`--shard I/N`): (I, N).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<(usize, usize)>,
    /// With monitoring: what `monitor.jsonl` samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<MonitorHeader>,
}

/// What the monitor watches, for rebuilding its series.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MonitorHeader {
    pub interval_s: f64,
    /// The sampler's clock runs this much ahead of the run's (its idle baseline interval).
    pub lead_s: f64,
    /// The watched processes: pid and command line, in the order of the lines' samples.
    pub processes: Vec<(u32, String)>,
}

/// One line of `monitor.jsonl`: the newest samples at the sampler's time `t`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MonitorLine {
    pub t: f64,
    pub processes: Vec<Option<ProcSample>>,
    pub host: Option<HostSample>,
    pub generator: Option<ProcSample>,
}

/// Writes a run's stream as it goes: each second is written (to the page cache: a killed
/// process loses nothing written) by the caller, and synced to the disk by a thread of its
/// own, so a slow disk never holds the caller (the run's coordinator).
pub struct Writer {
    dir: PathBuf,
    seconds: File,
    line: Vec<u8>,
    /// Seconds written so far.
    pub written: u64,
    syncer: Option<Syncer>,
    /// `monitor.jsonl` once a sample came, and the time of the last one written.
    monitor: Option<(File, f64)>,
}

/// The thread that syncs the seconds file after each second; a failure is reported by the
/// next [`Writer::second`].
struct Syncer {
    kick: std::sync::mpsc::Sender<()>,
    failed: std::sync::Arc<std::sync::Mutex<Option<io::Error>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Syncer {
    fn start(file: File) -> io::Result<Syncer> {
        let (kick, rx) = std::sync::mpsc::channel::<()>();
        let failed = std::sync::Arc::new(std::sync::Mutex::new(None));
        let f2 = std::sync::Arc::clone(&failed);
        let thread = std::thread::Builder::new()
            .name("barrage-out-sync".into())
            .spawn(move || {
                while rx.recv().is_ok() {
                    while rx.try_recv().is_ok() {} // one sync covers every second so far
                    if let Err(e) = file.sync_data() {
                        if let Ok(mut slot) = f2.lock() {
                            slot.get_or_insert(e);
                        }
                    }
                }
                let _ = file.sync_data();
            })?;
        Ok(Syncer {
            kick,
            failed,
            thread: Some(thread),
        })
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        // Closing the channel ends the thread after a last sync.
        let (kick, _) = std::sync::mpsc::channel();
        drop(std::mem::replace(&mut self.kick, kick));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Writer {
    /// Creates `dir` (it must not exist, or be empty) with the header and an empty seconds
    /// file. Every failure names the path.
    pub fn create(dir: &Path, header: &Header) -> io::Result<Writer> {
        match std::fs::read_dir(dir) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        "the directory holds files already (a run?); give a new or empty one",
                    ));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => std::fs::create_dir(dir)?,
            Err(e) => return Err(e),
        }
        write_whole(&dir.join(HEADER), |w| {
            serde_json::to_writer_pretty(&mut *w, header)?;
            w.write_all(b"\n")
        })?;
        let seconds = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(dir.join(SECONDS))?;
        let syncer = Syncer::start(seconds.try_clone()?)?;
        Ok(Writer {
            dir: dir.to_path_buf(),
            seconds,
            line: Vec::with_capacity(4096),
            written: 0,
            syncer: Some(syncer),
            monitor: None,
        })
    }

    /// Appends one second (one `write`; the syncer thread then syncs it to the disk). An
    /// error of an earlier sync is returned here.
    pub fn second(&mut self, merged: &Delta) -> io::Result<()> {
        if let Some(s) = &self.syncer {
            if let Some(e) = s.failed.lock().ok().and_then(|mut f| f.take()) {
                return Err(e);
            }
        }
        self.line.clear();
        serde_json::to_writer(&mut self.line, merged)?;
        self.line.push(b'\n');
        self.seconds.write_all(&self.line)?;
        if let Some(s) = &self.syncer {
            let _ = s.kick.send(());
        }
        self.written += 1;
        Ok(())
    }

    /// Appends the monitor's newest samples, when they are newer than the last written.
    pub fn monitor(&mut self, line: &MonitorLine) -> io::Result<()> {
        if self.monitor.as_ref().is_some_and(|(_, t)| *t >= line.t) {
            return Ok(());
        }
        if self.monitor.is_none() {
            let f = OpenOptions::new()
                .append(true)
                .create(true)
                .open(self.dir.join(MONITOR))?;
            self.monitor = Some((f, f64::NEG_INFINITY));
        }
        let (f, t) = self.monitor.as_mut().expect("opened above");
        let mut text = serde_json::to_vec(line)?;
        text.push(b'\n');
        f.write_all(&text)?;
        *t = line.t;
        Ok(())
    }

    /// Writes `DIR/result.json` whole.
    pub fn finish(&self, result: &RunResult) -> io::Result<()> {
        write_whole(&self.dir.join(RESULT), |w| {
            crate::json::JsonRenderer.render(result, w)
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Whether `path` is a run's stream directory.
pub fn is_stream(path: &Path) -> bool {
    path.is_dir() && path.join(HEADER).is_file()
}

/// The header and every whole second a stream directory recorded, in order.
pub fn seconds(dir: &Path) -> Result<(Header, Vec<Delta>), ReportError> {
    let (header, it) = seconds_iter(dir)?;
    let out = it.collect::<Result<Vec<_>, _>>()?;
    Ok((header, out))
}

/// The header and the seconds of a stream directory, read one line at a time: a long run's
/// seconds (a histogram each) do not fit in memory all at once.
pub fn seconds_iter(dir: &Path) -> Result<(Header, Seconds), ReportError> {
    let header = header_of(dir)?;
    let path = dir.join(SECONDS);
    let file = std::fs::File::open(&path).map_err(|source| ReportError::Read {
        path: path.clone(),
        source,
    })?;
    let seconds = Seconds::new(file, path, header.timeline, Where::Lines);
    Ok((header, seconds))
}

/// Where a stream's seconds are read from, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Where {
    /// `DIR/seconds.jsonl`, a line each; a last line that does not parse is the one the
    /// process died writing, and ends the stream.
    Lines,
    /// A shard's `--json` result, `stream.seconds[i]`: written whole, every one must parse.
    Embedded,
}

/// The seconds of a stream, in file order (see [`seconds_iter`]), each decoded and checked
/// (see [`decode_second`] and [`Order`]).
pub struct Seconds {
    lines: io::Lines<io::BufReader<File>>,
    ahead: Option<io::Result<String>>,
    path: PathBuf,
    place: Where,
    /// Lines read so far.
    line: usize,
    order: Order,
}

impl Seconds {
    fn new(file: File, path: PathBuf, timeline: barrage_metrics::Timeline, place: Where) -> Self {
        let mut lines = io::BufRead::lines(io::BufReader::new(file));
        let ahead = lines.next();
        Seconds {
            lines,
            ahead,
            path,
            place,
            line: 0,
            order: Order::new(timeline),
        }
    }

    /// The seconds read so far, as a sequence: how many, whether the drain came, where they
    /// end.
    pub fn order(&self) -> &Order {
        &self.order
    }

    fn refused(&self, key: Option<u64>, why: SecondError) -> ReportError {
        let place = match self.place {
            Where::Lines => format!("line {}", self.line),
            Where::Embedded => format!("stream.seconds[{}]", self.line - 1),
        };
        ReportError::Second {
            path: self.path.clone(),
            place,
            second: key.map(seconds::at),
            why: Box::new(why),
        }
    }
}

impl Iterator for Seconds {
    type Item = Result<Delta, ReportError>;

    fn next(&mut self) -> Option<Self::Item> {
        let line = self.ahead.take()?;
        self.ahead = self.lines.next();
        self.line += 1;
        let line = match line {
            Ok(l) => l,
            Err(source) => {
                return Some(Err(ReportError::Read {
                    path: self.path.clone(),
                    source,
                }))
            }
        };
        let d = match decode_second(&line) {
            Ok(d) => d,
            Err(SecondError::Json(_)) if self.ahead.is_none() && self.place == Where::Lines => {
                return None
            }
            Err(e) => return Some(Err(self.refused(e.key(), e))),
        };
        if let Err(e) = self.order.check(&d) {
            return Some(Err(self.refused(Some(d.key), e)));
        }
        Some(Ok(d))
    }
}

/// The key of a shard's `--json` result that embeds its stream: `{"header": H, "seconds":
/// [...]}`, the header and the lines a `--out` directory would hold, so that the result file
/// alone merges exactly.
pub const EMBEDDED: &str = "stream";

/// How a result file says its run ended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ended {
    pub status: Option<Status>,
    pub message: Option<String>,
}

/// The header and seconds a shard's `--json` result embeds (see [`EMBEDDED`]), and how the
/// shard's run ended. The file is read once, a second at a time, into `spool` (a
/// temporary file, a line each), which the seconds are then read from: a long run's result
/// never has to fit in memory.
pub fn embedded_iter(path: &Path, spool: File) -> Result<(Header, Seconds, Ended), ReportError> {
    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
    /// The result file: its status, and its stream (the seconds go to the spool).
    struct FileSeed<'a>(&'a mut io::BufWriter<File>);
    struct StreamSeed<'a>(&'a mut io::BufWriter<File>);
    struct SecondsSeed<'a>(&'a mut io::BufWriter<File>);
    type Found = (Ended, Option<Header>);

    impl<'de> DeserializeSeed<'de> for FileSeed<'_> {
        type Value = Found;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Found, D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for FileSeed<'_> {
        type Value = Found;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a barrage result")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Found, A::Error> {
            let (mut ended, mut header) = (Ended::default(), None);
            while let Some(k) = m.next_key::<String>()? {
                match k.as_str() {
                    "status" => ended.status = m.next_value()?,
                    "message" => ended.message = m.next_value()?,
                    EMBEDDED => header = m.next_value_seed(StreamSeed(&mut *self.0))?,
                    _ => {
                        m.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok((ended, header))
        }
    }
    impl<'de> DeserializeSeed<'de> for StreamSeed<'_> {
        type Value = Option<Header>;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_option(self)
        }
    }
    impl<'de> Visitor<'de> for StreamSeed<'_> {
        type Value = Option<Header>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a shard's stream: {\"header\": ..., \"seconds\": [...]}")
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
            let (mut header, mut seconds) = (None, false);
            while let Some(k) = m.next_key::<String>()? {
                match k.as_str() {
                    "header" => header = Some(m.next_value::<Header>()?),
                    "seconds" => {
                        m.next_value_seed(SecondsSeed(&mut *self.0))?;
                        seconds = true;
                    }
                    _ => {
                        m.next_value::<IgnoredAny>()?;
                    }
                }
            }
            match (header, seconds) {
                (Some(h), true) => Ok(Some(h)),
                (None, _) => Err(serde::de::Error::missing_field("header")),
                (_, false) => Err(serde::de::Error::missing_field("seconds")),
            }
        }
    }
    impl<'de> DeserializeSeed<'de> for SecondsSeed<'_> {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_seq(self)
        }
    }
    impl<'de> Visitor<'de> for SecondsSeed<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of seconds")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
            while let Some(raw) = s.next_element::<Box<serde_json::value::RawValue>>()? {
                // A newline in JSON text is whitespace (strings hold it escaped): one line each.
                let text = raw.get().replace('\n', " ");
                writeln!(self.0, "{text}").map_err(serde::de::Error::custom)?;
            }
            Ok(())
        }
    }

    let f = File::open(path).map_err(|source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let json_err = |source| ReportError::Json {
        path: path.to_path_buf(),
        source,
    };
    let mut out = io::BufWriter::new(spool);
    let mut de = serde_json::Deserializer::from_reader(io::BufReader::new(f));
    let (ended, header) = FileSeed(&mut out).deserialize(&mut de).map_err(json_err)?;
    de.end().map_err(json_err)?;
    let spool = out
        .into_inner()
        .map_err(|e| e.into_error())
        .and_then(|mut f| {
            use std::io::Seek;
            f.rewind().map(|()| f)
        })
        .map_err(|source| ReportError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    let Some(header) = header else {
        return Err(ReportError::NoStream {
            path: path.to_path_buf(),
        });
    };
    if header.schema != SCHEMA {
        return Err(ReportError::Schema {
            path: path.to_path_buf(),
            found: Some(header.schema),
        });
    }
    let seconds = Seconds::new(spool, path.to_path_buf(), header.timeline, Where::Embedded);
    Ok((header, seconds, ended))
}

fn header_of(dir: &Path) -> Result<Header, ReportError> {
    let header_path = dir.join(HEADER);
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|source| ReportError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    let text = read(&header_path)?;
    let header: Header = serde_json::from_str(&text).map_err(|source| ReportError::Json {
        path: header_path.clone(),
        source,
    })?;
    if header.schema != SCHEMA {
        return Err(ReportError::Schema {
            path: header_path,
            found: Some(header.schema),
        });
    }
    Ok(header)
}

/// The result of a stream directory: `result.json` when the run wrote it, else the result
/// rebuilt from the header and the seconds, with status incomplete.
pub fn load_dir(dir: &Path) -> Result<RunResult, ReportError> {
    let result = dir.join(RESULT);
    if result.is_file() {
        return read_json(&result);
    }
    // A second at a time: a long run's seconds (a histogram each) do not fit in memory.
    let (header, mut seconds) = seconds_iter(dir)?;
    let mut agg = Aggregator::new(header.timeline, 1);
    for d in seconds.by_ref() {
        agg.push(d?);
    }
    let (count, ended_ns) = (seconds.order().count, seconds.order().end_ns);
    let outcome = agg.finish(header.connections, header.latency_basis);
    let message = format!(
        "ended at {} without a summary ({count} seconds recorded)",
        clock(ended_ns)
    );
    let monitor = header
        .monitor
        .as_ref()
        .map(|m| monitor_series(dir, m))
        .transpose()?;
    let command_line = header.command_line.clone();
    Ok(result_of(
        header,
        outcome,
        Status::Incomplete,
        message,
        command_line,
        monitor,
    ))
}

/// A result from a stream's header and the outcome of its seconds (one run's, or merged
/// shards'): the header's settings and spec, its thresholds judged on the outcome.
pub fn result_of(
    header: Header,
    outcome: barrage_metrics::Outcome,
    status: Status,
    message: String,
    command_line: Vec<String>,
    monitor: Option<MonitorSeries>,
) -> RunResult {
    let mut r = RunResult::new(
        status,
        Some(message),
        command_line,
        header.started_at,
        header.config,
        header.environment,
        outcome,
    );
    r.spec = header.spec;
    r.monitor = monitor;
    let thresholds: Vec<_> = header
        .thresholds
        .iter()
        .filter_map(|e| barrage_metrics::thresholds::parse(e).ok())
        .collect();
    r.conclude(&thresholds, None);
    r
}

/// The monitor's series from `monitor.jsonl`, on the run's clock (shifted as the run itself
/// shifts them: its first sample is t = 0).
fn monitor_series(dir: &Path, m: &MonitorHeader) -> Result<MonitorSeries, ReportError> {
    let path = dir.join(MONITOR);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(ReportError::Read { path, source }),
    };
    let mut series = MonitorSeries {
        interval_s: m.interval_s,
        processes: m
            .processes
            .iter()
            .map(|(pid, command)| ProcessSeries {
                pid: *pid,
                command: command.clone(),
                samples: Vec::new(),
            })
            .collect(),
        ..MonitorSeries::default()
    };
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let line: MonitorLine = match serde_json::from_str(l) {
            Ok(x) => x,
            Err(_) if i + 1 == lines.len() => break,
            Err(source) => return Err(ReportError::Json { path, source }),
        };
        for (p, s) in series.processes.iter_mut().zip(line.processes) {
            if let Some(s) = s.filter(|s| p.samples.last().is_none_or(|l| l.t < s.t)) {
                p.samples.push(s);
            }
        }
        if let Some(h) = line
            .host
            .filter(|h| series.host.last().is_none_or(|l| l.t < h.t))
        {
            series.host.push(h);
        }
        if let Some(g) = line
            .generator
            .filter(|g| series.generator.last().is_none_or(|l| l.t < g.t))
        {
            series.generator.push(g);
        }
    }
    series.to_run_clock(m.lead_s);
    Ok(series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_a_clock() {
        assert_eq!(clock(5_200_000_000), "5.2s");
        assert_eq!(clock(125_000_000_000), "2m05s");
        assert_eq!(clock(39_725_000_000_000), "11h02m05s");
    }
}
