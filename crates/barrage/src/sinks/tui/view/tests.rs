//! Dashboard frames drawn on a test backend: figures, saturation, and snapshots at 80x24 and
//! 200x50 (no number may be cut; panels are dropped instead).

use super::*;
use crate::sinks::tui::ServerSample;
use barrage_metrics::{ErrorClass, Tick};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn info() -> DashInfo {
    DashInfo {
        target: "tcp://127.0.0.1:7000".into(),
        mode: "tcp ping-pong".into(),
        duration: Some(Duration::from_secs(20)),
        warmup: Duration::ZERO,
        connections: 5,
    }
}

fn snap(t: f64, rps: f64, lag: u64) -> Snapshot {
    let tick = Tick {
        t,
        dt: 1.0,
        phase: Phase::Measured,
        requests: rps as u64,
        rps,
        sent: rps as u64,
        failed: 0,
        reads: 0,
        writes: 0,
        bytes_read: 0,
        bytes_written: 0,
        connects: 0,
        connect_failures: 0,
        closed_by_peer: 0,
        open: 5,
        open_peak: 5,
        in_flight: 0,
        backlog: 0,
        scheduled: 0,
        failed_requests: 0,
        lag_us_max: lag,
        saturated: false,
        errors: ErrorCounts::default(),
        latency_us: Default::default(),
        deliveries: 0,
        delivery_p99_us: 0,
        deliveries_expected: 0,
        steps: Vec::new(),
    };
    Snapshot {
        tick,
        avg_rps: rps,
        completed: 10,
        errors: 0,
        p99_overall: Some(120),
        server: None,
    }
}

fn screen(v: &View) -> String {
    lines(v, 120, 40)
}

/// The screen as text, one line per row, at a fixed point in the run.
fn lines(v: &View, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| v.render_at(f, Duration::from_secs(9)))
        .unwrap();
    let buf = term.backend().buffer().clone();
    buf.content()
        .chunks(w as usize)
        .map(|row| row.iter().map(|c| c.symbol()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A busy run with wide figures: 10,000 connections, seven error classes,
/// a monitored server and a saturated second (181,188 req/s in the last one).
fn busy() -> View {
    let mut v = View::new(DashInfo {
        target: "tcp://127.0.0.1:7000".into(),
        mode: "tcp rate 200,000/s".into(),
        duration: Some(Duration::from_secs(20)),
        warmup: Duration::ZERO,
        connections: 10_000,
    });
    for i in 1..=9u64 {
        let mut s = snap(i as f64, 150_000.0 + 3_465.3 * i as f64, 0);
        s.tick.open = 10_000;
        s.tick.open_peak = 10_000;
        s.tick.connect_failures = 1_234;
        s.tick.latency_us = barrage_metrics::TickLatency {
            p50: 812,
            p90: 2_345,
            p99: 3_168_255,
            max: 4_999_999,
            mean: 900.0,
            count: 150_000,
            p999: 4_000_000,
        };
        let classes = [
            ErrorClass::Refused,
            ErrorClass::Reset,
            ErrorClass::Timeout,
            ErrorClass::LocalPortExhausted,
            ErrorClass::Protocol,
            ErrorClass::NotSent,
            ErrorClass::TlsHandshakeTimeout,
        ];
        for (k, c) in classes.into_iter().enumerate() {
            s.tick.errors.add(c, 10_000 * (k as u64 + 1));
        }
        s.avg_rps = 175_000.0;
        s.completed = 1_234_567_890;
        s.errors = 2_520_000 * i;
        s.server = Some(ServerSample {
            cpu_pct: Some(193.4),
            rss_bytes: Some(1_288_490_188),
        });
        if i == 9 {
            s.tick.lag_us_max = 15_000;
        }
        v.push(s);
    }
    v
}

/// Every figure of `busy()`, as it must appear whole wherever its panel is shown.
const FIGURES: [&str; 9] = [
    "181,188 req/s",
    "175,000 req/s",
    "1,234,567,890",
    "812 µs",
    "3.17 s",
    "10,000",
    "22,680,000",
    "1,234",
    "15.0 ms",
];

#[test]
fn dashboard_fits_80x24_without_cutting_a_number() {
    let v = busy();
    for (w, h) in [(80, 24), (200, 50), (100, 30)] {
        let text = lines(&v, w, h);
        for fig in FIGURES {
            assert!(
                text.contains(fig),
                "{w}x{h}: {fig:?} missing or cut:\n{text}"
            );
        }
        assert!(
            text.contains("elapsed 9s / 20s, 11s left"),
            "{w}x{h}:\n{text}"
        );
    }
}

#[test]
fn dashboard_snapshot_80x24() {
    insta::assert_snapshot!("dashboard_80x24", lines(&busy(), 80, 24));
}

#[test]
fn dashboard_snapshot_200x50() {
    insta::assert_snapshot!("dashboard_200x50", lines(&busy(), 200, 50));
}

#[test]
fn renders_figures_and_flags_saturation() {
    let mut v = View::new(info());
    v.push(snap(1.0, 1000.0, 0));
    let s = screen(&v);
    assert!(s.contains("req/s") && s.contains("running"), "{s}");
    assert!(s.contains("generator keeps up"));
    v.push(snap(2.0, 3000.0, 15_000));
    assert_eq!(v.peak, 3000.0);
    let s = screen(&v);
    assert!(s.contains("generator saturated"), "{s}");
}

#[test]
fn draws_on_a_tiny_terminal_without_panicking() {
    let mut v = View::new(info());
    v.push(snap(1.0, 1.0, 0));
    let mut term = Terminal::new(TestBackend::new(20, 5)).unwrap();
    term.draw(|f| v.render(f)).unwrap();
}
