//! [`analyze`]: every judgement of [`crate::analysis`] over one finished run.

use super::{
    connection_rss_pairs, contention, correctness, error_rate_trend, fd_trend, leak, other_cpu,
    p99_trend, per_connection_cost, recovery, rss_trend, saturation_summary, server_usage,
    stability, steady_state, AnalysisReport, CpuSeries, Schedule, DEFAULT_TOLERANCE_PCT,
};
use crate::monitor::{combined_server, MonitorSeries, ProcSample};
use crate::result::RunResult;
use crate::window::Window;

/// The steady state of a run: a users scenario's by its schedule, else by its connections.
pub(crate) fn run_steady_state(result: &RunResult) -> Window {
    let schedule = result.config.users.as_ref().map(|u| Schedule {
        last_arrival_s: u.last_arrival_s,
        depart_from_s: u.last_arrival_s + u.hold_s,
        pacing_after_s: u.pacing_after_s,
    });
    steady_state(
        &result.timeseries,
        result.summary.connections.target,
        schedule,
    )
}

/// Analyse one run. `recovery_s`: length of the recovery phase (sampling without load after
/// the load ended), `None` or 0 when there was none. Idle samples are those at `t ≤ 0`, taken
/// before the load started; the recovery's samples are all those after the load's end.
pub fn analyze(
    result: &RunResult,
    monitor: Option<&MonitorSeries>,
    recovery_s: Option<f64>,
) -> AnalysisReport {
    let ticks = &result.timeseries;
    let steady = run_steady_state(result);
    let load_end_s = crate::figures::load_end(ticks);
    let generator = monitor.map_or(&[][..], |m| &m.generator[..]);
    // An unasked series' listener is there only to be told from other processes: no finding
    // of the server's comes from it.
    let shown = MonitorSeries::shown(monitor);
    let procs = shown.map_or(0, |m| m.processes.len());
    let listener = monitor.map(combined_server).unwrap_or_default();
    let server = if shown.is_some() {
        listener.clone()
    } else {
        Vec::new()
    };
    let usage = server_usage(&server, crate::figures::load_window(ticks), procs);
    let rec = recovery_s.filter(|r| *r > 0.0).and_then(|_| {
        recovery(
            &server,
            0.0,
            load_end_s,
            f64::INFINITY,
            DEFAULT_TOLERANCE_PCT,
        )
    });
    let under_load: Vec<ProcSample> = steady.select(&server).cloned().collect();
    let other = monitor.map_or_else(Vec::new, |m| {
        other_cpu(m, &listener, result.environment.cores)
    });
    let ramp = Window {
        from_s: 0.0,
        to_s: steady.from_s,
    };
    let cpu = CpuSeries {
        generator,
        server: &listener,
        other: &other,
        host: monitor.map_or(&[][..], |m| &m.host[..]),
        cores: result.environment.cores,
    };
    AnalysisReport {
        steady_from_s: steady.from_s,
        steady_to_s: steady.to_s,
        load_end_s,
        stability: stability(ticks, steady),
        p99_trend: p99_trend(ticks, steady),
        error_rate_trend: error_rate_trend(ticks, steady),
        saturation: saturation_summary(
            ticks,
            cpu,
            // A generator cannot use more cores than the machine has.
            result.config.threads.min(result.environment.cores.max(1)),
            steady,
        ),
        contention: contention(other, crate::figures::load_window(ticks)),
        correctness: Some(correctness(&result.summary.exchanges)),
        rss_trend: rss_trend(&server, steady),
        fd_trend: fd_trend(&server, ticks, steady),
        leak: usage.as_ref().map(|_| leak(&under_load, rec.as_ref())),
        bytes_per_connection: per_connection_cost(&connection_rss_pairs(ticks, &server, ramp)),
        server: usage,
        recovery: rec,
        network: shown.map_or_else(Vec::new, |m| {
            crate::figures::network(&m.host, crate::figures::load_window(ticks))
        }),
    }
}
