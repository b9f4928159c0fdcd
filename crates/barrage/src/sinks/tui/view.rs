//! What the dashboard draws: the view state fed by snapshots, and the panels, tables and
//! rolling charts of one frame.

use super::model::{DashInfo, Snapshot, HISTORY};
use barrage_metrics::{ErrorCounts, Phase};
use barrage_report::fmt;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Sparkline};
use ratatui::Frame;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

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
        // The analysis's rule (no generator CPU here: the lag and the backlog show it live).
        use barrage_metrics::analysis::{saturation_sign, Sign};
        let why = match saturation_sign(t, prev_backlog, None, 1) {
            Some(Sign::Lag(us)) => Some(format!("event-loop lag {}", fmt::duration_us(us as f64))),
            Some(Sign::Backlog(n)) => Some(format!("backlog growing ({})", fmt::thousands(n))),
            Some(Sign::Cpu(_)) => Some("generator-bound second".into()),
            None => t.saturated.then(|| "generator-bound second".into()),
        };
        if let Some(why) = why {
            self.saturation = Some((t.t, why));
        }
        self.last = Some(s);
    }

    pub(super) fn render(&self, f: &mut Frame) {
        self.render_at(f, self.started.elapsed());
    }

    /// One frame, `elapsed` into the run. Numbers are never cut: every panel is given the
    /// width its longest line needs, and what does not fit is dropped whole, least important
    /// first (the small charts, then the rolling chart, then panels of a row from the right
    /// of their priority), so 80x24 shows fewer panels, never "181,187 req/".
    pub(super) fn render_at(&self, f: &mut Frame, elapsed: Duration) {
        let area = f.area();
        let header = self.header(elapsed, area.width.saturating_sub(2));
        let head_h = header.len() as u16 + 2;
        let nums = [self.throughput(), self.latency(), self.conns_errors()];
        let bottom = [self.breakdown(), self.server(), self.warnings()];
        let nums_h = rows_needed(&nums);
        let bottom_h = rows_needed(&bottom);
        // Heights in order of importance; each part is kept only if it fits whole.
        let mut left = area.height;
        let mut take = |h: u16| {
            let fits = h <= left;
            if fits {
                left -= h;
            }
            fits
        };
        let show_head = take(head_h);
        let show_nums = show_head && take(nums_h);
        let show_bottom = show_nums && take(bottom_h);
        let show_rps = show_nums && take(CHART_MIN);
        let show_small = show_rps && take(SMALL_CHART);
        let rps_h = CHART_MIN + left;
        let parts = [
            (show_head, head_h),
            (show_nums, nums_h),
            (show_rps, rps_h),
            (show_small, SMALL_CHART),
            (show_bottom, bottom_h),
        ];
        let heights: Vec<Constraint> = parts
            .iter()
            .filter(|(shown, _)| *shown)
            .map(|&(_, h)| Constraint::Length(h))
            .collect();
        let mut areas = Layout::vertical(heights).split(area).to_vec().into_iter();
        if show_head {
            let head = Paragraph::new(header).block(Block::bordered());
            f.render_widget(head, areas.next().unwrap_or_default());
        }
        if show_nums {
            // Priority: throughput, latency, then connections & errors.
            row(f, areas.next().unwrap_or_default(), nums, &[0, 1, 2]);
        }
        if show_rps {
            let title = format!("throughput, req/s (last {HISTORY} s)");
            let a = areas.next().unwrap_or_default();
            f.render_widget(spark(&title, &self.rps, Color::Green, a.width), a);
        }
        if show_small {
            let a = areas.next().unwrap_or_default();
            let [l, r] = Layout::horizontal([Constraint::Ratio(1, 2); 2]).areas(a);
            let open = spark("open connections", &self.open, Color::Cyan, l.width);
            f.render_widget(open, l);
            f.render_widget(spark("errors/s", &self.errors, Color::Red, r.width), r);
        }
        if show_bottom {
            // Priority: the generator warning, errors by class, then the server.
            row(f, areas.next().unwrap_or_default(), bottom, &[2, 0, 1]);
        }
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

    /// The header in one line, or two when `width` is too narrow for one.
    fn header(&self, elapsed: Duration, width: u16) -> Vec<Line<'_>> {
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
        let what = vec![
            Span::styled("barrage ", Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(format!("{}  |  {}", self.info.target, self.info.mode)),
        ];
        let when = vec![
            Span::raw(format!("{time}  |  ")),
            Span::styled(status, Style::new().fg(color).add_modifier(Modifier::BOLD)),
            Span::styled("   (q: stop)", Style::new().fg(Color::DarkGray)),
        ];
        let one = Line::from([what.clone(), vec![Span::raw("  |  ")], when.clone()].concat());
        if one.width() <= width as usize {
            vec![one]
        } else {
            vec![Line::from(what), Line::from(when)]
        }
    }

    fn throughput(&self) -> Panel {
        let (cur, avg, total) = self
            .last
            .as_ref()
            .map_or((0.0, 0.0, 0), |s| (s.tick.rps, s.avg_rps, s.completed));
        Panel::table(
            "Throughput",
            vec![
                ("current", format!("{} req/s", fmt::real(cur))),
                ("average", format!("{} req/s", fmt::real(avg))),
                ("peak", format!("{} req/s", fmt::real(self.peak))),
                ("completed", fmt::thousands(total)),
            ],
        )
    }

    fn latency(&self) -> Panel {
        let us = |v: u64| fmt::duration_us(v as f64);
        match &self.last {
            None => Panel::text("Latency (last second)", vec![Line::raw("waiting")]),
            Some(s) => {
                let l = s.tick.latency_us;
                // A second whose exchanges were all fire-and-forget timed nothing: "-", not 0.
                let timed = l.count > 0 || l.max > 0;
                let tv = |v: u64| if timed { us(v) } else { "-".into() };
                let mut rows = vec![
                    ("p50", tv(l.p50)),
                    ("p90", tv(l.p90)),
                    ("p99", tv(l.p99)),
                    ("max", tv(l.max)),
                    ("p99 (all)", s.p99_overall.map_or("-".into(), us)),
                ];
                if s.tick.deliveries > 0 {
                    rows.push(("delivery p99", us(s.tick.delivery_p99_us)));
                }
                Panel::table("Latency (last second)", rows)
            }
        }
    }

    fn conns_errors(&self) -> Panel {
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
        Panel::table(
            "Connections & errors",
            vec![
                ("open", fmt::thousands(open)),
                ("of", fmt::thousands(self.info.connections)),
                ("peak open", fmt::thousands(peak)),
                ("connect fail/s", fmt::thousands(failed)),
                ("errors", fmt::thousands(errors)),
                ("errors/s", fmt::thousands(err_s)),
            ],
        )
    }

    /// At most `BOTTOM_LINES` lines: the largest classes, then how many more there are.
    fn breakdown(&self) -> Panel {
        let mut classes: Vec<_> = self.by_class.nonzero().collect();
        if classes.is_empty() {
            let ok = Line::styled("no errors", Style::new().fg(Color::Green));
            return Panel::text("Errors by class", vec![ok]);
        }
        classes.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
        let shown = if classes.len() > BOTTOM_LINES {
            BOTTOM_LINES - 1
        } else {
            classes.len()
        };
        let more = format!("{} more", classes.len() - shown);
        let rest: u64 = classes[shown..].iter().map(|&(_, n)| n).sum();
        let mut rows: Vec<(&str, String)> = classes[..shown]
            .iter()
            .map(|&(c, n)| (c.as_str(), fmt::thousands(n)))
            .collect();
        if shown < classes.len() {
            rows.push((&more, fmt::thousands(rest)));
        }
        Panel::table("Errors by class", rows)
    }

    fn server(&self) -> Panel {
        match self.last.as_ref().and_then(|s| s.server) {
            None => Panel::text(
                "Server",
                vec![Line::styled(
                    "not monitored",
                    Style::new().fg(Color::DarkGray),
                )],
            ),
            Some(s) => Panel::table(
                "Server",
                vec![
                    ("cpu", s.cpu_pct.map_or("-".into(), |c| format!("{c:.1} %"))),
                    (
                        "memory",
                        s.rss_bytes.map_or("-".into(), |b| fmt::bytes(b as f64)),
                    ),
                ],
            ),
        }
    }

    fn warnings(&self) -> Panel {
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
                Line::raw(format!("last at {t:.0}s:")),
                Line::raw(why.clone()),
                Line::raw("figures there describe barrage"),
            ],
        };
        Panel::text("Generator", lines)
    }
}

/// Lines at most in a bottom panel (errors by class beyond it are summed up in one line).
const BOTTOM_LINES: usize = 5;
/// Smallest height of the rolling throughput chart (border included).
const CHART_MIN: u16 = 5;
/// Height of the two small charts.
const SMALL_CHART: u16 = 7;

/// A bordered panel with the width its content needs.
pub(super) struct Panel {
    title: String,
    lines: Vec<Line<'static>>,
}

impl Panel {
    /// Label-value rows, labels padded to the longest label of this panel only.
    fn table(title: &str, rows: Vec<(&str, String)>) -> Panel {
        let w = rows
            .iter()
            .map(|(k, _)| k.chars().count())
            .max()
            .unwrap_or(0);
        let lines = rows
            .into_iter()
            .map(|(k, v)| {
                Line::from(vec![
                    Span::styled(format!("{k:<w$} "), Style::new().fg(Color::DarkGray)),
                    Span::raw(v),
                ])
            })
            .collect();
        Panel::text(title, lines)
    }

    fn text(title: &str, lines: Vec<Line<'static>>) -> Panel {
        Panel {
            title: title.into(),
            lines,
        }
    }

    /// Columns needed: the widest line or the title, plus the borders.
    fn width(&self) -> u16 {
        let content = self.lines.iter().map(Line::width).max().unwrap_or(0);
        (content.max(self.title.chars().count()) + 2) as u16
    }

    fn widget(self) -> Paragraph<'static> {
        Paragraph::new(self.lines).block(Block::bordered().title(self.title))
    }
}

/// Rows a row of panels needs: its tallest panel.
fn rows_needed(panels: &[Panel]) -> u16 {
    panels.iter().map(|p| p.lines.len()).max().unwrap_or(0) as u16 + 2
}

/// Panels side by side in their given order, keeping (by `priority`, most important first)
/// only those whose full widths fit in `area`; the spare columns go to the kept ones.
fn row<const N: usize>(f: &mut Frame, area: Rect, panels: [Panel; N], priority: &[usize; N]) {
    let mut keep = [false; N];
    let mut used = 0u16;
    for &i in priority {
        let w = panels[i].width();
        if used + w <= area.width {
            used += w;
            keep[i] = true;
        }
    }
    let kept: Vec<Panel> = panels
        .into_iter()
        .zip(keep)
        .filter_map(|(p, k)| k.then_some(p))
        .collect();
    let spare = area.width - used;
    let n = kept.len() as u16;
    let widths = kept.iter().enumerate().map(|(i, p)| {
        let extra = spare / n.max(1) + u16::from((i as u16) < spare % n.max(1));
        Constraint::Length(p.width() + extra)
    });
    let areas = Layout::horizontal(widths).split(area);
    for (p, a) in kept.into_iter().zip(areas.iter()) {
        f.render_widget(p.widget(), *a);
    }
}

/// A rolling chart whose title carries the latest value; the title's words give way to the
/// number when the chart is narrow.
fn spark<'a>(title: &str, data: &VecDeque<u64>, color: Color, width: u16) -> Sparkline<'a> {
    let last = fmt::thousands(data.back().copied().unwrap_or(0));
    let mut title = format!("{title}: {last}");
    if title.chars().count() + 2 > width as usize {
        title = last;
    }
    // Right-aligned: the newest second at the right edge, like a scrolling chart.
    let data: Vec<u64> = data.iter().copied().collect();
    Sparkline::default()
        .block(Block::bordered().title(title))
        .data(&data)
        .style(Style::new().fg(color))
}

#[cfg(test)]
mod tests;
