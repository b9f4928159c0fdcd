//! A scenario's `rpc` steps against the .proto (or the server's reflection): each step's
//! method found, its `data` encoded into the spec's protobuf parts (the user's `{var}`s left
//! as holes the engine fills per call), and how its reply is read as JSON for the step's
//! captures and `expect`.

use super::*;
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
    let file = sc.file.clone();
    let at = |line: u32, key: &str, why: &dyn std::fmt::Display| {
        Usage::file(&file, format!("{file}:{line}: {key}: {why}"))
    };
    if a.proto.is_none() && !a.reflect {
        return Err(at(
            first.line,
            &format!("{first_key}.rpc"),
            &"a call's message needs its type: give protocol.proto = \"FILE.proto\" (or \
              protocol.reflect = true, or --proto / --reflect)",
        ));
    }
    resolve_with(a, url, sc, &calls, &at)
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
    use super::grpc::pb;
    use std::collections::BTreeMap;
    let compiled = match &a.proto {
        Some(p) => Some((pb::compile(a, p)?, p.display().to_string())),
        None => None,
    };
    // With reflection, the server is asked once per service the steps call.
    let mut reflected: BTreeMap<String, prost_reflect::DescriptorPool> = BTreeMap::new();
    let mut replies = BTreeMap::new();
    for (key, step) in calls {
        let rpc = step.rpc.as_ref().expect("collected for its rpc");
        let rkey = format!("{key}.rpc");
        let (svc, method) =
            barrage_scenario::protocol::grpc_method(rpc).map_err(|e| at(rpc.line, &rkey, &e))?;
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
        let m = pb::method_in(pool, svc, method, shown)
            .map_err(|(v, why)| at(rpc.line, &rkey, &format!("{v}: {why}")))?;
        let (data, line) = match &step.data {
            Some(d) => (d.value.clone(), d.line),
            None => (serde_json::json!({}), step.line),
        };
        let messages = m
            .encode_messages(data, true)
            .map_err(|e| at(line, &format!("{key}.data"), &e))?;
        let mut messages = messages.into_iter().map(|(p, _)| p);
        sc.rpc.push(barrage_engine::spec::RpcStepSpec {
            key: key.clone(),
            path: format!("/{svc}/{method}"),
            message: messages.next().unwrap_or_default(),
            more_messages: messages.collect(),
            streaming: m.streaming(),
        });
        replies.insert(key.clone(), m.decoder());
    }
    sc.replies = Some(barrage_engine::spec::Replies(replies));
    Ok(())
}

/// The `rpc` steps of `steps` (and of their blocks), with the keys the engine compiles them
/// under (`steps[2]`, `steps[3].steps[0]`).
fn collect<'a>(steps: &'a [At<Step>], key: &str, out: &mut Vec<(String, &'a At<Step>)>) {
    for (i, s) in steps.iter().enumerate() {
        let k = format!("{key}[{i}]");
        if s.rpc.is_some() {
            out.push((k.clone(), s));
        }
        collect(&s.steps, &format!("{k}.steps"), out);
    }
}
