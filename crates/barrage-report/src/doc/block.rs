//! The document model's pieces: [`Block`]s (and the [`Chart`]s among them), with the helpers
//! every section builds them with.

use barrage_metrics::readiness::Grade;
use serde::Serialize;

pub(crate) enum Block {
    /// A sub-heading inside a section.
    Heading(String),
    Para(String),
    /// A warning the reader must not miss.
    Warning(String),
    /// Preformatted text (the command line).
    Code(String),
    /// Label/value pairs.
    Kv(Vec<(String, String)>),
    Table {
        head: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    /// Drawn by the HTML report only; Markdown carries the same figures in tables.
    Chart(Chart),
}

pub(crate) fn kv(pairs: &[(&str, String)]) -> Block {
    Block::Kv(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}

pub(crate) fn table<const N: usize>(head: [&str; N], rows: Vec<[String; N]>) -> Block {
    Block::Table {
        head: head.iter().map(|s| s.to_string()).collect(),
        rows: rows.into_iter().map(Vec::from).collect(),
    }
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct Series {
    pub label: String,
    pub values: Vec<Option<f64>>,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct Chart {
    /// The element id on the page (`chart-...`).
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Logarithmic axes (the spectrum).
    pub x_log: bool,
    pub y_log: bool,
    pub x: Vec<f64>,
    pub series: Vec<Series>,
    /// Tick labels of a log x axis: the percentile each position stands for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x_percentile: Option<bool>,
    /// Join each series across x positions where it has no value (several runs on one axis,
    /// whose points interleave).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub span_gaps: bool,
    /// Mark every point, not only when a series has few (find-max: each point is a step).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub points: bool,
}

pub(crate) fn grade(g: Grade) -> &'static str {
    match g {
        Grade::Pass => "pass",
        Grade::Warn => "warn",
        Grade::Fail => "FAIL",
        Grade::NotMeasured => "not measured",
    }
}
