//! Per-second series for post-processing: CSV (one row per second, the per-second JSON's
//! fields as columns) and the HdrHistogram interval log (one compressed latency histogram per
//! second, readable by HdrHistogram's own tools: HistogramLogProcessor, HdrHistogramVisualizer,
//! Python `hdrh`).
//!
//! Both are written while a run goes (`--csv`, `--hdr-log`: a row or an interval per second,
//! flushed) and offline by `barrage report` (CSV from any result; the HDR log needs the
//! per-second histograms, which only a run's `--out` directory keeps).

use barrage_metrics::{ErrorClass, LatencyHistogram, Phase, Tick};
use std::io::{self, Write};

/// The CSV header: the fixed per-second fields, errors by class, broadcast, then four columns
/// per scenario step (`step.NAME.completed`, `.failed`, `.p50`, `.p99`).
pub fn csv_header(steps: &[String]) -> String {
    let mut cols: Vec<String> = [
        "t",
        "dt",
        "phase",
        "requests",
        "rps",
        "sent",
        "failed",
        "failed_requests",
        "scheduled",
        "reads",
        "writes",
        "bytes_read",
        "bytes_written",
        "connects",
        "connect_failures",
        "closed_by_peer",
        "open",
        "open_peak",
        "in_flight",
        "backlog",
        "lag_us_max",
        "saturated",
        "latency_us.p50",
        "latency_us.p90",
        "latency_us.p99",
        "latency_us.max",
        "latency_us.mean",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    cols.extend(
        ErrorClass::ALL
            .iter()
            .map(|c| format!("errors.{}", c.as_str())),
    );
    cols.extend(
        ["deliveries", "deliveries_expected", "delivery_p99_us"]
            .iter()
            .map(|s| s.to_string()),
    );
    for name in steps {
        for k in ["completed", "failed", "p50", "p99"] {
            cols.push(format!("step.{name}.{k}"));
        }
    }
    let mut line = cols.iter().map(|c| field(c)).collect::<Vec<_>>().join(",");
    line.push('\n');
    line
}

/// One second as a CSV row under [`csv_header`] with `steps` step columns. `saturated` is
/// judged once the run is over: `None` (while it runs) leaves the cell empty.
pub fn csv_row(t: &Tick, saturated: Option<bool>, steps: usize) -> String {
    let phase = match t.phase {
        Phase::Warmup => "warmup",
        Phase::Measured => "measured",
        Phase::Drain => "drain",
    };
    let mut cells: Vec<String> = vec![format!("{:.3}", t.t), format!("{:.3}", t.dt), phase.into()];
    cells.push(t.requests.to_string());
    cells.push(format!("{:.1}", t.rps));
    for n in [
        t.sent,
        t.failed,
        t.failed_requests,
        t.scheduled,
        t.reads,
        t.writes,
        t.bytes_read,
        t.bytes_written,
        t.connects,
        t.connect_failures,
        t.closed_by_peer,
        t.open,
        t.open_peak,
        t.in_flight,
        t.backlog,
        t.lag_us_max,
    ] {
        cells.push(n.to_string());
    }
    cells.push(saturated.map_or(String::new(), |s| s.to_string()));
    let l = &t.latency_us;
    for n in [l.p50, l.p90, l.p99, l.max] {
        cells.push(n.to_string());
    }
    cells.push(format!("{:.1}", l.mean));
    cells.extend(ErrorClass::ALL.iter().map(|c| t.errors.get(*c).to_string()));
    for n in [t.deliveries, t.deliveries_expected, t.delivery_p99_us] {
        cells.push(n.to_string());
    }
    for i in 0..steps {
        match t.steps.get(i) {
            Some(s) => {
                for n in [s.completed, s.failed, s.p50, s.p99] {
                    cells.push(n.to_string());
                }
            }
            None => cells.extend(std::iter::repeat_n(String::from("0"), 4)),
        }
    }
    let mut line = cells.join(",");
    line.push('\n');
    line
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The whole CSV of a result: its time series, with the steps its configuration names.
pub fn csv(r: &barrage_metrics::RunResult) -> String {
    let steps: Vec<String> = r.config.steps.iter().map(|s| s.name.clone()).collect();
    let mut out = csv_header(&steps);
    for t in &r.timeseries {
        out.push_str(&csv_row(t, Some(t.saturated), steps.len()));
    }
    out
}

/// Writes an HdrHistogram interval log (format 1.3) as seconds come: the latency of each
/// second in microseconds, `Interval_Max` in milliseconds (max value divisor 1000).
pub struct HdrLog<W: Write> {
    out: W,
}

impl<W: Write> HdrLog<W> {
    /// Writes the log's header: version, the run's start (wall clock, seconds since the epoch,
    /// and RFC 3339), the base time and the column names.
    pub fn start(mut out: W, start_unix_s: f64, started_at: &str) -> io::Result<HdrLog<W>> {
        writeln!(out, "#[Histogram log format version 1.3]")?;
        writeln!(out, "#[barrage latency, microseconds]")?;
        writeln!(
            out,
            "#[StartTime: {start_unix_s:.3} (seconds since epoch), {started_at}]"
        )?;
        writeln!(out, "#[BaseTime: {start_unix_s:.3} (seconds since epoch)]")?;
        writeln!(out, "#[MaxValueDivisor: 1000.0]")?;
        writeln!(
            out,
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        )?;
        out.flush()?;
        Ok(HdrLog { out })
    }

    /// One interval: `start_s` seconds after the base time, `len_s` long.
    pub fn interval(&mut self, start_s: f64, len_s: f64, h: &LatencyHistogram) -> io::Result<()> {
        let max_ms = h.stats().max as f64 / 1000.0;
        writeln!(
            self.out,
            "{start_s:.3},{len_s:.3},{max_ms:.3},{}",
            h.to_base64()
        )?;
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Seconds since the epoch of an RFC 3339 UTC time as barrage writes it
/// (`2026-11-23T06:23:12Z`); `None` for anything else.
pub fn unix_seconds(rfc3339: &str) -> Option<f64> {
    let b = rfc3339.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[19] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| rfc3339.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + hh * 3600 + mm * 60 + ss) as f64)
}

/// The HdrHistogram interval log of a run's `--out` directory: one interval per second it
/// recorded.
pub fn hdr_log_of_stream(dir: &std::path::Path) -> Result<Vec<u8>, crate::ReportError> {
    let (header, seconds) = crate::stream::seconds(dir)?;
    let start = unix_seconds(&header.started_at).unwrap_or(0.0);
    let io_err = |source| crate::ReportError::Write {
        path: dir.to_path_buf(),
        source,
    };
    let mut log = HdrLog::start(Vec::new(), start, &header.started_at).map_err(io_err)?;
    for d in &seconds {
        let len = d.end_ns.saturating_sub(d.start_ns) as f64 / 1e9;
        log.interval(d.start_ns as f64 / 1e9, len, &d.latency)
            .map_err(io_err)?;
    }
    Ok(log.into_inner())
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_reads_as_unix_seconds() {
        assert_eq!(super::unix_seconds("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(
            super::unix_seconds("2026-11-23T06:23:12Z"),
            Some(1_795_414_992.0)
        );
        assert_eq!(
            super::unix_seconds("2000-02-29T12:00:00Z"),
            Some(951_825_600.0)
        );
        assert_eq!(super::unix_seconds("yesterday"), None);
    }

    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn csv_fields_are_quoted_when_they_must_be() {
        assert_eq!(field("a"), "a");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        let h = csv_header(&["log in, then".into()]);
        assert!(h.contains("\"step.log in, then.completed\""), "{h}");
        let t = Tick::default();
        let cols = h.trim_end().split(',').count() - 4; // four quoted names, a comma each
        assert_eq!(csv_row(&t, None, 1).trim_end().split(',').count(), cols);
    }

    #[test]
    fn the_hdr_log_reads_back_with_hdrhistogram() {
        let mut a = LatencyHistogram::new();
        for us in [100, 200, 300, 5_000] {
            a.record_us(us);
        }
        let mut b = LatencyHistogram::new();
        b.record_us(42);
        let mut log = HdrLog::start(Vec::new(), 1_763_870_000.5, "2025-11-23T04:33:20Z").unwrap();
        log.interval(0.0, 1.0, &a).unwrap();
        log.interval(1.0, 1.0, &b).unwrap();
        let bytes = log.into_inner();
        let mut seen = Vec::new();
        for e in IntervalLogIterator::new(&bytes) {
            match e.unwrap() {
                LogEntry::StartTime(t) => assert!((t.as_secs_f64() - 1_763_870_000.5).abs() < 1e-3),
                LogEntry::BaseTime(_) => {}
                LogEntry::Interval(i) => {
                    let h = LatencyHistogram::from_base64(i.encoded_histogram(), 0).unwrap();
                    seen.push((
                        i.start_timestamp().as_secs_f64(),
                        i.max(),
                        h.count(),
                        h.stats().max,
                    ));
                }
            }
        }
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].2, 4);
        assert!((seen[0].1 - 5.0).abs() < 0.01, "max in ms: {}", seen[0].1);
        assert_eq!((seen[1].0, seen[1].2, seen[1].3), (1.0, 1, 42));
    }
}
