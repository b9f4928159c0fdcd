//! The monitoring part of the text summary: the server processes, the machine, barrage itself
//! and a spawned server's exit. Sections for data that was not collected are left out.

use crate::fmt::{bytes, thousands};
use barrage_metrics::{MonitorSeries, ProcSample, RunResult};

fn avg_max(xs: impl Iterator<Item = f64> + Clone) -> Option<(f64, f64)> {
    let n = xs.clone().count();
    if n == 0 {
        return None;
    }
    let sum: f64 = xs.clone().sum();
    let max = xs.fold(f64::MIN, f64::max);
    Some((sum / n as f64, max))
}

fn pct(x: f64) -> String {
    format!("{x:.1} %")
}

/// Lines for one process (server or generator).
fn process_lines(samples: &[ProcSample], cores: usize) -> Vec<String> {
    let mut out = Vec::new();
    if let Some((avg, max)) = avg_max(samples.iter().map(|s| s.cpu_pct)) {
        out.push(format!(
            "  CPU         avg {}, max {} of one core ({} of the machine on average)",
            pct(avg),
            pct(max),
            pct(avg / cores.max(1) as f64)
        ));
    }
    if let (Some(first), Some(last)) = (samples.first(), samples.last()) {
        let peak = samples.iter().map(|s| s.rss_bytes).max().unwrap_or(0);
        out.push(format!(
            "  memory      {} at start, peak {}, {} at the end",
            bytes(first.rss_bytes as f64),
            bytes(peak as f64),
            bytes(last.rss_bytes as f64)
        ));
        let fds = samples.iter().map(|s| s.fds).max().unwrap_or(0);
        let threads = samples.iter().map(|s| s.threads).max().unwrap_or(0);
        let est = samples.iter().map(|s| s.tcp.established).max().unwrap_or(0);
        let cw = samples.iter().map(|s| s.tcp.close_wait).max().unwrap_or(0);
        let mut line = format!(
            "  at most     {} threads, {} open files, {} TCP established",
            thousands(threads),
            thousands(fds),
            thousands(est)
        );
        if cw > 0 {
            line += &format!(", {} CLOSE_WAIT", thousands(cw));
        }
        out.push(line);
    }
    out
}

pub fn monitoring(r: &RunResult) -> Vec<String> {
    let Some(m) = &r.monitor else {
        return Vec::new();
    };
    let cores = r.environment.cores;
    let mut lines = Vec::new();
    for p in &m.processes {
        let mut cmd = p.command.clone();
        if cmd.len() > 60 {
            cmd.truncate(57);
            cmd += "...";
        }
        lines.push(format!("Server        pid {} `{cmd}`", p.pid));
        if p.samples.is_empty() {
            lines.push("  no samples (the process was gone)".into());
        }
        lines.extend(process_lines(&p.samples, cores));
    }
    if let Some(s) = &r.spawn {
        let how = if s.killed {
            format!(
                "ignored SIGTERM and was killed after {:.1} s",
                s.stop_took_ms / 1e3
            )
        } else if s.exited_cleanly {
            format!("exited cleanly {:.0} ms after SIGTERM", s.stop_took_ms)
        } else {
            format!(
                "exited after SIGTERM with {} in {:.0} ms",
                match (s.exit_code, s.signal) {
                    (Some(c), _) => format!("status {c}"),
                    (_, Some(sig)) => format!("signal {sig}"),
                    _ => "unknown status".into(),
                },
                s.stop_took_ms
            )
        };
        lines.push(format!(
            "  spawned     ready after {:.0} ms; {how}",
            s.ready_after_ms
        ));
    }
    lines.extend(machine(m));
    if !m.generator.is_empty() {
        lines.push("Generator     barrage itself".into());
        lines.extend(process_lines(&m.generator, cores));
    }
    lines
}

fn machine(m: &MonitorSeries) -> Vec<String> {
    let Some((avg, max)) = avg_max(m.host.iter().map(|h| h.cpu_pct)) else {
        return Vec::new();
    };
    let mem = m.host.iter().map(|h| h.mem_used_bytes).max().unwrap_or(0);
    let total = m.host.last().map_or(0, |h| h.mem_total_bytes);
    vec![format!(
        "Machine       CPU avg {}, max {}; memory used at most {} of {}",
        pct(avg),
        pct(max),
        bytes(mem as f64),
        bytes(total as f64)
    )]
}
