//! A scenario's `rpc` steps against the .proto (or the server's reflection): each step's
//! method found, its `data` encoded into the spec's protobuf parts (the user's `{var}`s left
//! as holes the engine fills per call), and how its reply is read as JSON for the step's
//! captures and `expect`.

use crate::resolve::cli::RunArgs;
use crate::resolve::url;
use crate::usage::Usage;
use barrage_engine::ScenarioSpec;
use barrage_scenario::model::Step;
use barrage_scenario::At;

/// Resolve the `rpc` steps of scenario `sc` (whose target is `url`) into `sc.rpc` and
/// `sc.replies`. A mistake is one line naming the file, line and step key.
pub(super) fn resolve(a: &RunArgs, url: &url::Url, sc: &mut ScenarioSpec) -> Result<(), Usage> {
    let checked = sc.checked().map_err(|e| Usage::file(&sc.file, e))?;
    let mut calls = Vec::new();
    collect(&checked.file.steps, "steps", &mut calls);
    collect(&checked.file.leave, "leave", &mut calls);
    let Some((first_key, first)) = calls.first() else {
        return Ok(());
    };
    // Where the file says where the types come from: a failure there names that line.
    let from_file = checked
        .file
        .protocol
        .as_ref()
        .and_then(|p| match (&p.proto, &p.reflect) {
            (Some(f), _) if a.grpc.proto.as_deref() == Some(&sc.dir.join(&f.value)) => {
                Some((f.line, "protocol.proto"))
            }
            (None, Some(r)) if r.value && a.grpc.reflect && a.grpc.proto.is_none() => {
                Some((r.line, "protocol.reflect"))
            }
            _ => None,
        });
    let file = sc.file.clone();
    let at = |line: u32, key: &str, why: &dyn std::fmt::Display| {
        Usage::file(&file, format!("{file}:{line}: {key}: {why}"))
    };
    types_given(
        &file,
        first_key,
        first,
        a.grpc.proto.is_some() || a.grpc.reflect,
    )?;
    resolve_with(a, url, sc, &calls, &at).map_err(|e| match from_file {
        // The descriptors' own failure (the file, an import, the server's reflection).
        Some((line, key)) if e.flag() == "--proto" || e.flag() == "--reflect" => at(line, key, &e),
        _ => e,
    })
}

#[cfg(not(feature = "grpc"))]
fn resolve_with(
    _: &RunArgs,
    _: &url::Url,
    _: &mut ScenarioSpec,
    _: &[(String, &At<Step>)],
    _: &dyn Fn(u32, &str, &dyn std::fmt::Display) -> Usage,
) -> Result<(), Usage> {
    Err(Usage::says(
        "--proto",
        "this barrage was built without the `grpc` feature (no .proto compiler): rpc steps \
         need it",
    ))
}

#[cfg(feature = "grpc")]
fn resolve_with(
    a: &RunArgs,
    url: &url::Url,
    sc: &mut ScenarioSpec,
    calls: &[(String, &At<Step>)],
    at: &dyn Fn(u32, &str, &dyn std::fmt::Display) -> Usage,
) -> Result<(), Usage> {
    use std::collections::BTreeMap;
    let compiled = match &a.grpc.proto {
        Some(p) => Some((
            super::protocol::grpc::pb::compile(&a.grpc.import_path, p)?,
            p.display().to_string(),
        )),
        None => None,
    };
    // With reflection, the server is asked once per service the steps call.
    let mut reflected: BTreeMap<String, prost_reflect::DescriptorPool> = BTreeMap::new();
    let mut replies = BTreeMap::new();
    for (key, step) in calls {
        let (svc, _) = method(key, step, at)?;
        let (pool, shown) = match &compiled {
            Some((pool, shown)) => (pool, shown.as_str()),
            None => {
                if !reflected.contains_key(svc) {
                    let pool = super::reflect::pool(a, url, svc)?;
                    reflected.insert(svc.to_string(), pool);
                }
                (&reflected[svc], "the server's reflection")
            }
        };
        let (call, m) = encode(key, step, pool, shown, at)?;
        sc.rpc.push(call);
        replies.insert(key.clone(), m.decoder());
    }
    sc.replies = Some(barrage_engine::spec::Replies(replies));
    Ok(())
}

/// A step's service and method.
#[cfg(feature = "grpc")]
fn method<'s>(
    key: &str,
    step: &'s At<Step>,
    at: &dyn Fn(u32, &str, &dyn std::fmt::Display) -> Usage,
) -> Result<(&'s str, &'s str), Usage> {
    let rpc = step.grpc.rpc.as_ref().expect("collected for its rpc");
    barrage_scenario::protocol::grpc_method(rpc)
        .map_err(|e| at(rpc.line, &format!("{key}.rpc"), &e))
}

/// A step's call: its method looked up in `pool` (`shown` says where it came from) and its
/// data encoded.
#[cfg(feature = "grpc")]
fn encode(
    key: &str,
    step: &At<Step>,
    pool: &prost_reflect::DescriptorPool,
    shown: &str,
    at: &dyn Fn(u32, &str, &dyn std::fmt::Display) -> Usage,
) -> Result<
    (
        barrage_engine::spec::RpcStepSpec,
        super::protocol::grpc::pb::Compiled,
    ),
    Usage,
> {
    let (svc, method) = method(key, step, at)?;
    let line = step.grpc.rpc.as_ref().map_or(step.line, |r| r.line);
    let m = super::protocol::grpc::pb::method_in(pool, svc, method, shown)
        .map_err(|(v, why)| at(line, &format!("{key}.rpc"), &format!("{v}: {why}")))?;
    let (data, line) = match &step.grpc.data {
        Some(d) => (d.value.clone(), d.line),
        None => (serde_json::json!({}), step.line),
    };
    let messages = m
        .encode_messages(data, true)
        .map_err(|e| at(line, &format!("{key}.data"), &e))?;
    let mut messages = messages.into_iter().map(|(p, _)| p);
    let call = barrage_engine::spec::RpcStepSpec {
        key: key.to_string(),
        path: format!("/{svc}/{method}"),
        message: messages.next().unwrap_or_default(),
        more_messages: messages.collect(),
        streaming: m.streaming(),
    };
    Ok((call, m))
}

/// The one check `run` and `validate` share: `rpc` steps (the first is `key`, `step`) need
/// their messages' types from somewhere (`given`: a .proto or reflection, the file's or the
/// command line's).
fn types_given(file: &str, key: &str, step: &At<Step>, given: bool) -> Result<(), Usage> {
    if given {
        return Ok(());
    }
    let line = step.grpc.rpc.as_ref().map_or(step.line, |r| r.line);
    Err(Usage::file(
        file,
        format!(
            "{file}:{line}: {key}.rpc: a call's message needs its type: give protocol.proto = \
             \"FILE.proto\" (or protocol.reflect = true, or --proto / --reflect)"
        ),
    ))
}

/// `barrage validate`: a scenario's `rpc` steps against its `protocol.proto`, as `run`
/// resolves them (no server is asked: with `reflect = true` the steps are not checked here).
pub fn check_file(
    name: &str,
    checked: &barrage_scenario::Checked,
    dir: &std::path::Path,
) -> Result<(), Usage> {
    let mut calls = Vec::new();
    collect(&checked.file.steps, "steps", &mut calls);
    collect(&checked.file.leave, "leave", &mut calls);
    let protocol = checked.file.protocol.as_ref();
    if let Some((key, step)) = calls.first() {
        let reflect = protocol
            .and_then(|p| p.reflect.as_ref())
            .is_some_and(|r| r.value);
        types_given(
            name,
            key,
            step,
            reflect || protocol.is_some_and(|p| p.proto.is_some()),
        )?;
    }
    check_proto(name, checked, dir, &calls)
}

/// The steps against the file's `protocol.proto`, compiled here.
#[cfg(feature = "grpc")]
fn check_proto(
    name: &str,
    checked: &barrage_scenario::Checked,
    dir: &std::path::Path,
    calls: &[(String, &At<Step>)],
) -> Result<(), Usage> {
    let proto = checked
        .file
        .protocol
        .as_ref()
        .and_then(|p| p.proto.as_ref());
    let (Some(proto), false) = (proto, calls.is_empty()) else {
        return Ok(());
    };
    let at = |line: u32, key: &str, why: &dyn std::fmt::Display| {
        Usage::file(name, format!("{name}:{line}: {key}: {why}"))
    };
    let p = checked.file.protocol.as_ref().expect("it has proto");
    let imports: Vec<_> = p.import_path.iter().map(|d| dir.join(&d.value)).collect();
    let file = dir.join(&proto.value);
    let pool = super::protocol::grpc::pb::compile(&imports, &file)
        .map_err(|e| at(proto.line, "protocol.proto", &e))?;
    for (key, step) in calls {
        encode(key, step, &pool, &proto.value, &at)?;
    }
    Ok(())
}

/// Without the `grpc` feature: nothing to compile the steps' types with.
#[cfg(not(feature = "grpc"))]
fn check_proto(
    _: &str,
    _: &barrage_scenario::Checked,
    _: &std::path::Path,
    _: &[(String, &At<Step>)],
) -> Result<(), Usage> {
    Ok(())
}

/// The `rpc` steps of `steps` (and of their blocks), with the keys the engine compiles them
/// under (`steps[2]`, `steps[3].steps[0]`).
fn collect<'a>(steps: &'a [At<Step>], key: &str, out: &mut Vec<(String, &'a At<Step>)>) {
    for (i, s) in steps.iter().enumerate() {
        let k = format!("{key}[{i}]");
        if s.grpc.rpc.is_some() {
            out.push((k.clone(), s));
        }
        collect(&s.steps, &format!("{k}.steps"), out);
    }
}
