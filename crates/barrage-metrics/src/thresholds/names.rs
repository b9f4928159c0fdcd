//! The metric names a threshold may use, read from the one registry of named figures,
//! [`crate::vocabulary::FIGURES`], and the step and server-metric names of [`super`].

use super::{server_metric, step_metric, Kind, Needs, STEP_METRICS};

/// Every metric a threshold can name, with its meaning and unit kind (the figures of
/// [`crate::vocabulary::FIGURES`] that have a kind), in the registry's order.
pub fn metrics() -> impl Iterator<Item = (&'static str, &'static str)> {
    crate::vocabulary::FIGURES
        .iter()
        .filter(|f| f.kind.is_some())
        .map(|f| (f.name, f.doc))
}

/// The kind of a metric name; `None` for an unknown metric.
pub fn kind_of(metric: &str) -> Option<Kind> {
    if server_metric(metric).is_some() {
        return Some(Kind::Count);
    }
    if let Some((_, m)) = step_metric(metric) {
        return STEP_METRICS.iter().find(|(n, _)| *n == m).map(|(_, k)| *k);
    }
    crate::vocabulary::find(metric)?.kind
}

/// What `metric` needs to be measured (unknown metrics need nothing: the parser refuses them).
pub fn needs(metric: &str) -> Needs {
    if metric.starts_with("server.metric.") {
        return Needs::ServerMetrics;
    }
    crate::vocabulary::find(metric).map_or(Needs::Nothing, |f| f.needs)
}
