//! The connections row: were the planned connections (users) ever ready, and open through
//! the steady state ([`steady_open`]); and the seconds with none open (the server gone).

use super::{row, Aspect, Grade, Row, CONNECTIONS_RULE};
use crate::analysis::AnalysisReport;
use crate::result::RunResult;
use crate::timeline::Phase;

/// Did the run get the connections it planned: ever ready (each at least once), and open
/// through the steady state.
pub(super) fn connections(result: &RunResult, a: &AnalysisReport) -> Row {
    let aspect = Aspect::Connections;
    let s = &result.summary;
    let planned = s.connections.target;
    let Some(ramp) = s.ramp.as_ref().filter(|_| planned > 0) else {
        let fig = "not recorded".into();
        return row(aspect, Grade::NotMeasured, fig, CONNECTIONS_RULE);
    };
    let ready = ramp.ready.min(planned);
    if ready < planned {
        // The plan was cut short before every connection was due: not the server's doing.
        // A run stopped after barrage had tried every planned connection was not cut short:
        // what held the rest back is said below (issue 43: 60,000 connections against a
        // server out of open files were blamed on "the run ended early").
        let cut = match result.status {
            crate::result::Status::Completed if result.config.requests.is_some() => {
                Some("the request count (-n) ended the run")
            }
            crate::result::Status::Completed => None,
            _ if s.connections.attempts >= planned => None,
            _ => Some("the run ended early"),
        };
        if let Some(why) = cut {
            let fig = format!(
                "{ready} of {planned} planned ever ready; {why} before every connection was due"
            );
            return row(aspect, Grade::NotMeasured, fig, CONNECTIONS_RULE);
        }
    }
    // Those due to be up, with a second to connect, before the load ended: a ramp
    // (`--connect-rate`, `--conn-stages`, a scenario's arrivals) may still be opening the last
    // ones when the load ends.
    let due = due_by_end(result, a.load_end_s - 1.0).map_or(planned, |d| d.min(planned));
    if due == 0 {
        let fig = format!(
            "{ready} of {planned} planned ever ready; none was due a second before the load ended"
        );
        return row(aspect, Grade::NotMeasured, fig, CONNECTIONS_RULE);
    }
    let pct = 100.0 * ready.min(due) as f64 / due as f64;
    let mut g = if ready >= due {
        Grade::Pass
    } else if pct >= 99.0 {
        Grade::Warn
    } else {
        Grade::Fail
    };
    let mut fig = if due < planned {
        format!("{ready} of {due} due by the load's last second ever ready ({pct:.1} %; {planned} planned)")
    } else {
        format!("{ready} of {planned} planned ever ready ({pct:.1} %)")
    };
    if ready < due {
        let c = &s.connections;
        fig.push_str(&format!("; {} of {} connects failed", c.failed, c.attempts));
        let top = s.errors.nonzero().max_by_key(|(_, n)| *n);
        if let Some((class, n)) = top {
            fig.push_str(&format!(", most as {class} ({n})"));
        }
        if let Some(side) = which_side(s) {
            fig.push_str(&format!(": {side}"));
        }
    }
    if let Some(o) = steady_open(result) {
        fig.push_str(&if o.low_open == o.median_open && o.low_pct == o.median_pct {
            format!(
                "; steady state ({} s): {} open ({:.1} %) at the end of every second",
                o.seconds, o.median_open, o.median_pct
            )
        } else {
            format!(
                "; steady state ({} s): typically {} open ({:.1} %), at least {} ({:.1} %) at {:.0} s",
                o.seconds, o.median_open, o.median_pct, o.low_open, o.low_pct, o.low_at_s
            )
        });
        if o.median_pct < 99.0 {
            // Most of the steady state ran without the connections it planned. Lost to
            // failures (the server closed or reset them): the server did not hold them. Closed
            // without a single error (`Connection: close`, HTTP/1.0): by the protocol's choice.
            if s.errors.total() > 0 {
                g = Grade::Fail;
                fig.push_str("; the server did not hold them");
            } else {
                g = g.at_most_warn();
                fig.push_str("; closed without an error (Connection: close?) and reopened");
            }
        } else if o.low_pct < 99.0 {
            g = g.at_most_warn();
        }
    }
    row(aspect, g, fig, CONNECTIONS_RULE)
}

/// Which side ran out when connections never came up, from how their connects ended: barrage
/// (its own open files or local ports), or the server (connects refused, timed out or still
/// pending at the end: it stopped accepting, as a server out of open files does, its listen
/// backlog full). `None` when the connects say neither.
fn which_side(s: &crate::aggregate::Summary) -> Option<String> {
    use crate::error::ErrorClass as E;
    let (c, e) = (&s.connections, &s.errors);
    let fds = e.get(E::LocalFdExhausted);
    let ports = e.get(E::LocalPortExhausted);
    let pending = c.attempts.saturating_sub(c.succeeded + c.failed);
    let server = e.get(E::Refused) + e.get(E::ConnectTimeout) + pending;
    if fds + ports > server {
        let what = if fds >= ports {
            "open files (ulimit -n; --processes spreads them)"
        } else {
            "local ports (--source-ip adds addresses)"
        };
        return Some(format!("barrage ran out of its own {what}"));
    }
    (server > 0).then(|| {
        format!(
            "the server did not accept them ({} refused, {} timed out, {pending} still \
             pending at the end): the server ran out or fell behind (one out of open files, \
             or with its listen backlog full, stops accepting), not barrage's own limits",
            e.get(E::Refused),
            e.get(E::ConnectTimeout)
        )
    })
}

/// The planned connections open through the steady state ([`steady_open`]): each full
/// second's open count at its end, over what the plan wanted open then.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteadyOpen {
    /// Full seconds judged.
    pub seconds: usize,
    /// The typical second (the lower median of the shares): its open count and share (%).
    pub median_open: u64,
    pub median_pct: f64,
    /// The fewest: its open count, share (%) and the end of its second.
    pub low_open: u64,
    pub low_pct: f64,
    pub low_at_s: f64,
}

/// The connections open in the steady state, the connections row's and `connections.ready`'s
/// figure (issue 42: a server that accepted every connection and at once closed half of them
/// passed, every connection having been ready once). The seconds judged: a scenario's steady
/// state (every user arrived, none departed yet); a URL run's from when its last connection
/// was first ready to the end of the load (its own steady state is where 99 % were open, so it
/// could not show a loss). Each full second counts its open connections at its end against
/// the plan then (`--conn-stages`: its plan at that moment; seconds that plan none are left
/// out). `None` without such a second.
pub fn steady_open(result: &RunResult) -> Option<SteadyOpen> {
    let s = &result.summary;
    let c = &result.config;
    let target = s.connections.target;
    let ramp = s.ramp.as_ref().filter(|_| target > 0)?;
    let steady = crate::analysis::run_steady_state(result);
    let (from, to) = match (&c.users, ramp.all_ready_s) {
        (None, Some(t)) => (t, crate::figures::load_end(&result.timeseries)),
        _ => (steady.from_s, steady.to_s),
    };
    let mut seconds: Vec<(f64, u64, f64)> = result
        .timeseries
        .iter()
        .filter(|t| t.phase == Phase::Measured && t.dt >= 0.999)
        .filter(|t| t.t - t.dt >= from - 1e-9 && t.t <= to + 1e-9)
        .filter_map(|t| {
            let planned = if c.planned_connections.is_empty() {
                target as f64
            } else {
                planned_at(&c.planned_connections, t.t)
                    .floor()
                    .min(target as f64)
            };
            (planned >= 1.0).then(|| (t.t, t.open, (100.0 * t.open as f64 / planned).min(100.0)))
        })
        .collect();
    let low = *seconds.iter().min_by(|a, b| a.2.total_cmp(&b.2))?;
    let n = seconds.len();
    seconds.sort_by(|a, b| a.2.total_cmp(&b.2));
    let mid = seconds[(n - 1) / 2];
    Some(SteadyOpen {
        seconds: n,
        median_open: mid.1,
        median_pct: mid.2,
        low_open: low.1,
        low_pct: low.2,
        low_at_s: low.0,
    })
}

/// Whether the plan wants a connection open through `(from, to]`: always, but for a
/// `--conn-stages` ramp that plans none at some moment of it (a ramp down to 0 on purpose).
fn planned_open(c: &crate::result::RunConfig, from: f64, to: f64) -> bool {
    let p = &c.planned_connections;
    if p.is_empty() {
        return true;
    }
    let inside = p
        .iter()
        .filter(|(t, _)| *t > from && *t < to)
        .map(|&(_, v)| v);
    inside
        .chain([planned_at(p, from), planned_at(p, to)])
        .all(|v| v >= 1.0)
}

/// The connections `--conn-stages` plans at `x` seconds: its points, linear between them.
fn planned_at(p: &[(f64, f64)], x: f64) -> f64 {
    match p.iter().position(|&(pt, _)| pt > x) {
        None => p.last().map_or(0.0, |l| l.1),
        Some(0) => p[0].1,
        Some(i) => {
            let ((t0, v0), (t1, v1)) = (p[i - 1], p[i]);
            v0 + (v1 - v0) * (x - t0) / (t1 - t0).max(1e-9)
        }
    }
}

/// Connections (users) a ramp had due to open by `t` seconds: `--conn-stages` (the most its
/// points reach by then), `--connect-rate` (one every 1/rate s) or a scenario whose last
/// arrival came later (the users due by then, if its arrivals are a constant rate); `None`
/// when every planned connection was due by then.
fn due_by_end(result: &RunResult, t: f64) -> Option<u64> {
    let c = &result.config;
    let t = t.max(0.0);
    if !c.planned_connections.is_empty() {
        let at = |x: f64| planned_at(&c.planned_connections, x);
        let peak = c
            .planned_connections
            .iter()
            .filter(|(pt, _)| *pt <= t)
            .map(|&(_, v)| v)
            .fold(at(t), f64::max);
        return Some(peak.floor() as u64);
    }
    if let Some(u) = &c.users {
        if u.last_arrival_s <= t {
            return None;
        }
        // Arrivals at a constant rate: u.count over last_arrival_s; otherwise unknown.
        let per_s: f64 = u.arrive.strip_suffix("/s")?.parse().ok()?;
        return Some((per_s * t).floor() as u64 + 1);
    }
    if let Some(rate) = c.connect_rate.filter(|r| *r > 0.0) {
        return Some((rate * t).floor() as u64 + 1);
    }
    None
}

/// Seconds of the measured load, after a connection first opened, in which not one
/// connection was open: the server went away (killed, stopped listening), and a closed loop
/// sends nothing to fail meanwhile. Returns their length and when the first began. In a
/// scenario, whose users come and go, only the steady state counts (every user arrived,
/// none departed yet): a second there with no connection open is the server gone.
pub(super) fn outage(result: &RunResult, a: &AnalysisReport) -> Option<(f64, f64)> {
    let users = result.config.users.is_some();
    let mut opened = false;
    let (mut secs, mut from) = (0.0, None);
    for t in &result.timeseries {
        let steady = t.t - t.dt >= a.steady_from_s - 1e-9 && t.t <= a.steady_to_s + 1e-9;
        if t.open_peak > 0 {
            opened = true;
        } else if opened
            && t.phase == Phase::Measured
            && (!users || steady)
            && planned_open(&result.config, t.t - t.dt, t.t)
        {
            secs += t.dt;
            from.get_or_insert(t.t - t.dt);
        }
    }
    from.map(|f| (secs, f))
}
