//! The JSON Schema for editors (`docs/scenario.schema.json`) is generated from the model and
//! kept in the repository; this test fails when they differ (regenerate with
//! `UPDATE_SCHEMA=1 cargo test -p barrage-scenario --test schema`), and checks every example
//! against the schema with a small structural validator (types, required and unknown keys,
//! `$ref`, `allOf`/`oneOf`/`anyOf`), so the schema accepts what barrage accepts.

use serde_json::Value;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn schema_file_is_generated_from_the_model() {
    let path = root().join("docs/scenario.schema.json");
    let now = barrage_scenario::json_schema();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &now).unwrap();
    }
    let saved = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        saved == now,
        "docs/scenario.schema.json is out of date: run UPDATE_SCHEMA=1 cargo test -p barrage-scenario --test schema"
    );
}

/// Errors of `v` against `schema` (resolving `$ref` in `root`), with a JSON path.
fn check(root: &Value, schema: &Value, v: &Value, path: &str, errs: &mut Vec<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap();
        let def = root
            .get("definitions")
            .or_else(|| root.get("$defs"))
            .and_then(|d| d.get(name))
            .unwrap_or_else(|| panic!("no definition {r}"));
        return check(root, def, v, path, errs);
    }
    for sub in schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        check(root, sub, v, path, errs);
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(alts) = schema.get(key).and_then(Value::as_array) {
            let ok = alts.iter().filter(|a| {
                let mut e = Vec::new();
                check(root, a, v, path, &mut e);
                e.is_empty()
            });
            let n = ok.count();
            if n == 0 || (key == "oneOf" && n > 1) {
                errs.push(format!("{path}: {n} alternatives of {key} match"));
            }
        }
    }
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let is = |t: &str| match t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "boolean" => v.is_boolean(),
            "integer" => v.is_u64() || v.is_i64(),
            "number" => v.is_number(),
            "null" => v.is_null(),
            _ => true,
        };
        if !types.iter().any(|t| is(t)) {
            errs.push(format!("{path}: not of type {types:?}"));
            return;
        }
    }
    if let Some(obj) = v.as_object() {
        let props = schema.get("properties").and_then(Value::as_object);
        for req in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !obj.contains_key(req.as_str().unwrap()) {
                errs.push(format!("{path}: missing {req}"));
            }
        }
        for (k, val) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(s) => check(root, s, val, &format!("{path}.{k}"), errs),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => errs.push(format!("{path}: unknown key {k}")),
                    Some(s @ Value::Object(_)) => check(root, s, val, &format!("{path}.{k}"), errs),
                    _ => {}
                },
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            check(root, items, x, &format!("{path}[{i}]"), errs);
        }
    }
}

fn as_json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    match barrage_scenario::Format::of(path).unwrap() {
        barrage_scenario::Format::Toml => toml::from_str(&text).unwrap(),
        barrage_scenario::Format::Yaml => serde_saphyr::from_str(&text).unwrap(),
    }
}

#[test]
fn every_example_matches_the_schema() {
    let schema: Value = serde_json::from_str(&barrage_scenario::json_schema()).unwrap();
    let mut n = 0;
    for e in std::fs::read_dir(root().join("examples")).unwrap() {
        let p = e.unwrap().path();
        if barrage_scenario::Format::of(&p).is_none() {
            continue;
        }
        let mut errs = Vec::new();
        check(&schema, &schema, &as_json(&p), "$", &mut errs);
        assert!(errs.is_empty(), "{}: {errs:?}", p.display());
        n += 1;
    }
    assert!(n >= 4);
}

#[test]
fn the_schema_refuses_what_barrage_refuses() {
    let schema: Value = serde_json::from_str(&barrage_scenario::json_schema()).unwrap();
    let bad: Value = serde_json::json!({
        "target": "tcp://127.0.0.1:7000",
        "users": { "count": 1, "arrive": "1/s", "hols": "1s" },
        "steps": [{ "send": 3 }],
    });
    let mut errs = Vec::new();
    check(&schema, &schema, &bad, "$", &mut errs);
    assert!(
        errs.iter().any(|e| e == "$.users: unknown key hols"),
        "{errs:?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.starts_with("$.steps[0].send: not of type")),
        "{errs:?}"
    );
    let no_users = serde_json::json!({ "target": "tcp://a:1" });
    errs.clear();
    check(&schema, &schema, &no_users, "$", &mut errs);
    assert!(
        errs.iter().any(|e| e.contains("missing \"users\"")),
        "{errs:?}"
    );
}
