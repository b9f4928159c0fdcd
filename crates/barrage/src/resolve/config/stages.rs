//! `--rate-stages` and `--conn-stages`: their peaks and lengths.

use crate::usage::Usage;
use std::time::Duration;

/// How long the replies in flight are awaited once the load stops.
pub(super) const DRAIN: Duration = Duration::from_secs(2);
/// `--rate-stages POINTS`: its peak rate and the time of its last point (the load's length
/// unless -d says otherwise).
pub(super) fn rate_stages(text: &str) -> Result<(f64, Duration), Usage> {
    let shape = barrage_engine::shape::Shape::parse(
        text,
        crate::units::duration,
        crate::units::rate_or_zero,
    )
    .map_err(|e| Usage::value("--rate-stages", format!("'{text}'"), e))?;
    let points = shape.points();
    let peak = points.iter().map(|p| p.1).fold(0.0, f64::max);
    let end = points.last().map_or(0.0, |p| p.0);
    let why = if peak <= 0.0 {
        Some("the rate is 0 at every point; give a point above 0, e.g. 0s:100,30s:1k".to_string())
    } else if peak > crate::units::MAX_RATE {
        Some("a rate above the 100M/s barrage can schedule".to_string())
    } else if end <= 0.0 {
        Some(
            "give a later point too, e.g. 0s:100,30s:1k: the load lasts until the last point"
                .to_string(),
        )
    } else {
        None
    };
    match why {
        Some(w) => Err(Usage::value("--rate-stages", format!("'{text}'"), w)),
        None => Ok((peak, Duration::from_secs_f64(end))),
    }
}

/// `--conn-stages POINTS`: its peak (the connections) and the time of its last point.
pub(super) fn conn_stages(text: &str) -> Result<(u64, Duration), Usage> {
    let bad = |w: String| Usage::value("--conn-stages", format!("'{text}'"), w);
    let shape = barrage_engine::shape::Shape::parse(
        text,
        crate::units::duration,
        crate::units::rate_or_zero,
    )
    .map_err(|e| bad(e.to_string()))?;
    let points = shape.points();
    let peak = points.iter().map(|p| p.1).fold(0.0, f64::max).floor() as u64;
    let end = points.last().map_or(0.0, |p| p.0);
    if peak == 0 {
        return Err(bad(
            "no point reaches 1 connection; e.g. 0s:0,30s:100,1m:100,1m30s:0".into(),
        ));
    }
    if peak > 10_000_000 {
        return Err(bad("at most 10,000,000 connections per process".into()));
    }
    if end <= 0.0 {
        return Err(bad(
            "give a later point too: the load lasts until the last point".into(),
        ));
    }
    Ok((peak, Duration::from_secs_f64(end)))
}
