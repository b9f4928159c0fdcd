use super::assess::duration;
use super::*;
use crate::analysis::analyze;
use crate::analysis::testutil::{proc, result, MIB};
use crate::monitor::{MonitorSeries, ProcessSeries};
use crate::result::RunResult;
use crate::thresholds::{evaluate_all, parse, Facts};

fn server(rss: impl Fn(f64) -> f64, cpu: f64) -> MonitorSeries {
    let samples = (-2..=40)
        .map(|t| {
            let mut s = proc(t as f64, rss(t as f64));
            s.cpu_pct = cpu;
            s.threads = 2;
            s.fds = 30;
            s
        })
        .collect();
    MonitorSeries {
        interval_s: 1.0,
        processes: vec![ProcessSeries {
            pid: 9,
            command: "srv".into(),
            samples,
        }],
        ..Default::default()
    }
}

fn grades(rows: &[Row]) -> Vec<Grade> {
    rows.iter().map(|r| r.status).collect()
}

#[test]
fn without_monitoring_server_rows_are_not_measured() {
    let r = result(30, 1000, 0, 10);
    let a = analyze(&r, None, None);
    let rows = assess(&r, &a, &[]);
    let names: Vec<&str> = rows.iter().map(|r| r.aspect.as_str()).collect();
    assert_eq!(
        names,
        [
            "performance",
            "stability",
            "resource use",
            "memory management",
            "errors",
            "correctness",
            "connections"
        ]
    );
    use Grade::*;
    assert_eq!(
        grades(&rows),
        [Pass, Pass, NotMeasured, NotMeasured, Pass, Pass, Pass]
    );
    assert!(rows
        .iter()
        .all(|r| !r.rule.is_empty() && !r.figure.is_empty()));
    let json = serde_json::to_value(&rows[2]).unwrap();
    assert_eq!(
        (json["aspect"].as_str(), json["status"].as_str()),
        (Some("resource use"), Some("not_measured"))
    );
}

#[test]
fn healthy_monitored_server_passes_everything() {
    let r = result(30, 1000, 0, 10);
    let m = server(
        |t| {
            if (1.0..=30.0).contains(&t) {
                40.0 * MIB
            } else {
                30.0 * MIB
            }
        },
        60.0,
    );
    let a = analyze(&r, Some(&m), Some(10.0));
    assert_eq!(grades(&assess(&r, &a, &[])), [Grade::Pass; 7]);
}

#[test]
fn failures_are_graded_by_their_rules() {
    // 2 % errors, a leaking server at 190 % of 2 cores, a failed latency threshold.
    let r = result(30, 980, 20, 10);
    let m = server(|t| 30.0 * MIB + MIB * t.clamp(0.0, 30.0), 190.0);
    let a = analyze(&r, Some(&m), Some(10.0));
    let f = Facts::from_result(&r, Some(&a));
    let out = evaluate_all(
        &[
            parse("p99 < 50us").unwrap(),
            parse("server.rss.max < 1GiB").unwrap(),
        ],
        &f,
    );
    let rows = assess(&r, &a, &out);
    use Grade::*;
    assert_eq!(grades(&rows), [Fail, Pass, Fail, Fail, Fail, Pass, Pass]);
    assert!(
        rows[0]
            .figure
            .contains("1 of 1 thresholds failed: p99 < 50us"),
        "{}",
        rows[0].figure
    );
    assert!(
        rows[2].figure.contains("95 % of 2 usable core(s)"),
        "{}",
        rows[2].figure
    );
    assert!(rows[4].figure.starts_with("2.000 %"), "{}", rows[4].figure);
    // Without a recovery phase the growth is only a Warn.
    let a = analyze(&r, Some(&m), None);
    assert_eq!(assess(&r, &a, &[])[3].status, Warn);
}

#[test]
fn warnings_and_nothing_completed() {
    let r = result(30, 995, 5, 10);
    let a = analyze(&r, None, None);
    assert_eq!(assess(&r, &a, &[])[4].status, Grade::Warn);
    let mut r = result(30, 1000, 0, 10);
    r.summary.latency_us.p99 = 20 * r.summary.latency_us.p50;
    let mut a = analyze(&r, None, None);
    assert_eq!(assess(&r, &a, &[])[0].status, Grade::Warn);
    r.summary.latency_us.p99 = r.summary.latency_us.p50;
    a.saturation.saturated_s = 2;
    let row = &assess(&r, &a, &[])[0];
    assert_eq!(row.status, Grade::Warn);
    let want = format!("saturated in 2 of {} s", a.saturation.of_s);
    assert!(row.figure.contains(&want), "{}", row.figure);
    let r = result(5, 0, 0, 10);
    let a = analyze(&r, None, None);
    let rows = assess(&r, &a, &[]);
    assert_eq!(
        grades(&rows),
        [
            Grade::Fail,
            Grade::NotMeasured,
            Grade::NotMeasured,
            Grade::NotMeasured,
            Grade::NotMeasured,
            Grade::NotMeasured,
            Grade::Pass
        ]
    );
}

#[test]
fn a_wrong_framing_fails_the_correctness_row() {
    let mut r = result(30, 1000, 0, 10);
    let a = analyze(&r, None, None);
    let done = r.summary.exchanges.completed;
    r.summary.exchanges.unexpected_replies = done * 87 / 100;
    let rows = assess(&r, &a, &[]);
    assert_eq!(rows[4].status, Grade::Pass, "errors stay as they are");
    assert_eq!(rows[5].aspect, Aspect::Correctness);
    assert_eq!(rows[5].status, Grade::Fail);
    assert!(rows[5].figure.contains("87.00 %"), "{}", rows[5].figure);
    r.summary.exchanges.unexpected_replies = done / 200;
    assert_eq!(assess(&r, &a, &[])[5].status, Grade::Warn);
}

#[test]
fn readiness_prints_durations_with_units_not_raw_microseconds() {
    let mut r = result(30, 1000, 0, 10);
    r.summary.latency_us.p50 = 812;
    r.summary.latency_us.p99 = 3_168_255;
    let a = analyze(&r, None, None);
    let fig = &assess(&r, &a, &[])[0].figure;
    assert!(fig.contains("p50 812 µs, p99 3.17 s"), "{fig}");
    assert!(!fig.contains("3168255"), "{fig}");
    assert_eq!(duration(999.4), "999 µs");
    assert_eq!(duration(999.6), "1.00 ms");
    assert_eq!(duration(12_345.0), "12.35 ms");
}

#[test]
fn stability_drift_is_stated_over_the_runs_window_not_extrapolated_to_an_hour() {
    let r = result(30, 1000, 0, 10);
    let a = analyze(&r, None, None);
    let st = a.stability.as_ref().expect("30 steady seconds");
    let fig = &assess(&r, &a, &[])[1].figure;
    assert!(!fig.contains("/h"), "{fig}");
    let want = format!(
        "({:+.1} % over {:.0} s)",
        st.drift.change, st.drift.window_s
    );
    assert!(fig.contains(&want), "{fig} should contain {want}");
}

/// A server that went away mid-run: seconds of the load with no connection open fail the
/// errors row, though nothing failed meanwhile (a closed loop sends nothing to fail).
#[test]
fn seconds_with_no_connection_open_fail_the_errors_row() {
    let errors_row = |r: &RunResult| row_of(r, Aspect::Errors);
    let mut r = result(20, 1000, 0, 10);
    assert_eq!(errors_row(&r).status, Grade::Pass);
    for t in r.timeseries.iter_mut().filter(|t| t.t > 12.0) {
        (t.open, t.open_peak, t.requests) = (0, 0, 0);
    }
    let row = errors_row(&r);
    assert_eq!(row.status, Grade::Fail, "{}", row.figure);
    assert!(
        row.figure
            .contains("no connection open for 8 s of the load, from 12 s"),
        "{}",
        row.figure
    );
    // Before any connection opened (a slow start) is not an outage.
    let mut r = result(20, 1000, 0, 10);
    for t in r.timeseries.iter_mut().filter(|t| t.t <= 3.0) {
        (t.open, t.open_peak, t.requests) = (0, 0, 0);
    }
    assert_eq!(errors_row(&r).status, Grade::Pass);
}

/// A scenario whose server went away: seconds of its steady state (every user arrived, none
/// departed) with no connection open fail the errors row; seconds outside it (users still
/// arriving, or already gone) are not an outage.
#[test]
fn a_scenario_with_no_connection_open_in_its_steady_state_fails_the_errors_row() {
    let errors_row = |r: &RunResult| row_of(r, Aspect::Errors);
    let mut r = result(20, 1000, 0, 10);
    r.config.users = Some(crate::result::ConfigUsers {
        count: 10,
        arrive: "10/s".into(),
        last_arrival_s: 2.0,
        hold_s: 14.0,
        depart: "at_end".into(),
        scenario: "s.toml".into(),
        ..Default::default()
    });
    // Gone after the users' schedule (t > 16 s): users leaving, not an outage.
    for t in r.timeseries.iter_mut().filter(|t| t.t > 16.0) {
        (t.open, t.open_peak, t.requests) = (0, 0, 0);
    }
    let row = errors_row(&r);
    assert_eq!(row.status, Grade::Pass, "{}", row.figure);
    // Gone from 8 s, inside the schedule: the server went away.
    for t in r.timeseries.iter_mut().filter(|t| t.t > 8.0) {
        (t.open, t.open_peak, t.requests) = (0, 0, 0);
    }
    let row = errors_row(&r);
    assert_eq!(row.status, Grade::Fail, "{}", row.figure);
    assert!(
        row.figure.contains("the server went away"),
        "{}",
        row.figure
    );
}

/// Regression (issue 24): a run whose planned connections never all came up (12,917 of
/// 25,000, local ports exhausted) passed every row and exited 0. The connections row fails
/// below 99 % ever ready, warns between 99 % and all, and warns when the steady state had
/// fewer than 99 % open; `connections.ready` gates it as a threshold.
#[test]
fn connections_that_never_came_up_fail_the_connections_row() {
    let conn_row = |r: &RunResult| row_of(r, Aspect::Connections);
    let r = with_ready(1000);
    assert_eq!(conn_row(&r).status, Grade::Pass, "{}", conn_row(&r).figure);
    let r = with_ready(995);
    assert_eq!(conn_row(&r).status, Grade::Warn, "{}", conn_row(&r).figure);
    let mut r = with_ready(517);
    r.summary
        .errors
        .add(crate::error::ErrorClass::LocalPortExhausted, 483);
    let row = conn_row(&r);
    assert_eq!(row.status, Grade::Fail, "{}", row.figure);
    assert!(
        row.figure
            .contains("517 of 1000 planned ever ready (51.7 %)")
            && row.figure.contains("local_port_exhausted (483)"),
        "{}",
        row.figure
    );
    // The threshold reads the same figure.
    let facts = crate::thresholds::Facts::from_result(&r, None);
    assert_eq!(facts.get("connections.ready"), Some(0.517));
    let t = parse("connections.ready >= 99%").unwrap();
    assert!(evaluate_all(&[t], &facts)
        .iter()
        .all(|o| o.passed == Some(false)));
    // All ready, but the steady state lost a tenth of them for a second.
    let mut r = with_ready(1000);
    r.summary.ramp.as_mut().unwrap().all_ready_s = Some(0.5);
    r.timeseries[10].open = 900;
    let row = conn_row(&r);
    assert_eq!(row.status, Grade::Warn, "{}", row.figure);
    assert!(
        row.figure
            .contains("typically 1000 open (100.0 %), at least 900 (90.0 %)"),
        "{}",
        row.figure
    );
}

/// Issue 42 item 7: `connections.ready` counted connections ever ready, so a server that
/// accepted every connection and at once closed half of them passed `connections.ready >=
/// 99%`, and the connections row only warned at 50 % open in the steady state. The steady
/// state counts now: typically half open, lost with errors, fails the row and the threshold.
#[test]
fn a_server_that_closes_half_the_connections_fails_the_connections_row() {
    let conn_row = |r: &RunResult| row_of(r, Aspect::Connections);
    let half = |errors: u64| {
        let mut r = with_ready(1000);
        r.summary.ramp.as_mut().unwrap().all_ready_s = Some(0.5);
        for t in r.timeseries.iter_mut().filter(|t| t.t > 1.0) {
            t.open = 500;
        }
        r.summary
            .errors
            .add(crate::error::ErrorClass::ClosedByPeer, errors);
        r
    };
    let r = half(3200);
    let row = conn_row(&r);
    assert_eq!(row.status, Grade::Fail, "{}", row.figure);
    assert!(
        row.figure
            .starts_with("1000 of 1000 planned ever ready (100.0 %)")
            && row
                .figure
                .contains("steady state (19 s): 500 open (50.0 %) at the end of every second")
            && row.figure.contains("the server did not hold them"),
        "{}",
        row.figure
    );
    let facts = Facts::from_result(&r, None);
    assert_eq!(facts.get("connections.ready"), Some(0.5));
    let t = parse("connections.ready >= 99%").unwrap();
    assert!(evaluate_all(&[t], &facts)
        .iter()
        .all(|o| o.passed == Some(false)));
    // Closed without a single error (the server's `Connection: close`): at most a warning.
    let r = half(0);
    let row = conn_row(&r);
    assert_eq!(row.status, Grade::Warn, "{}", row.figure);
    assert!(row.figure.contains("Connection: close?"), "{}", row.figure);
    // Every connection held: the threshold passes at 100 %.
    let mut r = with_ready(1000);
    r.summary.ramp.as_mut().unwrap().all_ready_s = Some(0.5);
    assert_eq!(conn_row(&r).status, Grade::Pass, "{}", conn_row(&r).figure);
    assert_eq!(
        Facts::from_result(&r, None).get("connections.ready"),
        Some(1.0)
    );
}

#[test]
fn fds_that_follow_arriving_users_are_not_a_resource_warning() {
    // Regression: a scenario's server fds rose while its users' connections were still
    // opening (a second after another, past their scheduled arrival), and the resource row
    // read "fds growing": a Warn for a server doing exactly what it should.
    let mut r = result(30, 1000, 0, 300);
    r.config.users = Some(crate::ConfigUsers {
        count: 300,
        last_arrival_s: 1.0,
        hold_s: 100.0,
        ..Default::default()
    });
    for t in &mut r.timeseries {
        t.open = ((t.t * 15.0) as u64).min(300);
    }
    let mut m = server(|_| 40.0 * MIB, 60.0);
    let open = |t: f64| ((t * 15.0) as u64).min(300);
    for s in &mut m.processes[0].samples {
        s.fds = 30 + if s.t > 0.0 { open(s.t) } else { 0 };
    }
    let a = analyze(&r, Some(&m), Some(10.0));
    assert_eq!(
        a.steady_from_s, 20.0,
        "the users were all connected at 20 s"
    );
    let rows = assess(&r, &a, &[]);
    assert_eq!(rows[2].status, Grade::Pass, "{}", rows[2].figure);
    assert!(
        rows[2].figure.contains("beyond the open connections: flat"),
        "{}",
        rows[2].figure
    );
}

#[test]
fn a_short_run_has_not_enough_steady_seconds_instead_of_a_fail() {
    // Regression: a healthy 5 s run read "stability FAIL (CV 26.1 %)" from 4 seconds.
    let mut r = result(5, 1000, 0, 10);
    for (t, rate) in r.timeseries.iter_mut().zip([1000, 1400, 700, 1300, 800]) {
        t.requests = rate;
        t.rps = rate as f64;
    }
    let a = analyze(&r, None, None);
    assert!(a.stability.as_ref().unwrap().cv_pct > 20.0);
    let row = &assess(&r, &a, &[])[1];
    assert_eq!(row.status, Grade::NotMeasured);
    assert!(
        row.figure
            .starts_with("not enough steady seconds: 4 of the 8 needed to judge"),
        "{}",
        row.figure
    );
    // Ten steady seconds (the first is the ramp) of the same unevenness are judged.
    let mut r = result(11, 1000, 0, 10);
    for (i, t) in r.timeseries.iter_mut().enumerate() {
        let rate = [1000, 1400, 700, 1300, 800][i % 5];
        t.requests = rate;
        t.rps = rate as f64;
    }
    let a = analyze(&r, None, None);
    assert_eq!(assess(&r, &a, &[])[1].status, Grade::Fail);
}

#[test]
fn a_broadcast_scenario_is_judged_on_its_deliveries_latency_not_a_p50_of_0() {
    // Regression: a broadcast scenario's messages are fire-and-forget, so its exchanges'
    // latency was empty and the performance row read "p50 0 µs".
    let mut r = result(30, 500, 0, 10);
    r.summary.latency_us = Default::default();
    let deliveries = crate::LatencyStats {
        count: 40_000,
        p50: 900,
        p99: 4_000,
        ..Default::default()
    };
    r.summary.broadcast = Some(crate::BroadcastSummary {
        c: Default::default(),
        reach: Some(1.0),
        lost: 0,
        missing: 0,
        own_us: None,
        peer_us: Some(deliveries),
        rooms: None,
        remote_us: None,
        remote_clock_us: None,
        first_us: None,
        last_us: None,
        spread_us: None,
    });
    let a = analyze(&r, None, None);
    let row = &assess(&r, &a, &[])[0];
    assert_eq!(row.status, Grade::Pass);
    assert_eq!(
        row.figure,
        "500 req/s, deliveries p50 900 µs, p99 4.00 ms (p99/p50 = 4.4)"
    );
    // Replies that were timed (a login) are shown beside them.
    r.summary.latency_us.count = 10;
    r.summary.latency_us.p50 = 150;
    r.summary.latency_us.p99 = 900;
    let row = &assess(&r, &a, &[])[0];
    assert!(
        row.figure.ends_with("; replies p50 150 µs, p99 900 µs"),
        "{}",
        row.figure
    );
    // A scenario's steps that await a reply are listed with their p99; a fire-and-forget
    // step (its latency is only how late it was written) is not.
    let step = |name: &str, p99| crate::StepSummary {
        name: name.into(),
        latency_us: Some(crate::LatencyStats {
            count: 10,
            p99,
            ..Default::default()
        }),
        ..Default::default()
    };
    r.summary.steps = vec![step("login", 1_200), step("say", 80), step("leave", 300)];
    r.config.steps = ["login", "say", "leave"]
        .map(|name| crate::ConfigStep {
            name: name.into(),
            awaits: name != "say",
            ..Default::default()
        })
        .to_vec();
    let row = &assess(&r, &a, &[])[0];
    assert!(
        row.figure
            .ends_with("; step p99: login 1.20 ms, leave 300 µs"),
        "{}",
        row.figure
    );
    r.summary.steps.clear();
    // Nothing timed at all: no latency verdict, not a "0 µs" one.
    r.summary.latency_us = Default::default();
    r.summary.broadcast = None;
    let row = &assess(&r, &a, &[])[0];
    assert_eq!(row.status, Grade::NotMeasured);
    assert!(
        row.figure.contains("no latency measured") && !row.figure.contains("0 µs"),
        "{}",
        row.figure
    );
}

/// Review of issue 24: runs whose plan was cut short, or whose ramp was still opening its last
/// connections when the load ended, are not failed for it: `-n` that ended the run, a stop,
/// a `--conn-stages` ramp that peaks at the load's end, a `--connect-rate` slower than the run.
#[test]
fn connections_not_yet_due_or_cut_short_are_not_failed() {
    let conn_row = |r: &RunResult| row_of(r, Aspect::Connections);
    // -n ended the run while connections were still opening.
    let mut r = with_ready(50);
    r.config.requests = Some(1000);
    let row = conn_row(&r);
    assert_eq!(row.status, Grade::NotMeasured, "{}", row.figure);
    assert!(row.figure.contains("-n"), "{}", row.figure);
    // Stopped by a signal during the ramp.
    let mut r = with_ready(50);
    r.status = crate::result::Status::Interrupted;
    assert_eq!(conn_row(&r).status, Grade::NotMeasured);
    // A ramp 0 -> 1000 over the whole 20 s: 950 were due a second before the end.
    let mut r = with_ready(951);
    r.config.planned_connections = vec![(0.0, 0.0), (20.0, 1000.0)];
    let row = conn_row(&r);
    assert_eq!(row.status, Grade::Pass, "{}", row.figure);
    assert!(row.figure.contains("of 950 due"), "{}", row.figure);
    // Up and down again: the peak counts.
    let mut r = with_ready(1000);
    r.config.planned_connections = vec![(0.0, 0.0), (5.0, 1000.0), (15.0, 1000.0), (20.0, 0.0)];
    assert_eq!(conn_row(&r).status, Grade::Pass);
    let mut r = with_ready(500);
    r.config.planned_connections = vec![(0.0, 0.0), (5.0, 1000.0), (15.0, 1000.0), (20.0, 0.0)];
    assert_eq!(conn_row(&r).status, Grade::Fail);
    // --connect-rate 10/s over a 20 s run: 191 due by 19 s.
    let mut r = with_ready(191);
    r.config.connect_rate = Some(10.0);
    let row = conn_row(&r);
    assert_eq!(row.status, Grade::Pass, "{}", row.figure);
    let mut r = with_ready(100);
    r.config.connect_rate = Some(10.0);
    assert_eq!(conn_row(&r).status, Grade::Fail);
}

/// Issue 43: 60,000 connections against an echo server whose process may open 20,000 files,
/// stopped after barrage had tried them all, read "the run ended early before every
/// connection was due" (barrage blamed itself). The row now says which side ran out: the
/// server when its connects timed out, were refused or were still pending; barrage when its
/// own open files or local ports ran out.
#[test]
fn connections_that_never_came_up_say_which_side_ran_out() {
    use crate::error::ErrorClass as E;
    let conn_row = |r: &RunResult| row_of(r, Aspect::Connections);
    let mut r = with_ready(517);
    r.status = crate::result::Status::Interrupted;
    let c = &mut r.summary.connections;
    (c.target, c.attempts, c.succeeded, c.failed) = (1000, 1000, 517, 400);
    r.summary.errors.add(E::ConnectTimeout, 400);
    let row = conn_row(&r);
    assert_eq!(row.status, Grade::Fail, "{}", row.figure);
    assert!(!row.figure.contains("ended early"), "{}", row.figure);
    assert!(
        row.figure.contains(
            "the server did not accept them (0 refused, 400 timed out, 83 still pending at the end)"
        ) && row.figure.contains("not barrage's own limits"),
        "{}",
        row.figure
    );
    // The same with barrage out of its own open files.
    r.summary.errors = Default::default();
    r.summary.errors.add(E::LocalFdExhausted, 483);
    r.summary.connections.failed = 483;
    let row = conn_row(&r);
    assert!(
        row.figure.contains("barrage ran out of its own open files"),
        "{}",
        row.figure
    );
    // Stopped before barrage had tried them all: the end cut the plan, as before.
    r.summary.connections.attempts = 600;
    assert_eq!(conn_row(&r).status, Grade::NotMeasured);
    assert!(conn_row(&r).figure.contains("the run ended early"));
}

/// Review of issue 24: a `--conn-stages` ramp that goes to zero on purpose is not an outage.
#[test]
fn a_conn_stages_ramp_down_to_zero_is_not_the_server_going_away() {
    let errors_row = |r: &RunResult| row_of(r, Aspect::Errors);
    let mut r = result(20, 1000, 0, 10);
    r.config.planned_connections = vec![
        (0.0, 10.0),
        (8.0, 10.0),
        (9.0, 0.0),
        (15.0, 0.0),
        (16.0, 10.0),
    ];
    for t in r.timeseries.iter_mut().filter(|t| t.t > 9.0 && t.t <= 15.0) {
        (t.open, t.open_peak, t.requests) = (0, 0, 0);
    }
    let row = errors_row(&r);
    assert_eq!(row.status, Grade::Pass, "{}", row.figure);
    // The same seconds with the plan still at 10: the server went away.
    r.config.planned_connections.clear();
    assert_eq!(errors_row(&r).status, Grade::Fail);
}

/// The row of `aspect` for `r`, analysed without monitoring.
fn row_of(r: &RunResult, aspect: Aspect) -> Row {
    let a = analyze(r, None, None);
    assess(r, &a, &[])
        .into_iter()
        .find(|row| row.aspect == aspect)
        .unwrap()
}

/// A 20 s run planned with 1,000 connections, `ready` of them ever ready.
fn with_ready(ready: u64) -> RunResult {
    let mut r = result(20, 1000, 0, 1000);
    r.summary.ramp = Some(crate::aggregate::Ramp {
        ready,
        all_ready_s: None,
    });
    r
}

#[test]
fn a_run_that_only_holds_is_judged_by_its_connection_errors() {
    let mut r = result(30, 0, 0, 10);
    r.config.mode = "hold".into();
    let a = analyze(&r, None, None);
    let rows = assess(&r, &a, &[]);
    assert_eq!(rows[0].status, Grade::NotMeasured, "{}", rows[0].figure);
    assert_eq!(rows[4].status, Grade::Pass, "{}", rows[4].figure);
    assert_eq!(rows[4].figure, "no connection error while holding");
    // The broker dropped two connections: the hold failed.
    r.summary.errors.add(crate::ErrorClass::ClosedByPeer, 2);
    let rows = assess(&r, &analyze(&r, None, None), &[]);
    assert_eq!(rows[4].status, Grade::Fail);
    assert_eq!(
        rows[4].figure,
        "2 connection errors while holding (closed_by_peer 2)"
    );
}

/// Issue 43: 11 of 23 runs on a loaded machine read "FAIL (stability)". When the generator's
/// machine was busy (or barrage saturated) in the seconds that dipped, the row says so and
/// is a warning, inconclusive, not a FAIL of the server; a quiet machine's dips still fail.
#[test]
fn an_uneven_rate_on_a_busy_generator_machine_is_inconclusive_not_a_fail() {
    use crate::monitor::HostSample;
    let rates = [1000, 1400, 700, 1300, 800];
    let dip = |i: usize| matches!(i % 5, 2 | 4);
    let mut r = result(11, 1000, 0, 10);
    for (i, t) in r.timeseries.iter_mut().enumerate() {
        t.requests = rates[i % 5];
        t.rps = rates[i % 5] as f64;
    }
    // Four cores; barrage at 30 % of a core; the machine full in the seconds that dipped
    // (other processes 3.7 cores), 10 % busy in the others.
    let machine = |busy: bool| MonitorSeries {
        interval_s: 1.0,
        host: (0..11)
            .map(|i| HostSample {
                t: i as f64 + 1.0,
                cpu_pct: if busy && dip(i) { 100.0 } else { 10.0 },
                ..Default::default()
            })
            .collect(),
        generator: (0..11)
            .map(|i| proc(i as f64 + 1.0, 0.0))
            .map(|mut s| {
                s.cpu_pct = 30.0;
                s
            })
            .collect(),
        ..Default::default()
    };
    let stability_row = |r: &RunResult| {
        let a = analyze(r, r.monitor.as_ref(), None);
        assess(r, &a, &[])[1].clone()
    };
    r.monitor = Some(machine(false));
    let quiet = stability_row(&r);
    assert_eq!(quiet.status, Grade::Fail, "{}", quiet.figure);
    assert!(quiet.figure.starts_with("CV "), "{}", quiet.figure);

    r.monitor = Some(machine(true));
    let busy = stability_row(&r);
    assert_eq!(busy.status, Grade::Warn, "{}", busy.figure);
    assert!(
        busy.figure.starts_with("inconclusive: unstable (CV ")
            && busy.figure.contains(
                "but the generator's machine was busy in 4 of the 4 seconds that dipped (other \
                 processes used 3.7 of 4 cores): re-run on a quieter machine"
            ),
        "{}",
        busy.figure
    );
    assert!(busy.rule.contains("inconclusive"));

    // Without monitoring, barrage's own event loop running late in the dips tells the same.
    r.monitor = None;
    for (i, t) in r.timeseries.iter_mut().enumerate() {
        t.lag_us_max = if dip(i) { 25_000 } else { 0 };
    }
    let late = stability_row(&r);
    assert_eq!(late.status, Grade::Warn, "{}", late.figure);
    assert!(
        late.figure.contains(
            "busy in 4 of the 4 seconds that dipped (barrage itself was saturated in 4 of them"
        ),
        "{}",
        late.figure
    );
}

/// Issue 43: a run that asked for no monitoring samples barrage and its machine anyway
/// (`MonitorSeries::unasked`), with a loopback target's listener found quietly. The stability
/// row reads those samples; the listener's CPU is not other processes' (a quiet machine's dips
/// still fail), and nothing of the server is judged from it.
#[test]
fn a_plain_runs_unasked_machine_samples_tell_a_busy_machine_without_judging_the_listener() {
    use crate::monitor::{HostSample, ProcessSeries};
    let rates = [1000, 1400, 700, 1300, 800];
    let dip = |i: usize| matches!(i % 5, 2 | 4);
    let mut r = result(11, 1000, 0, 10);
    for (i, t) in r.timeseries.iter_mut().enumerate() {
        t.requests = rates[i % 5];
        t.rps = rates[i % 5] as f64;
    }
    let at = |i: usize, cpu: f64| {
        let mut s = proc(i as f64 + 1.0, 0.0);
        s.cpu_pct = cpu;
        s
    };
    // Four cores; the listener (the local server) at one core, barrage at 30 % of a core; the
    // machine 35 % busy (140 % of a core: others 10 %), or full in the dips when `busy`
    // (others 2.7 cores).
    let unasked = |busy: bool| MonitorSeries {
        interval_s: 1.0,
        processes: vec![ProcessSeries {
            pid: 4242,
            command: "barrage serve echo".into(),
            samples: (0..11).map(|i| at(i, 100.0)).collect(),
        }],
        host: (0..11)
            .map(|i| HostSample {
                t: i as f64 + 1.0,
                cpu_pct: if busy && dip(i) { 100.0 } else { 35.0 },
                ..Default::default()
            })
            .collect(),
        generator: (0..11).map(|i| at(i, 30.0)).collect(),
        unasked: true,
    };
    let judged = |r: &RunResult| {
        let a = analyze(r, r.monitor.as_ref(), None);
        let row = assess(r, &a, &[])[1].clone();
        (a, row)
    };
    r.monitor = Some(unasked(false));
    let (a, quiet) = judged(&r);
    assert_eq!(quiet.status, Grade::Fail, "{}", quiet.figure);
    assert!(quiet.figure.starts_with("CV "), "{}", quiet.figure);
    let c = a
        .contention
        .as_ref()
        .expect("other processes' CPU from the unasked samples");
    assert!(
        !c.material && (c.other_avg_pct - 10.0).abs() < 1e-6,
        "{c:?}"
    );
    // The listener is not monitored as a server: no server figure, leak, trend or network.
    assert!(a.server.is_none() && a.leak.is_none() && a.rss_trend.is_none());
    assert!(a.network.is_empty() && a.bytes_per_connection.is_none());
    assert!(MonitorSeries::shown(r.monitor.as_ref()).is_none());

    r.monitor = Some(unasked(true));
    let (a, busy) = judged(&r);
    assert!(a.contention.as_ref().is_some_and(|c| c.material));
    assert_eq!(busy.status, Grade::Warn, "{}", busy.figure);
    assert!(
        busy.figure.starts_with("inconclusive: unstable (CV ")
            && busy.figure.contains(
                "but the generator's machine was busy in 4 of the 4 seconds that dipped (other \
                 processes used 2.7 of 4 cores): re-run on a quieter machine"
            ),
        "{}",
        busy.figure
    );
}
