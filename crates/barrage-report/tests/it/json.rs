//! The JSON form round-trips through `load`, and `load` names the file in every error.

use crate::common;
use barrage_report::{load, render_to_string, save, Format, ReportError};
use std::fs;

#[test]
fn json_round_trips_through_load() {
    let dir = tempfile::tempdir().unwrap();
    for (i, r) in [
        common::ping_pong_completed(),
        common::open_loop_with_errors(),
        common::interrupted(),
        common::failed_refused(),
    ]
    .into_iter()
    .enumerate()
    {
        let path = dir.path().join(format!("result-{i}.json"));
        save(&r, Format::Json, &path).unwrap();
        let back = load(&path).unwrap();
        assert_eq!(back, r);
        // Re-rendered offline, the text is the same as from the live record.
        assert_eq!(
            render_to_string(&back, Format::Text),
            render_to_string(&r, Format::Text)
        );
    }
}

#[test]
fn json_is_pretty_with_schema_and_trailing_newline() {
    let json = render_to_string(&common::open_loop_with_errors(), Format::Json);
    assert!(json.starts_with("{\n  \"schema\": \"barrage.result/1\",\n"));
    assert!(json.ends_with("}\n"));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["summary"]["errors"]["timeout"], 8);
    assert_eq!(
        v["histograms"]["latency"]["encoding"],
        "hdrhistogram-v2-deflate+base64"
    );
    let phases: Vec<&str> = v["timeseries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases[..3], ["warmup", "warmup", "measured"]);
    assert_eq!(phases.last(), Some(&"drain"));
}

#[test]
fn saved_histograms_decode_to_the_summary_figures() {
    let r = common::ping_pong_completed();
    let h = r.histograms.latency.decode().unwrap();
    assert_eq!(h.stats(), r.summary.latency_us);
    let c = r.histograms.connect.decode().unwrap();
    assert_eq!(c.stats(), r.summary.connect_us);
}

#[test]
fn load_names_a_missing_file() {
    let err = load("/nonexistent/barrage/result.json").unwrap_err();
    assert!(matches!(err, ReportError::Read { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("/nonexistent/barrage/result.json"), "{msg}");
}

#[test]
fn load_names_the_file_on_invalid_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.json");
    fs::write(&path, "{\"schema\": \"barrage.result/1\", ").unwrap();
    let err = load(&path).unwrap_err();
    assert!(matches!(err, ReportError::Json { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("broken.json") && msg.contains("line 1"),
        "{msg}"
    );
}

#[test]
fn load_names_the_field_when_the_schema_matches_but_the_record_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("truncated.json");
    fs::write(
        &path,
        "{\"schema\": \"barrage.result/1\", \"status\": \"completed\"}",
    )
    .unwrap();
    let msg = load(&path).unwrap_err().to_string();
    assert!(
        msg.contains("truncated.json") && msg.contains("missing field"),
        "{msg}"
    );
}

#[test]
fn load_refuses_another_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.json");
    let json = render_to_string(&common::interrupted(), Format::Json)
        .replace("barrage.result/1", "barrage.result/2");
    fs::write(&path, json).unwrap();
    let err = load(&path).unwrap_err();
    match &err {
        ReportError::Schema { found, .. } => assert_eq!(found.as_deref(), Some("barrage.result/2")),
        other => panic!("expected a schema error, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("future.json")
            && msg.contains("barrage.result/2")
            && msg.contains("barrage.result/1"),
        "{msg}"
    );
}

#[test]
fn load_refuses_json_without_a_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("package.json");
    fs::write(&path, "{\"name\": \"not a result\"}").unwrap();
    let err = load(&path).unwrap_err();
    assert!(
        matches!(err, ReportError::Schema { found: None, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("package.json"));
}

#[test]
fn load_accepts_fields_from_newer_writers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("newer.json");
    let r = common::interrupted();
    let mut v = serde_json::to_value(&r).unwrap();
    v["summary"]["some_future_field"] = serde_json::json!(42);
    v["another_future_section"] = serde_json::json!({"x": 1});
    fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    assert_eq!(load(&path).unwrap(), r);
}

#[test]
fn formats_parse_by_name() {
    assert_eq!("text".parse::<Format>().unwrap(), Format::Text);
    assert_eq!("JSON".parse::<Format>().unwrap(), Format::Json);
    let err = "yaml".parse::<Format>().unwrap_err().to_string();
    assert!(err.contains("yaml") && err.contains("text, json"), "{err}");
}
