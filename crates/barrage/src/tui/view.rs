//! What the dashboard draws: the view state fed by snapshots, and the panels, tables and
//! rolling charts of one frame.

use super::*;

/// Everything drawn, updated from snapshots on the UI thread.
pub(super) struct View {
    info: DashInfo,
    started: Instant,
    last: Option<Snapshot>,
    rps: VecDeque<u64>,
    open: VecDeque<u64>,
    errors: VecDeque<u64>,
    peak: f64,
    /// Per class since the start, warm-up included.
    by_class: ErrorCounts,
    /// The latest saturated second and why.
    saturation: Option<(f64, String)>,
    pub(super) stopping: bool,
    /// The load is over and the recovery window runs.
    pub(super) recovering: bool,
}

impl View {
    pub(super) fn new(info: DashInfo) -> View {
        View {
            info,
            started: Instant::now(),
            last: None,
            rps: VecDeque::new(),
            open: VecDeque::new(),
            errors: VecDeque::new(),
            peak: 0.0,
            by_class: ErrorCounts::default(),
            saturation: None,
            stopping: false,
            recovering: false,
        }
    }

    pub(super) fn push(&mut self, s: Snapshot) {
        let t = &s.tick;
        let prev_backlog = self.last.as_ref().map_or(0, |p| p.tick.backlog);
        if t.phase == Phase::Measured && t.dt >= 0.999 {
            self.peak = self.peak.max(t.rps);
        }
        self.by_class.merge(&t.errors);
        if t.phase != Phase::Drain {
            for (q, v) in [
                (&mut self.rps, t.rps.round() as u64),
                (&mut self.open, t.open),
                (&mut self.errors, t.errors.total()),
            ] {
                q.push_back(v);
                if q.len() > HISTORY {
                    q.pop_front();
                }
            }
        }
        let why = if t.lag_us_max >= LAG_WARN_US {
            Some(format!(
                "event-loop lag {}",
                fmt::duration_us(t.lag_us_max as f64)
            ))
        } else if t.backlog > prev_backlog && t.backlog > 0 {
            Some(format!("backlog growing ({})", fmt::thousands(t.backlog)))
        } else if t.saturated {
            Some("generator-bound second".into())
        } else {
            None
        };
        if let Some(why) = why {
            self.saturation = Some((t.t, why));
        }
        self.last = Some(s);
    }

    pub(super) fn render(&self, f: &mut Frame) {
        let [head, nums, rps, small, bottom] = Layout::vertical([
            Constraint::Length(3),
            Constraint::Length(8),
            Constraint::Min(5),
            Constraint::Length(7),
            Constraint::Length(7),
        ])
        .areas(f.area());
        f.render_widget(self.header(), head);
        let [a, b, c] = Layout::horizontal([Constraint::Ratio(1, 3); 3]).areas(nums);
        f.render_widget(self.throughput(), a);
        f.render_widget(self.latency(), b);
        f.render_widget(self.conns_errors(), c);
        f.render_widget(
            spark("throughput, req/s (last 60 s)", &self.rps, Color::Green),
            rps,
        );
        let [l, r] = Layout::horizontal([Constraint::Ratio(1, 2); 2]).areas(small);
        f.render_widget(spark("open connections", &self.open, Color::Cyan), l);
        f.render_widget(spark("errors/s", &self.errors, Color::Red), r);
        let [l, m, r] = Layout::horizontal([
            Constraint::Ratio(1, 3),
            Constraint::Ratio(1, 3),
            Constraint::Ratio(1, 3),
        ])
        .areas(bottom);
        f.render_widget(self.breakdown(), l);
        f.render_widget(self.server(), m);
        f.render_widget(self.warnings(), r);
    }

    fn status(&self) -> (&'static str, Color) {
        match self.last.as_ref().map(|s| s.tick.phase) {
            _ if self.recovering => ("recovery (q skips)", Color::Yellow),
            _ if self.stopping => ("stopping", Color::Yellow),
            None if self.info.warmup > Duration::ZERO => ("warm-up", Color::Yellow),
            None => ("connecting", Color::Yellow),
            Some(Phase::Warmup) => ("warm-up", Color::Yellow),
            Some(Phase::Measured) => ("running", Color::Green),
            Some(Phase::Drain) => ("draining", Color::Yellow),
        }
    }

    fn header(&self) -> Paragraph<'_> {
        let elapsed = self.started.elapsed();
        let time = match self.info.duration {
            Some(d) => format!(
                "elapsed {:.0}s / {:.0}s, {:.0}s left",
                elapsed.as_secs_f64().floor(),
                d.as_secs_f64(),
                d.saturating_sub(elapsed).as_secs_f64().ceil()
            ),
            None => format!("elapsed {:.0}s", elapsed.as_secs_f64().floor()),
        };
        let (status, color) = self.status();
        let line = Line::from(vec![
            Span::styled("barrage ", Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(format!(
                "{}  |  {}  |  {time}  |  ",
                self.info.target, self.info.mode
            )),
            Span::styled(status, Style::new().fg(color).add_modifier(Modifier::BOLD)),
            Span::styled("   (q: stop)", Style::new().fg(Color::DarkGray)),
        ]);
        Paragraph::new(line).block(Block::bordered())
    }

    fn throughput(&self) -> Paragraph<'_> {
        let (cur, avg, total) = self
            .last
            .as_ref()
            .map_or((0.0, 0.0, 0), |s| (s.tick.rps, s.avg_rps, s.completed));
        panel(
            "Throughput",
            vec![
                kv("current", format!("{} req/s", fmt::real(cur))),
                kv("average", format!("{} req/s", fmt::real(avg))),
                kv("peak", format!("{} req/s", fmt::real(self.peak))),
                kv("completed", fmt::thousands(total)),
            ],
        )
    }

    fn latency(&self) -> Paragraph<'_> {
        let us = |v: u64| fmt::duration_us(v as f64);
        let lines = match &self.last {
            None => vec![Line::raw("waiting for the first second")],
            Some(s) => {
                let l = s.tick.latency_us;
                vec![
                    kv("p50 / p90", format!("{} / {}", us(l.p50), us(l.p90))),
                    kv("p99", us(l.p99)),
                    kv("max", us(l.max)),
                    kv("p99 overall", s.p99_overall.map_or("-".into(), us)),
                ]
            }
        };
        panel("Latency (last second)", lines)
    }

    fn conns_errors(&self) -> Paragraph<'_> {
        let (open, peak, failed, errors, err_s) = self.last.as_ref().map_or((0, 0, 0, 0, 0), |s| {
            let t = &s.tick;
            (
                t.open,
                t.open_peak,
                t.connect_failures,
                s.errors,
                t.errors.total(),
            )
        });
        panel(
            "Connections & errors",
            vec![
                kv(
                    "open",
                    format!(
                        "{} / {} (peak {})",
                        fmt::thousands(open),
                        fmt::thousands(self.info.connections),
                        fmt::thousands(peak)
                    ),
                ),
                kv("connect failures/s", fmt::thousands(failed)),
                kv("errors", fmt::thousands(errors)),
                kv("errors/s", fmt::thousands(err_s)),
            ],
        )
    }

    fn breakdown(&self) -> Paragraph<'_> {
        let mut lines: Vec<Line> = self
            .by_class
            .nonzero()
            .map(|(c, n)| kv(c.as_str(), fmt::thousands(n)))
            .collect();
        if lines.is_empty() {
            lines.push(Line::styled("no errors", Style::new().fg(Color::Green)));
        }
        panel("Errors by class", lines)
    }

    fn server(&self) -> Paragraph<'_> {
        let s = self.last.as_ref().and_then(|s| s.server);
        let lines = match s {
            None => vec![Line::styled(
                "not monitored",
                Style::new().fg(Color::DarkGray),
            )],
            Some(s) => vec![
                kv("cpu", s.cpu_pct.map_or("-".into(), |c| format!("{c:.1} %"))),
                kv(
                    "memory",
                    s.rss_bytes.map_or("-".into(), |b| fmt::bytes(b as f64)),
                ),
            ],
        };
        panel("Server", lines)
    }

    fn warnings(&self) -> Paragraph<'_> {
        let lines = match &self.saturation {
            None => vec![Line::styled(
                "generator keeps up",
                Style::new().fg(Color::Green),
            )],
            Some((t, why)) => vec![
                Line::styled(
                    "generator saturated",
                    Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
                ),
                Line::raw(format!("last at {t:.0}s: {why}")),
                Line::raw("figures there describe barrage"),
            ],
        };
        panel("Generator", lines)
    }
}

fn kv(k: &str, v: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{k:<12} "), Style::new().fg(Color::DarkGray)),
        Span::raw(v),
    ])
}

fn panel<'a>(title: &'a str, lines: Vec<Line<'a>>) -> Paragraph<'a> {
    Paragraph::new(lines).block(Block::bordered().title(title))
}

fn spark<'a>(title: &'a str, data: &VecDeque<u64>, color: Color) -> Sparkline<'a> {
    let last = data.back().copied().unwrap_or(0);
    // Right-aligned: the newest second at the right edge, like a scrolling chart.
    let data: Vec<u64> = data.iter().copied().collect();
    Sparkline::default()
        .block(Block::bordered().title(format!("{title}: {}", fmt::thousands(last))))
        .data(&data)
        .style(Style::new().fg(color))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;

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
        let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
        term.draw(|f| v.render(f)).unwrap();
        let buf = term.backend().buffer().clone();
        buf.content().iter().map(|c| c.symbol()).collect()
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
}
