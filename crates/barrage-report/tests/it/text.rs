//! Snapshot tests of the text summary: review `tests/snapshots/` by eye when they change.

use crate::common;
use barrage_report::{render_to_string, Format};

fn text(r: &barrage_metrics::RunResult) -> String {
    render_to_string(r, Format::Text)
}

#[test]
fn ping_pong_completed() {
    insta::assert_snapshot!(text(&common::ping_pong_completed()));
}

#[test]
fn open_loop_with_errors_and_warmup() {
    insta::assert_snapshot!(text(&common::open_loop_with_errors()));
}

#[test]
fn interrupted_run() {
    insta::assert_snapshot!(text(&common::interrupted()));
}

#[test]
fn failed_run_with_no_exchange() {
    insta::assert_snapshot!(text(&common::failed_refused()));
}

#[test]
fn summary_stays_compact_and_narrow() {
    for r in [
        common::ping_pong_completed(),
        common::open_loop_with_errors(),
        common::interrupted(),
    ] {
        let t = text(&r);
        assert!(t.lines().count() <= 32, "{t}");
        for line in t.lines() {
            assert!(line.chars().count() <= 96, "too wide: {line}");
        }
        assert!(t.ends_with('\n'));
    }
}

#[test]
fn https_run_with_status_codes_ttfb_and_tls() {
    let t = text(&common::https_with_statuses());
    assert!(
        t.contains("HTTP status   2xx 89,120, 5xx 900 (200 89,120, 503 900)"),
        "{t}"
    );
    insta::assert_snapshot!(t);
}

/// Regression (issue 24): a scenario run said "every-steps timed from their intended send
/// time" also when it had no `every` step.
#[test]
fn a_scenario_says_every_steps_are_timed_from_their_intended_time_only_when_it_has_them() {
    let mut r = common::ping_pong_completed();
    r.config.users = Some(barrage_metrics::ConfigUsers {
        count: 10,
        arrive: "10/s".into(),
        scenario: "s.toml".into(),
        ..Default::default()
    });
    r.config.steps = vec![barrage_metrics::ConfigStep {
        name: "login".into(),
        ..Default::default()
    }];
    let t = text(&r);
    assert!(!t.contains("every-steps"), "{t}");
    assert!(t.contains("every step timed from its actual send"), "{t}");
    let mut say = barrage_metrics::ConfigStep::default();
    (say.name, say.open_loop) = ("say".into(), true);
    r.config.steps.push(say);
    let t = text(&r);
    assert!(
        t.contains("every-steps timed from their intended send time"),
        "{t}"
    );
}

/// Issue 24: an `--expect none` run completes its exchanges when written; its latency is not
/// timed, and the summary said "no completed exchanges" beside hundreds of thousands of them.
#[test]
fn exchanges_completed_on_write_are_said_to_be_untimed_not_missing() {
    let mut r = common::ping_pong_completed();
    r.summary.latency_us = Default::default();
    let t = text(&r);
    assert!(
        t.contains("not timed: the exchanges complete when written"),
        "{t}"
    );
    assert!(!t.contains("no completed exchanges"), "{t}");
}

#[test]
fn scenario_steps() {
    insta::assert_snapshot!(text(&common::scenario_with_steps()));
}

/// Issue 26: the summary leads with the answer (throughput, latency, errors, verdict) before
/// any table.
#[test]
fn the_answer_and_the_verdict_come_first() {
    let t = text(&common::monitored_with_verdicts());
    let first: Vec<&str> = t.split("\n\n").nth(1).unwrap().lines().collect();
    assert!(first[0].starts_with("Answer        "), "{t}");
    assert!(
        first[0].contains(" req/s, p50 ") && first[0].contains(", p99 "),
        "{t}"
    );
    assert!(first[1].starts_with("Verdict       "), "{t}");
    assert!(first[1].contains("readiness "), "{t}");
}

/// Issue 26: a 12-line readiness block of ~300-character rules in every summary; now one line
/// per row, and the rules only with `--explain` (the reports keep them).
#[test]
fn readiness_is_one_line_per_row_and_its_rules_need_explain() {
    let r = common::monitored_with_verdicts();
    let t = text(&r);
    assert!(!t.contains("rule: "), "{t}");
    assert!(
        t.contains("Readiness     (the rules: --explain, or the HTML report)"),
        "{t}"
    );
    let mut explained = Vec::new();
    barrage_report::Renderer::render(
        &barrage_report::TextRenderer { explain: true },
        &r,
        &mut explained,
    )
    .unwrap();
    let explained = String::from_utf8(explained).unwrap();
    assert_eq!(
        explained.matches("rule: ").count(),
        r.readiness.len(),
        "{explained}"
    );
}

/// Issue 26: on a 1.5 s run the average (76,633) stood above the peak second (75,805): a
/// second that does not cover the run is no peak of it.
#[test]
fn a_run_shorter_than_two_seconds_shows_no_best_second() {
    let mut r = common::ping_pong_completed();
    r.summary.duration_s = 1.5;
    r.summary.rps.avg = 76_633.0;
    r.summary.rps.peak = 75_805.0;
    let t = text(&r);
    assert!(t.contains("Throughput    76,633 req/s: "), "{t}");
    assert!(!t.contains("best second"), "{t}");
    let t = text(&common::ping_pong_completed());
    assert!(t.contains("; best second 20,207"), "{t}");
}

/// Issue 26: a dead port gave one clear line and then a 35-line summary of zeros.
#[test]
fn a_run_that_never_connected_is_its_reason_and_its_connections() {
    let t = text(&common::failed_refused());
    assert!(
        t.contains("FAILED: no connection could be established"),
        "{t}"
    );
    assert!(t.contains("attempts 8, succeeded 0, failed 8"), "{t}");
    for table in ["Throughput", "Latency", "IO ", "Readiness", "Answer"] {
        assert!(!t.contains(table), "{table} in:\n{t}");
    }
    assert!(t.lines().count() <= 12, "{t}");
}

/// The `req/s` lines of a summary.
fn rate_lines(t: &str) -> Vec<String> {
    t.lines()
        .filter(|l| l.contains("req/s"))
        .map(str::to_string)
        .collect()
}

/// Issue 43: "two or three different req/s figures per run": the Answer gave the steady
/// state's rate, Throughput the measured average and the steady rate again (also when the run
/// had not ramped), the readiness row the average. Now a run that did not ramp shows one
/// figure everywhere; one that ramped leads with the steady state's, and the measured average
/// beside it says it includes the ramp.
#[test]
fn every_throughput_figure_is_the_headline_or_names_its_window() {
    let mut r = common::ping_pong_completed();
    r.conclude(&[], None);
    let t = text(&r);
    assert_eq!(
        rate_lines(&t),
        [
            "Answer        20,037 req/s, p50 3.13 ms, p99 5.16 ms, no errors",
            "Throughput    20,037 req/s: 100,249 requests in the measured 5.00 s; best second \
             20,207",
            "  performance        pass  20,037 req/s, p50 3.13 ms, p99 5.16 ms (p99/p50 = 1.6)",
        ],
        "{t}"
    );

    // Users that arrived over the first 2 s: the steady state begins after them.
    let mut r = common::scenario_with_steps();
    r.conclude(&[], None);
    let t = text(&r);
    let lines = rate_lines(&t);
    let steady = "20,139 req/s in the steady state";
    assert!(
        lines[0].starts_with(&format!("Answer        {steady}, p50 ")),
        "{t}"
    );
    assert_eq!(
        lines[1],
        format!("Throughput    {steady} (2 s to 5 s); best second 20,207"),
        "{t}"
    );
    assert_eq!(
        lines[2],
        "              20,037 req/s over the whole measured 5.00 s, ramp included: 100,249 \
         requests",
        "{t}"
    );
    assert!(
        lines[3].contains(&format!("performance        pass  {steady}, ")),
        "{t}"
    );
    assert_eq!(lines.len(), 4, "{t}");
}

/// Issue 43: a broadcast scenario's headline gave the reply latency of its steps (mostly the
/// `leave` step: its messages are fire-and-forget); it gives the delivery latency now,
/// labelled, and the steps' reply latency stays in the Steps table.
#[test]
fn a_broadcast_scenario_leads_with_its_delivery_latency() {
    let mut r = common::scenario_with_steps();
    let deliveries = barrage_metrics::LatencyStats {
        count: 2_322,
        p50: 225,
        p99: 22_975,
        max: 36_200,
        ..Default::default()
    };
    r.summary.broadcast = Some(barrage_metrics::BroadcastSummary {
        peer_us: Some(deliveries),
        ..Default::default()
    });
    let t = text(&r);
    let answer = t.lines().find(|l| l.starts_with("Answer")).unwrap();
    assert_eq!(
        answer, "Answer        20,037 req/s, delivery p50 225 µs, p99 23.0 ms, no errors",
        "{t}"
    );
    assert!(
        t.lines()
            .any(|l| l.starts_with("  login") && l.contains("3.13 ms")),
        "the steps keep their reply latency: {t}"
    );
}

/// Issue 43: `--baseline` exited 3 while the Verdict line said "pass" and the regressions
/// were ~67 lines further down. The verdict names the regression now, the limits follow it.
#[test]
fn a_baseline_regression_is_in_the_verdict_with_its_limits_beside_it() {
    use barrage_metrics::compare::{BaselineCheck, Regression};
    let mut r = common::monitored_with_verdicts();
    let limit = |metric: &str, change: f64, regressed: bool| Regression {
        metric: metric.into(),
        reference: Some(100.0),
        candidate: Some(100.0 + change),
        change_pct: Some(change),
        limit_pct: 10.0,
        regressed,
        significant: regressed,
        judged: true,
    };
    r.baseline = Some(BaselineCheck {
        file: "before.json".into(),
        regressions: vec![limit("rps.avg", 1.2, false), limit("p50", 412.3, true)],
    });
    let t = text(&r);
    let lines: Vec<&str> = t.lines().collect();
    let v = lines.iter().position(|l| l.starts_with("Verdict")).unwrap();
    assert!(
        lines[v].contains(
            "; baseline FAIL (1 of 2 limits regressed: p50 +412.3 % beyond noise, limit 10 %); \
             readiness "
        ),
        "{t}"
    );
    assert_eq!(
        &lines[v + 1..v + 4],
        [
            "Baseline      before.json (the comparison: at the end)",
            "              regression rps.avg: +1.2 % (within noise, limit 10%) -> ok",
            "              regression p50: +412.3 % (beyond noise, limit 10%) -> REGRESSED",
        ],
        "{t}"
    );
    // The reports say the same.
    let md = render_to_string(&r, Format::Markdown);
    assert!(
        md.contains("baseline FAIL (1 of 2 limits regressed: p50 +412.3 %"),
        "{md}"
    );
    assert!(md.contains("regression p50: +412.3 %"), "{md}");
    let json = render_to_string(&r, Format::Json);
    assert!(json.contains("\"baseline\""), "{json}");
}

/// `run` with the samples every run takes unasked (issue 43): barrage at 15 % of a core on 2
/// cores, the machine `machine_pct` busy, each second of the load.
fn with_unasked_samples(
    mut run: barrage_metrics::RunResult,
    machine_pct: f64,
) -> barrage_metrics::RunResult {
    use barrage_metrics::{HostSample, MonitorSeries, ProcSample};
    let secs = run.timeseries.iter().map(|t| t.t).collect::<Vec<_>>();
    run.monitor = Some(MonitorSeries {
        interval_s: 1.0,
        processes: Vec::new(),
        host: secs
            .iter()
            .map(|&t| HostSample {
                t,
                cpu_pct: machine_pct,
                ..HostSample::default()
            })
            .collect(),
        generator: secs
            .iter()
            .map(|&t| ProcSample {
                t,
                cpu_pct: 15.0,
                ..ProcSample::default()
            })
            .collect(),
        unasked: true,
    });
    run.conclude(&[], None);
    run
}

/// Issue 43: a run that asked for no monitoring shows nothing of the samples it takes anyway
/// (no Machine, Network, Others or Generator section, in text or in the reports) but one line
/// when other processes took a material share while the load ran.
#[test]
fn a_plain_run_shows_its_unasked_samples_only_as_one_busy_machine_line() {
    let mut plain = common::ping_pong_completed();
    plain.conclude(&[], None);
    let sections = ["Server ", "Machine ", "Network ", "Others ", "Generator "];
    let quiet = text(&with_unasked_samples(plain.clone(), 10.0));
    assert_eq!(
        quiet,
        text(&plain),
        "a quiet machine: the summary is unchanged"
    );
    for s in sections {
        assert!(!quiet.lines().any(|l| l.starts_with(s)), "{s}:\n{quiet}");
    }
    // 95 % of 2 cores = 190 % of a core, barrage 15 %: others 1.75 cores.
    let busy_run = with_unasked_samples(plain, 95.0);
    let busy = text(&busy_run);
    let machine: Vec<&str> = busy.lines().filter(|l| l.starts_with("Machine")).collect();
    assert_eq!(
        machine,
        [
            "Machine       busy: other processes used 1.8 of 2 cores on average under load (at \
          most 1.8); the figures may be the machine's as much as the server's"
        ],
        "{busy}"
    );
    for s in &sections[2..] {
        assert!(!busy.lines().any(|l| l.starts_with(s)), "{s}:\n{busy}");
    }
    assert!(!busy.contains("WARNING       other processes"), "{busy}");
    // The Markdown report: the overview's warning, no resources table, chart or row of it.
    let md = render_to_string(&busy_run, Format::Markdown);
    assert_eq!(md.matches("Other processes used").count(), 1, "{md}");
    assert!(!md.contains("barrage (generator)") && !md.contains("| other processes' CPU"));
    assert!(!md.contains("Generator CPU") && !md.contains("Machine CPU"));
    let quiet_md = render_to_string(
        &with_unasked_samples(busy_run.clone(), 10.0),
        Format::Markdown,
    );
    assert!(!quiet_md.contains("Other processes used"), "{quiet_md}");
}

/// `barrage compare` of two plain runs reads no figure from their unasked samples: the same
/// rows, the same values and noise, as without them (issue 43).
#[test]
fn comparing_plain_runs_ignores_their_unasked_samples() {
    use barrage_metrics::compare::compare;
    let mut a = common::ping_pong_completed();
    a.conclude(&[], None);
    let mut b = common::open_loop_with_errors();
    b.conclude(&[], None);
    let plain = compare(&[a.clone(), b.clone()]);
    let sampled = compare(&[with_unasked_samples(a, 95.0), with_unasked_samples(b, 10.0)]);
    assert_eq!(
        serde_json::to_value(&sampled).unwrap(),
        serde_json::to_value(&plain).unwrap()
    );
}
