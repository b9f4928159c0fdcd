//! The file outputs written while the load runs, a second at a time: the durable stream
//! (`--out DIR`), the CSV (`--csv`) and the HdrHistogram interval log (`--hdr-log`).
//!
//! Each is opened before the load (a path that cannot be written is a usage error naming the
//! flag, before any traffic). A write that fails later is one `error:` line at once; a failed
//! `--out` stops the load (the run must not go on without its durable record), a failed CSV or
//! HDR log is dropped and the load goes on. Fed by the coordinator thread through the engine's
//! `Observer`, never by a worker.

use crate::usage::Usage;
use barrage_metrics::{Delta, RunResult, Tick};
use barrage_report::series::{self, HdrLog};
use barrage_report::stream;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// Where the live files go (resolved, not yet opened).
#[derive(Debug, Default)]
pub struct Paths {
    pub out: Option<PathBuf>,
    pub csv: Option<String>,
    pub hdr_log: Option<String>,
    /// A shard's `--json`: its seconds are embedded in the result, for `barrage merge`.
    pub embed: bool,
}

struct Csv {
    path: String,
    file: BufWriter<File>,
    steps: usize,
}

/// A shard's seconds for its `--json` result: spooled to an unlinked temporary file as they
/// come (a long run's seconds stay out of memory), embedded at the end.
struct Spool {
    header: String,
    file: BufWriter<File>,
}

/// The open live files.
#[derive(Default)]
pub struct Recorders {
    stream: Option<stream::Writer>,
    csv: Option<Csv>,
    hdr: Option<(String, HdrLog<File>)>,
    spool: Option<Spool>,
    /// Why the shard's seconds could not be kept (its `--json` cannot embed them).
    spool_failed: Option<String>,
}

impl Recorders {
    /// Opens every file the paths name, writing their headers.
    pub fn open(paths: &Paths, header: &stream::Header) -> Result<Recorders, Usage> {
        let mut r = Recorders::default();
        if let Some(dir) = &paths.out {
            let w = stream::Writer::create(dir, header)
                .map_err(|e| Usage::value("--out", dir.display(), e))?;
            r.stream = Some(w);
        }
        if let Some(path) = &paths.csv {
            let steps: Vec<String> = header.config.steps.iter().map(|s| s.name.clone()).collect();
            let open = || -> std::io::Result<BufWriter<File>> {
                let mut f = BufWriter::new(File::create(path)?);
                f.write_all(series::csv_header(&steps).as_bytes())?;
                f.flush()?;
                Ok(f)
            };
            let file = open().map_err(|e| Usage::value("--csv", path, e))?;
            r.csv = Some(Csv {
                path: path.clone(),
                file,
                steps: steps.len(),
            });
        }
        if let Some(path) = &paths.hdr_log {
            let start = series::unix_seconds(&header.started_at).unwrap_or(0.0);
            let log = File::create(path)
                .and_then(|f| HdrLog::start(f, start, &header.started_at))
                .map_err(|e| Usage::value("--hdr-log", path, e))?;
            r.hdr = Some((path.clone(), log));
        }
        if paths.embed {
            let header = serde_json::to_string(header).expect("a header serializes");
            let file = crate::sys::unlinked_temp_file("shard-seconds").map_err(|e| {
                Usage::new("--json", format!("a temporary file for the seconds: {e}"))
            })?;
            r.spool = Some(Spool {
                header,
                file: BufWriter::new(file),
            });
        }
        Ok(r)
    }

    /// A shard's header and seconds (one JSON line each), to embed in its `--json` result;
    /// `Err`: they could not be kept, and why (the result is written without them).
    pub fn take_embedded(&mut self) -> Result<Option<(String, std::io::BufReader<File>)>, String> {
        use std::io::Seek;
        if let Some(why) = self.spool_failed.take() {
            return Err(why);
        }
        let Some(s) = self.spool.take() else {
            return Ok(None);
        };
        let failed = |e: std::io::Error| {
            format!("--json: cannot keep the shard's seconds ({e}); the result is written without them and will not merge")
        };
        let mut f = s.file.into_inner().map_err(|e| failed(e.into_error()))?;
        f.rewind().map_err(failed)?;
        Ok(Some((s.header, std::io::BufReader::new(f))))
    }

    /// Whether the engine must hand over each second's merged delta.
    pub fn wants_segments(&self) -> bool {
        self.stream.is_some() || self.hdr.is_some() || self.spool.is_some()
    }

    /// One second's merged delta, before its tick. `false`: the durable stream failed and the
    /// load must stop.
    pub fn segment(&mut self, merged: &Delta) -> bool {
        let mut ok = true;
        if let Some(w) = &mut self.stream {
            if let Err(e) = w.second(merged) {
                crate::sys::err_line(format_args!(
                    "error: --out {}: cannot write: {e}; stopping the load (what was recorded is kept)",
                    w.dir().display()
                ));
                self.stream = None;
                ok = false;
            }
        }
        if let Some(s) = &mut self.spool {
            let line = serde_json::to_string(merged).expect("a delta serializes");
            if let Err(e) = writeln!(s.file, "{line}") {
                let why = format!("--json: cannot keep the shard's seconds ({e}); the result is written without them and will not merge");
                crate::sys::err_line(format_args!("error: {why}"));
                self.spool = None;
                self.spool_failed = Some(why);
            }
        }
        if let Some((path, log)) = &mut self.hdr {
            let len = merged.end_ns.saturating_sub(merged.start_ns) as f64 / 1e9;
            if let Err(e) = log.interval(merged.start_ns as f64 / 1e9, len, &merged.latency) {
                crate::sys::err_line(format_args!(
                    "error: --hdr-log {path}: cannot write: {e}; the load goes on without it"
                ));
                self.hdr = None;
            }
        }
        ok
    }

    /// The monitor's newest samples (written to `--out` when newer than the last).
    pub fn monitor(&mut self, line: &stream::MonitorLine) {
        if let Some(w) = &mut self.stream {
            if let Err(e) = w.monitor(line) {
                crate::sys::err_line(format_args!(
                    "error: --out {}: cannot write the monitor's samples: {e}",
                    w.dir().display()
                ));
            }
        }
    }

    /// One second of the time series.
    pub fn tick(&mut self, t: &Tick) {
        if let Some(c) = &mut self.csv {
            let row = series::csv_row(t, None, c.steps);
            if let Err(e) = c
                .file
                .write_all(row.as_bytes())
                .and_then(|()| c.file.flush())
            {
                crate::sys::err_line(format_args!(
                    "error: --csv {}: cannot write: {e}; the load goes on without it",
                    c.path
                ));
                self.csv = None;
            }
        }
    }

    /// At the end: the stream's result, and the CSV rewritten whole from the result (with the
    /// saturation verdicts). Each failure is one line in `failed`.
    pub fn finish(self, result: &RunResult, paths: &Paths, failed: &mut Vec<String>) {
        if let Some(w) = &self.stream {
            if let Err(e) = w.finish(result) {
                failed.push(format!(
                    "--out {}: cannot write the result: {e}",
                    w.dir().display()
                ));
            }
        }
        drop(self.csv);
        if let Some(path) = &paths.csv {
            let text = series::csv(result);
            if let Err(e) = barrage_report::write_whole(std::path::Path::new(path), |w| {
                w.write_all(text.as_bytes())
            }) {
                failed.push(format!("--csv {path}: cannot write: {e}"));
            }
        }
    }
}
