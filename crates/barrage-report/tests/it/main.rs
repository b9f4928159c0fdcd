//! Integration tests of `barrage-report`: one test binary (`cargo test -p barrage-report --test it`).
//! Renderers have snapshot tests on fixed results (`it/snapshots/`, reviewed by eye when they
//! change); the HTML pages also run in headless Chromium.

// Fixed results: runs with and without monitoring, errors, verdicts.
mod common;

// The HTML report in headless Chromium.
mod browser;
// The comparison page's structure as a snapshot.
mod compare_html;
// find-max's table, Markdown and HTML page as snapshots; escaping.
mod find_max;
// The JSON form round-trips through `load`; `load` names the file in every error.
mod json;
// Markdown, HTML, JSON, CSV and HDR log snapshots and escaping.
mod reports;
// The text summary as snapshots.
mod text;
